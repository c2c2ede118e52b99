/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Reading PE/COFF headers and Authenticode signatures: is a file a PE image
 * the kernel's verify_pefile would parse, is it signed, and by whom.  Only
 * reads; signing goes through sbsign (kexec/sign.c).  Library code: no
 * logging, errors in struct rr_err naming the file and the problem.
 */
#ifndef RERAND_PESIG_H
#define RERAND_PESIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "err.h"

/* The layout facts of a PE32+ file, checked with the kernel's rules
 * (crypto/asymmetric_keys/verify_pefile.c: pefile_parse_binary). */
struct rr_pe_info {
	uint32_t pe_offset;            /* e_lfanew: "PE\0\0" */
	uint16_t machine;
	uint16_t nr_sections;
	uint32_t size_of_headers;
	uint32_t nr_data_dirs;
	uint32_t checksum_offset;      /* file offsets of the two fields the */
	uint32_t cert_dir_offset;      /* Authenticode digest leaves out */
	uint32_t sections_offset;      /* first section header */
	uint32_t cert_offset;          /* certificate table; 0 if unsigned */
	uint32_t cert_size;
};

/* What `rerand inspect` and the loader need to know about a signature. */
struct rr_pe_sig {
	bool is_pe;                    /* the kernel's PE parser accepts the headers */
	bool is_signed;                /* a certificate table with a PKCS#7 SignedData */
	bool verified;                 /* the first signature verifies: see rr_pe_sig_read */
	unsigned nr_signatures;        /* WIN_CERTIFICATE entries (the kernel takes exactly 1) */
	char digest[16];               /* Authenticode digest algorithm ("sha256") once known */
	char why[192];                 /* signed, not verified: why ("digest mismatch: ...") */
	char subject[256];             /* first signer certificate, RFC 2253 text, control */
	char issuer[256];              /* and non-ASCII bytes escaped; "" unless verified */
	/* Against certificates given (rr_pe_sig_read_trust): */
	bool trust_checked;            /* verified, and certificates were given */
	bool trusted;                  /* and the signer chains to one of them */
	char anchor[256];              /* trusted: the given certificate's subject */
	char trust_why[192];           /* checked, not trusted: why */
};

/* "verified", "bad" or "none" (unsigned), for JSON and the daemon's state. */
const char *rr_pe_sig_state(const struct rr_pe_sig *sig);

/* The size of one PE section header (struct section_header). */
#define RR_PE_SECTION_HDR_SIZE 40
/*
 * Parse the DOS, PE and optional headers with every read bounded.  Returns 0
 * and fills ret for a PE32+ file, -ENOEXEC when there is no "MZ"/"PE\0\0"
 * (not a PE file at all: e has a message too), another negative errno for
 * a PE file whose headers or certificate directory are inconsistent.
 */
int rr_pe_parse(const uint8_t *buf, size_t len, const char *name,
		struct rr_pe_info *ret, struct rr_err *e);

/*
 * Read the Authenticode signature of buf.  A file that is not PE at all, or
 * a PE file without a certificate table, is not an error (is_pe / is_signed
 * say so).  A damaged header, WIN_CERTIFICATE or PKCS#7 is: negative errno
 * and a message naming the file.
 *
 * A signed file is verified as the kernel's verify_pefile does it, less
 * the trust: the Authenticode digest of the file (the kernel's form:
 * headers without CheckSum and the certificate directory entry, sections
 * in PointerToRawData order, trailing data up to the certificate table)
 * must equal the one in the SpcIndirectDataContent, and the PKCS#7
 * signature over that content must check with the certificate the
 * message carries.  Whether that certificate is trusted is not decided
 * here: kexec_file_load decides it against its keyrings.  Only a verified
 * signature fills subject and issuer; otherwise verified is false and why
 * says what failed (a verdict, not an error: the return is 0).
 */
int rr_pe_sig_read(const uint8_t *buf, size_t len, const char *name,
		   struct rr_pe_sig *ret, struct rr_err *e);

/*
 * rr_pe_sig_read, then, for a signature that verifies, the trust the kernel
 * would decide against its keyrings, decided here against the certificates
 * an admin gives instead (UEFI db, MOK, a fleet's signing CA): trust, of
 * trust_len bytes, holds one or more PEM certificates or one DER
 * certificate (the file trust_name, for messages).  Trusted when the
 * signer's certificate is one of them or chains to one through the
 * certificates the signature carries, as the kernel's pkcs7_validate_trust
 * allows: no root needed, validity dates not checked, no key usage
 * demanded.  Sets trust_checked, and trusted with anchor (the certificate
 * it chains to) or trust_why.  A trust file without a certificate is an
 * error (-EBADMSG naming it).  trust NULL: rr_pe_sig_read.
 */
int rr_pe_sig_read_trust(const uint8_t *buf, size_t len, const char *name, const uint8_t *trust,
			 size_t trust_len, const char *trust_name, struct rr_pe_sig *ret,
			 struct rr_err *e);

/*
 * For the copy of this code built without libcrypto (RR_CRYPTO_DLOPEN,
 * pesig_crypto.h): fns, the table of libcrypto's functions, which load
 * fills on first use (0, or <0 with e naming what (for) wanted it).  The
 * signature checks call load before anything of fns; without a call of
 * this they fail with -ELIBACC.  The copy linked to libcrypto ignores it.
 */
struct rr_crypto;
typedef int rr_crypto_load_fn(const char *what, struct rr_err *e);
void rr_pesig_use_crypto(const struct rr_crypto *fns, rr_crypto_load_fn *load);

#endif
