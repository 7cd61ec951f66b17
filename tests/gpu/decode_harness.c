/* decode_harness.c: see decode_harness.h. */
#define _POSIX_C_SOURCE 200809L
#include "decode_harness.h"

#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu_mem.h"
#include "reference.h"

#ifndef INGOT_DEFAULT_PACK_DIR
#define INGOT_DEFAULT_PACK_DIR "build/packs/attention_decode"
#endif

/* ---- random numbers ------------------------------------------------------------------ */

static uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

static uint64_t next(uint64_t *s) { /* xorshift64*; *s never 0 */
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545F4914F6CDD1DULL;
}

static float uniform(uint64_t *s, float lo, float hi) {
  return lo + (hi - lo) * (float)((next(s) >> 40) * (1.0 / 16777216.0));
}

static uint64_t g_rng = 1; /* the program's stream, seeded by dh_seed */

uint64_t dh_rand(void) { return next(&g_rng); }

int dh_rand_range(int lo, int hi) {
  return lo + (int)(dh_rand() % (uint64_t)((int64_t)hi - lo + 1));
}

static uint64_t stream_for(uint64_t seed, uint64_t a, uint64_t b) {
  uint64_t s = splitmix64(seed ^ splitmix64(a * 0x100000001B3ULL ^ splitmix64(b + 1)));
  return s ? s : 1;
}

/* ---- program setup ------------------------------------------------------------------- */

uint64_t dh_seed(const char *test_name) {
  const char *env = getenv("INGOT_TEST_SEED");
  uint64_t seed;
  if (env != NULL && env[0] != '\0') {
    seed = strtoull(env, NULL, 0);
  } else {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    seed = splitmix64((uint64_t)ts.tv_sec * 1000000007ULL ^ (uint64_t)ts.tv_nsec ^
                      ((uint64_t)getpid() << 32));
  }
  printf("%s: seed %llu (set INGOT_TEST_SEED=%llu to repeat)\n", test_name,
         (unsigned long long)seed, (unsigned long long)seed);
  g_rng = splitmix64(seed) | 1;
  return seed;
}

ingot_context *dh_open(int argc, char **argv, const char *test_name, const char **pack_dir) {
  return dh_open_arch(argc, argv, test_name, NULL, pack_dir);
}

ingot_context *dh_open_arch(int argc, char **argv, const char *test_name, const char *arch,
                            const char **pack_dir) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  *pack_dir = argc > 1 ? argv[1] : INGOT_DEFAULT_PACK_DIR;
  ingot_context *ctx = NULL;
  char err[1024] = "";
  ingot_status st = ingot_context_create_ex(INGOT_BACKEND_CUDA, 0, &ctx, err, sizeof err);
  if (st == INGOT_UNAVAILABLE) {
    printf("%s: SKIP: CUDA is unavailable: %s\n", test_name, err);
    exit(77);
  }
  if (st != INGOT_OK || ctx == NULL) {
    fprintf(stderr, "%s: FAIL: ingot_context_create(CUDA, 0): %s: %s\n", test_name,
            ingot_status_string(st), err);
    exit(1);
  }
  if (arch != NULL && (st = ingot_context_set_arch(ctx, arch)) != INGOT_OK) {
    fprintf(stderr, "%s: FAIL: ingot_context_set_arch(%s): %s: %s\n", test_name, arch, ingot_status_string(st),
            ingot_context_last_error(ctx));
    exit(1);
  }
  int rc = gpu_mem_init();
  if (rc != 0) {
    fprintf(stderr, "%s: FAIL: the runtime opened CUDA but the test's helper could not: %s\n",
            test_name, gpu_mem_error());
    exit(1);
  }
  st = ingot_context_open_pack(ctx, *pack_dir);
  if (st != INGOT_OK) {
    fprintf(stderr, "%s: FAIL: ingot_context_open_pack(%s): %s: %s\n", test_name, *pack_dir,
            ingot_status_string(st), ingot_context_last_error(ctx));
    exit(1);
  }
  printf("%s: device arch %s, %d SMs, pack %s with %zu kernels\n", test_name,
         ingot_context_arch(ctx), ingot_context_compute_units(ctx), *pack_dir,
         ingot_context_kernel_count(ctx));
  return ctx;
}

void dh_close(ingot_context *ctx) {
  ingot_context_destroy(ctx);
  gpu_mem_shutdown();
}

void dh_session_open(dh_session *s, int argc, char **argv, const char *test_name) {
  dh_session_open_arch(s, argc, argv, test_name, NULL);
}

void dh_session_open_arch(dh_session *s, int argc, char **argv, const char *test_name, const char *arch) {
  memset(s, 0, sizeof *s);
  s->ctx = dh_open_arch(argc, argv, test_name, arch, &s->pack_dir);
  s->seed = dh_seed(test_name);
  s->num_kernels = dh_pack_kernels(s->pack_dir, ingot_context_arch(s->ctx), &s->kernels);
  if (s->num_kernels <= 0 || gpu_stream_create(&s->stream) != 0) {
    fprintf(stderr, "%s: FAIL: no kernels in %s, or no stream (%s)\n", test_name, s->pack_dir,
            gpu_mem_error());
    exit(1);
  }
}

