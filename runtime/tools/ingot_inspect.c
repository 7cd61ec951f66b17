/* ingot-inspect: look at packs and graphs through the runtime.
 *
 *   ingot-inspect census PACKDIR...                       every kernel, its archs,
 *                                                         metadata, resources and
 *                                                         dynamic LDS (where any)
 *   ingot-inspect match GRAPH.json PACKDIR... [--arch A]  chosen kernel and plan,
 *                                                         or every decline (exit 1)
 *   ingot-inspect run GRAPH.json PACKDIR... [--seed N]    execute on CUDA device 0
 *                                                         against the CPU reference
 *   ingot-inspect sign --key PRIVATE.pem PACKDIR          writes <pack>.kdp.json.sig,
 *                                                         the Ed25519 signature of the KDP
 *   ingot-inspect verify --key PUBLIC.pem PACKDIR...      opens the packs requiring it
 * Exit: 0 ok, 1 no match / mismatch, 2 bad input or error, 77 no driver (run).
 * The CUDA memory calls `run` needs come from the runtime's driver symbol
 * table (cuda_driver.h), loaded here; they are inspect-only and not part of the
 * backend vtable. */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "cuda_driver.h"
#include "ingot/ingot.h"
#include "internal.h"
#ifdef INGOT_HAVE_REFERENCE
#include "reference.h"
#endif

#define EXIT_NO_MATCH 1
#define EXIT_ERROR 2
#define EXIT_SKIP 77
#define MAX_GRAPH_BYTES ((size_t)1 << 20)

static int usage(void) {
  fprintf(stderr,
          "usage: ingot-inspect census PACKDIR...\n"
          "       ingot-inspect match GRAPH.json PACKDIR... [--arch ARCH]\n"
          "       ingot-inspect run GRAPH.json PACKDIR... [--seed N]\n"
          "       ingot-inspect sign --key PRIVATE.pem PACKDIR\n"
          "       ingot-inspect verify --key PUBLIC.pem PACKDIR...\n");
  return EXIT_ERROR;
}

static int read_graph(const char *path, ingot_attention_graph *g) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, "%s: cannot open\n", path);
    return 0;
  }
  char *text = malloc(MAX_GRAPH_BYTES + 1);
  size_t n = text ? fread(text, 1, MAX_GRAPH_BYTES + 1, f) : 0;
  fclose(f);
  if (text == NULL || n > MAX_GRAPH_BYTES) {
    fprintf(stderr, "%s: %s (allowed: at most %zu bytes)\n", path, text ? "too large" : "out of memory",
            MAX_GRAPH_BYTES);
    free(text);
    return 0;
  }
  char err[512];
  ingot_status s = ingot_graph_from_json(text, n, g, err, sizeof err);
  free(text);
  if (s != INGOT_OK) {
    fprintf(stderr, "%s: %s\n", path, err);
    return 0;
  }
  return 1;
}

static int open_packs(ingot_context *ctx, char **dirs, int n) {
  for (int i = 0; i < n; ++i) {
    ingot_status s = ingot_context_open_pack(ctx, dirs[i]);
    if (s != INGOT_OK) {
      fprintf(stderr, "%s: %s\n%s\n", dirs[i], ingot_status_string(s), ingot_context_last_error(ctx));
      return 0;
    }
  }
  return 1;
}

/* ---- census ------------------------------------------------------------------- */

static void print_json_line(const char *label, json_t *v) {
  char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
  printf("%s%s\n", label, s ? s : "?");
  free(s);
}

