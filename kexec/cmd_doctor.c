/* SPDX-License-Identifier: GPL-2.0-only */
/* `rerand doctor`: one preflight, in the spirit of `kdump-config test` and
 * `bootctl status` (issue 38, point 6).  Each line says ok, warn or fail
 * with the fix; --json one object; exit 1 on any fail.  What it reads:
 * the kernel (/sys, /proc, /boot/config-RELEASE), systemd's version,
 * kdump-tools, and rerandd's own status (which knows the configuration:
 * staging, signing, windows, the fleet).  It never prints an address.
 * RERAND_DOCTOR_ROOT prefixes every file it reads (tests). */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "cli.h"
#include "cmdtab.h"
#include "ctl.h"
#include "doctor.h"
#include "jsonout.h"

static const char *const level_names[] = { "ok", "info", "warn", "fail" };

void say(struct doctor *d, enum level l, const char *name, const char *fix,
	 const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (l > d->worst)
		d->worst = l;
	if (d->json) {
		struct json_object *o = json_object_new_object();
		rr_json_add_str(o, "check", name);
		rr_json_add_str(o, "result", level_names[l]);
		rr_json_add_str(o, "message", msg);
		rr_json_add_str(o, "fix", fix ? fix : "");
		json_object_array_add(d->checks, o);
		return;
	}
	printf("%-4s  %-14s %s\n", level_names[l], name, msg);
	if (fix && l >= L_WARN)
		printf("      %-14s fix: %s\n", "", fix);
}

/* The first line of ROOT/PATH, without its newline; false if unreadable. */
bool read_line(const struct doctor *d, const char *path, char *buf, size_t len)
{
	char full[1024];
	_cleanup_fclose_ FILE *f = NULL;

	snprintf(full, sizeof(full), "%s%s", d->root, path);
	*buf = 0;
	if (!(f = fopen(full, "re")) || !fgets(buf, (int)len, f))
		return false;
	buf[strcspn(buf, "\n")] = 0;
	return true;
}

bool exists(const struct doctor *d, const char *path)
{
	char full[1024];
	struct stat st;

	snprintf(full, sizeof(full), "%s%s", d->root, path);
	return lstat(full, &st) == 0;
}

/* CONFIG_NAME in /boot/config-RELEASE: 'y', 'm', 'n' (not set), or 0 when
 * the file cannot be read. */
static char kconfig(const struct doctor *d, const char *name)
{
	char path[1024], line[512];
	size_t n = strlen(name);
	_cleanup_fclose_ FILE *f = NULL;
	char v = 0;

	snprintf(path, sizeof(path), "%s/boot/config-%s", d->root, d->release);
	if (!(f = fopen(path, "re")))
		return 0;
	v = 'n';
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, name, n) && line[n] == '=')
			v = line[n + 1];
	return v;
}

/* A word of the running kernel's command line ("nokaslr", "watchdog.stop_on_reboot=0"). */
bool cmdline_has(const struct doctor *d, const char *word)
{
	char line[4096], *p, *save = NULL;

	if (!read_line(d, "/proc/cmdline", line, sizeof(line)))
		return false;
	for (p = strtok_r(line, " \t", &save); p; p = strtok_r(NULL, " \t", &save))
		if (!strcmp(p, word))
			return true;
	return false;
}

const char *js_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static int js_bool(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_boolean))
		return -1;
	return json_object_get_boolean(v);
}

