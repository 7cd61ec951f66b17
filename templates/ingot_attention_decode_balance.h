/* ingot_attention_decode_balance.h: the arithmetic of the balanced split mode
 * (docs/design/balanced-split.md), shared by the kernels (ingot_ad_balanced.h,
 * ingot_ad_merge.h: device code), the planning (ingot_attention_decode_plan.h,
 * host C) and the host tests, so the three cannot disagree. Pure integer
 * functions, 64-bit where a sum of lengths is.
 *
 * The batch's work is counted in tiles (a workgroup's tokens per step):
 * sequence b has n_b = ceil(clamp(L_b, 0, capacity) / tile) tiles, the batch
 * total = sum n_b. Of the plan's `units` pieces per (KV head, row block) the
 * device takes `active` (ingot_ad_bal_active, from total), so the fair share
 * of a piece is total / active tiles. Sequence b is cut into k_b pieces in
 * proportion to its length: k_b = round(n_b x active / total), at least 1
 * (none when n_b = 0) and at most the merge's INGOT_AD_MAX_SPLITS, its tiles
 * dealt out evenly (the pieces differ by at most a tile). A sequence shorter
 * than 1.5 shares stays whole (written to O directly, no partial); a longer
 * one's pieces are 0.75..1.25 shares (unless it has the merge's maximum). So
 * no piece is longer than 1.5 shares, no sequence is cut at a share's edge
 * into a sliver, and the pieces number at most active + B - 1.
 *
 * The pieces take the workspace slots (and the split grid's workgroups, which
 * the hardware starts in order) longest first: by size class (a piece of at
 * least half a share, a quarter, an eighth, less), then along the batch. A
 * long piece then starts in the first round of workgroups, not behind many
 * short ones. Sequence b's pieces have the consecutive slots first_b ..
 * first_b + k_b - 1. The merge finds the sequences it has to write (cut into
 * several pieces, or empty) in a list the split writes (ingot_ad_bal_entry). */
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
/* A balanced plan's units (pieces per KV head and row block) go past the
 * merge's INGOT_AD_MAX_SPLITS segments, up to what the flags' fill field
 * holds, so that a device of many resident workgroups (912 on gfx942) is
 * filled at small batches too; one sequence's pieces stay within the merge's
 * INGOT_AD_MAX_SPLITS (ingot_ad_bal_pieces). */
#define INGOT_AD_BALANCED_MAX_UNITS INGOT_AD_FLAG_FILL_MASK
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

/* The clamped length itself. */
INGOT_AD_BAL_FN int ingot_ad_bal_clamp(int len, int capacity) {
  return len < 0 ? 0 : (len > capacity ? capacity : len);
}

/* A share holds at most about this many tiles unless every unit is active
 * (the shipped policy's max_tiles_per_split: 4096 tokens of the seed tile). */
#define INGOT_AD_BALANCED_SHARE_TILES 64
/* The flags' `fill` (INGOT_AD_FLAG_FILL_*): the units that make one round of
 * resident workgroups (1..units, from the plan). */

/* The shares the batch's tiles are cut into (`active`; the pieces number
 * about as many), decided on the device from the batch's tiles: enough for a
 * full round of workgroups (fill) or for shares of at most
 * INGOT_AD_BALANCED_SHARE_TILES tiles, whichever is more, but no more than
 * the plan's units nor the tiles (0 when the batch is empty). A short batch
 * runs in one round of long pieces instead of many rounds of short ones. */
INGOT_AD_BAL_FN long long ingot_ad_bal_active(long long total, int units, int fill) {
  const long long by_share = (total + INGOT_AD_BALANCED_SHARE_TILES - 1) / INGOT_AD_BALANCED_SHARE_TILES;
  long long a = by_share > fill ? by_share : (long long)fill;
  if (a > units) a = units;
  return total < a ? total : a;
}

/* The fill field of a balanced plan's flags. */
INGOT_AD_BAL_FN int ingot_ad_bal_fill(int flags) { return (flags >> INGOT_AD_FLAG_FILL_SHIFT) & INGOT_AD_FLAG_FILL_MASK; }

