/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * PE/COFF header and Authenticode signature reader.  The header checks are
 * the kernel's (pefile_parse_binary, pefile_strip_sig_wrapper), so "is_pe"
 * means what kexec_file_load will think; the PKCS#7 is parsed by OpenSSL.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pkcs7.h>
#include <openssl/x509.h>

#include "pesig.h"
#include "util.h"

#define MZ_SIZE              64     /* struct mz_hdr */
#define MZ_LFANEW            0x3c
#define COFF_SIZE            24     /* "PE\0\0" + struct pe_hdr */
#define COFF_MACHINE         4
#define COFF_NR_SECTIONS     6
#define COFF_OPT_SIZE        20
#define OPT_MAGIC_PE32       0x10b
#define OPT_MAGIC_PE32PLUS   0x20b
#define OPT_CHECKSUM         64     /* same offset in both formats */
#define OPT_SIZE_OF_HEADERS  60
#define DATA_DIR_CERTS       4      /* IMAGE_DIRECTORY_ENTRY_SECURITY */
#define SECTION_HDR_SIZE     40
#define WIN_CERT_HDR_SIZE    8
#define WIN_CERT_REVISION_2  0x0200
#define WIN_CERT_TYPE_PKCS   0x0002

int rr_pe_parse(const uint8_t *buf, size_t len, const char *name,
		struct rr_pe_info *ret, struct rr_err *e)
{
	struct rr_pe_info pi;
	uint64_t cursor, opt_size, opt_hdr_size, ndirs_off;
	uint16_t magic;

	memset(&pi, 0, sizeof(pi));
	if (len <= MZ_SIZE || buf[0] != 'M' || buf[1] != 'Z')
		return rr_errf(e, ENOEXEC, "%s: not a PE file (no \"MZ\" header)", name);
	pi.pe_offset = rr_get32(buf + MZ_LFANEW);
	if (pi.pe_offset < MZ_SIZE || (uint64_t)pi.pe_offset + COFF_SIZE >= len ||
	    memcmp(buf + pi.pe_offset, "PE\0\0", 4))
		return rr_errf(e, ENOEXEC, "%s: not a PE file (no \"PE\" signature at e_lfanew 0x%x)",
			       name, pi.pe_offset);
	pi.machine = rr_get16(buf + pi.pe_offset + COFF_MACHINE);
	pi.nr_sections = rr_get16(buf + pi.pe_offset + COFF_NR_SECTIONS);
	opt_size = rr_get16(buf + pi.pe_offset + COFF_OPT_SIZE);
	cursor = (uint64_t)pi.pe_offset + COFF_SIZE;
	if (cursor + 2 >= len)
		return rr_errf(e, EBADMSG, "%s: PE optional header is cut off", name);
	magic = rr_get16(buf + cursor);
	if (magic == OPT_MAGIC_PE32PLUS) {
		opt_hdr_size = 112;
		ndirs_off = 108;
	} else if (magic == OPT_MAGIC_PE32) {
		opt_hdr_size = 96;
		ndirs_off = 92;
	} else {
		return rr_errf(e, EBADMSG, "%s: PE optional header magic 0x%x is not PE32 or PE32+",
			       name, magic);
	}
	if (cursor + opt_hdr_size >= len)
		return rr_errf(e, EBADMSG, "%s: PE optional header is cut off", name);
	pi.checksum_offset = (uint32_t)(cursor + OPT_CHECKSUM);
	pi.size_of_headers = rr_get32(buf + cursor + OPT_SIZE_OF_HEADERS);
	pi.nr_data_dirs = rr_get32(buf + cursor + ndirs_off);
	cursor += opt_hdr_size;
	if (cursor >= pi.size_of_headers || pi.size_of_headers >= len)
		return rr_errf(e, EBADMSG, "%s: PE SizeOfHeaders %u is not between the optional header "
			       "and the end of the file", name, pi.size_of_headers);
	if (pi.nr_data_dirs > (pi.size_of_headers - cursor) / 8)
		return rr_errf(e, EBADMSG, "%s: %u PE data directories run past SizeOfHeaders", name,
			       pi.nr_data_dirs);
	/* The kernel finds the section table after the data directories, sbsign
	 * and firmware through SizeOfOptionalHeader: a file where the two differ
	 * is hashed differently by each, so it is refused. */
	if (opt_size != opt_hdr_size + 8ull * pi.nr_data_dirs)
		return rr_errf(e, EBADMSG, "%s: PE SizeOfOptionalHeader %llu does not match %u data "
			       "directories (%llu)", name, (unsigned long long)opt_size,
			       pi.nr_data_dirs,
			       (unsigned long long)(opt_hdr_size + 8ull * pi.nr_data_dirs));
	pi.cert_dir_offset = (uint32_t)(cursor + 8 * DATA_DIR_CERTS);
	cursor += 8ull * pi.nr_data_dirs;
	pi.sections_offset = (uint32_t)cursor;
	if (pi.nr_sections > (pi.size_of_headers - cursor) / SECTION_HDR_SIZE)
		return rr_errf(e, EBADMSG, "%s: %u PE section headers run past SizeOfHeaders", name,
			       pi.nr_sections);
	if (pi.nr_data_dirs > DATA_DIR_CERTS) {
		uint32_t va = rr_get32(buf + pi.cert_dir_offset);
		uint32_t size = rr_get32(buf + pi.cert_dir_offset + 4);

		if (va && size) {
			if (va < pi.size_of_headers || size >= len || va > len - size)
				return rr_errf(e, EBADMSG, "%s: PE certificate table (%u bytes at 0x%x) "
					       "lies outside the file", name, size, va);
			pi.cert_offset = va;
			pi.cert_size = size;
		}
	}
	*ret = pi;
	return 0;
}

