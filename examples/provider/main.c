/* main.c: a provider program on the installed ingot. It opens its own pack
 * (provider_decode.yaml, built by ingot_add_pack) and plans single-token decode
 * attention for its model's shape: one sequence, 16 query heads over 8 KV heads
 * (group 2), bf16, D 128, a 4096-token contiguous KV cache. On the host it prints
 * the chosen kernel and the plan, and the decline of a shape no pack admits.
 * Where a CUDA device is there, it also executes the plan with random inputs (NaN
 * in the cache past the valid length, which must not matter) and compares with a
 * CPU reference.
 *
 *   provider_decode [PACK_DIR...]   default: its own pack (PROVIDER_PACK_DIR); name it
 *                                   and ingot's installed packs (share/ingot/packs/) to add them
 *
 * Exit status: 0 ok (the GPU part may be skipped); 1 a wrong decline or a
 * mismatch; 2 an error. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ingot/ingot.h>

enum { BATCH = 1, HQ = 16, HKV = 8, SQ = 1, D = 128, CAPACITY = 4096, VALID = 3001 };

static void tensor(ingot_tensor_desc *t, ingot_dtype dtype, int rank, const int64_t *dims) {
  memset(t, 0, sizeof *t);
  t->dtype = dtype;
  t->rank = rank;
  int64_t stride = 1;
  for (int i = rank - 1; i >= 0; --i) {
    t->dims[i] = dims[i];
    t->strides[i] = stride;
    stride *= dims[i];
  }
  t->memory = INGOT_MEMORY_DEVICE;
}

/* The seed-like graph: q, o [B, hq, Sq, D], k, v [B, capacity, hkv, D], device lengths. */
static ingot_attention_graph decode_graph(int hq, int hkv) {
  ingot_attention_graph g;
  memset(&g, 0, sizeof g);
  const int64_t q[4] = {BATCH, hq, SQ, D}, kv[4] = {BATCH, CAPACITY, hkv, D}, lens[1] = {BATCH};
  tensor(&g.q, INGOT_DTYPE_BF16, 4, q);
  tensor(&g.o, INGOT_DTYPE_BF16, 4, q);
  tensor(&g.k, INGOT_DTYPE_BF16, 4, kv);
  tensor(&g.v, INGOT_DTYPE_BF16, 4, kv);
  tensor(&g.seq_lens, INGOT_DTYPE_INT32, 1, lens);
  g.kv_layout = INGOT_KV_CONTIGUOUS;
  g.capacity = CAPACITY;
  g.mask = INGOT_MASK_NONE;
  g.scale = 1.0f / sqrtf((float)D);
  return g;
}

/* Host context, every arch: prints the plan or the decline; returns the status. */
static ingot_status plan_on_host(ingot_context *ctx, int hq, int hkv) {
  ingot_attention_graph g = decode_graph(hq, hkv);
  ingot_plan *plan = NULL;
  printf("graph bf16 B=%d Hq=%d Hkv=%d Sq=%d D=%d capacity=%d: ", BATCH, hq, hkv, SQ, D, CAPACITY);
  ingot_status st = ingot_plan_create(ctx, &g, &plan);
  if (st == INGOT_OK) {
    printf("kernel %s, %d splits, %d launches, workspace %zu bytes\n", ingot_plan_kernel_name(plan),
           ingot_plan_num_splits(plan), ingot_plan_launch_count(plan), ingot_plan_workspace_size(plan));
    ingot_plan_destroy(plan);
  } else if (st == INGOT_NO_MATCH) {
    printf("declined\n%s\n", ingot_context_decline_report(ctx));
  } else {
    printf("error: %s: %s\n", ingot_status_string(st), ingot_context_last_error(ctx));
  }
  return st;
}

/* ---- the GPU part: the little of the CUDA driver API it needs, through dlopen ---- */

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
static struct {
  CUresult (*init)(unsigned);
  CUresult (*device_get)(int *, int);
  CUresult (*retain)(void **, int);
  CUresult (*release)(int);
  CUresult (*set_current)(void *);
  CUresult (*alloc)(CUdeviceptr *, size_t);
  CUresult (*free)(CUdeviceptr);
  CUresult (*htod)(CUdeviceptr, const void *, size_t);
  CUresult (*dtoh)(void *, CUdeviceptr, size_t);
  CUresult (*sync)(void);
} cu;

