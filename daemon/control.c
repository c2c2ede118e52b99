/* SPDX-License-Identifier: GPL-2.0-only */
/* The control socket (root only, checked with SO_PEERCRED) and its tiny line
 * protocol, spelled once in src/common/ctl.h for rerandd and the CLI.  Each
 * connection is read by an event source of its own, within a deadline. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-login.h>
#include <unistd.h>

#include "cleanup.h"
#include "rerandd.h"

enum rr_ctl_cmd control_parse_arg(const char *line, size_t len, char *arg, size_t arglen)
{
	char buf[RR_CTL_LINE];

	if (arglen)
		arg[0] = 0;
	while (len && (line[len - 1] == '\n' || line[len - 1] == '\r' || line[len - 1] == ' '))
		len--;
	if (len >= sizeof(buf) || memchr(line, 0, len))
		return RR_CTL_BAD;
	memcpy(buf, line, len);
	buf[len] = 0;
	if (!strcmp(buf, RR_CTLV_STATUS)) return RR_CTL_STATUS;
	if (!strcmp(buf, RR_CTLV_STATUS_JSON)) return RR_CTL_STATUS_JSON;
	if (!strcmp(buf, RR_CTLV_NOW)) return RR_CTL_NOW;
	if (!strcmp(buf, RR_CTLV_NOW_WITHDRAW)) return RR_CTL_NOW_WITHDRAW;
	if (!strcmp(buf, RR_CTLV_DUE)) return RR_CTL_DUE;
	if (!strcmp(buf, RR_CTLV_PHASE)) return RR_CTL_PHASE;
	if (!strcmp(buf, RR_CTLV_HOLD)) return RR_CTL_HOLD;
	if (!strncmp(buf, RR_CTLV_HOLD " ", sizeof(RR_CTLV_HOLD))) {
		/* `rerand hold --reason TEXT`: kept as the hold's reason
		 * (sizeof counts the NUL where the line has the space) */
		const char *t = buf + sizeof(RR_CTLV_HOLD);
		if (!*t || strlen(t) >= arglen || strlen(t) >= RR_HOLD_TEXT)
			return RR_CTL_BAD;
		snprintf(arg, arglen, "%s", t);
		return RR_CTL_HOLD;
	}
	if (!strcmp(buf, RR_CTLV_UNHOLD) || !strcmp(buf, RR_CTLV_RELEASE)) return RR_CTL_RELEASE;
	if (!strcmp(buf, RR_CTLV_HISTORY)) return RR_CTL_HISTORY;
	if (!strcmp(buf, RR_CTLV_HISTORY_JSON)) return RR_CTL_HISTORY_JSON;
	if (!strcmp(buf, RR_CTLV_FLEET_STATUS)) return RR_CTL_FLEET_STATUS;
	if (!strcmp(buf, RR_CTLV_FLEET_STATUS_JSON)) return RR_CTL_FLEET_STATUS_JSON;
	if (!strcmp(buf, RR_CTLV_FLEET_CLEAR_BREAKER)) return RR_CTL_FLEET_CLEAR_BREAKER;
	if (!strncmp(buf, RR_CTLV_FLEET_RELEASE " ", sizeof(RR_CTLV_FLEET_RELEASE))) {
		const char *h = buf + sizeof(RR_CTLV_FLEET_RELEASE);
		/* a fleet identity: what fleet_read_identity() accepts */
		if (!*h || strlen(h) >= arglen || strlen(h) >= FLEET_ID_MAX)
			return RR_CTL_BAD;
		for (const char *p = h; *p; p++)
			if (*p <= ' ' || *p > '~' || *p == '"' || *p == '\\')
				return RR_CTL_BAD;
		snprintf(arg, arglen, "%s", h);
		return RR_CTL_FLEET_RELEASE;
	}
	if (!strncmp(buf, RR_CTLV_BUILD " ", sizeof(RR_CTLV_BUILD))) {
		/* an absolute path of printable characters, no "..": what
		 * rerandd plans like Kernel= */
		const char *k = buf + sizeof(RR_CTLV_BUILD);
		if (*k != '/' || strlen(k) >= arglen || strlen(k) >= RR_PATH || strstr(k, "/../") ||
		    (strlen(k) >= 3 && !strcmp(k + strlen(k) - 3, "/..")))
			return RR_CTL_BAD;
		for (const char *p = k; *p; p++)
			if (*p < ' ' || *p > '~')
				return RR_CTL_BAD;
		snprintf(arg, arglen, "%s", k);
		return RR_CTL_BUILD;
	}
	return RR_CTL_BAD;
}

