/* The main program: the serial protocol of docs/serial-protocol.md and the command queue.
 *
 * The main loop never waits: it assembles received lines, answers them, starts the next
 * queued command the moment the running one ends and watches the fault and link inputs.
 * The real-time bytes are handled in the UART receive interrupt (realtime_byte below).
 */
#include <string.h>

#include <avr/eeprom.h>
#include <avr/interrupt.h>
#include <avr/sleep.h>
#include <util/atomic.h>

#include "firmware.h"

enum { V_MOVE, V_SERVO, V_DWELL, V_MARK, V_HOME };
enum { S_IDLE, S_RUN, S_ESTOP, S_FAULT };
enum { X_NONE, X_STEPPERS, X_TIMED, X_HOME_STEPPERS };

static const char STATE_NAMES[4][6] PROGMEM = {"idle", "run", "estop", "fault"};

typedef struct {
    uint32_t line;
    uint8_t verb;
    uint16_t mask;            /* motors named (MOVE/SERVO/HOME) */
    int32_t arg;              /* DWELL: microseconds; MOVE: its ov= steps (0: none) */
    int32_t v[N_MOTORS];      /* MOVE: steps; SERVO: millidegrees */
} cmd_t;

static cmd_t queue[QUEUE_SIZE];
static volatile uint8_t q_head, q_count;
static volatile uint8_t ahead; /* 1 + queue offset of a MOVE armed to overlap current (0: none) */
static cmd_t current;
static volatile uint8_t exec_phase = X_NONE;   /* X_NONE: nothing running */
static volatile uint8_t state = S_IDLE;
static volatile uint32_t expected = 1, executed = 0;
static uint8_t resend_pending;
static uint32_t boot_id;

static uint32_t timed_end_us;                  /* end of a SERVO/DWELL (clock_us) */
static uint32_t stamp_ms;                      /* start of the running command */
static uint16_t stamp_us;
static uint32_t timed_us;                      /* its duration */
static uint32_t began_ms;                      /* start of the running command, kept for */
static uint16_t began_us;                      /* its done report (HOME moves stamp_ms on) */
#if N_SERVOS > 0
static int32_t servo_from[N_SERVOS], servo_to[N_SERVOS];
#endif

/* --- formatting -------------------------------------------------------------------- */
char *fmt_u32(char *out, uint32_t v) {
    char tmp[10];
    uint8_t n = 0;
    do { tmp[n++] = (char)('0' + v % 10); v /= 10; } while (v);
    while (n) *out++ = tmp[--n];
    *out = 0;
    return out;
}

char *fmt_i32(char *out, int32_t v) {
    if (v < 0) { *out++ = '-'; return fmt_u32(out, (uint32_t)(-v)); }
    return fmt_u32(out, (uint32_t)v);
}

char *fmt_str(char *out, const char *s) {
    while (*s) *out++ = *s++;
    *out = 0;
    return out;
}

char *fmt_str_P(char *out, const char *s) {
    char c;
    while ((c = (char)pgm_read_byte(s++))) *out++ = c;
    *out = 0;
    return out;
}

char *fmt_milli(char *out, int32_t v) {
    if (v < 0) { *out++ = '-'; v = -v; }
    out = fmt_u32(out, (uint32_t)v / 1000);
    uint16_t frac = (uint16_t)((uint32_t)v % 1000);
    if (frac) {
        *out++ = '.';
        *out++ = (char)('0' + frac / 100);
        frac %= 100;
        if (frac) {
            *out++ = (char)('0' + frac / 10);
            if (frac % 10) *out++ = (char)('0' + frac % 10);
        }
        *out = 0;
    }
    return out;
}

char *fmt_time(char *out, uint32_t ms, uint16_t us) {
    out = fmt_u32(out, ms);
    *out++ = '.';
    *out++ = (char)('0' + us / 100);
    *out++ = (char)('0' + us / 10 % 10);
    *out++ = (char)('0' + us % 10);
    *out = 0;
    return out;
}

static char *fmt_hex32(char *out, uint32_t v) {
    static const char hex[] = "0123456789abcdef";
    for (int8_t s = 28; s >= 0; s -= 4) *out++ = hex[(v >> s) & 0xF];
    *out = 0;
    return out;
}

