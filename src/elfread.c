/* SPDX-License-Identifier: GPL-2.0-only */
/* Reads the vmlinux ELF with libelf: its PT_LOAD segments, entry point and
 * where its last byte is (the relocation table of a bzImage payload follows). */
#include <errno.h>
#include <string.h>

#include <gelf.h>
#include <libelf.h>

#include "cleanup.h"
#include "kernel.h"

RR_DEFINE_CLEANUP_FUNC(Elf *, elf_end)

/* The kernel lives in the top 2 GiB of the address space and its image must
 * fit below the 1 GiB mark of that window. */
#define RR_KERNEL_MAX_SIZE  ((uint64_t)1 << 30)

static int seg_cmp_paddr(const struct rr_elf_segment *a, const struct rr_elf_segment *b)
{
	return a->paddr < b->paddr ? -1 : a->paddr > b->paddr;
}

static void seg_sort(struct rr_elf_segment *s, unsigned n)
{
	for (unsigned i = 1; i < n; i++)
		for (unsigned j = i; j > 0 && seg_cmp_paddr(&s[j - 1], &s[j]) > 0; j--) {
			struct rr_elf_segment t = s[j];
			s[j] = s[j - 1];
			s[j - 1] = t;
		}
}

static int max_end(uint64_t *end, uint64_t off, uint64_t size, size_t len)
{
	if (off > len || size > len - off)
		return -1;
	if (off + size > *end)
		*end = off + size;
	return 0;
}

/* Checks on the identification bytes before libelf sees them, so that a
 * 32-bit or foreign kernel gets a message saying so. */
static int elf_check_ident(const uint8_t *buf, size_t len, const char *name, struct rr_err *e)
{
	uint16_t machine;

	if (len < EI_NIDENT || memcmp(buf, ELFMAG, SELFMAG) != 0)
		return rr_errf(e, EINVAL, "%s: not an ELF file", name);
	if (buf[EI_CLASS] == ELFCLASS32)
		return rr_errf(e, ENOTSUP, "%s: 32-bit kernel (ELFCLASS32): only x86-64 kernels "
			       "can be re-randomized", name);
	if (buf[EI_CLASS] != ELFCLASS64 || buf[EI_DATA] != ELFDATA2LSB)
		return rr_errf(e, EINVAL, "%s: ELF is not 64-bit little-endian", name);
	if (len < sizeof(Elf64_Ehdr))
		return rr_errf(e, EINVAL, "%s: ELF header is truncated", name);
	machine = (uint16_t)(buf[18] | buf[19] << 8);
	if (machine == EM_386)
		return rr_errf(e, ENOTSUP, "%s: 32-bit kernel (EM_386): only x86-64 kernels "
			       "can be re-randomized", name);
	if (machine != EM_X86_64)
		return rr_errf(e, ENOTSUP, "%s: ELF machine %u is not x86-64", name, machine);
	return 0;
}

static int elf_read_phdrs(Elf *elf, size_t len, const char *name, struct rr_vmlinux *v,
			  uint64_t *end, struct rr_err *e)
{
	size_t phnum;

	if (elf_getphdrnum(elf, &phnum) != 0)
		return rr_errf(e, EINVAL, "%s: bad program headers: %s", name, elf_errmsg(-1));
	for (size_t i = 0; i < phnum; i++) {
		struct rr_elf_segment *s;
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph))
			return rr_errf(e, EINVAL, "%s: program header %zu is unreadable: %s",
				       name, i, elf_errmsg(-1));
		if (ph.p_type != PT_LOAD)
			continue;
		if (v->nr_seg == RR_MAX_ELF_SEGMENTS)
			return rr_errf(e, EINVAL, "%s: more than %d PT_LOAD segments",
				       name, RR_MAX_ELF_SEGMENTS);
		if (ph.p_filesz > ph.p_memsz)
			return rr_errf(e, EINVAL, "%s: segment %zu has p_filesz > p_memsz", name, i);
		if (max_end(end, ph.p_offset, ph.p_filesz, len))
			return rr_errf(e, EINVAL, "%s: segment %zu lies outside the file", name, i);
		if (ph.p_memsz > RR_KERNEL_MAX_SIZE || ph.p_paddr > UINT64_MAX - RR_KERNEL_MAX_SIZE)
			return rr_errf(e, EINVAL, "%s: segment %zu has an impossible size or address",
				       name, i);
		s = &v->seg[v->nr_seg++];
		s->offset = ph.p_offset;
		s->vaddr = ph.p_vaddr;
		s->paddr = ph.p_paddr;
		s->filesz = ph.p_filesz;
		s->memsz = ph.p_memsz;
		s->flags = ph.p_flags;
		if (ph.p_vaddr == 0)
			v->percpu_zero_vaddr = true;
	}
	return 0;
}

