/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The PE/COFF side of rerand images: headers as the kernel's rules and an
 * independent reader (objdump, sbverify) see them, the EFI stub in place,
 * signing with sbsign (Debian's snakeoil key) and what the reader then
 * accepts or refuses, the stage hash, XLF_5LEVEL as the kernel's, and
 * byte-identical output from identical inputs.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "test.h"
#include "image.h"
#include "kernel.h"
#include "pesig.h"
#include "util.h"

#define SNAKEOIL_KEY  "/usr/share/ovmf/PkKek-1-snakeoil.key"
#define SNAKEOIL_CERT "/usr/share/ovmf/PkKek-1-snakeoil.pem"

static uint8_t fake_stage[0x400];
static char tmpdir[] = "/tmp/rr-test-pe-XXXXXX";

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	int r = system(cmd);
	return r == -1 ? -1 : WEXITSTATUS(r);
}

static int put_file(const char *path, const uint8_t *buf, size_t len)
{
	FILE *f = fopen(path, "wb");
	int ok = f && fwrite(buf, 1, len, f) == len;

	if (f && fclose(f))
		ok = 0;
	return ok ? 0 : -1;
}

static int have(const char *tool)
{
	return sh("command -v %s >/dev/null 2>&1", tool) == 0;
}

static void headers(const char *name, const uint8_t *img, size_t len)
{
	struct rr_pe_info pi;
	struct rr_err e;
	size_t stub = (size_t)(rr_efi_stub_end - rr_efi_stub);
	const uint8_t *sec;

	e.msg[0] = 0;
	T_OK(rr_pe_parse(img, len, name, &pi, &e) == 0, "%s: PE headers pass the kernel's rules %s",
	     name, e.msg);
	T_OK(img[0] == 'M' && img[1] == 'Z' && pi.pe_offset == 0x40 && pi.machine == 0x8664 &&
	     pi.nr_data_dirs == RR_IMAGE_PE_DATA_DIRS && pi.nr_sections == 1 &&
	     pi.size_of_headers == RR_IMAGE_PM_OFFSET && pi.cert_size == 0,
	     "%s: MZ, e_lfanew 0x40, AMD64, 16 directories, 1 section, SizeOfHeaders = setup part, "
	     "no certificate table", name);
	T_OK(pi.sections_offset + 40 <= 0x1f1 && rr_get16(img + 0x40 + 20) == 112 + 8 * 16,
	     "%s: section table ends before the setup header (0x%x), SizeOfOptionalHeader = 112 + 8*16",
	     name, pi.sections_offset + 40);
	sec = img + pi.sections_offset;
	T_OK(rr_get32(sec + 20) == RR_IMAGE_PM_OFFSET && rr_get32(sec + 16) == len - RR_IMAGE_PM_OFFSET &&
	     rr_get32(sec + 16) % RR_IMAGE_FILE_ALIGN == 0 && rr_get32(sec + 12) == 0x1000,
	     "%s: the section is the whole protected-mode part (%u bytes, file-aligned)", name,
	     rr_get32(sec + 16));
	T_OK(rr_get32(img + 0x58 + 16) == 0x1000 + RR_IMAGE_EFI_STUB_OFFSET &&
	     !memcmp(img + RR_IMAGE_PM_OFFSET + RR_IMAGE_EFI_STUB_OFFSET, rr_efi_stub, stub) &&
	     rr_get16(img + 0x58 + 68) == 10 && rr_get32(img + 0x40 + 8) == 0,
	     "%s: entry point is the EFI stub (%zu bytes), EFI application, TimeDateStamp 0", name,
	     stub);
	T_OK(!memcmp(img + 0x202, "HdrS", 4) && rr_get16(img + 0x1fe) == 0xaa55 &&
	     img[0x1f1] == RR_IMAGE_SETUP_SECTS && rr_get16(img + 0x206) >= 0x020c &&
	     (img[0x211] & 1) && (rr_get16(img + 0x236) & 3) == 3,
	     "%s: setup header intact for bzImage64_probe (HdrS, 0xAA55, 2.12+, LOADED_HIGH, "
	     "KERNEL_64 | ABOVE_4G)", name);
}