static void stamp_add(uint32_t *ms, uint16_t *us, uint32_t add_us) {
    uint32_t total = *us + add_us;
    *ms += total / 1000;
    *us = (uint16_t)(total % 1000);
}

static char report_buf[REPORT_MAX]; /* the main loop's report being written */

/* --- reports ----------------------------------------------------------------------- */
static uint8_t queue_depth(void) { return q_count + (exec_phase != X_NONE ? 1 : 0); }

static char *positions(char *p) {
    for (uint8_t i = 0; i < N_MOTORS; i++) {
        if (i) *p++ = ',';
        p = fmt_str_P(p, motor_name(i));
        *p++ = ':';
        if (i < N_STEPPERS) p = fmt_i32(p, stepper_position(i));
        else p = fmt_milli(p, servo_mdeg((uint8_t)(i - N_STEPPERS)));
    }
    *p = 0;
    return p;
}

static void send_banner(void) {
    char *b = report_buf;
    char *p = fmt_str_P(b, PSTR("start fw=" FW_NAME " version=" FW_VERSION " proto=2 boot="));
    p = fmt_hex32(p, boot_id);
    p = fmt_str_P(p, PSTR(" queue="));
    p = fmt_u32(p, QUEUE_SIZE);
    p = fmt_str_P(p, PSTR(" caps=move,servo,mark,dwell,home,status,estop,resend,boot-id,overlap motors="));
    for (uint8_t i = 0; i < N_MOTORS; i++) {
        if (i) *p++ = ',';
        p = fmt_str_P(p, motor_name(i));
    }
    p = fmt_str_P(p, PSTR(" last="));
    p = fmt_u32(p, executed);
    p = fmt_str_P(p, PSTR(" accepted="));
    fmt_u32(p, expected - 1);
    uart_write_line(b);
}

static void compose_status(char *b) {
    char *p = fmt_str_P(b, PSTR("status state="));
    p = fmt_str_P(p, STATE_NAMES[state]);
    p = fmt_str_P(p, PSTR(" boot="));
    p = fmt_hex32(p, boot_id);
    p = fmt_str_P(p, PSTR(" last="));
    p = fmt_u32(p, executed);
    p = fmt_str_P(p, PSTR(" accepted="));
    p = fmt_u32(p, expected - 1);
    p = fmt_str_P(p, PSTR(" queue="));
    p = fmt_u32(p, queue_depth());
    p = fmt_str_P(p, PSTR(" pos="));
    positions(p);
}

/* "<kind> <line> [rest]": kind in program memory, rest in RAM (rest_P: in program memory) */
static void send_line_report(const char *kind_P, uint32_t line, const char *rest,
                             const char *rest_P) {
    char *p = fmt_str_P(report_buf, kind_P);
    *p++ = ' ';
    p = fmt_u32(p, line);
    if (rest || rest_P) *p++ = ' ';
    if (rest) p = fmt_str(p, rest);
    if (rest_P) fmt_str_P(p, rest_P);
    uart_write_line(report_buf);
}

/* --- the real-time bytes (UART receive interrupt) ------------------------------------ */
static volatile uint8_t want_status, want_estop, composing;
static uint32_t estop_ms, stopped_ms;
static uint16_t estop_us, stopped_us;
static uint8_t estop_discarded;

static void estop_now(void) {
    /* interrupts are off: this runs whole, before anything else */
    uint32_t brake_us = steppers_estop();
    clock_stamp(&estop_ms, &estop_us);
    stopped_ms = estop_ms;
    stopped_us = estop_us;
    stamp_add(&stopped_ms, &stopped_us, brake_us);
#if N_SERVOS > 0
    if ((current.verb == V_SERVO || current.verb == V_HOME) && exec_phase == X_TIMED) {
        /* servos hold: each stays at the angle it has reached by now */
        uint32_t elapsed = clock_us() - (timed_end_us - timed_us);
        for (uint8_t j = 0; j < N_SERVOS; j++) {
            if (!(current.mask & (1u << (N_STEPPERS + j)))) continue;
            uint32_t travel = servo_move_us(j, servo_from[j], servo_to[j]) - servo_settle_us(j);
            if (travel == 0 || elapsed >= travel) continue;
            int32_t part = (int32_t)(((int64_t)(servo_to[j] - servo_from[j]) * (int32_t)elapsed)
                                     / (int32_t)travel);
            servo_set_mdeg(j, servo_from[j] + part);
        }
    }
#endif
    estop_discarded = queue_depth();
    q_count = 0;
    ahead = 0;
    exec_phase = X_NONE;
    expected = executed + 1;
    state = S_ESTOP;
}

