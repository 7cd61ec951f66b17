/* ingot runtime: load kernel packs, match attention graphs, plan, launch.
 *
 * Conventions (SQLite / IREE style):
 *  - every call returns an ingot_status; out-parameters are set to NULL/0 first;
 *  - a failed create leaves nothing allocated;
 *  - each handle keeps its own last-error message (ingot_context_last_error);
 *    nothing global is mutable, so two threads on two contexts never race;
 *  - plans are immutable after creation and may be executed concurrently from
 *    several threads on several streams;
 *  - a plan keeps its context alive: ingot_context_destroy may come before
 *    ingot_plan_destroy (see ingot_context_destroy).
 */
#ifndef INGOT_INGOT_H
#define INGOT_INGOT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(INGOT_STATIC_DEFINE)
#define INGOT_API
#elif defined(_WIN32)
#define INGOT_API __declspec(dllimport)
#else
#define INGOT_API __attribute__((visibility("default")))
#endif

#define INGOT_VERSION_MAJOR 0
#define INGOT_VERSION_MINOR 1
#define INGOT_VERSION_PATCH 0

typedef enum ingot_status {
  INGOT_OK = 0,
  INGOT_INVALID_ARGUMENT = 1, /* NULL pointer, bad size, bad enum value */
  INGOT_INVALID_PACK = 2,     /* a descriptor or code object failed verification */
  INGOT_NO_MATCH = 3,         /* no kernel admits the graph; see the decline report */
  INGOT_UNAVAILABLE = 4,      /* driver library or device missing */
  INGOT_DEVICE_ERROR = 5,     /* the driver returned an error */
  INGOT_OUT_OF_MEMORY = 6,
  INGOT_IO_ERROR = 7,
  INGOT_LIMIT_EXCEEDED = 8,   /* a documented limit (size, count, length) was exceeded */
  INGOT_INTERNAL = 9
} ingot_status;

INGOT_API const char *ingot_status_string(ingot_status s);
INGOT_API const char *ingot_version_string(void);

/* ---- contexts and packs ------------------------------------------------ */

typedef enum ingot_backend {
  INGOT_BACKEND_NONE = 0, /* host only: load, verify, match, plan; no execute */
  INGOT_BACKEND_CUDA = 1, /* libcuda.so.1 through dlopen */
  INGOT_BACKEND_HIP = 2   /* libamdhip64.so[.6|.5] through dlopen */
} ingot_backend;

typedef struct ingot_context ingot_context;

/* Host-only context: arch names the target the matcher filters on
 * ("sm_90", "gfx942", "gfx950"); NULL admits every arch. */
INGOT_API ingot_status ingot_context_create_host(const char *arch, ingot_context **out);
/* Device context: loads the driver, opens device `ordinal`, reads its arch and
 * compute-unit count. A missing driver or device gives INGOT_UNAVAILABLE with a
 * message naming the reason; *out is NULL then. */
INGOT_API ingot_status ingot_context_create(ingot_backend backend, int ordinal, ingot_context **out);
/* The same, and err (may be NULL) receives the reason when it fails, since no
 * context exists then to hold it (e.g. "cuda backend: libcuda.so.1 not found"). */
INGOT_API ingot_status ingot_context_create_ex(ingot_backend backend, int ordinal, ingot_context **out,
                                               char *err, size_t err_size);
/* Makes a device context match, plan and load the code objects of `arch`, one its
 * device runs other than its own: on an NVIDIA device of arch sm_XX, "sm_XX_w64",
 * the AMD kernels built with a 64-lane logical wave (two warps acting as one
 * wave), which the wave64 emulation tests run (tests/gpu/test_gpu_wave64.c);
 * the device's own arch sets it back. Plans then take that arch's wave size.
 * Call it before the first ingot_context_open_pack. INGOT_INVALID_ARGUMENT,
 * with the reason in the last error, on a host context, after a pack was
 * opened, or for an arch the device does not run. */
INGOT_API ingot_status ingot_context_set_arch(ingot_context *ctx, const char *arch);
/* Gives up the caller's handle. The context is freed now if no plan of it is
 * alive, else when its last plan is destroyed: until then those plans may still
 * be queried, executed (its device and loaded code objects stay open) and
 * destroyed, from any thread. The handle itself must not be used after this
 * call (no open_pack, plan_create, last_error ... on it, and no second
 * destroy); a call that may still be running on it must have returned. */
