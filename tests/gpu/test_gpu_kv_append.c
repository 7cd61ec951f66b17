/* test_gpu_kv_append.c: append then attend (issue 24), the two families of a
 * decode step in one context and one captured CUDA graph. For bf16 and fp16 on
 * a contiguous cache and on paged caches of 16, 4 and 1 tokens a page (shuffled
 * page tables, two spare pages no sequence owns), one graph holds the append
 * (k_new, v_new into the cache at the device length, advancing it) and then the
 * attention decode over the same cache and lengths. It is captured once and
 * replayed for two phases of 128 tokens; before every replay q, k_new and v_new
 * are fresh random values and O, LSE and the workspace are NaN. Each replay is
 * compared with the CPU reference over a host mirror of the cache to which the
 * same tokens are appended, and the device lengths with the expected ones.
 *
 * The four sequences: 0 starts 3 tokens short of the capacity (full after 3
 * replays; later appends must write nothing and leave the length at capacity;
 * phase 2 sets its length to INT32_MAX, clamped); 1 starts at a random length and
 * continues through phase 2; 2 starts at a random length and phase 2 restarts it
 * shorter (it overwrites its own phase-1 tokens); 3 starts at a negative length
 * (clamped to 0: the first token lands at position 0), and phase 2 at INT32_MIN.
 * Every slot no token was ever written to, past each length and in the unowned
 * pages, holds a NaN sentinel; after each phase both caches (the whole page pool)
 * are downloaded and compared with the mirror element for element: writes never
 * land outside the target slots.
 *
 * Plan time: Sq > capacity, a page table that cannot reach the capacity, a
 * contiguous cache shorter than the capacity and a cache dtype other than the
 * new tokens' are refused (INGOT_INVALID_ARGUMENT, the message naming the field),
 * after Sq = capacity, the boundary, is accepted.
 *
 * Usage: <binary> [attention_pack_dir [kv_append_pack_dir]]; the append pack
 * defaults to the folder kv_append beside the attention pack. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode_harness.h"
#include "gpu_mem.h"
#include "ingot/kv_append.h"
#include "reference.h"

#define TEST_NAME "test_gpu_kv_append"

#ifndef INGOT_KVA_DEFAULT_PACK_DIR
#define INGOT_KVA_DEFAULT_PACK_DIR "build/packs/kv_append"
#endif

enum { kBatch = 4, kHq = 8, kHkv = 2, kD = 128, kCapacity = 1024, kPhases = 2, kPhaseTokens = 128 };

/* What a cache slot (one token's Hkv x D elements) must hold. */
enum { SLOT_SENTINEL = 0, SLOT_INITIAL = 1, SLOT_APPENDED = 2 };
static const char *const kSlotWhat[] = {
    "the sentinel: no append targets this slot, nothing may write it",
    "the data written before the first replay",
    "the token the last append to this slot wrote"};

typedef struct totals {
  int cases, replays, refusals;
  size_t length_checks, length_mismatches;
  size_t sentinel_slots, initial_slots, appended_slots; /* intact at the end of each case */
  size_t slot_mismatches;
} totals;

typedef struct kva_case {
  dh_case a; /* the attention graph and plan, q/o/lse, the caches, lengths and page table */
  char name[160];
  ingot_kv_append_graph g;
  ingot_plan *append;
  uint16_t *k_new, *v_new;  /* host [B, 1, Hkv, D] */
  void *dk_new, *dv_new;
  uint16_t *got_k, *got_v;  /* downloads of the caches */
  uint8_t *what;            /* per slot: SLOT_* */
  int32_t *owner;           /* paged: per page, b * pages_per_seq + page index, or -1 (unowned) */
  int32_t len[kBatch];      /* each sequence's expected length (clamped) */
} kva_case;

/* ---- small helpers ---- */