static int cmd_census(int argc, char **argv) {
  if (argc < 1) return usage();
  ingot_context *ctx;
  if (ingot_context_create_host(NULL, &ctx) != INGOT_OK) return EXIT_ERROR;
  if (!open_packs(ctx, argv, argc)) {
    ingot_context_destroy(ctx);
    return EXIT_ERROR;
  }
  size_t objects = 0;
  for (size_t p = 0; p < ctx->num_packs; ++p) {
    const ingot_pack *pack = ctx->packs[p];
    printf("pack %s (%s): %zu kernels, archs", pack->name, pack->dir, pack->num_kernels);
    for (size_t a = 0; a < pack->num_archs; ++a) printf(" %s", pack->archs[a]);
    printf("\n");
    json_t *kds = json_object_get(pack->kdp, "kernelDescriptors");
    for (size_t i = 0; i < pack->num_kernels; ++i) {
      const ingot_kernel *k = &pack->kernels[i];
      printf("kernel %s  priority %lld  archs", k->name, (long long)k->priority);
      for (size_t o = 0; o < k->num_objects; ++o) printf(" %s", k->objects[o].arch);
      printf("\n");
      print_json_line("  metadata: ", k->metadata);
      json_t *objs = json_object_get(json_object_get(json_array_get(kds, i), "kernel_source"), "objects");
      for (size_t o = 0; o < k->num_objects; ++o) {
        json_t *obj = json_object_get(objs, k->objects[o].arch);
        json_t *res = json_object_get(obj, "resources");
        const char *entry;
        json_t *r;
        json_object_foreach(res, entry, r) {
          char label[128];
          snprintf(label, sizeof label, "  %s %s: ", k->objects[o].arch, entry);
          print_json_line(label, r);
        }
        /* bytes of dynamic shared memory the entry points are launched with, where any */
        int dynamic = 0;
        for (size_t e = 0; e < pack->num_entry_points; ++e) dynamic |= k->objects[o].dynamic_lds[e] != 0;
        if (dynamic) {
          char label[128];
          snprintf(label, sizeof label, "  %s dynamic_lds: ", k->objects[o].arch);
          print_json_line(label, json_object_get(obj, "dynamic_lds"));
        }
        ++objects;
      }
    }
  }
  printf("census: %zu packs, %zu kernels, %zu code objects\n", ctx->num_packs, ingot_context_kernel_count(ctx),
         objects);
  printf("limits: %d kernels per pack, descriptors <= %zu bytes each and %d files, %zu bytes per pack, code "
         "objects <= %zu bytes\n", INGOT_MAX_KERNELS_PER_PACK, INGOT_MAX_DESCRIPTOR_BYTES, INGOT_MAX_DESCRIPTOR_FILES,
         INGOT_MAX_DESCRIPTOR_TOTAL_BYTES, INGOT_MAX_CODE_OBJECT_BYTES);
  printf("all packs verified (schema, references, sha256 of descriptors and code objects, kernarg signatures, "
         "entry-point symbols)\n");
  ingot_context_destroy(ctx);
  return 0;
}

/* ---- match ---------------------------------------------------------------------- */

static void print_plan(const ingot_plan *plan) {
  const ingot_dispatch_plan *d = ingot_plan_dispatch_info(plan);
  const ingot_kernel *k = plan->kernel;
  printf("kernel: %s\n", ingot_plan_kernel_name(plan));
  printf("pack: %s\n", k->pack->name);
  printf("splits: %d\n", ingot_plan_num_splits(plan));
  printf("workspace: %zu bytes\n", ingot_plan_workspace_size(plan));
  printf("launches: %d\n", ingot_plan_launch_count(plan));
  for (int i = 0; i < d->num_launches; ++i) {
    const ingot_launch *l = &d->launches[i];
    printf("  %d: %s grid (%u, %u, %u) block (%u, %u, %u) dynamic lds %u\n", i, k->symbols[l->entry],
           l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2], l->lds_bytes);
  }
  printf("device: wave %d, compute units %d\n", plan->caps.wave_size, plan->caps.compute_units);
  /* the planner's time model, in tile steps of one workgroup (docs/design/planner.md); the attention
   * decode default balances a batch modelled at 100 or more (docs/design/balanced-split.md) */
  printf("modelled: %.2f steps\n", d->cost);
  if (plan->num_considered > 1) {
    printf("considered (one rank: the least modelled time wins by 1%% or more, else fewer waves):\n");
    for (int i = 0; i < plan->num_considered; ++i)
      printf("  %s: %d splits, modelled %.2f%s\n", plan->considered[i].kernel->name, plan->considered[i].splits,
             plan->considered[i].cost, plan->considered[i].kernel == k ? " (chosen)" : "");
  }
}

