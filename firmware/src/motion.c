/* Motors: step/dir steppers from the Timer2 compare interrupt, hobby servos by hardware PWM.
 *
 * Steppers. Every motor of a MOVE starts at the same instant and follows its own trapezoid
 * (the profile's speed and acceleration), so each ends at the time the host's motion model
 * predicts. Step k of an n-step move falls at
 *     tau(k) = sqrt(2k/a)                        while accelerating (k <= ka),
 *            = k/v + v/(2a)                      at top speed,
 *            = T - sqrt(2(n-k)/a)                while decelerating (k >= kd),
 * with T = n/v + v/a (or 2*sqrt(n/a) for a short move that never reaches top speed). The
 * square roots come from tables computed at build time from the profile (robot_tables.h).
 * Timer2 runs at F_CPU/8 in CTC mode; each interrupt advances the clock by the period it
 * waited, fires every step that is due, and programs the wait until the next one (at most
 * 256 ticks, so a new motion can start at any moment).
 * Planner queue (corner cutting): the main loop may arm the next MOVE behind the running one
 * (`steppers_arm`); the interrupt starts it at the very step after which every motor of the
 * running move has at most its `ov=` steps to go, so the overlap is timed by the step timer,
 * not by the main loop. When the running move's last step falls while the armed one turns,
 * that instant is kept as the running move's end.
 * E-stop: each moving stepper switches to a braking ramp (the profile's estop deceleration)
 * from the speed it has at that instant; servos hold where they are.
 */
#include <avr/interrupt.h>
#include <util/atomic.h>

#include "firmware.h"
#define ROBOT_TABLES
#include "robot_config.h"

#define GUARD_TICKS 3    /* ticks between reading TCNT2 and the compare it programs */
#define MAX_HOP 256

typedef struct {
    pin_t step, dir;
    const uint32_t *acc;     /* PROGMEM: subticks from standstill to step j, accelerating */
    uint16_t acc_max;        /* last index of acc */
    const uint32_t *brk;     /* PROGMEM: the same for the e-stop deceleration */
    uint16_t brk_max;
    uint32_t cruise;         /* subticks per step at top speed */
    uint32_t half;           /* subticks: v / (2a) */
    uint32_t ramp256;        /* steps to top speed, times 256 */
    uint16_t brake_ratio;    /* 256 * a / b */
} stepper_cfg_t;

typedef struct {
    uint8_t active;
    int8_t dir;
    uint32_t n, k, ka, kd;
    uint32_t start, end, due;
    const uint32_t *dec;
    int32_t pos;
} stepper_t;

#if N_STEPPERS > 0
static const stepper_cfg_t cfg[N_STEPPERS] = STEPPER_CONFIG;
static volatile stepper_t st[N_STEPPERS];
#endif

static volatile uint32_t now;           /* subticks at the last compare match */
static volatile uint16_t hop = MAX_HOP;  /* ticks of the wait now running */
static volatile uint8_t moving;         /* bit per stepper */
static volatile uint32_t last_ms;
static volatile uint16_t last_us;

#if N_STEPPERS > 0
/* the armed move: starts when every stepper of `after` has at most `ov` steps to go */
typedef struct {
    uint8_t state;          /* ARM_NONE, ARM_WAITING, ARM_STARTED */
    uint16_t mask, after;
    uint32_t ov;
    const int32_t *steps;   /* the queued command's (it stays queued until it is done) */
    uint32_t ms;            /* when it started (ARM_STARTED) */
    uint16_t us;
    uint8_t ended;          /* the move of `after` has ended since, at: */
    uint32_t end_ms;
    uint16_t end_us;
} armed_t;
enum { ARM_NONE, ARM_WAITING, ARM_STARTED };
static volatile armed_t armed;
#endif

static inline uint32_t table(const uint32_t *t, uint32_t i) {
    return pgm_read_dword(&t[i]);
}

#if N_STEPPERS > 0
static uint32_t tau(uint8_t i, uint32_t k) {
    volatile stepper_t *m = &st[i];
    if (k <= m->ka) return m->start + table(cfg[i].acc, k);
    if (k >= m->kd) return m->end - table(m->dec, m->n - k);
    return m->start + k * cfg[i].cruise + cfg[i].half;
}
#endif