void realtime_byte(uint8_t byte) {
    if (byte == ESTOP_BYTE) {
        estop_now();
        want_estop = 1;
    } else {
        want_status = 1;
    }
    if (composing) return; /* the outer call sends it */
    composing = 1;
    for (;;) {
        cli();
        if (!want_status && !want_estop) break;
        uint8_t do_estop = want_estop;
        want_estop = 0;
        if (!do_estop) want_status = 0;
        sei(); /* compose with interrupts on: steps and further bytes keep coming */
        static char b[REPORT_MAX]; /* one composer at a time (the composing flag) */
        if (do_estop) {
            char *p = fmt_str_P(b, PSTR("estop t="));
            p = fmt_time(p, estop_ms, estop_us);
            p = fmt_str_P(p, PSTR(" stopped="));
            p = fmt_time(p, stopped_ms, stopped_us);
            p = fmt_str_P(p, PSTR(" rx_wall=0 discarded="));
            fmt_u32(p, estop_discarded);
        } else {
            compose_status(b);
        }
        uart_write_priority_line(b);
    }
    composing = 0; /* interrupts are off here; the interrupt's return enables them */
}

/* --- parsing ----------------------------------------------------------------------- */
static int8_t motor_index(const char *name, uint8_t len) {
    for (uint8_t i = 0; i < N_MOTORS; i++) {
        const char *m = motor_name(i);
        uint8_t k = 0;
        while (k < len && pgm_read_byte(m + k) == (uint8_t)name[k]) k++;
        if (k == len && pgm_read_byte(m + k) == 0) return (int8_t)i;
    }
    return -1;
}

/* A decimal number: -?[0-9]{1,9}(\.[0-9]{1,6})?, as thousandths. Returns 0 if malformed;
   *whole says there was no fractional part. */
static uint8_t parse_number(const char *s, uint8_t len, int32_t *milli, uint8_t *whole) {
    uint8_t i = 0, neg = 0, digits = 0, frac_digits = 0;
    int32_t ip = 0, fp = 0;
    if (i < len && s[i] == '-') { neg = 1; i++; }
    while (i < len && s[i] >= '0' && s[i] <= '9') {
        if (++digits > 9) return 0;
        ip = ip * 10 + (s[i++] - '0');
    }
    if (!digits) return 0;
    *whole = 1;
    if (i < len && s[i] == '.') {
        i++;
        *whole = 0;
        while (i < len && s[i] >= '0' && s[i] <= '9') {
            if (++frac_digits > 6) return 0;
            if (frac_digits <= 3) fp = fp * 10 + (s[i] - '0');
            i++;
        }
        if (!frac_digits) return 0;
        while (frac_digits < 3) { fp *= 10; frac_digits++; }
    }
    if (i != len) return 0;
    if (ip > 2000000) ip = 2000000; /* beyond every range; keeps the product in 32 bits */
    *milli = ip * 1000 + fp;
    if (neg) *milli = -*milli;
    return 1;
}

/* err text: "<VERB> <name>: <value> <problem>"; value echoed (cut to 12 characters) */
static void arg_error(char *out, const char *verb_P, const char *name, uint8_t name_len,
                      const char *value, uint8_t value_len, const char *problem_P) {
    char *p = fmt_str_P(out, verb_P);
    if (name_len) {
        *p++ = ' ';
        for (uint8_t i = 0; i < name_len && i < 12; i++) *p++ = name[i];
    }
    *p++ = ':';
    if (value_len) {
        *p++ = ' ';
        for (uint8_t i = 0; i < value_len && i < 12; i++) *p++ = value[i];
    }
    *p++ = ' ';
    fmt_str_P(p, problem_P);
}

