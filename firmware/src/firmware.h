/* robocell motor firmware: shared declarations.
 *
 * Units: stepper time in "subticks" (1/256 of a 0.5 us tick of the step timer, so
 * 512 000 per ms, wrapping uint32, compared by signed difference); the host-visible clock
 * in microseconds since boot (uint32, wraps after 71 minutes; reports print ms.frac from a
 * separate millisecond counter). Servo angles in millidegrees.
 */
#ifndef ROBOCELL_FIRMWARE_H
#define ROBOCELL_FIRMWARE_H

#include <stdint.h>
#include <avr/io.h>
#include <avr/pgmspace.h>

#include "robot_config.h" /* generated from the robot profile */

#if !defined(USART0_RX_vect) && defined(USART_RX_vect)
#define USART0_RX_vect USART_RX_vect
#define USART0_UDRE_vect USART_UDRE_vect
#endif

#define FW_NAME "robocell-avr"
#define FW_VERSION "1.0"
#define PROTO_VERSION 1
#if RAMEND > 0x1000
#define QUEUE_SIZE 8          /* Mega: 8 KiB of RAM */
#else
#define QUEUE_SIZE 6          /* Uno: 2 KiB of RAM */
#endif
#define MAX_LINE 200          /* longest received line, as the host's limit */
#define REPORT_MAX 160        /* longest report line this firmware writes */
#define ESTOP_BYTE 0x85
#define STATUS_BYTE '?'

#define SUBTICKS_PER_MS 512000UL

/* --- pins (generated tables describe them) --- */
typedef struct {
    volatile uint8_t *port;
    volatile uint8_t *ddr;
    uint8_t mask;
} pin_t;

/* --- clock.c --- */
void clock_init(void);
uint32_t clock_us(void);              /* microseconds since boot (wraps) */
void clock_stamp(uint32_t *ms, uint16_t *us); /* ms since boot and the us within it */

/* --- uart.c --- */
void uart_init(void);
int16_t uart_read(void);
uint8_t uart_rx_waiting(void);              /* next queued (non real-time) byte, -1 if none */
void uart_write_line(const char *body); /* frames BODY*CRC\n into the main TX stream */
uint16_t crc16(const char *data, uint8_t len);
void uart_write_priority_line(const char *body); /* real-time reports only */

/* --- motion.c --- */
void motion_init(void);
void steppers_start(const int32_t *steps, uint16_t mask); /* relative steps, all together */
uint8_t steppers_busy(void);
uint8_t steppers_moving(uint16_t mask); /* any stepper of mask still turning */
void steppers_end_stamp(uint16_t mask, uint32_t *ms, uint16_t *us); /* the latest last step
                                          of mask's steppers (their motion's end) */
/* planner queue: start `steps` of `mask` at the step after which every stepper of `after`
   has at most `ov` steps to go (at once if it has already); returns 1 if it started now.
   `steps` must stay valid until it started or steppers_disarm (a queued command's) */
uint8_t steppers_arm(const int32_t *steps, uint16_t mask, uint16_t after, uint32_t ov);
uint8_t steppers_armed_started(uint32_t *ms, uint16_t *us); /* 1 and when, once it started */
void steppers_disarm(void);int32_t stepper_position(uint8_t i);   /* steps since boot (read atomically) */
void steppers_last_stamp(uint32_t *ms, uint16_t *us); /* when the last step of a motion fell */
uint32_t steppers_estop(void);         /* called from the RX interrupt: brake now; returns
                                          the microseconds until every stepper stands */
void steppers_halt(void);             /* stop at once (driver fault) */
void servo_set_mdeg(uint8_t j, int32_t mdeg);
int32_t servo_home_mdeg(uint8_t j);
uint32_t servo_move_us(uint8_t j, int32_t from_mdeg, int32_t to_mdeg);
uint32_t servo_settle_us(uint8_t j);
int32_t servo_mdeg(uint8_t j);
void inputs_init(void);
uint8_t fault_input_active(void);
uint8_t link_input_present(void);

/* --- protocol.c (the main program) --- */
void estop_from_isr(void);
void status_from_isr(void);

/* --- number formatting (protocol.c) --- */
char *fmt_u32(char *out, uint32_t v);
char *fmt_i32(char *out, int32_t v);
char *fmt_str(char *out, const char *s);
char *fmt_str_P(char *out, const char *s);
char *fmt_milli(char *out, int32_t v);          /* 1234 -> "1.234", trailing zeros cut */
char *fmt_time(char *out, uint32_t ms, uint16_t us); /* "12.345" */

#endif
