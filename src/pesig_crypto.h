/* SPDX-License-Identifier: GPL-2.0-only */
/* The libcrypto functions src/pesig.c calls, as one table of pointers, for
 * the copy of pesig.c that does not link libcrypto: rerandd's (pesig_dl.o,
 * pesig.c built with RR_CRYPTO_DLOPEN), which opens libcrypto only when a
 * signature is checked, never at start-up (issue 28: only rerandd's
 * forked helpers check signatures, and a libcrypto mapped in rerandd itself
 * cost 1.4 MiB of its idle RSS for nothing).
 *
 * The program owns the loading: it hands that copy the table and the
 * function that fills it with rr_pesig_use_crypto() (rerandd: its
 * daemon/crypto_dl.c), so nothing here reaches above src/.  With
 * RR_CRYPTO_DLOPEN, pesig.c's includer, each OpenSSL function it calls
 * (directly or through OpenSSL's macros) becomes a call through that
 * table. */
#ifndef RR_PESIG_CRYPTO_H
#define RR_PESIG_CRYPTO_H

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

#include "pesig.h"

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

#ifdef RR_CRYPTO_DLOPEN
/* For pesig.c alone: its table (set by rr_pesig_use_crypto()) and, since
 * the ASN.1 templates need constant addresses for their item functions,
 * trampolines that call through it. */
static const struct rr_crypto *pesig_crypto;

static inline const ASN1_ITEM *pesig_dl_ASN1_ANY_it(void)
{
	return pesig_crypto->ASN1_ANY_it();
}

static inline const ASN1_ITEM *pesig_dl_ASN1_OBJECT_it(void)
{
	return pesig_crypto->ASN1_OBJECT_it();
}

static inline const ASN1_ITEM *pesig_dl_X509_SIG_it(void)
{
	return pesig_crypto->X509_SIG_it();
}

#define ASN1_ANY_it pesig_dl_ASN1_ANY_it
#define ASN1_OBJECT_it pesig_dl_ASN1_OBJECT_it
#define X509_SIG_it pesig_dl_X509_SIG_it
#define ASN1_get_object (*pesig_crypto->ASN1_get_object)
#define ASN1_item_d2i (*pesig_crypto->ASN1_item_d2i)
#define ASN1_item_free (*pesig_crypto->ASN1_item_free)
#define BIO_ctrl (*pesig_crypto->BIO_ctrl)
#define BIO_free (*pesig_crypto->BIO_free)
#define BIO_new (*pesig_crypto->BIO_new)
#define BIO_new_mem_buf (*pesig_crypto->BIO_new_mem_buf)
#define BIO_s_mem (*pesig_crypto->BIO_s_mem)
#define ERR_clear_error (*pesig_crypto->ERR_clear_error)
#define ERR_peek_error (*pesig_crypto->ERR_peek_error)
#define ERR_reason_error_string (*pesig_crypto->ERR_reason_error_string)
#define EVP_DigestFinal_ex (*pesig_crypto->EVP_DigestFinal_ex)
#define EVP_DigestInit_ex (*pesig_crypto->EVP_DigestInit_ex)
#define EVP_DigestUpdate (*pesig_crypto->EVP_DigestUpdate)
#define EVP_MD_CTX_free (*pesig_crypto->EVP_MD_CTX_free)
#define EVP_MD_CTX_new (*pesig_crypto->EVP_MD_CTX_new)
#define EVP_MD_get_size (*pesig_crypto->EVP_MD_get_size)
#define EVP_get_digestbyname (*pesig_crypto->EVP_get_digestbyname)
#define OBJ_nid2sn (*pesig_crypto->OBJ_nid2sn)
#define OBJ_obj2nid (*pesig_crypto->OBJ_obj2nid)
#define OBJ_obj2txt (*pesig_crypto->OBJ_obj2txt)
#define OPENSSL_sk_free (*pesig_crypto->OPENSSL_sk_free)
#define OPENSSL_sk_num (*pesig_crypto->OPENSSL_sk_num)
#define OPENSSL_sk_value (*pesig_crypto->OPENSSL_sk_value)
#define PKCS7_free (*pesig_crypto->PKCS7_free)
#define PKCS7_get0_signers (*pesig_crypto->PKCS7_get0_signers)
#define PKCS7_verify (*pesig_crypto->PKCS7_verify)
#define X509_ALGOR_get0 (*pesig_crypto->X509_ALGOR_get0)
#define X509_NAME_print_ex (*pesig_crypto->X509_NAME_print_ex)
#define X509_SIG_get0 (*pesig_crypto->X509_SIG_get0)
#define X509_get_issuer_name (*pesig_crypto->X509_get_issuer_name)
#define X509_get_subject_name (*pesig_crypto->X509_get_subject_name)
#define d2i_PKCS7 (*pesig_crypto->d2i_PKCS7)
#define PEM_read_bio_X509 (*pesig_crypto->PEM_read_bio_X509)
#define X509_free (*pesig_crypto->X509_free)
#define d2i_X509 (*pesig_crypto->d2i_X509)
#define X509_STORE_new (*pesig_crypto->X509_STORE_new)
#define X509_STORE_free (*pesig_crypto->X509_STORE_free)
#define X509_STORE_add_cert (*pesig_crypto->X509_STORE_add_cert)
#define X509_STORE_CTX_new (*pesig_crypto->X509_STORE_CTX_new)
#define X509_STORE_CTX_free (*pesig_crypto->X509_STORE_CTX_free)
#define X509_STORE_CTX_init (*pesig_crypto->X509_STORE_CTX_init)
#define X509_STORE_CTX_set_flags (*pesig_crypto->X509_STORE_CTX_set_flags)
#define X509_verify_cert (*pesig_crypto->X509_verify_cert)
#define X509_STORE_CTX_get_error (*pesig_crypto->X509_STORE_CTX_get_error)
#define X509_verify_cert_error_string (*pesig_crypto->X509_verify_cert_error_string)
#define X509_STORE_CTX_get0_chain (*pesig_crypto->X509_STORE_CTX_get0_chain)
#endif

#endif
