/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The image writer (image_read.c is the reader).  An image is a bzImage-
 * format file: a two-sector setup part holding a PE/COFF header (so the file
 * can be signed like a kernel) and a truthful setup header, then the
 * protected-mode part: stage (+0x200 entry), header, segments, relocations.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <lz4.h>
#include <lz4hc.h>

#include "image.h"
#include "lz4par.h"
#include "reloc.h"
#include "select.h"
#include "setuphdr.h"
#include "util.h"

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static int compress_segment(const struct rr_image_opts *o, struct rr_lz4par *par,
			    const uint8_t *base, size_t off, size_t len,
			    uint8_t *dst, size_t cap, size_t *ret_len)
{
	if (o->codec == RERAND_CODEC_NONE) {
		if (len > cap)
			return -ENOSPC;
		memcpy(dst, base + off, len);
		*ret_len = len;
		return 0;
	}
	if (len > LZ4_MAX_INPUT_SIZE)
		return -EFBIG;
	return rr_lz4par_block(par, base, off, len, dst, cap, ret_len);
}

/* PE/COFF fields (PE Format, "Optional Header Image Only"), at offsets
 * from the start of each header. */
#define PE_OFFSET          0x40         /* e_lfanew: right after the DOS header */
#define PE_OPT             (PE_OFFSET + 24)
#define PE_OPT_SIZE        (112 + 8 * RR_IMAGE_PE_DATA_DIRS)
#define PE_SECTION         (PE_OPT + PE_OPT_SIZE)
#define PE_END             (PE_SECTION + 40)
#define PE_IMAGE_BASE      0x10000000ULL
#define PE_SECTION_RVA     RR_IMAGE_SECTION_ALIGN
_Static_assert(PE_END <= H_SETUP_SECTS, "the PE header must end before the setup header");

/* The headers the kernel's verify_pefile, sbsign, pesign and firmware read;
 * the certificate directory stays zero until the file is signed. */
static void write_pe(uint8_t *img, size_t pm_len)
{
	uint8_t *coff = img + PE_OFFSET + 4, *opt = img + PE_OPT, *sec = img + PE_SECTION;

	img[0] = 'M';
	img[1] = 'Z';
	rr_put32(img + 0x3c, PE_OFFSET);
	memcpy(img + PE_OFFSET, "PE\0\0", 4);
	put16(coff + 0, 0x8664);                 /* Machine: AMD64 */
	put16(coff + 2, 1);                      /* NumberOfSections */
	/* TimeDateStamp, symbol table: 0 (reproducible output) */
	put16(coff + 16, PE_OPT_SIZE);           /* SizeOfOptionalHeader */
	put16(coff + 18, 0x0206);                /* EXECUTABLE_IMAGE | LINE_NUMS_STRIPPED |
						    DEBUG_STRIPPED */
	put16(opt + 0, 0x20b);                   /* PE32+ */
	rr_put32(opt + 4, (uint32_t)pm_len);     /* SizeOfCode */
	rr_put32(opt + 16, PE_SECTION_RVA + RR_IMAGE_EFI_STUB_OFFSET); /* AddressOfEntryPoint */
	rr_put32(opt + 20, PE_SECTION_RVA);      /* BaseOfCode */
	rr_put64(opt + 24, PE_IMAGE_BASE);
	rr_put32(opt + 32, RR_IMAGE_SECTION_ALIGN);
	rr_put32(opt + 36, RR_IMAGE_FILE_ALIGN);
	rr_put32(opt + 56, (uint32_t)(PE_SECTION_RVA + RR_ALIGN_UP(pm_len, RR_IMAGE_SECTION_ALIGN)));
	rr_put32(opt + 60, RR_IMAGE_PM_OFFSET);  /* SizeOfHeaders: the setup part */
	/* CheckSum: write_pe_checksum(), once the file is complete. */
	put16(opt + 68, 10);                     /* Subsystem: EFI application */
	put16(opt + 70, 0x0100);                 /* DllCharacteristics: NX_COMPAT */
	rr_put32(opt + 108, RR_IMAGE_PE_DATA_DIRS);
	memcpy(sec, ".text\0\0\0", 8);
	rr_put32(sec + 8, (uint32_t)pm_len);     /* VirtualSize */
	rr_put32(sec + 12, PE_SECTION_RVA);
	rr_put32(sec + 16, (uint32_t)pm_len);    /* SizeOfRawData: a multiple of FileAlignment */
	rr_put32(sec + 20, RR_IMAGE_PM_OFFSET);  /* PointerToRawData */
	rr_put32(sec + 36, 0x60000020);          /* CODE | EXECUTE | READ */
}

