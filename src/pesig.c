/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * PE/COFF header and Authenticode signature reader.  The header checks are
 * the kernel's (pefile_parse_binary, pefile_strip_sig_wrapper), so "is_pe"
 * means what kexec_file_load will think; the PKCS#7 is parsed and its
 * signature checked by OpenSSL, the Authenticode digest computed the way the
 * kernel's pefile_digest_pe computes it.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/asn1t.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/pkcs7.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include "cleanup.h"
#include "pesig.h"
#include "util.h"

/* rerandd's copy: libcrypto opened when a signature is checked, through
 * the table and loader its program gives (pesig_crypto.h) */
#ifdef RR_CRYPTO_DLOPEN
#include "pesig_crypto.h"

static rr_crypto_load_fn *pesig_crypto_load;

void rr_pesig_use_crypto(const struct rr_crypto *fns, rr_crypto_load_fn *load)
{
	pesig_crypto = fns;
	pesig_crypto_load = load;
}
#else
void rr_pesig_use_crypto(const struct rr_crypto *fns, rr_crypto_load_fn *load)
{
	(void)fns;
	(void)load;
}
#endif

RR_DEFINE_CLEANUP_FUNC(BIO *, BIO_free)
RR_DEFINE_CLEANUP_FUNC(EVP_MD_CTX *, EVP_MD_CTX_free)
RR_DEFINE_CLEANUP_FUNC(PKCS7 *, PKCS7_free)
RR_DEFINE_CLEANUP_FUNC(STACK_OF(X509) *, sk_X509_free)
RR_DEFINE_CLEANUP_FUNC(X509_STORE *, X509_STORE_free)
RR_DEFINE_CLEANUP_FUNC(X509_STORE_CTX *, X509_STORE_CTX_free)

#define WIN_CERT_HDR_SIZE    8
#define WIN_CERT_REVISION_2  0x0200
#define WIN_CERT_TYPE_PKCS   0x0002
#define SEC_VIRTUAL_SIZE     8      /* struct section_header */
#define SEC_VIRTUAL_ADDRESS  12
#define SEC_RAW_SIZE         16
#define SEC_RAW_OFFSET       20
#define OID_SPC_INDIRECT     "1.3.6.1.4.1.311.2.1.4"

/* SpcIndirectDataContent, Authenticode's signed content, described with
 * OpenSSL's ASN.1 templates so that libcrypto decodes it:
 *   SEQUENCE { data SEQUENCE { type OID, value ANY OPTIONAL },
 *              messageDigest DigestInfo } */
typedef struct {
	ASN1_OBJECT *type;
	ASN1_TYPE *value;
} SPC_ATTR;

typedef struct {
	SPC_ATTR *data;
	X509_SIG *digest;
} SPC_INDIRECT;

ASN1_SEQUENCE(SPC_ATTR) = {
	ASN1_SIMPLE(SPC_ATTR, type, ASN1_OBJECT),
	ASN1_OPT(SPC_ATTR, value, ASN1_ANY),
} static_ASN1_SEQUENCE_END(SPC_ATTR)

ASN1_SEQUENCE(SPC_INDIRECT) = {
	ASN1_SIMPLE(SPC_INDIRECT, data, SPC_ATTR),
	ASN1_SIMPLE(SPC_INDIRECT, digest, X509_SIG),
} static_ASN1_SEQUENCE_END(SPC_INDIRECT)

/* One line of RFC 2253 text, with anything but printable ASCII escaped
 * (names come from the file: they must not reach a terminal or the journal
 * raw). */
static int name_text(const X509_NAME *n, char *out, size_t size)
{
	_cleanup_(BIO_freep) BIO *b = BIO_new(BIO_s_mem());
	char *p;
	long blen;
	size_t o = 0;

	if (!b)
		return -ENOMEM;
	if (X509_NAME_print_ex(b, n, 0, XN_FLAG_RFC2253) < 0)
		return -EBADMSG;
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
	return 0;
}

const char *rr_pe_sig_state(const struct rr_pe_sig *sig)
{
	return !sig->is_signed ? "none" : sig->verified ? "verified" : "bad";
}

/* A verdict, not an error: the signature is there but does not verify. */
static int not_verified(struct rr_pe_sig *sig, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(sig->why, sizeof(sig->why), fmt, ap);
	va_end(ap);
	sig->verified = false;
	return 0;
}

struct sec_key {
	const uint8_t *hdr;
	unsigned index;
};

/* The kernel's pefile_compare_shdrs order; the index last, so that equal
 * headers keep their table order as the kernel's insertion sort does. */