void dh_session_release(dh_session *s) {
  gpu_stream_destroy(s->stream);
  free(s->kernels);
  dh_close(s->ctx);
}

int dh_session_close(dh_session *s, const char *test_name, int other_failures) {
  dh_session_release(s);
  return dh_finish(test_name, &s->stats, other_failures);
}

const dh_kernel *dh_session_kernel(const dh_session *s, int paged, int min_sq, int want_lse,
                                   int *failures) {
  const dh_kernel *k = dh_find_kernel(s->kernels, s->num_kernels, paged, min_sq, want_lse);
  if (k == NULL && !paged && failures != NULL) {
    fprintf(stderr, "FAIL: the pack has no contiguous kernel (Sq >= %d%s)\n", min_sq,
            want_lse ? ", LSE" : "");
    ++*failures;
  }
  return k;
}

int dh_finish(const char *test_name, const dh_stats *st, int other_failures) {
  const int failed = st->failed > 0 || other_failures > 0 || st->compared == 0;
  printf("%s: %s: %d executes, %zu values compared, %zu mismatches, max error %.6g, %d other "
         "failures%s\n",
         test_name, failed ? "FAIL" : "PASS", st->executes, st->compared, st->failed, st->max_err,
         other_failures, st->compared == 0 ? " (nothing was compared)" : "");
  return failed ? 1 : 0;
}

/* ---- cases ----------------------------------------------------------------------------- */

static uint16_t poison_value(uint64_t *s, ingot_dtype dt) {
  const int fp16 = dt == INGOT_DTYPE_FP16;
  switch (next(s) % 5) {
    case 0: return fp16 ? 0x7e00 : 0x7fc0; /* NaN */
    case 1: return fp16 ? 0x7c00 : 0x7f80; /* +Inf */
    case 2: return fp16 ? 0xfc00 : 0xff80; /* -Inf */
    case 3: return fp16 ? 0x7bff : 0x7f7f; /* the largest finite value */
    default: return (uint16_t)next(s);     /* any bit pattern */
  }
}

static int32_t garbage_page(uint64_t *s, int num_pages) {
  switch (next(s) % 4) {
    case 0: return -1;
    case 1: return INT32_MIN;
    case 2: return num_pages + (int32_t)(next(s) % 1000000);
    default: return (int32_t)(next(s) >> 33); /* random, mostly far out of range */
  }
}

static int64_t slot_of(const dh_case *c, int b, int pos) {
  if (c->s.page_size > 0) {
    const int ps = c->s.page_size;
    return (int64_t)c->page_map[(size_t)b * c->pages_per_seq + pos / ps] * ps + pos % ps;
  }
  return (int64_t)b * c->s.capacity + pos;
}

/* Writes token (b, pos)'s K and V, a pure function of (seed, b, pos). */
static void write_token(dh_case *c, int b, int pos) {
  uint64_t s = stream_for(c->seed, (uint64_t)b, (uint64_t)pos);
  const size_t off = (size_t)slot_of(c, b, pos) * c->tok;
  for (size_t e = 0; e < c->tok; ++e) c->k[off + e] = ingot_ref_from_float(uniform(&s, -1, 1), c->s.dtype);
  for (size_t e = 0; e < c->tok; ++e) c->v[off + e] = ingot_ref_from_float(uniform(&s, -1, 1), c->s.dtype);
}

static void write_unused(dh_case *c, size_t slot, uint64_t *s) {
  const size_t off = slot * c->tok;
  for (size_t e = 0; e < c->tok; ++e) {
    if (c->tail == DH_TAIL_POISON) {
      c->k[off + e] = poison_value(s, c->s.dtype);
      c->v[off + e] = poison_value(s, c->s.dtype);
    } else {
      c->k[off + e] = ingot_ref_from_float(uniform(s, -1, 1), c->s.dtype);
      c->v[off + e] = ingot_ref_from_float(uniform(s, -1, 1), c->s.dtype);
    }
  }
}

const char *dh_describe(const dh_case *c, char *buf, size_t size) {
  char layout[32] = "contiguous";
  if (c->s.page_size > 0) snprintf(layout, sizeof layout, "paged%d", c->s.page_size);
  snprintf(buf, size, "%s D%d %d/%d B%d Sq%d cap%d %s %s%s%s scale %.4g",
           c->s.dtype == INGOT_DTYPE_FP16 ? "fp16" : "bf16", c->s.head_dim, c->s.num_q_heads,
           c->s.num_kv_heads, c->s.batch, c->s.seq_q, c->s.capacity, layout,
           c->s.mask != INGOT_MASK_CAUSAL ? "nomask" : c->s.top_left ? "causal-top-left" : "causal",
           c->s.lse ? " lse" : "",
           c->tail == DH_TAIL_POISON ? " poisoned-tail" : "", (double)c->g.scale);
  return buf;
}