/* Splits argv into positional arguments and one --name VALUE option. */
static int take_option(int *argc, char **argv, const char *name, const char **value) {
  for (int i = 0; i < *argc; ++i) {
    if (strcmp(argv[i], name) != 0) continue;
    if (i + 1 >= *argc) return 0;
    *value = argv[i + 1];
    for (int j = i; j + 2 < *argc; ++j) argv[j] = argv[j + 2];
    *argc -= 2;
    return 1;
  }
  return 1;
}

static int cmd_match(int argc, char **argv) {
  const char *arch = NULL;
  if (!take_option(&argc, argv, "--arch", &arch) || argc < 2) return usage();
  ingot_attention_graph g;
  if (!read_graph(argv[0], &g)) return EXIT_ERROR;
  ingot_context *ctx;
  if (ingot_context_create_host(arch, &ctx) != INGOT_OK) {
    fprintf(stderr, "--arch %s: not an arch name (allowed: e.g. sm_90, gfx942, gfx950)\n", arch);
    return EXIT_ERROR;
  }
  int rc = EXIT_ERROR;
  if (open_packs(ctx, argv + 1, argc - 1)) {
    ingot_plan *plan;
    ingot_status s = ingot_plan_create(ctx, &g, &plan);
    if (s == INGOT_OK) {
      printf("graph: %s\narch: %s\n", argv[0], arch ? arch : "(any)");
      print_plan(plan);
      ingot_plan_destroy(plan);
      rc = 0;
    } else if (s == INGOT_NO_MATCH) {
      printf("graph: %s\narch: %s\nno match; declines:\n%s", argv[0], arch ? arch : "(any)",
             ingot_context_decline_report(ctx));
      rc = EXIT_NO_MATCH;
    } else {
      fprintf(stderr, "%s: %s\n", ingot_status_string(s), ingot_context_last_error(ctx));
    }
  }
  ingot_context_destroy(ctx);
  return rc;
}

/* ---- run -------------------------------------------------------------------------- */

