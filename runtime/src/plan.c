#define _XOPEN_SOURCE 700
/* plan.c: plan creation (match, pick, dispatch stub's plan) and execution
 * (argument checks, the kernel's module loaded once per context, pack, launch).
 * A plan never changes after creation; execute only reads it, so several
 * threads may execute one plan on several streams. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fcntl.h> /* AT_FDCWD */

#include <openssl/evp.h>

#include "ingot_abi.h"
#include "internal.h"

/* Split workgroups of one kernel that fit on a CU at once, from its registers
 * and LDS: the register file and LDS of the arch, their allocation
 * granularity, and the thread limit (ingot_abi.h, INGOT_NV_* and INGOT_AMD_*).
 * 0 when the resources are unknown. */
int ingot_blocks_per_cu(const char *arch, const ingot_code_object *obj, int waves, int wave_size) {
  if (obj->split_registers <= 0 || waves <= 0 || wave_size <= 0) return 0;
  /* static and dynamic LDS of the split (entry point 0) */
  const int lds = obj->split_lds + (int)obj->dynamic_lds[0];
  int blocks;
  if (strncmp(arch, "sm_", 3) == 0) {
    /* Registers allocated per warp in units; resident threads and blocks;
     * shared memory less what the system reserves per block (ingot_abi.h). */
    const int unit = INGOT_NV_REGISTER_UNIT;
    const int per_warp = (obj->split_registers * 32 + unit - 1) / unit * unit;
    const int warps = waves * wave_size / 32; /* an emulated 64-lane wave (sm_*_w64) is two warps */
    blocks = INGOT_NV_REGISTERS / per_warp / (warps > 0 ? warps : 1);
    const int by_threads = INGOT_NV_THREADS / (waves * wave_size);
    if (by_threads < blocks) blocks = by_threads;
    const int per_block = lds + INGOT_NV_BLOCK_RESERVED_SHARED;
    if (lds > 0 && INGOT_NV_SHARED / per_block < blocks) blocks = INGOT_NV_SHARED / per_block;
    if (blocks > INGOT_NV_BLOCKS) blocks = INGOT_NV_BLOCKS;
  } else {
    /* CDNA3: SIMDs per CU, VGPRs (with AGPRs) per lane in units, resident waves
     * per SIMD (ingot_abi.h); LDS as the arch allows. */
    const int vgprs = (obj->split_registers + INGOT_AMD_VGPR_UNIT - 1) / INGOT_AMD_VGPR_UNIT * INGOT_AMD_VGPR_UNIT;
    int per_simd = INGOT_AMD_VGPRS / vgprs;
    if (per_simd > INGOT_AMD_WAVES_PER_SIMD) per_simd = INGOT_AMD_WAVES_PER_SIMD;
    blocks = INGOT_AMD_SIMDS * per_simd / waves;
    const size_t max = ingot_arch_max_lds(arch);
    if (lds > 0 && (int)(max / (size_t)lds) < blocks) blocks = (int)(max / (size_t)lds);
  }
  return blocks > 0 ? blocks : 0;
}

/* Plans one kernel for arch: the device's properties, the dispatch stub's plan
 * and its sanity. err gets the problem. */
