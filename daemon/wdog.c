/* SPDX-License-Identifier: GPL-2.0-only */
/* The hardware watchdog across a rerandomizing kexec, and the name of what
 * went wrong when a rerandomized boot did not come back by itself.
 *
 * Facts this rests on (Linux 6.1-6.16 sources, docs/operations.md):
 *  - A watchdog left running by a close without the magic 'V' keeps
 *    counting; nothing in userspace feeds it any more.
 *  - kexec goes through kernel_restart_prepare(): the reboot notifier the
 *    watchdog core registers for drivers that call watchdog_stop_on_reboot()
 *    (i6300esb, iTCO_wdt, sp5100_tco ...) stops it, unless the running kernel
 *    was booted with watchdog.stop_on_reboot=0.
 *  - In the new kernel, iTCO_wdt marks a running timer WDOG_HW_RUNNING and
 *    the core pings it until userspace opens the device (watchdog.handle_boot,
 *    Debian's default); i6300esb's probe stops it.  So the hardware covers
 *    the new kernel up to the driver's probe at least, and rerandd takes
 *    the device over as soon as it starts.
 * Library code: no logging, errors in struct rr_err. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/watchdog.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "rerandd.h"

static const char *cause_names[] = { "none", "watchdog", "panic", "check-failed",
				     "never-confirmed", "no-trace" };

const char *wdog_cause_name(enum rr_cause c)
{
	return (unsigned)c < RR_NR_CAUSES ? cause_names[c] : "unknown";
}

int wdog_cause_parse(const char *s, enum rr_cause *ret)
{
	for (unsigned i = 0; i < RR_NR_CAUSES; i++)
		if (!strcmp(s, cause_names[i])) {
			*ret = i;
			return 0;
		}
	return -EINVAL;
}

/* A small sysfs file as an integer. */
static int read_long(const char *path, long *ret)
{
	_cleanup_free_ char *text = NULL;
	char *end;
	long v;
	int r = rr_read_text(path, 4096, &text, NULL);   /* sysfs says 4096 bytes */

	if (r < 0)
		return r;
	errno = 0;
	v = strtol(text, &end, 0);
	if (errno || end == text || (*end && *end != '\n'))
		return -EINVAL;
	*ret = v;
	return 0;
}

void wdog_validate(const struct rr_config *c, const char *name, struct rr_cfg_errs *errs,
		   void (*add)(struct rr_cfg_errs *, const char *, ...))
{
	char path[RR_PATH + 32];
	long max;

	if (c->confirm_timeout < 60 || c->confirm_timeout > 24 * 3600)
		add(errs, "%s: ConfirmTimeoutSec= must be between 1min and 1d", name);
	if (c->kexec_watchdog == RR_WDOG_OFF)
		return;
	/* shutdown, kexec, the stage and a kernel start alone take that long */
	if (c->kexec_watchdog < 30)
		add(errs, "%s: KexecWatchdogSec=%llds is shorter than 30s: it would reset "
		    "healthy boots (or \"off\")", name, (long long)c->kexec_watchdog);
	/* rerandd takes the watchdog over only once the new boot starts it: a boot
	 * that ConfirmTimeoutSec= still accepts must not be reset before that */
	else if (c->kexec_watchdog < c->confirm_timeout)
		add(errs, "%s: KexecWatchdogSec=%llds is shorter than ConfirmTimeoutSec=%llds: "
		    "a boot slower than the watchdog but within the confirmation time would be "
		    "reset; raise KexecWatchdogSec= or lower ConfirmTimeoutSec=", name,
		    (long long)c->kexec_watchdog, (long long)c->confirm_timeout);
	snprintf(path, sizeof(path), "%s/max_timeout", c->watchdog_sysfs);
	if (*c->watchdog_sysfs && read_long(path, &max) == 0 && max > 0 &&
	    c->kexec_watchdog > max)
		add(errs, "%s: KexecWatchdogSec=%llds is longer than the watchdog can count "
		    "(%s: %lds): lower ConfirmTimeoutSec= and KexecWatchdogSec= to at most %lds",
		    name, (long long)c->kexec_watchdog, path, max, max);
}

