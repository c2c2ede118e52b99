/* SPDX-License-Identifier: GPL-2.0-only */
/* Fuzz target: the xz payload decoder (rr_decompress with RR_KC_XZ). */
#include "fuzz_codec.h"

FUZZ_CODEC_TARGET(RR_KC_XZ)