static ingot_status plan_kernel(const ingot_context *ctx, const char *arch, ingot_plan *plan, char *err,
                                size_t n) {
  const ingot_kernel *k = plan->kernel;
  const ingot_family *family = plan->family;
  ingot_device_caps caps;
  caps.wave_size = ctx->wave_size > 0 ? ctx->wave_size : ingot_arch_wave_size(arch);
  caps.compute_units = ctx->compute_units > 0 ? ctx->compute_units : ingot_arch_compute_units(arch);
  caps.max_lds_bytes = ingot_arch_max_lds(arch);
  const ingot_code_object *obj = ingot_kernel_object(k, arch);
  const int waves = family->waves != NULL ? family->waves(k->meta.bytes) : 0;
  caps.blocks_per_cu = obj ? ingot_blocks_per_cu(arch, obj, waves, caps.wave_size) : 0;
  /* Balanced batches (issue 23): unless the environment says otherwise when the plan is made, the
   * family balances where that pays (INGOT_BALANCE_AUTO; the attention decode plan:
   * docs/design/balanced-split.md); INGOT_BALANCE=0 keeps the uniform segments, N = 1..8 balances
   * every batch it can, its pieces filling N rounds of resident workgroups. */
  const char *balance = getenv("INGOT_BALANCE");
  caps.balance = INGOT_BALANCE_AUTO;
  if (balance != NULL && balance[0] != '\0') {
    if (balance[1] != '\0' || balance[0] < '0' || balance[0] > '0' + INGOT_BALANCE_MAX_ROUNDS) {
      ingot_format(err, n, "kernel %s: INGOT_BALANCE=\"%.16s\" (allowed: unset, balanced where it pays; 0, uniform "
                   "segments; 1..%d, balanced over the real lengths, filling that many rounds of workgroups)",
                   k->name, balance, INGOT_BALANCE_MAX_ROUNDS);
      return INGOT_INVALID_ARGUMENT;
    }
    caps.balance = balance[0] - '0';
  }
  if (caps.wave_size <= 0) {
    ingot_format(err, n, "kernel %s: arch \"%s\" has no known wave size (allowed: sm_*, gfx*)", k->name, arch);
    return INGOT_INVALID_ARGUMENT;
  }
  plan->caps = caps;
  char msg[384] = "";
  ingot_status s = k->pack->dispatch->plan(k->meta.bytes, plan->graph.bytes, &caps, &plan->dispatch, msg, sizeof msg);
  if (s != INGOT_OK) {
    ingot_format(err, n, "kernel %s: %s: %s", k->name, k->pack->dispatch->symbol,
                 msg[0] ? msg : ingot_status_string(s));
    return s;
  }
  const ingot_dispatch_plan *d = &plan->dispatch;
  int sane = d->num_launches >= 1 && d->num_launches <= INGOT_MAX_LAUNCHES && d->cost >= 0.0;
  for (int i = 0; sane && i < d->num_launches; ++i) {
    const ingot_launch *l = &d->launches[i];
    sane = l->entry >= 0 && (size_t)l->entry < k->pack->num_entry_points;
    for (int j = 0; j < 3; ++j) sane = sane && l->grid[j] > 0 && l->block[j] > 0;
  }
  if (!sane) {
    ingot_format(err, n, "kernel %s: %s returned a plan of %d launches with an entry point outside the "
                 "UDD's %zu, an empty grid/block or a negative modelled time", k->name,
                 k->pack->dispatch->symbol, d->num_launches, k->pack->num_entry_points);
    return INGOT_INTERNAL;
  }
  /* Each launch takes the dynamic LDS its entry point's code object declares. */
  for (int i = 0; i < plan->dispatch.num_launches; ++i) {
    ingot_launch *l = &plan->dispatch.launches[i];
    l->lds_bytes = obj ? obj->dynamic_lds[l->entry] : 0;
  }
  return INGOT_OK;
}