static uint16_t rand_value(ingot_dtype dt, float lo, float hi) {
  const float u = (float)((double)(dh_rand() >> 40) * (1.0 / 16777216.0));
  return ingot_ref_from_float(lo + (hi - lo) * u, dt);
}

/* NaNs with payloads no token has (tokens are finite), K's and V's apart, so
 * that a K row in the V cache shows as well. */
static uint16_t sentinel(ingot_dtype dt, int is_v) {
  if (dt == INGOT_DTYPE_FP16) return is_v ? 0x7E5B : 0x7E5A;
  return is_v ? 0x7FB6 : 0x7FA5;
}

static int32_t clamp_len(int64_t raw) { return raw < 0 ? 0 : raw > kCapacity ? kCapacity : (int32_t)raw; }

static ingot_tensor_desc dense(ingot_dtype dt, int rank, const int64_t *dims) {
  ingot_tensor_desc t;
  memset(&t, 0, sizeof t);
  t.dtype = dt;
  t.rank = rank;
  t.memory = INGOT_MEMORY_DEVICE;
  int64_t stride = 1;
  for (int i = rank - 1; i >= 0; --i) t.dims[i] = dims[i], t.strides[i] = stride, stride *= dims[i];
  return t;
}

static size_t slot_of(const kva_case *k, int b, int pos) {
  const size_t ps = (size_t)k->a.s.page_size, p = (size_t)pos;
  if (ps > 0) return (size_t)k->a.page_map[(size_t)b * (size_t)k->a.pages_per_seq + p / ps] * ps + p % ps;
  return (size_t)b * kCapacity + p;
}

static void describe_slot(const kva_case *k, size_t slot, char *buf, size_t n) {
  const int ps = k->a.s.page_size;
  int b, pos;
  if (ps > 0) {
    const int32_t o = k->owner[slot / (size_t)ps];
    if (o < 0) {
      snprintf(buf, n, "unowned page %zu, token %zu", slot / (size_t)ps, slot % (size_t)ps);
      return;
    }
    b = o / k->a.pages_per_seq, pos = o % k->a.pages_per_seq * ps + (int)(slot % (size_t)ps);
  } else {
    b = (int)(slot / kCapacity), pos = (int)(slot % kCapacity);
  }
  snprintf(buf, n, "sequence %d position %d, length %d", b, pos, k->len[b]);
}

/* The append pack: argv[2]; else the folder kv_append beside argv[1]; else the build's. */
static void append_pack_dir(int argc, char **argv, char *buf, size_t n) {
  if (argc > 2) {
    snprintf(buf, n, "%s", argv[2]);
  } else if (argc > 1) {
    snprintf(buf, n, "%s", argv[1]);
    size_t len = strlen(buf);
    while (len > 1 && buf[len - 1] == '/') buf[--len] = '\0';
    char *slash = strrchr(buf, '/');
    if (slash == NULL) snprintf(buf, n, "kv_append");
    else snprintf(slash + 1, n - (size_t)(slash + 1 - buf), "kv_append");
  } else {
    snprintf(buf, n, "%s", INGOT_KVA_DEFAULT_PACK_DIR);
  }
}

/* ---- plan time ---- */

static int expect_refusal(ingot_context *ctx, const kva_case *k, const ingot_kv_append_graph *g, const char *what,
                          const char *field, totals *t) {
  ingot_plan *p = NULL;
  const ingot_status st = ingot_kv_append_plan_create(ctx, g, &p);
  const char *msg = ingot_context_last_error(ctx);
  t->refusals++;
  if (st == INGOT_INVALID_ARGUMENT && p == NULL && strstr(msg, field) != NULL) return 0;
  fprintf(stderr, "FAIL [%s] %s: ingot_kv_append_plan_create gave %s%s (expected INVALID_ARGUMENT naming \"%s\"): %s\n",
          k->name, what, ingot_status_string(st), p != NULL ? " and a plan" : "", field, msg);
  ingot_plan_destroy(p);
  return 1;
}