#ifdef INGOT_HAVE_REFERENCE
static uint64_t rng_next(uint64_t *s) { /* xorshift64* */
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 2685821657736338717ULL;
}
static float rng_unit(uint64_t *s) { return (float)((rng_next(s) >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f; }

/* Elements a strided tensor spans: 1 + sum (dims-1)*strides. */
static size_t extent(const ingot_tensor_desc *t) {
  size_t n = 1;
  for (int i = 0; i < t->rank; ++i) n += (size_t)(t->dims[i] - 1) * (size_t)t->strides[i];
  return n;
}

#define CU(call)                                                                                   \
  do {                                                                                             \
    CUresult r_ = (call);                                                                          \
    if (r_ != CUDA_SUCCESS) {                                                                      \
      fprintf(stderr, "run: %s failed with CUDA error %d\n", #call, r_);                           \
      goto done;                                                                                   \
    }                                                                                              \
  } while (0)

static int cmd_run(int argc, char **argv) {
  const char *seed_arg = NULL;
  if (!take_option(&argc, argv, "--seed", &seed_arg) || argc < 2) return usage();
  uint64_t seed = seed_arg ? strtoull(seed_arg, NULL, 0) : (uint64_t)time(NULL);
  uint64_t rng = seed * 0x9E3779B97F4A7C15ULL + 1;
  ingot_attention_graph g;
  if (!read_graph(argv[0], &g)) return EXIT_ERROR;
  const ingot_dtype dt = g.q.dtype;
  if ((dt != INGOT_DTYPE_BF16 && dt != INGOT_DTYPE_FP16) || g.k.dtype != dt || g.v.dtype != dt || g.o.dtype != dt) {
    fprintf(stderr, "%s: run supports bf16 or fp16 q, k, v and o of one dtype\n", argv[0]);
    return EXIT_ERROR;
  }
  char err[512];
  ingot_context *ctx;
  ingot_status s = ingot_context_create_ex(INGOT_BACKEND_CUDA, 0, &ctx, err, sizeof err);
  if (s == INGOT_UNAVAILABLE) {
    printf("skipped: %s: %s\n", ingot_status_string(s), err);
    return EXIT_SKIP;
  }
  if (s != INGOT_OK) {
    fprintf(stderr, "run: %s: %s\n", ingot_status_string(s), err);
    return EXIT_ERROR;
  }
  int rc = EXIT_ERROR, have_cuda_ctx = 0;
  ingot_plan *plan = NULL;
  ingot_cuda_driver cu;
  enum { Q, K, V, O, LSE, LENS, PAGES, WS, NBUF };
  CUdeviceptr dev[NBUF] = {0};
  void *host[NBUF] = {0};
  size_t bytes[NBUF] = {0};
  float *ref_o = NULL, *ref_lse = NULL;
  uint16_t *out_o = NULL;
  if (!open_packs(ctx, argv + 1, argc - 1)) goto done;
  if ((s = ingot_plan_create(ctx, &g, &plan)) != INGOT_OK) {
    fprintf(stderr, "run: %s: %s\n", ingot_status_string(s), ingot_context_last_error(ctx));
    rc = s == INGOT_NO_MATCH ? EXIT_NO_MATCH : EXIT_ERROR;
    goto done;
  }
  if (ingot_cuda_driver_load(&cu, INGOT_CUDA_INSPECT, err, sizeof err) != INGOT_CUDA_DRIVER_OK) {
    printf("skipped: CUDA memory calls unavailable: %s\n", err);
    rc = EXIT_SKIP;
    goto done;
  }
  CUdevice cudev;
  CUcontext cuctx;
  CU(cu.cuDeviceGet(&cudev, 0));
  CU(cu.cuDevicePrimaryCtxRetain(&cuctx, cudev));
  have_cuda_ctx = 1;
  CU(cu.cuCtxSetCurrent(cuctx));

  const int64_t B = g.q.dims[0], Hq = g.q.dims[1], Sq = g.q.dims[2], D = g.q.dims[3];
  const uint16_t nan16 = dt == INGOT_DTYPE_BF16 ? 0x7fc0 : 0x7e00;
  const ingot_tensor_desc *t16[4] = {&g.q, &g.k, &g.v, &g.o};
  for (int i = Q; i <= O; ++i) bytes[i] = extent(t16[i]) * 2;
  bytes[LSE] = g.lse.rank ? extent(&g.lse) * 4 : 0;
  bytes[LENS] = (size_t)B * 4;
  bytes[PAGES] = g.kv_layout == INGOT_KV_PAGED ? extent(&g.page_table) * 4 : 0;
  bytes[WS] = ingot_plan_workspace_size(plan);
  for (int i = 0; i < NBUF; ++i) {
    if (bytes[i] == 0) continue;
    if ((host[i] = malloc(bytes[i])) == NULL) {
      fprintf(stderr, "run: out of memory (%zu bytes)\n", bytes[i]);
      goto done;
    }
  }
  /* Everything starts as NaN: what the kernel must not read, or must write. */
  for (int i = Q; i <= O; ++i)
    for (size_t e = 0; e < bytes[i] / 2; ++e) ((uint16_t *)host[i])[e] = nan16;
  if (bytes[LSE]) for (size_t e = 0; e < bytes[LSE] / 4; ++e) ((float *)host[LSE])[e] = NAN;
  int32_t *lens = host[LENS];
  for (int64_t b = 0; b < B; ++b) lens[b] = (int32_t)(rng_next(&rng) % (uint64_t)(g.capacity + 1));
  /* q: every element of the tensor */
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h)
      for (int64_t s2 = 0; s2 < Sq; ++s2)
        for (int64_t d = 0; d < D; ++d)
          ((uint16_t *)host[Q])[b * g.q.strides[0] + h * g.q.strides[1] + s2 * g.q.strides[2] + d * g.q.strides[3]] =
              ingot_ref_from_float(rng_unit(&rng), dt);
  /* k, v: contiguous: positions below the valid length; paged: every page */
  for (int i = K; i <= V; ++i) {
    const ingot_tensor_desc *t = t16[i];
    for (int64_t a = 0; a < t->dims[0]; ++a)
      for (int64_t pos = 0; pos < t->dims[1]; ++pos) {
        if (g.kv_layout == INGOT_KV_CONTIGUOUS && pos >= lens[a]) continue;
        for (int64_t h = 0; h < t->dims[2]; ++h)
          for (int64_t d = 0; d < t->dims[3]; ++d)
            ((uint16_t *)host[i])[a * t->strides[0] + pos * t->strides[1] + h * t->strides[2] + d * t->strides[3]] =
                ingot_ref_from_float(rng_unit(&rng), dt);
      }
  }
  if (bytes[PAGES]) { /* random pages below the valid length, garbage past it */
    int32_t *pt = host[PAGES];
    const int64_t page = g.k.dims[1];
    for (size_t e = 0; e < bytes[PAGES] / 4; ++e) pt[e] = INT32_MAX;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t p = 0; p < g.page_table.dims[1]; ++p)
        if (p * page < lens[b])
          pt[b * g.page_table.strides[0] + p * g.page_table.strides[1]] = (int32_t)(rng_next(&rng) % (uint64_t)g.k.dims[0]);
  }
  size_t n_out = (size_t)(B * Hq * Sq * D);
  ref_o = malloc(n_out * sizeof(float));
  ref_lse = g.lse.rank ? malloc((size_t)(B * Hq * Sq) * sizeof(float)) : NULL;
  out_o = malloc(n_out * sizeof(uint16_t));
  if (ref_o == NULL || out_o == NULL || (g.lse.rank && ref_lse == NULL)) goto done;
  int rr = ingot_reference_decode(&g, host[Q], host[K], host[V], lens, host[PAGES], ref_o, ref_lse);
  if (rr != 0) {
    fprintf(stderr, "run: the CPU reference cannot evaluate this graph (code %d)\n", rr);
    goto done;
  }
  for (int i = 0; i < NBUF; ++i) {
    if (bytes[i] == 0) continue;
    CU(cu.cuMemAlloc(&dev[i], bytes[i]));
    if (i != WS) CU(cu.cuMemcpyHtoD(dev[i], host[i], bytes[i]));
  }
  ingot_attention_buffers buf = {(const void *)(uintptr_t)dev[Q], (const void *)(uintptr_t)dev[K],
                                 (const void *)(uintptr_t)dev[V], (void *)(uintptr_t)dev[O],
                                 (float *)(uintptr_t)dev[LSE], (const int32_t *)(uintptr_t)dev[LENS],
                                 (const int32_t *)(uintptr_t)dev[PAGES]};
  s = ingot_plan_execute_ex(plan, NULL, &buf, (void *)(uintptr_t)dev[WS], bytes[WS], err, sizeof err);
  if (s != INGOT_OK) {
    fprintf(stderr, "run: execute: %s: %s\n", ingot_status_string(s), err);
    goto done;
  }
  CU(cu.cuCtxSynchronize());
  CU(cu.cuMemcpyDtoH(host[O], dev[O], bytes[O]));
  if (bytes[LSE]) CU(cu.cuMemcpyDtoH(host[LSE], dev[LSE], bytes[LSE]));
  size_t n = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h)
      for (int64_t s2 = 0; s2 < Sq; ++s2)
        for (int64_t d = 0; d < D; ++d)
          out_o[n++] = ((uint16_t *)host[O])[b * g.o.strides[0] + h * g.o.strides[1] + s2 * g.o.strides[2] +
                                             d * g.o.strides[3]];
  double max_err = 0;
  size_t fails = ingot_reference_compare(out_o, dt, ref_o, n_out, 0.015, 0.015, &max_err);
  size_t lse_fails = 0;
  double lse_err = 0;
  if (g.lse.rank) {
    for (int64_t b = 0, r = 0; b < B; ++b)
      for (int64_t h = 0; h < Hq; ++h)
        for (int64_t s2 = 0; s2 < Sq; ++s2, ++r) {
          float got = ((float *)host[LSE])[b * g.lse.strides[0] + h * g.lse.strides[1] + s2 * g.lse.strides[2]];
          float want = ref_lse[r];
          if (isinf(want) && want < 0) {
            lse_fails += !(isinf(got) && got < 0);
            continue;
          }
          double e = fabs((double)got - want);
          if (!(e <= 0.015 + 0.015 * fabs(want))) ++lse_fails; /* NaN fails */
          if (e > lse_err || isnan(e)) lse_err = e;
        }
  }
  printf("run: graph %s, seed %llu, kernel %s, splits %d, lengths", argv[0], (unsigned long long)seed,
         ingot_plan_kernel_name(plan), ingot_plan_num_splits(plan));
  for (int64_t b = 0; b < B && b < 8; ++b) printf(" %d", lens[b]);
  printf("%s\n", B > 8 ? " ..." : "");
  printf("O: max |err| = %.6g, %zu of %zu outside 0.015 + 0.015*|ref|\n", max_err, fails, n_out);
  if (g.lse.rank) printf("LSE: max |err| = %.6g, %zu failures\n", lse_err, lse_fails);
  rc = fails == 0 && lse_fails == 0 ? 0 : EXIT_NO_MATCH;
  printf("%s\n", rc == 0 ? "PASS" : "FAIL");
done:
  for (int i = 0; i < NBUF; ++i) {
    if (dev[i]) cu.cuMemFree(dev[i]);
    free(host[i]);
  }
  if (have_cuda_ctx) cu.cuDevicePrimaryCtxRelease(0);
  free(ref_o);
  free(ref_lse);
  free(out_o);
  ingot_plan_destroy(plan);
  ingot_context_destroy(ctx);
  return rc;
}
#else
static int cmd_run(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "run: this ingot-inspect was built without the CPU reference (tests/common)\n");
  return EXIT_ERROR;
}
#endif

