/* ingot_attention_decode_limits.h: the constants the attention decode kernels
 * (ingot_attention_decode.h, device code) and their planning
 * (ingot_attention_decode_plan.h, host C) must agree on. Plain macros: both
 * C11 and the device compilers read this file. */
#ifndef INGOT_ATTENTION_DECODE_LIMITS_H
#define INGOT_ATTENTION_DECODE_LIMITS_H

/* The family's constants the generator shares (INGOT_AD_MAX_*, the flag bits,
 * the launch entries, INGOT_AD_MERGE_WAVES): generated from
 * generator/ingot/families/attention_decode.py. */
#include "ingot_abi.h"

/* Up to this many segments the merge is compact: one thread per 4 output
 * columns of a row reads every segment's partial itself, and a workgroup holds
 * INGOT_AD_MERGE_WAVES waves of such threads (grid: ceil(rows * D / 4 / threads),
 * Hkv, B). Past it, workgroups of one row and 32 columns share the segments
 * (grid: rows * D / 32, Hkv, B). */
#define INGOT_AD_COMPACT_MERGE_SPLITS 16

/* The wide merge's columns per workgroup: 32, or 16 where the head dim is no multiple of 32. */
#define INGOT_AD_MERGE_COLS(head_dim) ((head_dim) % 32 == 0 ? 32 : 16)

#endif
