/* UART0 at 115200 baud, interrupt driven both ways.
 *
 * Receive: the RX interrupt acts on the real-time bytes at once (0x85 e-stop, '?' status)
 * and queues every other byte for the main loop, so an e-stop byte inside a line stops the
 * motors and the line goes on assembling around it.
 * Transmit: two rings. The main loop writes whole framed lines into the main ring; the
 * real-time reports (status, estop) go into the priority ring from the RX interrupt. The
 * UDRE interrupt switches between them only at line boundaries, so lines never interleave
 * and a real-time report leaves right after the line being sent.
 */
#include <avr/interrupt.h>

#include "firmware.h"

#define BAUD_DIVISOR ((F_CPU / 8UL / 115200UL) - 1UL) /* double speed mode */

#if RAMEND > 0x1000
#define TX_SIZE 256
#define RX_SIZE 128
#else
#define TX_SIZE 128
#define RX_SIZE 64
#endif
#define PRIO_SIZE 96

static volatile uint8_t rx_buf[RX_SIZE];
static volatile uint8_t rx_head, rx_tail;

static volatile uint8_t tx_buf[TX_SIZE];
static volatile uint16_t tx_head, tx_tail;
static volatile uint8_t prio_buf[PRIO_SIZE];
static volatile uint8_t prio_head, prio_tail;
enum { SRC_NONE, SRC_MAIN, SRC_PRIO };
static volatile uint8_t tx_source;

void realtime_byte(uint8_t byte);     /* protocol.c */

void uart_init(void) {
    UBRR0H = (uint8_t)(BAUD_DIVISOR >> 8);
    UBRR0L = (uint8_t)BAUD_DIVISOR;
    UCSR0A = _BV(U2X0);
    UCSR0C = _BV(UCSZ01) | _BV(UCSZ00); /* 8N1 */
    UCSR0B = _BV(RXEN0) | _BV(TXEN0) | _BV(RXCIE0);
}

ISR(USART0_RX_vect) {
    uint8_t status = UCSR0A;
    uint8_t byte = UDR0;
    if (status & (_BV(FE0) | _BV(DOR0))) {
        /* a framing error or an overrun damages the line: the CRC check will refuse it;
           keep the byte so the damage is seen rather than hidden */
    }
    if (byte == ESTOP_BYTE || byte == STATUS_BYTE) {
        realtime_byte(byte);
        return;
    }
    uint8_t next = (uint8_t)((rx_head + 1) % RX_SIZE);
    if (next != rx_tail) {
        rx_buf[rx_head] = byte;
        rx_head = next;
    }
    /* a full ring drops the byte: the line fails its CRC and is resent */
}

uint8_t uart_rx_waiting(void) { return rx_tail != rx_head; }

int16_t uart_read(void) {
    if (rx_tail == rx_head) return -1;
    uint8_t byte = rx_buf[rx_tail];
    rx_tail = (uint8_t)((rx_tail + 1) % RX_SIZE);
    return byte;
}

ISR(USART0_UDRE_vect) {
    if (tx_source == SRC_NONE) {
        if (prio_head != prio_tail) tx_source = SRC_PRIO;
        else if (tx_head != tx_tail) tx_source = SRC_MAIN;
        else {
            UCSR0B &= (uint8_t)~_BV(UDRIE0);
            return;
        }
    }
    uint8_t byte;
    if (tx_source == SRC_PRIO) {
        if (prio_head == prio_tail) { /* the composer is still writing this line */
            UCSR0B &= (uint8_t)~_BV(UDRIE0);
            return;
        }
        byte = prio_buf[prio_tail];
        prio_tail = (uint8_t)((prio_tail + 1) % PRIO_SIZE);
    } else {
        if (tx_head == tx_tail) {
            UCSR0B &= (uint8_t)~_BV(UDRIE0);
            return;
        }
        byte = tx_buf[tx_tail];
        tx_tail = (uint16_t)((tx_tail + 1) % TX_SIZE);
    }
    UDR0 = byte;
    if (byte == '\n') tx_source = SRC_NONE;
}

static void tx_enable(void) {
    uint8_t sreg = SREG;
    cli();
    UCSR0B |= _BV(UDRIE0);
    SREG = sreg;
}

uint16_t crc16(const char *data, uint8_t len) {
    uint16_t crc = 0xFFFF;
    while (len--) {
        crc ^= (uint16_t)(uint8_t)*data++ << 8;
        for (uint8_t bit = 0; bit < 8; bit++)
            crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
    }
    return crc;
}

static uint8_t frame(const char *body, char *tail) {
    /* writes "*CCCC\n" for BODY into TAIL; returns the body length */
    uint8_t len = 0;
    while (body[len]) len++;
    uint16_t crc = crc16(body, len);
    static const char hex[] = "0123456789ABCDEF";
    tail[0] = '*';
    for (uint8_t i = 0; i < 4; i++) tail[1 + i] = hex[(crc >> (12 - 4 * i)) & 0xF];
    tail[5] = '\n';
    return len;
}

static void main_put(uint8_t byte) {
    uint16_t next = (uint16_t)((tx_head + 1) % TX_SIZE);
    while (next == tx_tail) tx_enable(); /* the ring drains at the line rate */
    tx_buf[tx_head] = byte;
    tx_head = next;
}

void uart_write_line(const char *body) {
    char tail[6];
    uint8_t len = frame(body, tail);
    for (uint8_t i = 0; i < len; i++) main_put((uint8_t)body[i]);
    for (uint8_t i = 0; i < 6; i++) main_put((uint8_t)tail[i]);
    tx_enable();
}

/* Called only by the real-time composer (one at a time, interrupts enabled). */
static void prio_put(uint8_t byte) {
    uint8_t next = (uint8_t)((prio_head + 1) % PRIO_SIZE);
    while (next == prio_tail) tx_enable();
    prio_buf[prio_head] = byte;
    prio_head = next;
    tx_enable();
}

void uart_write_priority_line(const char *body) {
    char tail[6];
    uint8_t len = frame(body, tail);
    for (uint8_t i = 0; i < len; i++) prio_put((uint8_t)body[i]);
    for (uint8_t i = 0; i < 6; i++) prio_put((uint8_t)tail[i]);
}