static ingot_tensor_desc desc(ingot_dtype dt, int rank, const int64_t *dims) {
  ingot_tensor_desc t;
  memset(&t, 0, sizeof t);
  t.dtype = dt;
  t.rank = rank;
  t.memory = INGOT_MEMORY_DEVICE;
  int64_t stride = 1;
  for (int i = rank - 1; i >= 0; --i) {
    t.dims[i] = dims[i];
    t.strides[i] = stride;
    stride *= dims[i];
  }
  return t;
}

static int valid_shape(const dh_shape *s, char *why, size_t why_size) {
  const int ps = s->page_size;
  if ((s->dtype != INGOT_DTYPE_BF16 && s->dtype != INGOT_DTYPE_FP16) || s->head_dim <= 0 ||
      s->head_dim % 8 != 0 || s->num_kv_heads <= 0 || s->num_q_heads % s->num_kv_heads != 0 ||
      s->batch <= 0 || s->seq_q <= 0 || s->capacity <= 0 || ps < 0 ||
      (ps > 0 && ((ps & (ps - 1)) != 0 || s->capacity % ps != 0))) {
    snprintf(why, why_size, "the test asked for an impossible shape");
    return 0;
  }
  return 1;
}

int dh_case_plan(dh_case *c, ingot_context *ctx, const dh_shape *s, uint64_t seed, dh_tail tail,
                     char *why, size_t why_size) {
  memset(c, 0, sizeof *c);
  why[0] = '\0';
  if (!valid_shape(s, why, why_size)) return -1;
  c->s = *s;
  c->tail = tail;
  c->seed = seed;
  const int B = s->batch, Hq = s->num_q_heads, Hkv = s->num_kv_heads, Sq = s->seq_q;
  const int D = s->head_dim, cap = s->capacity, ps = s->page_size;
  c->tok = (size_t)Hkv * D;
  c->n_q = (size_t)B * Hq * Sq * D;
  c->n_lse = (size_t)B * Hq * Sq;
  if (ps > 0) {
    c->pages_per_seq = cap / ps;
    c->num_pages = B * c->pages_per_seq + 2; /* two spare pages nobody owns */
    c->n_kv = (size_t)c->num_pages * ps * c->tok;
    c->n_pt = (size_t)B * c->pages_per_seq;
  } else {
    c->n_kv = (size_t)B * cap * c->tok;
  }

  ingot_attention_graph *g = &c->g;
  memset(g, 0, sizeof *g);
  const int64_t qdims[4] = {B, Hq, Sq, D}, ldims[3] = {B, Hq, Sq}, bdims[1] = {B};
  g->q = desc(s->dtype, 4, qdims);
  g->o = g->q;
  if (ps > 0) {
    const int64_t kdims[4] = {c->num_pages, ps, Hkv, D}, pdims[2] = {B, c->pages_per_seq};
    g->k = desc(s->dtype, 4, kdims);
    g->page_table = desc(INGOT_DTYPE_INT32, 2, pdims);
    g->kv_layout = INGOT_KV_PAGED;
  } else {
    const int64_t kdims[4] = {B, cap, Hkv, D};
    g->k = desc(s->dtype, 4, kdims);
    g->kv_layout = INGOT_KV_CONTIGUOUS;
  }
  g->v = g->k;
  if (s->lse) g->lse = desc(INGOT_DTYPE_FP32, 3, ldims);
  g->seq_lens = desc(INGOT_DTYPE_INT32, 1, bdims);
  g->capacity = cap;
  g->mask = s->mask;
  g->mask_align = s->top_left ? INGOT_ALIGN_TOP_LEFT : INGOT_ALIGN_BOTTOM_RIGHT;
  {
    /* The usual 1/sqrt(D) mostly, drawn from the seed (a paged twin built with the same seed
     * gets the same): a negative, a zero and a larger scale too. The kernels scale in the
     * exponent's fma, fold a negative scale into q's signs and keep a zero one finite. */
    static const float scales[6] = {1.0f, 1.0f, 1.0f, -1.0f, 0.0f, 2.5f};
    uint64_t rs = stream_for(seed, 0x5CA1E, 0);
    g->scale = scales[next(&rs) % 6] / sqrtf((float)D);
  }

  ingot_status st = ingot_plan_create(ctx, g, &c->plan);
  if (st != INGOT_OK) {
    snprintf(why, why_size, "ingot_plan_create: %s: %s", ingot_status_string(st),
             ingot_context_last_error(ctx));
    c->plan = NULL;
    return st == INGOT_NO_MATCH ? (int)INGOT_NO_MATCH : -1;
  }
  c->ws_size = ingot_plan_workspace_size(c->plan);
  return 0;
}