static const char VERBS[5][6] PROGMEM = {"MOVE", "SERVO", "DWELL", "MARK", "HOME"};

/* Parses the arguments of a numbered line into cmd; on a bad argument writes the err text
   into err and returns 0. */
static uint8_t parse_args(cmd_t *cmd, char *args, uint8_t len, char *err) {
    const char *verb = VERBS[cmd->verb]; /* program memory */
    cmd->mask = 0;
    cmd->arg = 0;
    if (cmd->verb == V_MARK) return 1;
    uint8_t i = 0;
    uint8_t count = 0;
    while (i < len) {
        while (i < len && args[i] == ' ') i++;
        if (i >= len) break;
        uint8_t a = i;
        while (i < len && args[i] != ' ') i++;
        const char *word = args + a;
        uint8_t wlen = (uint8_t)(i - a);
        count++;
        if (cmd->verb == V_MOVE && wlen > 3 && !memcmp_P(word, PSTR("ov="), 3)) {
            int32_t milli;
            uint8_t whole;
            if (!parse_number(word + 3, wlen - 3, &milli, &whole) || !whole || milli < 0
                || milli > 1000000000L) {
                arg_error(err, verb, word, 2, word + 3, wlen - 3,
                          PSTR("is not a whole number of steps 0..1000000"));
                return 0;
            }
            cmd->arg = milli / 1000;
            continue;
        }
        if (cmd->verb == V_DWELL) {
            if (count > 1) { fmt_str_P(err, PSTR("DWELL takes one duration in ms")); return 0; }
            int32_t milli;
            uint8_t whole;
            if (!parse_number(word, wlen, &milli, &whole)) {
                arg_error(err, verb, 0, 0, word, wlen, PSTR("is not a number of ms"));
                return 0;
            }
            if (milli < 0 || milli > 60000000L) {
                arg_error(err, verb, 0, 0, word, wlen, PSTR("is out of range 0..60000 ms"));
                return 0;
            }
            cmd->arg = milli; /* thousandths of a ms = microseconds */
            continue;
        }
        uint8_t colon = 0;
        while (colon < wlen && word[colon] != ':') colon++;
        if (cmd->verb == V_HOME) colon = wlen;
        else if (colon == wlen || colon == 0) {
            arg_error(err, verb, 0, 0, word, wlen, PSTR("is not name:value"));
            return 0;
        }
        int8_t m = motor_index(word, colon);
        uint8_t want_stepper = cmd->verb == V_MOVE;
        if (m < 0 || (cmd->verb != V_HOME && ((m < N_STEPPERS) != want_stepper))) {
            char *p = fmt_str_P(err, verb);
            p = fmt_str_P(p, cmd->verb == V_HOME ? PSTR(": no motor named ") :
                           want_stepper ? PSTR(": no stepper named ") : PSTR(": no servo named "));
            for (uint8_t k = 0; k < colon && k < 12; k++) *p++ = word[k];
            *p = 0;
            return 0;
        }
        if (cmd->mask & (1u << m)) {
            arg_error(err, verb, word, colon, 0, 0, PSTR("named twice"));
            return 0;
        }
        cmd->mask |= (uint16_t)(1u << m);
        if (cmd->verb == V_HOME) continue;
        const char *value = word + colon + 1;
        uint8_t vlen = (uint8_t)(wlen - colon - 1);
        int32_t milli;
        uint8_t whole;
        uint8_t ok = parse_number(value, vlen, &milli, &whole);
        if (cmd->verb == V_MOVE) {
            if (!ok || !whole) {
                arg_error(err, verb, word, colon, value, vlen,
                          PSTR("is not a whole number of steps"));
                return 0;
            }
            if (milli < -1000000000L || milli > 1000000000L) {
                arg_error(err, verb, word, colon, value, vlen,
                          PSTR("is out of range -1000000..1000000 steps"));
                return 0;
            }
            cmd->v[m] = milli / 1000;
        } else {
            if (!ok) {
                arg_error(err, verb, word, colon, value, vlen, PSTR("is not a number of degrees"));
                return 0;
            }
            if (milli < -360000L || milli > 360000L) {
                arg_error(err, verb, word, colon, value, vlen,
                          PSTR("is out of range -360..360 degrees"));
                return 0;
            }
            cmd->v[m] = milli;
        }
    }
    if (cmd->verb == V_DWELL && count != 1) { fmt_str_P(err, PSTR("DWELL takes one duration in ms")); return 0; }
    if ((cmd->verb == V_MOVE || cmd->verb == V_SERVO) && !cmd->mask) {
        fmt_str_P(fmt_str_P(err, verb), PSTR(": no motor targets given"));
        return 0;
    }
    if (cmd->verb == V_HOME && !cmd->mask) cmd->mask = (uint16_t)((1u << N_MOTORS) - 1);
    return 1;
}

