/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The image builder's seccomp allow-list (sandbox.c).  Called in the
 * builder child after caps_child_builder() (which sets no_new_privs), as the
 * last thing before exec: the filter stays across execve, so `rerand image`
 * (or a RerandBinary= wrapper) runs from its first instruction under it.
 */
#ifndef RERAND_SANDBOX_H
#define RERAND_SANDBOX_H

/* Load the filter into the calling process: 0, or a negative errno
 * (-EOPNOTSUPP on an architecture other than x86_64). */
int sandbox_builder(void);
/* The same list for the parsing half of a staging helper (stage_parse.c),
 * and recvmsg on its socket sock (the descriptors it is handed). */
int sandbox_parser(int sock);
/* The same list for sbsign (SignKey=), which rerandd runs as CheckUser=. */
int sandbox_signer(void);

#endif
