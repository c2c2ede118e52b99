/* SPDX-License-Identifier: GPL-2.0-only */
/* Fuzz rerandd's systemd-boot readers (daemon/bootloader.c): a Boot Loader
 * Specification type #1 entry, the LoaderEntrySelected variable's bytes and
 * the entry id of a file name.  Any input is refused with a message, or
 * accepted with every path absolute, without "..", NUL-terminated in its
 * buffer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rerandd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_path(const char *p, size_t size)
{
	if (!memchr(p, 0, size))
		abort();
	if (*p && (*p != '/' || strstr(p, "/../") || strchr(p, '\\')))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rr_bls_entry be;
	struct rr_err e;
	char id[200], name[256], lower[256];

	if (bootloader_parse_entry((const char *)data, size, "fuzz.conf", &be, &e) == 0) {
		check_path(be.linux_path, sizeof(be.linux_path));
		check_path(be.efi_path, sizeof(be.efi_path));
		check_path(be.initrd, sizeof(be.initrd));
		if (!*be.linux_path && !*be.efi_path)
			abort();
		if (!be.nr_initrd != !*be.initrd)
			abort();
	} else if (!memchr(e.msg, 0, sizeof(e.msg)) || strncmp(e.msg, "fuzz.conf", 9)) {
		abort();
	}
	if (bootloader_efivar_string(data, size, id, sizeof(id), "var", &e) == 0) {
		if (!*id || strchr(id, '/') || strchr(id, '\\'))
			abort();
		for (const char *p = id; *p; p++)
			if (*p < 0x20 || *p > 0x7e)
				abort();
	}
	if (size < sizeof(name)) {
		memcpy(name, data, size);
		name[size] = 0;
		if (bootloader_entry_id(name, lower, sizeof(lower)) == 0 && strlen(lower) > strlen(name))
			abort();
	}
	return 0;
}