static uint8_t hexval(char c) {
    if (c >= '0' && c <= '9') return (uint8_t)(c - '0');
    if (c >= 'A' && c <= 'F') return (uint8_t)(c - 'A' + 10);
    return 0xFF; /* lower case is not allowed: the sender writes upper case */
}

/* BODY*CCCC with a matching CRC-16/CCITT-FALSE; returns the body length or -1 */
static int16_t unframe(char *line, uint8_t len) {
    while (len && line[len - 1] == '\r') len--;
    for (uint8_t i = 0; i < len; i++)
        if ((uint8_t)line[i] > 0x7F) return -1;
    int16_t star = -1;
    for (uint8_t i = 0; i < len; i++) if (line[i] == '*') star = i;
    if (star < 0 || len - star - 1 != 4) return -1;
    uint16_t want = 0;
    for (uint8_t i = 0; i < 4; i++) {
        uint8_t h = hexval(line[star + 1 + i]);
        if (h == 0xFF) return -1;
        want = (uint16_t)((want << 4) | h);
    }
    if (crc16(line, (uint8_t)star) != want) return -1;
    line[star] = 0;
    return star;
}

static void resend(const char *reason) {
    char b[40];
    char *p = fmt_str_P(b, PSTR("rs "));
    p = fmt_u32(p, expected);
    *p++ = ' ';
    fmt_str_P(p, reason);
    uart_write_line(b);
}

static void handle_line(char *line, uint8_t len) {
    int16_t body_len = unframe(line, len);
    char *body = line;
    /* trim the body's surrounding spaces as a split() would */
    while (body_len > 0 && body[0] == ' ') { body++; body_len--; }
    while (body_len > 0 && body[body_len - 1] == ' ') body[--body_len] = 0;
    if (body_len <= 0) {
        resend_pending = 1;
        resend(PSTR("bad-line"));
        return;
    }
    if (body_len == 5 && !memcmp_P(body, PSTR("HELLO"), 5)) { send_banner(); return; }
    if (body_len == 5 && !memcmp_P(body, PSTR("CLEAR"), 5)) {
        ATOMIC_BLOCK(ATOMIC_RESTORESTATE) {
            if (state == S_ESTOP || state == S_FAULT) state = S_IDLE;
        }
        compose_status(report_buf);
        uart_write_line(report_buf);
        return;
    }
    /* N<1..9 digits> VERB args */
    uint8_t i = 1, digits = 0;
    uint32_t number = 0;
    if (body[0] != 'N') { resend_pending = 1; resend(PSTR("bad-line")); return; }
    while (i < body_len && body[i] >= '0' && body[i] <= '9' && digits < 10) {
        number = number * 10 + (uint32_t)(body[i++] - '0');
        digits++;
    }
    if (!digits || digits > 9 || number == 0 || i >= body_len || body[i] != ' ') {
        resend_pending = 1;
        resend(PSTR("bad-line"));
        return;
    }
    while (i < body_len && body[i] == ' ') i++;
    uint8_t vstart = i;
    while (i < body_len && body[i] != ' ') i++;
    uint8_t vlen = (uint8_t)(i - vstart);
    int8_t verb = -1;
    for (uint8_t v = 0; v < 5; v++) {
        uint8_t n = (uint8_t)strlen_P(VERBS[v]);
        if (n == vlen && !memcmp_P(body + vstart, VERBS[v], n)) verb = (int8_t)v;
    }
    if (verb < 0) { resend_pending = 1; resend(PSTR("bad-line")); return; }

    if (number < expected) { send_line_report(PSTR("ok"), number, 0, PSTR("dup")); return; }
    if (number > expected) {
        if (!resend_pending) {
            resend_pending = 1;
            resend(PSTR("skipped"));
        }
        return;
    }
    resend_pending = 0;
    static cmd_t cmd;
    static char err[80];
    cmd.line = number;
    cmd.verb = (uint8_t)verb;
    uint8_t parsed = parse_args(&cmd, body + i, (uint8_t)(body_len - i), err);
    uint8_t outcome; /* 0 ok, 1 refused (estop/fault), 2 busy, 3 bad argument */
    uint8_t free_slots = 0;
    uint8_t refused_state = S_IDLE;
    ATOMIC_BLOCK(ATOMIC_RESTORESTATE) {
        if (state == S_ESTOP || state == S_FAULT) { outcome = 1; refused_state = state; }
        else if (queue_depth() >= QUEUE_SIZE) outcome = 2;
        else if (!parsed) { outcome = 3; expected++; }
        else {
            queue[(uint8_t)((q_head + q_count) % QUEUE_SIZE)] = cmd;
            q_count++;
            expected++;
            free_slots = (uint8_t)(QUEUE_SIZE - queue_depth());
            outcome = 0;
        }
    }
    if (outcome == 0) {
        char b[24];
        fmt_u32(fmt_str_P(b, PSTR("free=")), free_slots);
        send_line_report(PSTR("ok"), number, b, 0);
    } else if (outcome == 1) {
        send_line_report(PSTR("err"), number, 0, refused_state == S_ESTOP
                         ? PSTR("estop send CLEAR first") : PSTR("fault send CLEAR first"));
    } else if (outcome == 2) {
        send_line_report(PSTR("busy"), number, 0, 0);
    } else {
        send_line_report(PSTR("err"), number, err, 0);
    }
}

