/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The parsing half of a staging helper (issue 39: no parser runs as uid 0).
 * The helpers that look at what the builder wrote (rerandd-plan checks a
 * cached image, rerandd-check the builder's output and sbsign's) are split
 * in two.  The root half (the helper itself: uid 0, no capabilities,
 * no_new_privs) copies, hashes, renames and opens files, and parses
 * nothing.  The parsing half, forked from it before it gives up its
 * capabilities, becomes CheckUser= (ImageUser= by default) with no
 * capabilities in any set, an empty bounding set, no_new_privs, the
 * builder's limits and the builder's seccomp filter (sandbox.c); it is
 * handed each image and TrustCert= as descriptors over a socket pair, runs
 * the image parser, libcrypto's PKCS#7 and the stage comparison
 * (stage_check_bytes), and answers with a fixed-size record, which the root
 * half checks for size, range and termination before using a byte of it.
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "crypto_dl.h"
#include "rerandd.h"
#include "sandbox.h"

#include "stage_int.h"
#include "util.h"

#define PARSE_MAGIC 0x52525031u          /* "RRP1" */

struct parse_req {
	uint32_t magic;
	int32_t want_signed;
	int32_t source;
	int32_t has_trust;
	char path[RR_PATH + 200];          /* names the image in messages */
	char trust_cert[RR_PATH];
	char kernel[RR_PATH];
	char release[128];
	char stage_sha[65];
};

struct parse_rep {
	uint32_t magic;
	int32_t r;
	char msg[RR_ERR_MAX];
	char signer[256];
	char signature[12];
	char anchor[256];
};

/* The parsing half of this process, if it has one. */
static struct {
	int fd;
	pid_t pid, owner;
	char why[RR_ERR_MAX];              /* why it did not start, for each check */
	int err;
} parser = { -1, 0, 0, "", 0 };

/* ---- the parsing half ------------------------------------------------------ */

void stage_log_self(const char *who)
{
	char line[256], out[512] = "";
	FILE *f;

	if (rr_log_level < RR_LOG_DEBUG || !(f = fopen("/proc/self/status", "re")))
		return;
	while (fgets(line, sizeof(line), f)) {
		static const char *const keys[] = { "Uid:", "Gid:", "CapPrm:", "CapEff:", "CapBnd:",
						    "NoNewPrivs:", "Seccomp:" };
		for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
			if (!strncmp(line, keys[i], strlen(keys[i]))) {
				line[strcspn(line, "\n")] = 0;
				for (char *t = line; *t; t++)
					if (*t == '\t')
						*t = ' ';
				snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s%s",
					 *out ? "; " : "", line);
			}
	}
	fclose(f);
	rr_log(RR_LOG_DEBUG, "%s (pid %d, parent %d): %s", who, (int)getpid(), (int)getppid(), out);
}

static void serve_one(const struct parse_req *q, int img_fd, int trust_fd, struct parse_rep *rep)
{
	_cleanup_free_ uint8_t *buf = NULL, *trust = NULL;
	struct rr_stage_plan p;
	struct rr_err e = { "" };
	size_t len = 0, trust_len = 0;
	int r = 0;

	memset(&p, 0, sizeof(p));
	snprintf(p.trust_cert, sizeof(p.trust_cert), "%s", q->trust_cert);
	snprintf(p.kernel, sizeof(p.kernel), "%s", q->kernel);
	snprintf(p.release, sizeof(p.release), "%s", q->release);
	snprintf(p.stage_sha, sizeof(p.stage_sha), "%s", q->stage_sha);
	p.source = (enum rr_image_source)q->source;
	if (q->has_trust)
		r = rr_read_fd(trust_fd, q->trust_cert, 4u << 20, &trust, &trust_len, &e);
	else if (trust_fd >= 0)
		close(trust_fd);
	if (r == 0)
		r = rr_read_fd(img_fd, q->path, 512u << 20, &buf, &len, &e);
	else
		close(img_fd);
	if (r == 0)
		r = stage_check_bytes(&p, q->path, buf, len, trust, trust_len, q->want_signed, &e);
	rep->magic = PARSE_MAGIC;
	rep->r = r < 0 ? r : 0;
	snprintf(rep->msg, sizeof(rep->msg), "%s", r < 0 ? e.msg : "");
	snprintf(rep->signer, sizeof(rep->signer), "%s", p.signer);
	snprintf(rep->signature, sizeof(rep->signature), "%s", p.signature);
	snprintf(rep->anchor, sizeof(rep->anchor), "%s", p.anchor);
}