static int elf_read_shdrs(Elf *elf, size_t len, const char *name, uint64_t *end,
			  struct rr_err *e)
{
	size_t shnum;

	if (elf_getshdrnum(elf, &shnum) != 0)
		return rr_errf(e, EINVAL, "%s: bad section headers: %s", name, elf_errmsg(-1));
	for (size_t i = 0; i < shnum; i++) {
		Elf_Scn *scn = elf_getscn(elf, i);
		GElf_Shdr sh;

		if (!scn || !gelf_getshdr(scn, &sh))
			return rr_errf(e, EINVAL, "%s: section header %zu is unreadable: %s",
				       name, i, elf_errmsg(-1));
		if (sh.sh_type == SHT_NOBITS || sh.sh_type == SHT_NULL)
			continue;
		if (max_end(end, sh.sh_offset, sh.sh_size, len))
			return rr_errf(e, EINVAL, "%s: section %zu lies outside the file", name, i);
	}
	return 0;
}

/* The section header table, counted from the ELF header itself: libelf
 * quietly reports no sections when the table does not fit, which would
 * hide a truncated file. */
static int read_sections(Elf *elf, const GElf_Ehdr *eh, const uint8_t *buf, size_t len,
			 const char *name, uint64_t *end, struct rr_err *e)
{
	uint64_t shnum = eh->e_shnum;
	size_t lib_shnum = 0;

	if (!eh->e_shoff)
		return 0;
	if (shnum == 0) {
		/* Extended numbering: the count is section 0's sh_size. */
		if (max_end(end, eh->e_shoff, sizeof(Elf64_Shdr), len))
			return rr_errf(e, EINVAL, "%s: section header table lies outside the file", name);
		memcpy(&shnum, buf + eh->e_shoff + 32, sizeof(shnum));
	}
	if (shnum > len || max_end(end, eh->e_shoff, shnum * eh->e_shentsize, len))
		return rr_errf(e, EINVAL, "%s: section header table lies outside the file", name);
	if (elf_getshdrnum(elf, &lib_shnum) != 0 || lib_shnum != shnum)
		return rr_errf(e, EINVAL, "%s: section header table is unreadable", name);
	return elf_read_shdrs(elf, len, name, end, e);
}

/* The loaded kernel's shape from its segments: where it is linked, how
 * much memory it spans (within the kernel's 1 GiB window), and an entry
 * point inside what is loaded. */
static int kernel_span(struct rr_vmlinux *v, uint64_t entry, const char *name, struct rr_err *e)
{
	uint64_t top = 0;
	bool inside = false;

	if (v->nr_seg == 0)
		return rr_errf(e, EINVAL, "%s: ELF has no PT_LOAD segment", name);
	seg_sort(v->seg, v->nr_seg);
	v->link_paddr = v->seg[0].paddr;
	for (unsigned i = 0; i < v->nr_seg; i++) {
		const struct rr_elf_segment *s = &v->seg[i];

		if (i && s->paddr < v->seg[i - 1].paddr + v->seg[i - 1].memsz)
			return rr_errf(e, EINVAL, "%s: PT_LOAD segments overlap in physical memory", name);
		if (s->paddr + s->memsz > top)
			top = s->paddr + s->memsz;
	}
	v->mem_size = top - v->link_paddr;
	if (v->mem_size > RR_KERNEL_MAX_SIZE)
		return rr_errf(e, EINVAL, "%s: image spans %llu bytes, more than the kernel's 1 GiB window",
			       name, (unsigned long long)v->mem_size);
	v->entry = entry;
	for (unsigned i = 0; i < v->nr_seg; i++)
		if (v->entry >= v->seg[i].paddr && v->entry - v->seg[i].paddr < v->seg[i].filesz)
			inside = true;
	if (!inside)
		return rr_errf(e, EINVAL, "%s: entry point is not inside a loaded segment", name);
	return 0;
}

