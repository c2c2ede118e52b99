/* SPDX-License-Identifier: GPL-2.0-only */
/* Fuzz the PE header and Authenticode reader (rr_pe_parse, rr_pe_sig_read):
 * any input is refused or accepted with every offset inside the buffer, the
 * names as printable text, and a signer only when the signature verifies. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pesig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
	return 0;
}
