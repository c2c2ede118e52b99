// SPDX-License-Identifier: GPL-2.0-only
/*
 * rrb-tsc: the downtime guest's stopwatch (bench/downtime.sh).  Prints
 * "TSC MONO_NS": the time stamp counter and CLOCK_MONOTONIC in ns, read back
 * to back.  The TSC runs on across kexec (nothing resets it), so stamps taken
 * in the old system and in the new one can be subtracted; under QEMU's
 * -icount it follows the virtual clock, so host load does not change it.
 * CLOCK_MONOTONIC starts near zero in each kernel: TSC - MONO * f (f the TSC
 * ticks per ns, measured by the host from two stamps of one boot) is the TSC
 * at the new kernel's time zero.  Static, so that systemd-shutdown's hooks
 * can run it after everything else is unmounted.  Bench only.
 */
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <x86intrin.h>

int main(void)
{
	struct timespec ts;
	uint64_t tsc;

	tsc = __rdtsc();
	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) {
		perror("rrb-tsc: clock_gettime(CLOCK_MONOTONIC)");
		return 1;
	}
	printf("%llu %llu\n", (unsigned long long)tsc,
	       (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec);
	return fflush(stdout) == 0 ? 0 : 1;
}
