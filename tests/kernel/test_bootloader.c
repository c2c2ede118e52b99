/* SPDX-License-Identifier: GPL-2.0-only */
/* rerandd on a systemd-boot machine (daemon/bootloader.c): the
 * LoaderEntrySelected variable as efivarfs shows it, type #1 entries as
 * bookworm's kernel-install writes them, type #2 UKIs (a real one from
 * tests/mkuki.sh when RERAND_KERNELS is set), and what stage_plan and
 * `rerand load`'s arguments make of them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rerandd.h"
#include "test.h"

#define MID "4f1c6a0e2b7d4e0c9a3b5d7f1e2c4a6b"

static char top[] = "/tmp/rerand-test-boot-XXXXXX";

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

/* What efivarfs shows: attributes (boot service + runtime access), then
 * the UTF-16LE string with its NUL. */
static int put_var(const char *rel, const char *id)
{
	uint8_t b[600] = { 0x06, 0, 0, 0 };
	size_t n = 4;

	for (const char *p = id; *p && n + 4 < sizeof(b); p++, n += 2) {
		b[n] = (uint8_t)*p;
		b[n + 1] = 0;
	}
	b[n++] = 0;
	b[n++] = 0;
	return put(rel, b, n);
}

static bool has(const struct rr_err *e, const char *s) { return strstr(e->msg, s) != NULL; }

/* A PE32+ with .osrel and .linux sections: the shape rr_uki_probe takes. */
static int put_small_uki(const char *rel)
{
	uint8_t *b = calloc(1, 0x1000);
	uint8_t *opt = b + 0x40 + 24, *sh = opt + 112 + 16 * 8;
	static const char *names[] = { ".osrel", ".linux" };
	int r;

	b[0] = 'M'; b[1] = 'Z';
	b[0x3c] = 0x40;
	memcpy(b + 0x40, "PE\0\0", 4);
	b[0x44] = 0x64; b[0x45] = 0x86;
	b[0x46] = 2;
	b[0x54] = 112 + 16 * 8;
	opt[0] = 0x0b; opt[1] = 0x02;
	opt[60] = 0x00; opt[61] = 0x02;          /* SizeOfHeaders 0x200 */
	opt[108] = 16;
	for (unsigned i = 0; i < 2; i++, sh += 40) {
		memcpy(sh, names[i], strlen(names[i]));
		sh[8] = 0x00; sh[9] = 0x04;            /* VirtualSize 0x400 */
		sh[16] = 0x00; sh[17] = 0x04;          /* SizeOfRawData 0x400 */
		sh[20] = 0x00; sh[21] = (uint8_t)(0x04 + 4 * i);  /* at 0x400, 0x800 */
	}
	memcpy(b + 0x400, "ID=debian\n", 10);
	r = put(rel, b, 0x1000);
	free(b);
	return r;
}

static void config_for(struct rr_config *c)
{
	config_defaults(c);
	snprintf(c->loader_entry_selected, sizeof(c->loader_entry_selected), "%s/efivars/LoaderEntrySelected-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f", top);
	snprintf(c->boot_loader_roots, sizeof(c->boot_loader_roots), "%s/efi %s/boot", top, top);
}