enum rr_ctl_cmd control_parse(const char *line, size_t len)
{
	char arg[FLEET_ID_MAX];

	return control_parse_arg(line, len, arg, sizeof(arg));
}

struct out { char *buf; size_t len, used; bool full; time_t now; };

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->full)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->used, o->len - o->used, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= o->len - o->used)
		o->full = true;
	else
		o->used += (size_t)n;
}

/* Text from outside (paths, a server's words, a child's output): escaped, so
 * it can neither add a line to the status nor reach the terminal raw. */
static void put_ext(struct out *o, const char *s)
{
	char esc[4 * RR_ERR_MAX];

	put(o, "%s", rr_escape_str(esc, sizeof(esc), s));
}

/* As systemctl: "16s", "5min 3s", "2h 5min", "1d 2h 5min". */
static void put_age(struct out *o, int64_t s)
{
	if (s < 0)
		s = 0;
	if (s >= 86400)
		put(o, "%lldd %lldh %lldmin", (long long)(s / 86400), (long long)(s % 86400 / 3600),
		    (long long)(s % 3600 / 60));
	else if (s >= 3600)
		put(o, "%lldh %lldmin", (long long)(s / 3600), (long long)(s % 3600 / 60));
	else if (s >= 60)
		put(o, "%lldmin %llds", (long long)(s / 60), (long long)(s % 60));
	else
		put(o, "%llds", (long long)s);
}

/* Local time with its zone, as systemctl shows it: the daemon's TZ. */
static void put_abstime(struct out *o, time_t t)
{
	struct tm tm;
	char b[64];

	if (!t || !localtime_r(&t, &tm)) {
		put(o, "never");
		return;
	}
	strftime(b, sizeof(b), "%a %Y-%m-%d %H:%M:%S %Z", &tm);
	put(o, "%s", b);
}

/* "Sat 2026-12-05 13:20:00 UTC; 5min ago" or "...; in 2h 5min" */
static void put_time(struct out *o, time_t t)
{
	put_abstime(o, t);
	if (!t)
		return;
	if (t <= o->now) {
		put(o, "; ");
		put_age(o, o->now - t);
		put(o, " ago");
	} else {
		put(o, "; in ");
		put_age(o, t - o->now);
	}
}

/* Only a boot rerand made has an entropy figure. */
static bool has_entropy(const struct rr_view *v)
{
	return v->verify == RR_V_RANDOMIZED || v->verify == RR_V_WEAK;
}

static void put_this_boot(struct out *o, const struct rr_view *v)
{
	put(o, "this boot:         %s (", state_verify_name(v->verify));
	switch (v->verify) {
	case RR_V_RANDOMIZED:
		put(o, "verified ");
		break;
	case RR_V_WEAK:
		put(o, "randomized from the TSC alone: no seed, no RDSEED or RDRAND; not "
		    "verified; checked ");
		break;
	case RR_V_ABSENT:
		put(o, "not booted by rerand: no record of a randomization; checked ");
		break;
	case RR_V_NOT_RANDOMIZED:
		put(o, "rerand's record says the base was not randomized; checked ");
		break;
	case RR_V_MALFORMED:
		put(o, "rerand's record could not be read; checked ");
		break;
	default:
		put(o, "not checked yet)\n");
		return;
	}
	put_time(o, v->last_verify_time);
	put(o, ")\n");
}

