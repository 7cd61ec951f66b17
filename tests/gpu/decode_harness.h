/* decode_harness.h: what every GPU test of attention decode shares. A "case" is
 * one graph with its host and device buffers, fresh random inputs and a plan;
 * tests move its valid lengths, execute it with poisoned outputs, and check the
 * results against the CPU reference (tests/common/reference.h).
 *
 * Token data come from a hash of (seed, sequence, position), so two cases with
 * the same seed and shape hold the same logical K/V whatever their layout
 * (contiguous or paged): that is how paged is compared with contiguous bit for
 * bit. Only the public ingot API and gpu_mem.h touch the device. */
#ifndef INGOT_TESTS_DECODE_HARNESS_H
#define INGOT_TESTS_DECODE_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "ingot/ingot.h"

#define DH_ATOL 0.015
#define DH_RTOL 0.015

/* The shape of one attention decode graph. */
typedef struct dh_shape {
  ingot_dtype dtype; /* bf16 or fp16 */
  int head_dim;
  int num_q_heads, num_kv_heads;
  int batch, seq_q;
  int capacity;
  int page_size; /* 0: contiguous KV; else paged with pages of this many tokens */
  ingot_mask mask;
  int top_left; /* causal aligned top-left (query i sees keys <= i), else bottom-right */
  int lse; /* the graph has an LSE output */
} dh_shape;

/* What the unused capacity of K and V holds. */
typedef enum dh_tail {
  DH_TAIL_RANDOM = 0, /* finite random values, like a reused cache */
  DH_TAIL_POISON = 1  /* NaN, +Inf and random bit patterns; paged: garbage page-table
                         entries past each length */
} dh_tail;

typedef struct dh_case {
  dh_shape s;
  dh_tail tail;
  uint64_t seed;
  ingot_attention_graph g;
  ingot_plan *plan;
  size_t ws_size;
  /* sizes in elements */
  size_t n_q, n_kv, n_lse, n_pt, tok; /* tok = Hkv * D: one token of one sequence */
  int pages_per_seq, num_pages;
  /* host copies of what the device holds */
  uint16_t *q, *k, *v, *o;
  float *lse;
  int32_t *lens;     /* as written to the device (may be < 0 or > capacity) */
  int32_t *pt;       /* page table as written to the device */
  int32_t *page_map; /* the true page of each (sequence, page index) */
  int32_t *valid;    /* per sequence: positions [0, valid) hold token data */
  float *ref_o, *ref_lse;
  /* device */
  void *dq, *dk, *dv, *d_o, *dlse, *dlens, *dpt, *dws;
} dh_case;

/* Totals of one test. */
typedef struct dh_stats {
  size_t compared; /* values compared (O elements and LSE values) */
  size_t failed;
  double max_err;
  int executes;
} dh_stats;

/* ---- test program setup ---- */

/* Seed from INGOT_TEST_SEED, else fresh; printed with the test name. */
uint64_t dh_seed(const char *test_name);
/* Creates the CUDA context (exit 77 when the driver or device is missing),
 * starts gpu_mem, opens the pack (argv[1], else the build's default). Exits 1 on
 * any other failure. */
ingot_context *dh_open(int argc, char **argv, const char *test_name, const char **pack_dir);
/* dh_open for code objects of `arch` the device runs other than its own
 * (ingot_context_set_arch before the pack opens; NULL: the device's own). */
ingot_context *dh_open_arch(int argc, char **argv, const char *test_name, const char *arch,
                            const char **pack_dir);
void dh_close(ingot_context *ctx);
/* Prints the summary line and returns the exit code (0 pass, 1 fail). */
int dh_finish(const char *test_name, const dh_stats *st, int other_failures);

/* ---- a test program's session ---- */

typedef struct dh_kernel dh_kernel;

/* What every GPU test's main() starts with: the context on the pack, the seed,
 * the pack's kernels for the device's arch, a stream, and the totals. */
typedef struct dh_session {
  ingot_context *ctx;
  const char *pack_dir;
  uint64_t seed;
  dh_kernel *kernels;
  int num_kernels;
  void *stream;
  dh_stats stats;
} dh_session;

/* dh_open, dh_seed, dh_pack_kernels and a stream. Exits 77 without CUDA (as
 * dh_open), 1 with the reason when the pack has no kernels or no stream is made. */
void dh_session_open(dh_session *s, int argc, char **argv, const char *test_name);
/* The same on dh_open_arch: the session's kernels are those built for arch. */
void dh_session_open_arch(dh_session *s, int argc, char **argv, const char *test_name, const char *arch);
/* Destroys the stream, frees the kernels, closes the context; then dh_finish on
 * the session's totals. */
int dh_session_close(dh_session *s, const char *test_name, int other_failures);
/* What dh_session_close frees (stream, kernels, context), without the summary line:
 * for a test that stops early with its own SKIP line. */
void dh_session_release(dh_session *s);
/* dh_find_kernel over the session's kernels. With failures given, a missing
 * contiguous kernel is a failure (printed, counted there); a missing paged one
 * is not (a pack may have no paged kernels). */