int dh_case_create(dh_case *c, ingot_context *ctx, const dh_shape *s, uint64_t seed, dh_tail tail,
                   char *why, size_t why_size) {
  const int planned = dh_case_plan(c, ctx, s, seed, tail, why, why_size);
  if (planned != 0) return planned;
  const int B = s->batch, ps = s->page_size;

  c->q = malloc(c->n_q * 2);
  c->o = malloc(c->n_q * 2);
  c->k = malloc(c->n_kv * 2);
  c->v = malloc(c->n_kv * 2);
  c->lse = malloc(c->n_lse * 4);
  c->ref_o = malloc(c->n_q * 4);
  c->ref_lse = malloc(c->n_lse * 4);
  c->lens = calloc((size_t)B, 4);
  c->valid = calloc((size_t)B, 4);
  c->pt = calloc(c->n_pt + 1, 4);
  c->page_map = calloc(c->n_pt + 1, 4);
  if (!c->q || !c->o || !c->k || !c->v || !c->lse || !c->ref_o || !c->ref_lse || !c->lens ||
      !c->valid || !c->pt || !c->page_map) {
    snprintf(why, why_size, "out of host memory");
    dh_case_destroy(c);
    return -1;
  }

  uint64_t r = stream_for(seed, 0xC0FFEE, 0);
  for (size_t i = 0; i < c->n_q; ++i) c->q[i] = ingot_ref_from_float(uniform(&r, -3, 3), s->dtype);
  if (ps > 0) { /* the pages of the pool in random order, the first B*pps owned */
    int32_t *perm = malloc((size_t)c->num_pages * 4);
    if (perm == NULL) {
      snprintf(why, why_size, "out of host memory");
      dh_case_destroy(c);
      return -1;
    }
    for (int i = 0; i < c->num_pages; ++i) perm[i] = i;
    for (int i = c->num_pages - 1; i > 0; --i) {
      const int j = (int)(next(&r) % (uint64_t)(i + 1));
      const int32_t t = perm[i];
      perm[i] = perm[j];
      perm[j] = t;
    }
    memcpy(c->page_map, perm, c->n_pt * 4);
    free(perm);
    for (size_t i = 0; i < c->n_pt; ++i)
      c->pt[i] = tail == DH_TAIL_POISON ? garbage_page(&r, c->num_pages) : c->page_map[i];
  }
  const size_t slots = c->n_kv / c->tok;
  for (size_t slot = 0; slot < slots; ++slot) write_unused(c, slot, &r);

  /* Device buffers: nothing is zero-initialised; everything is written below. */
  int rc = 0;
  rc |= gpu_alloc(&c->dq, c->n_q * 2);
  rc |= gpu_alloc(&c->d_o, c->n_q * 2);
  rc |= gpu_alloc(&c->dk, c->n_kv * 2);
  rc |= gpu_alloc(&c->dv, c->n_kv * 2);
  rc |= gpu_alloc(&c->dlens, (size_t)B * 4);
  if (s->lse) rc |= gpu_alloc(&c->dlse, c->n_lse * 4);
  if (ps > 0) rc |= gpu_alloc(&c->dpt, c->n_pt * 4);
  if (c->ws_size > 0) rc |= gpu_alloc(&c->dws, c->ws_size);
  if (rc == 0) rc |= gpu_upload(c->dq, c->q, c->n_q * 2);
  if (rc == 0) rc |= gpu_upload(c->dk, c->k, c->n_kv * 2);
  if (rc == 0) rc |= gpu_upload(c->dv, c->v, c->n_kv * 2);
  if (rc == 0) rc |= gpu_upload(c->dlens, c->lens, (size_t)B * 4);
  if (rc == 0 && ps > 0) rc |= gpu_upload(c->dpt, c->pt, c->n_pt * 4);
  if (rc == 0 && c->ws_size > 0) rc |= gpu_memset8(c->dws, 0xFF, c->ws_size); /* NaN workspace */
  if (rc != 0) {
    snprintf(why, why_size, "device setup: %s", gpu_mem_error());
    dh_case_destroy(c);
    return -1;
  }
  return 0;
}

void dh_case_destroy(dh_case *c) {
  if (c == NULL) return;
  ingot_plan_destroy(c->plan);
  gpu_free(c->dq), gpu_free(c->d_o), gpu_free(c->dk), gpu_free(c->dv), gpu_free(c->dlens);
  gpu_free(c->dlse), gpu_free(c->dpt), gpu_free(c->dws);
  free(c->q), free(c->o), free(c->k), free(c->v), free(c->lse), free(c->ref_o), free(c->ref_lse);
  free(c->lens), free(c->valid), free(c->pt), free(c->page_map);
  memset(c, 0, sizeof *c);
}

/* Uploads K and V of positions [from, to) of sequence b, one copy per run of
 * consecutive slots. */
