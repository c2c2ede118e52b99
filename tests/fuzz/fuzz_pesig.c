/* SPDX-License-Identifier: GPL-2.0-only */
/* Fuzz the PE header and Authenticode reader (rr_pe_parse, rr_pe_sig_read):
 * any input is refused or accepted with every offset inside the buffer, the
 * names as printable text, and a signer only when the signature verifies.
 * Then again against a trust file (rr_pe_sig_read_trust): the signer's
 * certificates, as fuzzed, go through the chain check, and trust is
 * decided only for a signature that verifies. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pesig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A certificate that signed nothing: the chain check runs and says no. */
static const char anchor[] =
	"-----BEGIN CERTIFICATE-----\n"
	"MIIBmjCCAUGgAwIBAgIUXX5N/JCaOKSjFSPUc2m3iDlGLOwwCgYIKoZIzj0EAwIw\n"
	"IzEhMB8GA1UEAwwYcmVyYW5kIGZ1enogdHJ1c3QgYW5jaG9yMB4XDTI2MTIwNjIw\n"
	"MTgzNVoXDTM2MTIwMzIwMTgzNVowIzEhMB8GA1UEAwwYcmVyYW5kIGZ1enogdHJ1\n"
	"c3QgYW5jaG9yMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEZPaYUWPMHQ/IrGls\n"
	"e9Zi4GVCtPtj1vAkwl7eJQYZJKmWCS5CjvQGUCmsp46PQ3H9YLAAR6qDUnVp1iSs\n"
	"cYol7qNTMFEwHQYDVR0OBBYEFNoy2v4drJmZHYHxFTHbcLEnQWDoMB8GA1UdIwQY\n"
	"MBaAFNoy2v4drJmZHYHxFTHbcLEnQWDoMA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZI\n"
	"zj0EAwIDRwAwRAIgeJjW3C7CDskuzNLmgFmXSgp34HdA2bpiptqn9kd0GgACIBfU\n"
	"11lUI+zgdYXTxioyzbnhMsqAIwiy8IbAPTE8uU27\n"
	"-----END CERTIFICATE-----\n";

static void check_text(const char *s, size_t cap)
{
	size_t n = strnlen(s, cap);
	if (n == cap)
		abort();
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rr_pe_info pi;
	struct rr_pe_sig sig;
	struct rr_err e;

	if (rr_pe_parse(data, size, "fuzz", &pi, &e) == 0) {
		if (pi.size_of_headers >= size || pi.sections_offset +
		    (uint64_t)pi.nr_sections * 40 > pi.size_of_headers)
			abort();
		if (pi.cert_size && (pi.cert_offset < pi.size_of_headers ||
				     (uint64_t)pi.cert_offset + pi.cert_size > size))
			abort();
	}
	if (rr_pe_sig_read(data, size, "fuzz", &sig, &e) < 0)
		return 0;
	if (sig.is_signed && (!sig.is_pe || sig.nr_signatures == 0))
		abort();
	check_text(sig.subject, sizeof(sig.subject));
	check_text(sig.issuer, sizeof(sig.issuer));
	check_text(sig.why, sizeof(sig.why));
	/* a signer is named only for a signature that verifies; one that does
	 * not says why */
	if (sig.verified ? !sig.is_signed || sig.why[0] || !sig.digest[0]
			 : sig.subject[0] || sig.issuer[0] || (sig.is_signed && !sig.why[0]))
		abort();
	if (sig.trust_checked || sig.trusted)
		abort();                       /* no trust file, no trust */

	struct rr_pe_sig t;
	if (rr_pe_sig_read_trust(data, size, "fuzz", (const uint8_t *)anchor, sizeof(anchor) - 1,
				 "anchor.pem", &t, &e) < 0)
		return 0;
	if (t.verified != sig.verified || t.trust_checked != t.verified)
		abort();
	check_text(t.anchor, sizeof(t.anchor));
	check_text(t.trust_why, sizeof(t.trust_why));
	/* nothing here is signed by the anchor */
	if (t.trusted || t.anchor[0] || (t.trust_checked && !t.trust_why[0]))
		abort();
	return 0;
}
