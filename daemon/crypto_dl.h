/* SPDX-License-Identifier: GPL-2.0-only */
/* libcrypto for rerandd's copy of src/pesig.c, opened with dlopen when a
 * signature is checked, never at start-up: only rerandd-check (a forked
 * helper) checks signatures, and a libcrypto mapped in rerandd itself cost
 * 1.4 MiB of its idle RSS for nothing (issue 28, bench/rerandd-idle.sh).
 *
 * Included by src/pesig.c after OpenSSL's headers when built with
 * RR_CRYPTO_DLOPEN: each OpenSSL function it calls (directly or through
 * OpenSSL's macros) becomes a call through rr_crypto, which
 * rr_crypto_load() fills.  The ASN.1 templates need constant addresses for
 * their item functions, so those get trampolines. */
#ifndef RR_CRYPTO_DL_H
#define RR_CRYPTO_DL_H

#include <openssl/asn1t.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/opensslv.h>
#include <openssl/pem.h>
#include <openssl/pkcs7.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <stdbool.h>

#include "err.h"

#if OPENSSL_VERSION_MAJOR != 3
#error "crypto_dl opens libcrypto.so.3: built against another OpenSSL major version"
#endif
#define RR_CRYPTO_SONAME "libcrypto.so.3"

#define RR_CRYPTO_FNS(X) \
	X(ASN1_ANY_it) X(ASN1_OBJECT_it) X(X509_SIG_it) X(ASN1_get_object) \
	X(ASN1_item_d2i) X(ASN1_item_free) X(BIO_ctrl) X(BIO_free) X(BIO_new) \
	X(BIO_new_mem_buf) X(BIO_s_mem) X(ERR_clear_error) X(ERR_peek_error) \
	X(ERR_reason_error_string) X(EVP_DigestFinal_ex) X(EVP_DigestInit_ex) \
	X(EVP_DigestUpdate) X(EVP_MD_CTX_free) X(EVP_MD_CTX_new) X(EVP_MD_get_size) \
	X(EVP_get_digestbyname) X(OBJ_nid2sn) X(OBJ_obj2nid) X(OBJ_obj2txt) \
	X(OPENSSL_sk_free) X(OPENSSL_sk_num) X(OPENSSL_sk_value) X(PKCS7_free) \
	X(PKCS7_get0_signers) X(PKCS7_verify) X(X509_ALGOR_get0) X(X509_NAME_print_ex) \
	X(X509_SIG_get0) X(X509_get_issuer_name) X(X509_get_subject_name) X(d2i_PKCS7) \
	X(PEM_read_bio_X509) X(X509_free) X(d2i_X509) X(X509_STORE_new) X(X509_STORE_free) \
	X(X509_STORE_add_cert) X(X509_STORE_CTX_new) X(X509_STORE_CTX_free) \
	X(X509_STORE_CTX_init) X(X509_STORE_CTX_set_flags) X(X509_verify_cert) \
	X(X509_STORE_CTX_get_error) X(X509_verify_cert_error_string) X(X509_STORE_CTX_get0_chain)

struct rr_crypto {
#define RR_CRYPTO_PTR(f) __typeof__(f) *f;
	RR_CRYPTO_FNS(RR_CRYPTO_PTR)
#undef RR_CRYPTO_PTR
};
extern struct rr_crypto rr_crypto;

/* 0 once every function is there; <0 with e naming the library and what
 * (for) wanted it. */
int rr_crypto_load(const char *what, struct rr_err *e);

const ASN1_ITEM *rr_dl_ASN1_ANY_it(void);
const ASN1_ITEM *rr_dl_ASN1_OBJECT_it(void);
const ASN1_ITEM *rr_dl_X509_SIG_it(void);