static int sec_cmp(const void *a, const void *b)
{
	const struct sec_key *x = a, *y = b;
	static const unsigned at[] = { SEC_RAW_OFFSET, SEC_VIRTUAL_ADDRESS };
	int rc;

	for (unsigned i = 0; i < 2; i++)
		if (rr_get32(x->hdr + at[i]) != rr_get32(y->hdr + at[i]))
			return rr_get32(x->hdr + at[i]) > rr_get32(y->hdr + at[i]) ? 1 : -1;
	rc = strncmp((const char *)x->hdr, (const char *)y->hdr, 8);
	if (rc)
		return rc;
	if (rr_get32(x->hdr + SEC_VIRTUAL_SIZE) != rr_get32(y->hdr + SEC_VIRTUAL_SIZE))
		return rr_get32(x->hdr + SEC_VIRTUAL_SIZE) > rr_get32(y->hdr + SEC_VIRTUAL_SIZE) ? 1 : -1;
	if (rr_get32(x->hdr + SEC_RAW_SIZE) != rr_get32(y->hdr + SEC_RAW_SIZE))
		return rr_get32(x->hdr + SEC_RAW_SIZE) > rr_get32(y->hdr + SEC_RAW_SIZE) ? 1 : -1;
	return x->index > y->index ? 1 : -1;
}

/*
 * The Authenticode digest as kexec_file_load computes it (verify_pefile.c,
 * pefile_digest_pe_contents): the headers up to SizeOfHeaders without the
 * CheckSum and the certificate directory entry, each section's raw data in
 * PointerToRawData order, then what follows the sections up to the
 * certificate table's size from the end.  sbsign and pesign hash the same
 * bytes for files whose sections follow the headers without gaps, as
 * rerand's images and Debian's kernels do.  Unlike the kernel, every range
 * is checked against the file.  Returns 0 with the digest, or 0 with
 * sig->why set when the layout cannot be hashed, or -ENOMEM.
 */
static int pe_digest(const uint8_t *buf, size_t len, const struct rr_pe_info *pi,
		     const EVP_MD *md, uint8_t *out, struct rr_pe_sig *sig)
{
	_cleanup_free_ struct sec_key *secs = NULL;
	_cleanup_(EVP_MD_CTX_freep) EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	uint64_t hashed = pi->size_of_headers;
	int ok = 1, r = 0;

	if (!ctx)
		return -ENOMEM;
	if (pi->nr_sections && !(secs = calloc(pi->nr_sections, sizeof(*secs))))
		return -ENOMEM;
	/* rr_pe_parse put CheckSum before the directories, the certificate
	 * entry and the section table inside SizeOfHeaders */
	ok &= EVP_DigestInit_ex(ctx, md, NULL);
	ok &= EVP_DigestUpdate(ctx, buf, pi->checksum_offset);
	ok &= EVP_DigestUpdate(ctx, buf + pi->checksum_offset + 4,
			       pi->cert_dir_offset - (pi->checksum_offset + 4));
	ok &= EVP_DigestUpdate(ctx, buf + pi->cert_dir_offset + 8,
			       pi->size_of_headers - (pi->cert_dir_offset + 8));
	for (unsigned i = 0; i < pi->nr_sections; i++) {
		secs[i].hdr = buf + pi->sections_offset + (size_t)i * RR_PE_SECTION_HDR_SIZE;
		secs[i].index = i;
	}
	if (pi->nr_sections)
		qsort(secs, pi->nr_sections, sizeof(*secs), sec_cmp);
	for (unsigned i = 0; i < pi->nr_sections && ok; i++) {
		uint32_t off = rr_get32(secs[i].hdr + SEC_RAW_OFFSET);
		uint32_t size = rr_get32(secs[i].hdr + SEC_RAW_SIZE);

		if (!size)
			continue;
		if ((uint64_t)off + size > len) {
			r = not_verified(sig, "section %u's raw data (%u bytes at 0x%x) lies outside "
					 "the file, so the file cannot be hashed", secs[i].index, size, off);
			goto out;
		}
		ok &= EVP_DigestUpdate(ctx, buf + off, size);
		hashed += size;
	}
	if (len > hashed) {
		if (hashed + pi->cert_size > len) {
			r = not_verified(sig, "the sections overlap the certificate table, so the file "
					 "cannot be hashed");
			goto out;
		}
		ok &= EVP_DigestUpdate(ctx, buf + hashed, len - hashed - pi->cert_size);
	}
	ok &= EVP_DigestFinal_ex(ctx, out, NULL);
	if (!ok)
		r = -ENOMEM;    /* a digest libcrypto has fails only on allocation */
out:
	ERR_clear_error();
	return r;
}

