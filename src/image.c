/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The image writer and reader.  An image is a bzImage-format file: a
 * two-sector setup part holding only a truthful setup header, then the
 * protected-mode part: stage (+0x200 entry), header, segments, relocations.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <lz4.h>
#include <lz4hc.h>

#include "image.h"
#include "reloc.h"
#include "select.h"
#include "util.h"

/* Setup header offsets (Documentation/arch/x86/boot.rst). */
#define H_SETUP_SECTS   0x1f1
#define H_SYSSIZE       0x1f4
#define H_VID_MODE      0x1fa
#define H_BOOT_FLAG     0x1fe
#define H_JUMP          0x200
#define H_MAGIC         0x202
#define H_VERSION       0x206
#define H_KVER          0x20e
#define H_LOADFLAGS     0x211
#define H_CODE32_START  0x214
#define H_INITRD_MAX    0x22c
#define H_KALIGN        0x230
#define H_RELOCATABLE   0x234
#define H_MIN_ALIGN     0x235
#define H_XLOADFLAGS    0x236
#define H_CMDLINE_SIZE  0x238
#define H_PREF_ADDRESS  0x258
#define H_INIT_SIZE     0x260
#define H_END           0x26c            /* end of the 2.15 header */
#define H_KVER_STRING   0x280

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static int compress_segment(const struct rr_image_opts *o, const uint8_t *src, size_t len,
			    uint8_t *dst, size_t cap, size_t *ret_len)
{
	int n;

	if (o->codec == RERAND_CODEC_NONE) {
		if (len > cap)
			return -ENOSPC;
		memcpy(dst, src, len);
		*ret_len = len;
		return 0;
	}
	if (len > LZ4_MAX_INPUT_SIZE || cap > INT32_MAX)
		return -EFBIG;
	if (o->lz4_level > 0)
		n = LZ4_compress_HC((const char *)src, (char *)dst, (int)len, (int)cap, o->lz4_level);
	else
		n = LZ4_compress_default((const char *)src, (char *)dst, (int)len, (int)cap);
	if (n <= 0)
		return -EIO;
	*ret_len = (size_t)n;
	return 0;
}

static void write_setup(uint8_t *img, size_t pm_len, uint32_t init_size, const struct rr_kernel *k)
{
	uint32_t cmdline_size = k->is_bzimage && k->bz.cmdline_size ? k->bz.cmdline_size : 2047;

	img[H_SETUP_SECTS] = RR_IMAGE_SETUP_SECTS;
	rr_put32(img + H_SYSSIZE, (uint32_t)((pm_len + 15) / 16));
	put16(img + H_VID_MODE, 0xffff);
	put16(img + H_BOOT_FLAG, 0xaa55);
	/* A short jump over the header (loaders size the header from this byte)
	 * to a halt loop: the image has no real-mode code. */
	img[H_JUMP] = 0xeb;
	img[H_JUMP + 1] = H_END - (H_JUMP + 2);
	img[H_END] = 0xfa;           /* cli */
	img[H_END + 1] = 0xf4;       /* hlt */
	img[H_END + 2] = 0xeb;       /* jmp back to hlt */
	img[H_END + 3] = 0xfd;
	memcpy(img + H_MAGIC, "HdrS", 4);
	put16(img + H_VERSION, RR_IMAGE_PROTOCOL);
	img[H_LOADFLAGS] = RERAND_LOADED_HIGH;
	rr_put32(img + H_CODE32_START, 0x100000);
	rr_put32(img + H_INITRD_MAX, 0x7fffffff);
	rr_put32(img + H_KALIGN, RR_IMAGE_ALIGNMENT);
	img[H_RELOCATABLE] = 1;
	img[H_MIN_ALIGN] = 12;
	put16(img + H_XLOADFLAGS, RERAND_XLF_KERNEL_64 | RERAND_XLF_CAN_BE_LOADED_ABOVE_4G |
				  RERAND_XLF_5LEVEL);
	rr_put32(img + H_CMDLINE_SIZE, cmdline_size);
	rr_put64(img + H_PREF_ADDRESS, RERAND_LOAD_PHYSICAL_ADDR);
	rr_put32(img + H_INIT_SIZE, init_size);
	if (k->is_bzimage && k->bz.kernel_version[0]) {
		size_t n = strnlen(k->bz.kernel_version, sizeof(k->bz.kernel_version) - 1);
		memcpy(img + H_KVER_STRING, k->bz.kernel_version, n);
		put16(img + H_KVER, H_KVER_STRING - 0x200);
	}
}