/* The PE CheckSum (16-bit one's-complement-style sum of the file with the
 * field itself as zero, plus the length), as sbsign and osslsigncode compute
 * it: firmware and the kernel ignore it, signing tools warn when it is off. */
static void write_pe_checksum(uint8_t *img, size_t len)
{
	uint64_t sum = 0;

	for (size_t i = 0; i + 1 < len; i += 2) {
		sum += (uint32_t)img[i] | (uint32_t)img[i + 1] << 8;
		sum = (sum & 0xffff) + (sum >> 16);
	}
	if (len & 1)
		sum += img[len - 1];
	sum = (sum & 0xffff) + (sum >> 16);
	rr_put32(img + PE_OPT + 64, (uint32_t)(sum + len));
}


static void write_setup(uint8_t *img, size_t pm_len, uint32_t init_size, const struct rr_kernel *k)
{
	uint32_t cmdline_size = k->is_bzimage && k->bz.cmdline_size ? k->bz.cmdline_size : 2047;
	/* XLF_5LEVEL tells kexec the kernel can run under 5-level paging: pass on
	 * the kernel's own claim.  A bare vmlinux carries no such claim, so it is
	 * left off (kexec then refuses the image on an LA57 machine rather than
	 * boot a kernel that might not cope).  XLF_EFI_KEXEC likewise: without
	 * it kexec-tools' kexec_load passes no EFI state (efi_info, the
	 * runtime map, SETUP_EFI) and the next kernel boots without EFI
	 * runtime services or efivarfs; the stage hands boot_params on as they
	 * are and keeps the map clear, so the kernel's claim is what counts. */
	uint16_t xlf = RERAND_XLF_KERNEL_64 | RERAND_XLF_CAN_BE_LOADED_ABOVE_4G;

	if (k->is_bzimage)
		xlf |= k->bz.xloadflags & (RERAND_XLF_5LEVEL | RERAND_XLF_EFI_KEXEC);

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
	put16(img + H_XLOADFLAGS, xlf);
	rr_put32(img + H_CMDLINE_SIZE, cmdline_size);
	rr_put64(img + H_PREF_ADDRESS, RERAND_LOAD_PHYSICAL_ADDR);
	rr_put32(img + H_INIT_SIZE, init_size);
	if (k->is_bzimage && k->bz.kernel_version[0]) {
		size_t n = strnlen(k->bz.kernel_version, sizeof(k->bz.kernel_version) - 1);
		memcpy(img + H_KVER_STRING, k->bz.kernel_version, n);
		put16(img + H_KVER, H_KVER_STRING - 0x200);
	}
}

/* What the image cannot be built from: a stage without its locator or with
 * bytes where the EFI stub goes, a kernel the stage cannot place. */