static void parse_checks(void)
{
	struct rr_bls_entry be;
	struct rr_err e = { "" };
	char out[256];
	/* bookworm's /usr/lib/kernel/install.d/90-loaderentry.install */
	static const char type1[] =
		"# Boot Loader Specification type#1 entry\n"
		"# File created by /usr/lib/kernel/install.d/90-loaderentry.install (systemd 252.39-1~deb12u1)\n"
		"title      Debian GNU/Linux 12 (bookworm)\n"
		"version    6.1.0-57-cloud-amd64\n"
		"machine-id " MID "\n"
		"sort-key   debian\n"
		"options    root=UUID=7d5a3c1e-0000-4000-8000-000000000001 ro console=ttyS0\n"
		"linux      /" MID "/6.1.0-57-cloud-amd64/linux\n"
		"initrd     /" MID "/6.1.0-57-cloud-amd64/initrd.img-6.1.0-57-cloud-amd64\n";

	T_OK(bootloader_parse_entry(type1, sizeof(type1) - 1, "e.conf", &be, &e) == 0 &&
	     !strcmp(be.linux_path, "/" MID "/6.1.0-57-cloud-amd64/linux") && be.nr_initrd == 1 &&
	     !strcmp(be.initrd, "/" MID "/6.1.0-57-cloud-amd64/initrd.img-6.1.0-57-cloud-amd64") &&
	     !*be.efi_path, "a kernel-install type #1 entry: linux and initrd %s", e.msg);
	static const char crlf[] = "title x\r\n  linux\t\\EFI\\debian\\vmlinuz \r\ninitrd a\ninitrd /b\n";
	T_OK(bootloader_parse_entry(crlf, sizeof(crlf) - 1, "e.conf", &be, &e) == 0 &&
	     !strcmp(be.linux_path, "/EFI/debian/vmlinuz") && be.nr_initrd == 2 && !strcmp(be.initrd, "/a"),
	     "CRLF, tabs, backslashes, a relative path and two initrd lines: %s", be.linux_path);
	static const char efi[] = "title UKI\nefi /EFI/Linux/debian-6.1.efi\n";
	T_OK(bootloader_parse_entry(efi, sizeof(efi) - 1, "e.conf", &be, &e) == 0 &&
	     !strcmp(be.efi_path, "/EFI/Linux/debian-6.1.efi") && !*be.linux_path, "an efi line");
	static const char none[] = "title Windows\noptions quiet\n";
	T_OK(bootloader_parse_entry(none, sizeof(none) - 1, "w.conf", &be, &e) == -ENOEXEC &&
	     has(&e, "w.conf: no linux or efi line"), "no linux or efi line: %s", e.msg);
	static const char dots[] = "linux /a/../../etc/shadow\n";
	T_OK(bootloader_parse_entry(dots, sizeof(dots) - 1, "d.conf", &be, &e) == -EINVAL &&
	     has(&e, "d.conf:1: \"..\""), "a .. in a path: %s", e.msg);
	static const char nul[] = "title a\nlinux /vm\0linuz\n";
	T_OK(bootloader_parse_entry(nul, sizeof(nul) - 1, "n.conf", &be, &e) == -EINVAL &&
	     has(&e, "n.conf:2: NUL"), "a NUL byte: %s", e.msg);
	static const char empty[] = "linux\n";
	T_OK(bootloader_parse_entry(empty, sizeof(empty) - 1, "x.conf", &be, &e) == -EINVAL &&
	     has(&e, "x.conf:1: empty path"), "a linux line without a path: %s", e.msg);

	T_OK(bootloader_entry_id("Debian-6.1+3-1.conf", out, sizeof(out)) == 0 && !strcmp(out, "debian-6.1.conf"),
	     "entry id: lower case, boot counter dropped (%s)", out);
	T_OK(bootloader_entry_id("a+b.efi", out, sizeof(out)) == 0 && !strcmp(out, "a+b.efi") &&
	     bootloader_entry_id("x+2.efi", out, sizeof(out)) == 0 && !strcmp(out, "x.efi") &&
	     bootloader_entry_id("auto-windows", out, sizeof(out)) < 0,
	     "a '+' that is no counter stays; a name without suffix is no entry");

	uint8_t v[] = { 6, 0, 0, 0, 'a', 0, '.', 0, 'e', 0, 'f', 0, 'i', 0, 0, 0 };
	T_OK(bootloader_efivar_string(v, sizeof(v), out, sizeof(out), "var", &e) == 0 && !strcmp(out, "a.efi"),
	     "efivarfs string: %s", out);
	T_OK(bootloader_efivar_string(v, 5, out, sizeof(out), "var", &e) == -EINVAL && has(&e, "var: 5 bytes"),
	     "too short: %s", e.msg);
	T_OK(bootloader_efivar_string(v, 7, out, sizeof(out), "var", &e) == -EINVAL && has(&e, "odd length"),
	     "odd length: %s", e.msg);
	uint8_t sep[] = { 6, 0, 0, 0, '.', 0, '.', 0, '/', 0, 'x', 0 };
	T_OK(bootloader_efivar_string(sep, sizeof(sep), out, sizeof(out), "var", &e) == -EINVAL &&
	     has(&e, "U+002F"), "a path separator in the id: %s", e.msg);
	uint8_t uni[] = { 6, 0, 0, 0, 'a', 0, 0xe9, 0 };
	T_OK(bootloader_efivar_string(uni, sizeof(uni), out, sizeof(out), "var", &e) == -EINVAL &&
	     has(&e, "U+00E9"), "non-ASCII: %s", e.msg);
	T_OK(bootloader_efivar_string(v, sizeof(v), out, 3, "var", &e) == -ENAMETOOLONG, "longer than the buffer");
}