static void check_kernel(struct doctor *d)
{
	char c;

	if (exists(d, "/sys/kernel/kexec_loaded"))
		say(d, L_OK, "kexec", NULL, "the kernel supports kexec (%s)", d->release);
	else
		say(d, L_FAIL, "kexec", "boot a kernel built with CONFIG_KEXEC",
		    "/sys/kernel/kexec_loaded is missing: this kernel has no kexec");
	c = kconfig(d, "CONFIG_KEXEC_FILE");
	if (c == 'y')
		say(d, L_OK, "kexec_file", NULL, "kexec_file_load is built in (signed images, lockdown)");
	else if (c)
		say(d, L_WARN, "kexec_file", "a kernel with CONFIG_KEXEC_FILE=y",
		    "no kexec_file_load: under lockdown nothing can be loaded");
	else
		say(d, L_WARN, "kexec_file", "install the kernel's config (/boot/config-RELEASE)",
		    "/boot/config-%s is missing: kexec_file_load support not known", d->release);
	c = kconfig(d, "CONFIG_RANDOMIZE_BASE");
	if (c == 'y' && kconfig(d, "CONFIG_RELOCATABLE") == 'y')
		say(d, L_OK, "randomize_base", NULL, "the kernel is relocatable (RANDOMIZE_BASE)");
	else if (c)
		say(d, L_FAIL, "randomize_base", "a kernel with CONFIG_RANDOMIZE_BASE=y and RELOCATABLE=y",
		    "the kernel cannot be placed at a random base");
	else
		say(d, L_WARN, "randomize_base", "install the kernel's config (/boot/config-RELEASE)",
		    "RANDOMIZE_BASE not known (no /boot/config-%s)", d->release);
	if (cmdline_has(d, "nokaslr"))
		say(d, L_WARN, "nokaslr", "drop nokaslr from the boot loader's command line",
		    "this boot runs with nokaslr (rerandd never stages it, but the firmware "
		    "boot has a fixed layout)");
}

static void check_lockdown(struct doctor *d)
{
	char line[256];
	const char *mode = "unknown";

	if (read_line(d, "/sys/kernel/security/lockdown", line, sizeof(line)))
		mode = strstr(line, "[none]") ? "none" :
		       strstr(line, "[integrity]") ? "integrity" :
		       strstr(line, "[confidentiality]") ? "confidentiality" : "unknown";
	if (!strcmp(mode, "unknown")) {
		say(d, L_INFO, "lockdown", NULL, "lockdown not known (no readable "
		    "/sys/kernel/security/lockdown): none assumed");
		return;
	}
	if (!strcmp(mode, "none")) {
		say(d, L_OK, "lockdown", NULL, "lockdown none: any image can be loaded");
		return;
	}
	/* what rerandd found: it knows SignKey= and SignedImageDirectory= */
	const char *signer = js_str(d->status, "signer");
	if (!d->status)
		say(d, L_WARN, "lockdown", "start rerandd (systemctl start rerandd)",
		    "lockdown %s: only signed images load, and rerandd cannot be asked how it signs",
		    mode);
	else if (signer && *signer)
		say(d, L_OK, "lockdown", NULL, "lockdown %s: the staged image is signed", mode);
	else
		say(d, L_FAIL, "lockdown", "set [Stage] SignKey= (with the db or MOK key) or "
		    "SignedImageDirectory= (see /usr/share/doc/rerand/secure-boot.md)",
		    "lockdown %s: only signed images load, and no signed image is staged", mode);
}

static void check_crash(struct doctor *d)
{
	char v[64];
	unsigned long long size = 0;
	/* Debian's kdump-tools.service is WantedBy=basic.target, Fedora's
	 * kdump.service WantedBy=multi-user.target: either place counts */
	bool kdump_tools = exists(d, "/etc/systemd/system/basic.target.wants/kdump-tools.service") ||
			   exists(d, "/etc/systemd/system/multi-user.target.wants/kdump-tools.service");
	bool kdumpctl = exists(d, "/etc/systemd/system/multi-user.target.wants/kdump.service") ||
			exists(d, "/etc/systemd/system/basic.target.wants/kdump.service");

	if (read_line(d, "/sys/kernel/kexec_crash_size", v, sizeof(v)))
		size = strtoull(v, NULL, 10);
	if (!size) {
		say(d, L_INFO, "crash", "boot with crashkernel=256M for a rerandomizing crash kernel",
		    "no crashkernel= memory: no crash (kdump) kernel");
		return;
	}
	if (kdump_tools || kdumpctl)
		say(d, L_INFO, "crash", NULL, "crash region %llu MiB; %s is enabled: rerandd leaves "
		    "the crash kernel to it", size >> 20, kdump_tools ? "kdump-tools" : "kdumpctl");
	else
		say(d, L_OK, "crash", NULL, "crash region %llu MiB: rerandd loads a rerandomizing "
		    "crash kernel ([Crash] Mode=auto)", size >> 20);
}