/* The accept case first (Sq = capacity plans), then each refusal on a copy of the case's graph. */
static int check_plan_time(ingot_context *ctx, const kva_case *k, totals *t) {
  const ingot_dtype dt = k->g.k_new.dtype;
  const int ps = k->a.s.page_size;
  int failures = 0;
  ingot_kv_append_graph g = k->g;
  const int64_t full[4] = {kBatch, kCapacity, kHkv, kD}, over[4] = {kBatch, kCapacity + 1, kHkv, kD};
  g.k_new = g.v_new = dense(dt, 4, full);
  ingot_plan *p = NULL;
  const ingot_status st = ingot_kv_append_plan_create(ctx, &g, &p);
  if (st != INGOT_OK) {
    fprintf(stderr, "FAIL [%s] Sq = capacity = %d: ingot_kv_append_plan_create: %s: %s\n", k->name, kCapacity,
            ingot_status_string(st), ingot_context_last_error(ctx));
    ++failures;
  }
  ingot_plan_destroy(p);
  g.k_new = g.v_new = dense(dt, 4, over);
  failures += expect_refusal(ctx, k, &g, "Sq = capacity + 1", "k_new.dims[1] (Sq)", t);
  g = k->g;
  if (ps > 0) {
    const int64_t short_rows[2] = {kBatch, kCapacity / ps - 1};
    g.page_table = dense(INGOT_DTYPE_INT32, 2, short_rows);
    failures += expect_refusal(ctx, k, &g, "a page table one page short of the capacity", "page_table.dims[1]", t);
  } else {
    const int64_t short_cache[4] = {kBatch, kCapacity - 1, kHkv, kD};
    g.k_cache = g.v_cache = dense(dt, 4, short_cache);
    failures += expect_refusal(ctx, k, &g, "a cache one token short of the capacity", "k_cache.dims[1]", t);
  }
  g = k->g;
  g.k_cache.dtype = g.v_cache.dtype = dt == INGOT_DTYPE_BF16 ? INGOT_DTYPE_FP16 : INGOT_DTYPE_BF16;
  failures += expect_refusal(ctx, k, &g, "a cache of the other dtype", "k_cache.dtype", t);
  return failures;
}

/* ---- the case ---- */

static void free_case(kva_case *k) {
  ingot_plan_destroy(k->append);
  gpu_free(k->dk_new), gpu_free(k->dv_new);
  free(k->k_new), free(k->v_new), free(k->got_k), free(k->got_v), free(k->what), free(k->owner);
  dh_case_destroy(&k->a);
}

/* The attention case (harness), the append graph over its cache, lengths and page
 * table, and the host-side state of the check. 0, or -1 with the reason printed. */