/* --- execution --------------------------------------------------------------------- */
static void finish_current(uint32_t ms, uint16_t us) {
    uint32_t line;
    ATOMIC_BLOCK(ATOMIC_RESTORESTATE) {
        if (exec_phase == X_NONE) return; /* an e-stop took it */
        line = current.line;
        executed = line;
        exec_phase = X_NONE;
        if (state == S_RUN) state = S_IDLE;
    }
    /* protocol 2: the motion's start and end in µs since boot (a 32-bit clock: wraps) */
    char b[64];
    char *p = fmt_time(fmt_str_P(b, PSTR("t=")), ms, us);
    p = fmt_u32(fmt_str_P(p, PSTR(" start=")), began_ms * 1000u + began_us);
    fmt_u32(fmt_str_P(p, PSTR(" end=")), ms * 1000u + us);
    send_line_report(PSTR("done"), line, b, 0);
}

static void start_timed(uint32_t duration_us) {
    timed_us = duration_us;
    timed_end_us = clock_us() + duration_us;
    exec_phase = X_TIMED;
}

static void start_servos(const cmd_t *cmd, uint8_t home) {
    uint32_t longest = 0;
#if N_SERVOS > 0
    for (uint8_t j = 0; j < N_SERVOS; j++) {
        if (!(cmd->mask & (1u << (N_STEPPERS + j)))) continue;
        int32_t target = home ? servo_home_mdeg(j) : cmd->v[N_STEPPERS + j];
        servo_from[j] = servo_mdeg(j);
        servo_to[j] = target;
        uint32_t t = servo_move_us(j, servo_from[j], target);
        if (t > longest) longest = t;
        servo_set_mdeg(j, target);
    }
#else
    (void)cmd;
    (void)home;
#endif
    start_timed(longest);
}

static void start_home_steppers(const cmd_t *cmd) {
    int32_t steps[N_MOTORS];
    for (uint8_t i = 0; i < N_STEPPERS; i++) {
        steps[i] = 0;
        if (!(cmd->mask & (1u << i))) continue;
        int32_t a = (int32_t)stepper_align(i);
        int32_t p = stepper_position(i);
        /* target = floor((p + A/2) / A) * A, a tie going to the higher multiple */
        int32_t q = p + a / 2;
        int32_t f = q >= 0 ? q / a : -((-q + a - 1) / a);
        steps[i] = f * a - p;
    }
    steppers_start(steps, cmd->mask);
    exec_phase = X_HOME_STEPPERS;
}