#if N_STEPPERS > 0
/* Starts the steppers of `mask` by `steps` at step-clock time `start`; interrupts are off. */
static void start_locked(const int32_t *steps, uint16_t mask, uint32_t start) {
    for (uint8_t i = 0; i < N_STEPPERS; i++) {
        if (!(mask & (1u << i)) || steps[i] == 0) continue;
        volatile stepper_t *m = &st[i];
        int32_t s = steps[i];
        m->dir = s > 0 ? 1 : -1;
        m->n = (uint32_t)(s > 0 ? s : -s);
        if (s * (int32_t)DIR_SIGN(i) > 0) *cfg[i].dir.port |= cfg[i].dir.mask;
        else *cfg[i].dir.port &= (uint8_t)~cfg[i].dir.mask;
        m->k = 0;
        m->start = start;
        m->dec = cfg[i].acc;
        if (m->n * 256UL >= 2UL * cfg[i].ramp256) {          /* reaches top speed */
            m->ka = cfg[i].ramp256 >> 8;
            m->kd = m->n - m->ka;
            m->end = start + m->n * cfg[i].cruise + 2 * cfg[i].half;
        } else {                                             /* accelerate, decelerate */
            m->ka = m->n / 2;
            m->kd = m->ka + 1;
            m->end = start + table(cfg[i].acc, m->n / 2) + table(cfg[i].acc, (m->n + 1) / 2);
        }
        m->due = tau(i, 1);
        m->active = 1;
        moving |= (uint8_t)(1 << i);
    }
}

/* Every stepper of `after` has at most `ov` steps to go; interrupts are off. */
static uint8_t tail_reached(uint16_t after, uint32_t ov) {
    for (uint8_t i = 0; i < N_STEPPERS; i++)
        if ((after & (1u << i)) && st[i].active && st[i].n - st[i].k > ov) return 0;
    return 1;
}

/* The armed move starts at `start` (step clock) if the running one's tail is reached. */
static void start_armed_if_due(uint32_t start) {
    if (armed.state != ARM_WAITING || !tail_reached(armed.after, armed.ov)) return;
    start_locked(armed.steps, armed.mask, start);
    uint32_t ms;
    uint16_t us;
    clock_stamp(&ms, &us);
    armed.ms = ms;
    armed.us = us;
    armed.state = ARM_STARTED;
}
#endif

ISR(TIMER2_COMPA_vect) {
    OCR2A = 255; /* no second match while this runs */
    now += (uint32_t)hop << 8;
#if N_STEPPERS > 0
    for (;;) {
        uint32_t horizon = now + ((uint32_t)(TCNT2 + GUARD_TICKS) << 8);
        uint8_t fired = 0;
        uint32_t fired_at = now; /* when the latest step of this pass was due */
        for (uint8_t i = 0; i < N_STEPPERS; i++) {
            if (st[i].active && (int32_t)(st[i].due - horizon) <= 0) {
                *cfg[i].step.port |= cfg[i].step.mask;
                fired |= (uint8_t)(1 << i);
                if ((int32_t)(st[i].due - fired_at) > 0) fired_at = st[i].due;
            }
        }
        if (!fired) break;
        for (uint8_t i = 0; i < N_STEPPERS; i++) {
            if (!(fired & (1 << i))) continue;
            volatile stepper_t *m = &st[i];
            m->k++;
            m->pos += m->dir;
            if (m->k >= m->n) {
                m->active = 0;
                moving &= (uint8_t)~(1 << i);
            } else {
                m->due = tau(i, m->k + 1);
            }
        }
        for (uint8_t i = 0; i < N_STEPPERS; i++)
            if (fired & (1 << i)) *cfg[i].step.port &= (uint8_t)~cfg[i].step.mask;
        start_armed_if_due(fired_at);
        if (armed.state == ARM_STARTED && !armed.ended && !(moving & armed.after)) {
            uint32_t ms;
            uint16_t us;
            clock_stamp(&ms, &us);
            armed.end_ms = ms;
            armed.end_us = us;
            armed.ended = 1;
        }
        if (!moving) {
            uint32_t ms;
            uint16_t us;
            clock_stamp(&ms, &us);
            last_ms = ms;
            last_us = us;
        }
    }
    uint32_t next = (uint32_t)MAX_HOP;
    for (uint8_t i = 0; i < N_STEPPERS; i++) {
        if (!st[i].active) continue;
        int32_t dt = (int32_t)(st[i].due - now);
        uint32_t ticks = dt <= 0 ? 0 : ((uint32_t)dt >> 8);
        if (ticks < next) next = ticks;
    }
    uint16_t floor = (uint16_t)TCNT2 + GUARD_TICKS + 1;
    if (next < floor) next = floor;
    if (next > MAX_HOP) next = MAX_HOP;
    hop = (uint16_t)next;
    OCR2A = (uint8_t)(next - 1);
#else
    hop = MAX_HOP;
#endif
}