INGOT_API ingot_status ingot_plan_create_family(ingot_context *ctx, const char *family_name, const void *graph,
                                                size_t graph_size, ingot_plan **out) {
  if (out != NULL) *out = NULL;
  if (ctx == NULL) return INGOT_INVALID_ARGUMENT;
  ingot_context_clear_error(ctx);
  ingot_strbuf_free(&ctx->decline_report);
  if (out == NULL || graph == NULL || family_name == NULL) {
    ingot_context_set_error(ctx, "ingot_plan_create: %s is NULL",
                            out == NULL ? "out" : graph == NULL ? "graph" : "family");
    return INGOT_INVALID_ARGUMENT;
  }
  const ingot_family *family = ingot_family_find(family_name);
  if (family == NULL) {
    ingot_context_set_error(ctx, "ingot_plan_create: family \"%s\" is unknown (allowed: %s)", family_name,
                            ingot_family_names());
    return INGOT_INVALID_ARGUMENT;
  }
  if (graph_size != family->graph_size) {
    ingot_context_set_error(ctx, "ingot_plan_create: graph_size %zu is not the size of the %s graph struct "
                            "(required: %zu; rebuild against this ingot's headers)", graph_size, family->name,
                            family->graph_size);
    return INGOT_INVALID_ARGUMENT;
  }
  char err[512];
  ingot_status s = family->validate(graph, err, sizeof err);
  if (s != INGOT_OK) {
    ingot_context_set_error(ctx, "%s", err);
    return s;
  }
  const ingot_kernel **cands = NULL;
  const int n = ingot_select_kernels(ctx, family, graph, &ctx->decline_report, &cands);
  if (n < 0) {
    ingot_context_set_error(ctx, "ingot_plan_create: out of memory");
    return INGOT_OUT_OF_MEMORY;
  }
  if (n == 0) {
    ingot_context_set_error(ctx, "no kernel admits the graph; every kernel considered and why:\n%s",
                            ingot_strbuf_str(&ctx->decline_report));
    return INGOT_NO_MATCH;
  }
  ingot_strbuf_free(&ctx->decline_report);
  ingot_plan *plan = calloc(1, sizeof(*plan));
  ingot_plan *cand = calloc(1, sizeof(*cand));
  if (plan == NULL || cand == NULL) {
    free(plan);
    free(cand);
    free(cands);
    ingot_context_set_error(ctx, "ingot_plan_create: out of memory");
    return INGOT_OUT_OF_MEMORY;
  }
  /* Kernels of one rank: each is planned, the least modelled time wins; one
   * later in tie order (fewer waves first) must model under INGOT_COST_MARGIN
   * of the best so far (docs/design/planner.md); the first one's error is reported when
   * none plans. A host context without an arch plans for the first kernel's
   * first arch, and compares only the kernels built for it. */
  const char *arch = ctx->arch[0] ? ctx->arch : cands[0]->objects[0].arch;
  ingot_status first_status = INGOT_OK;
  int have = 0, considered = 0;
  for (int i = 0; i < n; ++i) {
    if (ingot_kernel_object(cands[i], arch) == NULL) continue;
    memset(cand, 0, sizeof *cand);
    cand->ctx = ctx;
    cand->kernel = cands[i];
    cand->family = family;
    memcpy(cand->graph.bytes, graph, graph_size);
    s = plan_kernel(ctx, arch, cand, err, sizeof err);
    if (s != INGOT_OK) {
      if (first_status == INGOT_OK) {
        first_status = s;
        ingot_context_set_error(ctx, "%s", err);
      }
      continue;
    }
    if (considered < INGOT_MAX_CONSIDERED) {
      plan->considered[considered].kernel = cand->kernel;
      plan->considered[considered].cost = cand->dispatch.cost;
      plan->considered[considered].splits = cand->dispatch.num_splits;
      ++considered;
    }
    if (!have || cand->dispatch.cost < INGOT_COST_MARGIN * plan->dispatch.cost) {
      plan->kernel = cand->kernel;
      plan->caps = cand->caps;
      plan->dispatch = cand->dispatch;
    }
    have = 1;
  }
  free(cand);
  plan->ctx = ctx;
  plan->family = family;
  memcpy(plan->graph.bytes, graph, graph_size);
  plan->num_considered = considered;
  free(cands);
  if (!have) {
    free(plan);
    return first_status;
  }
  ingot_context_clear_error(ctx);
  ingot_context_retain(ctx);
  *out = plan;
  return INGOT_OK;
}

INGOT_API void ingot_plan_destroy(ingot_plan *plan) {
  if (plan == NULL) return;
  ingot_context *ctx = plan->ctx;
  free(plan);
  ingot_context_release(ctx);
}

INGOT_API const char *ingot_plan_kernel_name(const ingot_plan *plan) { return plan ? plan->kernel->name : NULL; }
INGOT_API const char *ingot_plan_family(const ingot_plan *plan) { return plan ? plan->family->name : NULL; }
INGOT_API size_t ingot_plan_workspace_size(const ingot_plan *plan) {
  return plan ? (size_t)plan->dispatch.workspace_bytes : 0;
}
INGOT_API int ingot_plan_num_splits(const ingot_plan *plan) { return plan ? plan->dispatch.num_splits : 0; }
INGOT_API int ingot_plan_launch_count(const ingot_plan *plan) { return plan ? plan->dispatch.num_launches : 0; }
const ingot_dispatch_plan *ingot_plan_dispatch_info(const ingot_plan *plan) {
  return plan ? &plan->dispatch : NULL;
}

/* ---- the kernel's module, loaded once per context ---------------------------- */

