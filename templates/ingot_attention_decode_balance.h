/* ingot_attention_decode_balance.h: the arithmetic of the balanced split mode
 * (docs/INTERNALS.md, "Balanced split"), shared by the kernels
 * (ingot_attention_decode.h, device code), the planning
 * (ingot_attention_decode_plan.h, host C) and the host tests, so the three
 * cannot disagree. Pure integer functions, 64-bit where a sum of lengths is.
 *
 * The batch's work is counted in tiles (a workgroup's tokens per step):
 * sequence b has tiles_b = ceil(clamp(L_b, 0, capacity) / tile), its tiles are
 * [P_b, P_b + tiles_b) of the concatenated batch (P: exclusive prefix sums,
 * total = P_B). Of the plan's `units` work units per (KV head, row block),
 * `active` (ingot_ad_bal_active, from total) take a share: unit w the tiles
 * [start(w), start(w + 1)), start(w) = floor(w * total / active), so every
 * active unit has at least one tile and the shares differ by at most one. A
 * unit's piece of sequence b is the overlap of the two ranges; the pieces of b
 * are those of units unit_of(P_b) .. unit_of(P_b + tiles_b - 1), consecutive,
 * each non-empty. Piece (w, b) keeps its fp32 partial in slot w + b: along
 * the batch, each next piece has a larger w or a larger b (never a smaller
 * one), so slots are unique and below units + B - 1: the split grid has a
 * workgroup per slot, and workgroup s runs the piece with w + b = s, if any.
 * A sequence one unit holds whole is written to O directly (it still has its
 * slot's workgroup, but no partial). */
#ifndef INGOT_ATTENTION_DECODE_BALANCE_H
#define INGOT_ATTENTION_DECODE_BALANCE_H

#include "ingot_abi.h" /* the flag fields of a balanced plan: INGOT_AD_FLAG_* */

#if defined(__AMDGCN__) || defined(__CUDACC__)
#if defined(__CUDACC__)
#define INGOT_AD_BAL_FN __host__ __device__ __forceinline__
#else
#define INGOT_AD_BAL_FN __attribute__((device)) __attribute__((always_inline)) inline
#endif
/* An approximate float reciprocal (refined below, never trusted alone). */
#define INGOT_AD_BAL_RCP(x) ingot::fast_rcp(x)
#else
#define INGOT_AD_BAL_FN static inline
#define INGOT_AD_BAL_RCP(x) (1.0f / (x))
#endif

/* The plan takes the balanced mode for batches up to this many sequences:
 * every split workgroup scans the batch's lengths (B x 4 bytes from L2), and
 * there are units + B - 1 of them per KV head and row block, so the scan's
 * traffic grows as B^2 (about 42 MB at 1024, Hkv 8, 256 units). The arithmetic
 * below holds to 4096 sequences of 2^31 tokens (the host tests run it there). */
#define INGOT_AD_BALANCED_MAX_BATCH 1024
/* flags: INGOT_AD_FLAG_BALANCED marks a balanced plan (whose launches are the
 * balanced_split and balanced_merge entry points); the field at
 * INGOT_AD_FLAG_BATCH_SHIFT holds the batch B (the split grid of a balanced
 * plan has no batch dimension), the one at INGOT_AD_FLAG_FILL_SHIFT its fill. */

/* Tiles of a sequence of raw device length len: clamped to [0, capacity]
 * (capacity + tile - 1 < 2^31, the plan's bound: 32-bit arithmetic). */
INGOT_AD_BAL_FN long long ingot_ad_bal_tiles(int len, int capacity, int tile) {
  const int l = len < 0 ? 0 : (len > capacity ? capacity : len);
  return (long long)((l + (tile - 1)) / tile);
}

/* floor(x / d) for 0 <= x < 2^63 and 1 <= d <= 65535, exactly, in four
 * 32-bit divisions of 16-bit digits: a 64-bit division is a called
 * subroutine on NVIDIA (a function of its own in the code object). */
INGOT_AD_BAL_FN long long ingot_ad_bal_div_small(long long x, long long d) {
  const unsigned long long u = (unsigned long long)x;
  const unsigned dd = (unsigned)d;
  unsigned long long q = 0;
  unsigned r = 0;
  for (int i = 3; i >= 0; --i) {
    const unsigned cur = (r << 16) | (unsigned)((u >> (16 * i)) & 0xffffu); /* r < d <= 2^16 - 1 */
    const unsigned qd = cur / dd;
    r = cur - qd * dd;
    q = (q << 16) | qd;
  }
  return (long long)q;
}

/* The clamped length itself. */
INGOT_AD_BAL_FN int ingot_ad_bal_clamp(int len, int capacity) {
  return len < 0 ? 0 : (len > capacity ? capacity : len);
}

