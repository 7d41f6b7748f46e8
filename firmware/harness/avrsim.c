/* avrsim: run a robocell firmware ELF in simavr, hardware in the loop.
 *
 * The AVR runs at its clock (--freq), paced to real time times --speed (0 = as fast as the
 * host can). UART0 is connected to stdin/stdout through a line protocol, so a driver
 * program (robocell's adapter) owns the host side of the serial line:
 *
 *   stdin   R <hex bytes>        bytes for UART0's receiver (paced by the UART's own flow)
 *           P <input> <0|1>      drive an input pin (--input NAME:PORTBIT)
 *           X                    reset the microcontroller (power cycle: SRAM kept)
 *   stdout  L <ns> <hex line> <steps> <widths> <moving>   a complete line the firmware
 *                                sent, with the simulated time and, at that moment, every
 *                                stepper's signed step count (rising STEP edges, sign from
 *                                DIR), every servo's last pulse width in microseconds, and
 *                                the mask of steppers in motion
 *           I <ns> - <steps> <widths> <moving>   the steppers fell idle (no STEP edge for
 *                                5 ms after stepping): positions after a stop
 *           B <ns>                                boot (start or reset)
 *           M <ns> <starting> <steps> <widths> <moving>   a motion began: steppers (mask
 *                                <starting>) made their first STEP after standing still
 *                                (their counts are given as before that step), or a servo's
 *                                pulse width changed. With --sync the AVR then waits (the
 *                                wait takes no simulated time) until the driver answers "G"
 *                                on stdin, so the driver can judge the motion first.
 * A stepper is in motion while its last STEP edge is younger than its gap (--stepper
 * STEP:DIR:GAP_US, default 2000): longer than any interval between the steps of one motion,
 * shorter than the time from a motion's start to its first step.
 *
 * --trace FILE writes every STEP edge ("<ns> S <i> <+1|-1>"), every change of a servo's
 * pulse width ("<ns> W <j> <us>"), every byte given to the receiver ("<ns> R <hex>") and
 * every line sent ("<ns> T <text>") with its simulated time in nanoseconds.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <simavr/avr_eeprom.h>
#include <simavr/avr_ioport.h>
#include <simavr/avr_uart.h>
#include <simavr/sim_avr.h>
#include <simavr/sim_elf.h>
#include <simavr/sim_irq.h>

#define MAX_STEPPERS 8
#define MAX_SERVOS 16
#define MAX_INPUTS 4
#define IDLE_NS 5000000ULL

typedef struct { char name[16]; char port; int bit; } pinref_t;

static avr_t *avr;
static uint32_t freq = 16000000;
static double speed = 1.0;
static FILE *trace;

static int n_steppers, n_servos, n_inputs;
static pinref_t step_pin[MAX_STEPPERS], dir_pin[MAX_STEPPERS], servo_pin[MAX_SERVOS];
static pinref_t input_pin[MAX_INPUTS];
static int input_level[MAX_INPUTS];
static int dir_level[MAX_STEPPERS];
static long long steps[MAX_STEPPERS];
static uint64_t rise_cycle[MAX_SERVOS];
static int width_us[MAX_SERVOS];
static int last_pulse_us[MAX_SERVOS];
static uint64_t last_step_ns;
static uint64_t motor_last_ns[MAX_STEPPERS];
static uint64_t gap_ns[MAX_STEPPERS];
static long long start_count[MAX_STEPPERS];
static unsigned starting;
static int stepping;
static int motion_began;
static int sync_motion;

static uint8_t rx_pending[65536];
static size_t rx_len;
static int rx_xon = 1;
static char tx_line[1024];
static size_t tx_len;

static uint64_t sim_ns(void) { return (uint64_t)((double)avr->cycle * 1e9 / freq); }

/* "<steps> <widths> <moving mask>"; starting steppers at their count before the motion */
static void positions(char *out, size_t size) {
    size_t n = 0;
    uint64_t now = sim_ns();
    unsigned moving = 0;
    n += (size_t)snprintf(out + n, size - n, "%s", n_steppers ? "" : "-");
    for (int i = 0; i < n_steppers; i++) {
        long long count = (starting & (1u << i)) ? start_count[i] : steps[i];
        n += (size_t)snprintf(out + n, size - n, "%s%lld", i ? "," : "", count);
        if (motor_last_ns[i] && now - motor_last_ns[i] <= gap_ns[i]) moving |= 1u << i;
    }
    n += (size_t)snprintf(out + n, size - n, " %s", n_servos ? "" : "-");
    for (int j = 0; j < n_servos; j++)
        n += (size_t)snprintf(out + n, size - n, "%s%d", j ? "," : "", width_us[j]);
    snprintf(out + n, size - n, " %u", moving);
}