static int upload_tokens(dh_case *c, int b, int from, int to) {
  const size_t bytes = c->tok * 2;
  int pos = from;
  while (pos < to) {
    const int64_t first = slot_of(c, b, pos);
    int n = 1;
    while (pos + n < to && slot_of(c, b, pos + n) == first + n) ++n;
    const size_t off = (size_t)first * c->tok;
    if (gpu_upload((char *)c->dk + off * 2, c->k + off, (size_t)n * bytes) != 0 ||
        gpu_upload((char *)c->dv + off * 2, c->v + off, (size_t)n * bytes) != 0)
      return -1;
    pos += n;
  }
  return 0;
}

int dh_set_lengths(dh_case *c, const int32_t *lens) {
  const int cap = c->s.capacity, ps = c->s.page_size;
  for (int b = 0; b < c->s.batch; ++b) {
    const int len = lens[b] < 0 ? 0 : (lens[b] > cap ? cap : lens[b]);
    const int old = c->valid[b];
    if (len > old) {
      for (int pos = old; pos < len; ++pos) write_token(c, b, pos);
      if (upload_tokens(c, b, old, len) != 0) goto fail;
    } else if (len < old && c->tail == DH_TAIL_POISON) {
      uint64_t r = stream_for(c->seed, 0xBAD, (uint64_t)b * 1000003u + (uint64_t)len);
      for (int pos = len; pos < old; ++pos) write_unused(c, (size_t)slot_of(c, b, pos), &r);
      if (upload_tokens(c, b, len, old) != 0) goto fail;
    }
    c->valid[b] = len;
    c->lens[b] = lens[b];
    if (ps > 0 && c->tail == DH_TAIL_POISON) {
      const int used = (len + ps - 1) / ps;
      uint64_t r = stream_for(c->seed, 0xFA6E, (uint64_t)b * 7919u + (uint64_t)len);
      for (int p = 0; p < c->pages_per_seq; ++p)
        c->pt[(size_t)b * c->pages_per_seq + p] =
            p < used ? c->page_map[(size_t)b * c->pages_per_seq + p] : garbage_page(&r, c->num_pages);
    }
  }
  if (gpu_upload(c->dlens, c->lens, (size_t)c->s.batch * 4) != 0) goto fail;
  if (ps > 0 && gpu_upload(c->dpt, c->pt, c->n_pt * 4) != 0) goto fail;
  return 0;
fail:
  fprintf(stderr, "FAIL: setting lengths: %s\n", gpu_mem_error());
  return -1;
}

/* NaN over O and LSE (a replay that keeps the workspace, as a serving engine does). */
int dh_poison_results(dh_case *c) {
  if (gpu_memset8(c->d_o, 0xFF, c->n_q * 2) != 0 || (c->dlse != NULL && gpu_memset8(c->dlse, 0xFF, c->n_lse * 4) != 0)) {
    fprintf(stderr, "FAIL: poisoning outputs: %s\n", gpu_mem_error());
    return -1;
  }
  return 0;
}

/* NaN over O, LSE and the workspace before every execute: no execute may
 * lean on what an earlier one left in the workspace. */
int dh_poison_outputs(dh_case *c) {
  if (dh_poison_results(c) != 0) return -1;
  if (c->ws_size > 0 && gpu_memset8(c->dws, 0xFF, c->ws_size) != 0) {
    fprintf(stderr, "FAIL: poisoning outputs: %s\n", gpu_mem_error());
    return -1;
  }
  return 0;
}

ingot_attention_buffers dh_buffers(const dh_case *c) {
  const ingot_attention_buffers buf = {c->dq, c->dk, c->dv, c->d_o, (float *)c->dlse,
                                       (const int32_t *)c->dlens,
                                       c->s.page_size > 0 ? (const int32_t *)c->dpt : NULL};
  return buf;
}

int dh_execute(dh_case *c, void *stream) {
  if (dh_poison_outputs(c) != 0) return -1;
  const ingot_attention_buffers buf = dh_buffers(c);
  char err[1024] = "";
  ingot_status st = ingot_plan_execute_ex(c->plan, stream, &buf, c->dws, c->ws_size, err, sizeof err);
  if (st != INGOT_OK) {
    char d[160];
    fprintf(stderr, "FAIL: ingot_plan_execute (%s): %s: %s\n", dh_describe(c, d, sizeof d),
            ingot_status_string(st), err);
    return -1;
  }
  if (gpu_stream_sync(stream) != 0) {
    fprintf(stderr, "FAIL: after execute (kernel %s): %s\n", ingot_plan_kernel_name(c->plan),
            gpu_mem_error());
    return -1;
  }
  return 0;
}

size_t dh_check(dh_case *c, const char *label, dh_stats *st) {
  if (gpu_download(c->o, c->d_o, c->n_q * 2) != 0 ||
      (c->dlse != NULL && gpu_download(c->lse, c->dlse, c->n_lse * 4) != 0)) {
    fprintf(stderr, "FAIL [%s]: download: %s\n", label, gpu_mem_error());
    st->failed++;
    return 1;
  }
  return dh_check_host(c, c->o, c->dlse != NULL ? c->lse : NULL, label, st);
}

