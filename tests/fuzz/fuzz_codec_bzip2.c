/* SPDX-License-Identifier: GPL-2.0-only */
/* Fuzz target: the bzip2 payload decoder (rr_decompress with RR_KC_BZIP2). */
#include "fuzz_codec.h"

FUZZ_CODEC_TARGET(RR_KC_BZIP2)