static int check_inputs(const struct rr_kernel *k, const uint8_t *stage, size_t stage_len,
			const char *name, struct rr_err *e)
{
	const struct rr_vmlinux *v = &k->elf;
	size_t stub_len = (size_t)(rr_efi_stub_end - rr_efi_stub);

	if (stage_len < RERAND_ENTRY64_OFFSET + 16 ||
	    memcmp(stage + RERAND_LOCATOR_OFFSET, RERAND_LOCATOR_MAGIC, 8))
		return rr_errf(e, EINVAL, "%s: the built-in stage is malformed", name);
	/* The EFI stub goes into the stage's padding before the 64-bit entry. */
	if (RR_IMAGE_EFI_STUB_OFFSET + stub_len > RERAND_ENTRY64_OFFSET)
		return rr_errf(e, EINVAL, "%s: the EFI stub (%zu bytes) does not fit before the "
			       "stage entry", name, stub_len);
	for (size_t i = 0; i < stub_len; i++)
		if (stage[RR_IMAGE_EFI_STUB_OFFSET + i])
			return rr_errf(e, EINVAL, "%s: the built-in stage uses bytes 0x%x-0x%zx that "
				       "the EFI stub needs", name, RR_IMAGE_EFI_STUB_OFFSET,
				       RR_IMAGE_EFI_STUB_OFFSET + stub_len);
	if (v->nr_seg == 0 || v->nr_seg > RERAND_MAX_SEGMENTS)
		return rr_errf(e, EINVAL, "%s: %u loadable segments (1 to %d supported)", name,
			       v->nr_seg, RERAND_MAX_SEGMENTS);
	if (v->link_paddr != RERAND_LOAD_PHYSICAL_ADDR)
		return rr_errf(e, EINVAL, "%s: kernel linked at physical 0x%llx, not 0x%llx", name,
			       (unsigned long long)v->link_paddr, RERAND_LOAD_PHYSICAL_ADDR);
	if (rr_virt_slot_count(v->mem_size) == 0)
		return rr_errf(e, EFBIG, "%s: in-memory size %llu MiB leaves no virtual slot", name,
			       (unsigned long long)(v->mem_size >> 20));
	return 0;
}

/* The header's fields that do not depend on where things land. */
static int fill_header(struct rerand_image_header *h, const struct rr_kernel *k,
		       const uint8_t *stage, size_t stage_len, const struct rr_image_opts *o)
{
	const struct rr_vmlinux *v = &k->elf;

	memset(h, 0, sizeof(*h));
	memcpy(h->magic, RERAND_IMAGE_MAGIC, 8);
	h->version = RERAND_IMAGE_VERSION;
	h->header_size = sizeof(*h);
	h->codec = (uint32_t)o->codec;
	h->nr_segments = v->nr_seg;
	h->mem_size = v->mem_size;
	h->entry_offset = v->entry - v->link_paddr;
	h->link_paddr = v->link_paddr;
	h->reloc_layout = k->relocs.layout;
	h->nr_reloc64 = (uint32_t)k->relocs.nr_reloc64;
	h->nr_inverse32 = (uint32_t)k->relocs.nr_inverse32;
	h->nr_reloc32 = (uint32_t)k->relocs.nr_reloc32;
	return rr_stage_sha256(stage, stage_len, h->stage_sha256);
}

/* The segments, each compressed (or stored) at 16-byte alignment from off
 * in the protected-mode part pm of cap bytes: the offset after the last. */
static int store_segments(struct rerand_image_header *h, const struct rr_kernel *k,
			  const struct rr_image_opts *o, struct rr_lz4par *par, uint8_t *pm,
			  size_t cap, size_t *off, const char *name, struct rr_err *e)
{
	const struct rr_vmlinux *v = &k->elf;

	for (unsigned i = 0; i < v->nr_seg; i++) {
		const struct rr_elf_segment *s = &v->seg[i];
		size_t stored;
		int r;

		*off = RR_ALIGN_UP(*off, 16);
		r = compress_segment(o, par, k->payload, s->offset, s->filesz, pm + *off,
				     cap - *off, &stored);
		if (r < 0)
			return rr_errf(e, -r, "%s: cannot compress segment %u", name, i);
		h->seg[i].mem_offset = s->paddr - v->link_paddr;
		h->seg[i].mem_size = s->memsz;
		h->seg[i].file_size = s->filesz;
		h->seg[i].data_offset = *off;
		h->seg[i].data_size = stored;
		*off += stored;
	}
	return 0;
}

/* The relocation lists, in the order the header names them, at 4-byte
 * alignment from off: the offset after them. */
static size_t store_relocs(struct rerand_image_header *h, const struct rr_relocs *rl,
			   uint8_t *pm, size_t off)
{
	off = RR_ALIGN_UP(off, 4);
	h->relocs_offset = off;
	memcpy(pm + off, rl->reloc64, rl->nr_reloc64 * 4);
	off += rl->nr_reloc64 * 4;
	memcpy(pm + off, rl->inverse32, rl->nr_inverse32 * 4);
	off += rl->nr_inverse32 * 4;
	memcpy(pm + off, rl->reloc32, rl->nr_reloc32 * 4);
	return off + rl->nr_reloc32 * 4;
}