static void find_checks(void)
{
	struct rr_boot_entry be;
	struct rr_stage_plan p;
	struct rr_load_argv a;
	struct rr_config c;
	struct rr_err e = { "" };
	char want[RR_PATH - 16], cmd[800];
	bool uki_arg = false, initrd_arg = false;

	config_for(&c);
	T_OK(bootloader_find(&c, &be, &e) == 0, "no LoaderEntrySelected: not a systemd-boot boot (0)");

	/* type #1 on the ESP at /efi, as kernel-install lays it out */
	static const char type1[] =
		"title      Debian GNU/Linux 12 (bookworm)\n"
		"version    6.1.0-57-cloud-amd64\n"
		"machine-id " MID "\n"
		"options    root=/dev/vda1 ro\n"
		"linux      /" MID "/6.1.0-57-cloud-amd64/linux\n"
		"initrd     /" MID "/6.1.0-57-cloud-amd64/initrd.img-6.1.0-57-cloud-amd64\n";
	T_OK(puts_("efi/loader/entries/" MID "-6.1.0-57-cloud-amd64+2-1.conf", type1) == 0 &&
	     puts_("efi/loader/entries/" MID "-6.1.0-50-cloud-amd64.conf", "linux /old\n") == 0 &&
	     puts_("efi/" MID "/6.1.0-57-cloud-amd64/linux", "kernel") == 0 &&
	     puts_("efi/" MID "/6.1.0-57-cloud-amd64/initrd.img-6.1.0-57-cloud-amd64", "initrd") == 0 &&
	     put_var("efivars/LoaderEntrySelected-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f",
		     MID "-6.1.0-57-cloud-amd64+3.conf") == 0, "fixtures: an ESP with two type #1 entries");
	snprintf(want, sizeof(want), "%s/efi/" MID "/6.1.0-57-cloud-amd64/linux", top);
	T_OK(bootloader_find(&c, &be, &e) == 1 && !strcmp(be.kernel, want) && !be.uki &&
	     strstr(be.initrd, "/efi/" MID "/6.1.0-57-cloud-amd64/initrd.img-6.1.0-57-cloud-amd64"),
	     "type #1: the selected entry's linux and initrd (counter renamed +3 -> +2-1) %s", e.msg);

	/* its kernel gone */
	snprintf(cmd, sizeof(cmd), "rm -f '%s'", want);
	T_OK(system(cmd) == 0 && bootloader_find(&c, &be, &e) == -ENOENT && has(&e, "its kernel") &&
	     has(&e, want), "type #1 whose kernel is missing: %s", e.msg);

	/* type #2 on XBOOTLDR (/boot): a UKI */
	T_OK(put_small_uki("boot/EFI/Linux/debian-6.1.0-57-cloud-amd64.efi") == 0 &&
	     puts_("boot/EFI/Linux/not-a-uki.efi", "MZ but nothing else") == 0 &&
	     put_var("efivars/LoaderEntrySelected-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f",
		     "debian-6.1.0-57-cloud-amd64.efi") == 0, "fixtures: UKIs in /boot/EFI/Linux");
	snprintf(want, sizeof(want), "%s/boot/EFI/Linux/debian-6.1.0-57-cloud-amd64.efi", top);
	T_OK(bootloader_find(&c, &be, &e) == 1 && !strcmp(be.kernel, want) && be.uki && !*be.initrd,
	     "type #2: the UKI, found under the second root %s", e.msg);
	T_OK(put_var("efivars/LoaderEntrySelected-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f", "Not-A-UKI.efi") == 0 &&
	     bootloader_find(&c, &be, &e) == -ENOEXEC && has(&e, "not a unified kernel image"),
	     "type #2 that is no UKI: %s", e.msg);
	T_OK(put_var("efivars/LoaderEntrySelected-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f", "gone.efi") == 0 &&
	     bootloader_find(&c, &be, &e) == -ENOENT && has(&e, "\"gone.efi\"") && has(&e, "ESP mounted"),
	     "an entry no root holds: %s", e.msg);
	T_OK(put_var("efivars/LoaderEntrySelected-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f", "auto-windows") == 0 &&
	     bootloader_find(&c, &be, &e) == -ENOEXEC && has(&e, "\"auto-windows\" is not a Boot Loader"),
	     "an automatic entry: %s", e.msg);

	/* a path longer than rr_boot_entry holds is an error, not cut short
	 * (a cut path names another file, or none) */
	{
		char deep[420], name[100], rel[600];

		snprintf(deep, sizeof(deep), "deep/%0200d/%0200d", 0, 0);
		snprintf(name, sizeof(name), "long-%080d.efi", 0);
		snprintf(rel, sizeof(rel), "%s/EFI/Linux/%s", deep, name);
		snprintf(c.boot_loader_roots, sizeof(c.boot_loader_roots), "%s/%s", top, deep);
		T_OK(put_small_uki(rel) == 0 &&
		     put_var("efivars/LoaderEntrySelected-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f", name) == 0 &&
		     bootloader_find(&c, &be, &e) == -ENAMETOOLONG,
		     "type #2 whose path is longer than RR_PATH: %s", e.msg);
		snprintf(rel, sizeof(rel), "%s/loader/entries/long.conf", deep);
		snprintf(cmd, sizeof(cmd), "linux /%0100d\n", 0);
		T_OK(puts_(rel, cmd) == 0 &&
		     put_var("efivars/LoaderEntrySelected-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f", "long.conf") == 0 &&
		     bootloader_find(&c, &be, &e) == -ENAMETOOLONG && has(&e, "its kernel's path"),
		     "type #1 whose kernel path is longer than RR_PATH: %s", e.msg);
		config_for(&c);
	}

	/* stage_plan follows the entry; `rerand load` gets --uki and no --initrd */
	T_OK(put_var("efivars/LoaderEntrySelected-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f",
		     "debian-6.1.0-57-cloud-amd64.efi") == 0, "select the UKI again");
	snprintf(c.state_dir, sizeof(c.state_dir), "%s/state", top);
	c.cmdline_set = true;
	snprintf(c.cmdline, sizeof(c.cmdline), "root=/dev/vda1 ro");
	snprintf(c.lockdown_file, sizeof(c.lockdown_file), "%s/none", top);
	snprintf(c.secureboot_file, sizeof(c.secureboot_file), "%s/none", top);
	T_OK(stage_plan(&c, NULL, &p, &e) == 0 && p.uki && !strcmp(p.kernel, want) && !*p.initrd,
	     "stage_plan: the selected UKI, its own initrd %s", e.msg);
	stage_load_argv(&c, &p, false, &a);
	snprintf(cmd, sizeof(cmd), "--uki=%s", want);
	for (int i = 0; a.argv[i]; i++) {
		uki_arg |= !strcmp(a.argv[i], cmd);
		initrd_arg |= !strncmp(a.argv[i], "--initrd", 8);
	}
	T_OK(uki_arg && !initrd_arg, "rerand load gets --uki=%s and no --initrd", want);
	snprintf(c.initrd, sizeof(c.initrd), "%s/boot/EFI/Linux/not-a-uki.efi", top);
	initrd_arg = false;
	T_OK(stage_plan(&c, NULL, &p, &e) == 0 && p.uki && !strcmp(p.initrd, c.initrd), "Initrd= still wins");
	stage_load_argv(&c, &p, false, &a);
	for (int i = 0; a.argv[i]; i++)
		initrd_arg |= !strncmp(a.argv[i], "--initrd=", 9);
	T_OK(initrd_arg, "and is passed beside --uki");
	c.initrd[0] = 0;
	/* Kernel= naming a UKI: --uki too */
	snprintf(c.kernel, sizeof(c.kernel), "%s", want);
	snprintf(c.loader_entry_selected, sizeof(c.loader_entry_selected), "%s/nothing", top);
	T_OK(stage_plan(&c, NULL, &p, &e) == 0 && p.uki, "Kernel= a UKI: p.uki");
	c.kernel[0] = 0;

	/* a real UKI around a real kernel */
	const char *kd = t_kernels_dir();
	if (!kd || access("tests/mkuki.sh", X_OK) || access("/usr/lib/systemd/boot/efi/linuxx64.efi.stub", R_OK)) {
		printf("ok %d # SKIP RERAND_KERNELS, tests/mkuki.sh or the systemd-boot stub missing\n", ++t_run);
		return;
	}
	config_for(&c);
	snprintf(want, sizeof(want), "%s/efi/EFI/Linux/debian-6.1.0-57-cloud-amd64.efi", top);
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/efi/EFI/Linux && tests/mkuki.sh -o %s -k %s/vmlinuz-6.1.0-57-cloud-amd64 "
		 "-c 'root=/dev/vda1 ro' -i /etc/hostname -r /etc/os-release", top, want, kd);
	T_OK(system(cmd) == 0, "tests/mkuki.sh built a UKI from bookworm's stub");
	T_OK(put_var("efivars/LoaderEntrySelected-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f",
		     "debian-6.1.0-57-cloud-amd64.efi") == 0 &&
	     bootloader_find(&c, &be, &e) == 1 && be.uki && !strcmp(be.kernel, want),
	     "the real UKI is found and taken for one (it is on the first root, /efi) %s", e.msg);
}

int main(void)
{
	char cmd[600];

	if (!mkdtemp(top)) {
		T_OK(0, "mkdtemp");
		return t_done();
	}
	parse_checks();
	find_checks();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", top);
	return t_done();
}
