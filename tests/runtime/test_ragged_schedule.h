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
 * prefix sums; each unit's pieces add up to its share. Shared by
 * test_ragged_balance and the planning fuzzer. */
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

/* Replays the schedule of a balanced plan with `units` units (`fill` of them
 * at least, when the batch has the tiles) on lengths lens[0..B) (raw device
 * values). ws_bytes: the plan's workspace for rows_total
 * rows of head dim D and Hkv KV heads (0: not checked). Returns NULL when every
 * invariant holds, else what failed (in msg). *pieces_out (optional) gets the
 * number of pieces. */
static inline const char *rs_check(const int32_t *lens, int B, int capacity, int tile, int units, int fill, long long Hkv,
                                   long long rows_total, long long D, unsigned long long ws_bytes, long long *pieces_out,
                                   char *msg, size_t msg_size) {
#define RS_FAIL(...)                          \
  do {                                        \
    snprintf(msg, msg_size, __VA_ARGS__);     \
    free(P), free(pc), free(used), free(cnt); \
    free(by_slot);                            \
    return msg;                               \
  } while (0)
  rs_piece *by_slot = NULL;
  long long *P = calloc((size_t)B + 1, sizeof *P);
  rs_piece *pc = calloc((size_t)units + (size_t)B + 1, sizeof *pc);
  unsigned char *used = calloc((size_t)units + (size_t)B, 1);
  int *cnt = calloc((size_t)B, sizeof *cnt);
  if (!P || !pc || !used || !cnt) RS_FAIL("out of memory");
  for (int b = 0; b < B; ++b) P[b + 1] = P[b] + ingot_ad_bal_tiles(lens[b], capacity, tile);
  const long long total = P[B], active = ingot_ad_bal_active(total, units, fill);
  const long long by_share = (total + INGOT_AD_BALANCED_SHARE_TILES - 1) / INGOT_AD_BALANCED_SHARE_TILES;
  /* as many as a full round (fill) or shares of at most SHARE_TILES need, within units and tiles */
  const long long want = by_share > fill ? by_share : fill;
  if (active != (want < units ? (want < total ? want : total) : (units < total ? units : total)) ||
      (total > 0) != (active > 0))
    RS_FAIL("active %lld of %d units (fill %d), %lld tiles", active, units, fill, total);
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
  /* the pieces, as decode_split_balanced finds them: workgroup (slot) s takes the
   * piece (w, b) with w + b = s and w a unit of b's; at most one b per slot, so
   * the thread holding b is the only writer. Enumerated per sequence here, each
   * slot's finder checked unique. */
  const long long slots = (long long)units + B - 1; /* the split grid's slot workgroups */
  by_slot = calloc((size_t)slots + 1, sizeof *by_slot);
  if (!by_slot) RS_FAIL("out of memory");
  for (int b = 0; b < B; ++b) {
    const int len = ingot_ad_bal_clamp(lens[b], capacity);
    const long long p = P[b], n = ingot_ad_bal_tiles(lens[b], capacity, tile);
    if (n == 0) continue;
    const long long w0 = ingot_ad_bal_unit_of(p, total, active), w1 = ingot_ad_bal_unit_of(p + n - 1, total, active);
    if (w0 < 0 || w1 < w0 || w1 >= active) RS_FAIL("sequence %d: units %lld .. %lld of %lld active", b, w0, w1, active);
    for (long long w = w0; w <= w1; ++w) {
      const long long sl = w + b;
      if (sl >= slots || by_slot[sl].to > 0)
        RS_FAIL("slot %lld: two pieces (sequence %d unit %lld; sequence %d) or past the %lld slots", sl, b, w,
                by_slot[sl < slots ? sl : 0].b, slots);
      rs_piece *x = &by_slot[sl];
      long long from, to;
      ingot_ad_bal_piece(w, total, active, p, n, &from, &to);
      if (!(from < to)) RS_FAIL("sequence %d: unit %lld of its %lld .. %lld has an empty piece", b, w, w0, w1);
      x->w = (int)w, x->b = b, x->from = from, x->to = to;
      ingot_ad_bal_tokens(from, to, p, len, tile, &x->begin, &x->end);
      x->slot = ingot_ad_bal_piece_slot(w, b, from, to, p, n);
      cnt[b]++;
    }
  }
  /* in slot order the pieces run along the batch (tile order) */
  long long np = 0;
  for (long long sl = 0; sl < slots; ++sl)
    if (by_slot[sl].to > 0) pc[np++] = by_slot[sl];
  /* each unit's pieces are its share, exactly: the balance */
  for (long long i = 0, w = -1, sum = 0; i <= np; ++i) {
    if (i == np || pc[i].w != w) {
      if (w >= 0 && sum != ingot_ad_bal_start(w + 1, total, active) - ingot_ad_bal_start(w, total, active))
        RS_FAIL("unit %lld's pieces hold %lld tiles, its share %lld", w, sum,
                ingot_ad_bal_start(w + 1, total, active) - ingot_ad_bal_start(w, total, active));
      if (i == np) break;
      if (pc[i].w < w) RS_FAIL("slot order is not unit order at piece %lld", i);
      w = pc[i].w, sum = 0;
    }
    sum += pc[i].to - pc[i].from;
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
  free(P), free(pc), free(used), free(cnt), free(by_slot);
  return NULL;
#undef RS_FAIL
}

#endif
