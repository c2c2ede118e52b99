/* SPDX-License-Identifier: GPL-2.0-only */
/* Fuzz target: the gzip payload decoder (rr_decompress with RR_KC_GZIP). */
#include "fuzz_codec.h"

FUZZ_CODEC_TARGET(RR_KC_GZIP)
