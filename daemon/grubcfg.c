/* SPDX-License-Identifier: GPL-2.0-only */
/* What GRUB boots next, read from the files grub-mkconfig and grub-editenv
 * write: grub.cfg's menu (entries, submenus, ids, each entry's linux and
 * initrd lines, `set default=`) and grubenv's saved_entry, next_entry and
 * prev_saved_entry; then GRUB's own rules (grub-core/normal/menu.c) for
 * which entry a default names.  Not a GRUB script interpreter: a bounded
 * lexer of its words, quotes and blocks, enough for what grub-mkconfig
 * generates; anything it cannot be sure of (an entry inside an `if`
 * before the chosen one, a default made of variables) is "cannot tell". */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rerandd.h"

#define ENV_MAGIC "# GRUB Environment Block\n"
#define WORD_MAX  1024
#define WORDS_MAX 64
#define DEPTH_MAX 32

static int env_value(const char *k, size_t kn, const char *name)
{
	return kn == strlen(name) && !memcmp(k, name, kn);
}

int grub_env_parse(const char *buf, size_t len, const char *name, struct rr_grub_env *ret,
		   struct rr_err *e)
{
	struct rr_grub_env env = { 0 };
	size_t pos = sizeof(ENV_MAGIC) - 1;
	unsigned line = 1;

	if (len < pos || memcmp(buf, ENV_MAGIC, pos))
		return rr_errf(e, EINVAL, "%s: not a GRUB environment block (no \"# GRUB "
			       "Environment Block\" first line)", name);
	while (pos < len) {
		const char *l = buf + pos;
		size_t k = 0, n = len - pos;
		char val[sizeof(env.saved_entry)], *dst = NULL;
		bool *has = NULL;
		size_t o = 0;

		line++;
		if (*l == '#' || *l == '\n' || *l == 0) {
			/* a comment, the '#' padding, or a blank line */
			const char *nl = memchr(l, '\n', n);
			pos += nl ? (size_t)(nl - l) + 1 : n;
			continue;
		}
		while (k < n && l[k] != '=' && l[k] != '\n')
			k++;
		if (k == n || l[k] != '=')
			return rr_errf(e, EINVAL, "%s:%u: a line without '=': not a GRUB environment "
				       "block", name, line);
		if (env_value(l, k, "saved_entry"))
			dst = env.saved_entry, has = &env.has_saved;
		else if (env_value(l, k, "next_entry"))
			dst = env.next_entry, has = &env.has_next;
		else if (env_value(l, k, "prev_saved_entry"))
			dst = env.prev_saved_entry, has = &env.has_prev;
		/* the value: grub-editenv escapes '\\' and newline with '\\' */
		for (k++; k < n && l[k] != '\n'; k++) {
			char ch = l[k];
			if (ch == 0)
				return rr_errf(e, EINVAL, "%s:%u: NUL byte in a value", name, line);
			if (ch == '\\') {
				if (++k == n)
					return rr_errf(e, EINVAL, "%s:%u: '\\' at the end of the file", name,
						       line);
				ch = l[k];
			}
			if (dst && o + 1 >= sizeof(val))
				return rr_errf(e, ENAMETOOLONG, "%s:%u: value longer than %zu bytes", name,
					       line, sizeof(val) - 1);
			if (dst)
				val[o++] = ch;
		}
		pos += k < n ? k + 1 : k;
		if (dst) {
			val[o] = 0;
			memcpy(dst, val, o + 1);
			*has = true;
		}
	}
	*ret = env;
	return 0;
}

/* ---- grub.cfg's words ------------------------------------------------------ */
struct word {
	char text[WORD_MAX];      /* unquoted; a variable reference kept as written */
	bool var;                 /* holds a '$' outside single quotes */
	bool quoted;              /* "{" in quotes is no block */
};
struct lexer {
	const char *s, *name;
	size_t len, pos;
	unsigned line;
	struct rr_err *e;
};

/* One word at pos, or a separator: 1 word, 0 separator (newline or ';'),
 * 2 end of text; <0 error. */