static _Noreturn void serve(int sock, const struct rr_builder *who)
{
	struct rr_err e;
	int r;

	/* nothing of rerandd's or of the root half's: its socket only, as fd 3 */
	if (dup2(sock, 3) < 0)
		_exit(1);
	(void)close_range(4, ~0U, 0);
	(void)prctl(PR_SET_NAME, "rerandd-parse", 0, 0, 0);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		_exit(1);
	r = caps_child_parser(who);
	if (r < 0) {
		rr_log(RR_LOG_ERR, "rerandd-parse: cannot drop to CheckUser=: %s", strerror(-r));
		_exit(1);
	}
	/* libcrypto loaded before the filter (its dlopen then needs nothing
	 * the filter lacks); a failure is the parse's to report */
	(void)rr_crypto_load("the image checks", &e);
	r = sandbox_parser(3);
	if (r < 0) {
		rr_log(RR_LOG_ERR, "rerandd-parse: cannot load the seccomp filter: %s", strerror(-r));
		_exit(1);
	}
	stage_log_self("rerandd-parse, the parsing half");
	for (;;) {
		struct parse_req q;
		struct parse_rep rep;
		char cbuf[CMSG_SPACE(2 * sizeof(int))];
		struct iovec iov = { &q, sizeof(q) };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
				    .msg_controllen = sizeof(cbuf) };
		struct cmsghdr *cm;
		int fds[2] = { -1, -1 }, nfd = 0;
		ssize_t n = recvmsg(3, &m, MSG_CMSG_CLOEXEC);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(0);                       /* the root half is done */
		for (cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm))
			if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
				nfd = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
				memcpy(fds, CMSG_DATA(cm), (size_t)(nfd > 2 ? 2 : nfd) * sizeof(int));
			}
		if ((size_t)n != sizeof(q) || q.magic != PARSE_MAGIC || nfd < 1 || nfd > 2 ||
		    (q.has_trust && nfd != 2))
			_exit(1);
		q.path[sizeof(q.path) - 1] = q.trust_cert[sizeof(q.trust_cert) - 1] = 0;
		q.kernel[sizeof(q.kernel) - 1] = q.release[sizeof(q.release) - 1] = 0;
		q.stage_sha[sizeof(q.stage_sha) - 1] = 0;
		memset(&rep, 0, sizeof(rep));
		serve_one(&q, fds[0], nfd == 2 ? fds[1] : -1, &rep);
		/* write(): one record on the SEQPACKET socket (send is not on
		 * the filter's list) */
		if (write(3, &rep, sizeof(rep)) != (ssize_t)sizeof(rep))
			_exit(1);
	}
}

/* ---- the root half ------------------------------------------------------------ */

void stage_parser_stop(void)
{
	if (parser.owner != getpid())
		return;
	if (parser.fd >= 0)
		close(parser.fd);
	parser.fd = -1;
	if (parser.pid > 0) {
		/* it exits at the end of its socket; SIGKILL if it is stuck */
		int st;
		for (int i = 0; i < 100 && waitpid(parser.pid, &st, WNOHANG) == 0; i++)
			usleep(10000);
		if (waitpid(parser.pid, &st, WNOHANG) == 0) {
			kill(parser.pid, SIGKILL);
			waitpid(parser.pid, &st, 0);
		}
	}
	parser.pid = 0;
	parser.owner = 0;
}

static int parser_start(const struct rr_config *c, struct rr_err *e);

int stage_parser_start(const struct rr_config *c, struct rr_err *e)
{
	int r = parser_start(c, e);

	/* each check says why it could not be made */
	parser.err = r < 0 ? -r : 0;
	snprintf(parser.why, sizeof(parser.why), "%s", r < 0 ? e->msg : "");
	if (r < 0)
		parser.owner = getpid();
	return r;
}

static int parser_start(const struct rr_config *c, struct rr_err *e)
{
	struct rr_builder who = { .kernel_fd = -1, .out_fd = -1 };
	int sv[2], r;
	pid_t pid;

	if (parser.owner == getpid() && parser.fd >= 0)
		return 0;
	/* inherited from the process that forked this one: not ours */
	if (parser.fd >= 0 && parser.owner != getpid())
		close(parser.fd);
	parser.fd = -1;
	parser.pid = 0;
	r = stage_checker_identity(c, &who, e);
	if (r < 0)
		return r;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return rr_errf(e, errno, "the image checks: socketpair: %s", strerror(errno));
	pid = fork();
	if (pid < 0) {
		r = errno;
		close(sv[0]);
		close(sv[1]);
		return rr_errf(e, r, "the image checks: fork: %s", strerror(r));
	}
	if (pid == 0) {
		close(sv[0]);
		serve(sv[1], &who);
	}
	close(sv[1]);
	parser.fd = sv[0];
	parser.pid = pid;
	parser.owner = getpid();
	return 0;
}