size_t dh_check_host(dh_case *c, const uint16_t *o, const float *lse, const char *label,
                     dh_stats *st) {
  const int rc = ingot_reference_decode(&c->g, c->q, c->k, c->v, c->lens,
                                        c->s.page_size > 0 ? c->pt : NULL, c->ref_o, c->ref_lse);
  if (rc != 0) {
    fprintf(stderr, "FAIL [%s]: the reference refused the case (%d)\n", label, rc);
    st->failed++;
    return 1;
  }
  const int D = c->s.head_dim, Hq = c->s.num_q_heads, Sq = c->s.seq_q;
  double max_err = 0;
  size_t failures = ingot_reference_compare(o, c->s.dtype, c->ref_o, c->n_q, DH_ATOL, DH_RTOL,
                                            &max_err);
  int printed = 0;
  /* Where are they, and rows without a visible key must be exactly 0. */
  for (size_t row = 0; row < c->n_lse; ++row) {
    const int empty = isinf(c->ref_lse[row]) && c->ref_lse[row] < 0;
    for (int d = 0; d < D; ++d) {
      const size_t i = row * D + d;
      const double got = ingot_ref_to_float(o[i], c->s.dtype), want = c->ref_o[i];
      const int bad = !(fabs(got - want) <= DH_ATOL + DH_RTOL * fabs(want));
      const int nonzero = empty && (o[i] & 0x7fff) != 0;
      if (nonzero && !bad) ++failures; /* a bad value was counted by the compare */
      if ((bad || nonzero) && printed < 8) {
        ++printed;
        fprintf(stderr, "FAIL [%s] O[b=%zu h=%zu i=%zu d=%d] = %.6g, reference %.6g%s\n", label,
                row / ((size_t)Hq * Sq), row / Sq % Hq, row % Sq, d, got, want,
                nonzero ? " (a row with no visible key must be exactly 0)" : "");
      }
    }
  }
  size_t compared = c->n_q;
  if (lse != NULL) {
    for (size_t row = 0; row < c->n_lse; ++row) {
      const double want = c->ref_lse[row], got = lse[row];
      int bad;
      if (isinf(want)) {
        bad = !(isinf(got) && got < 0);
      } else {
        const double e = fabs(got - want);
        bad = !(e <= DH_ATOL + DH_RTOL * fabs(want));
        if (!(e <= max_err)) max_err = isnan(e) ? INFINITY : e;
      }
      if (bad) {
        ++failures;
        if (printed++ < 8)
          fprintf(stderr, "FAIL [%s] LSE[b=%zu h=%zu i=%zu] = %.6g, reference %.6g\n", label,
                  row / ((size_t)Hq * Sq), row / Sq % Hq, row % Sq, got, want);
      }
    }
    compared += c->n_lse;
  }
  if (failures > 0)
    fprintf(stderr, "FAIL [%s]: %zu of %zu values out of tolerance (kernel %s, %d splits, scale %.4g)\n",
            label, failures, compared, ingot_plan_kernel_name(c->plan),
            ingot_plan_num_splits(c->plan), (double)c->g.scale);
  st->compared += compared;
  st->failed += failures;
  if (!(max_err <= st->max_err)) st->max_err = max_err;
  return failures;
}

/* ---- the pack's kernels -------------------------------------------------------------- */

static json_t *load_json(const char *dir, const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  json_error_t jerr;
  json_t *j = json_load_file(path, 0, &jerr);
  if (j == NULL) fprintf(stderr, "%s:%d: %s\n", path, jerr.line, jerr.text);
  return j;
}

