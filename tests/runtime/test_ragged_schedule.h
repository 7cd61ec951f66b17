/* test_ragged_schedule.h: the balanced split's schedule replayed on the host
 * (templates/ingot_attention_decode_balance.h, the functions the kernels call),
 * against a plain restatement of the rules and with every invariant the kernels
 * rely on checked: the shares (active) from the tiles; each sequence's piece
 * count round(n x active / total), at least 1, at most the merge's 256, none
 * when empty; its pieces
 * cover its tiles and tokens once, in order, whole tiles from its start,
 * within a tile of each other and none longer than 1.5 shares; the pieces
 * number at most active + B - 1 (the split grid has units + B - 1 slots);
 * slots are unique, longest size class first, along the batch within a class,
 * a sequence's pieces consecutive; the device's packed one-scan slot
 * arithmetic gives the same first slots; the merge's list (the split's third
 * scan) names, in batch order, exactly the sequences with no piece or several
 * (none held whole), each with the slots of the pieces that wrote a partial; the
 * workspace holds every slot and the list. Shared by test_ragged_balance
 * and the planning fuzzer. */
#ifndef INGOT_TEST_RAGGED_SCHEDULE_H
#define INGOT_TEST_RAGGED_SCHEDULE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingot_attention_decode_balance.h"

/* Replays the schedule of a balanced plan with `units` units (`fill` of them
 * at least, when the batch has the tiles) on lengths lens[0..B) (raw device
 * values). ws_bytes: the plan's workspace for rows_total rows of head dim D
 * and Hkv KV heads (0: not checked). Returns NULL when every invariant holds,
 * else what failed (in msg). *pieces_out (optional) gets the number of pieces. */
