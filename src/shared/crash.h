/* SPDX-License-Identifier: GPL-2.0-only */
/* Crash kernels: keep clear of what the ELF core header describes inside the
 * crash kernel's own RAM (the header itself, a backup region, notes).  Built
 * twice; reads through the same map callback as bootparams.c. */
#ifndef RERAND_CRASH_H
#define RERAND_CRASH_H

#include <stdint.h>
#include "bootparams.h"
#include "select.h"

#define RR_CRASH_MAX_PHDRS 1024

/*
 * Read the ELF64 core header at `addr` and add to m's avoid list: the header
 * with its program headers, and every PT_LOAD or PT_NOTE range that overlaps
 * RAM in m.  Returns the number of ranges added, or -1 when the header cannot
 * be mapped or is not an ELF64 core header (the caller keeps the
 * conservative extent it avoided from the command line).
 */
int rr_crash_avoid(uint64_t addr, rr_phys_map_fn map, void *ctx, struct rr_memmap *m);

#endif
