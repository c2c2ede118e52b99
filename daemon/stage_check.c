/* SPDX-License-Identifier: GPL-2.0-only */
/* The checks an image passes before it is staged: it parses, is signed
 * when it must be, carries rerandd's stage (or, pre-signed, is of the
 * plan's release) and, cached, has the bytes recorded when it was built;
 * what the builder wrote is checked in a copy only root holds. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#include "cleanup.h"
#include "image.h"
#include "lockdown.h"
#include "pesig.h"
#include "rerandd.h"
#include "sign.h"

#include "stage_int.h"

/* The stage, linked in: the one every image rerandd stages must carry. */
#include "stage_blob.h"

/* The image's stage, byte for byte, is the one rerandd links (its stage
 * hash field alone is a claim the builder writes): the protected-mode part
 * up to the image header must be the stage blob as `rerand image` lays it
 * out (src/image_write.c), its locator and the EFI stub filled in, zeros
 * to the header.  A swapped stage (whatever its header says) is refused. */
static int stage_bytes_match(const uint8_t *buf, size_t len, const struct rr_image *im,
			     const char *path, struct rr_err *e)
{
	const uint8_t *stage = rr_stage_blob;
	size_t n = (size_t)(rr_stage_blob_end - rr_stage_blob);
	size_t stub = (size_t)(rr_efi_stub_end - rr_efi_stub);
	size_t hdr = (n + RERAND_HDR_ALIGN - 1) / RERAND_HDR_ALIGN * RERAND_HDR_ALIGN;
	struct rerand_locator loc = { .header_offset = (uint32_t)hdr, .stage_size = (uint32_t)n };
	const uint8_t *pm;

	memcpy(loc.magic, RERAND_LOCATOR_MAGIC, 8);
	if (im->header_file_offset != im->pm_offset + hdr || im->pm_offset + hdr > len)
		return rr_errf(e, EINVAL, "%s: its stage is %llu bytes, rerandd's is %zu: not the "
			       "stage rerandd links (RerandBinary= is from another build, or the "
			       "stage was swapped); not staged", path,
			       (unsigned long long)(im->header_file_offset - im->pm_offset), hdr);
	pm = buf + im->pm_offset;
	for (size_t i = 0; i < hdr; i++) {
		uint8_t want = i < n ? stage[i] : 0;
		if (i >= RERAND_LOCATOR_OFFSET && i < RERAND_LOCATOR_OFFSET + sizeof(loc))
			want = ((const uint8_t *)&loc)[i - RERAND_LOCATOR_OFFSET];
		else if (i >= RR_IMAGE_EFI_STUB_OFFSET && i < RR_IMAGE_EFI_STUB_OFFSET + stub)
			want = rr_efi_stub[i - RR_IMAGE_EFI_STUB_OFFSET];
		if (pm[i] != want)
			return rr_errf(e, EINVAL, "%s: its stage differs from the one rerandd links at "
				       "byte 0x%zx of %zu (whatever its stage hash says): a swapped "
				       "stage; not staged", path, i, hdr);
	}
	return 0;
}

/* The image's bytes (buf, read from path) parse, are signed when they must
 * be, and (pre-signed) of the plan's release, else carry rerandd's stage;
 * p->signer from its signature.  The parsing half's work (stage_parse.c):
 * it runs as CheckUser=, never as root. */
int stage_check_bytes(struct rr_stage_plan *p, const char *path, const uint8_t *buf, size_t len,
		      const uint8_t *trust, size_t trust_len, bool want_signed, struct rr_err *e)
{
	struct rr_image im;
	struct rr_pe_sig sig;
	size_t w = 0;
	int r;

	r = rr_image_parse(buf, len, path, &im, e);
	if (r == 0)
		r = rr_pe_sig_read_trust(buf, len, path, trust, trust_len, p->trust_cert, &sig, e);
	if (r < 0)
		return r;
	if (want_signed && !sig.is_signed)
		return rr_errf(e, ENOKEY, "%s: not signed, and the kernel is locked down: it accepts "
			       "only signed images (see docs/secure-boot.md)", path);
	if (want_signed && !sig.verified)
		return rr_errf(e, EKEYREJECTED, "%s: signature does not verify: %s; not staged (a "
			       "locked-down kernel refuses it)", path, sig.why);
	/* a signature that verifies, by a signer the admin does not trust: the
	 * kernel's keyrings would decide later, after the old image is gone */
	if (sig.trust_checked && !sig.trusted)
		return rr_errf(e, EKEYREJECTED, "%s: signed by \"%s\", not trusted: %s (TrustCert= in "
			       "[Stage]); not staged", path, sig.subject, sig.trust_why);
	while (im.kernel_version[w] && im.kernel_version[w] != ' ')
		w++;
	if (p->source == RR_IMG_PRESIGNED &&
	    (strlen(p->release) != w || memcmp(im.kernel_version, p->release, w)))
		return rr_errf(e, EINVAL, "%s: an image of release \"%.*s\", not of %s's %s", path,
			       (int)w, im.kernel_version, p->kernel, p->release);
	if (p->source != RR_IMG_PRESIGNED) {
		/* Built by RerandBinary=, a separate program: it must carry the
		 * stage the cache key names, or an upgrade of one and not the
		 * other would keep booting an old stage. */
		char hex[65];
		for (int i = 0; i < 32; i++)
			snprintf(hex + 2 * i, 3, "%02x", im.hdr.stage_sha256[i]);
		if (strcmp(hex, p->stage_sha))
			return rr_errf(e, EINVAL, "%s: carries stage %.16s..., but rerandd's is "
				       "%.16s...: RerandBinary= is from another build", path, hex,
				       p->stage_sha);
		r = stage_bytes_match(buf, len, &im, path, e);
		if (r < 0)
			return r;
	}
	/* a name from a signature that does not verify is not a signer */
	snprintf(p->signer, sizeof(p->signer), "%s", sig.verified ? sig.subject : "");
	snprintf(p->signature, sizeof(p->signature), "%s", rr_pe_sig_state(&sig));
	snprintf(p->anchor, sizeof(p->anchor), "%s", sig.trusted ? sig.anchor : "");
	return 0;
}

