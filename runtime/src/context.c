/* context.c: contexts (host or device), their packs and last-error message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void ingot_context_clear_error(ingot_context *ctx) {
  ingot_strbuf_free(&ctx->last_error);
}

void ingot_context_set_error(ingot_context *ctx, const char *fmt, ...) {
  ingot_strbuf_free(&ctx->last_error);
  va_list ap;
  va_start(ap, fmt);
  ingot_strbuf_vappendf(&ctx->last_error, fmt, ap);
  va_end(ap);
}

/* Arch names as the matcher sees them: "sm_90", "gfx942", ... */
static int arch_name_ok(const char *arch) {
  size_t n = strlen(arch);
  if (n == 0 || n >= INGOT_ARCH_NAME_BYTES) return 0;
  for (size_t i = 0; i < n; ++i) {
    char c = arch[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return 0;
  }
  return 1;
}

INGOT_API ingot_status ingot_context_create_host(const char *arch, ingot_context **out) {
  if (out == NULL) return INGOT_INVALID_ARGUMENT;
  *out = NULL;
  if (arch != NULL && !arch_name_ok(arch)) return INGOT_INVALID_ARGUMENT;
  ingot_context *ctx = calloc(1, sizeof(*ctx));
  if (ctx == NULL) return INGOT_OUT_OF_MEMORY;
  ctx->backend = INGOT_BACKEND_NONE;
  if (arch != NULL) ingot_format(ctx->arch, sizeof ctx->arch, "%s", arch);
  ctx->wave_size = ingot_arch_wave_size(arch);
  /* Without an arch, each plan takes the units of the arch it plans for (plan.c). */
  ctx->compute_units = arch != NULL ? ingot_arch_compute_units(arch) : 0;
  atomic_init(&ctx->refs, 1);
  *out = ctx;
  return INGOT_OK;
}

INGOT_API ingot_status ingot_context_create_ex(ingot_backend backend, int ordinal, ingot_context **out,
                                               char *err, size_t err_size) {
  ingot_format(err, err_size, "%s", "");
  if (out == NULL) {
    ingot_format(err, err_size, "ingot_context_create: out is NULL");
    return INGOT_INVALID_ARGUMENT;
  }
  *out = NULL;
  const ingot_backend_ops *ops = NULL;
  switch (backend) {
  case INGOT_BACKEND_NONE: return ingot_context_create_host(NULL, out);
  case INGOT_BACKEND_CUDA: ops = &ingot_backend_cuda_ops; break;
  case INGOT_BACKEND_HIP: ops = &ingot_backend_hip_ops; break;
  }
  if (ops == NULL) {
    ingot_format(err, err_size, "ingot_context_create: backend = %d (allowed: INGOT_BACKEND_NONE, "
                 "INGOT_BACKEND_CUDA, INGOT_BACKEND_HIP)", (int)backend);
    return INGOT_INVALID_ARGUMENT;
  }
  if (ordinal < 0) {
    ingot_format(err, err_size, "ingot_context_create: ordinal = %d (allowed: >= 0)", ordinal);
    return INGOT_INVALID_ARGUMENT;
  }
  ingot_context *ctx = calloc(1, sizeof(*ctx));
  if (ctx == NULL) {
    ingot_format(err, err_size, "ingot_context_create: out of memory");
    return INGOT_OUT_OF_MEMORY;
  }
  char arch[INGOT_ARCH_NAME_BYTES] = {0}, msg[512] = {0};
  int wave = 0, cus = 0;
  ingot_status s = ops->open(ordinal, &ctx->dev, arch, sizeof arch, &wave, &cus, msg, sizeof msg);
  if (s != INGOT_OK) {
    free(ctx);
    ingot_format(err, err_size, "%s backend: %s", ops->name, msg[0] ? msg : ingot_status_string(s));
    return s;
  }
  arch[sizeof arch - 1] = 0;
  if (!arch_name_ok(arch)) {
    ops->close(ctx->dev);
    free(ctx);
    ingot_format(err, err_size, "%s backend: device %d reports arch \"%s\" (allowed: sm_*, gfx*)", ops->name,
                 ordinal, arch);
    return INGOT_DEVICE_ERROR;
  }
  ctx->backend = backend;
  ctx->ops = ops;
  memcpy(ctx->arch, arch, sizeof arch);
  memcpy(ctx->device_arch, arch, sizeof arch);
  ctx->wave_size = wave > 0 ? wave : ingot_arch_wave_size(arch);
  ctx->compute_units = cus > 0 ? cus : ingot_arch_compute_units(arch);
  atomic_init(&ctx->refs, 1);
  *out = ctx;
  return INGOT_OK;
}

INGOT_API ingot_status ingot_context_set_arch(ingot_context *ctx, const char *arch) {
  if (ctx == NULL) return INGOT_INVALID_ARGUMENT;
  ingot_context_clear_error(ctx);
  if (arch == NULL || !arch_name_ok(arch)) {
    ingot_context_set_error(ctx, "ingot_context_set_arch: arch %s%s%s (allowed: 1..%d characters of a-z, 0-9, _)",
                            arch ? "\"" : "", arch ? arch : "NULL", arch ? "\"" : "", INGOT_ARCH_NAME_BYTES - 1);
    return INGOT_INVALID_ARGUMENT;
  }
  if (ctx->ops == NULL) {
    ingot_context_set_error(ctx, "ingot_context_set_arch: a host context (allowed: a device context; a host "
                            "context takes its arch from ingot_context_create_host)");
    return INGOT_INVALID_ARGUMENT;
  }
  if (ctx->num_packs != 0) {
    ingot_context_set_error(ctx, "ingot_context_set_arch: the context already holds %zu pack(s), matched for "
                            "arch %s (allowed: before the first ingot_context_open_pack)", ctx->num_packs, ctx->arch);
    return INGOT_INVALID_ARGUMENT;
  }
  if (!ingot_arch_runs_on(arch, ctx->device_arch)) {
    const int nvidia = strncmp(ctx->device_arch, "sm_", 3) == 0;
    ingot_context_set_error(ctx, "ingot_context_set_arch: arch \"%s\" does not run on this device, arch %s "
                            "(allowed: %s%s%s%s)", arch, ctx->device_arch, ctx->device_arch, nvidia ? ", or " : "",
                            nvidia ? ctx->device_arch : "",
                            nvidia ? "_w64, the AMD kernels' 64-lane wave emulated as two warps" : "");
    return INGOT_INVALID_ARGUMENT;
  }
  ingot_format(ctx->arch, sizeof ctx->arch, "%s", arch);
  ctx->wave_size = ingot_arch_wave_size(arch);
  return INGOT_OK;
}

INGOT_API ingot_status ingot_context_create(ingot_backend backend, int ordinal, ingot_context **out) {
  return ingot_context_create_ex(backend, ordinal, out, NULL, 0);
}

static void context_free(ingot_context *ctx) {
  for (size_t i = 0; i < ctx->num_packs; ++i) ingot_pack_free(ctx->packs[i], ctx->ops, ctx->dev);
  free(ctx->packs);
  if (ctx->ops != NULL) ctx->ops->close(ctx->dev);
  ingot_strbuf_free(&ctx->last_error);
  ingot_strbuf_free(&ctx->decline_report);
  free(ctx);
}

void ingot_context_retain(ingot_context *ctx) { atomic_fetch_add_explicit(&ctx->refs, 1, memory_order_relaxed); }

/* acq_rel: every use of the context by the releasing thread (a plan's last
 * execute) happens before the free by whichever thread drops the count to 0. */
void ingot_context_release(ingot_context *ctx) {
  if (atomic_fetch_sub_explicit(&ctx->refs, 1, memory_order_acq_rel) == 1) context_free(ctx);
}

/* Drops the caller's reference: the context goes now, or with its last plan. */
INGOT_API void ingot_context_destroy(ingot_context *ctx) {
  if (ctx != NULL) ingot_context_release(ctx);
}

INGOT_API const char *ingot_context_last_error(const ingot_context *ctx) {
  return ctx ? ingot_strbuf_str(&ctx->last_error) : "";
}

INGOT_API const char *ingot_context_decline_report(const ingot_context *ctx) {
  return ctx ? ingot_strbuf_str(&ctx->decline_report) : "";
}

INGOT_API const char *ingot_context_arch(const ingot_context *ctx) { return ctx ? ctx->arch : ""; }

INGOT_API int ingot_context_compute_units(const ingot_context *ctx) { return ctx ? ctx->compute_units : 0; }

INGOT_API size_t ingot_context_kernel_count(const ingot_context *ctx) {
  size_t n = 0;
  for (size_t i = 0; ctx != NULL && i < ctx->num_packs; ++i) n += ctx->packs[i]->num_kernels;
  return n;
}

INGOT_API ingot_status ingot_context_open_pack(ingot_context *ctx, const char *pack_dir) {
  if (ctx == NULL) return INGOT_INVALID_ARGUMENT;
  ingot_context_clear_error(ctx);
  if (pack_dir == NULL) {
    ingot_context_set_error(ctx, "ingot_context_open_pack: pack_dir is NULL");
    return INGOT_INVALID_ARGUMENT;
  }
  /* Grow the list first so that adding the loaded pack cannot fail. */
  ingot_pack **packs = realloc(ctx->packs, (ctx->num_packs + 1) * sizeof(*packs));
  if (packs == NULL) {
    ingot_context_set_error(ctx, "%s: out of memory", pack_dir);
    return INGOT_OUT_OF_MEMORY;
  }
  ctx->packs = packs;
  ingot_pack *pack;
  ingot_strbuf err = {0};
  ingot_status s = ingot_pack_load(pack_dir, ctx->packs, ctx->num_packs,
                                   ctx->require_signature ? ctx->signing_key : NULL, &pack, &err);
  if (s != INGOT_OK) {
    ingot_context_set_error(ctx, "%s", ingot_strbuf_str(&err));
    ingot_strbuf_free(&err);
    return s;
  }
  ingot_strbuf_free(&err);
  ctx->packs[ctx->num_packs++] = pack;
  return INGOT_OK;
}