/* floor(num / den) for 0 <= num < 2^46 and 1 <= den < 2^46 whose quotient is
 * at most 2^16: a float estimate within a step of it, then exact steps (no
 * 64-bit division: a called subroutine on NVIDIA). The steps are bounded, so
 * inputs outside that range (lengths that changed between a kernel's two
 * reads of them) give a wrong quotient in [0, 2^16], never a long loop. */
INGOT_AD_BAL_FN long long ingot_ad_bal_div_est(long long num, long long den) {
  if (den <= 0 || num < 0) return 0;
  long long q = (long long)((float)num * INGOT_AD_BAL_RCP((float)den));
  q = q < 0 ? 0 : q > 65536 ? 65536 : q;
  for (int i = 0; i < 4 && q > 0 && q * den > num; ++i) --q;
  for (int i = 0; i < 4 && q < 65536 && (q + 1) * den <= num; ++i) ++q;
  return q;
}

/* The pieces of a sequence of n tiles in a batch of `total` tiles over `active`
 * pieces' worth of shares: round(n x active / total), at least 1, at most the
 * merge's INGOT_AD_MAX_SPLITS; 0 for n = 0. n < 2^31, active <= 511 and
 * total < 2^44 (4096 sequences of 2^31 tokens): the products stay below 2^46.
 * At most n (active <= total) and active. */
INGOT_AD_BAL_FN long long ingot_ad_bal_pieces(long long n, long long total, long long active) {
  if (n <= 0) return 0;
  const long long k = ingot_ad_bal_div_est(2 * n * active + total, 2 * total);
  return k < 1 ? 1 : k > INGOT_AD_MAX_SPLITS ? INGOT_AD_MAX_SPLITS : k;
}

/* Tiles [*lo, *hi) of a sequence (from its first tile) of piece i of its k,
 * the n tiles dealt out evenly: [floor(i n / k), floor((i + 1) n / k)).
 * n < 2^31 (a clamped length's tiles) and 0 <= i < k <= 256, so with
 * n = q k + r, floor(i n / k) = i q + floor(i r / k) (i r < 2^16): 32-bit
 * divisions only (a 64-bit one is a called subroutine on NVIDIA, and each
 * division is on the path of every workgroup's scan). */
INGOT_AD_BAL_FN void ingot_ad_bal_span(long long i, long long k, long long n, long long *lo, long long *hi) {
  const unsigned kk = (unsigned)k, q = (unsigned)n / kk, r = (unsigned)n - q * kk, ii = (unsigned)i;
  *lo = (long long)ii * q + (long long)(ii * r / kk);
  *hi = (long long)(ii + 1u) * q + (long long)((ii + 1u) * r / kk);
}

/* The size classes of the slot order (longest first): a sequence's pieces
 * (ceil(n / k) tiles) against the share total / active: class 0 at least half
 * a share, 1 a quarter, 2 an eighth, 3 less. */
#define INGOT_AD_BAL_CLASSES 4
INGOT_AD_BAL_FN int ingot_ad_bal_class(long long n, long long k, long long total, long long active) {
  /* n < 2^31 and 1 <= k <= 256: ceil(n / k) in one 32-bit division; the product < 2^40 */
  const long long piece = (long long)(((unsigned)n + (unsigned)k - 1u) / (unsigned)k) * active;
  return 2 * piece >= total ? 0 : 4 * piece >= total ? 1 : 8 * piece >= total ? 2 : 3;
}

/* Piece counts per class packed in 16-bit fields of one 64-bit word, so that a
 * single scan over the batch gives every class's prefix (a field's sum is at
 * most active + B - 1 < 2^16: no carry into the next). */
INGOT_AD_BAL_FN unsigned long long ingot_ad_bal_pack(long long k, int cls) {
  return (unsigned long long)k << (16 * cls);
}
INGOT_AD_BAL_FN long long ingot_ad_bal_field(unsigned long long packed, int cls) {
  return (long long)((packed >> (16 * cls)) & 0xffffu);
}

/* The first slot of a sequence of class cls whose class-mates before it in
 * the batch have `before` (packed) pieces, the batch's pieces being `all`
 * (packed): the pieces of the classes ahead, then those before it. */
INGOT_AD_BAL_FN long long ingot_ad_bal_first(unsigned long long before, unsigned long long all, int cls) {
  long long first = ingot_ad_bal_field(before, cls);
  for (int c = 0; c < cls; ++c) first += ingot_ad_bal_field(all, c);
  return first;
}

