/* SPDX-License-Identifier: GPL-2.0-only */
/* `rerand entropy --json` on the captured QEMU maps (all three formats)
 * against a brute-force count by this file's own naive readers and scan. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

#define MIB (1ULL << 20)
#define GIB (1ULL << 30)
#define RERAND "build/rerand"
#define MAPS "tests/data/maps"
#define KSIZE 48234496ULL           /* vmlinuz-6.1.0-57-cloud-amd64 in memory */

struct rng_ { unsigned long long s, e; };   /* [s, e) */
struct map { struct rng_ ram[64]; int n; };

/* ---- naive readers: sscanf over whole lines ---------------------------- */

static int read_sysfs(const char *dir, struct map *m)
{
	char p[512], type[64];
	unsigned long long s, e;

	m->n = 0;
	for (int i = 0; i < 64; i++) {
		FILE *f;
		int ok = 1;

		snprintf(p, sizeof(p), "%s/%d/start", dir, i);
		if (!(f = fopen(p, "r")))
			continue;
		ok &= fscanf(f, "%llx", &s) == 1;
		fclose(f);
		snprintf(p, sizeof(p), "%s/%d/end", dir, i);
		if (!(f = fopen(p, "r")))
			return -1;
		ok &= fscanf(f, "%llx", &e) == 1;
		fclose(f);
		snprintf(p, sizeof(p), "%s/%d/type", dir, i);
		if (!(f = fopen(p, "r")) || !fgets(type, sizeof(type), f))
			return -1;
		fclose(f);
		if (!ok)
			return -1;
		if (!strcmp(type, "System RAM\n"))
			m->ram[m->n++] = (struct rng_){ s, e + 1 };
	}
	return m->n ? 0 : -1;
}

static int read_lines(const char *file, struct map *m, int dmesg)
{
	char line[512], type[64];
	unsigned long long s, e;
	FILE *f = fopen(file, "r");

	if (!f)
		return -1;
	m->n = 0;
	while (fgets(line, sizeof(line), f)) {
		const char *p = strstr(line, "BIOS-e820: [mem ");

		if (dmesg && p && sscanf(p, "BIOS-e820: [mem %llx-%llx] %63s", &s, &e, type) == 3 &&
		    !strcmp(type, "usable"))
			m->ram[m->n++] = (struct rng_){ s, e + 1 };
		if (!dmesg && line[0] != ' ' &&
		    sscanf(line, "%llx-%llx : %63[^\n]", &s, &e, type) == 3 && !strcmp(type, "System RAM"))
			m->ram[m->n++] = (struct rng_){ s, e + 1 };
	}
	fclose(f);
	return m->n ? 0 : -1;
}

/* ---- brute force ---------------------------------------------------------- */

/* [a, b) covered by RAM: hop from range to range. */
static int covered(const struct map *m, unsigned long long a, unsigned long long b, unsigned long long lim)
{
	while (a < b) {
		unsigned long long best = a;

		for (int i = 0; i < m->n; i++) {
			unsigned long long e = lim && m->ram[i].e > lim ? lim : m->ram[i].e;
			if (m->ram[i].s <= a && a < e && e > best)
				best = e;
		}
		if (best == a)
			return 0;
		a = best;
	}
	return 1;
}

struct cmd {
	const char *text;
	unsigned long long mem_limit;
	struct rng_ memmap;       /* avoided by memmap=, if e > 0 */
	unsigned huge;
};

static unsigned long long brute(const struct map *m, const struct cmd *c, unsigned long long min,
				unsigned long long size)
{
	struct rng_ av[8];
	int nav = 0;
	unsigned long long n = 0, top = 0, huge = c->huge;

	if (c->memmap.e)
		av[nav++] = c->memmap;
	/* 1 GiB pages: the lowest aligned gigabytes wholly in RAM. */
	for (unsigned long long g = 0; huge && g < (1ULL << 40); g += GIB)
		if (covered(m, g, g + GIB, c->mem_limit)) {
			av[nav++] = (struct rng_){ g, g + GIB };
			huge--;
		}
	for (int i = 0; i < m->n; i++)
		if (m->ram[i].e > top)
			top = m->ram[i].e;
	for (unsigned long long a = min; a + size <= top; a += 2 * MIB) {
		int ok = covered(m, a, a + size, c->mem_limit);

		for (int i = 0; i < nav && ok; i++)
			ok = !(av[i].s < a + size && a < av[i].e);
		n += ok;
	}
	return n;
}

static unsigned long long brute_virt(unsigned long long size)
{
	unsigned long long n = 0;

	for (unsigned long long v = 16 * MIB; v + size <= GIB; v += 2 * MIB)
		n++;
	return n;
}

/* ---- the command ---------------------------------------------------------- */

static char out[8192];

static int run(const char *args)
{
	char cmd[1024];
	FILE *p;
	size_t n;

	snprintf(cmd, sizeof(cmd), RERAND " entropy %s 2>&1", args);
	if (!(p = popen(cmd, "r")))
		return -1;
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = 0;
	return pclose(p);
}

static unsigned long long field(const char *obj, const char *key)
{
	char k[64];
	const char *o = strstr(out, obj), *p;

	snprintf(k, sizeof(k), "\"%s\":", key);
	if (!o || !(p = strstr(o, k)))
		return ~0ULL;
	return strtoull(p + strlen(k), NULL, 10);
}

