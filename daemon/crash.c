/* SPDX-License-Identifier: GPL-2.0-only */
/* rerandd's rerandomizing crash (kdump) kernel: its command line, the uevents
 * that call for a reload (memory and CPU hotplug), crash-boot detection, and
 * `rerand load --crash` with the refusal's reason kept for the status. */
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "image.h"
#include "rerandd.h"
#include "util.h"

#define CRASH_RETRY 300              /* seconds between attempts after a failure */
#define CRASH_CMDLINE_MAX 4096

static const char *state_names[] = { "off", "not-reserved", "pending", "loaded", "error",
				     "crash-boot", "other-loader" };

const char *crash_state_name(enum rr_crash_state s)
{
	return (unsigned)s < ARRAY_SIZE(state_names) ? state_names[s] : "unknown";
}

/* ---- the command line ----------------------------------------------------- */

/* Whether the word's parameter name (before '=') is one of names. */
static bool word_is(const char *w, size_t n, const char *const *names)
{
	const char *eq = memchr(w, '=', n);
	size_t kl = eq ? (size_t)(eq - w) : n;

	for (; *names; names++)
		if (strlen(*names) == kl && !memcmp(w, *names, kl))
			return true;
	return false;
}

/* The loader's: kexec-tools adds elfcorehdr= itself, rerand load the initrd. */
static const char *const loader_words[] = { "BOOT_IMAGE", "initrd", "crashkernel", "elfcorehdr",
					    NULL };
/* Dropped from the running command line: what kdump-tools drops (crashkernel=,
 * hugepages, abm=), memory layout options that would fight the crash memory
 * map, and whatever RR_CRASH_APPEND sets. */
static const char *const default_drop[] = {
	"hugepages", "hugepagesz", "default_hugepagesz", "hugetlb_cma", "cma", "abm",
	"mem", "memmap", "nr_cpus", "maxcpus", "reset_devices", "irqpoll", "nousb",
	"usbcore.nousb", "systemd.unit", "nokaslr", NULL
};

bool crash_cmdline_has_nokaslr(const char *s)
{
	const char *w;
	size_t n;

	while ((w = cmdline_next_word(&s, &n))) {
		if (n == 2 && !memcmp(w, "--", 2))
			return false;               /* the rest is init's */
		if (n == 7 && !memcmp(w, "nokaslr", 7))
			return true;
	}
	return false;
}

static int put_word(char *out, size_t len, size_t *used, const char *w, size_t n,
		    struct rr_err *e)
{
	if (*used + (*used ? 1 : 0) + n + 1 > len)
		return rr_errf(e, E2BIG, "the crash kernel's command line is longer than %zu bytes",
			       len - 1);
	if (*used)
		out[(*used)++] = ' ';
	memcpy(out + *used, w, n);
	*used += n;
	out[*used] = 0;
	return 0;
}

int crash_build_cmdline(const char *running, const char *custom, char *out, size_t len,
			struct rr_err *e)
{
	const char *s = custom ? custom : running ? running : "", *w, *rest = NULL;
	size_t used = 0, n;
	int r;

	if (!len)
		return rr_errf(e, ENOBUFS, "command line buffer too small");
	out[0] = 0;
	if (custom && crash_cmdline_has_nokaslr(custom))
		return rr_errf(e, EINVAL, "[Crash] CommandLine= has nokaslr: the crash kernel "
			       "must be randomized");
	while ((w = cmdline_next_word(&s, &n))) {
		if (n == 2 && !memcmp(w, "--", 2)) {
			rest = w;
			break;
		}
		if (word_is(w, n, loader_words) || (!custom && word_is(w, n, default_drop)))
			continue;
		if ((r = put_word(out, len, &used, w, n, e)) < 0)
			return r;
	}
	if (!custom) {
		const char *a = RR_CRASH_APPEND;
		while ((w = cmdline_next_word(&a, &n)))
			if ((r = put_word(out, len, &used, w, n, e)) < 0)
				return r;
	}
	/* init's arguments stay last, unchanged */
	while (rest && (w = cmdline_next_word(&rest, &n)))
		if ((r = put_word(out, len, &used, w, n, e)) < 0)
			return r;
	return 0;
}

/* ---- uevents ---------------------------------------------------------------- */

