/* SPDX-License-Identifier: GPL-2.0-only */
/* `rerand status --json` (the control socket's "status json"), built with
 * json-c.  The vocabulary is rerand verify --json's where the two overlap:
 * "randomized" is true for any boot the stage randomized, a weak one
 * included ("weak" says which).  It holds no address (the base is secret,
 * and tests/daemon/test-crash-daemon.sh checks no "0x" appears): counts, sizes
 * and times are JSON numbers, all far below 2^53, so no reader rounds them;
 * addresses elsewhere (rerand inspect) are "0x..." strings.  A boot rerand
 * did not make has
 * "entropy_bits": null.  The schema is in rerandd(8), STATUS JSON. */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "cleanup.h"
#include "jsonout.h"
#include "rerandd.h"

/* Text from outside (paths, a server's words): escaped as `rerand status`
 * shows it, which also makes it valid UTF-8. */
static void add_str(struct json_object *o, const char *key, const char *raw)
{
	char esc[4 * RR_ERR_MAX];

	rr_json_add_str(o, key, rr_escape_str(esc, sizeof(esc), raw ? raw : ""));
}

static struct json_object *crash_json(const struct rr_view *v)
{
	struct json_object *c = json_object_new_object();

	add_str(c, "mode", v->crash_mode ? v->crash_mode : "auto");
	add_str(c, "state", crash_state_name(v->crash_state));
	rr_json_add_bool(c, "loaded", v->crash_loaded);
	rr_json_add_bool(c, "ours", v->crash_ours);
	rr_json_add_u64(c, "reserved_bytes", v->crash_reserved);
	rr_json_add_int(c, "loaded_at", v->crash_loaded_at);
	rr_json_add_u64(c, "loads", v->crash_loads);
	rr_json_add_u64(c, "load_failures", v->crash_failures);
	add_str(c, "kernel", v->crash_kernel);
	add_str(c, "error", v->crash_error);
	return c;
}

static struct json_object *fleet_json(const struct rr_view *v)
{
	struct json_object *f = json_object_new_object();

	add_str(f, "backend", v->fleet_backend ? v->fleet_backend : "none");
	add_str(f, "group", v->fleet_group);
	add_str(f, "id", v->fleet_id);
	add_str(f, "state", v->fleet_state ? v->fleet_state : "disabled");
	rr_json_add_u64(f, "errors", v->fleet_errors);
	add_str(f, "waiting_because", v->fleet_why);
	rr_json_add_int(f, "next_try", v->fleet_next_try);
	add_str(f, "breaker", v->fleet_breaker ? v->fleet_breaker : "etcd only");
	add_str(f, "breaker_failures", v->fleet_breaker_text);
	return f;
}

/* The logind locks at the last look while a reboot was due: who, why,
 * since when, and whether each held it back. */
static struct json_object *inhibitors_json(const struct rr_view *v)
{
	struct json_object *a = json_object_new_array();

	for (unsigned i = 0; a && i < v->inhibitors.n; i++) {
		const struct rr_inhibitor *l = &v->inhibitors.l[i];
		struct json_object *e = json_object_new_object();
		if (!e)
			break;
		rr_json_add_int(e, "uid", l->uid);
		rr_json_add_int(e, "pid", l->pid);
		add_str(e, "who", l->who);
		add_str(e, "why", l->why);
		add_str(e, "mode", l->mode);
		add_str(e, "what", l->what);
		rr_json_add_int(e, "since", l->seen);
		rr_json_add_bool(e, "blocks", l->blocks);
		json_object_array_add(a, e);
	}
	return a;
}

/* Secure Boot, lockdown, and what the staged image is signed by. */
static void add_secure_json(struct json_object *o, const struct rr_view *v)
{
	add_str(o, "secure_boot", v->secure_boot ? v->secure_boot : "unknown");
	add_str(o, "lockdown", v->lockdown ? v->lockdown : "unknown");
	rr_json_add_bool(o, "locked_down", v->locked);
	add_str(o, "image_source", v->staged && v->image_source ? v->image_source : "");
	add_str(o, "signer", v->staged ? v->signer : "");
	add_str(o, "signature", v->staged ? v->signature : "");
	/* what "verified" was checked against: TrustCert='s certificates, or
	 * only the signature's own */
	add_str(o, "signature_trust", !v->staged || !*v->signer ? "" :
		*v->anchor ? "trusted" : "own-certificate");
	add_str(o, "trust_anchor", v->staged ? v->anchor : "");
}

