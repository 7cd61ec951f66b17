/* ingot_attention_decode_limits.h: the constants the attention decode kernels
 * (ingot_attention_decode.h, device code) and their planning
 * (ingot_attention_decode_plan.h, host C) must agree on. Plain macros: both
 * C11 and the device compilers read this file. */
#ifndef INGOT_ATTENTION_DECODE_LIMITS_H
#define INGOT_ATTENTION_DECODE_LIMITS_H

/* The merge kernel runs this many waves per workgroup, whatever the split's. */
#define INGOT_AD_MERGE_WAVES 4

/* Up to this many segments the merge is compact: one thread per 4 output
 * columns of a row reads every segment's partial itself, and a workgroup holds
 * INGOT_AD_MERGE_WAVES waves of such threads (grid: ceil(rows * D / 4 / threads),
 * Hkv, B). Past it, workgroups of one row and 32 columns share the segments
 * (grid: rows * D / 32, Hkv, B). */
#define INGOT_AD_COMPACT_MERGE_SPLITS 16

/* The wide merge's columns per workgroup: 32, or 16 where the head dim is no multiple of 32. */
#define INGOT_AD_MERGE_COLS(head_dim) ((head_dim) % 32 == 0 ? 32 : 16)

/* flags bit 12: causal with the mask aligned top-left (the kernels' kFlagTopLeft; bits 0 and 1
 * are causal and write-LSE, bit 2 and bits 3..11, 16..30 a balanced plan's:
 * ingot_attention_decode_balance.h). */
#define INGOT_AD_FLAG_TOP_LEFT (1 << 12)

/* Launch entries: indices into the UDD's entry_points, in the generator's order
 * (generator/ingot/families/attention_decode.py, ENTRY_POINTS; test_descriptors
 * checks the two agree). */
#define INGOT_AD_ENTRY_SPLIT 0
#define INGOT_AD_ENTRY_MERGE 1
#define INGOT_AD_ENTRY_BALANCED_SPLIT 2
#define INGOT_AD_ENTRY_BALANCED_MERGE 3

#endif