static void check_systemd(struct doctor *d)
{
	_cleanup_(pclosep) FILE *p = NULL;
	char line[256] = "";
	int v = 0;

	if (*d->root) {
		read_line(d, "/systemd-version", line, sizeof(line));
	} else if ((p = popen("systemctl --version 2>/dev/null", "re"))) {
		if (!fgets(line, sizeof(line), p))
			line[0] = 0;
	}
	if (sscanf(line, "systemd %d", &v) != 1) {
		say(d, L_INFO, "auto-kexec", NULL, "systemd's version not known");
		return;
	}
	if (v >= 255)
		say(d, L_INFO, "auto-kexec", NULL, "systemd %d: every reboot kexecs into what is "
		    "loaded; rerandd keeps its image loaded only while a rerandomization is wanted, "
		    "and watches such a reboot as its own ([Reboot] RerandomizeOtherReboots=)", v);
	else
		say(d, L_INFO, "auto-kexec", NULL, "systemd %d: systemctl reboot goes through the "
		    "firmware; only rerandd's own reboots kexec", v);
}

static void check_daemon(struct doctor *d)
{
	const char *s, *why;
	struct json_object *f;
	int b;

	if (!d->status) {
		say(d, L_FAIL, "rerandd", "systemctl enable --now rerandd",
		    "rerandd cannot be asked: %s", d->status_err);
		return;
	}
	say(d, L_OK, "rerandd", NULL, "running, version %s",
	    (s = js_str(d->status, "daemon_version")) ? s : "unknown");
	s = js_str(d->status, "verify");
	if (s && !strcmp(s, "randomized"))
		say(d, L_OK, "this-boot", NULL, "randomized by rerand");
	else if (s && !strcmp(s, "weak"))
		say(d, L_WARN, "this-boot", "see rerand verify; rerandd plans a new layout",
		    "randomized from the TSC alone (weak)");
	else
		say(d, L_INFO, "this-boot", NULL, "not a rerand boot (%s): the first rerandomization "
		    "comes at the next window or `rerand now`", s ? s : "unknown");
	b = js_bool(d->status, "staged");
	why = js_str(d->status, "unstaged_why");
	s = js_str(d->status, "stage_error");
	if (b > 0)
		say(d, L_OK, "staged", NULL, "an image is staged for the next rerandomization");
	else if (s && *s)
		say(d, L_FAIL, "staged", "see journalctl -u rerandd", "nothing staged: %s", s);
	else
		say(d, L_INFO, "staged", NULL, "nothing staged: %s",
		    why && *why ? why : "staging is under way");
	if (js_bool(d->status, "no_window") > 0)
		say(d, L_WARN, "window", "add a [Window NAME] section (Days=, Start=, Length=) or "
		    "RebootOutsideWindows=yes in /etc/rerand/rerand.conf.d/",
		    "no maintenance window: rerandd never reboots by itself");
	else {
		struct json_object *w;
		time_t t = json_object_object_get_ex(d->status, "next_reboot", &w) ?
			   (time_t)json_object_get_int64(w) : 0;
		char when[64] = "see rerand status";
		struct tm tm;
		if (t > 0 && gmtime_r(&t, &tm))
			strftime(when, sizeof(when), "next %Y-%m-%dT%H:%M:%SZ", &tm);
		say(d, L_OK, "window", NULL, "reboots are planned (%s)", when);
	}
	if (json_object_object_get_ex(d->status, "fleet", &f) && (s = js_str(f, "backend")) &&
	    strcmp(s, "none")) {
		const char *st = js_str(f, "state"), *w = js_str(f, "waiting_because");
		struct json_object *e;
		int64_t errs = json_object_object_get_ex(f, "errors", &e) ? json_object_get_int64(e) : 0;
		if (st && !strcmp(st, "error"))
			say(d, L_FAIL, "fleet", "see rerand fleet status and journalctl -u rerand-fleetd",
			    "%s: unreachable%s%s", s, w && *w ? ": " : "", w ? w : "");
		else
			say(d, errs ? L_WARN : L_OK, "fleet", errs ? "see journalctl -u rerand-fleetd" : NULL,
			    "%s: %s (%lld errors so far)", s, st ? st : "unknown", (long long)errs);
	}
}

/* The gain over a stock kexec on this machine's map: `rerand entropy`,
 * this same program, as a child. */
