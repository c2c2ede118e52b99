/* SPDX-License-Identifier: GPL-2.0-only */
/* rerandd --check-config and --dump-config.  The dump is the effective
 * configuration (defaults, the main file, the drop-ins) as rerand.conf text,
 * each value under a comment naming the file:line it came from, as `sshd -T`
 * and `systemd-analyze cat-config` let an operator see what is in force. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "cleanup.h"
#include "rerandd.h"
#include "sign.h"

static const char *fmt_days(uint8_t mask, char *out, size_t len)
{
	static const char *names[] = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" };
	size_t o = 0;

	if (mask == 0x7f) {
		snprintf(out, len, "daily");
		return out;
	}
	out[0] = 0;
	for (int d = 0; d < 7 && o < len; d++)
		if (mask & (1u << d))
			o += (size_t)snprintf(out + o, len - o, "%s%s", o ? "," : "", names[d]);
	return out;
}

void config_format_value(const struct rr_config *c, const struct rr_cfg_key *k, char *out,
			 size_t len)
{
	const void *f = (const char *)c + k->off;
	static const char *when[] = { "ignore", "window", "immediate" };
	static const char *method[] = { "auto", "logind", "systemd", "syscall", "command" };
	int64_t i64;

	switch (k->type) {
	case K_PATH:
	case K_STR:
		snprintf(out, len, "%s", (const char *)f);
		break;
	case K_DUR:
		config_format_duration(*(const int64_t *)f, out, len);
		break;
	case K_BOOL:
		/* [Crash] FileSyscall= unset: "as [Stage]" */
		if (f == &c->crash_file_syscall && !c->crash_file_syscall_set)
			out[0] = 0;
		else
			snprintf(out, len, "%s", *(const bool *)f ? "yes" : "no");
		break;
	case K_UINT:
		snprintf(out, len, "%u", *(const unsigned *)f);
		break;
	case K_WHEN:
		snprintf(out, len, "%s", when[*(const enum rr_when *)f]);
		break;
	case K_METHOD:
		snprintf(out, len, "%s", method[*(const enum rr_method *)f]);
		break;
	case K_CRASHMODE:
		snprintf(out, len, "%s", *(const enum rr_crash_mode *)f == RR_CRASH_OFF ? "off" : "auto");
		break;
	case K_PANIC:
		i64 = *(const int64_t *)f;
		if (i64 == 0)
			snprintf(out, len, "off");
		else if (i64 < 0)
			snprintf(out, len, "-1");
		else
			config_format_duration(i64, out, len);
		break;
	case K_WDOG:
		i64 = *(const int64_t *)f;
		if (i64 == RR_WDOG_OFF)
			snprintf(out, len, "off");
		else
			config_format_duration(i64, out, len);
		break;
	}
}

static void put_kv(FILE *f, const char *origin, const char *key, const char *value)
{
	char esc[4 * RR_PATH];

	fprintf(f, "# %s\n%s=%s\n", origin && *origin ? origin : "default", key,
		rr_escape_str(esc, sizeof(esc), value));
}

/* What the keys whose values differ ask of the reload (the key table's
 * reload column), compared as --dump-config prints them. */
unsigned config_reload_effects(const struct rr_config *o, const struct rr_config *c)
{
	char a[RR_PATH + 64], b[RR_PATH + 64];
	unsigned fx = 0;

	for (size_t i = 0; i < rr_cfg_nkeys; i++) {
		const struct rr_cfg_key *k = &rr_cfg_keys[i];

		if (!(k->reload & (RR_CFG_RESTAGE | RR_CFG_RECRASH)))
			continue;
		config_format_value(o, k, a, sizeof(a));
		config_format_value(c, k, b, sizeof(b));
		if (strcmp(a, b))
			fx |= k->reload;
	}
	return fx;
}