static void put_crash_text(struct out *o, const struct rr_view *v)
{
	put(o, "crash kernel:      ");
	switch (v->crash_state) {
	case RR_CS_OFF:
		put(o, "off (Mode=off: left to other tools; one is %sloaded)",
		    v->crash_loaded ? "" : "not ");
		break;
	case RR_CS_NOT_RESERVED:
		put(o, "not reserved (no crashkernel= memory)");
		break;
	case RR_CS_OTHER_LOADER:
		put(o, "left to kdump-tools/kdumpctl (enabled; Mode=auto loads none over it): one "
		    "is %sloaded", v->crash_loaded ? "" : "not ");
		break;
	case RR_CS_PENDING:
		put(o, "pending (crash region %llu MiB)", (unsigned long long)(v->crash_reserved >> 20));
		break;
	case RR_CS_LOADED:
		put(o, "%s (kernel ", v->crash_loaded ? "loaded" : "unloaded by someone else");
		put_ext(o, v->crash_kernel);
		put(o, ", loaded ");
		put_time(o, v->crash_loaded_at);
		put(o, ", crash region %llu MiB)", (unsigned long long)(v->crash_reserved >> 20));
		break;
	case RR_CS_ERROR:
		put(o, "error: ");
		put_ext(o, v->crash_error);
		put(o, "; %s", v->crash_loaded ? "the crash kernel loaded before stays in place"
				    : "no crash kernel is loaded");
		break;
	default:
		put(o, "%s", crash_state_name(v->crash_state));
	}
	put(o, "\n");
	if (v->crash_loads || v->crash_failures)
		put(o, "crash loads:       %llu loaded, %llu failed\n",
		    (unsigned long long)v->crash_loads, (unsigned long long)v->crash_failures);
	if (v->crash_boots)
		put(o, "crash boots:       %llu\n", (unsigned long long)v->crash_boots);
}

static void put_secure_text(struct out *o, const struct rr_view *v)
{
	put(o, "secure boot:       %s%s, lockdown %s%s\n", v->secure_boot ? v->secure_boot : "unknown",
	    v->secure_boot_from_bp ? " (per boot_params: no efivarfs)" : "",
	    v->lockdown ? v->lockdown : "unknown", v->locked ? " (signed images only)" : "");
	if (!v->staged)
		return;
	put(o, "staged image:      %s, ", v->image_source ? v->image_source : "built");
	if (*v->signer) {
		/* a certificate subject: text from outside */
		put(o, "signed by \"");
		put_ext(o, v->signer);
		if (*v->anchor) {
			put(o, "\" (signature verified, chains to TrustCert='s \"");
			put_ext(o, v->anchor);
			put(o, "\")\n");
		} else {
			put(o, "\" (signature verified against its own certificate only: "
			    "no TrustCert=)\n");
		}
	} else if (!strcmp(v->signature, "bad")) {
		put(o, "signature does not verify (signer not shown)\n");
	} else {
		put(o, "unsigned\n");
	}
}

/* "next rerandomize:", what the policy plans. */
static void put_plan_text(struct out *o, const struct rr_view *v)
{
	put(o, "next rerandomize:  ");
	switch (v->plan.action) {
	case RR_ACT_WAIT:
		put_time(o, v->plan.when);
		put(o, " (%s)", policy_reason_name(v->plan.reason));
		break;
	case RR_ACT_REBOOT:
		put(o, "now (%s)", policy_reason_name(v->plan.reason));
		break;
	case RR_ACT_BLOCKED:
		put(o, "due (%s) but blocked: %s", policy_reason_name(v->plan.reason),
		    policy_blocker_name(v->plan.blocker));
		break;
	case RR_ACT_STOPPED:
		put(o, "never: stopped");
		break;
	default:
		if (v->no_window)
			put(o, "never by itself: no maintenance window is configured and "
			    "RebootOutsideWindows=no; add a [Window NAME] to rerand.conf (see "
			    "rerand.conf(5)); `rerand now` rerandomizes at once");
		else
			put(o, "not planned (no window will open)");
	}
}

/* "inhibitors:", the logind locks of the last look while a reboot was due,
 * each on a line of its own: who holds it, why, since when, and what
 * rerandd made of it; a line of their own after the plan's. */
