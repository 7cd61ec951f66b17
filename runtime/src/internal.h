/* internal.h: the runtime's own types, shared by its source files and by
 * ingot-inspect (which links ingot_static). Not installed, not public. */
#ifndef INGOT_INTERNAL_H
#define INGOT_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "backend.h"
#include "dispatch.h"
#include "family.h"
#include "ingot/ingot.h"

/* ---- documented limits (docs/RELIABILITY.md, "Limits") ----------------- */
#define INGOT_MAX_DESCRIPTOR_BYTES ((size_t)4 << 20)  /* one descriptor file */
#define INGOT_MAX_DESCRIPTOR_FILES 1024               /* descriptor files in one pack folder */
#define INGOT_MAX_DESCRIPTOR_TOTAL_BYTES ((size_t)16 << 20) /* all of them together */
#define INGOT_MAX_SIGNATURE_FILE_BYTES 4096           /* read to say how long a bad .sig is */
#define INGOT_ED25519_KEY_BYTES 32
#define INGOT_ED25519_SIGNATURE_BYTES 64
#define INGOT_MAX_KERNELS_PER_PACK 4096
#define INGOT_MAX_STRING_BYTES 256                    /* ids, names, paths, symbols, values */
#define INGOT_MAX_CODE_OBJECT_BYTES ((size_t)64 << 20)
#define INGOT_MAX_SIGNATURE_ARGS 64
#define INGOT_MAX_ENTRY_POINTS 8 /* kernels per code object a launch may name (a plan makes at most INGOT_MAX_LAUNCHES) */
#define INGOT_MAX_ARCHS 16
#define INGOT_ARCH_NAME_BYTES 32
/* AMD code object versions the loader accepts: what every ROCm 6.0+ runtime
 * loads (v6 needs ROCm 6.3+; docs/INTERNALS.md section 2). */
#define INGOT_AMD_CODE_OBJECT_MIN 4
#define INGOT_AMD_CODE_OBJECT_MAX 5

/* ---- a growable string (error messages, decline reports) ---------------- */
typedef struct ingot_strbuf {
  char *data; /* NUL-terminated, NULL until the first append */
  size_t len, cap;
  int failed; /* an allocation failed; data holds what fitted */
} ingot_strbuf;