/* The Authenticode digest algorithms the kernel's mscode parser knows,
 * less MD4 and MD5. */
static const EVP_MD *spc_digest(const X509_SIG *dinfo, struct rr_pe_sig *sig,
				const ASN1_OCTET_STRING **value)
{
	static const struct { int nid; const char *name; } known[] = {
		{ NID_sha1, "sha1" }, { NID_sha224, "sha224" }, { NID_sha256, "sha256" },
		{ NID_sha384, "sha384" }, { NID_sha512, "sha512" },
	};
	const X509_ALGOR *alg;
	const ASN1_OBJECT *obj;
	char oid[64];
	int nid;

	X509_SIG_get0(dinfo, &alg, value);
	X509_ALGOR_get0(&obj, NULL, NULL, alg);
	nid = OBJ_obj2nid(obj);
	for (size_t i = 0; i < ARRAY_SIZE(known); i++) {
		if (known[i].nid == nid) {
			snprintf(sig->digest, sizeof(sig->digest), "%s", known[i].name);
			return EVP_get_digestbynid(nid);
		}
	}
	if (OBJ_obj2txt(oid, sizeof(oid), obj, 1) <= 0)
		snprintf(oid, sizeof(oid), "?");
	not_verified(sig, "unsupported digest algorithm %s", oid);
	return NULL;
}

/*
 * Check the first signature of the file: the SpcIndirectDataContent's
 * digest against the file's, then the PKCS#7 signature over that content
 * with the certificate the message carries and no chain (PKCS7_NOVERIFY:
 * trust is the kernel's business).  Sets sig->verified or sig->why.
 */
/* The PE file's digest is the one the SpcIndirectDataContent signs. */
static int digest_matches(const ASN1_OCTET_STRING *want, const EVP_MD *md, const uint8_t *buf,
			  size_t len, const struct rr_pe_info *pi, struct rr_pe_sig *sig)
{
	uint8_t got[EVP_MAX_MD_SIZE];
	int r;

	if (want->length != EVP_MD_get_size(md))
		return not_verified(sig, "the signed %s digest is %d bytes long, not %d", sig->digest,
				    want->length, EVP_MD_get_size(md));
	r = pe_digest(buf, len, pi, md, got, sig);
	if (r < 0 || *sig->why)
		return r;
	if (memcmp(got, want->data, (size_t)want->length))
		return not_verified(sig, "digest mismatch: the file's %s is not the one signed (changed "
				    "after signing, or another file's signature)", sig->digest);
	return 0;
}

/* PKCS7_verify leaks its copy of the content when a digest of the
 * SignedData is one libcrypto lacks (OpenSSL 3.0): refused here first. */
static int md_algs_known(PKCS7 *p7, struct rr_pe_sig *sig)
{
	char oid[64];

	for (int i = 0; i < sk_X509_ALGOR_num(p7->d.sign->md_algs); i++) {
		const ASN1_OBJECT *obj;

		X509_ALGOR_get0(&obj, NULL, NULL, sk_X509_ALGOR_value(p7->d.sign->md_algs, i));
		if (!EVP_get_digestbyobj(obj)) {
			if (OBJ_obj2txt(oid, sizeof(oid), obj, 1) <= 0)
				snprintf(oid, sizeof(oid), "?");
			return not_verified(sig, "unsupported digest algorithm %s in the SignedData", oid);
		}
	}
	return 0;
}

/* The signature over the content (inner: its value without the SEQUENCE
 * header, as Authenticode signs it), with the signer's own certificate. */
static int signature_checks(PKCS7 *p7, const unsigned char *inner, long inner_len,
			    struct rr_pe_sig *sig)
{
	PKCS7 *content = p7->d.sign->contents;
	ASN1_TYPE *other = content->d.other;
	BIO *in;
	int ok;

	in = BIO_new_mem_buf(inner, (int)inner_len);
	if (!in)
		return -ENOMEM;
	/* PKCS7_verify takes outside content only for a detached signature:
	 * detach the content for the call, then put it back. */
	content->d.other = NULL;
	ok = PKCS7_verify(p7, NULL, NULL, in, NULL, PKCS7_NOVERIFY | PKCS7_BINARY);
	content->d.other = other;
	BIO_free(in);
	if (ok != 1) {
		unsigned long err = ERR_peek_error();   /* the cause, not "signature failure" */
		const char *reason = err ? ERR_reason_error_string(err) : NULL;

		return not_verified(sig, "bad signature: the PKCS#7 signature does not check with its "
				    "own certificate (%s)", reason ? reason : "OpenSSL gives no reason");
	}
	sig->verified = true;
	return 0;
}

