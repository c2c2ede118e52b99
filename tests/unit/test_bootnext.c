/* SPDX-License-Identifier: GPL-2.0-only */
/* What the boot loader boots next (daemon/grubcfg.c, daemon/bootnext.c):
 * grub.cfg files made by Debian 12's own grub-mkconfig scripts and grubenv
 * blocks made by its grub-editenv (tests/data/grub/mkfixtures.sh), GRUB's
 * rules for a default (number, title, id, "a>b" into a submenu,
 * saved_entry, next_entry), systemd-boot's one-shot and default variables
 * and loader.conf, and what stage_plan makes of them; a one-shot choice
 * (next_entry, LoaderEntryOneShot) as rerandd clears it after a confirmed
 * kexec boot (daemon/oneshot.c), with GRUB's real grub-editenv when it is
 * installed (grub-common) and an immutable file where the file system
 * has the flag, as efivarfs sets it. */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "rerandd.h"
#include "test.h"

#define G "tests/data/grub/"
#define OLD "6.1.0-27-amd64"
#define NEW "6.1.0-28-amd64"

static char top[] = "/tmp/rerand-test-bootnext-XXXXXX";

static int put(const char *rel, const void *data, size_t len)
{
	char p[600], cmd[700];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", top, rel);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", p);
	if (system(cmd) != 0 || !(f = fopen(p, "wb")))
		return -1;
	if (len && fwrite(data, 1, len, f) != len) {
		fclose(f);
		return -1;
	}
	return fclose(f);
}

static int puts_(const char *rel, const char *text) { return put(rel, text, strlen(text)); }

static int put_var(const char *rel, const char *id)
{
	uint8_t b[600] = { 0x07, 0, 0, 0 };
	size_t n = 4;

	for (const char *p = id; *p && n + 4 < sizeof(b); p++, n += 2)
		b[n] = (uint8_t)*p;
	n += 2;
	return put(rel, b, n);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *b = calloc(1, 1 << 20);

	*len = f ? fread(b, 1, (1 << 20) - 1, f) : 0;
	if (f)
		fclose(f);
	return b;
}

static bool has(const struct rr_err *e, const char *s) { return strstr(e->msg, s) != NULL; }

/* The entry GRUB boots for a grub.cfg fixture and a grubenv fixture ("" =
 * none): its title, or "ERR: message". */
static const char *pick(const char *cfg, const char *envf, char *out, size_t size)
{
	struct rr_grub_cfg *g = calloc(1, sizeof(*g));
	struct rr_grub_env env = { 0 };
	struct rr_grub_choice ch;
	struct rr_err e = { 0 };
	size_t len;
	char *text = slurp(cfg, &len);
	int r = grub_cfg_parse(text, len, cfg, g, &e);

	free(text);
	if (r == 0 && *envf) {
		text = slurp(envf, &len);
		r = grub_env_parse(text, len, envf, &env, &e);
		free(text);
	}
	if (r == 0)
		r = grub_cfg_pick(g, &env, cfg, &ch, &e);
	if (r < 0)
		snprintf(out, size, "ERR: %s", e.msg);
	else
		snprintf(out, size, "%s", g->ent[ch.entry].title);
	free(g);
	return out;
}

static const char *pick_text_env(const char *cfg, const char *env, char *out, size_t size)
{
	char b[600], text[1100] = "# GRUB Environment Block\n";

	snprintf(b, sizeof(b), "%s/f.env", top);
	strncat(text, env, sizeof(text) - strlen(text) - 1);
	if (put("f.env", text, strlen(text)))
		return "ERR: write";
	return pick(cfg, b, out, size);
}