void ingot_strbuf_appendf(ingot_strbuf *sb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void ingot_strbuf_vappendf(ingot_strbuf *sb, const char *fmt, va_list ap);
void ingot_strbuf_free(ingot_strbuf *sb);
const char *ingot_strbuf_str(const ingot_strbuf *sb); /* never NULL */

/* snprintf into a fixed buffer that may be NULL or of size 0. */
void ingot_format(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The JSON type of a value as error messages name it ("missing" for NULL). */
const char *ingot_json_type_name(json_t *v);

/* ---- descriptors as loaded ------------------------------------------------ */
typedef struct ingot_sig_arg {
  char kind[INGOT_MAX_STRING_BYTES + 1];
  uint32_t size, offset;
} ingot_sig_arg;

typedef struct ingot_umd {
  const char *id, *name, *file; /* borrowed from doc / pack */
  int graph_scope;              /* 1 graph, 0 kernel */
  json_t *constraints;          /* borrowed from doc; every entry verified at load */
} ingot_umd;

typedef struct ingot_code_object {
  char arch[INGOT_ARCH_NAME_BYTES];
  char *path; /* absolute, resolved, inside the pack folder */
  unsigned char sha256[32];
  /* The split entry's resources as packaged (0 when the KDP does not say):
   * registers per lane (VGPRs + AGPRs on AMD) and static LDS bytes. */
  int split_registers;
  int split_lds;
  /* Dynamic LDS bytes each UDD entry point is launched with (the KDP object's
   * dynamic_lds; 0 where it says nothing). Correctness, not planning: a ring
   * kernel launched with less traps. */
  uint32_t dynamic_lds[INGOT_MAX_ENTRY_POINTS];
} ingot_code_object;

struct ingot_pack;

typedef struct ingot_kernel {
  struct ingot_pack *pack;
  const char *id, *name; /* borrowed from the KDP document */
  int64_t priority;
  /* the family's decoded metadata (family.h meta_decode) */
  union {
    int64_t align_;
    unsigned char bytes[INGOT_MAX_META_BYTES];
  } meta;
  json_t *metadata; /* owned: the metadata with KMD defaults filled in */
  size_t num_matchers;
  const ingot_umd **matchers;
  size_t num_objects;
  ingot_code_object *objects;
  const char *symbols[INGOT_MAX_ENTRY_POINTS]; /* per UDD entry point, borrowed */
  /* Loaded lazily on a device context, once (see plan.c). */
  pthread_mutex_t load_lock;
  atomic_int load_state; /* 0 not yet, 1 loaded, 2 failed */
  ingot_status load_status;
  char load_error[512];
  ingot_backend_module module;
  ingot_backend_function functions[INGOT_MAX_ENTRY_POINTS];
} ingot_kernel;

typedef struct ingot_pack {
  char *dir;  /* resolved absolute path */
  char *kdp_file;
  json_t *docs; /* owned: array of every parsed descriptor document */
  const char *name, *id;
  const ingot_family *family; /* its dispatch stub's (dispatch.h) */
  size_t num_umds;
  ingot_umd *umds;
  size_t num_graph_matchers;
  const ingot_umd **graph_matchers; /* KDP.matchers, then UED.graph_match.matchers */
  const ingot_dispatch_entry *dispatch;
  uint32_t kernarg_size;
  size_t num_entry_points;
  size_t num_sig;
  ingot_sig_arg sig[INGOT_MAX_SIGNATURE_ARGS];
  size_t num_archs;
  char archs[INGOT_MAX_ARCHS][INGOT_ARCH_NAME_BYTES];
  size_t num_kernels;
  ingot_kernel *kernels;
  json_t *kdp; /* borrowed from docs */
  /* Every id the pack defines (descriptors and kernels) with its kind and file:
   * a pack opened later may repeat none of them. Owned (pack_loader.c). */
  size_t num_ids;
  struct ingot_doc_entry *ids;
} ingot_pack;

void ingot_pack_free(ingot_pack *pack, const ingot_backend_ops *ops, ingot_backend_device *dev);

/* The kernel's code object for arch; NULL when it has none. */
const ingot_code_object *ingot_kernel_object(const ingot_kernel *k, const char *arch);

/* Loads and verifies one pack folder; on failure *out is NULL and err holds
 * "<file>: <json path>: <problem> (allowed: ...)". existing: the packs already
 * open on the context (no id of any kind may repeat). signing_key: NULL, or the
 * Ed25519 public key the KDP's detached signature must verify with. */
ingot_status ingot_pack_load(const char *pack_dir, ingot_pack *const *existing, size_t num_existing,
                             const unsigned char *signing_key, ingot_pack **out, ingot_strbuf *err);

/* ---- pack files (util.c, pack_signature.c) ------------------------------- */
/* "a FIFO", "a folder", ... for a st_mode. */
const char *ingot_file_type_name(unsigned mode);
/* Reads a whole regular file (path relative to the folder fd `at`, or
 * AT_FDCWD) of at most `limit` bytes without blocking: anything but a regular
 * file is refused before it is opened (INGOT_INVALID_PACK, "not a regular
 * file (a FIFO) (allowed: a regular file)"), and with nofollow a symbolic link
 * too. On success *out (NUL-terminated, the caller frees it) and *size. */
ingot_status ingot_read_regular_file(int at, const char *path, int nofollow, size_t limit, unsigned char **out,
                                     size_t *size, char *msg, size_t msg_size);
/* 1: sig verifies over data with the raw Ed25519 public key; 0: it does not;
 * -1: libcrypto failed. */
int ingot_ed25519_verify(const unsigned char key[INGOT_ED25519_KEY_BYTES], const unsigned char *sig, size_t sig_len,
                         const unsigned char *data, size_t size);

/* ---- the context ------------------------------------------------------- */
struct ingot_context {
  ingot_backend backend;
  const ingot_backend_ops *ops; /* NULL on host contexts */
  ingot_backend_device *dev;
  char arch[INGOT_ARCH_NAME_BYTES]; /* "" = any (host context without arch) */
  char device_arch[INGOT_ARCH_NAME_BYTES]; /* the device's own (device contexts; arch may emulate on it) */
  int wave_size;                    /* 0 = from the chosen kernel's arch */
  int compute_units;
  size_t num_packs;
  ingot_pack **packs;
  ingot_strbuf last_error;
  ingot_strbuf decline_report;
  /* ingot_context_require_signature: every later open_pack verifies the KDP's
   * detached Ed25519 signature with this public key. */
  int require_signature;
  unsigned char signing_key[INGOT_ED25519_KEY_BYTES];
  /* The caller's reference (1 until ingot_context_destroy) plus one per live
   * plan: a plan keeps its packs, kernels and device open (ingot.h). */
  atomic_size_t refs;
};

/* A plan takes a reference at creation and drops it at destroy; the last
 * release frees the context. */
void ingot_context_retain(ingot_context *ctx);
void ingot_context_release(ingot_context *ctx);

void ingot_context_set_error(ingot_context *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void ingot_context_clear_error(ingot_context *ctx);

/* ---- matching ---------------------------------------------------------- */
/* Verifies one constraint object at load time against the family's fields; err gets the problem. */
int ingot_constraint_check(json_t *c, const ingot_family *family, char *err, size_t err_size);
/* Evaluates one constraint on a graph of the family; on failure writes "field = value, allowed op operand". */
int ingot_constraint_holds(json_t *c, const ingot_family *family, const void *g, ingot_strbuf *why);
/* The kernels of the family's packs that admit g and share the best rank
 * (docs/INTERNALS.md section 3: the family's score, then priority), in the
 * family's tie order, then the lower id;
 * the plan takes the one its dispatch stub models fastest. Returns their count
 * and *out (the caller frees it); 0 when none admits (report then holds one
 * "no kernel has F V (kernels exist for ...)" line per field no kernel admits,
 * then one line per declined pack or kernel), -1 when out of memory. */
int ingot_select_kernels(const ingot_context *ctx, const ingot_family *family, const void *g,
                         ingot_strbuf *report, const ingot_kernel ***out);

/* ---- plans --------------------------------------------------------------- */
#define INGOT_MAX_CONSIDERED 8
/* A kernel later in tie order replaces the best so far only when its
 * modelled time is below this share of the best's: the models are not finer
 * than that, and their small terms (a segment's partial, the merge's reads)
 * would otherwise break exact ties measured to favour fewer waves (decisions
 * 0016, 0033). */
#define INGOT_COST_MARGIN 0.99
struct ingot_plan {
  ingot_context *ctx;
  const ingot_kernel *kernel;
  const ingot_family *family;
  /* a copy of the family's graph struct */
  union {
    int64_t align_;
    double align_d_;
    unsigned char bytes[INGOT_MAX_GRAPH_BYTES];
  } graph;
  ingot_device_caps caps;
  ingot_dispatch_plan dispatch;
  /* The kernels of the chosen rank that planned, in tie order (the first
   * INGOT_MAX_CONSIDERED), with their modelled times: what ingot-inspect shows. */
  int num_considered;
  struct {
    const ingot_kernel *kernel;
    double cost;
    int splits;
  } considered[INGOT_MAX_CONSIDERED];
};

/* For ingot-inspect: the launches of a plan. */
const ingot_dispatch_plan *ingot_plan_dispatch_info(const ingot_plan *plan);

int ingot_arch_wave_size(const char *arch); /* 32 sm_*, 64 gfx* and sm_*_w64, 0 unknown */
/* 1 when a device of arch `device` runs code objects built for `arch`: its own
 * arch, or on NVIDIA "<device>_w64" (the AMD kernels' 64-lane wave emulated as
 * two warps, templates/ingot_arch.h INGOT_EMULATE_WAVE64); else 0. */
int ingot_arch_runs_on(const char *arch, const char *device);
/* Compute units (CUs, SMs) of the arch's product, what a host context plans
 * for: the arch table's (ingot_abi.h, generated from generator/ingot/archs.py:
 * gfx942 304 MI300X, gfx950 256 MI355X, sm_90 132 H200); an arch outside it
 * (or NULL) gets INGOT_DEFAULT_COMPUTE_UNITS. A device context has its device's. */
int ingot_arch_compute_units(const char *arch);
/* Static LDS per workgroup: the arch table's; outside it 48 KiB for sm_*, 64 KiB
 * for gfx*, else 0. */
size_t ingot_arch_max_lds(const char *arch);
/* The most LDS one workgroup may take at launch (NVIDIA: with the function's
 * opt-in attribute; AMD: the arch's LDS): the arch table's; outside it the
 * static limit above. */
size_t ingot_arch_max_dynamic_lds(const char *arch);
int ingot_blocks_per_cu(const char *arch, const ingot_code_object *obj, int waves, int wave_size);

#endif