/* ---- sign / verify -------------------------------------------------------------------- */

/* The pack folder's one *.kdp.json, as "DIR/NAME" in out. */
static int find_kdp(const char *dir, char *out, size_t size) {
  DIR *d = opendir(dir);
  if (d == NULL) {
    fprintf(stderr, "%s: cannot open the folder\n", dir);
    return 0;
  }
  int found = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    size_t n = strlen(de->d_name);
    if (n > 9 && !strcmp(de->d_name + n - 9, ".kdp.json")) {
      ++found;
      snprintf(out, size, "%s/%s", dir, de->d_name);
    }
  }
  closedir(d);
  if (found != 1) fprintf(stderr, "%s: %d *.kdp.json files (allowed: exactly one, a packaged pack folder)\n", dir, found);
  return found == 1;
}

static EVP_PKEY *read_key(const char *path, int private_key) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, "%s: cannot open\n", path);
    return NULL;
  }
  EVP_PKEY *k = private_key ? PEM_read_PrivateKey(f, NULL, NULL, NULL) : PEM_read_PUBKEY(f, NULL, NULL, NULL);
  fclose(f);
  if (k == NULL || EVP_PKEY_get_id(k) != EVP_PKEY_ED25519) {
    fprintf(stderr, "%s: not a PEM Ed25519 %s key (allowed: openssl genpkey -algorithm ed25519 -out KEY.pem%s)\n",
            path, private_key ? "private" : "public", private_key ? "" : "; openssl pkey -in KEY.pem -pubout");
    EVP_PKEY_free(k);
    return NULL;
  }
  return k;
}