static void test_fixtures(void)
{
	char got[1200];
	struct rr_grub_cfg *g = calloc(1, sizeof(*g));
	struct rr_err e;
	size_t len;
	char *text = slurp(G "grub.cfg", &len);

	T_OK(len > 1000 && grub_cfg_parse(text, len, "grub.cfg", g, &e) == 0,
	     "Debian 12's grub.cfg parses");
	T_OK(g->n == 6 && g->ent[1].submenu && g->ent[2].parent == 1 && g->loads_env &&
	     g->uses_next_entry && g->n_default == 1 && !strcmp(g->default_val, "0"),
	     "its menu: 1 entry, a submenu of 4, default 0, next_entry used (n=%u)", g->n);
	T_OK(!strcmp(g->ent[4].id, "gnulinux-" OLD "-advanced-0f3e5a1c-7d2b-4c8e-9a61-3b5d7e9f1a2c") &&
	     !strcmp(g->ent[4].linux_path, "/boot/vmlinuz-" OLD) &&
	     !strcmp(g->ent[4].initrd, "/boot/initrd.img-" OLD) && g->ent[4].nr_initrd == 1 &&
	     !g->ent[4].recovery && g->ent[5].recovery && !g->ent[4].conditional,
	     "an entry's id ($menuentry_id_option), linux and initrd; recovery told apart");
	free(text);
	free(g);

	T_OK(!strcmp(pick(G "grub.cfg", "", got, sizeof(got)), "Debian GNU/Linux"),
	     "GRUB_DEFAULT=0: the first entry (%s)", got);
	T_OK(!strcmp(pick(G "grub.cfg", G "grubenv-empty", got, sizeof(got)), "Debian GNU/Linux"),
	     "an empty grubenv changes nothing (%s)", got);
	T_OK(!strcmp(pick(G "grub-older.cfg", "", got, sizeof(got)),
		     "Debian GNU/Linux, with Linux " OLD),
	     "GRUB_DEFAULT=\"submenu title>entry title\": the older kernel (%s)", got);
	T_OK(!strcmp(pick(G "grub-saved.cfg", G "grubenv-saved-older", got, sizeof(got)),
		     "Debian GNU/Linux, with Linux " OLD),
	     "GRUB_DEFAULT=saved, saved_entry \"id>id\" (grub-set-default): %s", got);
	T_OK(!strcmp(pick(G "grub-saved.cfg", G "grubenv-empty", got, sizeof(got)),
		     "Debian GNU/Linux"),
	     "GRUB_DEFAULT=saved, nothing saved: the first entry (%s)", got);
	T_OK(!strcmp(pick(G "grub.cfg", G "grubenv-next-older", got, sizeof(got)),
		     "Debian GNU/Linux, with Linux " OLD),
	     "next_entry=\"1>2\" (grub-reboot) wins over the default: %s", got);
	T_OK(!strcmp(pick(G "grub-nosub.cfg", "", got, sizeof(got)),
		     "Debian GNU/Linux, with Linux " OLD),
	     "GRUB_DISABLE_SUBMENU=y, GRUB_DEFAULT=2: %s", got);
	T_OK(!strcmp(pick(G "grub-windows.cfg", "", got, sizeof(got)), "Windows 10"),
	     "GRUB_DEFAULT=windows (a 40_custom --id): %s", got);
	T_OK(!strcmp(pick(G "grub-efi.cfg", G "grubenv-next-firmware", got, sizeof(got)),
		     "UEFI Firmware Settings"),
	     "next_entry = a title (30_uefi-firmware's): %s", got);

	/* Debian 13's GRUB 2.12: 25_bli, a firmware entry inside an if */
	T_OK(!strcmp(pick(G "trixie-grub-older.cfg", G "grubenv-empty", got, sizeof(got)),
		     "Debian GNU/Linux, with Linux " OLD),
	     "Debian 13: GRUB_DEFAULT = the older kernel by its submenu path (%s)", got);
	T_OK(!strcmp(pick(G "trixie-grub-saved.cfg", G "grubenv-saved-older", got, sizeof(got)),
		     "Debian GNU/Linux, with Linux " OLD),
	     "Debian 13: GRUB_DEFAULT=saved, grub-set-default's id path (%s)", got);
	T_OK(strstr(pick(G "trixie-grub-older.cfg", G "grubenv-next-firmware", got, sizeof(got)),
		    "exists: it is inside a condition") != NULL,
	     "Debian 13: next_entry = the firmware entry, under `if fwsetup --is-supported`: "
	     "cannot tell (%s)", got);
	T_OK(!strcmp(pick_text_env(G "trixie-grub-older.cfg", "next_entry=windows\n", got, sizeof(got)),
		     "Windows 10"),
	     "Debian 13: an entry after the conditional one, by its id (%s)", got);
}

