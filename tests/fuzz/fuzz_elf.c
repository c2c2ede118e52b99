/* SPDX-License-Identifier: GPL-2.0-only */
/* Fuzz target: the vmlinux ELF reader (libelf underneath). */
#include <stdint.h>
#include <string.h>

#include "kernel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rr_vmlinux v;
	struct rr_err e = { "" };
	int r;

	r = rr_elf_read(data, size, "fuzz", &v, &e);
	if (r < 0) {
		if (strncmp(e.msg, "fuzz: ", 6) != 0)
			__builtin_trap();
		return 0;
	}
	/* The promises callers rely on when they copy segments out. */
	if (v.nr_seg == 0 || v.nr_seg > RR_MAX_ELF_SEGMENTS || v.elf_end > size ||
	    v.link_paddr != v.seg[0].paddr || v.mem_size > (1u << 30))
		__builtin_trap();
	for (unsigned i = 0; i < v.nr_seg; i++) {
		const struct rr_elf_segment *s = &v.seg[i];

		if (s->offset > size || s->filesz > size - s->offset || s->filesz > s->memsz ||
		    s->paddr < v.link_paddr || s->paddr - v.link_paddr + s->memsz > v.mem_size)
			__builtin_trap();
		if (i && s->paddr < v.seg[i - 1].paddr + v.seg[i - 1].memsz)
			__builtin_trap();
	}
	return 0;
}
