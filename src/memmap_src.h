/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Memory maps for `rerand entropy`, read from where a user can find one: the
 * live /sys/firmware/memmap, a saved copy of that tree, a /proc/iomem copy or
 * the e820 table a kernel printed in dmesg.  Library code: negative errno and
 * a message naming the file and line in struct rr_err.
 */
#ifndef RERAND_MEMMAP_SRC_H
#define RERAND_MEMMAP_SRC_H

#include <stdbool.h>
#include <stddef.h>
#include "err.h"
#include "select.h"

#define RR_MSRC_LIVE        "/sys/firmware/memmap"
#define RR_MSRC_EFI_DIR     "/sys/firmware/efi"
#define RR_MSRC_MAX_TEXT    (4u << 20)      /* a dmesg copy bigger than this is refused */
#define RR_MSRC_MAX_ENTRIES 4096            /* sysfs tree entries read */

enum rr_msrc_format {
	RR_MSRC_SYSFS = 1,     /* /sys/firmware/memmap/<n>/{start,end,type} */
	RR_MSRC_IOMEM,         /* /proc/iomem: top-level "System RAM" lines */
	RR_MSRC_E820,          /* dmesg: "BIOS-e820: [mem 0x...-0x...] usable" */
};

enum rr_msrc_firmware {
	RR_FW_UNKNOWN = 0,
	RR_FW_BIOS,
	RR_FW_UEFI,
};

struct rr_msrc_info {
	enum rr_msrc_format format;
	unsigned nr_entries;          /* map entries of any type */
	unsigned nr_ram;              /* of which usable RAM */
	uint64_t ram_bytes;           /* sum of the usable entries (before merging) */
	enum rr_msrc_firmware firmware_hint; /* what the text itself says, if anything */
};

const char *rr_msrc_format_name(enum rr_msrc_format f);

/* Read SOURCE (NULL: the live machine) into m (which the caller has
 * initialised): a directory is a sysfs tree, a file is auto-detected. */
int rr_msrc_read(const char *path, struct rr_memmap *m, struct rr_msrc_info *ret,
		 struct rr_err *e);

/* Text parsers over a buffer (need not be NUL-terminated); name is used in
 * messages.  rr_msrc_parse_text picks iomem or e820 by content. */
int rr_msrc_parse_text(const char *buf, size_t len, const char *name,
		       struct rr_memmap *m, struct rr_msrc_info *ret, struct rr_err *e);
int rr_msrc_parse_iomem(const char *buf, size_t len, const char *name,
			struct rr_memmap *m, struct rr_msrc_info *ret, struct rr_err *e);
int rr_msrc_parse_e820(const char *buf, size_t len, const char *name,
		       struct rr_memmap *m, struct rr_msrc_info *ret, struct rr_err *e);

/* One sysfs entry from the contents of its three files (each bounded by its
 * length, a trailing newline allowed).  ret_ram: "System RAM". */
int rr_msrc_sysfs_entry(const char *start, size_t start_len, const char *end, size_t end_len,
			const char *type, size_t type_len, const char *name,
			uint64_t *ret_start, uint64_t *ret_end, bool *ret_ram, struct rr_err *e);

#endif
