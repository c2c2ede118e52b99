/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Signing through sbsign: write the unsigned image next to the output, run
 * sbsign on it, check what it wrote, rename it into place.  A failed or
 * interrupted signing leaves no output file.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "cleanup.h"
#include "image.h"
#include "pesig.h"
#include "sign.h"

#define SBSIGN_OUTPUT_MAX 4096
#define MAX_SIGNED_FILE   (512u << 20)

/* The last non-empty line sbsign printed, control bytes replaced: it is
 * quoted in our message and may hold anything. */
static void last_line(const char *out, size_t n, char *line, size_t size)
{
	size_t end = n, start;

	while (end > 0 && (out[end - 1] == '\n' || out[end - 1] == '\r' || out[end - 1] == ' '))
		end--;
	start = end;
	while (start > 0 && out[start - 1] != '\n')
		start--;
	size_t o = 0;
	for (size_t i = start; i < end && o + 1 < size; i++)
		line[o++] = (out[i] >= 0x20 && out[i] < 0x7f) ? out[i] : '?';
	line[o] = 0;
}

/* Run sbsign; its stdout and stderr go to a pipe (the last line quoted on
 * failure), its stdin and terminal stay ours for a passphrase prompt. */
static int run_sbsign(const struct rr_sign_opts *o, const char *in, const char *out,
		      const char *path, struct rr_err *e)
{
	const char *prog = o->sbsign ? o->sbsign : "sbsign";
	const char *argv[16];
	char buf[SBSIGN_OUTPUT_MAX], line[256];
	struct rr_spawn_opts so = {
		.argv = (char *const *)argv, .name = "sbsign",
		.pipe_stdout = true, .pipe_stderr = true,
	};
	struct rr_err ce;
	size_t n;
	int a = 0, r, rd, status;
	pid_t pid;

	argv[a++] = prog;
	if (o->engine) {
		argv[a++] = "--engine";
		argv[a++] = o->engine;
	}
	argv[a++] = "--key";
	argv[a++] = o->key;
	argv[a++] = "--cert";
	argv[a++] = o->cert;
	if (o->addcert) {
		argv[a++] = "--addcert";
		argv[a++] = o->addcert;
	}
	argv[a++] = "--output";
	argv[a++] = out;
	argv[a++] = in;
	argv[a] = NULL;

	r = rr_spawn(&so, &pid, &rd, &ce);
	if (r < 0)
		return rr_errf(e, -r, "%s: %s", path, ce.msg);
	n = rr_child_read_tail(rd, buf, sizeof(buf));
	close(rd);
	r = rr_child_wait(pid, "sbsign", &status, &ce);
	if (r < 0)
		return rr_errf(e, -r, "%s: %s", path, ce.msg);
	last_line(buf, n, line, sizeof(line));
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && !strncmp(line, "cannot run", 10))
		return rr_errf(e, ENOENT, "%s: %s (install sbsigntool)", path, line);
	if (rr_child_status_err(status, "sbsign", &ce) < 0)
		return rr_errf(e, EIO, "%s: %s%s%s%s", path, ce.msg, line[0] ? ": " : "", line,
			       strstr(line, "bad password read") ?
			       " (the key is encrypted: run on a terminal to be asked for its "
			       "passphrase)" : "");
	return 0;
}

static int write_all(int fd, const uint8_t *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* What sbsign wrote must be our image with one signature that fits. */
static int check_signed(const char *out, size_t unsigned_len, const char *path, struct rr_err *e)
{
	struct rr_image im;
	struct rr_pe_sig sig;
	_cleanup_free_ uint8_t *buf = NULL;
	size_t len;
	int r;

	r = rr_read_file(out, MAX_SIGNED_FILE, &buf, &len, e);
	if (r < 0)
		return r;
	r = rr_image_parse(buf, len, path, &im, e);
	if (r == 0)
		r = rr_pe_sig_read(buf, len, path, &sig, e);
	if (r == 0 && (!sig.is_signed || sig.nr_signatures != 1 || len != unsigned_len + im.cert_size))
		r = rr_errf(e, EBADMSG, "%s: sbsign's output is not the image with one signature "
			    "appended", path);
	if (r == 0 && !sig.verified)
		r = rr_errf(e, EBADMSG, "%s: sbsign's signature does not verify: %s", path, sig.why);
	return r;
}

int rr_sign_image_file(const uint8_t *buf, size_t len, const char *path,
		       const struct rr_sign_opts *o, struct rr_err *e)
{
	char in[PATH_MAX], out[PATH_MAX];
	/* the temporary files, once created: removed on every way out, but
	 * for the signed one renamed into place */
	_cleanup_unlink_ char *made_in = NULL, *made_out = NULL;
	_cleanup_close_ int fd = -1, fo = -1;
	int r;

	if (!o->key || !o->cert)
		return rr_errf(e, EINVAL, "%s: signing needs a key and a certificate", path);
	if (snprintf(in, sizeof(in), "%s.unsignedXXXXXX", path) >= (int)sizeof(in) ||
	    snprintf(out, sizeof(out), "%s.signedXXXXXX", path) >= (int)sizeof(out))
		return rr_errf(e, ENAMETOOLONG, "%s: path too long", path);
	fd = mkostemp(in, O_CLOEXEC);
	if (fd < 0)
		return rr_errf(e, errno, "%s: cannot create a temporary file: %s", path,
			       strerror(errno));
	made_in = in;
	fo = mkostemp(out, O_CLOEXEC);
	if (fo < 0)
		return rr_errf(e, errno, "%s: cannot create a temporary file: %s", path, strerror(errno));
	made_out = out;
	r = write_all(fd, buf, len);
	if (r == 0 && close(TAKE_FD(fd)) < 0)
		r = -errno;
	if (r < 0)
		return rr_errf(e, r, "%s: cannot write the unsigned image to %s: %s", path, in,
			       strerror(-r));
	r = run_sbsign(o, in, out, path, e);
	if (r < 0)
		return r;
	r = check_signed(out, len, path, e);
	if (r < 0)
		return r;
	/* sbsign rewrote the file by name: make the new one durable, then swap. */
	close(TAKE_FD(fo));
	fo = open(out, O_RDONLY | O_CLOEXEC);
	if (fo < 0 || fchmod(fo, 0644) < 0 || fsync(fo) < 0)
		return rr_errf(e, errno, "%s: cannot sync the signed image: %s", path, strerror(errno));
	if (rename(out, path) < 0)
		return rr_errf(e, errno, "%s: cannot rename into place: %s", path, strerror(errno));
	made_out = NULL;        /* it is path now */
	return 0;
}