const dh_kernel *dh_session_kernel(const dh_session *s, int paged, int min_sq, int want_lse,
                                   int *failures);

/* ---- cases ---- */

/* Builds the graph, plans it, allocates and fills every buffer (lengths 0).
 * Returns 0; INGOT_NO_MATCH's status value when no kernel admits the graph (the
 * decline report is in why); -1 on any other failure (message in why). */
int dh_case_create(dh_case *c, ingot_context *ctx, const dh_shape *s, uint64_t seed, dh_tail tail,
                   char *why, size_t why_size);
/* The first half of dh_case_create: the sizes, the graph and its plan, no buffers
 * (works on a host context). Returns as dh_case_create; dh_case_destroy frees it. */
int dh_case_plan(dh_case *c, ingot_context *ctx, const dh_shape *s, uint64_t seed, dh_tail tail, char *why,
                 size_t why_size);
void dh_case_destroy(dh_case *c);
/* Sets every sequence's valid length (raw values go to the device; K/V data is
 * written for the positions that become valid, poison over those that stop
 * being valid, and only the changed tokens are uploaded). 0 or -1. */
int dh_set_lengths(dh_case *c, const int32_t *lens);
/* Poisons O, LSE and the workspace, executes on stream, waits for it. 0 or -1 (message printed). */
int dh_execute(dh_case *c, void *stream);
/* The parts of dh_execute: fill O, LSE and the workspace with NaN (0xFF bytes)
 * and wait; the buffers of the case as the API takes them. dh_poison_results:
 * O and LSE only (the workspace kept, as a serving engine's is). */
int dh_poison_outputs(dh_case *c);
int dh_poison_results(dh_case *c);
ingot_attention_buffers dh_buffers(const dh_case *c);
/* Downloads O (and LSE), compares with the reference; adds to st. Returns the
 * number of failures in this check (printing the first few). */
size_t dh_check(dh_case *c, const char *label, dh_stats *st);
/* As dh_check, against host copies of O/LSE the caller downloaded itself. */
size_t dh_check_host(dh_case *c, const uint16_t *o, const float *lse, const char *label,
                     dh_stats *st);
/* A printable description of the case ("bf16 D128 8/2 B2 Sq1 cap1024 paged16 causal lse"). */
const char *dh_describe(const dh_case *c, char *buf, size_t size);

/* ---- the pack's kernels (from the packaged KDP) ---- */

struct dh_kernel {
  char name[160];
  ingot_dtype dtype;
  int head_dim, group, max_sq, max_splits, paged, lse;
  int rows, waves, tokens_per_wave, row_waves; /* tiling: equal tiling and splits give equal bits */
  int has_arch; /* the kernel has a code object for the context's arch */
  int heads[2]; /* a (Hq, Hkv) pair the pack admits with this group; 0 when unknown */
  int page_size; /* a page size the pack admits (paged kernels) */
  int capacity[2]; /* the capacities its UMDs admit, inclusive */
};

/* Tokens a workgroup of kernel k takes per step: every wave's chunk, or one chunk
 * for all its waves under row_waves. */
static inline int dh_kernel_tile(const dh_kernel *k) {
  return (k->row_waves ? 1 : k->waves) * k->tokens_per_wave;
}

/* Reads the pack folder's packaged KDP (<pack>.kdp.json) and its UMDs. Returns the count (>= 0) or -1. */
int dh_pack_kernels(const char *pack_dir, const char *arch, dh_kernel **out);
/* The shape that should select kernel k (Sq = max_sq, its dtype/D/group/layout). */
dh_shape dh_shape_for_kernel(const dh_kernel *k, int capacity, ingot_mask mask);

/* A case whose plan picks kernel k (dh_shape_for_kernel with this mask and Sq), trying a few
 * capacities inside the kernel's range (256, 4096, 65536, clamped) and batch sizes (2, 4, 16:
 * kernels of one rank split the graphs between them by the plan's model). Falls back to the
 * first graph that plans at all, so the caller compares the plan's kernel with k. 0, or -1
 * with the reason in why. */
int dh_case_for_kernel(dh_case *c, ingot_context *ctx, const dh_kernel *k, ingot_mask mask, int top_left, int sq,
                       uint64_t seed, dh_tail tail, char *why, size_t why_size);

/* The kernel a workflow test should use: paged or not, max_sq >= min_sq,
 * preferring one that admits capacity 64 (the tests' range starts there), then
 * bf16, D 128, group 4, with LSE when want_lse; NULL when none. */
const dh_kernel *dh_find_kernel(const dh_kernel *ks, int n, int paged, int min_sq, int want_lse);
/* The kernel of that name, or NULL. */
const dh_kernel *dh_kernel_named(const dh_kernel *ks, int n, const char *name);

/* Random integers for the tests (xorshift64*, seeded once per program). */
uint64_t dh_rand(void);
int dh_rand_range(int lo, int hi); /* inclusive */

#endif