/* The axes (bit per axis) of the layers a MOVE turns; 0 if a motor it turns is on no arm. */
static uint8_t move_axes(const cmd_t *cmd) {
    uint8_t axes = 0;
    for (uint8_t i = 0; i < N_STEPPERS; i++) {
        if (!(cmd->mask & (1u << i)) || cmd->v[i] == 0) continue;
        uint8_t axis = stepper_axis(i);
        if (axis > 7) return 0;
        axes |= (uint8_t)(1u << axis);
    }
    return axes;
}

/* Planner queue: while a MOVE runs, the next MOVE (past MARK lines, which move nothing) with
   an ov=, no motor in common and only layers perpendicular to the running one's is armed to
   start in the running one's tail (the step timer starts it, see motion.c). It stays in the
   queue, so done reports keep line order. */
static void arm_overlap(void) {
    if (ahead || current.verb != V_MOVE) return;
    for (uint8_t j = 0; j < q_count; j++) {
        const cmd_t *next = &queue[(uint8_t)((q_head + j) % QUEUE_SIZE)];
        if (next->verb == V_MARK) continue;
        uint8_t before = move_axes(&current), after = move_axes(next);
        if (next->verb == V_MOVE && next->arg > 0 && !(next->mask & current.mask)
            && before && after && !(before & after)) {
            ahead = (uint8_t)(j + 1);
            steppers_arm(next->v, next->mask, current.mask, (uint32_t)next->arg);
        }
        return;
    }
}

static void run_queue(void) {
    uint32_t ms;
    uint16_t us;
    if (exec_phase == X_STEPPERS) {
        if (steppers_moving(current.mask)) {
            ATOMIC_BLOCK(ATOMIC_RESTORESTATE) {
                if (exec_phase == X_STEPPERS) arm_overlap();
            }
            return;
        }
        steppers_end_stamp(current.mask, &ms, &us);
        finish_current(ms, us);
    } else if (exec_phase == X_HOME_STEPPERS) {
        if (steppers_busy()) return;
        ATOMIC_BLOCK(ATOMIC_RESTORESTATE) {
            if (exec_phase == X_HOME_STEPPERS) {
                steppers_last_stamp(&stamp_ms, &stamp_us);
                start_servos(&current, 1);
            }
        }
        return;
    } else if (exec_phase == X_TIMED) {
        if ((int32_t)(clock_us() - timed_end_us) < 0) return;
        ms = stamp_ms;
        us = stamp_us;
        stamp_add(&ms, &us, timed_us);
        finish_current(ms, us);
    }
    /* start the next command (interrupts off: an e-stop cannot fall in between) */
    uint8_t done_now = 0;
    ATOMIC_BLOCK(ATOMIC_RESTORESTATE) {
        if (exec_phase == X_NONE && q_count && state != S_ESTOP && state != S_FAULT) {
            current = queue[q_head];
            q_head = (uint8_t)((q_head + 1) % QUEUE_SIZE);
            q_count--;
            state = S_RUN;
            clock_stamp(&stamp_ms, &stamp_us);
            began_ms = stamp_ms;
            began_us = stamp_us;
            uint8_t overlapped = 0;
            if (ahead) {
                if (--ahead == 0) { /* the armed MOVE: started in the tail of the one before? */
                    overlapped = steppers_armed_started(&began_ms, &began_us);
                    steppers_disarm(); /* taken: the move before it is done and reported */
                }
            }
            switch (current.verb) {
            case V_MOVE:
                if (!overlapped) steppers_start(current.v, current.mask);
                exec_phase = X_STEPPERS;
                break;
            case V_SERVO:
                start_servos(&current, 0);
                break;
            case V_DWELL:
                start_timed((uint32_t)current.arg);
                break;
            case V_HOME:
                start_home_steppers(&current);
                break;
            default: /* MARK: nothing moves */
                exec_phase = X_TIMED;
                done_now = 1;
            }
        }
    }
    if (done_now) finish_current(stamp_ms, stamp_us);
}

