/* dispatch.h: the contract between the runtime and the generated dispatch
 * stubs (generated/<pack>/dispatch/<pack>_dispatch.c) of every family. A stub
 * turns one kernel's metadata, a graph and the device's properties into
 * launches, a workspace size and kernarg bytes. Stubs are pure functions: no
 * allocation, no driver calls. The metadata, graph and buffers are the
 * family's own structs (family.h), passed as const void *; a stub serves the
 * one family its entry names. */
#ifndef INGOT_DISPATCH_H
#define INGOT_DISPATCH_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ingot/ingot.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Dispatch entries are looked up by name (the UDD's dispatch_symbol), also with
 * dlsym in the running process, so a provider's own generated stubs are found. */
#define INGOT_DISPATCH_EXPORT __attribute__((visibility("default")))

/* A stub's refusal: the message (naming the field and what is allowed) into err
 * when the caller gave room for one; INGOT_INVALID_ARGUMENT back. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static inline ingot_status ingot_dispatch_refuse(char *err, size_t err_size, const char *fmt, ...) {
  if (err && err_size) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_size, fmt, ap);
    va_end(ap);
  }
  return INGOT_INVALID_ARGUMENT;
}

#define INGOT_MAX_LAUNCHES 2
#define INGOT_MAX_KERNARG_BYTES 512

/* caps.balance: the rounds of resident workgroups a short batch's pieces fill,
 * at most this many (INGOT_BALANCE=N) */
#define INGOT_BALANCE_MAX_ROUNDS 8
/* caps.balance: the family decides (the runtime's default, INGOT_BALANCE unset) */
#define INGOT_BALANCE_AUTO (-1)

typedef struct ingot_device_caps {
  int wave_size;       /* 32 on NVIDIA, 64 on gfx942/gfx950 */
  int compute_units;   /* SMs / CUs; 0 when unknown (host context: its arch's, ingot_arch_compute_units) */
  size_t max_lds_bytes;
  int blocks_per_cu;   /* split workgroups of the chosen kernel that fit on one CU at once,
                          from its registers and LDS; 0 when unknown */
  int balance;         /* 0: uniform segments only; N = 1..8: the plan may balance a batch over
                          its real lengths on the device (docs/design/balanced-split.md), its
                          pieces filling at least N rounds of resident workgroups;
                          INGOT_BALANCE_AUTO: where the family finds it pays (one round); the
                          runtime sets it from INGOT_BALANCE=N (unset: INGOT_BALANCE_AUTO) */
} ingot_device_caps;

/* The launch may begin while the previous grid in the stream (the plan's own,
 * or the caller's) still runs: the kernel waits for that grid's completion and
 * memory before it reads anything (programmatic dependent launch, sm_90);
 * backends without it launch normally, which is always correct. */
#define INGOT_LAUNCH_PROGRAMMATIC 1u

typedef struct ingot_launch {
  int entry;                 /* index into the UDD's entry_points */
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t lds_bytes;        /* dynamic LDS: the stub leaves 0, the runtime sets the entry
                                point's (its code object's dynamic_lds in the KDP) */
  uint32_t flags;            /* INGOT_LAUNCH_* */
} ingot_launch;

#define INGOT_MAX_PLAN_PARAMS 256

typedef struct ingot_dispatch_plan {
  int num_launches;
  ingot_launch launches[INGOT_MAX_LAUNCHES];
  int num_splits;          /* the family's own measure of how the work was divided (1: not) */
  uint64_t workspace_bytes;
  /* The plan's modelled time, >= 0, in the stub's own units: the runtime plans
   * every kernel of the best rank and keeps the least (0 for all: no model, the
   * first in tie order). Comparable between the kernels of one family. */
  double cost;
  /* The family's scalars fixed at plan time (strides, sizes, flags), in its own
   * struct; pack() adds the pointers. */
  union {
    int64_t align_;
    double align_d_;
    unsigned char bytes[INGOT_MAX_PLAN_PARAMS];
  } params;
} ingot_dispatch_plan;

/* meta: the kernel's decoded metadata, graph: a validated graph, both of the
 * stub's family. */
typedef ingot_status (*ingot_dispatch_plan_fn)(const void *meta, const void *graph, const ingot_device_caps *caps,
                                               ingot_dispatch_plan *out, char *err, size_t err_size);
/* Writes the kernarg bytes of one launch into buf (size cap); *size gets the
 * byte count, which equals the UDD's kernarg_size. buffers: the family's. */
typedef ingot_status (*ingot_dispatch_pack_fn)(const ingot_dispatch_plan *plan, int launch, const void *buffers,
                                               void *workspace, uint8_t *buf, size_t cap, size_t *size, char *err,
                                               size_t err_size);

typedef struct ingot_dispatch_entry {
  const char *symbol;      /* the UDD's dispatch_symbol */
  const char *family;      /* the family whose metadata, graphs and buffers it takes (family.h) */
  uint32_t kernarg_size;   /* must equal the UDD's kernarg_size */
  ingot_dispatch_plan_fn plan;
  ingot_dispatch_pack_fn pack;
} ingot_dispatch_entry;

/* Registry (runtime/src/dispatch_registry.c): NULL when the symbol is unknown. */
const ingot_dispatch_entry *ingot_dispatch_find(const char *symbol);
/* The same, then the pack's own dispatch library <pack_dir>/dispatch/<symbol>.so,
 * loaded only when its bytes hash to sha256_hex (the KDP's dispatch_library
 * record; NULL: none, and a library that is there is refused). NULL when not
 * found; why (may be NULL) then says what was wrong with a library that is
 * there, "" when there is none. */
#define INGOT_MAX_DISPATCH_LIBRARY_BYTES ((uint64_t)64 << 20)
const ingot_dispatch_entry *ingot_dispatch_find_in_pack(const char *symbol, const char *pack_dir,
                                                        const char *sha256_hex, char *why, size_t why_size);

#ifdef __cplusplus
}
#endif
#endif
