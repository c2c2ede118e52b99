/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Unified kernel images (UKI): a PE file, systemd-stub plus sections
 * .linux (the kernel), .initrd, .ucode (microcode, loaded before the
 * initrd), .cmdline, .osrel and .uname.  The PE headers are read by
 * rr_pe_parse() (the kernel's rules); this reads the section table with
 * every range checked.  Library code: errors name the file and the problem.
 */
#ifndef RERAND_UKI_H
#define RERAND_UKI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "err.h"

enum rr_uki_part {
	RR_UKI_LINUX,
	RR_UKI_INITRD,
	RR_UKI_UCODE,
	RR_UKI_CMDLINE,
	RR_UKI_OSREL,
	RR_UKI_UNAME,
	RR_UKI_NR_PARTS,
};

struct rr_uki_section {
	bool     present;
	uint64_t offset;             /* in the file */
	uint64_t size;               /* the section's data (VirtualSize) */
};

struct rr_uki {
	struct rr_uki_section part[RR_UKI_NR_PARTS];
	unsigned nr_sections;        /* every PE section, UKI or not */
};

/* ".linux", ".initrd", ... */
const char *rr_uki_part_name(enum rr_uki_part p);

/* True for a PE file that is not itself a bzImage (no "HdrS") and has a
 * section named .linux: what rr_uki_parse() is for.  Reads bounded. */
bool rr_uki_probe(const uint8_t *buf, size_t len);

/*
 * Parse the section table of a UKI.  Refuses (negative errno, message in
 * e): a file the kernel's PE parser refuses, a section whose data runs past
 * the end of the file or whose VirtualSize exceeds its raw data, two
 * sections whose data overlap, a UKI section name given twice, and a file
 * without .linux (-ENOEXEC: not a UKI).
 */
int rr_uki_parse(const uint8_t *buf, size_t len, const char *name, struct rr_uki *ret,
		 struct rr_err *e);

/*
 * The initrd the UKI boots with: .ucode then .initrd, concatenated (the
 * kernel reads an uncompressed microcode cpio first, then the rest).
 * *ret_len is 0 and *ret_buf NULL when the UKI has neither.  Owned by the
 * caller.
 */
int rr_uki_initrd(const uint8_t *buf, size_t len, const struct rr_uki *u, uint8_t **ret_buf,
		  size_t *ret_len, const char *name, struct rr_err *e);

/*
 * The .cmdline section as a C string: stops at the first NUL, trailing
 * blanks and newlines dropped; "" without the section.  Refuses control
 * characters other than tab and newline, and more than size - 1 bytes.
 */
int rr_uki_cmdline(const uint8_t *buf, size_t len, const struct rr_uki *u, char *out,
		   size_t size, const char *name, struct rr_err *e);

#endif