INGOT_API void ingot_context_destroy(ingot_context *ctx);
/* The last error message on this context (never NULL; "" when none). */
INGOT_API const char *ingot_context_last_error(const ingot_context *ctx);
INGOT_API const char *ingot_context_arch(const ingot_context *ctx);
/* The compute units plans are made for: a device context's own; a host
 * context's arch's (gfx942 304, gfx950 256, sm_90 132; 132 for another arch);
 * 0 for a host context without an arch, whose plans each take their arch's. */
INGOT_API int ingot_context_compute_units(const ingot_context *ctx);

/* Opens a packaged pack folder (build/packs/<pack>/): parses and verifies every
 * descriptor (each against the sha256 the KDP records), the cross-references,
 * each code object's sha256, kernarg signature and entry-point symbols, before
 * any driver call. Several packs may be opened on one context; no id of one may
 * repeat an id of another. A refused pack leaves the context as it was. */
INGOT_API ingot_status ingot_context_open_pack(ingot_context *ctx, const char *pack_dir);
INGOT_API size_t ingot_context_kernel_count(const ingot_context *ctx);

/* ---- signed packs ----------------------------------------------------------- */

/* Every later ingot_context_open_pack on ctx requires the pack's detached
 * Ed25519 signature: <pack>.kdp.json.sig beside the KDP, the 64 raw bytes of a
 * signature over the KDP file's exact bytes (`ingot-inspect sign` writes it),
 * verifying with this raw 32-byte public key. An unsigned pack, another key's
 * signature, a changed KDP or a malformed .sig is INGOT_INVALID_PACK. The KDP
 * pins every other descriptor and every code object by sha256, so the
 * signature covers the whole pack. Call it before opening any pack: on a
 * context that already holds packs it is INGOT_INVALID_ARGUMENT (they were not
 * checked). A second call before any open replaces the key. */
INGOT_API ingot_status ingot_context_require_signature(ingot_context *ctx, const unsigned char *ed25519_public_key,
                                                       size_t key_len);

/* ---- the attention decode graph ------------------------------------------ */

typedef enum ingot_dtype {
  INGOT_DTYPE_INVALID = 0,
  INGOT_DTYPE_BF16 = 1,
  INGOT_DTYPE_FP16 = 2,
  INGOT_DTYPE_FP32 = 3,
  INGOT_DTYPE_INT32 = 4,
  INGOT_DTYPE_INT64 = 5
} ingot_dtype;

typedef enum ingot_memory {
  INGOT_MEMORY_DEVICE = 0,
  INGOT_MEMORY_HOST = 1
} ingot_memory;

#define INGOT_MAX_RANK 4

typedef struct ingot_tensor_desc {
  ingot_dtype dtype;
  int rank;                      /* 0 = tensor absent */
  int64_t dims[INGOT_MAX_RANK];
  int64_t strides[INGOT_MAX_RANK]; /* in elements */
  ingot_memory memory;
} ingot_tensor_desc;

typedef enum ingot_mask {
  INGOT_MASK_NONE = 0,
  INGOT_MASK_CAUSAL = 1
} ingot_mask;

typedef enum ingot_mask_align {
  INGOT_ALIGN_BOTTOM_RIGHT = 0, /* query i of Sq sees keys < L - Sq + 1 + i */
  INGOT_ALIGN_TOP_LEFT = 1      /* query i sees keys <= i (not packed) */
} ingot_mask_align;

typedef enum ingot_kv_layout {
  INGOT_KV_CONTIGUOUS = 0, /* K, V: [B, capacity, Hkv, D] */
  INGOT_KV_PAGED = 1       /* K, V: [num_pages, page_size, Hkv, D], page_table [B, max_pages] */
} ingot_kv_layout;

