/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The stage's one way out on a fatal error: say why on COM1 (when
 * rerand.debug is on, or before the command line could be read), then reset
 * the machine through the platform, as arch/x86/kernel/reboot.c does.  A
 * halt would leave an unattended host down; after a reset the firmware boots
 * the installed kernel, which finds no status record and counts a failure.
 */
#include "stage.h"

/* -1 until the command line has been read. */
static int debug_state = -1;

/* About a microsecond per write to the POST port, like the kernel's
 * io_delay(); there is no calibrated timer here. */
static void io_delay(unsigned n)
{
	while (n--)
		outb(0x80, 0);
}

static void note(const char *s)
{
	if (debug_state != 0)
		serial_puts(s);
}

void stage_set_debug(bool on)
{
	debug_state = on;
}

/* Wait (bounded) until the i8042 input buffer is empty. */
static void kb_wait(void)
{
	for (unsigned i = 0; i < 0x10000; i++) {
		if (!(inb(0x64) & 0x02))
			break;
		io_delay(1);
	}
}

__attribute__((noreturn)) static void platform_reset(void)
{
	static const struct { uint16_t limit; uint64_t base; } __attribute__((packed)) no_idt = { 0, 0 };

	for (unsigned tries = 0; tries < 10; tries++) {
		/* Keyboard controller: pulse the CPU reset line. */
		note("rerand: stage: reset through the keyboard controller\n");
		kb_wait();
		outb(0x64, 0xfe);
		io_delay(50000);

		/* PCI reset control register: hard reset (SYS_RST, then RST_CPU). */
		note("rerand: stage: reset through port 0xcf9\n");
		uint8_t cf9 = inb(0xcf9) & (uint8_t)~0x06;
		outb(0xcf9, cf9 | 0x02);
		io_delay(50);
		outb(0xcf9, cf9 | 0x06);
		io_delay(50000);
	}

	/* Last resort: a triple fault (no IDT, then an exception). */
	note("rerand: stage: reset by triple fault\n");
	__asm__ volatile("lidt %0; int3" : : "m"(no_idt));
	for (;;)
		__asm__ volatile("cli; hlt");
}

void stage_fatal(const char *msg)
{
	if (debug_state != 0) {
		serial_init();
		serial_puts("rerand: stage: ");
		serial_puts(msg);
		serial_puts(" (resetting)\n");
	}
	platform_reset();
}
