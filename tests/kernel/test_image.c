/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The image writer and the stage's data path, hosted: build an image from
 * each shared kernel, parse it back, decode its segments with the stage's
 * LZ4 decoder, relocate with the stage's code, and compare byte for byte
 * with the independent oracle (shared/tools/reloc-oracle.py) at several
 * virtual offsets.  Also: the truthful setup header, and refused images.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"
#include "image.h"
#include "kernel.h"
#include "lz4dec.h"
#include "reloc.h"
#include "select.h"
#include "util.h"


/* A stand-in stage blob for the writer: the real one is linked into the CLI;
 * the writer only needs the locator slot at +0x10 and some bytes. */
static uint8_t fake_stage[0x400];

/* Do what the stage does to produce the kernel in memory (zero-filled where
 * the stage would leave memory as it was, to compare with the oracle). */
static uint8_t *stage_path(const uint8_t *img, size_t len, const struct rr_image *im, uint64_t virt,
			   enum rr_simd simd)
{
	const struct rerand_image_header *h = &im->hdr;
	const uint8_t *pm = img + im->pm_offset;
	uint8_t *out = calloc(1, h->mem_size);

	for (unsigned i = 0; i < h->nr_segments; i++) {
		const struct rerand_segment *s = &h->seg[i];
		if (h->codec == RERAND_CODEC_LZ4) {
			if (rr_lz4_decode_block_simd(pm + s->data_offset, s->data_size, out + s->mem_offset,
						     s->file_size, simd) != (int64_t)s->file_size) {
				free(out);
				return NULL;
			}
		} else {
			memcpy(out + s->mem_offset, pm + s->data_offset, s->file_size);
		}
	}
	const uint32_t *tab = (const uint32_t *)(pm + h->relocs_offset);
	struct rr_reloc_lists l = {
		.reloc64 = tab, .nr_reloc64 = h->nr_reloc64,
		.inverse32 = tab + h->nr_reloc64, .nr_inverse32 = h->nr_inverse32,
		.reloc32 = tab + h->nr_reloc64 + h->nr_inverse32, .nr_reloc32 = h->nr_reloc32,
	};
	if (rr_relocate(out, h->mem_size, &l, h->link_paddr, virt) < 0) {
		free(out);
		return NULL;
	}
	(void)len;
	return out;
}

static int oracle_compare(const struct rr_kernel *k, const uint8_t *mine, uint64_t size, uint64_t virt)
{
	char payload[] = "/tmp/rr-test-payloadXXXXXX", out[] = "/tmp/rr-test-oracleXXXXXX";
	int fd = mkstemp(payload), fo = mkstemp(out), same = 0;
	char cmd[512];

	if (fd < 0 || fo < 0)
		return 0;
	if (write(fd, k->payload, k->payload_len) != (ssize_t)k->payload_len)
		goto done;
	snprintf(cmd, sizeof(cmd), "python3 %s %s --virt 0x%llx -o %s >/dev/null",
		 t_oracle(), payload, (unsigned long long)virt, out);
	if (system(cmd) != 0)
		goto done;
	FILE *f = fopen(out, "rb");
	if (!f)
		goto done;
	uint8_t *ref = malloc(size + 1);
	size_t n = fread(ref, 1, size + 1, f);
	fclose(f);
	same = n == size && memcmp(ref, mine, size) == 0;
	if (!same && n == size)
		for (uint64_t i = 0; i < size; i++)
			if (ref[i] != mine[i]) {
				printf("#   first difference at image offset 0x%llx\n", (unsigned long long)i);
				break;
			}
	free(ref);
done:
	close(fd);
	close(fo);
	unlink(payload);
	unlink(out);
	return same;
}