enum rr_hotplug crash_uevent_classify(const void *buf, size_t len)
{
	const char *p = buf, *end = p + len, *action = NULL, *subsystem = NULL;
	size_t alen = 0, slen = 0;
	bool first = true;

	/* udev's own messages start "libudev\0" and a binary header: not ours */
	if (len >= 8 && !memcmp(p, "libudev", 8))
		return RR_HP_NONE;
	while (p < end) {
		const char *z = memchr(p, 0, (size_t)(end - p));
		size_t n = z ? (size_t)(z - p) : (size_t)(end - p);

		if (first) {
			/* the kernel's header: "ACTION@DEVPATH" */
			const char *at = memchr(p, '@', n);
			if (!at || at == p)
				return RR_HP_NONE;
			if (!action) {
				action = p;
				alen = (size_t)(at - p);
			}
			first = false;
		} else if (n > 7 && !memcmp(p, "ACTION=", 7)) {
			action = p + 7;
			alen = n - 7;
		} else if (n > 10 && !memcmp(p, "SUBSYSTEM=", 10)) {
			subsystem = p + 10;
			slen = n - 10;
		}
		p += n + 1;
	}
	if (!action || !subsystem)
		return RR_HP_NONE;
#define IS(s, l, lit) ((l) == sizeof(lit) - 1 && !memcmp((s), lit, (l)))
	if (!IS(action, alen, "add") && !IS(action, alen, "remove") &&
	    !IS(action, alen, "online") && !IS(action, alen, "offline"))
		return RR_HP_NONE;
	if (IS(subsystem, slen, "memory"))
		return RR_HP_MEMORY;
	if (IS(subsystem, slen, "cpu"))
		return RR_HP_CPU;
#undef IS
	return RR_HP_NONE;
}

void crash_init(struct rr_crash *cr)
{
	memset(cr, 0, sizeof(*cr));
	cr->state = RR_CS_PENDING;
	cr->uevent_fd = -1;
}

int crash_uevent_open(const struct rr_config *c, struct rr_crash *cr, struct rr_err *e)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = 1 };
	_cleanup_close_ int fd = -1;
	int size = 1 << 20;

	if (*c->uevents) {
		/* O_RDWR: the FIFO never reports EOF when a writer goes away */
		fd = open(c->uevents, O_RDWR | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			return rr_errf(e, errno, "%s: cannot open the uevent FIFO: %s", c->uevents,
				       strerror(errno));
		cr->uevent_fd = TAKE_FD(fd);
		cr->uevent_fifo = true;
		return 0;
	}
	/* Group 1 is the kernel's own broadcast; it needs no privilege. */
	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_KOBJECT_UEVENT);
	if (fd < 0)
		return rr_errf(e, errno, "uevent socket: %s", strerror(errno));
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return rr_errf(e, errno, "uevent socket: bind: %s", strerror(errno));
	cr->uevent_fd = TAKE_FD(fd);
	cr->uevent_fifo = false;
	return 0;
}

static enum rr_hotplug worse(enum rr_hotplug a, enum rr_hotplug b)
{
	return a != RR_HP_NONE ? a : b;
}

enum rr_hotplug crash_uevent_drain(struct rr_crash *cr)
{
	enum rr_hotplug k = RR_HP_NONE;
	char buf[8192];

	for (unsigned guard = 0; guard < 10000; guard++) {
		ssize_t n;

		if (cr->uevent_fifo) {
			/* tests: one uevent per line, its fields NUL-separated, each
			 * written whole (below PIPE_BUF, so never split) */
			n = read(cr->uevent_fd, buf, sizeof(buf));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			for (char *p = buf, *end = buf + n; p < end;) {
				char *nl = memchr(p, '\n', (size_t)(end - p));
				size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
				k = worse(k, crash_uevent_classify(p, l));
				p += l + 1;
			}
			continue;
		}
		struct sockaddr_nl from;
		struct iovec iov = { buf, sizeof(buf) };
		struct msghdr mh = { .msg_name = &from, .msg_namelen = sizeof(from),
				     .msg_iov = &iov, .msg_iovlen = 1 };
		n = recvmsg(cr->uevent_fd, &mh, MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == ENOBUFS) {
			/* the queue overflowed: what was lost may have been hotplug */
			k = worse(k, RR_HP_MEMORY);
			continue;
		}
		if (n <= 0)
			break;
		if (from.nl_pid != 0 || (mh.msg_flags & MSG_TRUNC))
			continue;              /* only the kernel speaks for the kernel */
		k = worse(k, crash_uevent_classify(buf, (size_t)n));
	}
	return k;
}