static void put_inhibitors_text(struct out *o, const struct rr_view *v)
{
	if (!v->inhibitors.n)
		return;
	put(o, "\ninhibitors:        %u logind lock%s", v->inhibitors.n + v->inhibitors.more,
	    v->inhibitors.n + v->inhibitors.more == 1 ? "" : "s");
	if (v->inhibited_since) {
		put(o, "; the due rerandomization held back since ");
		put_time(o, v->inhibited_since);
		put(o, ", goes ahead anyway at ");
		put_abstime(o, v->inhibited_since + v->max_inhibit);
		put(o, " (MaxInhibitSec=");
		put_age(o, v->max_inhibit);
		put(o, ")");
	}
	for (unsigned i = 0; i < v->inhibitors.n; i++) {
		const struct rr_inhibitor *l = &v->inhibitors.l[i];
		put(o, "\n  uid %u pid %u: ", l->uid, l->pid);
		put_ext(o, l->who);
		put(o, " (");
		put_ext(o, l->why);
		put(o, "), ");
		put_ext(o, l->mode);
		put(o, " on ");
		put_ext(o, l->what);
		put(o, ", seen since ");
		put_time(o, l->seen);
		put(o, ": %s", l->blocks ? "holds it back" :
		    v->inhibited_since && v->inhibited_since + v->max_inhibit <= v->now ?
		    "overridden (MaxInhibitSec= is over)" : "ignored (not root's)");
	}
}

/* "hold:", since when and why, on a line of its own: it ends the plan's
 * line first, and leaves its own end to the caller. */
static void put_hold_text(struct out *o, const struct rr_view *v)
{
	put(o, "\nhold:              %s", v->hold ? "yes" : "no");
	if (v->hold && v->hold_reason && !strcmp(v->hold_reason, "damaged-state")) {
		put(o, " (damaged-state: the state file could not be read whole; check the "
		    "journal, then `rerand unhold`)");
	} else if (v->hold && v->hold_time) {
		put(o, ", since ");
		put_time(o, v->hold_time);
	}
	if (v->hold && *v->hold_text) {
		put(o, ": ");
		put_ext(o, v->hold_text);
	}
}

/* The fleet lines, when a backend is configured. */
static void put_fleet_text(struct out *o, const struct rr_view *v)
{
	if (!v->fleet_backend || !strcmp(v->fleet_backend, "none"))
		return;
	put(o, "fleet:             %s, group ", v->fleet_backend);
	put_ext(o, v->fleet_group);
	put(o, " as ");
	put_ext(o, v->fleet_id);
	put(o, ": %s", v->fleet_state);
	if (v->fleet_errors)
		put(o, " (%llu errors)", (unsigned long long)v->fleet_errors);
	put(o, "\n");
	if (*v->fleet_why) {
		put(o, "fleet wait:        ");
		put_ext(o, v->fleet_why);
		if (v->fleet_next_try) {
			put(o, "; next try ");
			put_time(o, v->fleet_next_try);
		}
		put(o, "\n");
	}
	put(o, "fleet breaker:     ");
	if (v->fleet_breaker && !strcmp(v->fleet_breaker, "tripped")) {
		put(o, "TRIPPED: ");
		put_ext(o, v->fleet_breaker_text);
		put(o, "; no host of the group takes a slot until `rerand fleet "
		    "clear-breaker`\n");
	} else if (v->fleet_breaker && !strcmp(v->fleet_breaker, "ok")) {
		put(o, "ok (");
		put_ext(o, v->fleet_breaker_text);
		put(o, ")\n");
	} else if (v->fleet_breaker && !strcmp(v->fleet_breaker, "etcd only")) {
		put(o, "none: the FleetLock protocol has no place for it (etcd only)\n");
	} else {
		put(o, "not read yet\n");
	}
}