/* The step clock now (subticks); interrupts must be off. */
static uint32_t step_clock(void) {
    uint8_t count = TCNT2;
    uint32_t base = now;
    if (TIFR2 & _BV(OCF2A)) { /* the compare matched, its interrupt has not run yet */
        count = TCNT2;
        base += (uint32_t)hop << 8;
    }
    return base + ((uint32_t)count << 8);
}

void motion_init(void) {
#if N_STEPPERS > 0
    for (uint8_t i = 0; i < N_STEPPERS; i++) {
        *cfg[i].step.ddr |= cfg[i].step.mask;
        *cfg[i].dir.ddr |= cfg[i].dir.mask;
    }
#endif
#ifdef ENABLE_PIN_PORT
    ENABLE_PIN_DDR |= ENABLE_PIN_MASK;
    ENABLE_PIN_PORT &= (uint8_t)~ENABLE_PIN_MASK; /* drivers enabled (active low) */
#endif
    TCCR2A = _BV(WGM21);                 /* CTC, TOP = OCR2A */
    TCCR2B = _BV(CS21);                  /* clk / 8: 0.5 us per tick at 16 MHz */
    OCR2A = MAX_HOP - 1;
    TIMSK2 = _BV(OCIE2A);
#if N_SERVOS > 0
    SERVO_HW_INIT();
    for (uint8_t j = 0; j < N_SERVOS; j++) servo_set_mdeg(j, servo_home_mdeg(j));
#endif
}

void steppers_start(const int32_t *steps, uint16_t mask) {
#if N_STEPPERS > 0
    ATOMIC_BLOCK(ATOMIC_RESTORESTATE) {
        start_locked(steps, mask, step_clock() + ((uint32_t)GUARD_TICKS << 8));
        if (!moving) {
            uint32_t ms;
            uint16_t us;
            clock_stamp(&ms, &us);
            last_ms = ms;
            last_us = us;
        }
    }
#else
    (void)steps;
    (void)mask;
#endif
}

uint8_t steppers_busy(void) { return moving != 0; }

uint8_t steppers_moving(uint16_t mask) { return (moving & mask) != 0; }

void steppers_end_stamp(uint16_t mask, uint32_t *ms, uint16_t *us) {
    ATOMIC_BLOCK(ATOMIC_RESTORESTATE) {
        *ms = last_ms; /* every stepper stood still since it ended */
        *us = last_us;
#if N_STEPPERS > 0
        if (armed.state == ARM_STARTED && armed.ended && armed.after == mask) {
            *ms = armed.end_ms; /* it ended while the armed move turned */
            *us = armed.end_us;
        }
#else
        (void)mask;
#endif
    }
}

uint8_t steppers_arm(const int32_t *steps, uint16_t mask, uint16_t after, uint32_t ov) {
#if N_STEPPERS > 0
    uint8_t started = 0;
    ATOMIC_BLOCK(ATOMIC_RESTORESTATE) {
        armed.steps = steps;
        armed.mask = mask;
        armed.after = after;
        armed.ov = ov;
        armed.ended = 0;
        armed.state = ARM_WAITING;
        /* the running move may be in its tail already (the line came late) */
        start_armed_if_due(step_clock() + ((uint32_t)GUARD_TICKS << 8));
        started = armed.state == ARM_STARTED;
    }
    return started;
#else
    (void)steps; (void)mask; (void)after; (void)ov;
    return 0;
#endif
}

uint8_t steppers_armed_started(uint32_t *ms, uint16_t *us) {
    uint8_t started = 0;
#if N_STEPPERS > 0
    ATOMIC_BLOCK(ATOMIC_RESTORESTATE) {
        if (armed.state == ARM_STARTED) {
            started = 1;
            *ms = armed.ms;
            *us = armed.us;
        }
    }
#else
    (void)ms; (void)us;
#endif
    return started;
}

void steppers_disarm(void) {
#if N_STEPPERS > 0
    ATOMIC_BLOCK(ATOMIC_RESTORESTATE) { armed.state = ARM_NONE; }
#endif
}

void steppers_last_stamp(uint32_t *ms, uint16_t *us) {
    ATOMIC_BLOCK(ATOMIC_RESTORESTATE) {
        *ms = last_ms;
        *us = last_us;
    }
}

int32_t stepper_position(uint8_t i) {
    int32_t p = 0;
#if N_STEPPERS > 0
    ATOMIC_BLOCK(ATOMIC_RESTORESTATE) { p = st[i].pos; }
#else
    (void)i;
#endif
    return p;
}