/* 1: p->image must be built (the cache dir is there and the stale file gone),
 * 0: usable as it is, <0: not usable (a pre-signed image is never rebuilt).
 * A cached image is usable only if its bytes are those recorded when it
 * was built; why one is not is put in note (may be NULL), for the log. */
int stage_build_needed(const struct rr_config *c, struct rr_stage_plan *p, char *note,
		       size_t notelen, struct rr_err *e)
{
	char dir[RR_PATH + 16], rec[RR_PATH + 200];
	bool want_signed = p->source != RR_IMG_BUILT;
	struct rr_err de;

	p->image_sha256[0] = 0;
	/* someone else's file: checked, never rebuilt or removed; its content is
	 * the signature's business (kexec_file_load verifies it) */
	if (p->source == RR_IMG_PRESIGNED)
		return stage_check_image(p, p->image, true, e);
	int r = stage_check_image(p, p->image, want_signed, &de);
	if (r == 0) {
		if (digest_image_check(p->image, p->image_sha256, &de) == 0)
			return 0;                  /* cached, and as it was built */
		p->image_sha256[0] = 0;
		if (note)
			snprintf(note, notelen, "%s; not loaded: rebuilding it", de.msg);
	} else if ((r == -ELIBACC || r == -ELIBBAD) && note) {
		/* libcrypto could not be opened (crypto_dl.c): say so, or the
		 * signed image is rebuilt at every staging without a word */
		snprintf(note, notelen, "%s; rebuilding it", de.msg);
	}
	if (rr_pathf(rec, sizeof(rec), "%s.sha256", p->image) < 0 ||
	    rr_path_join(dir, sizeof(dir), c->state_dir, "images") < 0)
		return rr_errf(e, ENAMETOOLONG, "%s: path too long for the image cache", p->image);
	unlink(p->image);
	unlink(rec);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return rr_errf(e, errno, "%s: cannot create: %s", dir, strerror(errno));
	return 1;
}

/* A copy of path that only root holds, beside the image, in copy. */
static int private_copy(const struct rr_stage_plan *p, const char *path, char *copy, size_t len,
			struct rr_err *e)
{
	_cleanup_close_ int in = -1, out = -1;
	char buf[65536];
	ssize_t n;
	int r = 0;

	in = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (in < 0)
		return rr_errf(e, errno, "%s: cannot open: %s", path, strerror(errno));
	out = stage_make_tmp(p, "chk", copy, len, e);
	if (out < 0) {
		*copy = 0;
		return out;
	}
	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || write(out, buf, (size_t)n) != n) {
			r = rr_errf(e, errno ? errno : EIO, "%s: cannot copy to %s: %s", path, copy,
				    strerror(errno ? errno : EIO));
			break;
		}
	}
	if (r == 0 && fchmod(out, 0644) < 0)
		r = rr_errf(e, errno, "%s: chmod: %s", copy, strerror(errno));
	if (r < 0) {
		unlink(copy);
		*copy = 0;
	}
	return r;
}

/* The builder ran unprivileged, and what it started may outlive it with
 * its output still open: the file it wrote (path) is copied into one only
 * root holds, and that copy is checked like any other file before it is
 * named an image.  Nothing the builder left behind can change it after. */
int stage_built(struct rr_stage_plan *p, const char *path, struct rr_err *e)
{
	char copy[RR_PATH + 64];
	int r = private_copy(p, path, copy, sizeof(copy), e);

	if (r == 0)
		r = stage_check_image(p, copy, p->source != RR_IMG_BUILT, e);
	/* the record first: an image in place without its record is rebuilt,
	 * never loaded unchecked */
	if (r == 0)
		r = digest_file_hex(copy, p->image_sha256, e);
	if (r == 0)
		r = digest_record_write(p->image, p->image_sha256, e);
	if (r == 0 && rename(copy, p->image) < 0)
		r = rr_errf(e, errno, "%s: cannot rename into place: %s", p->image, strerror(errno));
	if (r < 0 && *copy)
		unlink(copy);
	return r;
}

/* With SignKey=: the builder's file is copied into one only root holds and
 * that copy checked as the unsigned image it must be (it parses, carries
 * rerandd's stage) before sbsign, which holds the key (as CheckUser=), ever
 * reads a byte of it; sbsign then signs the copy, which nothing the builder
 * left behind can reach.  The signed result is checked again (stage_built). */
int stage_prechecked(struct rr_stage_plan *p, const char *path, char *copy, size_t len,
		     struct rr_err *e)
{
	int r = private_copy(p, path, copy, len, e);

	if (r == 0)
		r = stage_check_image(p, copy, false, e);
	if (r < 0 && *copy) {
		unlink(copy);
		*copy = 0;
	}
	return r;
}
