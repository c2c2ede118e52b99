/* SPDX-License-Identifier: GPL-2.0-only */
/* Fuzz rerandd's GRUB readers (daemon/grubcfg.c): the input is a grub.cfg
 * and, after a "\n#ENV\n" line if there is one, a grubenv block.  Any
 * input is refused with a message naming the file, or gives a menu whose
 * every entry is NUL-terminated, whose parents come before it and are
 * submenus, and a choice that is an entry and no submenu.  With
 * RR_FUZZ_MUST_PARSE set (scripts/fuzz-replay.sh, valid-* seeds), a
 * refused grub.cfg aborts. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rerandd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct rr_grub_cfg g;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data, *sep = memmem(data, size, "\n#ENV\n", 6);
	size_t cfg_len = sep ? (size_t)(sep - text) + 1 : size;
	struct rr_grub_env env = { 0 };
	struct rr_grub_choice ch;
	struct rr_err e;
	int r;

	if (sep && grub_env_parse(sep + 6, size - cfg_len - 5, "grubenv", &env, &e) < 0) {
		if (!memchr(e.msg, 0, sizeof(e.msg)) || strncmp(e.msg, "grubenv", 7))
			abort();
		memset(&env, 0, sizeof(env));
	}
	if (!memchr(env.saved_entry, 0, sizeof(env.saved_entry)) ||
	    !memchr(env.next_entry, 0, sizeof(env.next_entry)))
		abort();
	r = grub_cfg_parse(text, cfg_len, "grub.cfg", &g, &e);
	if (r < 0) {
		if (!memchr(e.msg, 0, sizeof(e.msg)) || strncmp(e.msg, "grub.cfg", 8) ||
		    getenv("RR_FUZZ_MUST_PARSE"))
			abort();
		return 0;
	}
	if (g.n > RR_GRUB_ENTRIES)
		abort();
	for (unsigned i = 0; i < g.n; i++) {
		const struct rr_grub_entry *en = &g.ent[i];
		if (!memchr(en->title, 0, sizeof(en->title)) || !memchr(en->id, 0, sizeof(en->id)) ||
		    !memchr(en->linux_path, 0, sizeof(en->linux_path)) ||
		    !memchr(en->initrd, 0, sizeof(en->initrd)) || !memchr(en->loader, 0, sizeof(en->loader)))
			abort();
		if (en->parent >= (int)i || (en->parent >= 0 && !g.ent[en->parent].submenu))
			abort();
		if (!en->nr_initrd != !*en->initrd && !en->unsure && !en->path_var)
			abort();
	}
	if (grub_cfg_pick(&g, &env, "grub.cfg", &ch, &e) == 0) {
		if (ch.entry < 0 || (unsigned)ch.entry >= g.n || g.ent[ch.entry].submenu || !ch.how)
			abort();
	} else if (!memchr(e.msg, 0, sizeof(e.msg)) || strncmp(e.msg, "grub.cfg", 8)) {
		abort();
	}
	return 0;
}