static void check_map(const char *name, const char *path, const struct map *m, int uefi)
{
	static const struct cmd cmds[] = {
		{ "console=ttyS0", 0, { 0, 0 }, 0 },
		{ "mem=2G", 2 * GIB, { 0, 0 }, 0 },
		{ "memmap=64M\\$0x20000000", 0, { 0x20000000, 0x24000000 }, 0 },
		{ "hugepagesz=1G hugepages=1", 0, { 0, 0 }, 1 },
	};
	unsigned long long size = (KSIZE + 2 * MIB - 1) / (2 * MIB) * (2 * MIB);
	char args[512];

	for (unsigned i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		unsigned long long want = brute(m, &cmds[i], 16 * MIB, size);
		unsigned long long want_stock = uefi ? 1 : brute(m, &cmds[i], 512 * MIB, size);
		int rc;

		snprintf(args, sizeof(args), "--json --size %llu --memmap %s --cmdline \"%s\" --firmware %s",
			 KSIZE, path, cmds[i].text, uefi ? "uefi" : "bios");
		rc = run(args);
		T_OK(rc == 0, "%s [%s]: rerand entropy exits 0", name, cmds[i].text);
		T_EQ_U64(field("\"rerand\"", "phys_slots"), want,
			 "%s [%s]: rerand physical slots = brute force %llu", name, cmds[i].text, want);
		T_EQ_U64(field("\"rerand\"", "virt_slots"), brute_virt(size),
			 "%s [%s]: virtual slots = brute force", name, cmds[i].text);
		T_EQ_U64(field("\"stock\"", "phys_slots"), want_stock,
			 "%s [%s]: stock-rule physical slots = %llu (%s)", name, cmds[i].text,
			 want_stock, uefi ? "UEFI: 1" : "BIOS: from 512 MiB");
	}
}

int main(void)
{
	static const char *const caps[] = {
		"qemu-seabios-1g", "qemu-seabios-3g", "qemu-seabios-6g",
		"qemu-ovmf-1g", "qemu-ovmf-3g", "qemu-ovmf-6g",
	};
	char path[256], name[128];
	struct map m;

	if (access(RERAND, X_OK) < 0) {
		T_OK(0, RERAND " is built");
		return t_done();
	}
	for (unsigned i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		int uefi = strstr(caps[i], "ovmf") != NULL;

		snprintf(path, sizeof(path), MAPS "/%s.memmap", caps[i]);
		snprintf(name, sizeof(name), "%s.memmap", caps[i]);
		T_OK(read_sysfs(path, &m) == 0, "%s: naive reader finds RAM", name);
		check_map(name, path, &m, uefi);
		snprintf(path, sizeof(path), MAPS "/%s.iomem", caps[i]);
		snprintf(name, sizeof(name), "%s.iomem", caps[i]);
		T_OK(read_lines(path, &m, 0) == 0, "%s: naive reader finds RAM", name);
		check_map(name, path, &m, uefi);
		snprintf(path, sizeof(path), MAPS "/%s.dmesg", caps[i]);
		snprintf(name, sizeof(name), "%s.dmesg", caps[i]);
		T_OK(read_lines(path, &m, 1) == 0, "%s: naive reader finds RAM", name);
		check_map(name, path, &m, uefi);
	}

	/* Firmware detection from the dmesg copy itself. */
	run("--json --size 48234496 --cmdline x --memmap " MAPS "/qemu-ovmf-3g.dmesg");
	T_OK(strstr(out, "\"firmware\":\"uefi\"") && field("\"stock\"", "phys_slots") == 1,
	     "OVMF dmesg: UEFI detected from its \"efi: EFI v\" line, stock rule gives 1 slot");
	run("--json --size 48234496 --cmdline x --memmap " MAPS "/qemu-seabios-3g.dmesg");
	T_OK(strstr(out, "\"firmware\":\"bios\"") && field("\"stock\"", "phys_slots") > 1,
	     "SeaBIOS dmesg: BIOS rule, physical slots from 512 MiB");
	/* nokaslr: nothing randomized, for either. */
	run("--json --size 48234496 --cmdline nokaslr --memmap " MAPS "/qemu-seabios-1g.iomem");
	T_OK(strstr(out, "\"phys_randomized\":false,\"virt_randomized\":false") &&
	     strstr(out, "\"total_bits\":0.00"), "nokaslr: 0 bits");

	/* Errors name the file and the line. */
	FILE *f = fopen("/tmp/rerand-test-entropy.iomem", "w");
	if (f) {
		fputs("00000000-00000fff : Reserved\n00001000-0009fbff : System RAM\nnot a line\n", f);
		fclose(f);
	}
	int rc = run("--size 48234496 --cmdline x --memmap /tmp/rerand-test-entropy.iomem");
	T_OK(rc != 0 && strstr(out, "/tmp/rerand-test-entropy.iomem: line 3:"),
	     "malformed /proc/iomem copy: error names the file and line 3");
	f = fopen("/tmp/rerand-test-entropy.iomem", "w");
	if (f) {
		fputs("00000000-00000000 : Reserved\n00000000-00000000 : System RAM\n", f);
		fclose(f);
	}
	rc = run("--size 48234496 --cmdline x --memmap /tmp/rerand-test-entropy.iomem");
	T_OK(rc != 0 && strstr(out, "CAP_SYS_ADMIN"), "unprivileged /proc/iomem copy: says why");
	unlink("/tmp/rerand-test-entropy.iomem");
	rc = run("--size 48234496 --memmap /nonexistent/map");
	T_OK(rc != 0 && strstr(out, "/nonexistent/map"), "missing source: named in the error");
	return t_done();
}