static int cuda_load(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  struct { void *fn; const char *name; } syms[] = {
      {&cu.init, "cuInit"}, {&cu.device_get, "cuDeviceGet"},
      {&cu.retain, "cuDevicePrimaryCtxRetain"}, {&cu.release, "cuDevicePrimaryCtxRelease_v2"},
      {&cu.set_current, "cuCtxSetCurrent"}, {&cu.alloc, "cuMemAlloc_v2"}, {&cu.free, "cuMemFree_v2"},
      {&cu.htod, "cuMemcpyHtoD_v2"}, {&cu.dtoh, "cuMemcpyDtoH_v2"}, {&cu.sync, "cuCtxSynchronize"}};
  if (lib == NULL) return -1;
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; ++i) {
    void *p = dlsym(lib, syms[i].name);
    if (p == NULL) return -1;
    memcpy(syms[i].fn, &p, sizeof p);
  }
  return 0;
}

#define CU(call)                                                  \
  do {                                                            \
    CUresult r_ = (call);                                         \
    if (r_ != 0) {                                                \
      fprintf(stderr, "gpu: %s failed with CUDA error %d\n", #call, r_); \
      goto done;                                                  \
    }                                                             \
  } while (0)

static uint16_t to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16); /* round to nearest even */
}

static float from_bf16(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static float uniform(void) { return (float)rand() / (float)RAND_MAX * 2.0f - 1.0f; }

/* O[h] = softmax(scale * q[h] . K[t]) V[t] over t < VALID, for the KV head of h. */
static void reference(const uint16_t *q, const uint16_t *k, const uint16_t *v, float scale, float *o) {
  static float p[VALID];
  for (int h = 0; h < HQ; ++h) {
    int kvh = h / (HQ / HKV);
    float max = -INFINITY, sum = 0.0f;
    for (int t = 0; t < VALID; ++t) {
      float s = 0.0f;
      for (int d = 0; d < D; ++d)
        s += from_bf16(q[h * D + d]) * from_bf16(k[((size_t)t * HKV + kvh) * D + d]);
      p[t] = s * scale;
      if (p[t] > max) max = p[t];
    }
    for (int t = 0; t < VALID; ++t) sum += p[t] = expf(p[t] - max);
    for (int d = 0; d < D; ++d) {
      float acc = 0.0f;
      for (int t = 0; t < VALID; ++t) acc += p[t] * from_bf16(v[((size_t)t * HKV + kvh) * D + d]);
      o[h * D + d] = acc / sum;
    }
  }
}

/* 0 ok or skipped, 1 mismatch, 2 error. */
static int run_on_gpu(int npacks, char **packs) {
  char why[512] = "";
  ingot_context *ctx = NULL;
  if (ingot_context_create_ex(INGOT_BACKEND_CUDA, 0, &ctx, why, sizeof why) != INGOT_OK) {
    printf("gpu: skipped (%s)\n", why);
    return 0;
  }
  int rc = 2, device = 0;
  void *primary = NULL;
  ingot_plan *plan = NULL;
  CUdeviceptr dq = 0, dk = 0, dv = 0, dout = 0, dlen = 0, dws = 0;
  const size_t nq = (size_t)HQ * D, nkv = (size_t)CAPACITY * HKV * D;
  uint16_t *q = malloc(nq * 2), *k = malloc(nkv * 2), *v = malloc(nkv * 2), *out = malloc(nq * 2);
  float *ref = malloc(nq * sizeof(float));
  if (!q || !k || !v || !out || !ref) goto done;

  for (int i = 0; i < npacks; ++i)
    if (ingot_context_open_pack(ctx, packs[i]) != INGOT_OK) {
      fprintf(stderr, "gpu: %s\n", ingot_context_last_error(ctx));
      goto done;
    }
  ingot_attention_graph g = decode_graph(HQ, HKV);
  if (ingot_plan_create(ctx, &g, &plan) != INGOT_OK) {
    printf("gpu: no kernel for %s:\n%s\n", ingot_context_arch(ctx), ingot_context_last_error(ctx));
    rc = 1;
    goto done;
  }
  printf("gpu: %s, kernel %s, %d splits\n", ingot_context_arch(ctx), ingot_plan_kernel_name(plan),
         ingot_plan_num_splits(plan));

  srand(2024);
  for (size_t i = 0; i < nq; ++i) q[i] = to_bf16(uniform());
  for (size_t i = 0; i < nkv; ++i) {
    int past = i >= (size_t)VALID * HKV * D; /* token-major: past the valid length */
    k[i] = past ? 0x7FC0 : to_bf16(uniform()); /* bf16 NaN */
    v[i] = past ? 0x7FC0 : to_bf16(uniform());
  }
  const int32_t len = VALID;
  const size_t ws = ingot_plan_workspace_size(plan);

  if (cuda_load() != 0) {
    fprintf(stderr, "gpu: libcuda.so.1 lacks a symbol this example uses\n");
    goto done;
  }
  CU(cu.init(0));
  CU(cu.device_get(&device, 0));
  CU(cu.retain(&primary, device)); /* the context the runtime's CUDA backend uses */
  CU(cu.set_current(primary));
  CU(cu.alloc(&dq, nq * 2));
  CU(cu.alloc(&dout, nq * 2));
  CU(cu.alloc(&dk, nkv * 2));
  CU(cu.alloc(&dv, nkv * 2));
  CU(cu.alloc(&dlen, sizeof len));
  if (ws > 0) CU(cu.alloc(&dws, ws));
  CU(cu.htod(dq, q, nq * 2));
  CU(cu.htod(dk, k, nkv * 2));
  CU(cu.htod(dv, v, nkv * 2));
  CU(cu.htod(dlen, &len, sizeof len));
  CU(cu.sync());

  ingot_attention_buffers b = {(const void *)(uintptr_t)dq, (const void *)(uintptr_t)dk,
                               (const void *)(uintptr_t)dv, (void *)(uintptr_t)dout, NULL,
                               (const int32_t *)(uintptr_t)dlen, NULL};
  char err[512] = "";
  if (ingot_plan_execute_ex(plan, NULL, &b, (void *)(uintptr_t)dws, ws, err, sizeof err) != INGOT_OK) {
    fprintf(stderr, "gpu: execute: %s\n", err);
    goto done;
  }
  CU(cu.sync());
  CU(cu.dtoh(out, dout, nq * 2));

  reference(q, k, v, g.scale, ref);
  size_t bad = 0;
  float worst = 0.0f;
  for (size_t i = 0; i < nq; ++i) {
    float e = fabsf(from_bf16(out[i]) - ref[i]);
    if (!(e <= 0.015f + 0.015f * fabsf(ref[i]))) ++bad; /* NaN counts as bad */
    if (e > worst) worst = e;
  }
  printf("gpu: %zu of %zu outputs off the CPU reference (max |err| %.5f): %s\n", bad, nq, worst,
         bad ? "MISMATCH" : "ok");
  rc = bad ? 1 : 0;

done:
  if (primary) {
    cu.free(dq), cu.free(dk), cu.free(dv), cu.free(dout), cu.free(dlen);
    if (dws) cu.free(dws);
    cu.release(device);
  }
  ingot_plan_destroy(plan);
  ingot_context_destroy(ctx);
  free(q), free(k), free(v), free(out), free(ref);
  return rc;
}

int main(int argc, char **argv) {
  char *defaults[] = {PROVIDER_PACK_DIR};
  int npacks = argc > 1 ? argc - 1 : 1;
  char **packs = argc > 1 ? argv + 1 : defaults;

  ingot_context *host = NULL;
  if (ingot_context_create_host(NULL, &host) != INGOT_OK) return 2;
  for (int i = 0; i < npacks; ++i)
    if (ingot_context_open_pack(host, packs[i]) != INGOT_OK) {
      fprintf(stderr, "provider_decode: %s\n", ingot_context_last_error(host));
      ingot_context_destroy(host);
      return 2;
    }
  printf("ingot %s: %d pack(s), %zu kernel(s)\n", ingot_version_string(), npacks,
         ingot_context_kernel_count(host));
  /* Its own shape plans; a group-3 shape (24 over 8 heads) is in no pack. */
  ingot_status own = plan_on_host(host, HQ, HKV);
  ingot_status other = plan_on_host(host, 24, HKV);
  ingot_context_destroy(host);
  if (own != INGOT_OK || other != INGOT_NO_MATCH) return 1;

  return run_on_gpu(npacks, packs);
}