int control_format_text(const struct rr_view *v, char *buf, size_t len)
{
	struct out o = { buf, len, 0, false, v->now };

	put(&o, "rerandd:           version %s, up ", RR_VERSION);
	put_age(&o, v->started ? v->now - v->started : 0);
	put(&o, " (since ");
	put_abstime(&o, v->started);
	put(&o, ")\n");
	put(&o, "layout age:        ");
	put_age(&o, v->layout_age);
	if (v->crash_boot) {
		put(&o, "\nthis boot:         a crash kernel's (dump capture); rerandd idles: "
			"no staging, no reboots\n");
		put(&o, "crash boots:       %llu\n", (unsigned long long)v->crash_boots);
		return o.full ? -ENOBUFS : (int)o.used;
	}
	put(&o, "\n");
	put_this_boot(&o, v);
	put(&o, "booted by:         %s\n", v->boot_origin == RR_BO_RERANDD ?
		"rerandd's rerandomizing reboot (counted)" : v->boot_origin == RR_BO_UNPLANNED ?
		"a reboot rerandd did not plan (not counted: not a success, not a failure)" :
		v->boot_origin == RR_BO_FALLBACK ?
		"rerandd's reboot through the firmware after a failed rerandomized boot "
		"(counted with that failure)" :
		"a boot before rerandd's record (not counted)");
	if (has_entropy(v))
		put(&o, "entropy:           %.1f bits%s\n", v->entropy_bits,
		    v->verify == RR_V_WEAK ? " of slots, drawn from a guessable source" :
		    v->entropy_grade && !strcmp(v->entropy_grade, "seed") ?
		    " (grade seed: no RDRAND or RDSEED; the staging seed and RDTSC)" : "");
	put_plan_text(&o, v);
	put_inhibitors_text(&o, v);
	put_hold_text(&o, v);
	put(&o, "\n");
	if (*v->reboot_error) {
		put(&o, "reboot error:      ");
		put_ext(&o, v->reboot_error);
		put(&o, "\n");
	}
	put(&o, "failures in a row: %u of %u%s\n", v->failures, v->max_failures,
	    v->stopped ? "  ALERT: stopped rerandomizing" : "");
	put(&o, "reboots:           %llu verified, %llu failed, %llu weak; %llu not rerandd's\n",
	    (unsigned long long)v->successes, (unsigned long long)v->total_failures,
	    (unsigned long long)v->weak_boots, (unsigned long long)v->unplanned_boots);
	put(&o, "staged:            %s", v->staged ? "yes" : "no");
	if (v->staged) {
		put(&o, " (kernel ");
		put_ext(&o, v->kernel);
		put(&o, ", sha256 %.16s, staged ", v->image_sha);
		put_time(&o, v->staged_time);
		put(&o, ")");
	} else if (*v->unstaged_why) {
		put(&o, " (");
		put_ext(&o, v->unstaged_why);
		put(&o, ")");
	}
	put(&o, "\n");
	if (*v->stage_error) {
		put(&o, "stage error:       ");
		put_ext(&o, v->stage_error);
		put(&o, "\n");
	}
	put(&o, "watchdog:          %s\n", v->watchdog ? v->watchdog : "absent");
	if (v->confirm && *v->confirm)
		put(&o, "confirmation:      %s\n", v->confirm);
	if (*v->oneshot_note) {
		put(&o, "one-shot entry:    ");
		put_ext(&o, v->oneshot_note);
		put(&o, " (");
		put_time(&o, v->oneshot_note_time);
		put(&o, ")\n");
	}
	if (v->last_cause != RR_CAUSE_NONE) {
		put(&o, "last failure:      %s (", wdog_cause_name(v->last_cause));
		put_ext(&o, v->last_cause_detail);
		put(&o, ", ");
		put_time(&o, v->last_cause_time);
		put(&o, ")\n");
	}
	put_secure_text(&o, v);
	put_crash_text(&o, v);
	put_fleet_text(&o, v);
	return o.full ? -ENOBUFS : (int)o.used;
}

int control_listen(const char *path, struct rr_err *e)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = -1;

	if (strlen(path) >= sizeof(sa.sun_path))
		return rr_errf(e, ENAMETOOLONG, "%s: socket path too long", path);
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return rr_errf(e, errno, "socket: %s", strerror(errno));
	unlink(path);
	/* 0600 from the start: no window in which others could connect */
	mode_t old = umask(0177);
	int r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r < 0 || listen(fd, 8) < 0)
		return rr_errf(e, errno, "%s: cannot listen: %s", path, strerror(errno));
	return TAKE_FD(fd);
}

/*
 * Each connection is an event source of its own with a deadline: the line
 * is read as it arrives, without ever blocking the loop, so a client that
 * trickles its bytes (or sends none) costs rerandd nothing but a slot
 * until CTL_DEADLINE_USEC, while other clients are answered and the
 * watchdog is fed.  At most CTL_MAX_CONNS wait at once; more are turned
 * away at once.
 */