static ingot_status load_module(const ingot_context *ctx, ingot_kernel *k, char *err, size_t n) {
  const ingot_code_object *obj = ingot_kernel_object(k, ctx->arch);
  if (obj == NULL) {
    ingot_format(err, n, "kernel %s has no code object for arch %s", k->name, ctx->arch);
    return INGOT_INTERNAL;
  }
  /* The same non-blocking reader as the pack's open: a FIFO or a device put in
   * the object's place since then is refused, never opened. */
  unsigned char *image = NULL;
  size_t size = 0;
  char why[256];
  ingot_status rs = ingot_read_regular_file(AT_FDCWD, obj->path, 0, INGOT_MAX_CODE_OBJECT_BYTES, &image, &size, why,
                                            sizeof why);
  if (rs != INGOT_OK) {
    ingot_format(err, n, "kernel %s: %s: %s", k->name, obj->path, why);
    return rs;
  }
  /* Hash what goes to the driver: the file may have changed since the pack was opened. */
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(image, size, md, &len, EVP_sha256(), NULL) != 1 ||
      len != 32 || memcmp(md, obj->sha256, 32) != 0) {
    free(image);
    ingot_format(err, n, "kernel %s: %s changed since the pack was opened (sha256 differs)", k->name, obj->path);
    return INGOT_INVALID_PACK;
  }
  const ingot_backend_ops *ops = ctx->ops;
  char msg[384] = {0};
  ingot_status s = ops->module_load(ctx->dev, image, size, &k->module, msg, sizeof msg);
  free(image);
  if (s != INGOT_OK) {
    ingot_format(err, n, "kernel %s: loading %s: %s", k->name, obj->path, msg);
    k->module = NULL;
    return s;
  }
  const ingot_pack *pack = k->pack;
  for (size_t e = 0; e < pack->num_entry_points && s == INGOT_OK; ++e) {
    s = ops->function_get(ctx->dev, k->module, k->symbols[e], &k->functions[e], msg, sizeof msg);
    if (s != INGOT_OK) {
      ingot_format(err, n, "kernel %s: symbol %s in %s: %s", k->name, k->symbols[e], obj->path, msg);
      break;
    }
    if (obj->dynamic_lds[e] > 0 && ops->function_set_dynamic_lds != NULL) {
      s = ops->function_set_dynamic_lds(ctx->dev, k->functions[e], obj->dynamic_lds[e], msg, sizeof msg);
      if (s != INGOT_OK) {
        ingot_format(err, n, "kernel %s: %s in %s takes %u bytes of dynamic shared memory: %s", k->name,
                     k->symbols[e], obj->path, obj->dynamic_lds[e], msg);
        break;
      }
    }
    size_t offsets[INGOT_MAX_SIGNATURE_ARGS], sizes[INGOT_MAX_SIGNATURE_ARGS];
    int count = 0;
    s = ops->function_params(ctx->dev, k->functions[e], offsets, sizes, (int)pack->num_sig, &count, msg,
                             sizeof msg);
    if (s != INGOT_OK) {
      ingot_format(err, n, "kernel %s: parameters of %s: %s", k->name, k->symbols[e], msg);
      break;
    }
    if (count == 0) continue; /* the driver cannot say */
    if ((size_t)count != pack->num_sig) {
      ingot_format(err, n, "kernel %s: %s in %s takes %d parameters, the UDD's kernarg signature %zu", k->name,
                   k->symbols[e], obj->path, count, pack->num_sig);
      s = INGOT_INVALID_PACK;
      break;
    }
    for (int i = 0; i < count; ++i) {
      if (offsets[i] != pack->sig[i].offset || sizes[i] != pack->sig[i].size) {
        ingot_format(err, n, "kernel %s: %s parameter %d is at offset %zu size %zu, the UDD says offset %u size %u",
                     k->name, k->symbols[e], i, offsets[i], sizes[i], pack->sig[i].offset, pack->sig[i].size);
        s = INGOT_INVALID_PACK;
        break;
      }
    }
  }
  if (s != INGOT_OK) {
    ops->module_unload(ctx->dev, k->module);
    k->module = NULL;
  }
  return s;
}