static int ends_with(const char *s, const char *suffix) {
  const size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* From the constraints of the UMDs in `ids` (graph- and kernel-scope), a heads
 * pair with this group, the smallest page size allowed and the capacity range. */
static void hints_from_umds(json_t *umds, json_t *ids, dh_kernel *k) {
  size_t i;
  json_t *id;
  json_array_foreach(ids, i, id) {
    json_t *umd = json_object_get(umds, json_string_value(id));
    size_t j;
    json_t *c;
    json_array_foreach(json_object_get(umd, "constraints"), j, c) {
      const char *field = json_string_value(json_object_get(c, "field"));
      const char *op = json_string_value(json_object_get(c, "op"));
      if (field == NULL || op == NULL) continue;
      if (strcmp(field, "heads") == 0 && strcmp(op, "in") == 0 && k->heads[0] == 0) {
        size_t n;
        json_t *pair;
        json_array_foreach(json_object_get(c, "values"), n, pair) {
          const int hq = (int)json_integer_value(json_array_get(pair, 0));
          const int hkv = (int)json_integer_value(json_array_get(pair, 1));
          if (hkv > 0 && hq % hkv == 0 && hq / hkv == k->group) {
            k->heads[0] = hq, k->heads[1] = hkv;
            break;
          }
        }
      }
      if (strcmp(field, "capacity") == 0 && strcmp(op, "range") == 0) {
        const json_int_t lo = json_integer_value(json_object_get(c, "min"));
        const json_int_t hi = json_integer_value(json_object_get(c, "max"));
        if (lo > k->capacity[0]) k->capacity[0] = lo > INT32_MAX ? INT32_MAX : (int)lo;
        if (hi < k->capacity[1]) k->capacity[1] = hi < 0 ? 0 : (int)hi;
      }
      if (strcmp(field, "page_size") == 0) {
        int best = 0;
        if (strcmp(op, "in") == 0) {
          size_t n;
          json_t *v;
          json_array_foreach(json_object_get(c, "values"), n, v) {
            const int p = (int)json_integer_value(v);
            if (p > 0 && (best == 0 || p < best)) best = p;
          }
        } else if (strcmp(op, "range") == 0) {
          best = 1;
          while (best < json_integer_value(json_object_get(c, "min"))) best <<= 1;
        } else if (strcmp(op, "eq") == 0) {
          best = (int)json_integer_value(json_object_get(c, "value"));
        }
        if (best > 0 && (k->page_size == 0 || best > k->page_size)) k->page_size = best;
      }
    }
  }
}

int dh_pack_kernels(const char *pack_dir, const char *arch, dh_kernel **out) {
  *out = NULL;
  DIR *dir = opendir(pack_dir);
  if (dir == NULL) {
    fprintf(stderr, "cannot open pack folder %s\n", pack_dir);
    return -1;
  }
  json_t *kdp = NULL, *umds = json_object();
  struct dirent *e;
  int kdp_count = 0;
  while ((e = readdir(dir)) != NULL) {
    if (ends_with(e->d_name, ".kdp.json")) {
      json_decref(kdp);
      kdp = load_json(pack_dir, e->d_name);
      ++kdp_count;
    } else if (ends_with(e->d_name, ".umd.json")) {
      json_t *u = load_json(pack_dir, e->d_name);
      const char *id = json_string_value(json_object_get(u, "id"));
      if (id != NULL) json_object_set(umds, id, u);
      json_decref(u);
    }
  }
  closedir(dir);
  json_t *list = json_object_get(kdp, "kernelDescriptors");
  if (kdp_count != 1 || !json_is_array(list)) {
    fprintf(stderr, "%s: expected one packaged *.kdp.json with kernelDescriptors (found %d)\n",
            pack_dir, kdp_count);
    json_decref(kdp), json_decref(umds);
    return -1;
  }
  const size_t n = json_array_size(list);
  dh_kernel *ks = calloc(n + 1, sizeof *ks);
  if (ks == NULL) {
    json_decref(kdp), json_decref(umds);
    return -1;
  }
  size_t i;
  json_t *kd;
  json_array_foreach(list, i, kd) {
    dh_kernel *k = &ks[i];
    json_t *m = json_object_get(kd, "metadata");
    snprintf(k->name, sizeof k->name, "%s", json_string_value(json_object_get(kd, "name")) ? json_string_value(json_object_get(kd, "name")) : "?");
    const char *dt = json_string_value(json_object_get(m, "dtype"));
    k->dtype = dt && strcmp(dt, "fp16") == 0 ? INGOT_DTYPE_FP16 : INGOT_DTYPE_BF16;
    k->head_dim = (int)json_integer_value(json_object_get(m, "head_dim"));
    k->group = (int)json_integer_value(json_object_get(m, "group"));
    k->max_sq = (int)json_integer_value(json_object_get(m, "max_sq"));
    k->max_splits = (int)json_integer_value(json_object_get(m, "max_splits"));
    k->rows = (int)json_integer_value(json_object_get(m, "rows"));
    k->waves = (int)json_integer_value(json_object_get(m, "waves"));
    k->tokens_per_wave = (int)json_integer_value(json_object_get(m, "tokens_per_wave"));
    k->row_waves = json_is_true(json_object_get(m, "row_waves"));
    const char *layout = json_string_value(json_object_get(m, "kv_layout"));
    k->paged = layout && strcmp(layout, "paged") == 0;
    k->lse = json_is_true(json_object_get(m, "lse"));
    json_t *objects = json_object_get(json_object_get(kd, "kernel_source"), "objects");
    k->has_arch = arch == NULL || json_object_get(objects, arch) != NULL;
    k->capacity[0] = 1, k->capacity[1] = INT32_MAX;
    hints_from_umds(umds, json_object_get(kdp, "matchers"), k);
    hints_from_umds(umds, json_object_get(kd, "matchers"), k);
    if (k->paged && k->page_size == 0) k->page_size = 16;
    if (k->head_dim <= 0 || k->group <= 0 || k->max_sq <= 0) {
      fprintf(stderr, "%s: kernel %s has incomplete metadata\n", pack_dir, k->name);
      free(ks);
      json_decref(kdp), json_decref(umds);
      return -1;
    }
  }
  json_decref(kdp), json_decref(umds);
  *out = ks;
  return (int)n;
}

dh_shape dh_shape_for_kernel(const dh_kernel *k, int capacity, ingot_mask mask) {
  static const int known[][2] = {{8, 8}, {8, 2}, {32, 8}, {64, 8}, {16, 2}, {32, 4}, {16, 4}};
  dh_shape s;
  memset(&s, 0, sizeof s);
  s.dtype = k->dtype;
  s.head_dim = k->head_dim;
  s.num_q_heads = k->heads[0];
  s.num_kv_heads = k->heads[1];
  for (size_t i = 0; s.num_kv_heads == 0 && i < sizeof known / sizeof known[0]; ++i)
    if (known[i][0] / known[i][1] == k->group) s.num_q_heads = known[i][0], s.num_kv_heads = known[i][1];
  if (s.num_kv_heads == 0) s.num_q_heads = k->group, s.num_kv_heads = 1;
  s.batch = 2;
  s.seq_q = k->max_sq;
  s.capacity = capacity;
  s.page_size = k->paged ? k->page_size : 0;
  s.mask = mask;
  s.lse = k->lse;
  return s;
}

int dh_case_for_kernel(dh_case *c, ingot_context *ctx, const dh_kernel *k, ingot_mask mask, int top_left,
                       int sq, uint64_t seed, dh_tail tail, char *why, size_t why_size) {
  const int page = k->paged ? k->page_size : 1;
  /* capacities inside the kernel's own range (whole pages), smallest first */
  const int lo = k->capacity[0] > 2 * page ? k->capacity[0] : 2 * page;
  int caps[4] = {256, 4096, 8192, 65536};
  for (int i = 0; i < 4; ++i) {
    if (caps[i] < lo) caps[i] = (int)(((int64_t)lo + page - 1) / page * page);
    if (caps[i] > k->capacity[1]) caps[i] = k->capacity[1] / page * page;
  }
  /* Batch 32 last: the row-wave kernels share a rank with the group-16 rings in row blocks
   * and are chosen only once the batch fills the device (decision 0033), at most 4 x 64K tokens
   * of reference work. */
  static const int batches[] = {2, 4, 12, 16, 32};
  /* Each graph is planned without buffers first; only the one that runs gets them. */
  dh_shape first, pick;
  int rc = -1, have_first = 0, have_pick = 0, failed = 0;
  for (int i = 0; i < 4 && !have_pick && !failed; ++i) {
    for (int j = 0; j < 5 && !have_pick && !failed; ++j) {
      dh_shape s = dh_shape_for_kernel(k, caps[i], mask);
      s.top_left = top_left;
      s.seq_q = sq;
      s.batch = batches[j];
      /* within batch 2 x 64K of reference work (4 x 64K at batch 32) */
      if (j > 0 && (int64_t)s.batch * s.capacity > (s.batch == 32 ? 4 : 2) * 65536) continue;
      rc = dh_case_plan(c, ctx, &s, seed, tail, why, why_size);
      if (rc == (int)INGOT_NO_MATCH) continue;
      if (rc != 0) { /* a planning failure is reported, not passed over for the next graph */
        failed = 1;
        break;
      }
      if (strcmp(ingot_plan_kernel_name(c->plan), k->name) == 0) pick = s, have_pick = 1;
      if (!have_first) first = s, have_first = 1;
      ingot_plan_destroy(c->plan);
      memset(c, 0, sizeof *c);
    }
  }
  if (!failed && (have_pick || have_first))
    rc = dh_case_create(c, ctx, have_pick ? &pick : &first, seed, tail, why, why_size);
  if (rc != 0) {
    char reason[2048];
    snprintf(reason, sizeof reason, "%s", why);
    snprintf(why, why_size, "no plan for a graph of kernel %s (mask %d, Sq %d): %s", k->name,
             (int)mask, sq, reason);
    return -1;
  }
  return 0;
}

const dh_kernel *dh_find_kernel(const dh_kernel *ks, int n, int paged, int min_sq, int want_lse) {
  const dh_kernel *best = NULL;
  int best_score = -1;
  for (int i = 0; i < n; ++i) {
    const dh_kernel *k = &ks[i];
    if (!k->has_arch || k->paged != paged || k->max_sq < min_sq) continue;
    const int score = 16 * (k->capacity[0] <= 64) + 8 * (k->dtype == INGOT_DTYPE_BF16) +
                      4 * (k->head_dim == 128) + 2 * (k->group == 4) + (k->lse == want_lse);
    if (score > best_score) best = k, best_score = score;
  }
  return best;
}

const dh_kernel *dh_kernel_named(const dh_kernel *ks, int n, const char *name) {
  for (int i = 0; name != NULL && i < n; ++i)
    if (strcmp(ks[i].name, name) == 0) return &ks[i];
  return NULL;
}
