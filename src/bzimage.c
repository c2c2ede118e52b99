/* SPDX-License-Identifier: GPL-2.0-only */
/* bzImage setup-header parser (Documentation/arch/x86/boot.rst): finds the
 * protected-mode part and the compressed payload, with every offset checked. */
#include <errno.h>
#include <string.h>

#include "kernel.h"
#include "setuphdr.h"
#include "util.h"

#define BZ_HDR_END          0x264

#define XLF_KERNEL_64       0x0001
/* Protocol 2.12 added xloadflags, which is how a 64-bit entry is announced. */
#define BZ_MIN_VERSION      0x020c

static void bz_copy_version(const uint8_t *buf, size_t len, size_t pm_offset,
			    uint16_t ptr, char *out, size_t out_size)
{
	size_t at, n = 0;

	out[0] = '\0';
	if (!ptr)
		return;
	at = 0x200 + (size_t)ptr;
	/* The string lives in the setup area; anything else is not trusted. */
	if (at >= pm_offset || at >= len)
		return;
	while (n + 1 < out_size && at + n < pm_offset && at + n < len && buf[at + n]) {
		uint8_t ch = buf[at + n];
		out[n++] = (ch >= 0x20 && ch < 0x7f) ? (char)ch : '?';
	}
	out[n] = '\0';
}

int rr_bzimage_parse(const uint8_t *buf, size_t len, const char *name,
		     struct rr_bzimage *ret, struct rr_err *e)
{
	struct rr_bzimage bz;
	unsigned sects;
	uint64_t start, end;

	if (!buf || len < BZ_HDR_END)
		return rr_errf(e, EINVAL, "%s: too short for a bzImage setup header (%zu bytes)",
			       name, len);
	if (memcmp(buf + H_MAGIC, "HdrS", 4) != 0)
		return rr_errf(e, EINVAL, "%s: not a bzImage: no \"HdrS\" setup header signature", name);
	if (rr_get16(buf + H_BOOT_FLAG) != 0xaa55)
		return rr_errf(e, EINVAL, "%s: not a bzImage: boot flag is 0x%04x, not 0xaa55",
			       name, rr_get16(buf + H_BOOT_FLAG));

	memset(&bz, 0, sizeof(bz));
	bz.setup_sects = buf[H_SETUP_SECTS];
	bz.version = rr_get16(buf + H_VERSION);
	bz.loadflags = buf[H_LOADFLAGS];
	bz.kernel_alignment = rr_get32(buf + H_KALIGN);
	bz.relocatable = buf[H_RELOCATABLE];
	bz.xloadflags = rr_get16(buf + H_XLOADFLAGS);
	bz.cmdline_size = rr_get32(buf + H_CMDLINE_SIZE);
	bz.init_size = rr_get32(buf + H_INIT_SIZE);

	if (bz.version < BZ_MIN_VERSION)
		return rr_errf(e, ENOTSUP, "%s: boot protocol %u.%02u is too old (need 2.12 or later)",
			       name, bz.version >> 8, bz.version & 0xff);
	if (!(bz.xloadflags & XLF_KERNEL_64))
		return rr_errf(e, ENOTSUP, "%s: 32-bit kernel (XLF_KERNEL_64 is not set): "
			       "only x86-64 kernels can be re-randomized", name);

	sects = bz.setup_sects ? bz.setup_sects : 4;
	bz.pm_offset = ((uint64_t)sects + 1) * 512;
	if (bz.pm_offset >= len)
		return rr_errf(e, EINVAL, "%s: setup area (%u sectors) runs past the end of the file",
			       name, sects);

	bz.payload_length = rr_get32(buf + H_PAYLOAD_LENGTH);
	start = bz.pm_offset + rr_get32(buf + H_PAYLOAD_OFFSET);
	end = start + bz.payload_length;
	if (bz.payload_length < 4 + 2)
		return rr_errf(e, EINVAL, "%s: payload_length %llu is too small for a compressed kernel",
			       name, (unsigned long long)bz.payload_length);
	if (end > len)
		return rr_errf(e, EINVAL, "%s: payload (%llu bytes at offset %llu) runs past the end "
			       "of the %zu-byte file: truncated?", name,
			       (unsigned long long)bz.payload_length, (unsigned long long)start, len);
	bz.payload_offset = start;
	bz.uncompressed_size = rr_get32(buf + end - 4);
	if (bz.uncompressed_size == 0)
		return rr_errf(e, EINVAL, "%s: payload size field says 0 bytes", name);

	bz_copy_version(buf, len, bz.pm_offset, rr_get16(buf + H_KVER),
			bz.kernel_version, sizeof(bz.kernel_version));
	*ret = bz;
	return 0;
}
