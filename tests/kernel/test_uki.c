/* SPDX-License-Identifier: GPL-2.0-only */
/* The UKI reader on small PE files built here (parse, the initrd and command
 * line rerand load takes, refusals), and on a UKI made from systemd-boot's
 * stub with objcopy around a real kernel when RERAND_KERNELS is set. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel.h"
#include "test.h"
#include "uki.h"

#define HDRS 0x200

static void put16(uint8_t *p, uint16_t v) { p[0] = v; p[1] = v >> 8; }
static void put32(uint8_t *p, uint32_t v) { put16(p, v); put16(p + 2, v >> 16); }

struct sec { const char *name; uint32_t at, raw, vsize; const char *data; };

/* A PE32+ file: headers in the first 0x200 bytes, sections after. */
static uint8_t *mk_pe(const struct sec *s, unsigned n, size_t len)
{
	uint8_t *b = calloc(1, len);
	uint8_t *opt = b + 0x40 + 24, *sh = opt + 112 + 16 * 8;

	b[0] = 'M'; b[1] = 'Z';
	put32(b + 0x3c, 0x40);
	memcpy(b + 0x40, "PE\0\0", 4);
	put16(b + 0x44, 0x8664);
	put16(b + 0x46, n);
	put16(b + 0x54, 112 + 16 * 8);
	put16(opt, 0x20b);
	put32(opt + 60, HDRS);
	put32(opt + 108, 16);
	for (unsigned i = 0; i < n; i++, sh += 40) {
		memcpy(sh, s[i].name, strlen(s[i].name));
		put32(sh + 8, s[i].vsize);
		put32(sh + 16, s[i].raw);
		put32(sh + 20, s[i].at);
		if (s[i].data && s[i].at + strlen(s[i].data) <= len)
			memcpy(b + s[i].at, s[i].data, strlen(s[i].data));
	}
	return b;
}

static bool has(const struct rr_err *e, const char *s)
{
	bool ok = strstr(e->msg, s) != NULL;
	if (!ok)
		printf("#   message: %s\n", e->msg);
	return ok;
}