static void independent(const char *name, const char *file)
{
	char log[600];

	snprintf(log, sizeof(log), "%s/objdump.txt", tmpdir);
	if (!have("objdump")) {
		T_OK(1, "# SKIP objdump not installed");
	} else {
		T_OK(sh("objdump -p %s > %s 2>&1", file, log) == 0 &&
		     sh("grep -q 'file format pei-x86-64' %s", log) == 0 &&
		     sh("grep -Eq '^Magic[[:space:]]+020b' %s", log) == 0 &&
		     sh("grep -Eq '^AddressOfEntryPoint[[:space:]]+0+1040$' %s", log) == 0 &&
		     sh("grep -Eq '^SizeOfHeaders[[:space:]]+00000400$' %s", log) == 0 &&
		     sh("grep -Eq '^Subsystem[[:space:]]+0000000a' %s", log) == 0 &&
		     sh("grep -Eq '^NumberOfRvaAndSizes[[:space:]]+00000010$' %s", log) == 0,
		     "%s: objdump reads it as PE32+ (pei-x86-64): entry 0x1040, headers 0x400, EFI app",
		     name);
	}
	if (!have("osslsigncode")) {
		T_OK(1, "# SKIP osslsigncode not installed");
	} else {
		/* Unsigned, so verify fails; what it prints shows the header it
		 * parsed, and the checksum it computes is the one we wrote. */
		sh("osslsigncode verify -in %s > %s 2>&1", file, log);
		T_OK(sh("grep -q 'No signature found' %s", log) == 0 &&
		     sh("grep -q 'invalid PE checksum' %s", log) != 0 &&
		     sh("grep -q '^PE checksum' %s", log) == 0,
		     "%s: osslsigncode parses it: unsigned, PE checksum correct", name);
	}
}

static void signing(const char *name, const uint8_t *img, size_t len)
{
	char in[600], out[600], key[600];
	struct rr_image im;
	struct rr_pe_sig sig;
	struct rr_err e;
	uint8_t *s = NULL;
	size_t slen;

	if (!have("sbsign") || !have("sbverify") || access(SNAKEOIL_KEY, R_OK)) {
		T_OK(1, "# SKIP sbsigntool or the snakeoil key (ovmf) missing");
		return;
	}
	snprintf(in, sizeof(in), "%s/image", tmpdir);
	snprintf(out, sizeof(out), "%s/image.signed", tmpdir);
	snprintf(key, sizeof(key), "%s/snakeoil.key", tmpdir);
	T_OK(put_file(in, img, len) == 0 &&
	     sh("openssl rsa -passin pass:snakeoil -in %s -out %s 2>/dev/null", SNAKEOIL_KEY, key) == 0,
	     "%s: image and decrypted snakeoil key written", name);
	T_OK(sh("sbverify --list %s 2>&1 | grep -q 'No signature table present'", in) == 0,
	     "%s: sbverify --list reads the unsigned image: no signature table", name);
	T_OK(sh("sbsign --key %s --cert %s --output %s %s >/dev/null 2>&1", key, SNAKEOIL_CERT, out,
		in) == 0, "%s: sbsign signs it", name);
	T_OK(sh("sbverify --cert %s %s >/dev/null 2>&1", SNAKEOIL_CERT, out) == 0,
	     "%s: sbverify --cert snakeoil accepts the signature", name);
	/* Three Authenticode implementations agree on the digest: pesign's of
	 * the unsigned file, osslsigncode's of the signed one, and the digest
	 * sbsign put into the signature. */
	if (have("pesign") && have("osslsigncode")) {
		char digests[600];
		snprintf(digests, sizeof(digests), "%s/digests", tmpdir);
		T_OK(sh("pesign -h -i %s | sed -n 's/^hash: //p' > %s", in, digests) == 0 &&
		     sh("osslsigncode verify -in %s 2>/dev/null | sed -n 's/^Current message digest *: *//p;"
			" s/^Calculated message digest *: *//p' | tr 'A-F' 'a-f' | tr -d ' ' >> %s",
			out, digests) == 0 &&
		     sh("[ $(wc -l < %s) -eq 3 ] && [ $(sort -u %s | wc -l) -eq 1 ] && "
			"[ $(head -c 64 %s | tr -cd 0-9a-f | wc -c) -eq 64 ]", digests, digests, digests) == 0,
		     "%s: pesign's digest of the unsigned image = the signature's = osslsigncode's", name);
		unlink(digests);
	} else {
		T_OK(1, "# SKIP pesign or osslsigncode not installed");
	}
	if (rr_read_file(out, 512u << 20, &s, &slen, &e) < 0) {
		T_OK(0, "%s: signed image read back: %s", name, e.msg);
		return;
	}
	T_OK(rr_image_parse(s, slen, name, &im, &e) == 0 && im.cert_size == slen - len &&
	     im.cert_size > 0 && im.cert_size <= RR_IMAGE_SIG_ROOM,
	     "%s: reader accepts the signed image (certificate table %u bytes)", name, im.cert_size);
	T_OK(rr_pe_sig_read(s, slen, name, &sig, &e) == 0 && sig.is_signed &&
	     !strcmp(sig.subject, "O=SnakeOil,L=Fort Collins,ST=Colorado,C=US"),
	     "%s: signer read back: %s", name, sig.subject);
	T_OK(rr_image_parse(s, slen - 1, name, &im, &e) < 0 && strstr(e.msg, "signature"),
	     "%s: signed image cut by one byte refused: %s", name, e.msg);
	memset(e.msg, 0, sizeof(e.msg));

	/* A flipped byte inside the signed range: sbverify must now fail, and
	 * (it is in a segment) our reader still parses it: the signature is
	 * what catches it. */
	size_t at = RR_IMAGE_PM_OFFSET + im.hdr.seg[0].data_offset + 100;
	s[at] ^= 0x01;
	T_OK(put_file(out, s, slen) == 0 &&
	     sh("sbverify --cert %s %s >/dev/null 2>&1", SNAKEOIL_CERT, out) != 0,
	     "%s: one flipped bit at file offset 0x%zx: sbverify refuses", name, at);
	s[at] ^= 0x01;
	T_OK(put_file(out, s, slen) == 0 &&
	     sh("sbverify --cert %s %s >/dev/null 2>&1", SNAKEOIL_CERT, out) == 0,
	     "%s: bit restored: sbverify accepts again (the check above can pass)", name);
	free(s);
	unlink(in);
	unlink(out);
	unlink(key);
}

