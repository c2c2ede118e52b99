/* SPDX-License-Identifier: GPL-2.0-only */
/* rerandd's keepalive pacing (daemon/coord.c) with the clock stepped back: the
 * wall clock jumps an hour back while a slot is held, and the next keepalive must
 * still go out LockTTL/3 after the last one.  The clocks are injected by
 * interposing clock_gettime() (the real one plus offsets this test moves); the
 * keepalives are the real request lines coord writes to a socketpair standing
 * in for rerand-fleetd (the helper itself is not what is tested here). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <systemd/sd-event.h>
#include <time.h>
#include <unistd.h>

#include "rerandd.h"
#include "test.h"

/* ---- the injected clocks ---------------------------------------------------- */
static int64_t passed_ns;        /* time that passed, on every clock */
static int64_t wall_step_ns;     /* steps of CLOCK_REALTIME alone (settimeofday, NTP) */

int clock_gettime(clockid_t id, struct timespec *ts)
{
	int64_t ns;

	if (syscall(SYS_clock_gettime, id, ts) < 0)
		return -1;
	ns = (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec + passed_ns;
	if (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)
		ns += wall_step_ns;
	ts->tv_sec = ns / 1000000000;
	ts->tv_nsec = ns % 1000000000;
	return 0;
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *ud)
{
	return 0;
}

/* The request lines coord sent since the last call ("" when none). */
static void sent(int fd, char *buf, size_t len)
{
	ssize_t n = recv(fd, buf, len - 1, MSG_DONTWAIT);

	buf[n > 0 ? n : 0] = 0;
}

int main(void)
{
	struct rr_coord *co = calloc(1, sizeof(*co));
	sd_event *ev = NULL;
	char line[4096];
	int sv[2];

	rr_log_level = RR_LOG_ERR;
	if (!co || sd_event_new(&ev) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		printf("Bail out! setup: %s\n", strerror(errno));
		return 1;
	}
	/* a connected, greeted helper with the slot held: what coord has between
	 * taking the slot and the reboot */
	fleet_config_defaults(&co->cfg);
	co->cfg.backend = FLEET_BACKEND_ETCD;
	co->cfg.lock_ttl = 30;                  /* keepalives every 10 s */
	co->want = true;
	co->ev = ev;
	co->fd = sv[0];
	if (sd_event_add_io(ev, &co->io, sv[0], EPOLLIN, on_io, NULL) < 0) {
		printf("Bail out! sd_event_add_io\n");
		return 1;
	}
	co->greeted = co->opened = true;
	co->fstate = FLEET_ST_HELD;

	coord_keepalive(co);
	sent(sv[1], line, sizeof(line));
	T_OK(strstr(line, " refresh") != NULL, "a held slot is kept alive at once (sent: %.*s)",
	     (int)strcspn(line, "\n"), line);
	co->busy = CO_NONE;                     /* the helper answered */

	passed_ns += 5 * 1000000000ll;
	coord_keepalive(co);
	sent(sv[1], line, sizeof(line));
	T_OK(!*line, "5 s later (LockTTL/3 is 10 s) no keepalive yet");

	/* NTP or an admin steps the wall clock an hour back; 6 s more pass */
	wall_step_ns = -3600 * 1000000000ll;
	passed_ns += 6 * 1000000000ll;
	T_OK(coord_next_ms(co) <= coord_now_ms(),
	     "after the wall clock stepped back 1 h, the next keepalive is due now for main's "
	     "timer (in %lld ms)", (long long)(coord_next_ms(co) - coord_now_ms()));
	coord_keepalive(co);
	sent(sv[1], line, sizeof(line));
	T_OK(strstr(line, " refresh") != NULL,
	     "11 s after the last keepalive, with the wall clock 1 h back, the keepalive goes out");
	co->busy = CO_NONE;

	/* and forward: a wall clock stepped ahead does not make keepalives early */
	wall_step_ns = 7200 * 1000000000ll;
	passed_ns += 1 * 1000000000ll;
	coord_keepalive(co);
	sent(sv[1], line, sizeof(line));
	T_OK(!*line, "1 s after a keepalive, with the wall clock stepped 2 h ahead: none");

	/* coord's own teardown: the io source, sv[0], the keepalive timer
	 * coord_link_arm() added and the event loop (co->ev took this ref) */
	coord_close(co);
	close(sv[1]);
	free(co);
	return t_done();
}