#ifdef RR_CRYPTO_DLOPEN
#define ASN1_ANY_it rr_dl_ASN1_ANY_it
#define ASN1_OBJECT_it rr_dl_ASN1_OBJECT_it
#define X509_SIG_it rr_dl_X509_SIG_it
#define ASN1_get_object (*rr_crypto.ASN1_get_object)
#define ASN1_item_d2i (*rr_crypto.ASN1_item_d2i)
#define ASN1_item_free (*rr_crypto.ASN1_item_free)
#define BIO_ctrl (*rr_crypto.BIO_ctrl)
#define BIO_free (*rr_crypto.BIO_free)
#define BIO_new (*rr_crypto.BIO_new)
#define BIO_new_mem_buf (*rr_crypto.BIO_new_mem_buf)
#define BIO_s_mem (*rr_crypto.BIO_s_mem)
#define ERR_clear_error (*rr_crypto.ERR_clear_error)
#define ERR_peek_error (*rr_crypto.ERR_peek_error)
#define ERR_reason_error_string (*rr_crypto.ERR_reason_error_string)
#define EVP_DigestFinal_ex (*rr_crypto.EVP_DigestFinal_ex)
#define EVP_DigestInit_ex (*rr_crypto.EVP_DigestInit_ex)
#define EVP_DigestUpdate (*rr_crypto.EVP_DigestUpdate)
#define EVP_MD_CTX_free (*rr_crypto.EVP_MD_CTX_free)
#define EVP_MD_CTX_new (*rr_crypto.EVP_MD_CTX_new)
#define EVP_MD_get_size (*rr_crypto.EVP_MD_get_size)
#define EVP_get_digestbyname (*rr_crypto.EVP_get_digestbyname)
#define OBJ_nid2sn (*rr_crypto.OBJ_nid2sn)
#define OBJ_obj2nid (*rr_crypto.OBJ_obj2nid)
#define OBJ_obj2txt (*rr_crypto.OBJ_obj2txt)
#define OPENSSL_sk_free (*rr_crypto.OPENSSL_sk_free)
#define OPENSSL_sk_num (*rr_crypto.OPENSSL_sk_num)
#define OPENSSL_sk_value (*rr_crypto.OPENSSL_sk_value)
#define PKCS7_free (*rr_crypto.PKCS7_free)
#define PKCS7_get0_signers (*rr_crypto.PKCS7_get0_signers)
#define PKCS7_verify (*rr_crypto.PKCS7_verify)
#define X509_ALGOR_get0 (*rr_crypto.X509_ALGOR_get0)
#define X509_NAME_print_ex (*rr_crypto.X509_NAME_print_ex)
#define X509_SIG_get0 (*rr_crypto.X509_SIG_get0)
#define X509_get_issuer_name (*rr_crypto.X509_get_issuer_name)
#define X509_get_subject_name (*rr_crypto.X509_get_subject_name)
#define d2i_PKCS7 (*rr_crypto.d2i_PKCS7)
#define PEM_read_bio_X509 (*rr_crypto.PEM_read_bio_X509)
#define X509_free (*rr_crypto.X509_free)
#define d2i_X509 (*rr_crypto.d2i_X509)
#define X509_STORE_new (*rr_crypto.X509_STORE_new)
#define X509_STORE_free (*rr_crypto.X509_STORE_free)
#define X509_STORE_add_cert (*rr_crypto.X509_STORE_add_cert)
#define X509_STORE_CTX_new (*rr_crypto.X509_STORE_CTX_new)
#define X509_STORE_CTX_free (*rr_crypto.X509_STORE_CTX_free)
#define X509_STORE_CTX_init (*rr_crypto.X509_STORE_CTX_init)
#define X509_STORE_CTX_set_flags (*rr_crypto.X509_STORE_CTX_set_flags)
#define X509_verify_cert (*rr_crypto.X509_verify_cert)
#define X509_STORE_CTX_get_error (*rr_crypto.X509_STORE_CTX_get_error)
#define X509_verify_cert_error_string (*rr_crypto.X509_verify_cert_error_string)
#define X509_STORE_CTX_get0_chain (*rr_crypto.X509_STORE_CTX_get0_chain)
#endif

#endif