static void check_entropy(struct doctor *d)
{
	_cleanup_(pclosep) FILE *p = NULL;
	char out[4096] = "";
	size_t n;
	struct json_object *o, *v;
	double bits = -1, stock = -1;

	if (*d->root)
		return;                    /* the fixture has no memory map */
	if (!(p = popen("/proc/self/exe entropy --json 2>/dev/null", "re")))
		return;
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = 0;
	if ((o = json_tokener_parse(out))) {
		struct json_object *f;
		if (json_object_object_get_ex(o, "rerand", &f) &&
		    json_object_object_get_ex(f, "total_bits", &v))
			bits = json_object_get_double(v);
		if (json_object_object_get_ex(o, "stock", &f) &&
		    json_object_object_get_ex(f, "total_bits", &v))
			stock = json_object_get_double(v);
		json_object_put(o);
	}
	if (bits < 0)
		say(d, L_INFO, "entropy", "run rerand entropy as root", "not counted (rerand entropy "
		    "could not read this machine's map)");
	else
		say(d, bits < 8 ? L_WARN : L_OK, "entropy", bits < 8 ? "more memory, or drop mem=" : NULL,
		    "%.1f bits per boot on this machine's map (stock kexec: %.1f)", bits,
		    stock < 0 ? 0 : stock);
}

static int fetch_status(struct doctor *d)
{
	char buf[32768];
	int r = cli_ctl_ask(RR_CTLV_STATUS_JSON "\n", buf, sizeof(buf));

	if (r != 0) {
		snprintf(d->status_err, sizeof(d->status_err), "%.200s",
			 r < 0 ? strerror(-r) : buf);
		d->status_err[strcspn(d->status_err, "\n")] = 0;
		return -1;
	}
	d->status = json_tokener_parse(buf);
	if (!d->status)
		snprintf(d->status_err, sizeof(d->status_err), "its status is not JSON");
	return d->status ? 0 : -1;
}

static const struct cli_opt doctor_opts[] = {
	CLI_JSON_OPT,
	{ 0 }
};

static const char doctor_text[] =
"Each line: ok, info, warn or fail, the check, what was found and, for warn\n"
"and fail, the fix.  Exit status 0 when nothing fails (warnings included),\n"
"1 on a fail, 64 on a usage error.  Run as root: rerandd's status and the\n"
"memory map are root's.\n";

const struct cli_cmd cli_doctor = {
	.name = "doctor", .synopsis = "", .fn = cmd_doctor, .opts = doctor_opts,
	.text = doctor_text,
	.summary = "Check that this machine can be rerandomized safely: kexec, KASLR, lockdown and\n"
		   "signing, the watchdog, the crash kernel, systemd, windows, the fleet, entropy.",
};

int cmd_doctor(int argc, char **argv)
{
	struct doctor d = { .root = getenv("RERAND_DOCTOR_ROOT") };
	struct utsname u;
	const char *rel = getenv("RERAND_DOCTOR_RELEASE");
	int c;

	while ((c = cli_getopt(&cli_doctor, argc, argv)) != -1) {
		if (c == CLI_HELP)
			return 0;
		if (c == CLI_BAD)
			return EXIT_USAGE;
		if (c == 'j' && (d.json = cli_json_mode(optarg)) < 0)
			return cli_usage_error(&cli_doctor, "--json=%s: want pretty or short", optarg);
	}
	if (optind < argc)
		return cli_usage_error(&cli_doctor, "no operands (got '%s')", argv[optind]);
	if (!d.root)
		d.root = "";
	if (!rel && uname(&u) == 0)
		rel = u.release;
	snprintf(d.release, sizeof(d.release), "%s", rel ? rel : "");
	if (d.json)
		d.checks = json_object_new_array();
	fetch_status(&d);
	check_kernel(&d);
	check_lockdown(&d);
	check_watchdog(&d);
	check_crash(&d);
	check_systemd(&d);
	check_daemon(&d);
	check_entropy(&d);
	if (d.json) {
		struct json_object *o = json_object_new_object();
		rr_json_add_str(o, "result", level_names[d.worst == L_INFO ? L_OK : d.worst]);
		rr_json_add(o, "checks", d.checks);
		cli_json_print(o, d.json);     /* and frees it */
	} else {
		printf("%s\n", d.worst == L_FAIL ? "doctor: FAIL (see the fixes above)" :
		       d.worst == L_WARN ? "doctor: ok, with warnings" : "doctor: ok");
	}
	json_object_put(d.status);
	return d.worst == L_FAIL ? EXIT_FAILURE_RR : 0;
}