bool wdog_present(const struct rr_config *c)
{
	return c->kexec_watchdog != RR_WDOG_OFF && *c->watchdog_dev &&
	       access(c->watchdog_dev, F_OK) == 0;
}

int wdog_open(const struct rr_config *c, int64_t timeout, int *ret_fd, struct rr_err *e)
{
	int fd, t = (int)timeout, got;

	fd = open(c->watchdog_dev, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		int r = errno;
		return rr_errf(e, r, "%s: %s%s", c->watchdog_dev, strerror(r),
			       r == EBUSY ? " (held by another process: systemd's "
			       "RuntimeWatchdogSec=? see docs/operations.md)" : "");
	}
	if (ioctl(fd, WDIOC_SETTIMEOUT, &t) < 0) {
		int r = errno;
		/* stopped again: a watchdog we could not set must not reset the machine */
		(void)!write(fd, "V", 1);
		close(fd);
		return rr_errf(e, r, "%s: cannot set a timeout of %llds: %s", c->watchdog_dev,
			       (long long)timeout, strerror(r));
	}
	got = t;
	if (ioctl(fd, WDIOC_GETTIMEOUT, &got) == 0 && got < timeout) {
		(void)!write(fd, "V", 1);
		close(fd);
		return rr_errf(e, ERANGE, "%s: asked for %llds, the driver set %ds", c->watchdog_dev,
			       (long long)timeout, got);
	}
	if (ioctl(fd, WDIOC_KEEPALIVE, 0) < 0)
		(void)!write(fd, "\0", 1);
	*ret_fd = fd;
	return 0;
}

int wdog_feed(int fd)
{
	if (ioctl(fd, WDIOC_KEEPALIVE, 0) == 0)
		return 0;
	return write(fd, "\0", 1) == 1 ? 0 : -errno;
}

int wdog_leave_running(int fd)
{
	/* no magic character: the driver keeps the timer running */
	return close(fd) < 0 ? -errno : 0;
}

int wdog_stop(int fd)
{
	int r = write(fd, "V", 1) == 1 ? 0 : -errno;
	close(fd);
	return r;
}

int wdog_stops_on_reboot(const struct rr_config *c)
{
	long v;

	if (!*c->watchdog_stop_on_reboot)
		return 0;
	/* -1 (the default) leaves it to the driver: all the common ones stop */
	if (read_long(c->watchdog_stop_on_reboot, &v) < 0)
		return -1;                 /* not loaded yet: unknown */
	return v != 0;
}

int wdog_start_note(const struct rr_config *c, char *msg, size_t len)
{
	struct stat st;
	int stops;

	if (c->kexec_watchdog == RR_WDOG_OFF)
		return -1;
	if (!wdog_present(c)) {
		/* sysfs is the machine's; /dev is rerandd's own (PrivateDevices=),
		 * filled once, when it starts */
		if (*c->watchdog_sysfs && stat(c->watchdog_sysfs, &st) == 0) {
			snprintf(msg, len, "the machine has %s but rerandd has no %s: its driver was "
				 "loaded after rerandd started; no watchdog across a kexec until rerandd "
				 "restarts (systemctl restart rerandd). Load the driver at boot: "
				 "/usr/lib/rerand/watchdog-setup names it in /etc/modules-load.d/",
				 c->watchdog_sysfs, c->watchdog_dev);
			return RR_LOG_WARNING;
		}
		snprintf(msg, len, "no hardware watchdog (%s): a rerandomized boot that hangs before "
			 "rerandd starts is not reset by one (rerand doctor; "
			 "/usr/lib/rerand/watchdog-setup loads this machine's driver if it has one)",
			 *c->watchdog_dev ? c->watchdog_dev : "Watchdog= is empty");
		return RR_LOG_NOTICE;
	}
	stops = wdog_stops_on_reboot(c);
	if (stops == 1) {
		snprintf(msg, len, "%s: this kernel stops it at a reboot (watchdog.stop_on_reboot is "
			 "not 0: watchdog.ko was loaded before /usr/lib/modprobe.d/rerand.conf, or "
			 "that is masked): a kexec from this boot is covered up to its shutdown only, "
			 "until a boot through the firmware; rerandd's kexecs pass the option on",
			 c->watchdog_dev);
		return RR_LOG_WARNING;
	}
	snprintf(msg, len, "%s: armed across each kexec for %llds%s", c->watchdog_dev,
		 (long long)c->kexec_watchdog, stops == 0 ? ", and this kernel keeps it counting "
		 "through the kexec (watchdog.stop_on_reboot=0)" : "");
	return RR_LOG_INFO;
}