/* One line of RFC 2253 text, with anything but printable ASCII escaped
 * (names come from the file: they must not reach a terminal or the journal
 * raw). */
static int name_text(const X509_NAME *n, char *out, size_t size)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *p;
	long blen;
	size_t o = 0;

	if (!b)
		return -ENOMEM;
	if (X509_NAME_print_ex(b, n, 0, XN_FLAG_RFC2253) < 0) {
		BIO_free(b);
		return -EBADMSG;
	}
	blen = BIO_get_mem_data(b, &p);
	for (long i = 0; i < blen && o + 1 < size; i++) {
		unsigned char c = (unsigned char)p[i];
		if (c >= 0x20 && c < 0x7f) {
			out[o++] = (char)c;
		} else {
			if (o + 5 >= size)
				break;
			o += (size_t)snprintf(out + o, size - o, "\\x%02x", c);
		}
	}
	out[o] = 0;
	BIO_free(b);
	return 0;
}

static int read_pkcs7(const uint8_t *der, size_t len, const char *name, struct rr_pe_sig *sig,
		      struct rr_err *e)
{
	const unsigned char *p = der;
	PKCS7 *p7;
	STACK_OF(X509) *signers;
	int r = 0;

	p7 = d2i_PKCS7(NULL, &p, (long)len);
	if (!p7) {
		ERR_clear_error();
		return rr_errf(e, EBADMSG, "%s: the PE signature is not a PKCS#7 message", name);
	}
	if (!PKCS7_type_is_signed(p7) || !p7->d.sign) {
		PKCS7_free(p7);
		return rr_errf(e, EBADMSG, "%s: the PE signature is PKCS#7 but not SignedData", name);
	}
	/* Matches each SignerInfo's issuer and serial to the certificates the
	 * message carries. */
	signers = PKCS7_get0_signers(p7, NULL, 0);
	if (!signers || sk_X509_num(signers) < 1) {
		ERR_clear_error();
		r = rr_errf(e, EBADMSG, "%s: the PE signature does not carry its signer's certificate",
			    name);
	} else {
		X509 *c = sk_X509_value(signers, 0);
		if (name_text(X509_get_subject_name(c), sig->subject, sizeof(sig->subject)) < 0 ||
		    name_text(X509_get_issuer_name(c), sig->issuer, sizeof(sig->issuer)) < 0)
			r = rr_errf(e, EBADMSG, "%s: the PE signer's certificate names are unreadable",
				    name);
	}
	sk_X509_free(signers);
	PKCS7_free(p7);
	return r;
}

int rr_pe_sig_read(const uint8_t *buf, size_t len, const char *name,
		   struct rr_pe_sig *ret, struct rr_err *e)
{
	struct rr_pe_info pi;
	struct rr_pe_sig sig;
	uint64_t at, end;
	int r;

	memset(&sig, 0, sizeof(sig));
	r = rr_pe_parse(buf, len, name, &pi, e);
	if (r == -ENOEXEC) {
		*ret = sig;
		return 0;
	}
	if (r < 0)
		return r;
	sig.is_pe = true;
	if (!pi.cert_size) {
		*ret = sig;
		return 0;
	}
	/* The certificate table: WIN_CERTIFICATE entries, each padded to 8. */
	at = pi.cert_offset;
	end = (uint64_t)pi.cert_offset + pi.cert_size;
	while (end - at >= WIN_CERT_HDR_SIZE) {
		uint32_t wlen = rr_get32(buf + at);
		uint16_t rev = rr_get16(buf + at + 4), type = rr_get16(buf + at + 6);

		if (wlen <= WIN_CERT_HDR_SIZE || wlen > end - at)
			return rr_errf(e, EBADMSG, "%s: PE certificate entry %u has length %u, outside "
				       "its %u-byte table", name, sig.nr_signatures, wlen, pi.cert_size);
		if (sig.nr_signatures == 0) {
			if (rev != WIN_CERT_REVISION_2 || type != WIN_CERT_TYPE_PKCS)
				return rr_errf(e, EBADMSG, "%s: PE certificate is revision 0x%04x type "
					       "0x%04x, not an Authenticode PKCS#7 (0x0200, 0x0002)",
					       name, rev, type);
			r = read_pkcs7(buf + at + WIN_CERT_HDR_SIZE, wlen - WIN_CERT_HDR_SIZE, name,
				       &sig, e);
			if (r < 0)
				return r;
		}
		sig.nr_signatures++;
		at += RR_ALIGN_UP((uint64_t)wlen, 8);
		if (at > end)
			break;
	}
	if (sig.nr_signatures == 0)
		return rr_errf(e, EBADMSG, "%s: PE certificate table of %u bytes holds no certificate",
			       name, pi.cert_size);
	sig.is_signed = true;
	*ret = sig;
	return 0;
}
