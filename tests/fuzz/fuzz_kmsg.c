/* SPDX-License-Identifier: GPL-2.0-only */
/* Fuzz rerandd's /dev/kmsg record classifier (watch_kmsg_classify,
 * daemon/watch.c): a record is up to 8 KiB that read() returned, not
 * NUL-terminated, and any process with CAP_SYSLOG (or /dev/kmsg writers)
 * chooses its text.  No read past the record, a known kind, and a record
 * that is not the kernel's (facility > 0) never counts. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rerandd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *rec = malloc(size ? size : 1);   /* exact size: ASan sees an overread */
	enum rr_kmsg_kind k;

	if (!rec)
		return 0;
	memcpy(rec, data, size);
	k = watch_kmsg_classify(rec, size);
	if (k != RR_KMSG_NONE && k != RR_KMSG_WARN && k != RR_KMSG_BUG && k != RR_KMSG_OOPS)
		abort();
	/* a counted record starts with a priority of facility 0 (below 8) and a comma */
	if (k != RR_KMSG_NONE) {
		unsigned long prio = 0;
		size_t i = 0;
		while (i < size && rec[i] >= '0' && rec[i] <= '9')
			prio = prio * 10 + (unsigned long)(rec[i++] - '0');
		if (!i || i > 12 || i >= size || rec[i] != ',' || prio >= 8 || !memchr(rec, ';', size))
			abort();
	}
	free(rec);
	return 0;
}