/* The image open as img_fd (and TrustCert= as trust_fd, or -1) checked by
 * the parsing half; p->signer, signature and anchor from its answer. */
static int parse_remote(struct rr_stage_plan *p, const char *path, int img_fd, int trust_fd,
			bool want_signed, struct rr_err *e)
{
	struct parse_req q;
	struct parse_rep rep;
	char cbuf[CMSG_SPACE(2 * sizeof(int))];
	int fds[2] = { img_fd, trust_fd }, nfd = trust_fd >= 0 ? 2 : 1;
	struct iovec iov = { &q, sizeof(q) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = CMSG_SPACE((size_t)nfd * sizeof(int)) };
	struct cmsghdr *cm;
	ssize_t n;

	if (parser.fd < 0 && parser.owner == getpid() && parser.err)
		return rr_errf(e, parser.err, "%s", parser.why);
	if (parser.fd < 0 || parser.owner != getpid())
		return rr_errf(e, ENOTCONN, "%s: no image checker is running (as CheckUser=): not "
			       "checked, not staged", path);
	memset(&q, 0, sizeof(q));
	memset(cbuf, 0, sizeof(cbuf));
	q.magic = PARSE_MAGIC;
	q.want_signed = want_signed;
	q.source = (int32_t)p->source;
	q.has_trust = trust_fd >= 0;
	snprintf(q.path, sizeof(q.path), "%s", path);
	snprintf(q.trust_cert, sizeof(q.trust_cert), "%s", p->trust_cert);
	snprintf(q.kernel, sizeof(q.kernel), "%s", p->kernel);
	snprintf(q.release, sizeof(q.release), "%s", p->release);
	snprintf(q.stage_sha, sizeof(q.stage_sha), "%s", p->stage_sha);
	cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN((size_t)nfd * sizeof(int));
	memcpy(CMSG_DATA(cm), fds, (size_t)nfd * sizeof(int));
	if (sendmsg(parser.fd, &m, MSG_NOSIGNAL) != (ssize_t)sizeof(q))
		return rr_errf(e, EIO, "%s: cannot hand the image to its checker: %s", path,
			       strerror(errno));
	do
		n = recv(parser.fd, &rep, sizeof(rep), MSG_TRUNC);
	while (n < 0 && errno == EINTR);
	/* size-checked: exactly one record, its strings ended, its values in range */
	if (n != (ssize_t)sizeof(rep) || rep.magic != PARSE_MAGIC || rep.r > 0 || rep.r < -4095 ||
	    !memchr(rep.msg, 0, sizeof(rep.msg)) || !memchr(rep.signer, 0, sizeof(rep.signer)) ||
	    !memchr(rep.signature, 0, sizeof(rep.signature)) ||
	    !memchr(rep.anchor, 0, sizeof(rep.anchor)) ||
	    (strcmp(rep.signature, "none") && strcmp(rep.signature, "bad") &&
	     strcmp(rep.signature, "verified") && *rep.signature) ||
	    (rep.r < 0 && !*rep.msg))
		return rr_errf(e, EIO, "%s: its checker (CheckUser=) gave %s: not checked, not staged",
			       path, n <= 0 ? "no answer" : "an answer out of shape");
	if (rep.r < 0)
		return rr_errf(e, -rep.r, "%s", rep.msg);
	snprintf(p->signer, sizeof(p->signer), "%s", rep.signer);
	snprintf(p->signature, sizeof(p->signature), "%s", rep.signature);
	snprintf(p->anchor, sizeof(p->anchor), "%s", rep.anchor);
	return 0;
}

/* A regular file opened for reading, as rr_read_file opens one. */
static int open_regular(const char *path, struct rr_err *e)
{
	struct stat st;
	int fd;

	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
		return rr_errf(e, EINVAL, "%s: %s, not a regular file: refused", path,
			       rr_file_type_name(st.st_mode));
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return rr_errf(e, errno, "%s: cannot open: %s", path, strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || fcntl(fd, F_SETFL, O_RDONLY) < 0) {
		close(fd);
		return rr_errf(e, EINVAL, "%s: not a regular file: refused", path);
	}
	return fd;
}

int stage_check_image(struct rr_stage_plan *p, const char *path, bool want_signed,
		      struct rr_err *e)
{
	_cleanup_close_ int img = -1, trust = -1;

	if (*p->trust_cert && (trust = open_regular(p->trust_cert, e)) < 0)
		return trust;
	if ((img = open_regular(path, e)) < 0)
		return img;
	return parse_remote(p, path, img, trust, want_signed, e);
}