static void synthetic(void)
{
	const struct sec good[] = {
		{ ".linux", 0x200, 0x200, 0x10, "KERNELKERNEL...." },
		{ ".initrd", 0x400, 0x200, 6, "INITRD" },
		{ ".ucode", 0x600, 0x200, 5, "UCODE" },
		{ ".cmdline", 0x800, 0x200, 24, "console=ttyS0 quiet \n\0\0\0" },
	};
	struct rr_uki u;
	struct rr_err e;
	uint8_t *b = mk_pe(good, 4, 0xa00), *ird;
	size_t ilen;
	char cl[64];
	int r;

	T_OK(rr_uki_probe(b, 0xa00), "probe: a PE file with .linux is a UKI");
	r = rr_uki_parse(b, 0xa00, "u.efi", &u, &e);
	T_OK(r == 0, "parse: 4 sections accepted");
	T_OK(u.part[RR_UKI_LINUX].present && u.part[RR_UKI_LINUX].offset == 0x200 &&
	     u.part[RR_UKI_LINUX].size == 0x10, ".linux at 0x200, VirtualSize 16 bytes");
	T_OK(!u.part[RR_UKI_OSREL].present, "no .osrel");
	r = rr_uki_initrd(b, 0xa00, &u, &ird, &ilen, "u.efi", &e);
	T_OK(r == 0 && ilen == 11 && !memcmp(ird, "UCODEINITRD", 11),
	     "initrd: .ucode first, then .initrd (%zu bytes)", ilen);
	free(ird);
	r = rr_uki_cmdline(b, 0xa00, &u, cl, sizeof(cl), "u.efi", &e);
	T_OK(r == 0 && !strcmp(cl, "console=ttyS0 quiet"),
	     "cmdline: up to the NUL, trailing blanks dropped: '%s'", cl);
	r = rr_uki_cmdline(b, 0xa00, &u, cl, 8, "u.efi", &e);
	T_OK(r == -E2BIG && has(&e, "u.efi: the UKI's .cmdline is 19 bytes"), "cmdline longer than the buffer refused");
	b[0x805] = 0x1b;
	r = rr_uki_cmdline(b, 0xa00, &u, cl, sizeof(cl), "u.efi", &e);
	T_OK(r == -EBADMSG && has(&e, "control character 0x1b"), "cmdline with ESC refused");

	/* truncated: every shorter file is refused (or not PE at all) */
	int bad = 0;
	for (size_t l = 0; l < 0x800 + 24; l += 7)
		if (rr_uki_parse(b, l, "t.efi", &u, &e) == 0)
			bad++;
	T_OK(bad == 0, "every truncation before the end of .cmdline's data is refused");
	r = rr_uki_parse(b, 0x900, "t.efi", &u, &e);
	T_OK(r == -EBADMSG && has(&e, "t.efi: PE section .cmdline (512 bytes at 0x800) runs past "
				  "the end of the file"), "truncated: names the file and section");
	free(b);

	const struct sec nolinux[] = { { ".initrd", 0x200, 0x200, 6, "INITRD" } };
	b = mk_pe(nolinux, 1, 0x400);
	T_OK(!rr_uki_probe(b, 0x400), "probe: no .linux, not a UKI");
	r = rr_uki_parse(b, 0x400, "n.efi", &u, &e);
	T_OK(r == -ENOEXEC && has(&e, "n.efi: PE file without a .linux section"), "missing .linux refused");
	free(b);

	const struct sec overlap[] = {
		{ ".linux", 0x200, 0x400, 0x400, NULL },
		{ ".initrd", 0x400, 0x200, 6, NULL },
	};
	b = mk_pe(overlap, 2, 0x800);
	r = rr_uki_parse(b, 0x800, "o.efi", &u, &e);
	T_OK(r == -EBADMSG && has(&e, "o.efi: PE sections .linux and .initrd overlap"), "overlapping sections refused");
	free(b);

	const struct sec twice[] = {
		{ ".linux", 0x200, 0x200, 0x10, NULL },
		{ ".linux", 0x400, 0x200, 0x10, NULL },
	};
	b = mk_pe(twice, 2, 0x600);
	r = rr_uki_parse(b, 0x600, "d.efi", &u, &e);
	T_OK(r == -EBADMSG && has(&e, "d.efi: the UKI has two .linux sections"), "duplicate .linux refused");
	free(b);

	const struct sec big[] = { { ".linux", 0x200, 0x200, 0x201, NULL } };
	b = mk_pe(big, 1, 0x400);
	r = rr_uki_parse(b, 0x400, "v.efi", &u, &e);
	T_OK(r == -EBADMSG && has(&e, "VirtualSize 513 but only 512 bytes"), "VirtualSize past the raw data refused");
	free(b);

	const struct sec inhdr[] = { { ".linux", 0x100, 0x200, 0x10, NULL } };
	b = mk_pe(inhdr, 1, 0x400);
	r = rr_uki_parse(b, 0x400, "h.efi", &u, &e);
	T_OK(r == -EBADMSG && has(&e, "overlaps the headers"), "a section inside the headers refused");
	free(b);

	/* ".linuxx" is not ".linux" */
	const struct sec longer[] = { { ".linuxx", 0x200, 0x200, 0x10, NULL } };
	b = mk_pe(longer, 1, 0x400);
	T_OK(!rr_uki_probe(b, 0x400), "a section named .linuxx is not .linux");
	free(b);
}

/* A UKI from the stub: rr_kernel_load reads .linux, and the image is the
 * same as the bare kernel's. */
static void real(void)
{
	const char *d = t_kernels_dir(), *stub = "/usr/lib/systemd/boot/efi/linuxx64.efi.stub";
	char k[512], cmd[2048], uki[] = "/tmp/test_uki.XXXXXX";
	struct rr_kernel a, b;
	struct rr_err e;
	int fd, r;

	if (!d || access(stub, R_OK) || access("tests/mkuki.sh", X_OK)) {
		T_OK(1, "# SKIP RERAND_KERNELS, %s or tests/mkuki.sh missing", stub);
		return;
	}
	snprintf(k, sizeof(k), "%s/vmlinuz-6.1.0-57-cloud-amd64", d);
	fd = mkstemp(uki);
	close(fd);
	snprintf(cmd, sizeof(cmd), "tests/mkuki.sh -o %s -k %s -c 'console=ttyS0' -i /etc/hostname", uki, k);
	T_OK(system(cmd) == 0, "tests/mkuki.sh built a UKI around %s", k);
	r = rr_kernel_load(uki, NULL, &a, &e);
	T_OK(r == 0 && a.is_uki && a.is_bzimage, "rr_kernel_load reads the UKI's .linux");
	if (r < 0)
		printf("#   %s\n", e.msg);
	r = rr_kernel_load(k, NULL, &b, &e);
	T_OK(r == 0 && !b.is_uki, "and the bare kernel");
	if (a.payload && b.payload)
		T_OK(a.payload_len == b.payload_len && !memcmp(a.payload, b.payload, a.payload_len) &&
		     a.relocs.nr_reloc64 == b.relocs.nr_reloc64,
		     "same decoded kernel and relocations (%zu bytes)", a.payload_len);
	rr_kernel_free(&a);
	rr_kernel_free(&b);
	unlink(uki);
}

int main(void)
{
	synthetic();
	real();
	return t_done();
}