static inline const char *rs_check(const int32_t *lens, int B, int capacity, int tile, int units, int fill, long long Hkv,
                                   long long rows_total, long long D, unsigned long long ws_bytes, long long *pieces_out,
                                   char *msg, size_t msg_size) {
#define RS_FAIL(...)                            \
  do {                                          \
    snprintf(msg, msg_size, __VA_ARGS__);       \
    free(n), free(k), free(cls), free(first);   \
    free(owner);                                \
    return msg;                                 \
  } while (0)
  long long *n = calloc((size_t)B, sizeof *n), *k = calloc((size_t)B, sizeof *k);
  long long *first = calloc((size_t)B, sizeof *first);
  int *cls = calloc((size_t)B, sizeof *cls);
  const long long slots = (long long)units + B - 1; /* the split grid's workgroups per KV head and row block */
  int *owner = malloc((size_t)slots * sizeof *owner);
  if (!n || !k || !cls || !first || !owner) RS_FAIL("out of memory");
  for (long long s = 0; s < slots; ++s) owner[s] = -1;
  long long total = 0;
  for (int b = 0; b < B; ++b) {
    const long long l = lens[b] < 0 ? 0 : lens[b] > capacity ? capacity : lens[b];
    n[b] = (l + tile - 1) / tile;
    if (ingot_ad_bal_tiles(lens[b], capacity, tile) != n[b]) RS_FAIL("sequence %d: tiles of length %d", b, lens[b]);
    total += n[b];
  }
  const long long active = ingot_ad_bal_active(total, units, fill);
  const long long by_share = (total + INGOT_AD_BALANCED_SHARE_TILES - 1) / INGOT_AD_BALANCED_SHARE_TILES;
  /* as many as a full round (fill) or shares of at most SHARE_TILES need, within units and tiles */
  long long want = by_share > fill ? by_share : fill;
  if (want > units) want = units;
  if (want > total) want = total;
  if (active != want) RS_FAIL("active %lld of %d units (fill %d), %lld tiles", active, units, fill, total);

  /* piece counts and size classes, restated in plain (host) division */
  long long pieces = 0;
  for (int b = 0; b < B; ++b) {
    long long want_k = 0;
    if (n[b] > 0) {
      want_k = (2 * n[b] * active + total) / (2 * total);
      if (want_k < 1) want_k = 1;
      if (want_k > INGOT_AD_MAX_SPLITS) want_k = INGOT_AD_MAX_SPLITS; /* the merge's most */
    }
    k[b] = ingot_ad_bal_pieces(n[b], total, active);
    if (k[b] != want_k || k[b] > n[b] || k[b] > active)
      RS_FAIL("sequence %d (%lld tiles of %lld, %lld shares): %lld pieces, want %lld", b, n[b], total, active, k[b],
              want_k);
    if (k[b] > 0) {
      const long long big = (n[b] + k[b] - 1) / k[b] * active;
      const int want_c = 2 * big >= total ? 0 : 4 * big >= total ? 1 : 8 * big >= total ? 2 : 3;
      cls[b] = ingot_ad_bal_class(n[b], k[b], total, active);
      if (cls[b] != want_c) RS_FAIL("sequence %d: class %d, want %d", b, cls[b], want_c);
    }
    pieces += k[b];
  }
  if (pieces > (active > 0 ? active + B - 1 : 0) || pieces > slots)
    RS_FAIL("%lld pieces over %lld shares and %d sequences (grid of %lld slots)", pieces, active, B, slots);

  /* slots: class 0's sequences along the batch, then class 1's, ...; the
   * device's packed scan (one pass, per-class fields) must agree */
  unsigned long long all = 0, before = 0;
  for (int b = 0; b < B; ++b)
    if (k[b] > 0) all += ingot_ad_bal_pack(k[b], cls[b]);
  long long next = 0;
  for (int c = 0; c < INGOT_AD_BAL_CLASSES; ++c)
    for (int b = 0; b < B; ++b)
      if (k[b] > 0 && cls[b] == c) first[b] = next, next += k[b];
  for (int b = 0; b < B; ++b) {
    if (k[b] == 0) continue;
    const long long f = ingot_ad_bal_first(before, all, cls[b]);
    if (f != first[b]) RS_FAIL("sequence %d (class %d): the packed scan gives slot %lld, want %lld", b, cls[b], f,
                               first[b]);
    before += ingot_ad_bal_pack(k[b], cls[b]);
  }
  /* the merge's list: entry e, as the split's writer numbers it (the count of listed
   * sequences before), names sequence b, its first slot and its pieces */
  long long listed = 0;
  for (int b = 0; b < B; ++b) {
    if (k[b] == 1) continue;
    const long long f = k[b] > 0 ? first[b] : 0;
    const long long e = ingot_ad_bal_entry(b, f, k[b]);
    if (ingot_ad_bal_entry_seq(e) != b || ingot_ad_bal_entry_first(e) != f || ingot_ad_bal_entry_count(e) != k[b])
      RS_FAIL("sequence %d: the merge's list entry (%lld, %lld) reads back as (%lld, %lld, %lld)", b, f, k[b],
              ingot_ad_bal_entry_seq(e), ingot_ad_bal_entry_first(e), ingot_ad_bal_entry_count(e));
    ++listed;
  }
  if (listed > B || ingot_ad_bal_list_words(B) != B + 1)
    RS_FAIL("%lld sequences listed for the merge of a batch of %d", listed, B);

  /* each sequence's pieces, as workgroups first[b] .. first[b] + k[b] - 1 find them */
  for (int b = 0; b < B; ++b) {
    const int len = ingot_ad_bal_clamp(lens[b], capacity);
    long long next_tile = 0, lo_size = -1, hi_size = 0;
    int next_tok = 0;
    for (long long i = 0; i < k[b]; ++i) {
      const long long s = first[b] + i;
      if (s < 0 || s >= slots || owner[s] >= 0)
        RS_FAIL("slot %lld: sequence %d's piece %lld, already sequence %d's or past the %lld slots", s, b, i,
                s >= 0 && s < slots ? owner[s] : -1, slots);
      owner[s] = b;
      long long lo, hi;
      ingot_ad_bal_span(i, k[b], n[b], &lo, &hi);
      int begin, end;
      ingot_ad_bal_tokens(lo, hi, len, tile, &begin, &end);
      if (lo != next_tile || hi <= lo || begin != next_tok || begin % tile != 0 || begin >= end || end > len)
        RS_FAIL("sequence %d (L %d, %lld tiles): piece %lld of %lld is tiles [%lld, %lld), tokens [%d, %d)", b, len,
                n[b], i, k[b], lo, hi, begin, end);
      const long long size = hi - lo;
      if (lo_size < 0 || size < lo_size) lo_size = size;
      if (size > hi_size) hi_size = size;
      /* no piece past 1.5 shares (a whole sequence) or 1.25 shares and a tile (a cut one),
       * unless the sequence has the merge's most pieces (then a 256th of it, a tile more) */
      if (k[b] < INGOT_AD_MAX_SPLITS ? 2 * size * active > 3 * total + 2 * active
                                     : size > n[b] / INGOT_AD_MAX_SPLITS + 1)
        RS_FAIL("sequence %d: a piece of %lld tiles, %lld tiles over %lld shares", b, size, total, active);
      next_tile = hi, next_tok = end;
    }
    if (next_tile != n[b] || next_tok != len)
      RS_FAIL("sequence %d (L %d): its %lld pieces end at tile %lld, token %d (want %lld, %d)", b, len, k[b],
              next_tile, next_tok, n[b], len);
    if (k[b] > 0 && hi_size - lo_size > 1)
      RS_FAIL("sequence %d: pieces of %lld to %lld tiles", b, lo_size, hi_size);
    if (k[b] > INGOT_AD_MAX_SPLITS || k[b] > units) RS_FAIL("sequence %d: %lld pieces for the merge (units %d)", b, k[b], units);
  }
  /* the slots in use are 0 .. pieces - 1, in class order */
  for (long long s = 0, c = 0; s < slots; ++s) {
    if ((owner[s] >= 0) != (s < pieces)) RS_FAIL("slot %lld of %lld pieces: owner %d", s, pieces, owner[s]);
    if (owner[s] >= 0) {
      if (cls[owner[s]] < c) RS_FAIL("slot %lld: class %d after class %lld", s, cls[owner[s]], c);
      c = cls[owner[s]];
    }
  }
  /* the workspace: every slot of every head and row, then the merge's list */
  if (ws_bytes != 0) {
    const long long S = ingot_ad_bal_slots(units, B);
    const unsigned long long per = ((unsigned long long)rows_total * (unsigned long long)S + 3) / 4 * 4 +
                                   (unsigned long long)rows_total * (unsigned long long)S * (unsigned long long)D;
    const unsigned long long need = per * (unsigned long long)Hkv * 4u + (unsigned long long)(B + 1) * 8u;
    if (S < pieces || ws_bytes != need) RS_FAIL("workspace %llu bytes, the layout needs %llu", ws_bytes, need);
  }
  if (pieces_out) *pieces_out = pieces;
  free(n), free(k), free(cls), free(first), free(owner);
  return NULL;
#undef RS_FAIL
}

#endif