static int verify_pkcs7(PKCS7 *p7, const uint8_t *buf, size_t len, const struct rr_pe_info *pi,
			struct rr_pe_sig *sig)
{
	PKCS7 *content = p7->d.sign->contents;
	ASN1_TYPE *other;
	SPC_INDIRECT *spc = NULL;
	const ASN1_OCTET_STRING *want;
	const unsigned char *der, *inner;
	const EVP_MD *md;
	char oid[64] = "";
	long inner_len;
	int tag, xclass, r;

	if (!content || !content->type || OBJ_obj2txt(oid, sizeof(oid), content->type, 1) <= 0 ||
	    strcmp(oid, OID_SPC_INDIRECT))
		return not_verified(sig, "the signed content is of type %s, not Authenticode's "
				    "SpcIndirectDataContent (" OID_SPC_INDIRECT ")", *oid ? oid : "?");
	other = content->d.other;
	if (!other || other->type != V_ASN1_SEQUENCE || !other->value.sequence)
		return not_verified(sig, "the SpcIndirectDataContent is not a SEQUENCE");
	der = other->value.sequence->data;
	inner = der;
	spc = (SPC_INDIRECT *)ASN1_item_d2i(NULL, &inner, other->value.sequence->length,
					    ASN1_ITEM_rptr(SPC_INDIRECT));
	if (!spc) {
		ERR_clear_error();
		return not_verified(sig, "the SpcIndirectDataContent does not decode");
	}
	md = spc_digest(spc->digest, sig, &want);
	if (!md) {
		ASN1_item_free((ASN1_VALUE *)spc, ASN1_ITEM_rptr(SPC_INDIRECT));
		return 0;
	}
	r = digest_matches(want, md, buf, len, pi, sig);
	if (r < 0 || *sig->why)
		goto out;
	/* Authenticode signs the content's value without its SEQUENCE header
	 * (the kernel's pkcs7_note_data, osslsigncode): that is what the
	 * messageDigest attribute covers. */
	inner = der;
	if (ASN1_get_object(&inner, &inner_len, &tag, &xclass, other->value.sequence->length) & 0x80 ||
	    tag != V_ASN1_SEQUENCE || inner_len != other->value.sequence->length - (inner - der)) {
		ERR_clear_error();
		r = not_verified(sig, "the SpcIndirectDataContent's length does not decode");
		goto out;
	}
	r = md_algs_known(p7, sig);
	if (r < 0 || *sig->why)
		goto out;
	r = signature_checks(p7, inner, inner_len, sig);
out:
	ERR_clear_error();
	ASN1_item_free((ASN1_VALUE *)spc, ASN1_ITEM_rptr(SPC_INDIRECT));
	return r;
}

/* The certificates of a trust file into st: every PEM certificate in it,
 * or the one DER certificate it is.  Returns how many, or <0. */
static int add_anchors(X509_STORE *st, const uint8_t *der, size_t len, const char *name,
		       struct rr_err *e)
{
	_cleanup_(BIO_freep) BIO *b = NULL;
	const unsigned char *p = der;
	X509 *x;
	int n = 0;

	if (len > INT_MAX || !(b = BIO_new_mem_buf(der, (int)len)))
		return rr_errf(e, ENOMEM, "%s: cannot read the certificates: out of memory", name);
	while (n < 1024 && (x = PEM_read_bio_X509(b, NULL, NULL, NULL))) {
		int ok = X509_STORE_add_cert(st, x);
		X509_free(x);
		if (!ok) {
			ERR_clear_error();
			return rr_errf(e, ENOMEM, "%s: cannot keep certificate %d", name, n + 1);
		}
		n++;
	}
	ERR_clear_error();
	if (n)
		return n;
	x = d2i_X509(NULL, &p, (long)len);
	if (x && p == der + len && X509_STORE_add_cert(st, x))
		n = 1;
	X509_free(x);
	ERR_clear_error();
	if (!n)
		return rr_errf(e, EBADMSG, "%s: holds no certificate (PEM certificates or one DER "
			       "X.509 certificate expected)", name);
	return n;
}

/* Does the verified signer of p7 chain to a certificate of the trust file?
 * The kernel's rule (pkcs7_validate_trust): the signer, or a certificate the
 * message carries on its way up, is a trusted key or is signed by one; no
 * root, no dates, no key usage. */
