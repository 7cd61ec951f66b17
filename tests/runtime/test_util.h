/* test_util.h: small helpers shared by the runtime host tests: checks that
 * report file:line and the random seed, a seeded RNG, the seed graph of the
 * test pack, and folder copies for corrupting a pack. */
#ifndef INGOT_TEST_UTIL_H
#define INGOT_TEST_UTIL_H

#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ingot/ingot.h"

static uint64_t g_seed, g_rng;
static int g_failures;

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: CHECK failed: %s (seed %llu)\n", __FILE__, __LINE__, #cond,          \
              (unsigned long long)g_seed);                                                         \
      ++g_failures;                                                                                \
    }                                                                                              \
  } while (0)

#define CHECK_STATUS(expr, want)                                                                   \
  do {                                                                                             \
    ingot_status got_ = (expr);                                                                    \
    if (got_ != (want)) {                                                                          \
      fprintf(stderr, "%s:%d: %s returned %s, expected %s (seed %llu)\n", __FILE__, __LINE__,      \
              #expr, ingot_status_string(got_), ingot_status_string(want),                         \
              (unsigned long long)g_seed);                                                         \
      ++g_failures;                                                                                \
    }                                                                                              \
  } while (0)

/* Asserts that text holds needle, printing both when not. */
#define CHECK_HAS(text, needle)                                                                    \
  do {                                                                                             \
    const char *t_ = (text), *n_ = (needle);                                                       \
    if (t_ == NULL || strstr(t_, n_) == NULL) {                                                    \
      fprintf(stderr, "%s:%d: expected text to contain\n  [%s]\nbut it is\n  [%s]\n(seed %llu)\n", \
              __FILE__, __LINE__, n_, t_ ? t_ : "(null)", (unsigned long long)g_seed);             \
      ++g_failures;                                                                                \
    }                                                                                              \
  } while (0)

static inline void test_seed_rng(void) {
  const char *env = getenv("INGOT_TEST_SEED");
  g_seed = env ? strtoull(env, NULL, 0) : ((uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20));
  g_rng = g_seed * 0x9E3779B97F4A7C15ULL + 0x1234567ULL;
  if (g_rng == 0) g_rng = 1;
  printf("random seed %llu (set INGOT_TEST_SEED to repeat)\n", (unsigned long long)g_seed);
}

static inline uint64_t rnd(void) { /* xorshift64* */
  g_rng ^= g_rng >> 12;
  g_rng ^= g_rng << 25;
  g_rng ^= g_rng >> 27;
  return g_rng * 2685821657736338717ULL;
}

/* Uniform in [lo, hi]. */
static inline int64_t rnd_range(int64_t lo, int64_t hi) { return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1)); }

static inline int test_finish(const char *name) {
  if (g_failures) fprintf(stderr, "%s: %d check(s) failed (seed %llu)\n", name, g_failures, (unsigned long long)g_seed);
  else printf("%s: all checks passed\n", name);
  return g_failures ? 1 : 0;
}

static inline void set_tensor(ingot_tensor_desc *t, ingot_dtype dt, int rank, const int64_t *dims) {
  memset(t, 0, sizeof(*t));
  t->dtype = dt;
  t->rank = rank;
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; --i) {
    t->dims[i] = dims[i];
    t->strides[i] = s;
    s *= dims[i];
  }
  t->memory = INGOT_MEMORY_DEVICE;
}

/* The seed graph of the test pack: bf16, B=1, Hq=8, Hkv=2, Sq=1, D=128,
 * contiguous KV of the given capacity, no LSE, int32 device lengths. */
static inline ingot_attention_graph seed_graph(int64_t capacity, ingot_mask mask) {
  ingot_attention_graph g;
  memset(&g, 0, sizeof g);
  const int64_t q[4] = {1, 8, 1, 128}, kv[4] = {1, capacity, 2, 128}, lens[1] = {1};
  set_tensor(&g.q, INGOT_DTYPE_BF16, 4, q);
  set_tensor(&g.o, INGOT_DTYPE_BF16, 4, q);
  set_tensor(&g.k, INGOT_DTYPE_BF16, 4, kv);
  set_tensor(&g.v, INGOT_DTYPE_BF16, 4, kv);
  set_tensor(&g.seq_lens, INGOT_DTYPE_INT32, 1, lens);
  g.kv_layout = INGOT_KV_CONTIGUOUS;
  g.capacity = capacity;
  g.mask = mask;
  g.mask_align = INGOT_ALIGN_BOTTOM_RIGHT;
  g.scale = 0.08838834764831845f;
  return g;
}

/* A decode graph of this shape: contiguous KV [b, capacity, hkv, d], or paged
 * ([b * pages, page, hkv, d] and an int32 page table) when paged; LSE when lse. */
