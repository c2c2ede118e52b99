/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The image reader: what rerandd, `rerand load` and `rerand inspect` check
 * before they trust an image (image_write.c writes it).  It needs no codec,
 * libelf or compressor: rerandd links this half only.
 */
#include <errno.h>
#include <string.h>

#include "image.h"
#include "pesig.h"
#include "select.h"
#include "setuphdr.h"
#include "util.h"

int rr_image_probe(const uint8_t *buf, size_t len)
{
	size_t pm;

	if (len < 0x270 || memcmp(buf + H_MAGIC, "HdrS", 4))
		return 0;
	pm = (size_t)((buf[H_SETUP_SECTS] ? buf[H_SETUP_SECTS] : 4) + 1) * 512;
	return len >= pm + RERAND_LOCATOR_OFFSET + sizeof(struct rerand_locator) &&
	       !memcmp(buf + pm + RERAND_LOCATOR_OFFSET, RERAND_LOCATOR_MAGIC, 8);
}

/* The locator in the stage, and the header it points at; *pm_len is the
 * file's length past the setup part. */
static int read_header(const uint8_t *buf, size_t len, const char *name, struct rr_image *im,
		       size_t *pm_len, struct rr_err *e)
{
	const struct rerand_image_header *h = &im->hdr;
	struct rerand_locator loc;

	im->pm_offset = (uint64_t)((buf[H_SETUP_SECTS] ? buf[H_SETUP_SECTS] : 4) + 1) * 512;
	*pm_len = len - im->pm_offset;
	memcpy(&loc, buf + im->pm_offset + RERAND_LOCATOR_OFFSET, sizeof(loc));
	if (loc.header_offset % RERAND_HDR_ALIGN || loc.header_offset < RERAND_ENTRY64_OFFSET ||
	    loc.header_offset > *pm_len || *pm_len - loc.header_offset < sizeof(im->hdr))
		return rr_errf(e, EINVAL, "%s: image header offset %u is outside the file", name,
			       loc.header_offset);
	im->header_file_offset = im->pm_offset + loc.header_offset;
	memcpy(&im->hdr, buf + im->header_file_offset, sizeof(im->hdr));
	if (memcmp(h->magic, RERAND_IMAGE_MAGIC, 8))
		return rr_errf(e, EINVAL, "%s: image header magic is wrong", name);
	if (h->version != RERAND_IMAGE_VERSION || h->header_size != sizeof(im->hdr))
		return rr_errf(e, EINVAL, "%s: image header version %u (size %u) is not supported "
			       "(this rerand writes version %u)", name, h->version, h->header_size,
			       RERAND_IMAGE_VERSION);
	return 0;
}

/* A file longer than the header says is signed: the extra bytes must be
 * exactly the certificate table.  *pm_len becomes the unsigned length. */
static int check_signed_tail(const uint8_t *buf, size_t len, const char *name,
			     struct rr_image *im, size_t *pm_len, struct rr_err *e)
{
	const struct rerand_image_header *h = &im->hdr;
	struct rr_pe_info pi;
	struct rr_err pe_e;

	if (h->file_size == *pm_len)
		return 0;
	if (h->file_size > *pm_len || rr_pe_parse(buf, len, name, &pi, &pe_e) < 0 ||
	    !pi.cert_size || pi.cert_offset != im->pm_offset + h->file_size ||
	    pi.cert_size != *pm_len - h->file_size)
		return rr_errf(e, EINVAL, "%s: image is %zu bytes past the setup part, header "
			       "says %llu and no signature accounts for the difference "
			       "(truncated or padded)", name, *pm_len,
			       (unsigned long long)h->file_size);
	im->cert_size = pi.cert_size;
	*pm_len = h->file_size;
	return 0;
}

/* Everything the header places lies inside the file (pm_len bytes past the
 * setup part) and inside the kernel. */
static int check_layout(const char *name, const struct rr_image *im, size_t pm_len,
			struct rr_err *e)
{
	const struct rerand_image_header *h = &im->hdr;
	uint64_t data_start = im->header_file_offset - im->pm_offset + sizeof(im->hdr);

	if (h->codec > RERAND_CODEC_LZ4)
		return rr_errf(e, EINVAL, "%s: unknown segment codec %u", name, h->codec);
	if (h->nr_segments == 0 || h->nr_segments > RERAND_MAX_SEGMENTS)
		return rr_errf(e, EINVAL, "%s: %u segments", name, h->nr_segments);
	if (h->link_paddr != RERAND_LOAD_PHYSICAL_ADDR || h->mem_size == 0 ||
	    h->entry_offset >= h->mem_size || rr_virt_slot_count(h->mem_size) == 0)
		return rr_errf(e, EINVAL, "%s: kernel layout in the header is inconsistent", name);
	for (unsigned i = 0; i < h->nr_segments; i++) {
		const struct rerand_segment *s = &h->seg[i];
		if (s->data_offset < data_start || s->data_offset > pm_len ||
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
	/* The loader zero-fills past the file only: a signature running into the
	 * scratch area would leave it dirty for the stage. */
	if (h->file_size + im->cert_size > h->scratch_offset)
		return rr_errf(e, EINVAL, "%s: the %u-byte signature runs into the stage's scratch "
			       "area (%llu bytes of room)", name, im->cert_size,
			       (unsigned long long)(h->scratch_offset - h->file_size));
	return 0;
}

/* The setup header's fields the loaders read, and the kernel version. */
static int read_setup(const uint8_t *buf, const char *name, struct rr_image *im,
		      struct rr_err *e)
{
	im->protocol = rr_get16(buf + H_VERSION);
	im->xloadflags = rr_get16(buf + H_XLOADFLAGS);
	im->init_size = rr_get32(buf + H_INIT_SIZE);
	im->kernel_alignment = rr_get32(buf + H_KALIGN);
	if (im->init_size < im->hdr.scratch_offset + im->hdr.scratch_size)
		return rr_errf(e, EINVAL, "%s: init_size %u does not cover the stage's scratch area",
			       name, im->init_size);
	uint16_t kv = rr_get16(buf + H_KVER);
	if (kv && 0x200 + (size_t)kv < im->pm_offset) {
		size_t max = im->pm_offset - 0x200 - kv;
		if (max > sizeof(im->kernel_version) - 1)
			max = sizeof(im->kernel_version) - 1;
		memcpy(im->kernel_version, buf + 0x200 + kv, max);
		im->kernel_version[strnlen(im->kernel_version, max)] = 0;
	}
	return 0;
}

int rr_image_parse(const uint8_t *buf, size_t len, const char *name,
		   struct rr_image *ret, struct rr_err *e)
{
	struct rr_image im;
	size_t pm_len;
	int r;

	memset(&im, 0, sizeof(im));
	if (!rr_image_probe(buf, len))
		return rr_errf(e, EINVAL, "%s: not a rerand image", name);
	if ((r = read_header(buf, len, name, &im, &pm_len, e)) < 0 ||
	    (r = check_signed_tail(buf, len, name, &im, &pm_len, e)) < 0 ||
	    (r = check_layout(name, &im, pm_len, e)) < 0 ||
	    (r = read_setup(buf, name, &im, e)) < 0)
		return r;
	*ret = im;
	return 0;
}