static int make_case(kva_case *k, ingot_context *ctx, ingot_dtype dt, int page_size, uint64_t seed) {
  memset(k, 0, sizeof *k);
  const dh_shape s = {.dtype = dt, .head_dim = kD, .num_q_heads = kHq, .num_kv_heads = kHkv, .batch = kBatch,
                      .seq_q = 1, .capacity = kCapacity, .page_size = page_size, .mask = INGOT_MASK_NONE,
                      .top_left = 0, .lse = 1};
  char why[4096];
  if (dh_case_create(&k->a, ctx, &s, seed, DH_TAIL_RANDOM, why, sizeof why) != 0) {
    fprintf(stderr, "FAIL: the attention case (%s, page size %d): %s\n", dt == INGOT_DTYPE_FP16 ? "fp16" : "bf16",
            page_size, why);
    return -1;
  }
  dh_describe(&k->a, k->name, sizeof k->name);
  const int64_t nd[4] = {kBatch, 1, kHkv, kD};
  ingot_kv_append_graph *g = &k->g;
  g->k_new = g->v_new = dense(dt, 4, nd);
  g->k_cache = k->a.g.k;
  g->v_cache = k->a.g.v;
  g->seq_lens = k->a.g.seq_lens;
  g->page_table = k->a.g.page_table; /* rank 0 for the contiguous layout */
  g->kv_layout = k->a.g.kv_layout;
  g->capacity = kCapacity;
  g->advance = 1;
  const ingot_status st = ingot_kv_append_plan_create(ctx, g, &k->append);
  if (st != INGOT_OK) {
    fprintf(stderr, "FAIL [%s]: ingot_kv_append_plan_create: %s: %s\n", k->name, ingot_status_string(st),
            ingot_context_last_error(ctx));
    free_case(k);
    return -1;
  }
  const char *family = ingot_plan_family(k->append), *kernel = ingot_plan_kernel_name(k->append);
  if (family == NULL || strcmp(family, INGOT_FAMILY_KV_APPEND) != 0 || ingot_plan_workspace_size(k->append) != 0 ||
      strstr(kernel, dt == INGOT_DTYPE_FP16 ? "fp16" : "bf16") == NULL ||
      strstr(kernel, page_size > 0 ? "paged" : "contig") == NULL) {
    fprintf(stderr, "FAIL [%s]: the append plan is family %s, kernel %s, workspace %zu (expected %s, a kernel of this "
            "dtype and layout, no workspace)\n", k->name, family ? family : "(none)", kernel,
            ingot_plan_workspace_size(k->append), INGOT_FAMILY_KV_APPEND);
    free_case(k);
    return -1;
  }
  const size_t slots = k->a.n_kv / k->a.tok, nn = (size_t)kBatch * k->a.tok;
  k->k_new = malloc(nn * 2), k->v_new = malloc(nn * 2);
  k->got_k = malloc(k->a.n_kv * 2), k->got_v = malloc(k->a.n_kv * 2);
  k->what = calloc(slots, 1);
  k->owner = malloc(((size_t)k->a.num_pages + 1) * sizeof *k->owner);
  if (!k->k_new || !k->v_new || !k->got_k || !k->got_v || !k->what || !k->owner ||
      gpu_alloc(&k->dk_new, nn * 2) != 0 || gpu_alloc(&k->dv_new, nn * 2) != 0) {
    fprintf(stderr, "FAIL [%s]: out of memory: %s\n", k->name, gpu_mem_error());
    free_case(k);
    return -1;
  }
  for (int p = 0; p < k->a.num_pages; ++p) k->owner[p] = -1;
  for (size_t i = 0; i < k->a.n_pt; ++i) k->owner[k->a.page_map[i]] = (int32_t)i;
  return 0;
}

/* Every slot the sentinel, then random tokens below each sequence's starting
 * length; the caches and the raw lengths go to the device. */
static int fill_case(kva_case *k, const int32_t *raw) {
  const ingot_dtype dt = k->a.s.dtype;
  const size_t tok = k->a.tok, slots = k->a.n_kv / tok;
  for (size_t i = 0; i < k->a.n_kv; ++i) k->a.k[i] = sentinel(dt, 0), k->a.v[i] = sentinel(dt, 1);
  memset(k->what, SLOT_SENTINEL, slots);
  for (int b = 0; b < kBatch; ++b) {
    k->len[b] = k->a.lens[b] = clamp_len(raw[b]);
    for (int pos = 0; pos < k->len[b]; ++pos) {
      const size_t slot = slot_of(k, b, pos);
      for (size_t e = 0; e < tok; ++e) k->a.k[slot * tok + e] = rand_value(dt, -1, 1);
      for (size_t e = 0; e < tok; ++e) k->a.v[slot * tok + e] = rand_value(dt, -1, 1);
      k->what[slot] = SLOT_INITIAL;
    }
  }
  if (gpu_upload(k->a.dk, k->a.k, k->a.n_kv * 2) != 0 || gpu_upload(k->a.dv, k->a.v, k->a.n_kv * 2) != 0 ||
      gpu_upload(k->a.dlens, raw, kBatch * 4) != 0) {
    fprintf(stderr, "FAIL [%s]: uploading the caches: %s\n", k->name, gpu_mem_error());
    return -1;
  }
  return 0;
}