#define CTL_DEADLINE_USEC (2 * 1000000ULL)
#define CTL_MAX_CONNS 32

struct ctl_server;
struct ctl_conn {
	struct ctl_server *srv;
	int fd;
	size_t got;
	char line[RR_CTL_LINE];
	sd_event_source *io, *timer;
	struct ucred peer;                  /* SO_PEERCRED at accept */
	char unit[256];                     /* the peer's systemd unit, "" unknown */
};
struct ctl_server {
	sd_event *ev;
	control_fn fn;
	void *ud;
	unsigned nconns;
};

static void conn_free(struct ctl_conn *c, bool close_fd)
{
	c->srv->nconns--;
	sd_event_source_disable_unref(c->io);
	sd_event_source_disable_unref(c->timer);
	if (close_fd)
		close(c->fd);
	free(c);
}

static int on_conn_deadline(sd_event_source *s, uint64_t usec, void *ud)
{
	struct ctl_conn *c = ud;

	(void)s;
	(void)usec;
	control_reply(c->fd, false, "no complete command line in time\n");
	conn_free(c, true);
	return 0;
}

/* ---- the audit trail: who asked for what ----------------------------------
 * The peer as the kernel saw it at connect (SO_PEERCRED: uid, pid) and the
 * unit its pid was in then (its cgroup, through sd_pid_get_unit(), else a
 * user unit, else ""), read at accept while the peer still waits. */
static void control_peer_unit(pid_t pid, char *out, size_t len)
{
	_cleanup_free_ char *u = NULL;

	out[0] = 0;
	if (sd_pid_get_unit(pid, &u) >= 0 || sd_pid_get_user_unit(pid, &u) >= 0)
		snprintf(out, len, "%s", u);
}

static const char *control_verb(enum rr_ctl_cmd cmd, bool *changes)
{
	*changes = true;
	switch (cmd) {
	case RR_CTL_NOW:                 return RR_CTLV_NOW;
	case RR_CTL_HOLD:                return RR_CTLV_HOLD;
	case RR_CTL_RELEASE:             return RR_CTLV_UNHOLD;
	case RR_CTL_FLEET_RELEASE:       return RR_CTLV_FLEET_RELEASE;
	case RR_CTL_FLEET_CLEAR_BREAKER: return RR_CTLV_FLEET_CLEAR_BREAKER;
	case RR_CTL_NOW_WITHDRAW:        return RR_CTLV_NOW_WITHDRAW;
	case RR_CTL_BUILD:               return RR_CTLV_BUILD;
	default:                         break;
	}
	*changes = false;
	switch (cmd) {
	case RR_CTL_STATUS:            return RR_CTLV_STATUS;
	case RR_CTL_STATUS_JSON:       return RR_CTLV_STATUS_JSON;
	case RR_CTL_DUE:               return RR_CTLV_DUE;
	case RR_CTL_PHASE:             return RR_CTLV_PHASE;
	case RR_CTL_FLEET_STATUS:      return RR_CTLV_FLEET_STATUS;
	case RR_CTL_FLEET_STATUS_JSON: return RR_CTLV_FLEET_STATUS_JSON;
	case RR_CTL_HISTORY:           return RR_CTLV_HISTORY;
	case RR_CTL_HISTORY_JSON:      return RR_CTLV_HISTORY_JSON;
	default:                       *changes = true;  /* a root peer sending junk */
				       return "unknown";
	}
}

/* Every command that changes something, at notice; the read-only ones
 * (`rerand status`, `now --wait` polling the phase) at debug only, so that
 * they do not drown the rest. */