int rr_image_build(const struct rr_kernel *k, const uint8_t *stage, size_t stage_len,
		   const struct rr_image_opts *o, uint8_t **ret_buf, size_t *ret_len,
		   const char *name, struct rr_err *e)
{
	const struct rr_vmlinux *v = &k->elf;
	struct rerand_image_header h;
	struct rerand_locator loc;
	size_t nrel = k->relocs.nr_reloc64 + k->relocs.nr_inverse32 + k->relocs.nr_reloc32;
	size_t cap, off, hdr_off;
	uint8_t *img, *pm;
	int r;

	if (stage_len < RERAND_ENTRY64_OFFSET + 16 ||
	    memcmp(stage + RERAND_LOCATOR_OFFSET, RERAND_LOCATOR_MAGIC, 8))
		return rr_errf(e, EINVAL, "%s: the built-in stage is malformed", name);
	if (v->nr_seg == 0 || v->nr_seg > RERAND_MAX_SEGMENTS)
		return rr_errf(e, EINVAL, "%s: %u loadable segments (1 to %d supported)", name,
			       v->nr_seg, RERAND_MAX_SEGMENTS);
	if (v->link_paddr != RERAND_LOAD_PHYSICAL_ADDR)
		return rr_errf(e, EINVAL, "%s: kernel linked at physical 0x%llx, not 0x%llx", name,
			       (unsigned long long)v->link_paddr, RERAND_LOAD_PHYSICAL_ADDR);
	if (rr_virt_slot_count(v->mem_size) == 0)
		return rr_errf(e, EFBIG, "%s: in-memory size %llu MiB leaves no virtual slot", name,
			       (unsigned long long)(v->mem_size >> 20));

	/* Worst case: every segment stored raw or LZ4-expanded, plus the table. */
	cap = RR_IMAGE_PM_OFFSET + RR_ALIGN_UP(stage_len, RERAND_HDR_ALIGN) + sizeof(h) + nrel * 4 + 64;
	for (unsigned i = 0; i < v->nr_seg; i++)
		cap += (size_t)LZ4_compressBound((int)v->seg[i].filesz) + 16;
	img = calloc(1, cap);
	if (!img)
		return rr_errf(e, ENOMEM, "%s: out of memory for a %zu-byte image", name, cap);
	pm = img + RR_IMAGE_PM_OFFSET;

	memcpy(pm, stage, stage_len);
	hdr_off = RR_ALIGN_UP(stage_len, RERAND_HDR_ALIGN);
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, RERAND_IMAGE_MAGIC, 8);
	h.version = RERAND_IMAGE_VERSION;
	h.header_size = sizeof(h);
	h.codec = (uint32_t)o->codec;
	h.nr_segments = v->nr_seg;
	h.mem_size = v->mem_size;
	h.entry_offset = v->entry - v->link_paddr;
	h.link_paddr = v->link_paddr;
	h.reloc_layout = k->relocs.layout;
	h.nr_reloc64 = (uint32_t)k->relocs.nr_reloc64;
	h.nr_inverse32 = (uint32_t)k->relocs.nr_inverse32;
	h.nr_reloc32 = (uint32_t)k->relocs.nr_reloc32;

	off = hdr_off + sizeof(h);
	for (unsigned i = 0; i < v->nr_seg; i++) {
		const struct rr_elf_segment *s = &v->seg[i];
		size_t stored;

		off = RR_ALIGN_UP(off, 16);
		r = compress_segment(o, k->payload + s->offset, s->filesz, pm + off,
				     cap - RR_IMAGE_PM_OFFSET - off, &stored);
		if (r < 0) {
			free(img);
			return rr_errf(e, -r, "%s: cannot compress segment %u", name, i);
		}
		h.seg[i].mem_offset = s->paddr - v->link_paddr;
		h.seg[i].mem_size = s->memsz;
		h.seg[i].file_size = s->filesz;
		h.seg[i].data_offset = off;
		h.seg[i].data_size = stored;
		off += stored;
	}
	off = RR_ALIGN_UP(off, 4);
	h.relocs_offset = off;
	memcpy(pm + off, k->relocs.reloc64, k->relocs.nr_reloc64 * 4);
	off += k->relocs.nr_reloc64 * 4;
	memcpy(pm + off, k->relocs.inverse32, k->relocs.nr_inverse32 * 4);
	off += k->relocs.nr_inverse32 * 4;
	memcpy(pm + off, k->relocs.reloc32, k->relocs.nr_reloc32 * 4);
	off += k->relocs.nr_reloc32 * 4;
	h.file_size = off;
	h.scratch_offset = RR_ALIGN_UP(off, 4096);
	h.scratch_size = RR_IMAGE_SCRATCH_SIZE;
	if (h.scratch_offset + h.scratch_size > UINT32_MAX) {
		free(img);
		return rr_errf(e, EFBIG, "%s: image too large for init_size", name);
	}
	memcpy(pm + hdr_off, &h, sizeof(h));

	memcpy(loc.magic, RERAND_LOCATOR_MAGIC, 8);
	loc.header_offset = (uint32_t)hdr_off;
	loc.stage_size = (uint32_t)stage_len;
	memcpy(pm + RERAND_LOCATOR_OFFSET, &loc, sizeof(loc));

	write_setup(img, off, (uint32_t)(h.scratch_offset + h.scratch_size), k);
	*ret_buf = img;
	*ret_len = RR_IMAGE_PM_OFFSET + off;
	return 0;
}