/* Hand-written shapes: GRUB's rules where the fixtures do not reach. */
static const char *pick_text(const char *cfg, const char *env, char *out, size_t size)
{
	char a[600], b[600];

	snprintf(a, sizeof(a), "%s/t.cfg", top);
	snprintf(b, sizeof(b), "%s/t.env", top);
	if (puts_("t.cfg", cfg) || puts_("t.env", env))
		return "ERR: write";
	return pick(a, *env ? b : "", out, size);
}

#define HDR "load_env\nif [ \"${next_entry}\" ] ; then\n set default=\"${next_entry}\"\nelse\n" \
	    " set default=\"%s\"\nfi\n"
#define ENV(x) "# GRUB Environment Block\n" x "#####\n"

static void test_rules(void)
{
	char got[1200], cfg[2000];
	static const char menu[] =
		"menuentry 'A' --id a { linux /boot/vmlinuz-a }\n"
		"submenu 'S>x' $menuentry_id_option 's' {\n"
		"  menuentry \"B\" --id=b {\n\tlinux /boot/vmlinuz-b\n  }\n"
		"  menuentry 'C' --id c {\n\tlinux /boot/vmlinuz-c\n  }\n"
		"}\n";

	snprintf(cfg, sizeof(cfg), HDR "%s", "0x1>1", menu);
	T_OK(!strcmp(pick_text(cfg, "", got, sizeof(got)), "C"), "a number in any base, then '>' (%s)", got);
	snprintf(cfg, sizeof(cfg), HDR "%s", "S>>x>b", menu);
	T_OK(!strcmp(pick_text(cfg, "", got, sizeof(got)), "B"), "\">>\" is a '>' of a title (%s)", got);
	snprintf(cfg, sizeof(cfg), HDR "%s", "s>c", menu);
	T_OK(!strcmp(pick_text(cfg, "", got, sizeof(got)), "C"), "ids (--id X, --id=X) (%s)", got);
	snprintf(cfg, sizeof(cfg), HDR "%s", "7", menu);
	T_OK(!strcmp(pick_text(cfg, "", got, sizeof(got)), "A"), "out of range: the first, as GRUB (%s)", got);
	snprintf(cfg, sizeof(cfg), HDR "%s", "no such", menu);
	T_OK(!strcmp(pick_text(cfg, "", got, sizeof(got)), "A"), "no such title: the first (%s)", got);
	snprintf(cfg, sizeof(cfg), HDR "%s", "1", menu);
	T_OK(!strncmp(pick_text(cfg, "", got, sizeof(got)), "ERR:", 4) && strstr(got, "submenu"),
	     "a submenu without an entry in it: cannot tell (%s)", got);
	snprintf(cfg, sizeof(cfg), HDR "%s", "${saved_entry}", menu);
	T_OK(!strcmp(pick_text(cfg, ENV("saved_entry=s>b\nprev_saved_entry=0\n"), got, sizeof(got)), "A"),
	     "prev_saved_entry moves back first, as 00_header does (%s)", got);
	T_OK(!strcmp(pick_text(cfg, ENV("saved_entry=\\s>b\n"), got, sizeof(got)), "B"),
	     "grub-editenv's escapes are undone (%s)", got);
	snprintf(cfg, sizeof(cfg), HDR "%s", "$foo", menu);
	T_OK(strstr(pick_text(cfg, "", got, sizeof(got)), "made of variables") != NULL,
	     "a default made of variables: cannot tell (%s)", got);
	snprintf(cfg, sizeof(cfg), HDR "if [ $grub_platform = efi ]; then\nmenuentry 'E' { fwsetup; }\nfi\n%s",
		 "1", menu);
	T_OK(strstr(pick_text(cfg, "", got, sizeof(got)), "under a condition") != NULL,
	     "an entry inside an if before the chosen one: cannot tell (%s)", got);
	snprintf(cfg, sizeof(cfg), HDR "%sif true; then\nmenuentry 'E' { fwsetup; }\nfi\n", "s>c", menu);
	T_OK(!strcmp(pick_text(cfg, "", got, sizeof(got)), "C"), "one after it does not matter (%s)", got);
	snprintf(cfg, sizeof(cfg), HDR "%sset default=1\n", "0", menu);
	T_OK(strstr(pick_text(cfg, "", got, sizeof(got)), "set 2 times") != NULL,
	     "default set twice: cannot tell (%s)", got);
	/* next_entry only counts where grub.cfg uses it */
	T_OK(!strcmp(pick_text("menuentry 'A' { linux /boot/vmlinuz-a; }\nmenuentry 'B' { linux /x; }\n",
			       ENV("next_entry=1\n"), got, sizeof(got)), "A"),
	     "a grub.cfg that never reads next_entry (%s)", got);

	/* bad input: the file and the line named */
	static const struct { const char *cfg, *want; } bad[] = {
		{ "menuentry 'A' {\n linux /v\n", "ends inside a { } block" },
		{ "menuentry 'A {\n}\n", "unterminated ' quote" },
		{ "}\n", ":1: '}' without its '{'" },
		{ "fi\n", ":1: 'fi' without" },
		{ "menuentry 'A'\n{\n}\n", ":1: menuentry without a title" },
		{ "menuentry 'A' {\nmenuentry 'B' {\n}\n}\n", ":2: a menuentry inside a menu entry" },
		{ "if x; then\n", "ends inside a if" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		pick_text(bad[i].cfg, "", got, sizeof(got));
		T_OK(!strncmp(got, "ERR: ", 5) && strstr(got, "t.cfg") && strstr(got, bad[i].want),
		     "refused: %s (%s)", bad[i].want, got);
	}
	T_OK(strstr(pick_text("menuentry 'A' { linux /v; }\n", "saved_entry=0\n", got, sizeof(got)),
		    "not a GRUB environment block") != NULL, "a grubenv without its header (%s)", got);
	T_OK(strstr(pick_text("menuentry 'A' { linux /v; }\n", ENV("junk\n"), got, sizeof(got)),
		    ":2: a line without '='") != NULL, "a grubenv line without '=' (%s)", got);
}

static void cfg_init(struct rr_config *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->boot_dir, sizeof(c->boot_dir), "%s/boot", top);
	snprintf(c->grub_cfg, sizeof(c->grub_cfg), "%s/boot/grub/grub.cfg", top);
	snprintf(c->grub_env, sizeof(c->grub_env), "%s/boot/grub/grubenv", top);
	snprintf(c->loader_entry_selected, sizeof(c->loader_entry_selected),
		 "%s/efivars/LoaderEntrySelected-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f", top);
	snprintf(c->boot_loader_roots, sizeof(c->boot_loader_roots), "%s/efi", top);
	snprintf(c->proc_cmdline, sizeof(c->proc_cmdline), "%s/cmdline", top);
}