static void one_kernel(const char *dir, const char *name)
{
	char path[512];
	struct rr_kernel k;
	struct rr_err e;
	struct rr_image im;
	struct rr_image_opts o = { .codec = RERAND_CODEC_LZ4 };
	uint8_t *img, *img2, hash[32];
	size_t len, len2;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (rr_kernel_load(path, NULL, &k, &e) < 0) {
		T_OK(0, "%s loads: %s", name, e.msg);
		return;
	}
	if (rr_image_build(&k, fake_stage, sizeof(fake_stage), &o, &img, &len, name, &e) < 0) {
		T_OK(0, "%s: image built: %s", name, e.msg);
		rr_kernel_free(&k);
		return;
	}
	headers(name, img, len);
	T_OK(rr_image_parse(img, len, name, &im, &e) == 0 && im.cert_size == 0,
	     "%s: reader accepts the unsigned image", name);
	rr_stage_sha256(fake_stage, sizeof(fake_stage), hash);
	T_OK(!memcmp(im.hdr.stage_sha256, hash, 32) && im.hdr.version == RERAND_IMAGE_VERSION,
	     "%s: header (version %d) records the stage's SHA-256", name, RERAND_IMAGE_VERSION);

	/* Reproducible: a second build is the same file; another codec is not
	 * (the comparison can fail). */
	T_OK(rr_image_build(&k, fake_stage, sizeof(fake_stage), &o, &img2, &len2, name, &e) == 0 &&
	     len2 == len && !memcmp(img, img2, len), "%s: second build byte-identical (%zu bytes)",
	     name, len);
	free(img2);
	o.codec = RERAND_CODEC_NONE;
	T_OK(rr_image_build(&k, fake_stage, sizeof(fake_stage), &o, &img2, &len2, name, &e) == 0 &&
	     (len2 != len || memcmp(img, img2, len)), "%s: --codec none gives a different file", name);
	free(img2);
	o.codec = RERAND_CODEC_LZ4;

	/* Padding and truncation of the unsigned image. */
	img2 = calloc(1, len + 512);
	memcpy(img2, img, len);
	T_OK(rr_image_parse(img2, len + 8, name, &im, &e) < 0 && strstr(e.msg, "padded"),
	     "%s: 8 zero bytes appended, no signature: refused: %s", name, e.msg);
	T_OK(rr_image_parse(img2, len - 512, name, &im, &e) < 0, "%s: 512 bytes cut: refused: %s",
	     name, e.msg);
	free(img2);

	snprintf(path, sizeof(path), "%s/image", tmpdir);
	if (put_file(path, img, len) == 0)
		independent(name, path);
	else
		T_OK(0, "%s: image written to %s", name, path);
	unlink(path);
	signing(name, img, len);
	free(img);

	/* XLF_5LEVEL follows the kernel's bzImage header. */
	if (k.is_bzimage && (k.bz.xloadflags & RERAND_XLF_5LEVEL)) {
		k.bz.xloadflags &= (uint16_t)~RERAND_XLF_5LEVEL;
		T_OK(rr_image_build(&k, fake_stage, sizeof(fake_stage), &o, &img2, &len2, name, &e) == 0 &&
		     rr_image_parse(img2, len2, name, &im, &e) == 0 &&
		     !(im.xloadflags & RERAND_XLF_5LEVEL),
		     "%s: a kernel without XLF_5LEVEL gives an image without it (0x%x)", name,
		     im.xloadflags);
		free(img2);
	}

	/* XLF_EFI_KEXEC too: kexec-tools passes the EFI state only to an image
	 * that claims it, and Debian's kernels do. */
	if (k.is_bzimage) {
		uint16_t had = k.bz.xloadflags;

		T_OK((had & RERAND_XLF_EFI_KEXEC) != 0, "%s: the kernel claims XLF_EFI_KEXEC (0x%x)", name, had);
		T_OK(rr_image_build(&k, fake_stage, sizeof(fake_stage), &o, &img2, &len2, name, &e) == 0 &&
		     rr_image_parse(img2, len2, name, &im, &e) == 0 &&
		     (im.xloadflags & RERAND_XLF_EFI_KEXEC),
		     "%s: so does its image, and kexec_load passes the EFI state on (0x%x)", name,
		     im.xloadflags);
		free(img2);
		k.bz.xloadflags &= (uint16_t)~RERAND_XLF_EFI_KEXEC;
		T_OK(rr_image_build(&k, fake_stage, sizeof(fake_stage), &o, &img2, &len2, name, &e) == 0 &&
		     rr_image_parse(img2, len2, name, &im, &e) == 0 &&
		     !(im.xloadflags & RERAND_XLF_EFI_KEXEC),
		     "%s: a kernel without XLF_EFI_KEXEC gives an image without it (0x%x)", name,
		     im.xloadflags);
		free(img2);
		k.bz.xloadflags = had;
	}

	/* A bare vmlinux (+ relocs) makes no 5-level or EFI-kexec claim: the
	 * image does not either (docs/design.md). */
	char vp[600], rp[600];
	struct rr_kernel vk;
	snprintf(vp, sizeof(vp), "%s/vmlinux", tmpdir);
	snprintf(rp, sizeof(rp), "%s/vmlinux.relocs", tmpdir);
	if (put_file(vp, k.payload, k.elf.elf_end) == 0 &&
	    put_file(rp, k.payload + k.elf.elf_end, k.payload_len - k.elf.elf_end) == 0 &&
	    rr_kernel_load(vp, rp, &vk, &e) == 0) {
		T_OK(rr_image_build(&vk, fake_stage, sizeof(fake_stage), &o, &img2, &len2, name, &e) == 0 &&
		     rr_image_parse(img2, len2, name, &im, &e) == 0 &&
		     (im.xloadflags & 0x33) == 0x03,
		     "%s: image from the bare vmlinux: KERNEL_64 | ABOVE_4G without 5LEVEL or EFI_KEXEC (0x%x)",
		     name, im.xloadflags);
		free(img2);
		rr_kernel_free(&vk);
	} else {
		T_OK(0, "%s: vmlinux + relocs written and loaded: %s", name, e.msg);
	}
	unlink(vp);
	unlink(rp);

	/* A stage whose padding is in use leaves no room for the EFI stub. */
	fake_stage[RR_IMAGE_EFI_STUB_OFFSET + 3] = 0x90;
	T_OK(rr_image_build(&k, fake_stage, sizeof(fake_stage), &o, &img2, &len2, name, &e) < 0 &&
	     strstr(e.msg, "EFI stub"), "%s: stage bytes under the EFI stub refused: %s", name, e.msg);
	fake_stage[RR_IMAGE_EFI_STUB_OFFSET + 3] = 0;
	rr_kernel_free(&k);
}