int wdog_bootstatus(const struct rr_config *c, bool *ret_reset)
{
	char path[RR_PATH + 32];
	long v;

	snprintf(path, sizeof(path), "%s/bootstatus", c->watchdog_sysfs);
	if (!*c->watchdog_sysfs || read_long(path, &v) < 0)
		return -ENOENT;
	*ret_reset = (v & WDIOF_CARDRESET) != 0;
	return 0;
}

void wdog_redact(char *s)
{
	/* A panic line may carry an address of the dead kernel: long runs of
	 * hex digits go, whatever they were. */
	char *w = s;

	for (char *p = s; *p;) {
		size_t n = 0;
		const char *q = p;
		if (q[0] == '0' && (q[1] == 'x' || q[1] == 'X'))
			q += 2;
		while (isxdigit((unsigned char)q[n]))
			n++;
		if (n >= 6 && (p == s || !isalnum((unsigned char)p[-1]))) {
			*w++ = '#';
			p = (char *)q + n;
			continue;
		}
		*w++ = isprint((unsigned char)*p) ? *p : '?';
		p++;
	}
	*w = 0;
}

int wdog_pstore_panic(const char *dir, char *line, size_t len)
{
	struct dirent **list;
	int n, found = 0;

	if (!*dir)
		return 0;
	n = scandir(dir, &list, NULL, alphasort);
	if (n < 0)
		return 0;
	for (int i = 0; i < n; i++) {
		_cleanup_free_ char *text = NULL;
		char path[RR_PATH + 300], *p;

		if (!found && !strncmp(list[i]->d_name, "dmesg-", 6)) {
			snprintf(path, sizeof(path), "%s/%s", dir, list[i]->d_name);
			if (rr_read_text(path, 1u << 20, &text, NULL) == 0 &&
			    (p = strstr(text, "Kernel panic - not syncing"))) {
				size_t l = strcspn(p, "\n");
				if (l >= len)
					l = len - 1;
				memcpy(line, p, l);
				line[l] = 0;
				wdog_redact(line);
				found = 1;
			}
		}
		free(list[i]);
	}
	free(list);
	return found;
}

enum rr_cause wdog_cause(bool reached_rerandd, bool wd_reset, bool panic)
{
	/* the panic is the root cause even when the watchdog fired after it */
	if (panic)
		return RR_CAUSE_PANIC;
	if (wd_reset)
		return RR_CAUSE_WATCHDOG;
	return reached_rerandd ? RR_CAUSE_UNCONFIRMED : RR_CAUSE_NO_TRACE;
}

/* The kernel's watchdog core stops the timer at every reboot, the kexec's
 * included, unless booted with watchdog.stop_on_reboot=0 (read-only at run
 * time): the word goes on the staged line so that the next rerandomization,
 * from the kernel booted now, keeps the watchdog counting across its kexec.
 * Put first, so that it stays ahead of a "--" and init's arguments. */
int wdog_cmdline(const struct rr_config *c, const char *in, char *out, size_t len,
		 struct rr_err *e)
{
	static const char word[] = "watchdog.stop_on_reboot=";
	const char *p = in;
	bool have = false;
	int n;

	for (; (p = strstr(p, word)); p += sizeof(word) - 1)
		if (p == in || p[-1] == ' ' || p[-1] == '\t') {
			have = true;       /* the user's, or ours from the last stage */
			break;
		}
	if (c->kexec_watchdog == RR_WDOG_OFF || have)
		n = snprintf(out, len, "%s", in);
	else
		n = snprintf(out, len, "%s0%s%s", word, *in ? " " : "", in);
	if (n < 0 || (size_t)n >= len)
		return rr_errf(e, E2BIG, "the command line with %s0 is longer than %zu bytes", word,
			       len - 1);
	return 0;
}
