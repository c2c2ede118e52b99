#!/bin/bash
# rerandd runs as root and never decodes a kernel: its address space holds
# no kernel decompressor, libelf or compressor of its own (issue 24, point
# 1).  The image reader (src/image_read.c) is split from the writer
# (src/image_write.c, LZ4 and libelf through lz4par.c and elfread.c), and
# rerandd links the reader and the libraries its own code calls, nothing
# else.  Checked on the built binary three ways: the libraries it asks for
# (DT_NEEDED), the symbols it imports, and the objects of librerand.a that
# its link pulls in.  Then the whole closure the dynamic loader maps, with
# each codec library traced to the library that brings it: on Debian 12
# libsystemd itself needs liblz4, liblzma and libzstd (journal
# compression; Debian 13's loads them only when a journal file needs
# them), which rerand cannot change and this test reports, not hides.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/lib/tap.sh"
RERANDD=$top/build/rerandd
RERAND=$top/build/rerand
[ -x "$RERANDD" ] && [ -x "$RERAND" ] || bail "build/rerandd or build/rerand is missing: make"
command -v readelf >/dev/null && command -v nm >/dev/null || bail "readelf and nm (binutils) are missing"

codec_libs='^lib(elf|lz4|lzma|zstd|z|bz2|lzo2)\.so'
codec_syms='^(elf_|elf32_|elf64_|gelf_|LZ4|lzma_|ZSTD_|inflate|deflate|BZ2_|lzo1)'
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
imports() { nm -D --undefined-only "$1" | awk '{ print $2 }' | sed 's/@.*//'; }

# The CLI does link them: the same checks, pointed at it, see what they look for.
check "the checks see the codec libraries where they are: rerand needs $(needed "$RERAND" | grep -E "$codec_libs" | tr '\n' ' ')" \
	test "$(needed "$RERAND" | grep -cE "$codec_libs")" -ge 5
check "the checks see codec imports where they are: rerand imports $(imports "$RERAND" | grep -cE "$codec_syms") codec symbols" \
	test "$(imports "$RERAND" | grep -cE "$codec_syms")" -ge 10

bad=$(needed "$RERANDD" | grep -E "$codec_libs" | tr '\n' ' ')
check "rerandd needs no codec library and no libelf (it needs: $(needed "$RERANDD" | tr '\n' ' '))" test -z "$bad"
[ -z "$bad" ] || echo "# rerandd needs: $bad"
bad=$(imports "$RERANDD" | grep -E "$codec_syms" | tr '\n' ' ')
check "rerandd imports no decoder, compressor or libelf symbol" test -z "$bad"
[ -z "$bad" ] || echo "# rerandd imports: $bad"

# The writer's objects are not in rerandd at all (a static archive member
# pulled in would show up here even if the linker dropped its libraries).
for sym in rr_image_build rr_lz4par_block rr_elf_peek_loads rr_kernel_load; do
	if nm "$RERAND" | grep -q " T $sym\$"; then
		check "rerandd holds no $sym (the writer's half; rerand has it)" \
			bash -c "! nm '$RERANDD' | grep -q ' T $sym\$'"
	fi
done
check "rerandd holds the reader (rr_image_parse)" bash -c "nm '$RERANDD' | grep -q ' T rr_image_parse\$'"

# rerandd's own SHA-256 (image cache keys, image records: src/cachekey.c,
# which daemon/digest.c calls) is Nettle's, not OpenSSL's: the first EVP digest brings up OpenSSL 3's
# providers, which then stay resident (about 2 MiB of idle RSS, issue 28,
# bench/rerandd-idle.sh).  Only the signed-image checks call libcrypto, and
# only for a signed image.  The same look at src/pesig.c's object shows
# the check sees OpenSSL imports where they are.
ossl_syms='^(EVP_|OPENSSL_|OSSL_|SHA256)'
obj_imports() { nm --undefined-only "$1" | awk '{ print $2 }'; }
digest_o=$top/build/host/src/cachekey.o pesig_o=$top/build/host/src/pesig.o
if [ -r "$digest_o" ] && [ -r "$pesig_o" ]; then
	check "the check sees OpenSSL imports where they are: pesig.o imports $(obj_imports "$pesig_o" | grep -cE "$ossl_syms")" \
		test "$(obj_imports "$pesig_o" | grep -cE "$ossl_syms")" -ge 5
	bad=$(obj_imports "$digest_o" | grep -E "$ossl_syms" | tr '\n' ' ')
	check "rerandd hashes with Nettle, not OpenSSL (cachekey.o imports: ${bad:-no OpenSSL symbol})" \
		bash -c "[ -z '$bad' ] && nm --undefined-only '$digest_o' | grep -q nettle_sha256_digest"
else
	bail "$digest_o or $pesig_o is missing: make build/rerandd"
fi
# Nor does it map libcrypto or libm at all (issue 28: 1.4 MiB and 316 kB of
# idle RSS): signatures are checked by rerandd-check, which opens libcrypto
# with dlopen (daemon/crypto_dl.h, through src/pesig_crypto.h's table); log2 is rr_bits.
check "rerandd needs neither libcrypto nor libm (it needs: $(needed "$RERANDD" | tr '\n' ' '))" \
	bash -c "! readelf -d '$RERANDD' | grep -qE '\[lib(crypto|m)\.so'"
bad=$(imports "$RERANDD" | grep -E "$ossl_syms|^(PKCS7|X509|BIO|ASN1|d2i)_" | tr '\n' ' ')
check "rerandd imports no OpenSSL symbol (${bad:-none})" test -z "$bad"
check "rerandd opens libcrypto itself, when a signature is checked" \
	bash -c "nm '$RERANDD' | grep -q ' T rr_crypto_load\$' && strings '$RERANDD' | grep -qx 'libcrypto.so.3'"

# The closure: every codec library in it, and who needs it.
closure=$(LD_TRACE_LOADED_OBJECTS=1 "$RERANDD" 2>/dev/null | awk '/=>/ { print $3 }')
[ -n "$closure" ] || bail "cannot list rerandd's libraries (LD_TRACE_LOADED_OBJECTS)"
via_other=""
for lib in $closure; do
	base=${lib##*/}
	[[ "$base" =~ $codec_libs ]] || continue
	by=""
	for other in $closure; do
		needed "$other" 2>/dev/null | grep -qx "$base" && by+="${other##*/} "
	done
	by=${by% }
	via_other+="$base (needed by ${by:-?}) "
	# a codec library in the closure must come from a library, never rerandd
	check "$base is mapped only because ${by:-nothing} needs it, not rerandd" \
		bash -c "[ -n '$by' ] && ! readelf -d '$RERANDD' | grep -q '\\[$base\\]'"
done
echo "# codec libraries in rerandd's closure through other libraries: ${via_other:-none}"
done_