int config_dump(FILE *f, const struct rr_config *c, const struct rr_cfg_origins *o)
{
	char v[RR_PATH + 64];

	fprintf(f, "# rerandd --dump-config: the effective configuration; each value's file:line\n"
		   "# (or \"default\") is on the line above it.\n");
	for (size_t s = 0; s < rr_cfg_nsections; s++) {
		const char *sec = rr_cfg_sections[s];
		fprintf(f, "\n[%s]\n", sec);
		if (!strcmp(sec, "Fleet")) {
			char fv[FLEET_MAX_ENDPOINTS * (FLEET_STR + 1)];
			for (size_t i = 0; fleet_config_key(i); i++) {
				fleet_config_get(&c->fleet, i, fv, sizeof(fv));
				put_kv(f, o ? o->fleet[i] : NULL, fleet_config_key(i), fv);
			}
			continue;
		}
		for (size_t i = 0; i < rr_cfg_nkeys; i++) {
			if (strcmp(rr_cfg_keys[i].section, sec))
				continue;
			config_format_value(c, &rr_cfg_keys[i], v, sizeof(v));
			put_kv(f, o ? o->key[i] : NULL, rr_cfg_keys[i].name, v);
		}
	}
	for (unsigned w = 0; w < c->nr_win; w++) {
		const struct rr_window *win = &c->win[w];
		const char *const *wk = rr_cfg_window_keys;
		fprintf(f, "\n# %s\n[Window %s]\n", win->origin, win->name);
		put_kv(f, o ? o->win[w][0] : NULL, wk[0], fmt_days(win->days, v, sizeof(v)));
		if (win->start_min >= 0) {
			snprintf(v, sizeof(v), "%02d:%02d", win->start_min / 60, win->start_min % 60);
			put_kv(f, o ? o->win[w][1] : NULL, wk[1], v);
		}
		if (win->length > 0)
			put_kv(f, o ? o->win[w][2] : NULL, wk[2], config_format_duration(win->length, v, sizeof(v)));
		put_kv(f, o ? o->win[w][3] : NULL, wk[3], win->tz);
		put_kv(f, o ? o->win[w][4] : NULL, wk[4], win->enabled ? "yes" : "no");
	}
	return ferror(f) ? -EIO : 0;
}

int config_cli(const struct rr_cfg_load *l, bool dump)
{
	_cleanup_free_ struct rr_cfg_errs *errs = calloc(1, sizeof(*errs));
	_cleanup_free_ struct rr_cfg_errs *warns = calloc(1, sizeof(*warns));
	_cleanup_free_ struct rr_cfg_origins *o = dump ? calloc(1, sizeof(*o)) : NULL;
	_cleanup_free_ struct rr_config *c = malloc(sizeof(*c));
	struct rr_cfg_load lo = *l;
	int r;

	if (!errs || !warns || !c || (dump && !o))
		return 1;           /* out of memory: not the configuration's fault */
	lo.origins = o;
	lo.warns = warns;
	r = config_load_ex(&lo, c, errs);
	for (unsigned i = 0; i < warns->n; i++) {
		char esc[4 * sizeof(warns->msg[0])];
		fprintf(stderr, "rerandd: warning: %s\n", rr_escape_str(esc, sizeof(esc), warns->msg[i]));
	}
	/* the values quoted are the file's: escaped for the terminal */
	for (unsigned i = 0; i < errs->n; i++) {
		char esc[4 * sizeof(errs->msg[0])];
		fprintf(stderr, "rerandd: %s\n", rr_escape_str(esc, sizeof(esc), errs->msg[i]));
	}
	if (errs->dropped)
		fprintf(stderr, "rerandd: ... and %u more errors\n", errs->dropped);
	if (r == 0 && !dump && *c->sign_key) {
		/* the key staging would sign with, judged as staging judges it */
		struct rr_err ke;
		char esc[4 * sizeof(ke.msg)];

		if (rr_sign_key_check(c->sign_key, &ke) < 0) {
			fprintf(stderr, "rerandd: %s\n", rr_escape_str(esc, sizeof(esc), ke.msg));
			r = -EPERM;
		}
	}
	if (r == 0 && dump) {
		config_fill_runtime(c);
		r = config_dump(stdout, c, o);
		if (fflush(stdout) != 0)
			r = -EIO;
	} else if (r == 0) {
		/* valid, but nothing will ever plan a reboot by itself: said here
		 * as in the journal and `rerand status` */
		if (policy_never_reboots(c))
			fprintf(stderr, "rerandd: warning: %s\n", RR_NO_WINDOW_NOTICE);
		if (config_signer_shares_builder(c))
			fprintf(stderr, "rerandd: warning: %s\n", RR_SIGNER_SHARED_NOTICE);
		printf("%s: configuration OK\n", l->main);
		if (c->fleet.backend == FLEET_BACKEND_FLEETLOCK)
			/* said where the operator looks before relying on it */
			printf("%s: note: [Fleet] Backend=fleetlock: no group-wide breaker "
			       "(BreakerFailures= is etcd only: the FleetLock protocol has no place "
			       "to record failures)\n", l->main);
	}
	/* EX_CONFIG: the configuration is wrong; 1: rerandd failed (memory, stdout) */
	return !r ? 0 : r == -EINVAL || r == -EPERM ? EX_CONFIG : 1;
}
