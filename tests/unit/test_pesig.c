/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The PE/Authenticode reader against files signed by real tools: the
 * committed corpus (a small PE signed by sbsign with Debian's snakeoil key),
 * Debian's own signed and unsigned kernels when the shared kernels are
 * there, and damaged copies of each.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
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