/* The merge's list (workspace, int64, after the slots): [0] the count of the
 * batch's sequences with other than one piece, then one entry per such
 * sequence, in batch order: the sequence, its first slot and its piece count
 * (0: empty, the merge writes O = 0 and LSE = -inf; 2 or more: the merge adds
 * its pieces). A sequence held whole (one piece) was written to O by its split
 * workgroup and is not listed, so a batch with nothing to merge lists nothing.
 * first < 2^16 (slots <= INGOT_AD_BALANCED_MAX_UNITS + 4096), k <= 256. */
INGOT_AD_BAL_FN long long ingot_ad_bal_entry(long long b, long long first, long long k) {
  return b << 32 | first << 16 | k;
}
INGOT_AD_BAL_FN long long ingot_ad_bal_entry_seq(long long e) { return e >> 32; }
INGOT_AD_BAL_FN long long ingot_ad_bal_entry_first(long long e) { return (e >> 16) & 0xffff; }
INGOT_AD_BAL_FN long long ingot_ad_bal_entry_count(long long e) { return e & 0xffff; }
/* int64 words of the list: the count and an entry per sequence. */
INGOT_AD_BAL_FN long long ingot_ad_bal_list_words(long long batch) { return batch + 1; }

/* The balanced merge's grid is (columns, Hkv, Z): workgroup z merges list
 * entries z, z + Z, z + 2Z, ... in turn. Z is the least count that makes one
 * round of INGOT_AD_BALANCED_MERGE_CU_BLOCKS merge workgroups per CU (the
 * merges' registers leave room for 4 on gfx942 and sm_90), but at least
 * ceil(B / INGOT_AD_BALANCED_MERGE_ENTRIES), so that no workgroup merges more
 * than that many sequences, and at most B. A batch with nothing to merge
 * then costs a round of workgroups that read the count and exit, not a
 * workgroup per sequence. merge_x, Hkv, cus >= 1. */
#define INGOT_AD_BALANCED_MERGE_CU_BLOCKS 4
#define INGOT_AD_BALANCED_MERGE_ENTRIES 16
INGOT_AD_BAL_FN long long ingot_ad_bal_merge_z(long long B, long long merge_x, long long Hkv, long long cus) {
  const long long per = merge_x * Hkv;
  const long long fill = (INGOT_AD_BALANCED_MERGE_CU_BLOCKS * cus + per - 1) / per;
  const long long most = (B + INGOT_AD_BALANCED_MERGE_ENTRIES - 1) / INGOT_AD_BALANCED_MERGE_ENTRIES;
  const long long z = fill > most ? fill : most;
  return z < 1 ? 1 : z > B ? B : z;
}

/* A piece's token range: [*begin, *end) of a sequence of clamped length len,
 * for its tiles [lo, hi) (from the sequence's first tile): whole tiles from
 * its start, so that chunks stay tokens_per_wave-aligned for the page lookup
 * (only a sequence's last piece ends short). */
INGOT_AD_BAL_FN void ingot_ad_bal_tokens(long long lo, long long hi, int len, int tile, int *begin, int *end) {
  *begin = (int)(lo * tile);
  const long long e = hi * tile;
  *end = (int)(e < len ? e : len);
}

/* An even batch (a plan with INGOT_AD_FLAG_EVEN: units = K x B). Where no
 * sequence is longer than 17/16 of the batch's mean (in tiles), cutting each
 * into K = units / B segments, as the uniform plan does, leaves its longest
 * segment within 1/16 of a balanced share, and the split skips the scan: a
 * sequence's pieces, their slots and the merge's list follow from (b, K)
 * alone. The balanced split then runs sequence b's segment j in slot b x K + j
 * (units + B slots: room for all) and lists sequence b with first slot b x K
 * and K pieces where K > 1. max_tiles < 2^28 and B <= 1024:
 * the products stay below 2^41. An empty batch is even (every segment empty). */
INGOT_AD_BAL_FN int ingot_ad_bal_even(long long max_tiles, long long total, long long batch) {
  return 16 * max_tiles * batch <= 17 * total;
}

/* Slots per (KV head, row): one per unit and one per sequence. */
INGOT_AD_BAL_FN long long ingot_ad_bal_slots(int units, int batch) { return (long long)units + batch; }

#endif