/* Signs the KDP's exact bytes; the folder must verify first, so that a broken
 * pack is never vouched for. The .sig is written beside it and renamed into place. */
static int cmd_sign(int argc, char **argv) {
  const char *key_path = NULL;
  if (!take_option(&argc, argv, "--key", &key_path) || key_path == NULL || argc != 1) return usage();
  char kdp[4096], sig_path[4200], tmp[4300];
  if (!find_kdp(argv[0], kdp, sizeof kdp)) return EXIT_ERROR;
  ingot_context *ctx;
  if (ingot_context_create_host(NULL, &ctx) != INGOT_OK) return EXIT_ERROR;
  int opened = open_packs(ctx, argv, 1);
  ingot_context_destroy(ctx);
  if (!opened) return EXIT_ERROR;
  EVP_PKEY *key = read_key(key_path, 1);
  if (key == NULL) return EXIT_ERROR;
  unsigned char *data = NULL, sig[INGOT_ED25519_SIGNATURE_BYTES];
  size_t size = 0, sig_len = sizeof sig;
  char msg[256];
  int rc = EXIT_ERROR;
  EVP_MD_CTX *md = EVP_MD_CTX_new();
  if (ingot_read_regular_file(AT_FDCWD, kdp, 1, INGOT_MAX_DESCRIPTOR_BYTES, &data, &size, msg, sizeof msg) != INGOT_OK) {
    fprintf(stderr, "%s: %s\n", kdp, msg);
  } else if (md == NULL || EVP_DigestSignInit(md, NULL, NULL, NULL, key) != 1 ||
             EVP_DigestSign(md, sig, &sig_len, data, size) != 1 || sig_len != sizeof sig) {
    fprintf(stderr, "%s: signing failed (libcrypto)\n", kdp);
  } else {
    snprintf(sig_path, sizeof sig_path, "%s.sig", kdp);
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", sig_path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    int ok = f != NULL && fwrite(sig, 1, sig_len, f) == sig_len;
    if (f != NULL && fclose(f) != 0) ok = 0;
    if (ok && rename(tmp, sig_path) == 0) {
      printf("%s: Ed25519 signature of %s (it pins every descriptor and code object by sha256)\n", sig_path, kdp);
      rc = 0;
    } else {
      fprintf(stderr, "%s: cannot write the Ed25519 signature\n", sig_path);
      remove(tmp);
    }
  }
  EVP_MD_CTX_free(md);
  free(data);
  EVP_PKEY_free(key);
  return rc;
}