typedef struct ingot_attention_graph {
  ingot_tensor_desc q;          /* [B, Hq, Sq, D] */
  ingot_tensor_desc k;          /* see ingot_kv_layout */
  ingot_tensor_desc v;
  ingot_tensor_desc o;          /* [B, Hq, Sq, D], dtype of q */
  ingot_tensor_desc lse;        /* optional: [B, Hq, Sq] fp32, rank 0 when absent */
  ingot_tensor_desc seq_lens;   /* [B] int32, device: valid length per sequence */
  ingot_tensor_desc page_table; /* [B, max_pages] int32, paged layout only */
  ingot_kv_layout kv_layout;
  int64_t capacity;             /* tokens each sequence may hold */
  ingot_mask mask;
  ingot_mask_align mask_align;
  float scale;                  /* softmax scale, usually 1/sqrt(D) */
} ingot_attention_graph;

/* ---- plans -------------------------------------------------------------- */

typedef struct ingot_plan ingot_plan;

/* Matches the graph against every open pack, picks one kernel and plans its
 * launches. On INGOT_NO_MATCH the context's last error holds, for every kernel
 * considered, the constraint that declined it and the value against the allowed
 * one (also available as ingot_context_decline_report). */
INGOT_API ingot_status ingot_plan_create(ingot_context *ctx, const ingot_attention_graph *graph,
                                         ingot_plan **out);
/* Frees the plan and drops its reference to the context (the last one frees
 * the context, when ingot_context_destroy came first). NULL is a no-op. */
INGOT_API void ingot_plan_destroy(ingot_plan *plan);
INGOT_API const char *ingot_context_decline_report(const ingot_context *ctx);
INGOT_API const char *ingot_plan_kernel_name(const ingot_plan *plan);
INGOT_API size_t ingot_plan_workspace_size(const ingot_plan *plan);
INGOT_API int ingot_plan_num_splits(const ingot_plan *plan);
INGOT_API int ingot_plan_launch_count(const ingot_plan *plan);

typedef struct ingot_attention_buffers {
  const void *q;
  const void *k;
  const void *v;
  void *o;
  float *lse;              /* NULL when the graph has no LSE */
  const int32_t *seq_lens; /* device */
  const int32_t *page_table;
} ingot_attention_buffers;

/* Launches the plan on `stream` (CUstream / hipStream_t, NULL = default).
 * Never synchronizes and never reads seq_lens on the host, so it can be
 * captured in a graph. workspace must be at least ingot_plan_workspace_size
 * bytes (may be NULL when that is 0). */
INGOT_API ingot_status ingot_plan_execute(const ingot_plan *plan, void *stream,
                                          const ingot_attention_buffers *buffers,
                                          void *workspace, size_t workspace_size);
/* The message of the last failed execute on this plan, from this thread's view:
 * execute writes into the caller's buffer instead, so it stays thread-safe. */
INGOT_API ingot_status ingot_plan_execute_ex(const ingot_plan *plan, void *stream,
                                             const ingot_attention_buffers *buffers,
                                             void *workspace, size_t workspace_size,
                                             char *err, size_t err_size);

/* ---- plans of any family ------------------------------------------------ */

/* A family is what a pack computes (attention decode, KV-cache append); each
 * has its own graph and buffers structs (ingot.h for "attention_decode", its
 * own header under ingot/ for the others). ingot_plan_create is
 * ingot_plan_create_family(ctx, "attention_decode", graph, sizeof *graph, out)
 * and ingot_plan_execute_ex the same of ingot_plan_execute_family. Only the
 * packs of the family are matched. graph_size / buffers_size must be the sizeof
 * of the family's struct (INGOT_INVALID_ARGUMENT naming both otherwise). */
INGOT_API ingot_status ingot_plan_create_family(ingot_context *ctx, const char *family, const void *graph,
                                                size_t graph_size, ingot_plan **out);
INGOT_API ingot_status ingot_plan_execute_family(const ingot_plan *plan, void *stream, const void *buffers,
                                                 size_t buffers_size, void *workspace, size_t workspace_size,
                                                 char *err, size_t err_size);
/* The family of the plan's kernel ("attention_decode"); NULL for NULL. */
INGOT_API const char *ingot_plan_family(const ingot_plan *plan);

/* ---- graph JSON (the CLI's form; documented in docs/attention_decode.md) -- */

/* Parses a graph from JSON text. err receives a message naming the field. */
INGOT_API ingot_status ingot_graph_from_json(const char *json_text, size_t len,
                                             ingot_attention_graph *out, char *err,
                                             size_t err_size);

#ifdef __cplusplus
}
#endif
#endif /* INGOT_INGOT_H */