int rr_image_probe(const uint8_t *buf, size_t len)
{
	size_t pm;

	if (len < 0x270 || memcmp(buf + H_MAGIC, "HdrS", 4))
		return 0;
	pm = (size_t)((buf[H_SETUP_SECTS] ? buf[H_SETUP_SECTS] : 4) + 1) * 512;
	return len >= pm + RERAND_LOCATOR_OFFSET + sizeof(struct rerand_locator) &&
	       !memcmp(buf + pm + RERAND_LOCATOR_OFFSET, RERAND_LOCATOR_MAGIC, 8);
}

int rr_image_parse(const uint8_t *buf, size_t len, const char *name,
		   struct rr_image *ret, struct rr_err *e)
{
	struct rr_image im;
	struct rerand_locator loc;
	const struct rerand_image_header *h = &im.hdr;
	size_t pm_len;

	memset(&im, 0, sizeof(im));
	if (!rr_image_probe(buf, len))
		return rr_errf(e, EINVAL, "%s: not a rerand image", name);
	im.pm_offset = (uint64_t)((buf[H_SETUP_SECTS] ? buf[H_SETUP_SECTS] : 4) + 1) * 512;
	pm_len = len - im.pm_offset;
	memcpy(&loc, buf + im.pm_offset + RERAND_LOCATOR_OFFSET, sizeof(loc));
	if (loc.header_offset % RERAND_HDR_ALIGN || loc.header_offset < RERAND_ENTRY64_OFFSET ||
	    loc.header_offset > pm_len || pm_len - loc.header_offset < sizeof(im.hdr))
		return rr_errf(e, EINVAL, "%s: image header offset %u is outside the file", name,
			       loc.header_offset);
	im.header_file_offset = im.pm_offset + loc.header_offset;
	memcpy(&im.hdr, buf + im.header_file_offset, sizeof(im.hdr));
	if (memcmp(h->magic, RERAND_IMAGE_MAGIC, 8))
		return rr_errf(e, EINVAL, "%s: image header magic is wrong", name);
	if (h->version != RERAND_IMAGE_VERSION || h->header_size != sizeof(im.hdr))
		return rr_errf(e, EINVAL, "%s: image header version %u (size %u) is not supported "
			       "(this rerand writes version %u)", name, h->version, h->header_size,
			       RERAND_IMAGE_VERSION);
	if (h->file_size != pm_len)
		return rr_errf(e, EINVAL, "%s: image is %zu bytes past the setup part, header says %llu "
			       "(truncated or padded)", name, pm_len, (unsigned long long)h->file_size);
	if (h->codec > RERAND_CODEC_LZ4)
		return rr_errf(e, EINVAL, "%s: unknown segment codec %u", name, h->codec);
	if (h->nr_segments == 0 || h->nr_segments > RERAND_MAX_SEGMENTS)
		return rr_errf(e, EINVAL, "%s: %u segments", name, h->nr_segments);
	if (h->link_paddr != RERAND_LOAD_PHYSICAL_ADDR || h->mem_size == 0 ||
	    h->entry_offset >= h->mem_size || rr_virt_slot_count(h->mem_size) == 0)
		return rr_errf(e, EINVAL, "%s: kernel layout in the header is inconsistent", name);
	for (unsigned i = 0; i < h->nr_segments; i++) {
		const struct rerand_segment *s = &h->seg[i];
		if (s->data_offset < loc.header_offset + sizeof(im.hdr) || s->data_offset > pm_len ||
		    s->data_size > pm_len - s->data_offset || s->mem_offset > h->mem_size ||
		    s->mem_size > h->mem_size - s->mem_offset || s->file_size > s->mem_size ||
		    (h->codec == RERAND_CODEC_NONE && s->data_size != s->file_size))
			return rr_errf(e, EINVAL, "%s: segment %u lies outside the image or the kernel",
				       name, i);
	}
	uint64_t nrel = (uint64_t)h->nr_reloc64 + h->nr_inverse32 + h->nr_reloc32;
	if (h->reloc_layout < 2 || h->reloc_layout > 3 || h->relocs_offset % 4 ||
	    h->relocs_offset > pm_len || nrel > (pm_len - h->relocs_offset) / 4 ||
	    (h->reloc_layout == 2 && h->nr_inverse32))
		return rr_errf(e, EINVAL, "%s: relocation table lies outside the image", name);
	if (h->scratch_offset < h->file_size || h->scratch_offset % 4096 ||
	    h->scratch_size < 8 * 4096)
		return rr_errf(e, EINVAL, "%s: scratch area is inconsistent", name);

	im.protocol = rr_get16(buf + H_VERSION);
	im.xloadflags = rr_get16(buf + H_XLOADFLAGS);
	im.init_size = rr_get32(buf + H_INIT_SIZE);
	im.kernel_alignment = rr_get32(buf + H_KALIGN);
	if (im.init_size < h->scratch_offset + h->scratch_size)
		return rr_errf(e, EINVAL, "%s: init_size %u does not cover the stage's scratch area",
			       name, im.init_size);
	uint16_t kv = rr_get16(buf + H_KVER);
	if (kv && 0x200 + (size_t)kv < im.pm_offset) {
		size_t max = im.pm_offset - 0x200 - kv;
		if (max > sizeof(im.kernel_version) - 1)
			max = sizeof(im.kernel_version) - 1;
		memcpy(im.kernel_version, buf + 0x200 + kv, max);
		im.kernel_version[strnlen(im.kernel_version, max)] = 0;
	}
	*ret = im;
	return 0;
}
