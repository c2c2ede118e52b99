/* SPDX-License-Identifier: GPL-2.0-only */
/* The PE/COFF headers of a file, checked as the kernel checks them
 * (pefile_parse_binary): what kexec_file_load will think of it.  No
 * libcrypto here: the signature is pesig.c's. */
#include <errno.h>
#include <string.h>

#include "pesig.h"
#include "util.h"

#define MZ_SIZE              64     /* struct mz_hdr */
#define MZ_LFANEW            0x3c
#define COFF_SIZE            24     /* "PE\0\0" + struct pe_hdr */
#define COFF_MACHINE         4
#define COFF_NR_SECTIONS     6
#define COFF_OPT_SIZE        20
#define OPT_MAGIC_PE32       0x10b
#define OPT_MAGIC_PE32PLUS   0x20b
#define OPT_CHECKSUM         64     /* same offset in both formats */
#define OPT_SIZE_OF_HEADERS  60
#define DATA_DIR_CERTS       4      /* IMAGE_DIRECTORY_ENTRY_SECURITY */

int rr_pe_parse(const uint8_t *buf, size_t len, const char *name,
		struct rr_pe_info *ret, struct rr_err *e)
{
	struct rr_pe_info pi;
	uint64_t cursor, opt_size, opt_hdr_size, ndirs_off;
	uint16_t magic;

	memset(&pi, 0, sizeof(pi));
	if (len <= MZ_SIZE || buf[0] != 'M' || buf[1] != 'Z')
		return rr_errf(e, ENOEXEC, "%s: not a PE file (no \"MZ\" header)", name);
	pi.pe_offset = rr_get32(buf + MZ_LFANEW);
	if (pi.pe_offset < MZ_SIZE || (uint64_t)pi.pe_offset + COFF_SIZE >= len ||
	    memcmp(buf + pi.pe_offset, "PE\0\0", 4))
		return rr_errf(e, ENOEXEC, "%s: not a PE file (no \"PE\" signature at e_lfanew 0x%x)",
			       name, pi.pe_offset);
	pi.machine = rr_get16(buf + pi.pe_offset + COFF_MACHINE);
	pi.nr_sections = rr_get16(buf + pi.pe_offset + COFF_NR_SECTIONS);
	opt_size = rr_get16(buf + pi.pe_offset + COFF_OPT_SIZE);
	cursor = (uint64_t)pi.pe_offset + COFF_SIZE;
	if (cursor + 2 >= len)
		return rr_errf(e, EBADMSG, "%s: PE optional header is cut off", name);
	magic = rr_get16(buf + cursor);
	if (magic == OPT_MAGIC_PE32PLUS) {
		opt_hdr_size = 112;
		ndirs_off = 108;
	} else if (magic == OPT_MAGIC_PE32) {
		opt_hdr_size = 96;
		ndirs_off = 92;
	} else {
		return rr_errf(e, EBADMSG, "%s: PE optional header magic 0x%x is not PE32 or PE32+",
			       name, magic);
	}
	if (cursor + opt_hdr_size >= len)
		return rr_errf(e, EBADMSG, "%s: PE optional header is cut off", name);
	pi.checksum_offset = (uint32_t)(cursor + OPT_CHECKSUM);
	pi.size_of_headers = rr_get32(buf + cursor + OPT_SIZE_OF_HEADERS);
	pi.nr_data_dirs = rr_get32(buf + cursor + ndirs_off);
	cursor += opt_hdr_size;
	if (cursor >= pi.size_of_headers || pi.size_of_headers >= len)
		return rr_errf(e, EBADMSG, "%s: PE SizeOfHeaders %u is not between the optional header "
			       "and the end of the file", name, pi.size_of_headers);
	if (pi.nr_data_dirs > (pi.size_of_headers - cursor) / 8)
		return rr_errf(e, EBADMSG, "%s: %u PE data directories run past SizeOfHeaders", name,
			       pi.nr_data_dirs);
	/* The kernel finds the section table after the data directories, sbsign
	 * and firmware through SizeOfOptionalHeader: a file where the two differ
	 * is hashed differently by each, so it is refused. */
	if (opt_size != opt_hdr_size + 8ull * pi.nr_data_dirs)
		return rr_errf(e, EBADMSG, "%s: PE SizeOfOptionalHeader %llu does not match %u data "
			       "directories (%llu)", name, (unsigned long long)opt_size,
			       pi.nr_data_dirs,
			       (unsigned long long)(opt_hdr_size + 8ull * pi.nr_data_dirs));
	pi.cert_dir_offset = (uint32_t)(cursor + 8 * DATA_DIR_CERTS);
	cursor += 8ull * pi.nr_data_dirs;
	pi.sections_offset = (uint32_t)cursor;
	if (pi.nr_sections > (pi.size_of_headers - cursor) / RR_PE_SECTION_HDR_SIZE)
		return rr_errf(e, EBADMSG, "%s: %u PE section headers run past SizeOfHeaders", name,
			       pi.nr_sections);
	if (pi.nr_data_dirs > DATA_DIR_CERTS) {
		uint32_t va = rr_get32(buf + pi.cert_dir_offset);
		uint32_t size = rr_get32(buf + pi.cert_dir_offset + 4);

		if (va && size) {
			if (va < pi.size_of_headers || size >= len || va > len - size)
				return rr_errf(e, EBADMSG, "%s: PE certificate table (%u bytes at 0x%x) "
					       "lies outside the file", name, size, va);
			pi.cert_offset = va;
			pi.cert_size = size;
		}
	}
	*ret = pi;
	return 0;
}