static int copy_fixture(const char *fixture, const char *rel)
{
	size_t len;
	char *b = slurp(fixture, &len);
	int r = len ? put(rel, b, len) : -1;

	free(b);
	return r;
}

static void test_find(void)
{
	struct rr_config c;
	struct rr_boot_entry be;
	struct rr_err e;
	char want[700];
	int r;

	cfg_init(&c);
	T_OK(bootnext_find(&c, &be, &e) == 0, "no grub.cfg, no systemd-boot: 0 (as before)");
	T_OK(puts_("boot/vmlinuz-" OLD, "k") == 0 && puts_("boot/initrd.img-" OLD, "i") == 0 &&
	     puts_("boot/vmlinuz-" NEW, "k") == 0 && puts_("boot/initrd.img-" NEW, "i") == 0 &&
	     copy_fixture(G "grub-saved.cfg", "boot/grub/grub.cfg") == 0 &&
	     copy_fixture(G "grubenv-saved-older", "boot/grub/grubenv") == 0, "a GRUB /boot");
	snprintf(want, sizeof(want), "%s/boot/vmlinuz-" OLD, top);
	r = bootnext_find(&c, &be, &e);
	T_OK(r == 1 && !strcmp(be.kernel, want) && strstr(be.initrd, "initrd.img-" OLD) &&
	     strstr(be.id, "saved_entry"), "GRUB's saved entry: %s (%s)", be.kernel, be.id);
	T_OK(copy_fixture(G "grub-bootpart.cfg", "boot/grub/grub.cfg") == 0 &&
	     bootnext_find(&c, &be, &e) == 1 && strstr(be.kernel, "/boot/vmlinuz-" NEW),
	     "a /boot of its own (\"/vmlinuz-X\" in grub.cfg): %s", be.kernel);
	T_OK(copy_fixture(G "grub.cfg", "boot/grub/grub.cfg") == 0 &&
	     copy_fixture(G "grubenv-next-older", "boot/grub/grubenv") == 0 &&
	     bootnext_find(&c, &be, &e) == 1 && !strcmp(be.kernel, want) && strstr(be.id, "next_entry"),
	     "grub-reboot's next_entry: %s", be.kernel);
	T_OK(copy_fixture(G "grub-windows.cfg", "boot/grub/grub.cfg") == 0 &&
	     copy_fixture(G "grubenv-empty", "boot/grub/grubenv") == 0 &&
	     bootnext_find(&c, &be, &e) == -ENOEXEC && has(&e, "\"Windows 10\"") &&
	     has(&e, "chainloader"), "Windows next: refused, why said (%s)", e.msg);
	T_OK(copy_fixture(G "grub-efi.cfg", "boot/grub/grub.cfg") == 0 &&
	     copy_fixture(G "grubenv-next-firmware", "boot/grub/grubenv") == 0 &&
	     bootnext_find(&c, &be, &e) == -ENOEXEC && has(&e, "fwsetup"),
	     "firmware setup next: refused (%s)", e.msg);
	T_OK(copy_fixture(G "grub.cfg", "boot/grub/grub.cfg") == 0 &&
	     put_var("x", "") == 0 &&
	     puts_("boot/grub/grubenv", ENV("next_entry=gnulinux-" OLD "-recovery-0f3e5a1c-7d2b-4c8e-9a61-3b5d7e9f1a2c\n")) == 0,
	     "grub-reboot into a recovery entry (by its id, which is in no submenu path)");
	/* an id of a nested entry alone does not reach into the submenu: GRUB
	 * falls back to the first entry, and so does rerand */
	T_OK(bootnext_find(&c, &be, &e) == 1 && strstr(be.kernel, NEW), "an id without its submenu: the first (%s)", be.kernel);
	T_OK(puts_("boot/grub/grubenv", ENV("next_entry=1>3\n")) == 0 &&
	     bootnext_find(&c, &be, &e) == -ENOEXEC && has(&e, "recovery"),
	     "grub-reboot into recovery mode: refused (%s)", e.msg);
	T_OK(puts_("boot/grub/grubenv", ENV("next_entry=1>2\n")) == 0 && unlink(want) == 0 &&
	     bootnext_find(&c, &be, &e) == -ENOENT && has(&e, "is not there"),
	     "its kernel gone: refused (%s)", e.msg);
	T_OK(puts_("boot/vmlinuz-" OLD, "k") == 0 &&
	     puts_("boot/grub/grub.cfg", "menuentry 'x' { linux /boot/vmlinuz-" OLD "; initrd /boot/a /boot/b; }\n") == 0 &&
	     bootnext_find(&c, &be, &e) == -E2BIG && has(&e, "Initrd="),
	     "two initrds: Initrd= named (%s)", e.msg);
	T_OK(puts_("boot/grub/grub.cfg", "menuentry 'x' { linux /usr/lib/vmlinuz; }\n") == 0 &&
	     bootnext_find(&c, &be, &e) == -ENOEXEC && has(&e, "not in /boot"),
	     "a kernel outside /boot: refused (%s)", e.msg);
	T_OK(puts_("boot/grub/grub.cfg", "menuentry 'x' {\n") == 0 &&
	     bootnext_find(&c, &be, &e) < 0 && has(&e, "grub/grub.cfg"),
	     "a broken grub.cfg: its name in the error (%s)", e.msg);

	/* systemd-boot: takes precedence once it booted this system */
	static const char t1[] = "title Debian\nlinux /" "MID/%s/linux\ninitrd /MID/%s/initrd.img-%s\n";
	char ent[300];
	T_OK(put_var("efivars/LoaderEntrySelected-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f", "mid-" NEW ".conf") == 0,
	     "booted by systemd-boot");
	for (int i = 0; i < 2; i++) {
		const char *v = i ? NEW : OLD;
		char rel[200];
		snprintf(ent, sizeof(ent), t1, v, v, v);
		snprintf(rel, sizeof(rel), "efi/loader/entries/mid-%s.conf", v);
		puts_(rel, ent);
		snprintf(rel, sizeof(rel), "efi/MID/%s/linux", v);
		puts_(rel, "k");
		snprintf(rel, sizeof(rel), "efi/MID/%s/initrd.img-%s", v, v);
		puts_(rel, "i");
	}
	T_OK(bootnext_find(&c, &be, &e) == 1 && strstr(be.kernel, "efi/MID/" NEW "/linux"),
	     "no default: the entry this boot came from (%s)", be.kernel);
	T_OK(puts_("efi/loader/loader.conf", "timeout 3\ndefault mid-*\n") == 0 &&
	     bootnext_find(&c, &be, &e) == 1 && strstr(be.kernel, NEW "/linux"),
	     "loader.conf default glob: the highest version that matches (%s)", be.kernel);
	T_OK(puts_("efi/loader/loader.conf", "default mid-6.1.0-27*\n") == 0 &&
	     bootnext_find(&c, &be, &e) == 1 && strstr(be.kernel, OLD "/linux") &&
	     strstr(be.initrd, "initrd.img-" OLD), "loader.conf default: the older (%s)", be.kernel);
	T_OK(put_var("efivars/LoaderEntryDefault-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f", "mid-" NEW ".conf") == 0 &&
	     bootnext_find(&c, &be, &e) == 1 && strstr(be.kernel, NEW "/linux"),
	     "LoaderEntryDefault (bootctl set-default) over loader.conf (%s)", be.kernel);
	T_OK(put_var("efivars/LoaderEntryOneShot-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f", "mid-" OLD ".conf") == 0 &&
	     bootnext_find(&c, &be, &e) == 1 && strstr(be.kernel, OLD "/linux"),
	     "LoaderEntryOneShot (systemctl reboot --boot-loader-entry=) over both (%s)", be.kernel);
	T_OK(put_var("efivars/LoaderEntryOneShot-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f", "auto-windows") == 0 &&
	     bootnext_find(&c, &be, &e) == -ENOEXEC && has(&e, "LoaderEntryOneShot") &&
	     has(&e, "auto-windows"), "one-shot Windows: refused, named (%s)", e.msg);
	T_OK(put_var("efivars/LoaderEntryOneShot-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f", "gone.conf") == 0 &&
	     bootnext_find(&c, &be, &e) == -ENOENT && has(&e, "gone.conf"),
	     "one-shot entry not found: refused (%s)", e.msg);
	T_OK(put("efivars/LoaderEntryOneShot-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f", "\x07\0\0\0", 4) == 0 &&
	     bootnext_find(&c, &be, &e) == 1 && strstr(be.kernel, NEW "/linux"),
	     "an emptied one-shot variable is unset (%s)", be.kernel);

	/* stage_plan follows the choice; the crash kernel stays this boot's */
	struct rr_stage_plan *p = calloc(1, sizeof(*p));
	unlink(c.loader_entry_selected);
	puts_("cmdline", "root=/dev/vda1 ro quiet\n");
	copy_fixture(G "grub-older.cfg", "boot/grub/grub.cfg");
	copy_fixture(G "grubenv-empty", "boot/grub/grubenv");
	r = stage_plan(&c, NULL, p, &e);
	T_OK(strstr(p->kernel, "vmlinuz-" OLD) && strstr(p->initrd, "initrd.img-" OLD),
	     "stage_plan: GRUB's default, the older kernel (%s; %d %s)", p->kernel, r, r ? e.msg : "");
	copy_fixture(G "grub-windows.cfg", "boot/grub/grub.cfg");
	T_OK(stage_plan(&c, NULL, p, &e) == -ENOEXEC && has(&e, "Windows"),
	     "stage_plan: nothing to stage for Windows (%s)", e.msg);
	free(p);
}