int control_format_json(const struct rr_view *v, char *buf, size_t len)
{
	_cleanup_json_ struct json_object *o = json_object_new_object();
	struct json_object *causes;
	bool made = v->verify == RR_V_RANDOMIZED || v->verify == RR_V_WEAK;
	char ent[32];
	int n;

	if (!o)
		return -ENOMEM;
	rr_json_add_int(o, "layout_age_seconds", v->layout_age);
	/* the word rerand verify and the metrics use; "verify" is its old name */
	add_str(o, "result", state_verify_name(v->verify));
	add_str(o, "verify", state_verify_name(v->verify));
	rr_json_add_bool(o, "randomized", made);
	rr_json_add_bool(o, "weak", v->verify == RR_V_WEAK);
	rr_json_add_int(o, "verified_at", v->last_verify_time);
	snprintf(ent, sizeof(ent), "%.1f", v->entropy_bits);
	rr_json_add(o, "entropy_bits", made ? json_object_new_double_s(v->entropy_bits, ent) : NULL);
	add_str(o, "entropy_grade", made && v->entropy_grade ? v->entropy_grade : "");
	add_str(o, "action", policy_action_name(v->plan.action));
	add_str(o, "reason", policy_reason_name(v->plan.reason));
	add_str(o, "blocker", policy_blocker_name(v->plan.blocker));
	rr_json_add_int(o, "next_reboot", v->plan.when);
	rr_json_add_bool(o, "hold", v->hold);
	rr_json_add_int(o, "consecutive_failures", v->failures);
	rr_json_add_int(o, "max_failures", v->max_failures);
	rr_json_add_bool(o, "stopped", v->stopped);
	rr_json_add_u64(o, "successes", v->successes);
	rr_json_add_u64(o, "weak_total", v->weak_boots);
	rr_json_add_u64(o, "failures_total", v->total_failures);
	add_str(o, "boot_origin", state_origin_name(v->boot_origin));
	rr_json_add_u64(o, "unplanned_boots", v->unplanned_boots);
	rr_json_add_int(o, "last_success", v->last_success);
	rr_json_add_int(o, "last_failure", v->last_failure);
	rr_json_add_bool(o, "staged", v->staged);
	rr_json_add_int(o, "staged_at", v->staged_time);
	add_str(o, "unstaged_why", v->staged ? "" : v->unstaged_why);
	add_str(o, "kernel", v->kernel);
	add_str(o, "kernel_sha256", v->image_sha);
	add_str(o, "stage_error", v->stage_error);
	add_str(o, "hold_reason", v->hold_reason);
	add_str(o, "reboot_error", v->reboot_error);
	rr_json_add_int(o, "hold_since", v->hold_time);
	add_str(o, "hold_text", v->hold_text);
	rr_json_add_bool(o, "no_window", v->no_window);
	add_str(o, "daemon_version", RR_VERSION);
	rr_json_add_int(o, "daemon_started", v->started);
	rr_json_add_int(o, "uptime_seconds", v->started ? v->now - v->started : 0);
	add_secure_json(o, v);
	rr_json_add(o, "crash", crash_json(v));
	rr_json_add_bool(o, "crash_boot", v->crash_boot);
	rr_json_add_u64(o, "crash_boots", v->crash_boots);
	add_str(o, "watchdog", v->watchdog ? v->watchdog : "absent");
	add_str(o, "confirmation", v->confirm);
	rr_json_add_u64(o, "confirmed", v->confirmed);
	add_str(o, "last_cause", wdog_cause_name(v->last_cause));
	add_str(o, "last_cause_detail", v->last_cause_detail);
	rr_json_add_int(o, "last_cause_time", v->last_cause_time);
	add_str(o, "oneshot_entry", v->oneshot_note);
	rr_json_add_int(o, "oneshot_entry_time", v->oneshot_note_time);
	causes = json_object_new_object();
	for (unsigned c = RR_CAUSE_NONE + 1; c < RR_NR_CAUSES; c++)
		rr_json_add_u64(causes, wdog_cause_name(c), v->causes[c]);
	rr_json_add(o, "causes", causes);
	rr_json_add(o, "fleet", fleet_json(v));
	rr_json_add(o, "inhibitors", inhibitors_json(v));
	rr_json_add_int(o, "inhibited_since", v->inhibited_since);
	rr_json_add_int(o, "max_inhibit_seconds", v->max_inhibit);
	n = snprintf(buf, len, "%s\n", rr_json_line(o));
	if (n < 0 || (size_t)n >= len)
		return -ENOBUFS;
	return n;
}
