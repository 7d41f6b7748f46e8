/* The millisecond clock: Timer0 in CTC mode, 16 MHz / 64 / 250 = 1 kHz. */
#include <avr/interrupt.h>
#include <util/atomic.h>

#include "firmware.h"

static volatile uint32_t milliseconds;

ISR(TIMER0_COMPA_vect) { milliseconds++; }

void clock_init(void) {
    TCCR0A = _BV(WGM01);               /* CTC, TOP = OCR0A */
    TCCR0B = _BV(CS01) | _BV(CS00);    /* clk / 64: 4 us per count at 16 MHz */
    OCR0A = (F_CPU / 64 / 1000) - 1;
    TIMSK0 = _BV(OCIE0A);
}

void clock_stamp(uint32_t *ms, uint16_t *us) {
    uint32_t m;
    uint8_t count, pending;
    ATOMIC_BLOCK(ATOMIC_RESTORESTATE) {
        m = milliseconds;
        count = TCNT0;
        pending = TIFR0 & _BV(OCF0A);
        if (pending) { /* the millisecond ended but its interrupt has not run yet */
            count = TCNT0;
            m++;
        }
    }
    *ms = m;
    *us = (uint16_t)count * (uint16_t)(64000000UL / F_CPU);
}

uint32_t clock_us(void) {
    uint32_t ms;
    uint16_t us;
    clock_stamp(&ms, &us);
    return ms * 1000UL + us;
}