/* Both caches against the mirror, element for element. Returns the slots that differ. */
static size_t check_caches(kva_case *k, const char *when, totals *t, int count) {
  const size_t tok = k->a.tok, slots = k->a.n_kv / tok;
  if (gpu_download(k->got_k, k->a.dk, k->a.n_kv * 2) != 0 || gpu_download(k->got_v, k->a.dv, k->a.n_kv * 2) != 0) {
    fprintf(stderr, "FAIL [%s] %s: downloading the caches: %s\n", k->name, when, gpu_mem_error());
    return 1;
  }
  size_t bad = 0, intact[3] = {0, 0, 0};
  for (size_t slot = 0; slot < slots; ++slot) {
    const size_t off = slot * tok;
    const int kbad = memcmp(k->got_k + off, k->a.k + off, tok * 2) != 0;
    const int vbad = memcmp(k->got_v + off, k->a.v + off, tok * 2) != 0;
    if (!kbad && !vbad) {
      intact[k->what[slot]]++;
      continue;
    }
    if (bad++ < 8) {
      const uint16_t *got = kbad ? k->got_k : k->got_v, *want = kbad ? k->a.k : k->a.v;
      size_t e = 0;
      while (got[off + e] == want[off + e]) ++e;
      char where[128];
      describe_slot(k, slot, where, sizeof where);
      fprintf(stderr, "FAIL [%s] %s: %s cache slot %zu (%s) element %zu = 0x%04x, expected 0x%04x (%s)\n", k->name,
              when, kbad ? "K" : "V", slot, where, e, got[off + e], want[off + e], kSlotWhat[k->what[slot]]);
    }
  }
  if (bad > 0) fprintf(stderr, "FAIL [%s] %s: %zu of %zu cache slots differ from the expected cache\n", k->name, when,
                       bad, slots);
  t->slot_mismatches += bad;
  if (count) {
    t->sentinel_slots += intact[SLOT_SENTINEL];
    t->initial_slots += intact[SLOT_INITIAL];
    t->appended_slots += intact[SLOT_APPENDED];
  }
  return bad;
}

/* What the append must do, on the mirror: each sequence's new token at its
 * length unless it is full; the length moves past it, up to the capacity. */
static void host_append(kva_case *k) {
  const size_t tok = k->a.tok;
  for (int b = 0; b < kBatch; ++b) {
    if (k->len[b] < kCapacity) {
      const size_t slot = slot_of(k, b, k->len[b]);
      memcpy(k->a.k + slot * tok, k->k_new + (size_t)b * tok, tok * 2);
      memcpy(k->a.v + slot * tok, k->v_new + (size_t)b * tok, tok * 2);
      k->what[slot] = SLOT_APPENDED;
      k->len[b]++;
    }
    k->a.lens[b] = k->len[b];
  }
}

/* One replay: fresh q, k_new and v_new, poisoned outputs, the graph, then the
 * lengths and the attention against the reference. Returns the failures. */