/* ---- boots and sysfs ---------------------------------------------------------- */

bool crash_boot_detect(bool have_status, uint32_t status_flags, bool vmcore_exists,
		       const char *cmdline)
{
	const char *s = cmdline ? cmdline : "", *w;
	size_t n;

	if ((have_status && (status_flags & RERAND_ST_CRASH)) || vmcore_exists)
		return true;
	while ((w = cmdline_next_word(&s, &n))) {
		if (n == 2 && !memcmp(w, "--", 2))
			break;
		if (n >= 11 && !memcmp(w, "elfcorehdr=", 11))
			return true;
	}
	return false;
}

int crash_read_u64(const char *path, uint64_t *ret)
{
	_cleanup_free_ char *text = NULL;
	int r = rr_read_text(path, RR_SYSFS_MAX, &text, NULL);

	if (r < 0)
		return r;
	return watch_parse_taint(text, strlen(text), ret);   /* a decimal number and blanks */
}

/* ---- reloading ---------------------------------------------------------------- */

void crash_request(struct rr_crash *cr, time_t now, int64_t settle)
{
	/* A hotplug of many blocks is a burst of events: wait until it is
	 * quiet, but not forever. */
	if (!cr->reload_at)
		cr->first_request = now;
	/* Whole seconds: now may be late in its second, so one more keeps
	 * the quiet time at least settle seconds (it was as little as 0.1 s). */
	cr->reload_at = now + settle + 1;
	if (cr->reload_at > cr->first_request + 4 * settle + 1)
		cr->reload_at = cr->first_request + 4 * settle + 1;
}

time_t crash_next(const struct rr_config *c, const struct rr_crash *cr)
{
	time_t t = 0;

	if (c->crash_mode == RR_CRASH_OFF || cr->state == RR_CS_CRASH_BOOT)
		return 0;
	if (cr->state == RR_CS_PENDING)
		return 1;
	/* an error is tried again, another loader looked at again (disabled?) */
	if (cr->state == RR_CS_ERROR || cr->state == RR_CS_OTHER_LOADER)
		t = cr->failed_at + CRASH_RETRY;
	else if (cr->state == RR_CS_LOADED && cr->ours)
		t = cr->loaded_at + c->restage_interval;   /* a fresh seed, as for staging */
	if (cr->reload_at && (!t || cr->reload_at < t))
		t = cr->reload_at;
	return t;
}

bool crash_due(const struct rr_config *c, const struct rr_crash *cr, time_t now)
{
	time_t t = crash_next(c, cr);
	return t && now >= t;
}

void crash_refresh(const struct rr_config *c, struct rr_crash *cr)
{
	uint64_t v;

	if (cr->state == RR_CS_CRASH_BOOT)
		return;
	if (c->crash_mode == RR_CRASH_OFF) {
		cr->state = RR_CS_OFF;
		cr->reload_at = 0;
		cr->error[0] = 0;
	}
	if (crash_read_u64(c->kexec_crash_size, &v) == 0)
		cr->reserved = v;
	/* the kernel's word on it: someone may have unloaded it meanwhile */
	if (crash_read_u64(c->kexec_crash_loaded, &v) == 0) {
		cr->loaded = v != 0;
		if (!cr->loaded)
			cr->ours = false;
	}
}

/* key: the kernel hashed and the image named too (the helper's whole plan);
 * without, what rerandd checks the helper's plan against (stage_job.c). */
static int crash_plan(const struct rr_config *c, const struct rr_stage_plan *base,
		      struct rr_stage_plan *p, bool key, struct rr_err *e)
{
	int r = 0;

