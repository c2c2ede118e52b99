/* SPDX-License-Identifier: GPL-2.0-only */
/* Fuzz rerandd's uevent classifier (crash_uevent_classify, daemon/crash.c):
 * a netlink datagram "ACTION@DEVPATH\0KEY=VALUE\0...", any length, not
 * terminated.  No read past it, a known result, and nothing without a
 * SUBSYSTEM= of memory or cpu is hotplug. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rerandd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *buf = malloc(size ? size : 1);
	enum rr_hotplug k;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	k = crash_uevent_classify(buf, size);
	if (k != RR_HP_NONE && k != RR_HP_MEMORY && k != RR_HP_CPU)
		abort();
	if (k == RR_HP_MEMORY && !memmem(buf, size, "SUBSYSTEM=memory", 16))
		abort();
	if (k == RR_HP_CPU && !memmem(buf, size, "SUBSYSTEM=cpu", 13))
		abort();
	free(buf);
	return 0;
}