static int replay(kva_case *k, void *exec, void *stream, const char *label, dh_stats *st, totals *t) {
  const ingot_dtype dt = k->a.s.dtype;
  const size_t nn = (size_t)kBatch * k->a.tok;
  for (size_t i = 0; i < k->a.n_q; ++i) k->a.q[i] = rand_value(dt, -3, 3);
  for (size_t i = 0; i < nn; ++i) k->k_new[i] = rand_value(dt, -1, 1), k->v_new[i] = rand_value(dt, -1, 1);
  if (gpu_upload(k->a.dq, k->a.q, k->a.n_q * 2) != 0 || gpu_upload(k->dk_new, k->k_new, nn * 2) != 0 ||
      gpu_upload(k->dv_new, k->v_new, nn * 2) != 0 || dh_poison_outputs(&k->a) != 0 ||
      gpu_graph_launch(exec, stream) != 0 || gpu_stream_sync(stream) != 0) {
    fprintf(stderr, "FAIL [%s]: %s\n", label, gpu_mem_error());
    return 1;
  }
  st->executes++;
  t->replays++;
  host_append(k);
  int32_t got[kBatch];
  if (gpu_download(got, k->a.dlens, sizeof got) != 0) {
    fprintf(stderr, "FAIL [%s]: downloading seq_lens: %s\n", label, gpu_mem_error());
    return 1;
  }
  int failures = 0;
  for (int b = 0; b < kBatch; ++b) {
    t->length_checks++;
    if (got[b] != k->len[b]) {
      t->length_mismatches++;
      ++failures;
      fprintf(stderr, "FAIL [%s]: seq_lens[%d] = %d after the append, expected %d%s\n", label, b, got[b], k->len[b],
              k->len[b] == kCapacity ? " (the capacity: a full sequence stays full)" : "");
    }
  }
  return failures + (dh_check(&k->a, label, st) != 0);
}

static int run_case(dh_session *s, ingot_dtype dt, int page_size, uint64_t seed, totals *t) {
  kva_case k;
  if (make_case(&k, s->ctx, dt, page_size, seed) != 0) return 1;
  t->cases++;
  printf("  %s: attention %s (%d splits), append %s\n", k.name, ingot_plan_kernel_name(k.a.plan),
         ingot_plan_num_splits(k.a.plan), ingot_plan_kernel_name(k.append));
  int failures = check_plan_time(s->ctx, &k, t);
  /* phase 1's lengths, as the device gets them (the roles: see the top of the file) */
  int32_t raw[kBatch] = {kCapacity - 3, dh_rand_range(1, 300), dh_rand_range(300, 700), -dh_rand_range(1, 1 << 20)};
  if (fill_case(&k, raw) != 0) {
    free_case(&k);
    return failures + 1;
  }
  const ingot_kv_append_buffers abuf = {k.dk_new, k.dv_new, k.a.dk, k.a.dv, (int32_t *)k.a.dlens,
                                        page_size > 0 ? (const int32_t *)k.a.dpt : NULL};
  const ingot_attention_buffers dbuf = dh_buffers(&k.a);
  char aerr[1024] = "", derr[1024] = "";
  void *exec = NULL;
  if (gpu_capture_begin(s->stream) != 0) {
    fprintf(stderr, "FAIL [%s]: %s\n", k.name, gpu_mem_error());
    free_case(&k);
    return failures + 1;
  }
  const ingot_status ast = ingot_kv_append_execute(k.append, s->stream, &abuf, aerr, sizeof aerr);
  const ingot_status dst = ast != INGOT_OK ? INGOT_OK
                                           : ingot_plan_execute_ex(k.a.plan, s->stream, &dbuf, k.a.dws, k.a.ws_size,
                                                                   derr, sizeof derr);
  const int end = gpu_capture_end(s->stream, &exec); /* always end the capture */
  if (ast != INGOT_OK || dst != INGOT_OK || end != 0) {
    fprintf(stderr, "FAIL [%s]: capturing append then attention: append %s%s%s, attention %s%s%s, capture %s\n",
            k.name, ingot_status_string(ast), aerr[0] ? ": " : "", aerr, ingot_status_string(dst),
            derr[0] ? ": " : "", derr, end != 0 ? gpu_mem_error() : "ok");
    gpu_graph_destroy(exec);
    free_case(&k);
    return failures + 1;
  }
  for (int phase = 1; phase <= kPhases && failures == 0; ++phase) {
    if (phase == 2) { /* 0 clamps from above, 1 continues, 2 restarts shorter, 3 clamps from below */
      raw[0] = INT32_MAX, raw[1] = k.len[1], raw[2] = dh_rand_range(1, k.len[2] - 1), raw[3] = INT32_MIN;
      for (int b = 0; b < kBatch; ++b) k.len[b] = k.a.lens[b] = clamp_len(raw[b]);
      if (gpu_upload(k.a.dlens, raw, sizeof raw) != 0) {
        fprintf(stderr, "FAIL [%s]: phase 2 lengths: %s\n", k.name, gpu_mem_error());
        ++failures;
        break;
      }
    }
    printf("    phase %d: raw lengths %d %d %d %d\n", phase, raw[0], raw[1], raw[2], raw[3]);
    for (int i = 1; i <= kPhaseTokens && failures == 0; ++i) {
      char label[256];
      int32_t next[kBatch]; /* the lengths this replay must leave */
      for (int b = 0; b < kBatch; ++b) next[b] = clamp_len((int64_t)k.len[b] + 1);
      snprintf(label, sizeof label, "%s phase %d replay %d (L = %d %d %d %d)", k.name, phase, i, next[0], next[1],
               next[2], next[3]);
      failures += replay(&k, exec, s->stream, label, &s->stats, t);
    }
    char when[32]; /* also after a failed replay: which slots were written wrongly */
    snprintf(when, sizeof when, "after phase %d", phase);
    failures += check_caches(&k, when, t, phase == kPhases && failures == 0) != 0;
  }
  gpu_graph_destroy(exec);
  free_case(&k);
  return failures;
}

