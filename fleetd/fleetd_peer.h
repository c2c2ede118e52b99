/* SPDX-License-Identifier: GPL-2.0-only */
/* fleetd/peer.c: rerand-fleetd's check of the process on the other end. */
#ifndef RERAND_FLEETD_PEER_H
#define RERAND_FLEETD_PEER_H

#include <stddef.h>
#include <sys/socket.h>

/* The peer on socket c (cr: its SO_PEERCRED) is alive and in cgroup (a
 * cgroupfs directory; "" = any peer passes).  0, or -EPERM and why. */
int fleetd_peer_in_cgroup(const char *cgroup, int c, const struct ucred *cr, char *why,
			  size_t len);
/* --peer-unit UNIT: its cgroup directory into out.  0, or -EINVAL (said). */
int fleetd_peer_unit_dir(const char *unit, char *out, size_t size);

#endif