static ingot_status ensure_loaded(const ingot_plan *plan, char *err, size_t n) {
  ingot_kernel *k = (ingot_kernel *)plan->kernel; /* only its load state changes, under its lock */
  int state = atomic_load_explicit(&k->load_state, memory_order_acquire);
  if (state == 0) {
    pthread_mutex_lock(&k->load_lock);
    state = atomic_load_explicit(&k->load_state, memory_order_relaxed);
    if (state == 0) {
      k->load_status = load_module(plan->ctx, k, k->load_error, sizeof k->load_error);
      state = k->load_status == INGOT_OK ? 1 : 2;
      atomic_store_explicit(&k->load_state, state, memory_order_release);
    }
    pthread_mutex_unlock(&k->load_lock);
  }
  if (state == 1) return INGOT_OK;
  ingot_format(err, n, "%s", k->load_error);
  return k->load_status;
}

/* ---- execute --------------------------------------------------------------- */

#define TRY(x)                                                                                     \
  do {                                                                                             \
    ingot_status s_ = (x);                                                                         \
    if (s_ != INGOT_OK) return s_;                                                                 \
  } while (0)

INGOT_API ingot_status ingot_plan_execute_family(const ingot_plan *plan, void *stream, const void *b,
                                                 size_t buffers_size, void *workspace, size_t workspace_size,
                                                 char *err, size_t n) {
  ingot_format(err, n, "%s", "");
  if (plan == NULL || b == NULL) {
    ingot_format(err, n, "ingot_plan_execute: %s is NULL", plan == NULL ? "plan" : "buffers");
    return INGOT_INVALID_ARGUMENT;
  }
  const ingot_family *family = plan->family;
  if (buffers_size != family->buffers_size) {
    ingot_format(err, n, "ingot_plan_execute: buffers_size %zu is not the size of the %s buffers struct "
                 "(required: %zu; rebuild against this ingot's headers)", buffers_size, family->name,
                 family->buffers_size);
    return INGOT_INVALID_ARGUMENT;
  }
  TRY(family->check_buffers(plan->graph.bytes, b, err, n));
  uint64_t required = plan->dispatch.workspace_bytes;
  if (required > 0 && workspace == NULL) {
    ingot_format(err, n, "ingot_plan_execute: workspace is NULL (required: %llu bytes, given: 0)",
                 (unsigned long long)required);
    return INGOT_INVALID_ARGUMENT;
  }
  if (required > 0 && workspace_size < required) {
    ingot_format(err, n, "ingot_plan_execute: workspace too small (required: %llu bytes, given: %zu bytes)",
                 (unsigned long long)required, workspace_size);
    return INGOT_INVALID_ARGUMENT;
  }
  if (required > 0 && (uintptr_t)workspace % 16 != 0) {
    ingot_format(err, n, "ingot_plan_execute: workspace = %p is not 16-byte aligned (required: 16-byte alignment)",
                 workspace);
    return INGOT_INVALID_ARGUMENT;
  }
  const ingot_context *ctx = plan->ctx;
  if (ctx->ops == NULL) {
    ingot_format(err, n, "ingot_plan_execute: a host context (INGOT_BACKEND_NONE) only plans; create the context "
                 "with INGOT_BACKEND_CUDA or INGOT_BACKEND_HIP to execute");
    return INGOT_UNAVAILABLE;
  }
  TRY(ensure_loaded(plan, err, n));
  const ingot_kernel *k = plan->kernel;
  for (int i = 0; i < plan->dispatch.num_launches; ++i) {
    const ingot_launch *l = &plan->dispatch.launches[i];
    uint8_t args[INGOT_MAX_KERNARG_BYTES];
    size_t size = 0;
    char msg[256] = {0};
    ingot_status s = k->pack->dispatch->pack(&plan->dispatch, i, b, required > 0 ? workspace : NULL, args,
                                             sizeof args, &size, msg, sizeof msg);
    if (s != INGOT_OK) {
      ingot_format(err, n, "kernel %s: packing launch %d: %s", k->name, i, msg);
      return s;
    }
    if (size != k->pack->kernarg_size) {
      ingot_format(err, n, "kernel %s: launch %d packed %zu kernarg bytes, the UDD says %u", k->name, i, size,
                   k->pack->kernarg_size);
      return INGOT_INTERNAL;
    }
    s = ctx->ops->launch(ctx->dev, k->functions[l->entry], l->grid, l->block, l->lds_bytes, l->flags, stream,
                         args, size, msg, sizeof msg);
    if (s != INGOT_OK) {
      ingot_format(err, n, "kernel %s: launch %d (%s): %s", k->name, i, k->symbols[l->entry], msg);
      return s;
    }
  }
  return INGOT_OK;
}