static inline ingot_attention_graph shaped_graph(ingot_dtype dt, int hq, int hkv, int d, int sq, int b,
                                                 int64_t capacity, int paged, int page, int causal, int lse) {
  ingot_attention_graph g;
  memset(&g, 0, sizeof g);
  const int64_t q[4] = {b, hq, sq, d}, l[3] = {b, hq, sq}, lens[1] = {b};
  set_tensor(&g.q, dt, 4, q);
  set_tensor(&g.o, dt, 4, q);
  if (paged) {
    const int64_t pages = (capacity + page - 1) / page;
    const int64_t kv[4] = {b * pages, page, hkv, d}, pt[2] = {b, pages};
    set_tensor(&g.k, dt, 4, kv);
    set_tensor(&g.v, dt, 4, kv);
    set_tensor(&g.page_table, INGOT_DTYPE_INT32, 2, pt);
  } else {
    const int64_t kv[4] = {b, capacity, hkv, d};
    set_tensor(&g.k, dt, 4, kv);
    set_tensor(&g.v, dt, 4, kv);
  }
  if (lse) set_tensor(&g.lse, INGOT_DTYPE_FP32, 3, l);
  set_tensor(&g.seq_lens, INGOT_DTYPE_INT32, 1, lens);
  g.kv_layout = paged ? INGOT_KV_PAGED : INGOT_KV_CONTIGUOUS;
  g.capacity = capacity;
  g.mask = causal ? INGOT_MASK_CAUSAL : INGOT_MASK_NONE;
  g.mask_align = INGOT_ALIGN_BOTTOM_RIGHT;
  g.scale = 0.125f;
  return g;
}

/* Sets the KV capacity of a contiguous graph (k, v dims[1] and strides). */
static inline void set_capacity(ingot_attention_graph *g, int64_t capacity) {
  const int64_t kv[4] = {g->k.dims[0], capacity, g->k.dims[2], g->k.dims[3]};
  set_tensor(&g->k, g->k.dtype, 4, kv);
  set_tensor(&g->v, g->v.dtype, 4, kv);
  g->capacity = capacity;
}

/* o laid out as [B, Sq, Hq, D] or [Sq, B, Hq, D] in memory, rows padded by
 * multiples of 8 elements: still dense_d, every element its own offset. */
static inline void transpose_o(ingot_attention_graph *g) {
  const int64_t B = g->o.dims[0], Hq = g->o.dims[1], Sq = g->o.dims[2], D = g->o.dims[3];
  const int64_t row = D + 8 * rnd_range(0, 2);
  if (rnd() % 2) {
    g->o.strides[1] = row, g->o.strides[2] = Hq * row, g->o.strides[0] = Sq * Hq * row + 8 * rnd_range(0, 4);
  } else {
    g->o.strides[1] = row, g->o.strides[0] = Hq * row, g->o.strides[2] = B * Hq * row;
  }
  g->o.strides[3] = 1;
}

/* ---- files ----------------------------------------------------------------------- */

static inline int copy_file(const char *from, const char *to) {
  FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
  if (!in || !out) {
    if (in) fclose(in);
    return 0;
  }
  char buf[65536];
  size_t n;
  int ok = 1;
  while ((n = fread(buf, 1, sizeof buf, in)) > 0) ok &= fwrite(buf, 1, n, out) == n;
  fclose(in);
  return fclose(out) == 0 && ok;
}

/* Copies a folder tree of regular files. */
static inline int copy_tree(const char *from, const char *to) {
  if (mkdir(to, 0700) != 0 && errno != EEXIST) return 0;
  DIR *d = opendir(from);
  if (!d) return 0;
  struct dirent *e;
  int ok = 1;
  while (ok && (e = readdir(d)) != NULL) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    char a[4096], b[4096];
    if (snprintf(a, sizeof a, "%s/%s", from, e->d_name) >= (int)sizeof a ||
        snprintf(b, sizeof b, "%s/%s", to, e->d_name) >= (int)sizeof b) {
      ok = 0; /* a path too long to copy: fail, not a truncated copy */
      break;
    }
    struct stat st;
    if (stat(a, &st) != 0) ok = 0;
    else if (S_ISDIR(st.st_mode)) ok = copy_tree(a, b);
    else ok = copy_file(a, b);
  }
  closedir(d);
  return ok;
}

static inline void remove_tree(const char *path) {
  DIR *d = opendir(path);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      char p[4096];
      const int len = snprintf(p, sizeof p, "%s/%s", path, e->d_name);
      if (len < 0 || (size_t)len >= sizeof p) { /* truncated: never remove a different path */
        fprintf(stderr, "remove_tree: path too long under %s, left in place\n", path);
        continue;
      }
      struct stat st;
      if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) remove_tree(p);
      else unlink(p);
    }
    closedir(d);
  }
  rmdir(path);
}

/* A fresh copy of the pack in a new temporary folder; path receives it. */
static inline int copy_pack(const char *pack, char *path, size_t size) {
  const char *tmp = getenv("TMPDIR");
  snprintf(path, size, "%s/ingot-test-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
  if (mkdtemp(path) == NULL) return 0;
  size_t n = strlen(path);
  snprintf(path + n, size - n, "/pack");
  return copy_tree(pack, path);
}

static inline void remove_pack_copy(const char *path) {
  char parent[4096];
  snprintf(parent, sizeof parent, "%s", path);
  char *slash = strrchr(parent, '/');
  if (slash) *slash = 0;
  remove_tree(parent);
}

#endif
