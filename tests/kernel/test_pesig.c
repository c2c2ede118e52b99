/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The PE/Authenticode reader against files signed by real tools: the
 * committed corpus (a small PE signed by sbsign with Debian's snakeoil key),
 * Debian's own signed and unsigned kernels when the shared kernels are
 * there, and damaged copies of each.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "kernel.h"
#include "pesig.h"
#include "util.h"

#define CORPUS "tests/fuzz/corpus/pesig/"

static uint8_t *slurp(const char *path, size_t *len)
{
	struct rr_err e;
	uint8_t *buf;

	if (rr_read_file(path, 512u << 20, &buf, len, &e) < 0) {
		printf("# %s\n", e.msg);
		return NULL;
	}
	return buf;
}

/* Signed, not verified, and no signer named: the state a changed file gets. */
static bool bad_sig(const uint8_t *buf, size_t len, const char *name, const char *why)
{
	struct rr_pe_sig sig;
	struct rr_err e;

	if (rr_pe_sig_read(buf, len, name, &sig, &e) < 0) {
		printf("# %s: %s\n", name, e.msg);
		return false;
	}
	printf("# %s: %s\n", name, sig.why);
	return sig.is_signed && !sig.verified && !sig.subject[0] && !sig.issuer[0] &&
	       !strcmp(rr_pe_sig_state(&sig), "bad") && strstr(sig.why, why) == sig.why;
}

static bool verifies(const uint8_t *buf, size_t len, const char *name)
{
	struct rr_pe_sig sig;
	struct rr_err e;

	return rr_pe_sig_read(buf, len, name, &sig, &e) == 0 && sig.verified && sig.subject[0];
}

/* Copies of the sbsign-signed corpus file changed where the digest covers
 * them, where it does not, and in the signature itself. */
static void tampered(const uint8_t *buf, size_t len, const struct rr_pe_info *pi)
{
	uint8_t *bad = malloc(len);
	uint32_t sec_off = rr_get32(buf + pi->sections_offset + 20);
	uint32_t sec_size = rr_get32(buf + pi->sections_offset + 16);
	uint32_t wlen = rr_get32(buf + pi->cert_offset);
	static const uint8_t sha256_oid[] = { 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04,
					      0x02, 0x01 };
	static const uint8_t pe_image_oid[] = { 0x06, 0x0a, 0x2b, 0x06, 0x01, 0x04, 0x01, 0x82, 0x37,
						0x02, 0x01, 0x0f };
	const uint8_t *hit = NULL;

	T_OK(pi->nr_sections > 0 && sec_size > 0 && (uint64_t)sec_off + sec_size <= pi->cert_offset,
	     "the corpus file's first section: %u bytes at 0x%x", sec_size, sec_off);
	memcpy(bad, buf, len);
	bad[sec_off + sec_size / 2] ^= 0x01;
	T_OK(bad_sig(bad, len, "flipped", "digest mismatch"),
	     "one bit flipped inside a section: signature does not verify, no signer");
	memcpy(bad, buf, len);
	bad[pi->sections_offset] ^= 0x20;   /* the section's name, in the headers */
	T_OK(bad_sig(bad, len, "header", "digest mismatch"),
	     "one bit flipped in a section header: digest mismatch");
	/* The two fields the digest leaves out: changing them keeps it valid. */
	memcpy(bad, buf, len);
	bad[pi->checksum_offset] ^= 0xff;
	T_OK(verifies(bad, len, "checksum"), "CheckSum changed: still verifies (not hashed)");
	/* The RSA signature is the last thing in sbsign's SignedData. */
	memcpy(bad, buf, len);
	bad[pi->cert_offset + wlen - 16] ^= 0x01;
	T_OK(bad_sig(bad, len, "rsa", "bad signature"),
	     "one bit flipped in the RSA signature: bad signature, no signer");
	/* SpcPeImageData's OID inside the signed content (not the digest):
	 * the file's digest still matches, the content's messageDigest not. */
	memcpy(bad, buf, len);
	for (int i = (int)pi->cert_offset; i + (int)sizeof(pe_image_oid) <= (int)len; i++)
		if (!memcmp(bad + i, pe_image_oid, sizeof(pe_image_oid))) {
			hit = bad + i;
			break;
		}
	T_OK(hit != NULL, "SpcPeImageData's OID found in the signed content");
	if (hit) {
		bad[hit - bad + sizeof(pe_image_oid) - 1] ^= 0x01;
		T_OK(bad_sig(bad, len, "content", "bad signature"),
		     "signed content changed outside the digest: bad signature, no signer");
	}
	hit = NULL;
	/* The second SHA-256 OID is the SpcIndirectDataContent's DigestInfo
	 * (the first is SignedData.digestAlgorithms): made unknown. */
	memcpy(bad, buf, len);
	for (int n = 0, i = (int)pi->cert_offset; i + (int)sizeof(sha256_oid) <= (int)len; i++)
		if (!memcmp(bad + i, sha256_oid, sizeof(sha256_oid)) && ++n == 2) {
			hit = bad + i;
			break;
		}
	T_OK(hit != NULL, "the SpcIndirectDataContent's digest OID found");
	if (hit) {
		bad[hit - bad + sizeof(sha256_oid) - 1] = 0x7f;
		T_OK(bad_sig(bad, len, "oid", "unsupported digest algorithm 2.16.840.1.101.3.4.2.127"),
		     "digest algorithm changed to an unknown OID: unsupported digest");
	}
	free(bad);
}

/* Another file's signature grafted onto buf's content: the certificate
 * table of other replaces buf's, the directory entry updated. */
static uint8_t *graft(const uint8_t *buf, const struct rr_pe_info *pi, const uint8_t *other,
		      const struct rr_pe_info *opi, size_t *len)
{
	uint8_t *g = malloc((size_t)pi->cert_offset + opi->cert_size);

	memcpy(g, buf, pi->cert_offset);
	memcpy(g + pi->cert_offset, other + opi->cert_offset, opi->cert_size);
	rr_put32(g + pi->cert_dir_offset, pi->cert_offset);
	rr_put32(g + pi->cert_dir_offset + 4, opi->cert_size);
	*len = (size_t)pi->cert_offset + opi->cert_size;
	return g;
}

static void snakeoil(void)
{
	struct rr_pe_sig sig;
	struct rr_pe_info pi;
	struct rr_err e;
	size_t len;
	uint8_t *buf = slurp(CORPUS "signed-snakeoil", &len);

	T_OK(buf != NULL, "corpus file signed-snakeoil read");
	if (!buf)
		return;
	T_OK(rr_pe_parse(buf, len, "signed-snakeoil", &pi, &e) == 0 && pi.machine == 0x8664 &&
	     pi.nr_data_dirs == 16 && pi.cert_offset == 0x400 && pi.cert_offset + pi.cert_size == len,
	     "sbsign output parses: AMD64, 16 directories, certificate table at the end");
	T_OK(rr_pe_sig_read(buf, len, "signed-snakeoil", &sig, &e) == 0 && sig.is_pe && sig.is_signed &&
	     sig.nr_signatures == 1, "signed PE reported signed, one signature");
	T_OK(!strcmp(sig.subject, "O=SnakeOil,L=Fort Collins,ST=Colorado,C=US") &&
	     !strcmp(sig.issuer, sig.subject), "signer subject and issuer: %s / %s", sig.subject,
	     sig.issuer);
	T_OK(sig.verified && !strcmp(sig.digest, "sha256") && !sig.why[0] &&
	     !strcmp(rr_pe_sig_state(&sig), "verified"),
	     "sbsign's signature verifies: digest %s matches, PKCS#7 checks (%s)", sig.digest, sig.why);
	tampered(buf, len, &pi);

	/* The certificate table cut short: the directory now points past the end. */
	T_OK(rr_pe_sig_read(buf, len - 8, "cut", &sig, &e) < 0 && strstr(e.msg, "cut: ") == e.msg &&
	     strstr(e.msg, "outside the file"), "truncated signed file refused: %s", e.msg);
	/* WIN_CERTIFICATE with the wrong type. */
	uint8_t *bad = malloc(len);
	memcpy(bad, buf, len);
	bad[pi.cert_offset + 6] = 1;
	T_OK(rr_pe_sig_read(bad, len, "type", &sig, &e) < 0 && strstr(e.msg, "not an Authenticode"),
	     "certificate type 1 refused: %s", e.msg);
	/* A WIN_CERTIFICATE length larger than its table. */
	memcpy(bad, buf, len);
	rr_put32(bad + pi.cert_offset, pi.cert_size + 8);
	T_OK(rr_pe_sig_read(bad, len, "wlen", &sig, &e) < 0 && strstr(e.msg, "outside its"),
	     "certificate length past the table refused: %s", e.msg);
	/* SizeOfOptionalHeader disagreeing with the directory count. */
	memcpy(bad, buf, len);
	bad[pi.pe_offset + 20] += 8;
	T_OK(rr_pe_parse(bad, len, "opt", &pi, &e) < 0 && strstr(e.msg, "SizeOfOptionalHeader"),
	     "SizeOfOptionalHeader mismatch refused: %s", e.msg);
	/* No "PE\0\0": not a PE file, not an error. */
	memcpy(bad, buf, len);
	bad[0x40] = 'X';
	T_OK(rr_pe_sig_read(bad, len, "nope", &sig, &e) == 0 && !sig.is_pe && !sig.is_signed,
	     "no PE signature: reported as not PE");
	free(bad);
	free(buf);

	buf = slurp(CORPUS "bad-pkcs7", &len);
	T_OK(buf && rr_pe_sig_read(buf, len, "bad-pkcs7", &sig, &e) < 0 &&
	     strstr(e.msg, "not a PKCS#7"), "damaged PKCS#7 refused: %s", e.msg);
	free(buf);
	buf = slurp(CORPUS "unsigned", &len);
	T_OK(buf && rr_pe_sig_read(buf, len, "unsigned", &sig, &e) == 0 && sig.is_pe &&
	     !sig.is_signed && !sig.subject[0], "unsigned PE: is_pe, not signed");
	free(buf);
}

static void debian(const char *dir)
{
	char path[512];
	struct rr_pe_sig sig;
	struct rr_err e;
	size_t len;
	uint8_t *buf;

	snprintf(path, sizeof(path), "%s/vmlinuz-6.1.0-57-cloud-amd64", dir);
	buf = slurp(path, &len);
	T_OK(buf && rr_pe_sig_read(buf, len, path, &sig, &e) == 0 && sig.is_signed &&
	     !strcmp(sig.subject, "CN=Debian Secure Boot Signer 2022 - linux") &&
	     !strcmp(sig.issuer, "CN=Debian Secure Boot CA"),
	     "Debian 6.1 cloud kernel: signed by %s, issuer %s", sig.subject, sig.issuer);
	T_OK(buf && sig.verified && !strcmp(sig.digest, "sha256"),
	     "Debian 6.1 cloud kernel: digest (%s) and signature verify with its own certificate%s%s",
	     sig.digest, sig.why[0] ? ": " : "", sig.why);
	if (buf) {
		/* Debian's signature on the snakeoil file's content */
		uint8_t *snake, *g;
		size_t slen, glen;
		struct rr_pe_info dpi, spi;

		snake = slurp(CORPUS "signed-snakeoil", &slen);
		T_OK(snake && rr_pe_parse(buf, len, path, &dpi, &e) == 0 &&
		     rr_pe_parse(snake, slen, "snake", &spi, &e) == 0, "both files parse");
		g = graft(snake, &spi, buf, &dpi, &glen);
		T_OK(bad_sig(g, glen, "grafted", "digest mismatch"),
		     "Debian's signature grafted onto another file: does not verify, no signer");
		free(g);
		/* and one bit of the kernel's code flipped */
		buf[dpi.size_of_headers + 4096] ^= 0x01;
		T_OK(bad_sig(buf, len, "kernel-flipped", "digest mismatch"),
		     "Debian 6.1 kernel with one bit flipped in its code: does not verify");
		free(snake);
	}
	free(buf);
	snprintf(path, sizeof(path), "%s/vmlinuz-6.1.0-57-amd64", dir);
	buf = slurp(path, &len);
	T_OK(buf && rr_pe_sig_read(buf, len, path, &sig, &e) == 0 && sig.verified &&
	     !strcmp(sig.subject, "CN=Debian Secure Boot Signer 2022 - linux"),
	     "Debian 6.1 generic kernel: verifies, signed by %s%s", sig.subject, sig.why);
	free(buf);
	snprintf(path, sizeof(path), "%s/vmlinuz-6.12.118+deb12-cloud-amd64", dir);
	buf = slurp(path, &len);
	/* ../shared holds the -unsigned package's file; without ../shared the
	 * kernel comes from linux-image-6.12.118+deb12-cloud-amd64, which
	 * Debian signs: either way the reader must say which it is. */
	T_OK(buf && rr_pe_sig_read(buf, len, path, &sig, &e) == 0 && sig.is_pe &&
	     (!sig.is_signed || (!strcmp(sig.subject, "CN=Debian Secure Boot Signer 2022 - linux") &&
				 !strcmp(sig.issuer, "CN=Debian Secure Boot CA"))),
	     "Debian 6.12 cloud kernel: PE, %s%s", sig.is_signed ? "signed by " : "no signature",
	     sig.is_signed ? sig.subject : "");
	free(buf);
}

int main(void)
{
	const char *dir = t_kernels_dir();
	static const uint8_t junk[4096];
	struct rr_pe_sig sig;
	struct rr_err e;

	T_OK(rr_pe_sig_read(junk, sizeof(junk), "zeros", &sig, &e) == 0 && !sig.is_pe,
	     "4 KiB of zeros: not PE, no error");
	snakeoil();
	if (dir)
		debian(dir);
	else
		T_OK(1, "# SKIP RERAND_KERNELS not set: Debian kernel signatures not read");
	return t_done();
}