static void on_step(struct avr_irq_t *irq, uint32_t value, void *param) {
    (void)irq;
    int i = (int)(intptr_t)param;
    if (!value || irq->value) return; /* rising edges only */
    int sign = dir_level[i] ? 1 : -1;
    steps[i] += sign;
    last_step_ns = sim_ns();
    if (!motor_last_ns[i] || last_step_ns - motor_last_ns[i] > gap_ns[i]) {
        if (!(starting & (1u << i))) start_count[i] = steps[i] - sign;
        starting |= 1u << i;
        motion_began = 1;
    }
    motor_last_ns[i] = last_step_ns;
    stepping = 1;
    if (trace) fprintf(trace, "%llu S %d %+d\n", (unsigned long long)last_step_ns, i, sign);
}

static void on_dir(struct avr_irq_t *irq, uint32_t value, void *param) {
    (void)irq;
    dir_level[(int)(intptr_t)param] = value ? 1 : 0;
}

static void on_servo(struct avr_irq_t *irq, uint32_t value, void *param) {
    int j = (int)(intptr_t)param;
    if (value && !irq->value) {
        rise_cycle[j] = avr->cycle;
    } else if (!value && irq->value && rise_cycle[j]) {
        int us = (int)((double)(avr->cycle - rise_cycle[j]) * 1e6 / freq + 0.5);
        /* a width counts once two pulses in a row agree: a compare register written while
           a pulse is high can cut one pulse short in simavr (a real AVR buffers it) */
        int agrees = abs(us - last_pulse_us[j]) <= 2;
        last_pulse_us[j] = us;
        if (agrees && abs(us - width_us[j]) >= 2) {
            if (width_us[j] && abs(us - width_us[j]) >= 5) motion_began = 1; /* not jitter */
            width_us[j] = us;
            if (trace) fprintf(trace, "%llu W %d %d\n", (unsigned long long)sim_ns(), j, us);
        }
    }
}

static void on_uart_out(struct avr_irq_t *irq, uint32_t value, void *param) {
    (void)irq;
    (void)param;
    if (tx_len < sizeof tx_line - 1) tx_line[tx_len++] = (char)value;
    if (value != '\n') return;
    char pos[512];
    positions(pos, sizeof pos);
    unsigned long long t = (unsigned long long)sim_ns();
    printf("L %llu ", t);
    for (size_t k = 0; k < tx_len; k++) printf("%02x", (uint8_t)tx_line[k]);
    printf(" %s\n", pos);
    fflush(stdout);
    if (trace) {
        fprintf(trace, "%llu T %.*s\n", t, (int)tx_len - 1, tx_line);
        fflush(trace); /* the trace is complete up to every line the host reads */
    }
    tx_len = 0;
}

static void on_xon(struct avr_irq_t *irq, uint32_t value, void *param) {
    (void)irq; (void)value; (void)param;
    rx_xon = 1;
}

static void on_xoff(struct avr_irq_t *irq, uint32_t value, void *param) {
    (void)irq; (void)value; (void)param;
    rx_xon = 0;
}

static avr_irq_t *pin_irq(const pinref_t *p) {
    return avr_io_getirq(avr, AVR_IOCTL_IOPORT_GETIRQ(p->port), p->bit);
}

static void feed_uart(void) {
    size_t k = 0;
    while (k < rx_len && rx_xon) {
        if (trace) fprintf(trace, "%llu R %02x\n", (unsigned long long)sim_ns(), rx_pending[k]);
        avr_raise_irq(avr_io_getirq(avr, AVR_IOCTL_UART_GETIRQ('0'), UART_IRQ_INPUT),
                      rx_pending[k]);
        k++;
    }
    memmove(rx_pending, rx_pending + k, rx_len - k);
    rx_len -= k;
}

static void drive_inputs(void) {
    for (int i = 0; i < n_inputs; i++) avr_raise_irq(pin_irq(&input_pin[i]), input_level[i]);
}