static int check_trust(PKCS7 *p7, X509 *signer, const uint8_t *trust, size_t trust_len,
		       const char *trust_name, struct rr_pe_sig *sig, struct rr_err *e)
{
	_cleanup_(X509_STORE_freep) X509_STORE *st = X509_STORE_new();
	_cleanup_(X509_STORE_CTX_freep) X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	STACK_OF(X509) *chain;
	int r;

	if (!st || !ctx)
		return rr_errf(e, ENOMEM, "%s: cannot check trust: out of memory", trust_name);
	r = add_anchors(st, trust, trust_len, trust_name, e);
	if (r < 0)
		return r;
	if (!X509_STORE_CTX_init(ctx, st, signer, p7->d.sign->cert)) {
		ERR_clear_error();
		return rr_errf(e, ENOMEM, "%s: cannot check trust: out of memory", trust_name);
	}
	X509_STORE_CTX_set_flags(ctx, X509_V_FLAG_PARTIAL_CHAIN | X509_V_FLAG_NO_CHECK_TIME);
	sig->trust_checked = true;
	if (X509_verify_cert(ctx) != 1) {
		snprintf(sig->trust_why, sizeof(sig->trust_why), "the signer's certificate does not "
			 "chain to a certificate of %s (%s)", trust_name,
			 X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx)));
		ERR_clear_error();
		return 0;
	}
	chain = X509_STORE_CTX_get0_chain(ctx);
	if (!chain || sk_X509_num(chain) < 1 ||
	    name_text(X509_get_subject_name(sk_X509_value(chain, sk_X509_num(chain) - 1)),
		      sig->anchor, sizeof(sig->anchor)) < 0)
		return rr_errf(e, EBADMSG, "%s: the trusted certificate's name is unreadable",
			       trust_name);
	sig->trusted = true;
	return 0;
}

static int read_pkcs7(const uint8_t *der, size_t der_len, const uint8_t *buf, size_t len,
		      const struct rr_pe_info *pi, const char *name, const uint8_t *trust,
		      size_t trust_len, const char *trust_name, struct rr_pe_sig *sig,
		      struct rr_err *e)
{
	const unsigned char *p = der;
	_cleanup_(PKCS7_freep) PKCS7 *p7 = NULL;
	_cleanup_(sk_X509_freep) STACK_OF(X509) *signers = NULL;
	int r;

#ifdef RR_CRYPTO_DLOPEN
	if (!pesig_crypto || !pesig_crypto_load)
		return rr_errf(e, ELIBACC, "%s: cannot check its signature: this program "
			       "gave no libcrypto to check it with", name);
	if ((r = pesig_crypto_load(name, e)) < 0)
		return r;
#endif
	p7 = d2i_PKCS7(NULL, &p, (long)der_len);
	if (!p7) {
		ERR_clear_error();
		return rr_errf(e, EBADMSG, "%s: the PE signature is not a PKCS#7 message", name);
	}
	if (!PKCS7_type_is_signed(p7) || !p7->d.sign)
		return rr_errf(e, EBADMSG, "%s: the PE signature is PKCS#7 but not SignedData", name);
	/* Matches each SignerInfo's issuer and serial to the certificates the
	 * message carries. */
	signers = PKCS7_get0_signers(p7, NULL, 0);
	if (!signers || sk_X509_num(signers) < 1) {
		ERR_clear_error();
		return rr_errf(e, EBADMSG, "%s: the PE signature does not carry its signer's "
			       "certificate", name);
	}
	r = verify_pkcs7(p7, buf, len, pi, sig);
	if (r < 0)
		return rr_errf(e, -r, "%s: cannot verify the PE signature: %s", name, strerror(-r));
	if (sig->verified) {
		X509 *c = sk_X509_value(signers, 0);
		if (name_text(X509_get_subject_name(c), sig->subject, sizeof(sig->subject)) < 0 ||
		    name_text(X509_get_issuer_name(c), sig->issuer, sizeof(sig->issuer)) < 0)
			return rr_errf(e, EBADMSG, "%s: the PE signer's certificate names are "
				       "unreadable", name);
		if (trust)
			return check_trust(p7, c, trust, trust_len, trust_name, sig, e);
	}
	return 0;
}

int rr_pe_sig_read(const uint8_t *buf, size_t len, const char *name,
		   struct rr_pe_sig *ret, struct rr_err *e)
{
	return rr_pe_sig_read_trust(buf, len, name, NULL, 0, NULL, ret, e);
}

int rr_pe_sig_read_trust(const uint8_t *buf, size_t len, const char *name, const uint8_t *trust,
			 size_t trust_len, const char *trust_name, struct rr_pe_sig *ret,
			 struct rr_err *e)
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
			r = read_pkcs7(buf + at + WIN_CERT_HDR_SIZE, wlen - WIN_CERT_HDR_SIZE, buf,
				       len, &pi, name, trust, trust_len, trust_name, &sig, e);
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