int main(int argc, char **argv) {
  dh_session sess;
  dh_session_open(&sess, argc, argv, TEST_NAME);
  char append_dir[4096];
  append_pack_dir(argc, argv, append_dir, sizeof append_dir);
  const size_t before = ingot_context_kernel_count(sess.ctx);
  const ingot_status st = ingot_context_open_pack(sess.ctx, append_dir);
  if (st != INGOT_OK) {
    fprintf(stderr, "%s: FAIL: ingot_context_open_pack(%s) beside the attention pack: %s: %s\n", TEST_NAME,
            append_dir, ingot_status_string(st), ingot_context_last_error(sess.ctx));
    dh_session_release(&sess);
    return 1;
  }
  printf("%s: append pack %s with %zu kernels\n", TEST_NAME, append_dir,
         ingot_context_kernel_count(sess.ctx) - before);
  static const ingot_dtype kDtypes[] = {INGOT_DTYPE_BF16, INGOT_DTYPE_FP16};
  static const int kPageSizes[] = {0, 16, 4, 1}; /* 0: contiguous */
  totals t;
  memset(&t, 0, sizeof t);
  int failures = 0;
  for (int d = 0; d < 2; ++d)
    for (int p = 0; p < 4; ++p)
      failures += run_case(&sess, kDtypes[d], kPageSizes[p], sess.seed + (uint64_t)(4 * d + p), &t);
  dh_session_release(&sess);
  const dh_stats *ds = &sess.stats;
  const int expected_replays = 2 * 4 * kPhases * kPhaseTokens;
  const int failed = failures > 0 || ds->failed > 0 || t.slot_mismatches > 0 || t.length_mismatches > 0 ||
                     t.replays != expected_replays || ds->compared == 0 || t.sentinel_slots == 0;
  printf("%s: %s: %d cases, %d replays (of %d), %zu values compared, %zu mismatches, max error %.6g, %zu lengths "
         "checked (%zu wrong), %zu sentinel slots intact, %zu appended and %zu initial slots intact, %zu slots "
         "differ, %d plan-time refusals checked, %d failures\n",
         TEST_NAME, failed ? "FAIL" : "PASS", t.cases, t.replays, expected_replays, ds->compared, ds->failed,
         ds->max_err, t.length_checks, t.length_mismatches, t.sentinel_slots, t.appended_slots, t.initial_slots,
         t.slot_mismatches, t.refusals, failures);
  return failed ? 1 : 0;
}