int main(void)
{
	const char *dir = t_kernels_dir();

	memcpy(fake_stage + RERAND_LOCATOR_OFFSET, RERAND_LOCATOR_MAGIC, 8);
	fake_stage[0x200] = 0xf4;
	if (!mkdtemp(tmpdir)) {
		T_OK(0, "temporary directory");
		return t_done();
	}
	if (!dir) {
		T_OK(1, "# SKIP RERAND_KERNELS not set: PE image tests need the shared kernels");
	} else {
		one_kernel(dir, "vmlinuz-6.1.0-57-cloud-amd64");
		if (getenv("RERAND_MODE") && !strcmp(getenv("RERAND_MODE"), "long")) {
			/* Or the 6.15+ kernel fetched without ../shared (7.x today);
			 * none is the load's failure, not a skip. */
			const char *want = "vmlinuz-6.16.12+deb13-cloud-amd64";
			char k2[256];

			if (t_kernel_pick(want, "vmlinuz-{6.1[5-9],[7-9]}.*-cloud-amd64", NULL, k2, sizeof(k2)) < 0)
				snprintf(k2, sizeof(k2), "%s", want);
			else if (strcmp(k2, want))
				printf("# %s is not here: %s stands in for it\n", want, k2);
			one_kernel(dir, k2);
		}
	}
	rmdir(tmpdir);
	return t_done();
}