/* --- inputs ------------------------------------------------------------------------ */
static uint8_t fault_was, link_was = 1;

static void watch_inputs(void) {
    uint8_t fault = fault_input_active();
    if (fault && !fault_was && state != S_FAULT) {
        uint32_t line;
        steppers_halt();
        ATOMIC_BLOCK(ATOMIC_RESTORESTATE) {
            line = exec_phase != X_NONE ? current.line : executed;
            q_count = 0;
            ahead = 0;
            exec_phase = X_NONE;
            expected = executed + 1;
            state = S_FAULT;
        }
        char b[80];
        char *p = fmt_str_P(b, PSTR("fault jam motor stall input asserted line="));
        fmt_u32(p, line);
        uart_write_line(b);
    }
    fault_was = fault;
    uint8_t link = link_input_present();
    if (!link && link_was) {
        /* the host went away: finish the motion in progress (a move already started in its
           tail too, with the lines before it), discard the rest */
        uint32_t ms;
        uint16_t us;
        ATOMIC_BLOCK(ATOMIC_RESTORESTATE) {
            uint8_t keep = ahead && steppers_armed_started(&ms, &us) ? ahead : 0;
            if (!keep) {
                ahead = 0;
                steppers_disarm();
            }
            q_count = keep;
            expected = (keep ? queue[(uint8_t)((q_head + keep - 1) % QUEUE_SIZE)].line
                        : exec_phase != X_NONE ? current.line : executed) + 1;
        }
        resend_pending = 0;
    }
    link_was = link;
}

/* --- boot -------------------------------------------------------------------------- */
static uint32_t noinit_sram[16] __attribute__((section(".noinit")));
static uint32_t EEMEM boot_counter;

static uint32_t mix(uint32_t h, uint8_t byte) { return (h ^ byte) * 16777619UL; }

/* An AVR has no random number generator. The boot id mixes (FNV-1a) an EEPROM boot counter
   (different on every boot of this board), the power-on contents of 64 bytes of SRAM the C
   runtime never initialises, and the low bits of 32 ADC readings of the internal bandgap
   reference (thermal noise). */
static uint32_t draw_boot_id(void) {
    uint32_t count = eeprom_read_dword(&boot_counter) + 1;
    eeprom_update_dword(&boot_counter, count);
    uint32_t h = 2166136261UL;
    for (uint8_t i = 0; i < 4; i++) h = mix(h, (uint8_t)(count >> (8 * i)));
    const uint8_t *raw = (const uint8_t *)noinit_sram;
    for (uint8_t i = 0; i < sizeof noinit_sram; i++) h = mix(h, raw[i]);
    ADMUX = _BV(REFS0) | BANDGAP_MUX;
#ifdef MUX5
    ADCSRB = 0;
#endif
    ADCSRA = _BV(ADEN) | _BV(ADPS2) | _BV(ADPS1) | _BV(ADPS0);
    for (uint8_t i = 0; i < 32; i++) {
        ADCSRA |= _BV(ADSC);
        while (ADCSRA & _BV(ADSC)) { } /* 104 us per conversion, once per boot */
        h = mix(h, ADCL);
        (void)ADCH;
    }
    ADCSRA = 0;
    noinit_sram[0] ^= h; /* the next warm boot sees different SRAM */
    return h ? h : 1;
}

int main(void) {
    set_sleep_mode(SLEEP_MODE_IDLE);
    boot_id = draw_boot_id();
    clock_init();
    inputs_init();
    motion_init();
    uart_init();
    sei();
    send_banner();
    static char line[MAX_LINE + 1];
    uint8_t len = 0;
    for (;;) {
        int16_t c;
        while ((c = uart_read()) >= 0) {
            if (c == '\n') {
                if (len) handle_line(line, len);
                len = 0;
            } else if (len < MAX_LINE) {
                line[len++] = (char)c;
            }
            run_queue();
        }
        run_queue();
        watch_inputs();
        /* idle until the next interrupt (a received byte, a step, the millisecond tick):
           sei directly before sleep lets no interrupt slip in between check and sleep */
        cli();
        if (!uart_rx_waiting()) {
            sleep_enable();
            sei();
            sleep_cpu();
            sleep_disable();
        }
        sei();
    }
}