static void one_kernel(const char *dir, const char *name, unsigned layout)
{
	char path[512];
	struct rr_kernel k;
	struct rr_err e;
	struct rr_image im;
	struct rr_image_opts o = { .codec = RERAND_CODEC_LZ4 };
	uint8_t *img;
	size_t len;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (rr_kernel_load(path, NULL, &k, &e) < 0) {
		T_OK(0, "%s loads: %s", name, e.msg);
		return;
	}
	T_OK(rr_image_build(&k, fake_stage, sizeof(fake_stage), &o, &img, &len, name, &e) == 0,
	     "%s: image built (%zu bytes)", name, len);
	T_OK(rr_image_parse(img, len, name, &im, &e) == 0, "%s: image parses back", name);
	T_EQ_U64(im.hdr.reloc_layout, layout, "%s: relocation layout kept", name);
	T_OK(im.protocol >= 0x020c && (im.xloadflags & 0x03) == 0x03 && img[0x234] == 1 &&
	     (im.xloadflags & 0x30) == (k.bz.xloadflags & 0x30),
	     "%s: protocol 2.15, KERNEL_64 | ABOVE_4G, 5LEVEL and EFI_KEXEC as the kernel's, relocatable", name);
	T_OK(im.init_size >= len - RR_IMAGE_PM_OFFSET + RR_IMAGE_SIG_ROOM + RR_IMAGE_SCRATCH_SIZE &&
	     im.init_size % 4096 == 0 && im.kernel_alignment == RR_IMAGE_ALIGNMENT,
	     "%s: init_size covers file + signature room + scratch, alignment %u", name, im.kernel_alignment);
	T_OK(rr_get32(img + 0x264) == 0 && rr_get32(img + 0x248) == 0 &&
	     (rr_get16(img + 0x236) & 0x0c) == 0,
	     "%s: no EFI handover (32 or 64), no stale payload fields", name);
	/* The kernel's own release first, as the file is named (6.x or 7.x). */
	const char *rel = strncmp(name, "vmlinuz-", 8) ? name : name + 8;
	T_OK(!strncmp(im.kernel_version, rel, strlen(rel)) && im.kernel_version[strlen(rel)] == ' ',
	     "%s: version string kept: %.40s", name, im.kernel_version);

	uint64_t virts[] = { 0x1000000, 0x20000000, 0x0a000000,
			     rr_virt_slot_at(rr_virt_slot_count(k.elf.mem_size) - 1) };
	/* Each offset decodes with another of the stage's copy widths (the
	 * stage picks one by CPU at run time): every width meets the oracle. */
	for (size_t i = 0; i < sizeof(virts) / sizeof(virts[0]); i++) {
		enum rr_simd simd = (enum rr_simd)(i % 3);
		if (!t_simd_usable(simd)) {
			T_OK(1, "%s: %s copies at 0x%llx # SKIP this CPU lacks them", name,
			     t_simd_name(simd), (unsigned long long)virts[i]);
			continue;
		}
		uint8_t *mine = stage_path(img, len, &im, virts[i], simd);
		T_OK(mine != NULL, "%s: stage path (%s copies) decodes and relocates at 0x%llx", name,
		     t_simd_name(simd), (unsigned long long)virts[i]);
		if (mine)
			T_OK(oracle_compare(&k, mine, k.elf.mem_size, virts[i]),
			     "%s: byte-identical to the oracle at virtual offset 0x%llx (%s copies)", name,
			     (unsigned long long)virts[i], t_simd_name(simd));
		free(mine);
	}

	/* A damaged image is refused by the reader with a reason. */
	uint8_t *bad = malloc(len);
	memcpy(bad, img, len);
	T_OK(rr_image_parse(bad, len - 100, name, &im, &e) < 0 && strstr(e.msg, name),
	     "%s: truncated image refused: %s", name, e.msg);
	memcpy(bad, img, len);
	bad[RR_IMAGE_PM_OFFSET + rr_get32(img + RR_IMAGE_PM_OFFSET + 0x18)] ^= 0xff;
	T_OK(rr_image_parse(bad, len, name, &im, &e) < 0, "%s: bad header magic refused: %s", name, e.msg);
	free(bad);
	free(img);
	rr_kernel_free(&k);
}

/* NAME, or a kernel of its series (t_kernel_pick); a series the directory
 * lacks (bookworm's archive serves no 6.15+ kernel) is a TAP skip. */
static void one_series(const char *dir, const char *name, const char *pat, const char *not,
		       unsigned layout)
{
	char file[256];
	int r = t_kernel_pick(name, pat, not, file, sizeof(file));

	if (r < 0) {
		T_OK(1, "%s # SKIP no kernel like it (%s) in %s", name, pat, dir);
		return;
	}
	if (r == 0)
		printf("# %s is not here: %s stands in for it\n", name, file);
	one_kernel(dir, file, layout);
}

int main(void)
{
	const char *dir = t_kernels_dir();

	memcpy(fake_stage + RERAND_LOCATOR_OFFSET, RERAND_LOCATOR_MAGIC, 8);
	if (!dir) {
		printf("# RERAND_KERNELS not set: image tests need the shared kernels\n");
		T_OK(1, "# SKIP no shared kernels");
		return t_done();
	}
	one_series(dir, "vmlinuz-6.1.0-57-cloud-amd64", "vmlinuz-6.1.0-*-cloud-amd64", NULL, 3);
	one_series(dir, "vmlinuz-6.16.12+deb13-cloud-amd64", "vmlinuz-{6.1[5-9],[7-9]}.*-cloud-amd64", NULL, 2);
	if (getenv("RERAND_MODE") && !strcmp(getenv("RERAND_MODE"), "long")) {
		one_series(dir, "vmlinuz-6.1.0-57-amd64", "vmlinuz-6.1.0-*-amd64", "cloud", 3);
		one_series(dir, "vmlinuz-6.12.118+deb12-cloud-amd64", "vmlinuz-6.12.*-cloud-amd64", NULL, 3);
	}
	return t_done();
}