	if (!*c->crash_kernel && base && *base->kernel && *base->image) {
		*p = *base;                    /* the very image [Stage] staged */
	} else {
		_cleanup_free_ struct rr_config *t = malloc(sizeof(*t));
		if (!t)
			return rr_errf(e, ENOMEM, "out of memory");
		*t = *c;
		if (*c->crash_kernel)
			snprintf(t->kernel, sizeof(t->kernel), "%s", c->crash_kernel);
		/* the command line is built below; nokaslr in the running one
		 * must not stop the crash kernel */
		t->cmdline_set = true;
		t->cmdline[0] = 0;
		/* a crash of this boot: its kernel, whatever boots next */
		t->plan_running = true;
		r = key ? stage_plan(t, NULL, p, e) : stage_plan_choose(t, NULL, p, e);
		if (r < 0)
			return r;
	}
	if (!strcmp(c->crash_initrd, "none")) {
		p->initrd[0] = 0;
	} else if (*c->crash_initrd) {
		struct stat st;
		if (stat(c->crash_initrd, &st) < 0 || !S_ISREG(st.st_mode))
			return rr_errf(e, ENOENT, "%s: no such initrd (Initrd= in [Crash])",
				       c->crash_initrd);
		snprintf(p->initrd, sizeof(p->initrd), "%s", c->crash_initrd);
	}
	char built[RR_CMD];
	if (c->crash_cmdline_set) {
		r = crash_build_cmdline(NULL, c->crash_cmdline, built, sizeof(built), e);
	} else {
		_cleanup_free_ char *text = NULL;
		r = rr_read_text(c->proc_cmdline, CRASH_CMDLINE_MAX, &text, e);
		if (r < 0)
			return r;
		r = crash_build_cmdline(text, NULL, built, sizeof(built), e);
	}
	/* kdump-tools reboots once the dump is written; a crash kernel that
	 * panics on the way (too little memory in the region, a device that
	 * does not come back under reset_devices) would hang for good */
	if (r == 0)
		r = panic_cmdline(built, c->panic_reboot, p->cmdline, sizeof(p->cmdline), e);
	return r;
}

static void fail(const struct rr_config *c, struct rr_crash *cr, const char *msg, time_t now)
{
	uint64_t v;

	if (strcmp(cr->error, msg) || cr->state != RR_CS_ERROR)
		rr_log(RR_LOG_ERR, "crash kernel not loaded: %s", msg);
	snprintf(cr->error, sizeof(cr->error), "%s", msg);
	cr->state = RR_CS_ERROR;
	cr->failures++;
	cr->failed_at = now;
	/* kexec -p replaces the old crash kernel only once the new one is
	 * accepted; what the kernel says beats that assumption */
	if (crash_read_u64(c->kexec_crash_loaded, &v) == 0) {
		cr->loaded = v != 0;
		if (!cr->loaded)
			cr->ours = false;
	}
	if (cr->loaded)
		rr_log(RR_LOG_WARNING, "the crash kernel loaded before stays in place");
}

static int crash_planner(const struct rr_config *c, const void *base, struct rr_stage_plan *p,
			 struct rr_err *e)
{
	return crash_plan(c, base, p, true, e);
}

static int crash_expect(const struct rr_config *c, const void *base, struct rr_stage_plan *p,
			struct rr_err *e)
{
	return crash_plan(c, base, p, false, e);
}

struct crash_ctx {
	const struct rr_config *c;
	struct rr_crash *cr;
	time_t now;
	void (*done)(void *arg);
	void *arg;
};

static void crash_loaded(int r, const struct rr_stage_plan *p, const char *msg, void *ud)
{
	struct crash_ctx x = *(struct crash_ctx *)ud;
	struct rr_crash *cr = x.cr;
	uint64_t v;

	free(ud);
	cr->job = NULL;
	if (r < 0) {
		fail(x.c, cr, msg, x.now);
	} else if (cr->loaded = cr->ours = true,
		   crash_read_u64(x.c->kexec_crash_loaded, &v) == 0 && !v) {
		cr->loaded = cr->ours = false;
		fail(x.c, cr, "kexec -p reported success but the kernel has no crash kernel loaded",
		     x.now);
	} else {
		cr->state = RR_CS_LOADED;
		cr->loaded_at = x.now;
		cr->loads++;
		cr->error[0] = 0;
		snprintf(cr->kernel, sizeof(cr->kernel), "%s", p->kernel);
		snprintf(cr->sha, sizeof(cr->sha), "%s", p->sha);
		rr_log(RR_LOG_INFO, "crash kernel loaded: %s (sha256 %.16s) in a %llu MiB crash region, "
		       "command line: %s", p->kernel, p->sha, (unsigned long long)(cr->reserved >> 20),
		       p->cmdline);
	}
	x.done(x.arg);
}

