/* SPDX-License-Identifier: GPL-2.0-only */
/* Polled 8250 on COM1 for the stage's progress (rerand.debug) and its
 * last words before a reset (reset.c).  Bounded waits: a missing UART
 * never hangs. */
#include "stage.h"

#define COM1 0x3f8

void serial_init(void)
{
	outb(COM1 + 1, 0x00);   /* no interrupts */
	outb(COM1 + 3, 0x80);   /* DLAB */
	outb(COM1 + 0, 0x01);   /* 115200 baud */
	outb(COM1 + 1, 0x00);
	outb(COM1 + 3, 0x03);   /* 8N1 */
	outb(COM1 + 2, 0xc7);   /* FIFO on, cleared */
	outb(COM1 + 4, 0x03);   /* DTR, RTS */
}

static void serial_putc(char c)
{
	for (unsigned i = 0; i < 100000; i++)
		if (inb(COM1 + 5) & 0x20)
			break;
	outb(COM1, (uint8_t)c);
}

void serial_puts(const char *s)
{
	for (; *s; s++) {
		if (*s == '\n')
			serial_putc('\r');
		serial_putc(*s);
	}
}

void serial_put_u64(uint64_t v)
{
	char buf[21];
	int i = 20;

	buf[i] = 0;
	do {
		buf[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	serial_puts(buf + i);
}
