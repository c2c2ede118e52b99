/* SPDX-License-Identifier: GPL-2.0-only */
/* A STAND-IN for systemd-logind's inhibitor locks, for
 * tests/daemon/test-inhibit-daemon.sh: logind itself cannot run here (it
 * needs systemd as PID 1: it subscribes to the manager at start).  It owns
 * org.freedesktop.login1 on the bus it is started on (the test's own
 * dbus-daemon) and answers the two methods of org.freedesktop.login1.Manager
 * that take and list locks, as systemd's src/login/logind-dbus.c does:
 *   Inhibit(s what, s who, s why, s mode) -> h: the caller's euid and pid
 *     from its bus credentials (what dbus-daemon saw at connect: the
 *     kernel's SO_PEERCRED), the lock held until every copy of the returned
 *     fd is closed (the write end of a pipe whose read end is watched);
 *   ListInhibitors() -> a(ssssuu): what, who, why, mode, uid, pid.
 * Not modelled: polkit (every caller may take any lock: what the stock
 * policy grants a local session's user for "block" on "shutdown"), delay
 * locks' effect, the other methods.  The real client, systemd-inhibit,
 * talks to it unchanged. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#define MAX_LOCKS 32

struct lock {
	bool used;
	char what[64], who[256], why[256], mode[16];
	uint32_t uid, pid;
	sd_event_source *src;
};
static struct lock locks[MAX_LOCKS];

static int on_closed(sd_event_source *s, int fd, uint32_t revents, void *ud)
{
	struct lock *l = ud;

	fprintf(stderr, "mock-logind: released %s by uid %u pid %u\n", l->who, l->uid, l->pid);
	sd_event_source_disable_unref(l->src);
	close(fd);
	memset(l, 0, sizeof(*l));
	return 0;
}

static int method_inhibit(sd_bus_message *m, void *ud, sd_bus_error *err)
{
	const char *what, *who, *why, *mode;
	sd_bus_creds *creds = NULL;
	struct lock *l = NULL;
	uid_t uid;
	pid_t pid;
	int p[2], r;

	r = sd_bus_message_read(m, "ssss", &what, &who, &why, &mode);
	if (r < 0)
		return r;
	if (strcmp(mode, "block") && strcmp(mode, "delay") && strcmp(mode, "block-weak"))
		return sd_bus_error_setf(err, SD_BUS_ERROR_INVALID_ARGS, "Invalid mode %s", mode);
	r = sd_bus_query_sender_creds(m, SD_BUS_CREDS_EUID | SD_BUS_CREDS_PID, &creds);
	if (r < 0)
		return r;
	if (sd_bus_creds_get_euid(creds, &uid) < 0 || sd_bus_creds_get_pid(creds, &pid) < 0) {
		sd_bus_creds_unref(creds);
		return sd_bus_error_setf(err, SD_BUS_ERROR_ACCESS_DENIED, "no credentials");
	}
	sd_bus_creds_unref(creds);
	for (int i = 0; i < MAX_LOCKS && !l; i++)
		if (!locks[i].used)
			l = &locks[i];
	if (!l)
		return sd_bus_error_setf(err, SD_BUS_ERROR_LIMITS_EXCEEDED, "too many locks");
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	*l = (struct lock){ .used = true, .uid = uid, .pid = (uint32_t)pid };
	snprintf(l->what, sizeof(l->what), "%s", what);
	snprintf(l->who, sizeof(l->who), "%s", who);
	snprintf(l->why, sizeof(l->why), "%s", why);
	snprintf(l->mode, sizeof(l->mode), "%s", mode);
	r = sd_event_add_io(sd_bus_get_event(sd_bus_message_get_bus(m)), &l->src, p[0], EPOLLHUP,
			    on_closed, l);
	if (r < 0) {
		close(p[0]);
		close(p[1]);
		memset(l, 0, sizeof(*l));
		return r;
	}
	fprintf(stderr, "mock-logind: %s lock on %s by uid %u pid %u: %s (%s)\n", mode, what, uid,
		(unsigned)pid, who, why);
	r = sd_bus_reply_method_return(m, "h", p[1]);
	close(p[1]);                           /* sent: the caller's copy holds it */
	return r;
}

static int method_list(sd_bus_message *m, void *ud, sd_bus_error *err)
{
	sd_bus_message *reply = NULL;
	int r;

	r = sd_bus_message_new_method_return(m, &reply);
	if (r >= 0)
		r = sd_bus_message_open_container(reply, 'a', "(ssssuu)");
	for (int i = 0; r >= 0 && i < MAX_LOCKS; i++)
		if (locks[i].used)
			r = sd_bus_message_append(reply, "(ssssuu)", locks[i].what, locks[i].who,
						  locks[i].why, locks[i].mode, locks[i].uid,
						  locks[i].pid);
	if (r >= 0)
		r = sd_bus_message_close_container(reply);
	if (r >= 0)
		r = sd_bus_send(NULL, reply, NULL);
	sd_bus_message_unref(reply);
	return r;
}

static const sd_bus_vtable manager[] = {
	SD_BUS_VTABLE_START(0),
	SD_BUS_METHOD("Inhibit", "ssss", "h", method_inhibit, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD("ListInhibitors", "", "a(ssssuu)", method_list, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_VTABLE_END
};

int main(int argc, char **argv)
{
	sd_event *ev = NULL;
	sd_bus *bus = NULL;
	int r;

	if (argc != 2) {
		fprintf(stderr, "usage: mock-logind BUS-ADDRESS\n");
		return 2;
	}
	if ((r = sd_event_default(&ev)) < 0 || (r = sd_bus_new(&bus)) < 0 ||
	    (r = sd_bus_set_address(bus, argv[1])) < 0 ||
	    (r = sd_bus_set_bus_client(bus, 1)) < 0 || (r = sd_bus_start(bus)) < 0 ||
	    (r = sd_bus_add_object_vtable(bus, NULL, "/org/freedesktop/login1",
					  "org.freedesktop.login1.Manager", manager, NULL)) < 0 ||
	    (r = sd_bus_request_name(bus, "org.freedesktop.login1", 0)) < 0 ||
	    (r = sd_bus_attach_event(bus, ev, 0)) < 0) {
		fprintf(stderr, "mock-logind: %s: %s\n", argv[1], strerror(-r));
		return 1;
	}
	fprintf(stderr, "mock-logind: ready on %s\n", argv[1]);
	r = sd_event_loop(ev);
	return r < 0 ? 1 : 0;
}