/* UNIT's enable link in the CrashLoaderWants= directory, or in its sibling
 * basic.target.wants: Debian's kdump-tools.service is WantedBy=basic.target
 * (kdump-tools 1.8.1), Fedora's kdump.service WantedBy=multi-user.target. */
static bool crash_unit_linked(const char *wants, const char *unit)
{
	char path[RR_PATH + 64];
	const char *slash = strrchr(wants, '/');

	/* the link systemctl enable made, whatever it points at */
	snprintf(path, sizeof(path), "%s/%s", wants, unit);
	if (faccessat(AT_FDCWD, path, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		return true;
	if (!slash)
		return false;
	snprintf(path, sizeof(path), "%.*s/basic.target.wants/%s", (int)(slash - wants), wants, unit);
	return faccessat(AT_FDCWD, path, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

/* kdump-tools (Debian) or kdumpctl (Fedora's kdump.service) enabled: they
 * load their own crash kernel at boot, and two loaders replace each other's,
 * so Mode=auto leaves it to them (issue 38).  The unit's name, else NULL.
 * kdump-tools' USE_KDUMP=0 turns it off even when its unit is enabled. */
const char *crash_other_loader(const struct rr_config *c)
{
	static const char *const units[] = { "kdump-tools.service", "kdump.service" };
	char line[256];
	bool off = false;
	FILE *f;

	if (!*c->crash_loader_wants)
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(units); i++) {
		if (!crash_unit_linked(c->crash_loader_wants, units[i]))
			continue;
		if (i == 0 && *c->kdump_tools_default &&
		    (f = fopen(c->kdump_tools_default, "re"))) {
			while (fgets(line, sizeof(line), f))
				if (!strncmp(line, "USE_KDUMP=", 10))
					off = strtol(line + 10 + (line[10] == '"'), NULL, 10) == 0;
			fclose(f);
			if (off)
				continue;
		}
		return units[i];
	}
	return NULL;
}

int crash_start(sd_event *ev, const struct rr_config *c, struct rr_crash *cr,
		const struct rr_stage_plan *base, time_t now, void (*done)(void *arg), void *arg)
{
	struct rr_stage_req req = { .planner = crash_planner, .expect = crash_expect,
				    .planner_arg = base, .crash = true };
	struct rr_err e;
	struct crash_ctx *x;
	const char *other;
	int r;

	cr->reload_at = 0;
	cr->first_request = 0;
	if (cr->state == RR_CS_CRASH_BOOT || cr->job)
		return 0;
	if (c->crash_mode == RR_CRASH_OFF) {
		crash_refresh(c, cr);
		return 0;
	}
	if ((other = crash_other_loader(c))) {
		if (cr->state != RR_CS_OTHER_LOADER)
			rr_log(RR_LOG_NOTICE, "%s is enabled: the crash kernel is left to it "
			       "([Crash] Mode=auto loads none over another loader's; see "
			       "/usr/share/doc/rerand/kdump.md)", other);
		cr->state = RR_CS_OTHER_LOADER;
		cr->failed_at = now;
		cr->error[0] = 0;
		crash_refresh(c, cr);
		return 0;
	}
	r = crash_read_u64(c->kexec_crash_size, &cr->reserved);
	if (r < 0 || cr->reserved == 0) {
		if (cr->state != RR_CS_NOT_RESERVED)
			rr_log(RR_LOG_INFO, "no crash region reserved (%s: %s): no crash kernel to load; "
			       "boot with crashkernel= to have one", c->kexec_crash_size,
			       r < 0 ? strerror(-r) : "0");
		cr->reserved = 0;
		cr->state = RR_CS_NOT_RESERVED;
		cr->error[0] = 0;
		return 0;
	}
	x = malloc(sizeof(*x));
	if (!x) {
		fail(c, cr, "out of memory", now);
		return 0;
	}
	*x = (struct crash_ctx){ c, cr, now, done, arg };
	/* planned in the staging helper: crash_plan hashes the kernel */
	if ((r = stage_start(ev, c, &req, crash_loaded, x, &cr->job, &e)) < 0) {
		free(x);
		fail(c, cr, e.msg, now);
		return 0;
	}
	return 1;
}