int rr_elf_read(const uint8_t *buf, size_t len, const char *name,
		struct rr_vmlinux *ret, struct rr_err *e)
{
	struct rr_vmlinux v;
	GElf_Ehdr eh;
	uint64_t end = 0;
	_cleanup_(elf_endp) Elf *elf = NULL;
	int r;

	if (!buf)
		return rr_errf(e, EINVAL, "%s: not an ELF file", name);
	r = elf_check_ident(buf, len, name, e);
	if (r < 0)
		return r;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return rr_errf(e, ENOSYS, "%s: libelf is unusable: %s", name, elf_errmsg(-1));
	/* libelf wants a mutable pointer; with native byte order and no
	 * elf_getdata() it only reads (the fuzzers check this). */
	elf = elf_memory((char *)buf, len);
	if (!elf)
		return rr_errf(e, EINVAL, "%s: libelf cannot read it: %s", name, elf_errmsg(-1));

	memset(&v, 0, sizeof(v));
	if (!gelf_getehdr(elf, &eh))
		return rr_errf(e, EINVAL, "%s: bad ELF header: %s", name, elf_errmsg(-1));
	if (eh.e_type != ET_EXEC)
		return rr_errf(e, EINVAL, "%s: ELF type %u is not an executable (ET_EXEC)", name,
			       eh.e_type);
	/* The header tables count as used bytes even when no section covers them. */
	if (max_end(&end, 0, sizeof(Elf64_Ehdr), len) ||
	    max_end(&end, eh.e_phoff, (uint64_t)eh.e_phnum * eh.e_phentsize, len))
		return rr_errf(e, EINVAL, "%s: program header table lies outside the file", name);
	if ((r = elf_read_phdrs(elf, len, name, &v, &end, e)) < 0 ||
	    (r = read_sections(elf, &eh, buf, len, name, &end, e)) < 0 ||
	    (r = kernel_span(&v, eh.e_entry, name, e)) < 0)
		return r;
	v.elf_end = (size_t)end;
	*ret = v;
	return 0;
}

int rr_elf_peek_loads(const uint8_t *buf, size_t len, size_t total,
		      uint64_t off[], uint64_t size[], unsigned max)
{
	GElf_Ehdr eh;
	size_t phnum;
	unsigned n = 0;
	Elf *elf;

	if (len < sizeof(Elf64_Ehdr))
		return 0;
	if (memcmp(buf, ELFMAG, SELFMAG) || buf[EI_CLASS] != ELFCLASS64 ||
	    buf[EI_DATA] != ELFDATA2LSB || elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	elf = elf_memory((char *)buf, len);
	if (!elf)
		return -EINVAL;
	if (!gelf_getehdr(elf, &eh) || eh.e_phentsize != sizeof(Elf64_Phdr)) {
		elf_end(elf);
		return -EINVAL;
	}
	/* libelf does not check the table against the bytes it was given. */
	if (eh.e_phoff > len || (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr) > len - eh.e_phoff) {
		elf_end(elf);
		return eh.e_phoff > total ? -EINVAL : 0;
	}
	if (elf_getphdrnum(elf, &phnum) != 0 || phnum != eh.e_phnum) {
		elf_end(elf);
		return -EINVAL;
	}
	for (size_t i = 0; i < phnum && n < max; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph)) {
			elf_end(elf);
			return -EINVAL;
		}
		if (ph.p_type != PT_LOAD || ph.p_filesz == 0 || ph.p_offset > total ||
		    ph.p_filesz > total - ph.p_offset)
			continue;
		off[n] = ph.p_offset;
		size[n] = ph.p_filesz;
		n++;
	}
	elf_end(elf);
	return n ? (int)n : -ENOENT;
}
