/* SPDX-License-Identifier: GPL-2.0-only */
/* Fuzz target: the zstd payload decoder (rr_decompress with RR_KC_ZSTD). */
#include "fuzz_codec.h"

FUZZ_CODEC_TARGET(RR_KC_ZSTD)