uint32_t steppers_estop(void) {
    uint32_t longest = 0;
#if N_STEPPERS > 0
    armed.state = ARM_NONE;
    uint32_t t = step_clock();
    for (uint8_t i = 0; i < N_STEPPERS; i++) {
        volatile stepper_t *m = &st[i];
        if (!m->active) continue;
        /* the speed at this instant as a distance from standstill under a */
        uint32_t e = m->k;
        if (m->n - m->k < e) e = m->n - m->k;
        if ((cfg[i].ramp256 >> 8) < e) e = cfg[i].ramp256 >> 8;
        uint32_t j = (e * cfg[i].brake_ratio) >> 8;
        if (j > cfg[i].brk_max) j = cfg[i].brk_max;
        if (j == 0) {
            m->active = 0;
            moving &= (uint8_t)~(1 << i);
            continue;
        }
        m->n = m->k + j;
        m->ka = m->k;
        m->kd = m->k + 1;
        m->dec = cfg[i].brk;
        m->end = t + table(cfg[i].brk, j);
        m->due = m->end - table(cfg[i].brk, j - 1);
        uint32_t left = m->end - t;
        if (left > longest) longest = left;
    }
#endif
    return longest / (SUBTICKS_PER_MS / 1000UL);
}

void steppers_halt(void) {
#if N_STEPPERS > 0
    ATOMIC_BLOCK(ATOMIC_RESTORESTATE) {
        for (uint8_t i = 0; i < N_STEPPERS; i++) st[i].active = 0;
        moving = 0;
        armed.state = ARM_NONE;
    }
#endif
}

/* --- servos ------------------------------------------------------------------------ */
#if N_SERVOS > 0
typedef struct {
    volatile uint16_t *ocr;  /* the compare register of its PWM output */
    int16_t min_us, max_us, range_deg;
    int32_t home_mdeg;
    uint16_t speed_dps, settle_ms;
} servo_cfg_t;
static const servo_cfg_t servo_cfg[N_SERVOS] = SERVO_CONFIG;
static int32_t servo_angle[N_SERVOS];
#endif

int32_t servo_home_mdeg(uint8_t j) {
#if N_SERVOS > 0
    return servo_cfg[j].home_mdeg;
#else
    (void)j;
    return 0;
#endif
}

/* travel time of a servo move (us): |change| / speed + settle, as the host's model */
uint32_t servo_move_us(uint8_t j, int32_t from_mdeg, int32_t to_mdeg) {
#if N_SERVOS > 0
    int32_t change = to_mdeg - from_mdeg;
    if (change < 0) change = -change;
    return (uint32_t)change * 1000UL / servo_cfg[j].speed_dps + servo_cfg[j].settle_ms * 1000UL;
#else
    (void)j; (void)from_mdeg; (void)to_mdeg;
    return 0;
#endif
}

uint32_t servo_settle_us(uint8_t j) {
#if N_SERVOS > 0
    return servo_cfg[j].settle_ms * 1000UL;
#else
    (void)j;
    return 0;
#endif
}

void servo_set_mdeg(uint8_t j, int32_t mdeg) {
#if N_SERVOS > 0
    const servo_cfg_t *c = &servo_cfg[j];
    servo_angle[j] = mdeg;
    int32_t lo = c->min_us, hi = c->max_us;
    int32_t us = lo + (int32_t)(((int64_t)mdeg * (hi - lo)) / ((int32_t)c->range_deg * 1000L));
    if (us < lo) us = lo;
    if (us > hi) us = hi;
    uint16_t ticks = (uint16_t)(us * (int32_t)(F_CPU / 8000000UL));
    ATOMIC_BLOCK(ATOMIC_RESTORESTATE) { *c->ocr = ticks; }
#else
    (void)j;
    (void)mdeg;
#endif
}

int32_t servo_mdeg(uint8_t j) {
#if N_SERVOS > 0
    return servo_angle[j];
#else
    (void)j;
    return 0;
#endif
}

/* --- inputs: driver fault (active low) and host link (high = host present) ------------- */
void inputs_init(void) {
#ifdef FAULT_PIN_PORT
    FAULT_PIN_DDR &= (uint8_t)~FAULT_PIN_MASK;
    FAULT_PIN_PORT |= FAULT_PIN_MASK; /* pull-up: unwired = no fault */
#endif
#ifdef LINK_PIN_PORT
    LINK_PIN_DDR &= (uint8_t)~LINK_PIN_MASK;
    LINK_PIN_PORT |= LINK_PIN_MASK;   /* pull-up: unwired = host present */
#endif
}

uint8_t fault_input_active(void) {
#ifdef FAULT_PIN_PORT
    return !(FAULT_PIN_IN & FAULT_PIN_MASK);
#else
    return 0;
#endif
}

uint8_t link_input_present(void) {
#ifdef LINK_PIN_PORT
    return (LINK_PIN_IN & LINK_PIN_MASK) != 0;
#else
    return 1;
#endif
}
