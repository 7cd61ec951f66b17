/* test_ragged_schedule.h: the balanced split's schedule replayed on the host
 * (templates/ingot_attention_decode_balance.h, the functions the kernels call),
 * with every invariant the kernels rely on checked: each active unit has a
 * share and the shares tile the batch; each unit's pieces are what
 * decode_split_balanced walks (the sequences holding its first and last tile
 * and those between); each sequence's pieces cover its tiles and tokens once,
 * in order, whole tiles from its start; slots are unique and below units + B;
 * the merge's lookup (merge_source: units unit_of(P_b) .. unit_of(E_b - 1))
 * finds exactly the pieces that wrote a partial, and skips exactly the
 * sequences one unit wrote whole; the workspace holds every slot and the
 * prefix sums. Shared by test_ragged_balance and the planning fuzzer. */
#ifndef INGOT_TEST_RAGGED_SCHEDULE_H
#define INGOT_TEST_RAGGED_SCHEDULE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingot_attention_decode_balance.h"

typedef struct rs_piece {
  int w, b, begin, end, slot;
  long long from, to;
} rs_piece;

/* The first b with P[b + 1] > t (the sequence holding tile t, 0 <= t < P[B]). */
static inline int rs_holder(const long long *P, int B, long long t) {
  int lo = 0, hi = B - 1;
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (P[mid + 1] > t) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/* Replays the schedule of a balanced plan with `units` units on lengths
 * lens[0..B) (raw device values). ws_bytes: the plan's workspace for rows_total
 * rows of head dim D and Hkv KV heads (0: not checked). Returns NULL when every
 * invariant holds, else what failed (in msg). *pieces_out (optional) gets the
 * number of pieces. */
static inline const char *rs_check(const int32_t *lens, int B, int capacity, int tile, int units, long long Hkv,
                                   long long rows_total, long long D, unsigned long long ws_bytes, long long *pieces_out,
                                   char *msg, size_t msg_size) {
#define RS_FAIL(...)                          \
  do {                                        \
    snprintf(msg, msg_size, __VA_ARGS__);     \
    free(P), free(pc), free(used), free(cnt); \
    return msg;                               \
  } while (0)
  long long *P = calloc((size_t)B + 1, sizeof *P);
  rs_piece *pc = calloc((size_t)units + (size_t)B + 1, sizeof *pc);
  unsigned char *used = calloc((size_t)units + (size_t)B, 1);
  int *cnt = calloc((size_t)B, sizeof *cnt);
  if (!P || !pc || !used || !cnt) RS_FAIL("out of memory");
  for (int b = 0; b < B; ++b) P[b + 1] = P[b] + ingot_ad_bal_tiles(lens[b], capacity, tile);
  const long long total = P[B], active = ingot_ad_bal_active(total, units);
  if (active < 0 || active > units || (total > 0) != (active > 0)) RS_FAIL("active %lld of %d units, %lld tiles", active, units, total);
  /* the shares: non-empty, within one tile of each other, tiling [0, total) */
  const long long lo_share = active ? total / active : 0;
  for (long long w = 0; w < active; ++w) {
    const long long s0 = ingot_ad_bal_start(w, total, active), s1 = ingot_ad_bal_start(w + 1, total, active);
    if (s1 <= s0 || s1 - s0 < lo_share || s1 - s0 > lo_share + 1)
      RS_FAIL("unit %lld's share [%lld, %lld) of %lld tiles over %lld units", w, s0, s1, total, active);
    if (ingot_ad_bal_unit_of(s0, total, active) != w || ingot_ad_bal_unit_of(s1 - 1, total, active) != w)
      RS_FAIL("unit_of misplaces unit %lld's share [%lld, %lld)", w, s0, s1);
  }
  if (active && (ingot_ad_bal_start(0, total, active) != 0 || ingot_ad_bal_start(active, total, active) != total))
    RS_FAIL("the shares do not start at 0 and end at %lld", total);
  /* the pieces, as decode_split_balanced walks them */
  long long np = 0;
  for (long long w = 0; w < active; ++w) {
    const long long t0 = ingot_ad_bal_start(w, total, active), t1 = ingot_ad_bal_start(w + 1, total, active);
    const int bf = rs_holder(P, B, t0), bl = rs_holder(P, B, t1 - 1);
    long long p = P[bf];
    for (int b = bf; b <= bl; ++b) {
      const int len = ingot_ad_bal_clamp(lens[b], capacity);
      const long long n = ((long long)len + tile - 1) / tile;
      long long from, to;
      ingot_ad_bal_piece(w, total, active, p, n, &from, &to);
      if (from < to) {
        if (np >= (long long)units + B) RS_FAIL("more than units + B = %d pieces", units + B);
        rs_piece *x = &pc[np++];
        x->w = (int)w, x->b = b, x->from = from, x->to = to;
        ingot_ad_bal_tokens(from, to, p, len, tile, &x->begin, &x->end);
        x->slot = ingot_ad_bal_piece_slot(w, b, from, to, p, n);
        cnt[b]++;
      }
      p += n;
    }
  }
  /* per sequence: its pieces in order cover tiles [P_b, P_b+1) and tokens [0, L_b);
   * walked in tile order, the pieces of one sequence are adjacent */
  long long k = 0;
  for (int b = 0; b < B; ++b) {
    const int len = ingot_ad_bal_clamp(lens[b], capacity);
    long long next_tile = P[b];
    int next_tok = 0, seen = 0;
    const long long first_piece = k;
    for (; k < np && pc[k].b == b; ++k) {
      const rs_piece *x = &pc[k];
      ++seen;
      if (x->from != next_tile || x->begin != next_tok || x->begin % tile != 0 || x->begin >= x->end ||
          x->end > len)
        RS_FAIL("sequence %d (L %d, tiles [%lld, %lld)): piece of unit %d is tiles [%lld, %lld), tokens [%d, %d)", b,
                len, P[b], P[b + 1], x->w, x->from, x->to, x->begin, x->end);
      if ((x->slot < 0) != (cnt[b] == 1)) RS_FAIL("sequence %d: %d pieces, slot %d", b, cnt[b], x->slot);
      if (x->slot >= 0) {
        if (x->slot >= units + B) RS_FAIL("slot %d past units + B = %d", x->slot, units + B);
        if (used[x->slot]) RS_FAIL("slot %d used twice (unit %d, sequence %d)", x->slot, x->w, b);
        used[x->slot] = 1;
      }
      next_tile = x->to, next_tok = x->end;
    }
    if (seen != cnt[b]) RS_FAIL("sequence %d: its %d pieces are not adjacent in tile order (%d found)", b, cnt[b], seen);
    if (next_tile != P[b + 1] || next_tok != len)
      RS_FAIL("sequence %d (L %d): its %d pieces end at tile %lld, token %d (want %lld, %d)", b, len, seen, next_tile,
              next_tok, P[b + 1], len);
    /* the merge's lookup */
    const long long e = P[b + 1];
    long long w0 = 0, w1 = -1;
    if (e > P[b]) w0 = ingot_ad_bal_unit_of(P[b], total, active), w1 = ingot_ad_bal_unit_of(e - 1, total, active);
    const long long count = w1 - w0 + 1;
    const int skip = e > P[b] && w0 == w1;
    if (skip != (cnt[b] == 1) || (!skip && count != cnt[b]) || count > units || count > 256)
      RS_FAIL("sequence %d: the merge finds %lld pieces (skip %d), the split wrote %d", b, count, skip, cnt[b]);
    if (!skip) {
      for (long long i = first_piece, s = ingot_ad_bal_slot(w0, b); i < k; ++i, ++s)
        if (pc[i].slot != s) RS_FAIL("sequence %d: the merge reads slot %lld, the split wrote %d", b, s, pc[i].slot);
    }
  }
  /* the workspace: every slot of every head and row, then the prefix sums */
  if (ws_bytes != 0) {
    const long long S = ingot_ad_bal_slots(units, B);
    const unsigned long long per = ((unsigned long long)rows_total * (unsigned long long)S + 3) / 4 * 4 +
                                   (unsigned long long)rows_total * (unsigned long long)S * (unsigned long long)D;
    const unsigned long long need = per * (unsigned long long)Hkv * 4u + ((unsigned long long)B + 1) * 8u;
    if (ws_bytes != need) RS_FAIL("workspace %llu bytes, the layout needs %llu", ws_bytes, need);
  }
  if (pieces_out) *pieces_out = np;
  free(P), free(pc), free(used), free(cnt);
  return NULL;
#undef RS_FAIL
}

#endif