static int cmd_verify(int argc, char **argv) {
  const char *key_path = NULL;
  if (!take_option(&argc, argv, "--key", &key_path) || key_path == NULL || argc < 1) return usage();
  EVP_PKEY *key = read_key(key_path, 0);
  if (key == NULL) return EXIT_ERROR;
  unsigned char raw[INGOT_ED25519_KEY_BYTES];
  size_t len = sizeof raw;
  int got = EVP_PKEY_get_raw_public_key(key, raw, &len) == 1 && len == sizeof raw;
  EVP_PKEY_free(key);
  if (!got) {
    fprintf(stderr, "%s: the raw public key could not be read\n", key_path);
    return EXIT_ERROR;
  }
  ingot_context *ctx;
  if (ingot_context_create_host(NULL, &ctx) != INGOT_OK) return EXIT_ERROR;
  int rc = EXIT_ERROR;
  if (ingot_context_require_signature(ctx, raw, len) != INGOT_OK) fprintf(stderr, "%s\n", ingot_context_last_error(ctx));
  else if (open_packs(ctx, argv, argc)) rc = 0;
  for (int i = 0; rc == 0 && i < argc; ++i) printf("%s: Ed25519 signature verified\n", argv[i]);
  ingot_context_destroy(ctx);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 2) return usage();
  if (!strcmp(argv[1], "sign")) return cmd_sign(argc - 2, argv + 2);
  if (!strcmp(argv[1], "verify")) return cmd_verify(argc - 2, argv + 2);
  if (!strcmp(argv[1], "census")) return cmd_census(argc - 2, argv + 2);
  if (!strcmp(argv[1], "match")) return cmd_match(argc - 2, argv + 2);
  if (!strcmp(argv[1], "run")) return cmd_run(argc - 2, argv + 2);
  if (!strcmp(argv[1], "--version")) {
    printf("ingot-inspect %s\n", ingot_version_string());
    return 0;
  }
  return usage();
}