int rr_image_build(const struct rr_kernel *k, const uint8_t *stage, size_t stage_len,
		   const struct rr_image_opts *o, uint8_t **ret_buf, size_t *ret_len,
		   const char *name, struct rr_err *e)
{
	const struct rr_vmlinux *v = &k->elf;
	struct rerand_image_header h;
	struct rerand_locator loc;
	size_t nrel = k->relocs.nr_reloc64 + k->relocs.nr_inverse32 + k->relocs.nr_reloc32;
	size_t cap, off, hdr_off, stub_len = (size_t)(rr_efi_stub_end - rr_efi_stub);
	_cleanup_free_ uint8_t *img = NULL;
	uint8_t *pm;
	struct rr_lz4par *par = o->lz4par;
	_cleanup_(rr_lz4par_freep) struct rr_lz4par *own = NULL;
	int r;

	if ((r = check_inputs(k, stage, stage_len, name, e)) < 0)
		return r;
	/* Worst case: every segment stored raw or LZ4-expanded, plus the table. */
	cap = RR_IMAGE_PM_OFFSET + RR_ALIGN_UP(stage_len, RERAND_HDR_ALIGN) + sizeof(h) + nrel * 4 +
	      64 + RR_IMAGE_FILE_ALIGN;
	for (unsigned i = 0; i < v->nr_seg; i++)
		cap += rr_lz4par_bound(v->seg[i].filesz) + 16;
	if (o->codec == RERAND_CODEC_LZ4 && !par &&
	    (r = rr_lz4par_new(o->threads, o->lz4_level, &own)) < 0)
		return rr_errf(e, -r, "%s: out of memory for the LZ4 compressor", name);
	if (!par)
		par = own;
	img = calloc(1, cap);
	if (!img)
		return rr_errf(e, ENOMEM, "%s: out of memory for a %zu-byte image", name, cap);
	rr_mem_thp(img, cap);
	pm = img + RR_IMAGE_PM_OFFSET;

	memcpy(pm, stage, stage_len);
	hdr_off = RR_ALIGN_UP(stage_len, RERAND_HDR_ALIGN);
	if (fill_header(&h, k, stage, stage_len, o) < 0)
		return rr_errf(e, EIO, "%s: cannot hash the stage (libcrypto SHA-256 failed)", name);
	off = hdr_off + sizeof(h);
	if ((r = store_segments(&h, k, o, par, pm, cap - RR_IMAGE_PM_OFFSET, &off, name, e)) < 0)
		return r;
	/* the compressor's threads are done: not kept for the copying below */
	rr_lz4par_free(TAKE_PTR(own));
	off = store_relocs(&h, &k->relocs, pm, off);
	/* Zero padding to the PE file alignment: the one section then ends where
	 * the file does, and a signature is appended right after it. */
	off = RR_ALIGN_UP(off, RR_IMAGE_FILE_ALIGN);
	h.file_size = off;
	h.scratch_offset = RR_ALIGN_UP(off + RR_IMAGE_SIG_ROOM, 4096);
	h.scratch_size = RR_IMAGE_SCRATCH_SIZE;
	if (h.scratch_offset + h.scratch_size > UINT32_MAX)
		return rr_errf(e, EFBIG, "%s: image too large for init_size", name);
	memcpy(pm + hdr_off, &h, sizeof(h));

	memcpy(loc.magic, RERAND_LOCATOR_MAGIC, 8);
	loc.header_offset = (uint32_t)hdr_off;
	loc.stage_size = (uint32_t)stage_len;
	memcpy(pm + RERAND_LOCATOR_OFFSET, &loc, sizeof(loc));
	memcpy(pm + RR_IMAGE_EFI_STUB_OFFSET, rr_efi_stub, stub_len);

	write_pe(img, off);
	write_setup(img, off, (uint32_t)(h.scratch_offset + h.scratch_size), k);
	write_pe_checksum(img, RR_IMAGE_PM_OFFSET + off);
	*ret_buf = TAKE_PTR(img);
	*ret_len = RR_IMAGE_PM_OFFSET + off;
	return 0;
}
