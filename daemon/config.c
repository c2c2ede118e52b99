/* SPDX-License-Identifier: GPL-2.0-only */
/* rerandd's configuration: rerand.conf plus the drop-ins in rerand.conf.d/ in systemd's
 * INI style, parsed with libinih; every error is kept with its file:line. */
#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "config_int.h"
#include "rerandd.h"

void config_errs_add(struct rr_cfg_errs *errs, const char *fmt, ...)
{
	va_list ap;

	if (!errs)
		return;
	if (errs->n >= RR_CFG_MAX_ERRS) {
		errs->dropped++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(errs->msg[errs->n++], sizeof(errs->msg[0]), fmt, ap);
	va_end(ap);
}

/* ---- value parsers -------------------------------------------------------- */

static int parse_bool(const char *s, bool *ret)
{
	static const char *yes[] = { "1", "yes", "y", "true", "on" };
	static const char *no[] = { "0", "no", "n", "false", "off" };

	for (size_t i = 0; i < 5; i++) {
		if (!strcasecmp(s, yes[i])) { *ret = true; return 0; }
		if (!strcasecmp(s, no[i])) { *ret = false; return 0; }
	}
	return -EINVAL;
}

static int day_index(const char *s, size_t n)
{
	static const char *full[] = { "sunday", "monday", "tuesday", "wednesday", "thursday",
				      "friday", "saturday" };

	if (n < 3)
		return -1;
	for (int i = 0; i < 7; i++)
		if (n <= strlen(full[i]) && !strncasecmp(s, full[i], n))
			return i;
	return -1;
}

/* "Mon..Fri", "Mon,Wed Sat", "Sat..Mon" (wraps), "*" or "daily". */
int config_parse_days(const char *s, uint8_t *ret)
{
	uint8_t mask = 0;

	if (!strcmp(s, "*") || !strcasecmp(s, "daily")) {
		*ret = 0x7f;
		return 0;
	}
	while (*s) {
		while (*s == ',' || isspace((unsigned char)*s))
			s++;
		if (!*s)
			break;
		size_t n = 0;
		while (isalpha((unsigned char)s[n]))
			n++;
		int a = day_index(s, n), b;
		if (a < 0)
			return -EINVAL;
		s += n;
		if (s[0] == '.' && s[1] == '.') {
			s += 2;
			n = 0;
			while (isalpha((unsigned char)s[n]))
				n++;
			b = day_index(s, n);
			if (b < 0)
				return -EINVAL;
			s += n;
			for (int d = a;; d = (d + 1) % 7) {
				mask |= (uint8_t)(1u << d);
				if (d == b)
					break;
			}
		} else {
			mask |= (uint8_t)(1u << a);
		}
		if (*s && *s != ',' && !isspace((unsigned char)*s))
			return -EINVAL;
	}
	if (!mask)
		return -EINVAL;
	*ret = mask;
	return 0;
}

static int parse_hhmm(const char *s, int *ret)
{
	int h, m, n = 0;

	if (sscanf(s, "%2d:%2d%n", &h, &m, &n) != 2 || s[n] || h < 0 || h > 23 || m < 0 || m > 59 ||
	    !isdigit((unsigned char)s[0]))
		return -EINVAL;
	*ret = h * 60 + m;
	return 0;
}

/* A zone must name a file in the tz database: glibc silently falls back to
 * UTC for an unknown TZ, which would move a window without a word. */
bool config_tz_valid(const char *zone)
{
	const char *dir = getenv("TZDIR");
	char path[PATH_MAX];
	struct stat st;

	if (!*zone || !strcmp(zone, "UTC"))
		return true;
	if (zone[0] == '/' || strstr(zone, "..") || strlen(zone) > 63)
		return false;
	for (const char *p = zone; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("/_+-", *p))
			return false;
	snprintf(path, sizeof(path), "%s/%s", dir && *dir ? dir : "/usr/share/zoneinfo", zone);
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* ---- parsing one file ----------------------------------------------------- */

struct pctx {
	struct rr_config *c;
	struct rr_cfg_errs *errs;
	const char *name;
	const char *p, *end;          /* reader position */
	unsigned line;                /* line the last reader call returned */
	bool line_bad;                /* already reported; inih must ignore it */
	unsigned section_line;        /* line of the last section header */
	bool section_bad;             /* an unknown section: its keys are not reported again */
	int win;                      /* current window index, -1 none */
	char win_section[128];
	struct rr_cfg_origins *origins;
	struct rr_cfg_errs *warns;
};

static void note_origin(struct pctx *x, char *slot)
{
	if (x->origins)
		snprintf(slot, RR_CFG_ORIGIN, "%.*s:%u", RR_CFG_ORIGIN - 12, x->name, x->line);
}

static bool section_known(const char *s, size_t n)
{
	if (n >= 6 && !strncmp(s, "Window", 6) && (n == 6 || s[6] == ' '))
		return true;
	for (size_t i = 0; i < rr_cfg_nsections; i++)
		if (strlen(rr_cfg_sections[i]) == n && !strncmp(s, rr_cfg_sections[i], n))
			return true;
	return false;
}

static void perr(struct pctx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void perr(struct pctx *x, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	config_errs_add(x->errs, "%s:%u: %s", x->name, x->line, msg);
}

/* Hand inih one line at a time, so x->line is always the line it parses.
 * Lines that are not systemd INI syntax are reported here and replaced by an
 * empty line, so inih never reports or passes them on. */
static char *reader(char *str, int num, void *stream)
{
	struct pctx *x = stream;
	const char *nl, *s;
	size_t n;

	if (x->p >= x->end)
		return NULL;
	nl = memchr(x->p, '\n', (size_t)(x->end - x->p));
	n = nl ? (size_t)(nl - x->p) : (size_t)(x->end - x->p);
	s = x->p;
	x->p += n + (nl ? 1 : 0);
	x->line++;
	x->line_bad = false;
	while (n && isspace((unsigned char)*s)) {
		s++;
		n--;
	}
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	if (memchr(s, 0, n)) {
		perr(x, "NUL byte in line");
		goto blank;
	}
	if (n + 2 > (size_t)num) {
		perr(x, "line longer than %d characters", num - 2);
		goto blank;
	}
	if (!n || *s == '#' || *s == ';')
		goto copy;
	if (*s == '[') {
		if (s[n - 1] != ']' || n < 3) {
			perr(x, "bad section header (want [Name])");
			goto blank;
		}
		x->section_line = x->line;
		x->section_bad = false;
		/* an empty section would never reach the handler: checked here */
		if (!section_known(s + 1, n - 2)) {
			char name[128], hint[96];
			snprintf(name, sizeof(name), "%.*s", (int)(n - 2 < 100 ? n - 2 : 100), s + 1);
			perr(x, "unknown section [%s]%s", name, config_suggest(NULL, name, hint,
										sizeof(hint)));
			x->section_bad = true;
		}
		goto copy;
	}
	const char *eq = memchr(s, '=', n);
	if (!eq || eq == s) {
		perr(x, "expected Key=Value");
		goto blank;
	}
	for (const char *k = s; k < eq; k++)
		if (!isalnum((unsigned char)*k) && !isspace((unsigned char)*k)) {
			perr(x, "bad key name");
			goto blank;
		}
copy:
	memcpy(str, s, n);
	str[n] = '\n';
	str[n + 1] = 0;
	return str;
blank:
	x->line_bad = true;
	str[0] = '\n';
	str[1] = 0;
	return str;
}

static int window_new(struct pctx *x, const char *section, const char *name);

static int window_index(struct pctx *x, const char *section)
{
	const char *name = section[6] == ' ' ? section + 7 : section + 6;
	unsigned key_line = x->line;
	int r;

	if (!strcmp(x->win_section, section))
		return x->win;
	snprintf(x->win_section, sizeof(x->win_section), "%s", section);
	/* Section problems belong to the header's line. */
	x->line = x->section_line;
	r = window_new(x, section, name);
	x->line = key_line;
	return x->win = r;
}

static int window_new(struct pctx *x, const char *section, const char *name)
{
	struct rr_config *c = x->c;

	if (!*name || strlen(name) >= sizeof(c->win[0].name)) {
		perr(x, "[%s]: a window needs a name of 1-63 characters: [Window NAME]", section);
		return -1;
	}
	for (const char *p = name; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("_.-", *p)) {
			perr(x, "[%s]: window names use letters, digits, '_', '.', '-'", section);
			return -1;
		}
	for (unsigned i = 0; i < c->nr_win; i++)
		if (!strcmp(c->win[i].name, name))
			return (int)i;                 /* a later file overrides key by key */
	if (c->nr_win >= RR_MAX_WINDOWS) {
		perr(x, "more than %d windows", RR_MAX_WINDOWS);
		return -1;
	}
	struct rr_window *w = &c->win[c->nr_win];
	memset(w, 0, sizeof(*w));
	snprintf(w->name, sizeof(w->name), "%s", name);
	w->enabled = true;
	w->start_min = -1;
	w->days = 0x7f;
	snprintf(w->origin, sizeof(w->origin), "%s:%u", x->name, x->line);
	return (int)c->nr_win++;
}

static int window_key(struct pctx *x, const char *section, const char *name, const char *value)
{
	int i = window_index(x, section);
	struct rr_window *w;

	if (i < 0)
		return 1;
	w = &x->c->win[i];
	for (unsigned k = 0; k < RR_CFG_NWINDOW_KEYS; k++)
		if (!strcmp(name, rr_cfg_window_keys[k]))
			note_origin(x, x->origins ? x->origins->win[i][k] : NULL);
	if (!strcmp(name, "Days")) {
		if (config_parse_days(value, &w->days) < 0)
			perr(x, "Days=%s: want day names, ranges (Mon..Fri) or \"daily\"", value);
	} else if (!strcmp(name, "Start")) {
		if (parse_hhmm(value, &w->start_min) < 0)
			perr(x, "Start=%s: want HH:MM", value);
	} else if (!strcmp(name, "Length")) {
		int64_t d;
		if (config_parse_duration(value, &d) < 0 || d <= 0 || d > 7 * 86400)
			perr(x, "Length=%s: want a duration between 1s and 7d", value);
		else
			w->length = d;
	} else if (!strcmp(name, "TimeZone")) {
		if (strlen(value) >= sizeof(w->tz) || !config_tz_valid(value))
			perr(x, "TimeZone=%s: not a time zone in the tz database", value);
		else
			snprintf(w->tz, sizeof(w->tz), "%s", value);
	} else if (!strcmp(name, "Enabled")) {
		if (parse_bool(value, &w->enabled) < 0)
			perr(x, "Enabled=%s: want yes or no", value);
	} else {
		char hint[96];
		perr(x, "[%s]: unknown key %s%s", section, name,
		     config_suggest("Window", name, hint, sizeof(hint)));
	}
	return 1;
}

/* systemd's INI has no comments after a value: "24h # daily" is the value. */
static bool trailing_comment(const char *v)
{
	for (const char *p = v; *p; p++)
		if ((*p == '#' || *p == ';') && p > v && isspace((unsigned char)p[-1]))
			return true;
	return false;
}

/* [Fleet]: fleet_config.c owns these keys; its message names the key and
 * the problem.  A key in another case than its name is taken (rerand 0.1
 * took any case there) with a warning: keys are case-sensitive in every
 * section. */
static void set_fleet(struct pctx *x, const char *name, const char *value)
{
	char err[256], hint[96];
	int r = fleet_config_set(&x->c->fleet, name, value, err, sizeof(err));
	const char *alias = fleet_config_alias(name), *canon = alias ? alias : name;

	if (r == -ENOENT)
		perr(x, "%s%s", err, config_suggest("Fleet", name, hint, sizeof(hint)));
	else if (r < 0)
		perr(x, "%s", err);
	if (r < 0)
		return;
	for (size_t i = 0; fleet_config_key(i); i++)
		if (!strcasecmp(fleet_config_key(i), canon))
			canon = fleet_config_key(i);
	if (r == 1 && !alias)
		config_errs_add(x->warns, "%s:%u: %s= is spelled %s= (keys are case-sensitive; another "
			 "case will be refused in a later version)", x->name, x->line, name, canon);
	if (alias)
		config_errs_add(x->warns, "%s:%u: %s= is deprecated: use %s=, where a bare number is "
			 "seconds as in every duration (%s=%s is %s=%s%s)", x->name, x->line, name,
			 alias, name, value, alias, value,
			 strspn(value, "0123456789") == strlen(value) ? "ms" : "");
	for (size_t i = 0; x->origins && fleet_config_key(i); i++)
		if (!strcmp(fleet_config_key(i), canon))
			note_origin(x, x->origins->fleet[i]);
}

/* K_PATH and K_STR. */
static void set_string(struct pctx *x, const struct rr_cfg_key *k, char *f, const char *name,
		       const char *value)
{
	if (k->type == K_PATH && *value && *value != '/') {
		perr(x, "%s=%s: want an absolute path", name, value);
		return;
	}
	if (strlen(value) >= k->size) {
		perr(x, "%s=: longer than %zu characters", name, k->size - 1);
		return;
	}
	memcpy(f, value, strlen(value) + 1);
	if (f == x->c->cmdline)
		x->c->cmdline_set = *value != 0;
	if (f == x->c->crash_cmdline)
		x->c->crash_cmdline_set = *value != 0;
}

static void set_bool(struct pctx *x, bool *f, const char *name, const char *value)
{
	if (f == &x->c->crash_file_syscall && !*value) {
		x->c->crash_file_syscall_set = false;    /* back to "as [Stage]" */
		return;
	}
	if (parse_bool(value, f) < 0)
		perr(x, "%s=%s: want yes or no", name, value);
	else if (f == &x->c->crash_file_syscall)
		x->c->crash_file_syscall_set = true;
}

static void set_uint(struct pctx *x, unsigned *f, const char *name, const char *value)
{
	char *end;

	errno = 0;
	unsigned long v = strtoul(value, &end, 10);
	if (!*value || *end || errno || v > 1000 || *value == '-')
		perr(x, "%s=%s: want a number from 0 to 1000", name, value);
	else
		*f = (unsigned)v;
}

/* off/0: no panic= added; negative: the kernel's "reboot at once" */
static void set_panic(struct pctx *x, int64_t *f, const char *name, const char *value)
{
	int64_t d;
	bool on;

	if (parse_bool(value, &on) == 0 && !on)
		*f = 0;
	else if (value[0] == '-' && value[1] >= '1' && value[1] <= '9' &&
		 strspn(value + 1, "0123456789") == strlen(value + 1))
		*f = -1;
	else if (config_parse_duration(value, &d) == 0 && d <= 3600)
		*f = d;
	else
		perr(x, "%s=%s: want seconds up to 1h (10, 30s, 1min), 0 or off for no panic=, "
		     "or -1 to reboot at once", name, value);
}

/* One key of rr_cfg_keys, by its type. */
static void set_value(struct pctx *x, const struct rr_cfg_key *k, const char *name,
		      const char *value)
{
	void *f = (char *)x->c + k->off;

	switch (k->type) {
	case K_PATH:
	case K_STR:
		set_string(x, k, f, name, value);
		break;
	case K_DUR:
		if (config_parse_duration(value, f) < 0)
			perr(x, "%s=%s: want a duration such as 90s, 30min, 24h, 1d 12h", name, value);
		break;
	case K_BOOL:
		set_bool(x, f, name, value);
		break;
	case K_UINT:
		set_uint(x, f, name, value);
		break;
	case K_WHEN:
		if (!strcmp(value, "ignore")) *(enum rr_when *)f = RR_WHEN_IGNORE;
		else if (!strcmp(value, "window")) *(enum rr_when *)f = RR_WHEN_WINDOW;
		else if (!strcmp(value, "immediate")) *(enum rr_when *)f = RR_WHEN_IMMEDIATE;
		else perr(x, "%s=%s: want ignore, window or immediate", name, value);
		break;
	case K_METHOD:
		if (!strcmp(value, "auto")) *(enum rr_method *)f = RR_RM_AUTO;
		else if (!strcmp(value, "logind")) *(enum rr_method *)f = RR_RM_LOGIND;
		else if (!strcmp(value, "systemd")) *(enum rr_method *)f = RR_RM_SYSTEMD;
		else if (!strcmp(value, "syscall")) *(enum rr_method *)f = RR_RM_SYSCALL;
		else if (!strcmp(value, "command")) *(enum rr_method *)f = RR_RM_COMMAND;
		else perr(x, "%s=%s: want auto, logind, systemd, syscall or command", name, value);
		break;
	case K_PANIC:
		set_panic(x, f, name, value);
		break;
	case K_WDOG:
		if (!strcmp(value, "off"))
			*(int64_t *)f = RR_WDOG_OFF;
		else if (config_parse_duration(value, f) < 0)
			perr(x, "%s=%s: want a duration such as 10min, or off", name, value);
		break;
	case K_CRASHMODE:
		if (!strcmp(value, "auto")) *(enum rr_crash_mode *)f = RR_CRASH_AUTO;
		else if (!strcmp(value, "off")) *(enum rr_crash_mode *)f = RR_CRASH_OFF;
		else perr(x, "%s=%s: want auto or off", name, value);
		break;
	}
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
	struct pctx *x = user;
	const struct rr_cfg_key *k = NULL;
	size_t ki = 0;
	char hint[96];

	if (x->line_bad || x->section_bad)
		return 1;
	for (ki = 0; ki < rr_cfg_nkeys; ki++)
		if (!strcmp(rr_cfg_keys[ki].section, section) && !strcmp(rr_cfg_keys[ki].name, name)) {
			k = &rr_cfg_keys[ki];
			break;
		}
	/* free-text keys (command lines, commands) may hold a '#' */
	if ((!k || k->type != K_STR) && trailing_comment(value)) {
		perr(x, "%s=%s: no comments after a value (put the comment on a line of its own)",
		     name, value);
		return 1;
	}
	if (!strncmp(section, "Window ", 7) || !strcmp(section, "Window"))
		return window_key(x, section, name, value);
	if (!strcmp(section, "Fleet")) {
		set_fleet(x, name, value);
		return 1;
	}
	if (!k) {
		if (!*section)
			perr(x, "%s= outside any section", name);
		else
			perr(x, "[%s]: unknown key %s%s", section, name,
			     config_suggest(section, name, hint, sizeof(hint)));
		return 1;
	}
	if (x->origins)
		note_origin(x, x->origins->key[ki]);
	set_value(x, k, name, value);
	return 1;
}

void config_apply_text_at(struct rr_config *c, const char *text, size_t len, const char *name,
			  struct rr_cfg_errs *errs, struct rr_cfg_origins *origins,
			  struct rr_cfg_errs *warns)
{
	struct pctx x = { .c = c, .errs = errs, .name = name, .p = text, .end = text + len,
			  .win = -1, .origins = origins, .warns = warns };
	unsigned before = errs ? errs->n + errs->dropped : 0;
	int r;

	/* systemd semantics: no continuation lines, no inline comments. */
	ini_allow_multiline = false;
	ini_allow_inline_comments = false;
	r = ini_parse_stream(reader, &x, handler, &x);
	if (r > 0 && errs && errs->n + errs->dropped == before) {
		x.line = (unsigned)r;
		perr(&x, "syntax error");
	} else if (r < 0) {
		config_errs_add(errs, "%s: cannot parse (error %d)", name, r);
	}
}

void config_apply_text(struct rr_config *c, const char *text, size_t len, const char *name,
		       struct rr_cfg_errs *errs)
{
	config_apply_text_at(c, text, len, name, errs, NULL, NULL);
}

void config_fill_runtime(struct rr_config *c)
{
	if (!*c->control_socket)
		snprintf(c->control_socket, sizeof(c->control_socket), "%.500s/" RR_CTL_SOCKET_NAME, c->run_dir);
}