static int hexnib(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static char cmd_buf[1 << 17];
static size_t cmd_len;

static int go_received;

static int handle_command(char *line) {
    if (line[0] == 'G') go_received = 1;
    if (line[0] == 'R' && line[1] == ' ') {
        for (char *p = line + 2; p[0] && p[1]; p += 2) {
            int hi = hexnib(p[0]), lo = hexnib(p[1]);
            if (hi < 0 || lo < 0) break;
            if (rx_len < sizeof rx_pending) rx_pending[rx_len++] = (uint8_t)(hi * 16 + lo);
        }
    } else if (line[0] == 'P' && line[1] == ' ') {
        char name[32];
        int level;
        if (sscanf(line + 2, "%31s %d", name, &level) == 2)
            for (int i = 0; i < n_inputs; i++)
                if (!strcmp(name, input_pin[i].name)) {
                    input_level[i] = level ? 1 : 0;
                    avr_raise_irq(pin_irq(&input_pin[i]), input_level[i]);
                }
    } else if (line[0] == 'X') {
        avr_reset(avr);
        tx_len = 0;
        drive_inputs();
        printf("B %llu\n", (unsigned long long)sim_ns());
        fflush(stdout);
    } else if (line[0] == 'Q') {
        return 0;
    }
    return 1;
}

/* reads whatever stdin has; waits up to timeout_ms for it */
static int poll_stdin(int timeout_ms) {
    struct pollfd pfd = {0, POLLIN, 0};
    int r = poll(&pfd, 1, timeout_ms);
    if (r <= 0) return 1;
    ssize_t n = read(0, cmd_buf + cmd_len, sizeof cmd_buf - cmd_len - 1);
    if (n <= 0) return 0; /* the driver went away */
    cmd_len += (size_t)n;
    size_t start = 0;
    for (size_t k = 0; k < cmd_len; k++) {
        if (cmd_buf[k] != '\n') continue;
        cmd_buf[k] = 0;
        if (!handle_command(cmd_buf + start)) return 0;
        start = k + 1;
    }
    memmove(cmd_buf, cmd_buf + start, cmd_len - start);
    cmd_len -= start;
    if (cmd_len == sizeof cmd_buf - 1) cmd_len = 0;
    return 1;
}

static int parse_pin(const char *text, pinref_t *p) {
    /* NAME:PB3 or PB3 */
    const char *colon = strrchr(text, ':');
    const char *pin = colon ? colon + 1 : text;
    if (colon) snprintf(p->name, sizeof p->name, "%.*s", (int)(colon - text), text);
    if (pin[0] != 'P' || !pin[1] || pin[2] < '0' || pin[2] > '7') return 0;
    p->port = pin[1];
    p->bit = pin[2] - '0';
    return 1;
}

static double wall_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* simavr's own messages go to stderr: stdout carries the protocol above */
static void log_to_stderr(struct avr_t *a, const int level, const char *format, va_list ap) {
    (void)a;
    if (level <= LOG_ERROR) vfprintf(stderr, format, ap);
}

/* simavr would sleep in real time while the AVR sleeps; the pacing here does that */
static void no_sleep(struct avr_t *a, avr_cycle_count_t cycles) {
    (void)a;
    (void)cycles;
}

static void usage(void) {
    fprintf(stderr, "usage: avrsim --mcu MCU --elf FILE [--freq HZ] [--speed X] [--trace FILE]\n"
                    "  [--stepper STEP_PIN:DIR_PIN]... [--servo PIN]... [--input NAME:PIN=LEVEL]...\n"
                    "  [--seed N] [--sync 1]   pins as PB3\n");
    exit(2);
}

int main(int argc, char **argv) {
    const char *mcu = 0, *elf = 0;
    unsigned seed = (unsigned)time(0) ^ (unsigned)getpid();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : 0;
        if (!v) usage();
        i++;
        if (!strcmp(a, "--mcu")) mcu = v;
        else if (!strcmp(a, "--elf")) elf = v;
        else if (!strcmp(a, "--freq")) freq = (uint32_t)strtoul(v, 0, 10);
        else if (!strcmp(a, "--speed")) speed = atof(v);
        else if (!strcmp(a, "--sync")) sync_motion = atoi(v);
        else if (!strcmp(a, "--seed")) seed = (unsigned)strtoul(v, 0, 10);
        else if (!strcmp(a, "--trace")) {
            trace = fopen(v, "w");
            if (!trace) { perror(v); return 1; }
        } else if (!strcmp(a, "--stepper")) {
            char s[32], d[32];
            unsigned gap_us = 2000;
            if (n_steppers >= MAX_STEPPERS || sscanf(v, "%31[^:]:%31[^:]:%u", s, d, &gap_us) < 2 ||
                !parse_pin(s, &step_pin[n_steppers]) || !parse_pin(d, &dir_pin[n_steppers]))
                usage();
            gap_ns[n_steppers] = (uint64_t)gap_us * 1000;
            n_steppers++;
        } else if (!strcmp(a, "--servo")) {
            if (n_servos >= MAX_SERVOS || !parse_pin(v, &servo_pin[n_servos])) usage();
            n_servos++;
        } else if (!strcmp(a, "--input")) {
            char spec[48];
            int level = 1;
            snprintf(spec, sizeof spec, "%s", v);
            char *eq = strchr(spec, '=');
            if (eq) { level = atoi(eq + 1); *eq = 0; }
            if (n_inputs >= MAX_INPUTS || !parse_pin(spec, &input_pin[n_inputs])) usage();
            input_level[n_inputs++] = level;
        } else usage();
    }
    if (!mcu || !elf) usage();
    srand(seed);
    avr_global_logger_set(log_to_stderr);
    signal(SIGPIPE, SIG_IGN);

    elf_firmware_t fw;
    memset(&fw, 0, sizeof fw);
    if (elf_read_firmware(elf, &fw)) { fprintf(stderr, "avrsim: cannot read %s\n", elf); return 1; }
    snprintf(fw.mmcu, sizeof fw.mmcu, "%s", mcu);
    fw.frequency = freq;
    avr = avr_make_mcu_by_name(mcu);
    if (!avr) { fprintf(stderr, "avrsim: simavr has no %s\n", mcu); return 1; }
    avr_init(avr);
    avr->log = 0;
    avr->sleep = no_sleep;
    avr_load_firmware(avr, &fw);
    avr->frequency = freq;

    /* power-on SRAM holds noise; the firmware's boot id reads what the C runtime leaves */
    for (uint32_t a = avr->ioend + 1; a <= avr->ramend; a++) avr->data[a] = (uint8_t)rand();
    /* the board's EEPROM boot counter: whatever this board has counted so far */
    uint8_t counter[4];
    for (int k = 0; k < 4; k++) counter[k] = (uint8_t)rand();
    avr_eeprom_desc_t ee = {.ee = counter, .offset = 0, .size = 4};
    avr_ioctl(avr, AVR_IOCTL_EEPROM_SET, &ee);

    for (int i = 0; i < n_steppers; i++) {
        avr_irq_register_notify(pin_irq(&step_pin[i]), on_step, (void *)(intptr_t)i);
        avr_irq_register_notify(pin_irq(&dir_pin[i]), on_dir, (void *)(intptr_t)i);
    }
    for (int j = 0; j < n_servos; j++)
        avr_irq_register_notify(pin_irq(&servo_pin[j]), on_servo, (void *)(intptr_t)j);
    avr_irq_t *uart = avr_io_getirq(avr, AVR_IOCTL_UART_GETIRQ('0'), UART_IRQ_OUTPUT);
    avr_irq_register_notify(uart, on_uart_out, 0);
    avr_irq_register_notify(avr_io_getirq(avr, AVR_IOCTL_UART_GETIRQ('0'), UART_IRQ_OUT_XON),
                            on_xon, 0);
    avr_irq_register_notify(avr_io_getirq(avr, AVR_IOCTL_UART_GETIRQ('0'), UART_IRQ_OUT_XOFF),
                            on_xoff, 0);
    uint32_t stdio_flags = 0;
    avr_ioctl(avr, AVR_IOCTL_UART_GET_FLAGS('0'), &stdio_flags);
    stdio_flags &= ~AVR_UART_FLAG_STDIO;
    avr_ioctl(avr, AVR_IOCTL_UART_SET_FLAGS('0'), &stdio_flags);
    drive_inputs();
    printf("B 0\n");
    fflush(stdout);

    double wall0 = wall_s();
    for (;;) {
        for (int k = 0; k < 2000; k++) {
            int state = avr_run(avr);
            if (state == cpu_Done || state == cpu_Crashed) {
                fprintf(stderr, "avrsim: the firmware stopped (state %d)\n", state);
                return 1;
            }
        }
        if (rx_len) feed_uart();
        uint64_t now = sim_ns();
        if (stepping && now - last_step_ns > IDLE_NS) {
            char pos[512];
            positions(pos, sizeof pos);
            printf("I %llu - %s\n", (unsigned long long)now, pos);
            fflush(stdout);
            stepping = 0;
        }
        if (motion_began) {
            char pos[512];
            positions(pos, sizeof pos);
            printf("M %llu %u %s\n", (unsigned long long)now, starting, pos);
            fflush(stdout);
            motion_began = 0;
            starting = 0;
            if (sync_motion) {
                double paused = wall_s();
                go_received = 0;
                while (!go_received)
                    if (!poll_stdin(1000)) return 0;
                wall0 += wall_s() - paused; /* the wait is outside simulated time */
            }
        }
        int wait_ms = 0;
        if (speed > 0) {
            double ahead = (double)now * 1e-9 / speed - (wall_s() - wall0);
            if (ahead > 0.002) wait_ms = (int)(ahead * 1000);
        }
        if (!poll_stdin(wait_ms)) break;
        if (trace && wait_ms) fflush(trace);
    }
    if (trace) fclose(trace);
    return 0;
}