#define ONESHOT_VAR "efivars/LoaderEntryOneShot-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f"

static void test_oneshot(void)
{
	struct rr_config c;
	struct rr_boot_entry be;
	struct rr_err e;
	char path[800], want[800], now[RR_ONESHOT_VALUE], cmd[1200];
	enum rr_oneshot_kind k = RR_OS_SDBOOT;
	int r;

	cfg_init(&c);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s/efivars' '%s/efi' '%s/boot'", top, top, top);
	T_OK(system(cmd) == 0 && puts_("boot/vmlinuz-" OLD, "k") == 0 &&
	     puts_("boot/initrd.img-" OLD, "i") == 0 && puts_("boot/vmlinuz-" NEW, "k") == 0 &&
	     puts_("boot/initrd.img-" NEW, "i") == 0 &&
	     copy_fixture(G "grub.cfg", "boot/grub/grub.cfg") == 0 &&
	     copy_fixture(G "grubenv-next-older", "boot/grub/grubenv") == 0, "a GRUB /boot, next_entry=1>2");
	T_OK(bootnext_find(&c, &be, &e) == 1 && be.oneshot == RR_OS_GRUB &&
	     !strcmp(be.oneshot_value, "1>2"), "grub-reboot's next_entry is a one-shot choice: %s \"%s\"",
	     oneshot_kind_text(be.oneshot), be.oneshot_value);
	oneshot_file(&c, RR_OS_GRUB, path, sizeof(path));
	T_OK(!strcmp(path, c.grub_env), "its file is GrubEnvironment= (%s)", path);
	T_OK(oneshot_still(&c, RR_OS_GRUB, "1>2", now, sizeof(now), &e) == 1, "still \"1>2\"");
	T_OK(oneshot_still(&c, RR_OS_GRUB, "1>0", now, sizeof(now), &e) == 0 && !strcmp(now, "1>2"),
	     "another value written down: not the same, now told (%s)", now);
	if (access("/usr/bin/grub-editenv", X_OK) == 0) {
		/* GRUB's own tool, as rerandd runs it */
		snprintf(cmd, sizeof(cmd), "/usr/bin/grub-editenv '%s' unset next_entry", c.grub_env);
		r = system(cmd);
		struct rr_grub_env env;
		size_t len;
		char *b = slurp(c.grub_env, &len);
		T_OK(r == 0 && oneshot_still(&c, RR_OS_GRUB, "1>2", now, sizeof(now), &e) == 0 && !*now &&
		     grub_env_parse(b, len, c.grub_env, &env, &e) == 0 && !env.has_next &&
		     !strcmp(env.saved_entry, "0") && len == 1024,
		     "grub-editenv unset next_entry: gone, saved_entry kept, the block 1024 bytes (%zu)", len);
		free(b);
		T_OK(bootnext_find(&c, &be, &e) == 1 && be.oneshot == RR_OS_NONE && strstr(be.id, "default"),
		     "then the default, no one-shot (%s)", be.id);
	} else {
		T_OK(1, "grub-editenv unset next_entry # SKIP no /usr/bin/grub-editenv (apt-get install grub-common)");
		T_OK(1, "then the default # SKIP no /usr/bin/grub-editenv");
	}
	T_OK(puts_("boot/grub/grubenv", ENV("saved_entry=0\nnext_entry=\n")) == 0 &&
	     oneshot_still(&c, RR_OS_GRUB, "1>2", now, sizeof(now), &e) == 0 && !*now &&
	     bootnext_find(&c, &be, &e) == 1 && be.oneshot == RR_OS_NONE,
	     "next_entry= as GRUB leaves it (save_env of an empty value): none");
	unlink(c.grub_env);
	T_OK(oneshot_still(&c, RR_OS_GRUB, "1>2", now, sizeof(now), &e) == 0, "no grubenv: not set");

	/* systemd-boot's LoaderEntryOneShot */
	T_OK(put_var("efivars/LoaderEntrySelected-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f", "mid-" NEW ".conf") == 0 &&
	     puts_("efi/loader/entries/mid-" OLD ".conf", "linux /MID/" OLD "/linux\n") == 0 &&
	     puts_("efi/MID/" OLD "/linux", "k") == 0 &&
	     puts_("efi/loader/entries/mid-" NEW ".conf", "linux /MID/" NEW "/linux\n") == 0 &&
	     puts_("efi/MID/" NEW "/linux", "k") == 0 && put_var(ONESHOT_VAR, "mid-" OLD ".conf") == 0,
	     "systemd-boot, LoaderEntryOneShot = the older entry");
	T_OK(bootnext_find(&c, &be, &e) == 1 && be.oneshot == RR_OS_SDBOOT &&
	     !strcmp(be.oneshot_value, "mid-" OLD ".conf") && strstr(be.kernel, OLD),
	     "the one-shot entry is staged and a one-shot choice (%s)", be.oneshot_value);
	snprintf(want, sizeof(want), "%s/" ONESHOT_VAR, top);
	oneshot_file(&c, RR_OS_SDBOOT, path, sizeof(path));
	T_OK(!strcmp(path, want), "its file: beside LoaderEntrySelected (%s)", path);
	T_OK(oneshot_still(&c, RR_OS_SDBOOT, "mid-" OLD ".conf", now, sizeof(now), &e) == 1 &&
	     oneshot_still(&c, RR_OS_SDBOOT, "mid-" NEW ".conf", now, sizeof(now), &e) == 0 &&
	     !strcmp(now, "mid-" OLD ".conf"), "still the same; another value is not (%s)", now);
	/* immutable, as efivarfs makes a variable outside its allow list */
	int fd = open(want, O_RDONLY), fl = 0;
	bool immut = fd >= 0 && ioctl(fd, FS_IOC_GETFLAGS, &fl) == 0 &&
		     (fl |= FS_IMMUTABLE_FL, ioctl(fd, FS_IOC_SETFLAGS, &fl) == 0);
	if (fd >= 0)
		close(fd);
	T_OK(oneshot_delete_efivar(want, &e) == 0 && access(want, F_OK) < 0,
	     "deleted%s (%s)", immut ? ", its immutable flag lifted first" :
	     " (this file system has no immutable flag)", access(want, F_OK) ? "gone" : e.msg);
	T_OK(bootnext_find(&c, &be, &e) == 1 && be.oneshot == RR_OS_NONE && strstr(be.kernel, NEW),
	     "then the entry this boot came from (%s)", be.kernel);
	T_OK(oneshot_delete_efivar(want, &e) == 0, "deleting it again: nothing to do");
	T_OK(put("efivars/LoaderEntryOneShot-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f", "\x07\0\0\0", 4) == 0 &&
	     oneshot_still(&c, RR_OS_SDBOOT, "mid-" OLD ".conf", now, sizeof(now), &e) == 0,
	     "an emptied variable is unset");
	T_OK(oneshot_delete_efivar(top, &e) < 0 && has(&e, top), "a directory: an error naming it (%s)", e.msg);

	/* the state file keeps it across the kexec */
	struct rr_state st, back;
	char buf[16384];
	state_init(&st);
	st.oneshot = RR_OS_GRUB;
	snprintf(st.oneshot_value, sizeof(st.oneshot_value), "Advanced options>Debian, with Linux " OLD);
	snprintf(st.oneshot_note, sizeof(st.oneshot_note), "GRUB next_entry \"1>2\" cleared");
	st.oneshot_note_time = 1765000000;
	r = state_format(&st, buf, sizeof(buf));
	state_init(&back);
	T_OK(r > 0 && state_parse(buf, (size_t)r, &back) == 0 && back.oneshot == RR_OS_GRUB &&
	     !strcmp(back.oneshot_value, st.oneshot_value) && !strcmp(back.oneshot_note, st.oneshot_note) &&
	     back.oneshot_note_time == st.oneshot_note_time, "state file: the one-shot choice and its note kept");
	T_OK(oneshot_kind_parse("systemd-boot", &k) == 0 && k == RR_OS_SDBOOT &&
	     oneshot_kind_parse("lilo", &k) == -EINVAL, "kinds by name; an unknown one refused");
}

int main(void)
{
	char cmd[100];

	if (!mkdtemp(top))
		return 1;
	test_fixtures();
	test_rules();
	test_find();
	test_oneshot();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	if (system(cmd) != 0)
		return 1;
	return t_done();
}