/* A share holds at most about this many tiles unless every unit is active
 * (the shipped policy's max_tiles_per_split: 4096 tokens of the seed tile). */
#define INGOT_AD_BALANCED_SHARE_TILES 64
/* The flags' `fill` (INGOT_AD_FLAG_FILL_*): the units that make one round of
 * resident workgroups (1..units, from the plan). */

/* Units with a share, decided on the device from the batch's tiles: enough
 * for a full round of workgroups (fill) or for shares of at most
 * INGOT_AD_BALANCED_SHARE_TILES tiles, whichever is more, but no more than
 * the plan's units nor the tiles (0 when the batch is empty). A short batch
 * runs in one round of long shares instead of many rounds of short ones. */
INGOT_AD_BAL_FN long long ingot_ad_bal_active(long long total, int units, int fill) {
  const long long by_share = (total + INGOT_AD_BALANCED_SHARE_TILES - 1) / INGOT_AD_BALANCED_SHARE_TILES;
  long long a = by_share > fill ? by_share : (long long)fill;
  if (a > units) a = units;
  return total < a ? total : a;
}

/* The fill field of a balanced plan's flags. */
INGOT_AD_BAL_FN int ingot_ad_bal_fill(int flags) { return (flags >> INGOT_AD_FLAG_FILL_SHIFT) & INGOT_AD_FLAG_FILL_MASK; }

/* First tile of unit w (0 <= w <= active; start(active) = total). total <=
 * 4096 x 2^31 and w <= active <= 256 (the plan's bounds): the product stays
 * below 2^52, the divisor below 2^16. */
INGOT_AD_BAL_FN long long ingot_ad_bal_start(long long w, long long total, long long active) {
  return active > 0 ? ingot_ad_bal_div_small(w * total, active) : 0;
}

/* The unit whose share holds tile t (0 <= t < total): the largest w < active
 * with start(w) <= t (= floor(((t + 1) * active - 1) / total)). A float
 * estimate within a unit or two, then exact steps on start(), which never
 * decreases: no 64-bit division. */
INGOT_AD_BAL_FN long long ingot_ad_bal_unit_of(long long t, long long total, long long active) {
  long long w = (long long)((float)t * ((float)active * INGOT_AD_BAL_RCP((float)total)));
  if (w > active - 1) w = active - 1;
  if (w < 0) w = 0;
  while (w > 0 && ingot_ad_bal_start(w, total, active) > t) --w;
  while (w + 1 < active && ingot_ad_bal_start(w + 1, total, active) <= t) ++w;
  return w;
}

/* The overlap of a share [s0, s1) with a sequence's tiles [p, p + n): tiles
 * [*lo, *hi) of the batch, a piece when *lo < *hi. */
INGOT_AD_BAL_FN void ingot_ad_bal_cut(long long s0, long long s1, long long p, long long n, long long *lo,
                                      long long *hi) {
  *lo = s0 > p ? s0 : p;
  *hi = s1 < p + n ? s1 : p + n;
}

/* Unit w's piece of a sequence with prefix p and n tiles. */
INGOT_AD_BAL_FN void ingot_ad_bal_piece(long long w, long long total, long long active, long long p, long long n,
                                        long long *lo, long long *hi) {
  ingot_ad_bal_cut(ingot_ad_bal_start(w, total, active), ingot_ad_bal_start(w + 1, total, active), p, n, lo, hi);
}

/* The workspace slot of piece (w, b). */
INGOT_AD_BAL_FN long long ingot_ad_bal_slot(long long w, int b) { return w + b; }

/* Where piece (w, b) = tiles [lo, hi) of a sequence [p, p + n) goes: its slot,
 * or -1 when it is the whole sequence (written to O, no partial). */
INGOT_AD_BAL_FN int ingot_ad_bal_piece_slot(long long w, int b, long long lo, long long hi, long long p, long long n) {
  return lo == p && hi == p + n ? -1 : (int)ingot_ad_bal_slot(w, b);
}

/* A piece's token range: [*begin, *end) of a sequence of clamped length len,
 * whole tiles from its start (only a sequence's last piece ends short). */
INGOT_AD_BAL_FN void ingot_ad_bal_tokens(long long lo, long long hi, long long p, int len, int tile, int *begin,
                                         int *end) {
  *begin = (int)((lo - p) * tile);
  const long long e = (hi - p) * tile;
  *end = (int)(e < len ? e : len);
}

/* Slots per (KV head, row): one per unit and one per sequence. */
INGOT_AD_BAL_FN long long ingot_ad_bal_slots(int units, int batch) { return (long long)units + batch; }

#endif