static void control_audit(const struct ctl_conn *c, enum rr_ctl_cmd cmd, const char *arg)
{
	bool changes;
	const char *verb = control_verb(cmd, &changes);
	char f_cmd[64], f_arg[RR_CTL_LINE + 32], f_uid[32], f_pid[32], f_unit[300];
	const char *fields[] = { f_cmd, f_uid, f_pid, f_unit, f_arg };

	snprintf(f_cmd, sizeof(f_cmd), "RERAND_COMMAND=%s", verb);
	snprintf(f_uid, sizeof(f_uid), "RERAND_PEER_UID=%u", (unsigned)c->peer.uid);
	snprintf(f_pid, sizeof(f_pid), "RERAND_PEER_PID=%d", (int)c->peer.pid);
	snprintf(f_unit, sizeof(f_unit), "RERAND_PEER_UNIT=%s", c->unit);
	snprintf(f_arg, sizeof(f_arg), "RERAND_COMMAND_ARG=%s", arg);
	audit_log(changes ? RR_LOG_NOTICE : RR_LOG_DEBUG, RR_MSGID_CONTROL, fields,
		  *arg ? 5 : 4, "control command \"%s%s%s\" from uid %u pid %d unit %s", verb,
		  *arg ? " " : "", arg, (unsigned)c->peer.uid, (int)c->peer.pid,
		  *c->unit ? c->unit : "(none)");
}

static int on_conn_read(sd_event_source *s, int fd, uint32_t revents, void *ud)
{
	struct ctl_conn *c = ud;
	char arg[RR_CTL_LINE];
	enum rr_ctl_cmd cmd;
	char *nl;

	(void)s;
	(void)revents;
	for (;;) {
		ssize_t n = read(fd, c->line + c->got, sizeof(c->line) - c->got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;                   /* more later */
		if (n > 0)
			c->got += (size_t)n;
		nl = memchr(c->line, '\n', c->got);
		if (nl || n <= 0 || c->got == sizeof(c->line))
			break;
	}
	cmd = nl ? control_parse_arg(c->line, (size_t)(nl - c->line), arg, sizeof(arg)) : RR_CTL_BAD;
	control_audit(c, cmd, cmd == RR_CTL_BAD ? "" : arg);
	/* the answer goes out at once (a status fits the socket's buffer),
	 * or fn keeps the connection to answer later */
	conn_free(c, !c->srv->fn(c->srv->ud, cmd, arg, c->fd));
	return 0;
}

static int on_listen(sd_event_source *s, int lfd, uint32_t revents, void *ud)
{
	struct ctl_server *srv = ud;
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	struct ctl_conn *c;
	uint64_t now;
	_cleanup_close_ int fd = -1;

	(void)s;
	(void)revents;
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return 0;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0 || cred.uid != 0) {
		control_reply(fd, false, "permission denied: root only\n");
		return 0;
	}
	if (srv->nconns >= CTL_MAX_CONNS) {
		control_reply(fd, false, "busy: too many connections waiting for their command\n");
		return 0;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return 0;
	c->srv = srv;
	c->fd = TAKE_FD(fd);
	c->peer = cred;
	control_peer_unit(cred.pid, c->unit, sizeof(c->unit));
	srv->nconns++;
	if (sd_event_now(srv->ev, CLOCK_MONOTONIC, &now) < 0 ||
	    sd_event_add_io(srv->ev, &c->io, c->fd, EPOLLIN, on_conn_read, c) < 0 ||
	    sd_event_add_time(srv->ev, &c->timer, CLOCK_MONOTONIC, now + CTL_DEADLINE_USEC, 0,
			      on_conn_deadline, c) < 0)
		conn_free(c, true);
	return 0;
}

int control_serve(sd_event *ev, int lfd, control_fn fn, void *ud)
{
	static struct ctl_server srv;       /* one control socket per rerandd */

	srv = (struct ctl_server){ .ev = ev, .fn = fn, .ud = ud };
	return sd_event_add_io(ev, NULL, lfd, EPOLLIN, on_listen, &srv);
}

int control_reply(int fd, bool ok, const char *body)
{
	char head[16];
	const char *parts[2] = { head, body };
	size_t lens[2];

	snprintf(head, sizeof(head), "%s", ok ? RR_CTL_OK : RR_CTL_ERROR);
	lens[0] = strlen(head);
	lens[1] = strlen(body);
	for (int i = 0; i < 2; i++) {
		size_t done = 0;
		while (done < lens[i]) {
			ssize_t n = send(fd, parts[i] + done, lens[i] - done, MSG_NOSIGNAL);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return -errno;
			done += (size_t)n;
		}
	}
	return 0;
}