static int lex_word(struct lexer *lx, struct word *w)
{
	size_t o = 0;
	char q = 0;
	bool any = false;

	w->var = w->quoted = false;
	/* blanks, a line continuation, a comment (only at a word's start) */
	for (;;) {
		if (lx->pos >= lx->len)
			return 2;
		char ch = lx->s[lx->pos];
		if (ch == ' ' || ch == '\t' || ch == '\r') {
			lx->pos++;
		} else if (ch == '\\' && lx->pos + 1 < lx->len && lx->s[lx->pos + 1] == '\n') {
			lx->pos += 2;
			lx->line++;
		} else if (ch == '#') {
			while (lx->pos < lx->len && lx->s[lx->pos] != '\n')
				lx->pos++;
		} else {
			break;
		}
	}
	if (lx->s[lx->pos] == '\n' || lx->s[lx->pos] == ';') {
		if (lx->s[lx->pos++] == '\n')
			lx->line++;
		return 0;
	}
	while (lx->pos < lx->len) {
		char ch = lx->s[lx->pos];

		if (ch == 0)
			return rr_errf(lx->e, EINVAL, "%s:%u: NUL byte: not a GRUB script", lx->name,
				       lx->line);
		if (!q && (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n' || ch == ';'))
			break;
		lx->pos++;
		if (ch == '\n')
			lx->line++;
		if (!q && (ch == '\'' || ch == '"')) {
			q = ch;
			w->quoted = any = true;
			continue;
		}
		if (q && ch == q) {
			q = 0;
			continue;
		}
		if (ch == '\\' && q != '\'') {
			if (lx->pos >= lx->len)
				break;
			ch = lx->s[lx->pos++];
			if (ch == '\n') {
				lx->line++;
				continue;
			}
		} else if (ch == '$' && q != '\'') {
			w->var = true;
		}
		if (o + 1 >= sizeof(w->text))
			return rr_errf(lx->e, E2BIG, "%s:%u: a word longer than %zu bytes", lx->name,
				       lx->line, sizeof(w->text) - 1);
		w->text[o++] = ch;
		any = true;
	}
	if (q)
		return rr_errf(lx->e, EINVAL, "%s:%u: unterminated %c quote", lx->name, lx->line, q);
	w->text[o] = 0;
	return any ? 1 : 0;
}

enum blk { B_COND, B_MENU, B_SUB, B_FUNC, B_BRACE };

struct parse {
	struct lexer lx;
	struct rr_grub_cfg *g;
	enum blk stack[DEPTH_MAX];
	int entry_of[DEPTH_MAX];             /* the entry a B_MENU/B_SUB opened */
	unsigned depth;
	struct word *w;                      /* WORDS_MAX */
	unsigned nw;
	unsigned sline;                      /* the line the statement began on */
};

/* Copy what fits (the callers check lengths where a cut would matter). */
static void copy(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src, size - 1);

	memcpy(dst, src, n);
	dst[n] = 0;
}

static bool is(const struct word *w, const char *s) { return !w->quoted && !strcmp(w->text, s); }

static bool any_of(const char *s, const char *const *list)
{
	for (; *list; list++)
		if (!strcmp(s, *list))
			return true;
	return false;
}

/* The innermost entry being defined (B_MENU), and whether an `if`, a loop
 * or a function stands between it and the statement. */
static int open_entry(const struct parse *p, bool *cond)
{
	*cond = false;
	for (unsigned i = p->depth; i-- > 0;) {
		if (p->stack[i] == B_MENU)
			return p->entry_of[i];
		if (p->stack[i] == B_SUB)
			return -1;
		*cond = true;
	}
	return -1;
}

static int push(struct parse *p, enum blk b, int entry)
{
	if (p->depth == DEPTH_MAX)
		return rr_errf(p->lx.e, E2BIG, "%s:%u: blocks nested deeper than %d", p->lx.name,
			       p->sline, DEPTH_MAX);
	p->entry_of[p->depth] = entry;
	p->stack[p->depth++] = b;
	return 0;
}

static int new_entry(struct parse *p, const struct word *w, unsigned nw, bool sub)
{
	struct rr_grub_cfg *g = p->g;
	struct rr_grub_entry *en;
	int parent = -1;
	bool cond = false;

	for (unsigned i = p->depth; i-- > 0;) {
		if (p->stack[i] == B_MENU)
			return rr_errf(p->lx.e, EINVAL, "%s:%u: a %s inside a menu entry", p->lx.name,
				       p->sline, w[0].text);
		if (p->stack[i] == B_SUB) {
			parent = p->entry_of[i];
			break;
		}
		cond = true;          /* only there if the condition holds (or is called) */
	}
	if (nw < 3 || !is(&w[nw - 1], "{"))
		return rr_errf(p->lx.e, EINVAL, "%s:%u: %s without a title and a '{' on its line",
			       p->lx.name, p->sline, w[0].text);
	if (g->n == RR_GRUB_ENTRIES)
		return rr_errf(p->lx.e, E2BIG, "%s:%u: more than %d menu entries", p->lx.name,
			       p->sline, RR_GRUB_ENTRIES);
	en = &g->ent[g->n];
	memset(en, 0, sizeof(*en));
	en->parent = parent;
	en->submenu = sub;
	en->conditional = cond || (parent >= 0 && g->ent[parent].conditional);
	en->title_var = w[1].var;
	copy(en->title, sizeof(en->title), w[1].text);
	for (unsigned i = 2; i < nw - 1; i++) {
		const char *t = w[i].text;
		if ((is(&w[i], "--id") || !strcmp(t, "$menuentry_id_option") ||
		     !strcmp(t, "${menuentry_id_option}")) && i + 1 < nw - 1) {
			copy(en->id, sizeof(en->id), w[i + 1].text);
			en->title_var |= strlen(w[i + 1].text) >= sizeof(en->id);
			i++;
		} else if (!strncmp(t, "--id=", 5)) {
			copy(en->id, sizeof(en->id), t + 5);
			en->title_var |= strlen(t + 5) >= sizeof(en->id);
		}
	}
	if (strlen(w[1].text) >= sizeof(en->title))
		return rr_errf(p->lx.e, ENAMETOOLONG, "%s:%u: a title longer than %zu bytes",
			       p->lx.name, p->sline, sizeof(en->title) - 1);
	return push(p, sub ? B_SUB : B_MENU, (int)g->n++);
}

/* grub.cfg gives GRUB paths: "/boot/vmlinuz-X" on the root file system,
 * "/vmlinuz-X" on a /boot of its own, "(hd0,1)/..." on a named device. */
static void entry_path(char *out, size_t size, const char *t)
{
	if (*t == '(' && strchr(t, ')'))
		t = strchr(t, ')') + 1;
	copy(out, size, t);
}

static void in_entry(struct parse *p, int idx, bool cond, const struct word *w, unsigned nw)
{
	static const char *const linux_cmds[] = { "linux", "linuxefi", "linux16", NULL };
	static const char *const initrd_cmds[] = { "initrd", "initrdefi", "initrd16", NULL };
	static const char *const other_loaders[] = {
		"chainloader", "fwsetup", "multiboot", "multiboot2", "kfreebsd", "knetbsd",
		"kopenbsd", "appleloader", "xnu_kernel", "xnu_kernel64", "configfile",
		"legacy_configfile", "halt", "reboot", "ntldr", "truecrypt", "plan9", NULL };
	struct rr_grub_entry *en = &p->g->ent[idx];

	if (any_of(w[0].text, linux_cmds)) {
		if (*en->loader || cond) {
			en->unsure = true;         /* two kernels, or one only if ... */
			return;
		}
		snprintf(en->loader, sizeof(en->loader), "linux");
		if (nw < 2) {
			en->unsure = true;
			return;
		}
		entry_path(en->linux_path, sizeof(en->linux_path), w[1].text);
		en->path_var |= w[1].var || strlen(w[1].text) >= sizeof(en->linux_path);
		for (unsigned i = 2; i < nw; i++)
			if (!strcmp(w[i].text, "single") || !strcmp(w[i].text, "recovery") ||
			    !strcmp(w[i].text, "emergency") || !strncmp(w[i].text, "systemd.unit=", 13))
				en->recovery = true;
	} else if (any_of(w[0].text, initrd_cmds)) {
		if (cond || en->nr_initrd) {
			en->unsure = true;
			return;
		}
		en->nr_initrd = nw - 1;
		if (nw > 1) {
			entry_path(en->initrd, sizeof(en->initrd), w[1].text);
			en->path_var |= w[1].var || strlen(w[1].text) >= sizeof(en->initrd);
		}
	} else if (any_of(w[0].text, other_loaders) && !*en->loader) {
		copy(en->loader, sizeof(en->loader), w[0].text);
	}
}

static bool named_default(const struct word *w, const char **val)
{
	if (strncmp(w->text, "default=", 8))
		return false;
	*val = w->text + 8;
	return true;
}

static int statement(struct parse *p)
{
	struct rr_grub_cfg *g = p->g;
	const struct word *w = p->w;
	unsigned nw = p->nw, menus = 0;
	const char *val;
	bool cond;
	int idx;

	/* `then insmod x`, `else`, `do`: the keyword opens no statement */
	while (nw && (is(w, "then") || is(w, "else") || is(w, "do"))) {
		w++;
		nw--;
	}
	if (!nw)
		return 0;
	for (unsigned i = 0; i < p->depth; i++)
		menus += p->stack[i] == B_MENU || p->stack[i] == B_SUB || p->stack[i] == B_FUNC;
	if (is(&w[0], "if") || is(&w[0], "while") || is(&w[0], "until") || is(&w[0], "for"))
		return push(p, B_COND, -1);
	if (is(&w[0], "fi") || is(&w[0], "done")) {
		if (!p->depth || p->stack[p->depth - 1] != B_COND)
			return rr_errf(p->lx.e, EINVAL, "%s:%u: '%s' without its if, for or while",
				       p->lx.name, p->sline, w[0].text);
		p->depth--;
		return 0;
	}
	if (is(&w[0], "menuentry") || is(&w[0], "submenu"))
		return new_entry(p, w, nw, w[0].text[0] == 's');
	if (is(&w[0], "function"))
		return push(p, B_FUNC, -1);
	if (is(&w[nw - 1], "{"))
		return push(p, B_BRACE, -1);
	if ((idx = open_entry(p, &cond)) >= 0) {
		in_entry(p, idx, cond, w, nw);
		return 0;
	}
	if (menus)
		return 0;          /* a submenu's or a function's own settings */
	if (is(&w[0], "load_env"))
		g->loads_env = true;
	if ((is(&w[0], "set") && nw > 1 && named_default(&w[1], &val)) || named_default(&w[0], &val)) {
		if (!strcmp(val, "${next_entry}") || !strcmp(val, "$next_entry")) {
			g->uses_next_entry = true;
		} else {
			g->n_default++;
			g->default_var = w[is(&w[0], "set") ? 1 : 0].var;
			g->default_saved = !strcmp(val, "${saved_entry}") || !strcmp(val, "$saved_entry");
			copy(g->default_val, sizeof(g->default_val), val);
			g->default_var |= strlen(val) >= sizeof(g->default_val);
		}
	}
	return 0;
}

int grub_cfg_parse(const char *text, size_t len, const char *name, struct rr_grub_cfg *g,
		   struct rr_err *e)
{
	struct parse p = { .lx = { text, name, len, 0, 1, e }, .g = g };
	struct word *words = calloc(WORDS_MAX, sizeof(*words));
	int r = 0;

	if (!words)
		return rr_errf(e, ENOMEM, "%s: out of memory", name);
	memset(g, 0, offsetof(struct rr_grub_cfg, ent));
	g->n = 0;
	p.w = words;
	for (;;) {
		struct word *w = &words[p.nw < WORDS_MAX ? p.nw : WORDS_MAX - 1];
		int k = lex_word(&p.lx, w);

		if (k < 0) {
			r = k;
			break;
		}
		if (k == 1 && is(w, "}")) {
			/* closes a block: the statement before it ends too */
			if ((r = statement(&p)) < 0)
				break;
			p.nw = 0;
			if (!p.depth || p.stack[p.depth - 1] == B_COND) {
				r = rr_errf(e, EINVAL, "%s:%u: '}' without its '{'", name, p.lx.line);
				break;
			}
			p.depth--;
			continue;
		}
		if (k == 1) {
			if (!p.nw)
				p.sline = p.lx.line;
			if (p.nw == WORDS_MAX) {
				r = rr_errf(e, E2BIG, "%s:%u: a command of more than %d words", name,
					    p.lx.line, WORDS_MAX);
				break;
			}
			p.nw++;
			if (!is(w, "{"))
				continue;
		}
		/* a separator, a '{' (opens a block: a statement of its own), the end */
		if ((r = statement(&p)) < 0)
			break;
		p.nw = 0;
		if (k == 2)
			break;
	}
	if (r == 0 && p.depth)
		r = rr_errf(e, EINVAL, "%s: ends inside a %s", name,
			    p.stack[p.depth - 1] == B_COND ? "if, for or while" : "{ } block");
	free(words);
	return r;
}

/* GRUB's menuentry_eq(): a default's part up to a '>' (">>" is a '>' of
 * the title) against a title or an id. */
static bool entry_eq(const char *id, const char *spec)
{
	for (;;) {
		if (*spec == '>' && spec[1] != '>')
			return *id == 0;
		if (*spec == '>')
			spec++;
		if (*id != *spec)
			return false;
		if (!*id)
			return true;
		id++;
		spec++;
	}
}

/* What follows the first part of a default: "1>2" -> "2", NULL if none. */
static const char *spec_rest(const char *spec)
{
	for (; *spec; spec++) {
		if (*spec == '>' && spec[1] == '>')
			spec++;
		else if (*spec == '>')
			return spec + 1;
	}
	return NULL;
}

static int resolve(const struct rr_grub_cfg *g, const char *spec, int parent, const char *shown,
		   const char *name, struct rr_err *e)
{
	int list[RR_GRUB_ENTRIES], n = 0, pick = -1;
	const char *rest;

	for (unsigned i = 0; i < g->n; i++)
		if (g->ent[i].parent == parent)
			list[n++] = (int)i;
	if (!n)
		return rr_errf(e, ENOENT, "%s: %s has no menu entries", name,
			       parent < 0 ? "the menu" : g->ent[parent].title);
	if (isdigit((unsigned char)*spec)) {
		/* grub_strtoul(default, 0, 0): its leading number, any base */
		char *end;
		unsigned long v = strtoul(spec, &end, 0);
		pick = v < (unsigned long)n ? (int)v : 0;   /* out of range: GRUB boots the first */
		for (int i = 0; i <= pick; i++)
			if (g->ent[list[i]].conditional)
				return rr_errf(e, EAGAIN, "%s: cannot tell which entry \"%s\" is: menu "
					       "entry \"%s\" before it exists only under a condition",
					       name, shown, g->ent[list[i]].title);
	} else {
		for (int i = 0; i < n && pick < 0; i++) {
			const struct rr_grub_entry *en = &g->ent[list[i]];
			if (en->title_var)
				return rr_errf(e, EAGAIN, "%s: cannot tell which entry \"%s\" is: the title "
					       "of an entry before it is made of variables", name, shown);
			if (entry_eq(en->title, spec) || (*en->id && entry_eq(en->id, spec)))
				pick = i;
		}
		if (pick < 0)
			pick = 0;                   /* no such entry: GRUB boots the first */
		if (g->ent[list[pick]].conditional)
			return rr_errf(e, EAGAIN, "%s: cannot tell whether entry \"%s\" exists: it is "
				       "inside a condition", name, g->ent[list[pick]].title);
	}
	if (!g->ent[list[pick]].submenu)
		return list[pick];
	if (!(rest = spec_rest(spec)))
		return rr_errf(e, EAGAIN, "%s: the default \"%s\" names the submenu \"%s\", not an "
			       "entry in it", name, shown, g->ent[list[pick]].title);
	return resolve(g, rest, list[pick], shown, name, e);
}

int grub_cfg_pick(const struct rr_grub_cfg *g, const struct rr_grub_env *env, const char *name,
		  struct rr_grub_choice *ret, struct rr_err *e)
{
	struct rr_grub_choice c = { 0 };
	const struct rr_grub_env none = { 0 };
	int r;

	if (!g->loads_env)
		env = &none;             /* GRUB never reads grubenv then */
	if (g->uses_next_entry && *env->next_entry) {
		snprintf(c.spec, sizeof(c.spec), "%s", env->next_entry);
		c.how = "next_entry, for one boot (grub-reboot)";
		c.oneshot = true;
	} else if (g->n_default > 1) {
		return rr_errf(e, EAGAIN, "%s: cannot tell the default: it is set %u times", name,
			       g->n_default);
	} else if (g->n_default && g->default_saved) {
		/* 00_header moves a grub-reboot of GRUB legacy's kind back first */
		snprintf(c.spec, sizeof(c.spec), "%s",
			 *env->prev_saved_entry ? env->prev_saved_entry : env->saved_entry);
		c.how = "saved_entry (GRUB_DEFAULT=saved, grub-set-default)";
	} else if (g->n_default && g->default_var) {
		return rr_errf(e, EAGAIN, "%s: cannot tell the default \"%s\": made of variables",
			       name, g->default_val);
	} else {
		snprintf(c.spec, sizeof(c.spec), "%s", g->n_default ? g->default_val : "0");
		c.how = "default (GRUB_DEFAULT)";
	}
	r = resolve(g, c.spec, -1, c.spec, name, e);
	if (r < 0)
		return r;
	c.entry = r;
	*ret = c;
	return 0;
}
