/* family.h: what the runtime's core asks of a kernel family. The core (pack
 * loading and verification, constraints, matching, planning, backends,
 * code-object loading, launch) calls a family only through this table and
 * never knows what the family computes. A family lives in its own folder,
 * runtime/src/families/<family>/, and is registered in
 * runtime/src/families/registry.c (docs/design/runtime-families.md).
 *
 * The graph, buffers and kernel metadata of a family are the family's own
 * structs; the core holds them as bytes (at most the sizes below) and hands
 * them back as const void *. The dispatch stubs of the family (dispatch.h) get
 * the same pointers. */
#ifndef INGOT_FAMILY_H
#define INGOT_FAMILY_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "ingot/ingot.h"

#ifdef __cplusplus
extern "C" {
#endif

#define INGOT_MAX_GRAPH_BYTES 1024 /* sizeof a family's graph struct, at most */
#define INGOT_MAX_META_BYTES 128   /* sizeof a family's decoded kernel metadata, at most */

/* The JSON type of a graph field a constraint may name. */
typedef enum ingot_field_type {
  INGOT_FIELD_UNKNOWN = 0,
  INGOT_FIELD_INT,
  INGOT_FIELD_STRING,
  INGOT_FIELD_BOOL,
  INGOT_FIELD_INT_PAIR
} ingot_field_type;

typedef struct ingot_field {
  const char *name;
  ingot_field_type type;
} ingot_field;

/* A KMD field the family's metadata decoder reads: the pack's KMD must declare
 * it with this type ("int", "string", "bool", "float", "int_list"). */
typedef struct ingot_meta_field {
  const char *name, *type;
} ingot_meta_field;

typedef struct ingot_family {
  const char *name;    /* "attention_decode": the name ingot_plan_create_family takes and the
                          family of every dispatch stub of its packs (dispatch.h) */
  size_t graph_size;   /* sizeof its graph struct (<= INGOT_MAX_GRAPH_BYTES) */
  size_t buffers_size; /* sizeof its buffers struct */

  /* ---- the graph ---- */
  /* Structure (ranks, dims, strides, enums); whether a kernel supports it is the
   * matcher's business. err gets "graph: <field>: <problem> (allowed: ...)". */
  ingot_status (*validate)(const void *graph, char *err, size_t err_size);
  /* The derived fields UMD constraints name, and their types. */
  const ingot_field *fields;
  size_t num_fields;
  /* One field's value as JSON (the caller owns it); NULL when name is not a field. */
  json_t *(*field)(const void *graph, const char *name);
  /* What a derived value means where the value alone would not say (into buf,
   * "" for none). Returns 0 when the field does not apply to the graph (the
   * decline summary then leaves it out), 1 otherwise. */
  int (*field_note)(const void *graph, const char *field, char *buf, size_t size);

  /* ---- kernel metadata ---- */
  const ingot_meta_field *meta_fields;
  size_t num_meta_fields;
  /* Decodes one kernel's metadata (KMD defaults filled in, every field's type
   * checked against the KMD) into meta (INGOT_MAX_META_BYTES, zeroed), and
   * refuses what no plan could accept. archs: the archs of the kernel's code
   * objects. On failure returns 0, where gets the metadata key at fault ("" for
   * the metadata as a whole) and err the problem with what is allowed. */
  int (*meta_decode)(json_t *metadata, const char *const *archs, size_t num_archs, void *meta, char *where,
                     size_t where_size, char *err, size_t err_size);

  /* ---- ranking (docs/INTERNALS.md section 3) ---- */
  /* The family's score of two kernels that both admit the graph: > 0 when a
   * ranks above b, < 0 below, 0 equal (the pack's priority decides next). NULL:
   * every kernel scores the same. */
  int (*score_cmp)(const void *meta_a, const void *meta_b, const void *graph);
  /* Among kernels of one rank: < 0 when a comes first (the core breaks the
   * remaining ties by kernel id). NULL: by id only. */
  int (*tie_cmp)(const void *meta_a, const void *meta_b);
  /* Waves per workgroup of entry point 0 (the occupancy model); 0 unknown. */
  int (*waves)(const void *meta);

  /* ---- execute ---- */
  /* The buffers a launch needs: NULL pointers, alignment. err names the buffer
   * ("ingot_plan_execute: buffers->q is NULL (required: ...)"). */
  ingot_status (*check_buffers)(const void *graph, const void *buffers, char *err, size_t err_size);
} ingot_family;

/* ---- helpers the core gives every family (runtime/src/tensor.c) ---- */
const char *ingot_dtype_name(ingot_dtype d); /* "bf16", ..., "invalid" */
/* One tensor: dtype and memory enums (host memory only when host_ok), rank,
 * dims >= 1, strides >= 1, the last element's offset within int64. err gets
 * "graph: <name>.<what> = <value> (allowed: ...)". */
ingot_status ingot_tensor_check(const ingot_tensor_desc *t, const char *name, int rank, int host_ok, char *err,
                                size_t err_size);
/* "graph: <what> = <got> (allowed: <want>, the <want_what>)" unless got == want. */
ingot_status ingot_dim_equal(const char *what, int64_t got, int64_t want, const char *want_what, char *err,
                             size_t err_size);
/* An output's strides give every index tuple its own element (a sufficient test). */
ingot_status ingot_tensor_check_no_overlap(const ingot_tensor_desc *t, const char *name, char *err, size_t err_size);
/* Layout names constraints compare: "dense_d" (last stride 1, the others
 * multiples of 8 elements) or "strided"; "contiguous" (row-major, no gaps),
 * "strided" or "absent" (rank 0); "dense_rows" (last stride 1) or "strided" or
 * "absent". */
const char *ingot_layout_dense_d(const ingot_tensor_desc *t);
const char *ingot_layout_flat(const ingot_tensor_desc *t);
const char *ingot_layout_rows(const ingot_tensor_desc *t);
const char *ingot_dtype_or_absent(const ingot_tensor_desc *t); /* "absent" for rank 0 */
/* A buffer a launch needs: "ingot_plan_execute: buffers-><name> is NULL
 * (required: <why>)" or not align-byte aligned. */
ingot_status ingot_buffer_need(const void *p, const char *name, const char *why, size_t align, char *err,
                               size_t err_size);

/* For meta_decode: where gets key, err the formatted problem; returns 0. */
int ingot_meta_fail(char *where, size_t where_size, const char *key, char *err, size_t err_size, const char *fmt,
                    ...) __attribute__((format(printf, 6, 7)));
/* The metadata's "dtype" (bf16, fp16: an ingot_dtype) and "kv_layout" (contiguous,
 * paged: *paged 0 or 1); 0 with ingot_meta_fail's outputs otherwise. */
int ingot_meta_dtype_layout(json_t *md, int *dtype, int *paged, char *where, size_t wn, char *err, size_t en);

/* The registered families (runtime/src/families/registry.c). */
const ingot_family *ingot_family_find(const char *name); /* NULL when none has the name */
const char *ingot_family_names(void);                     /* "attention_decode, kv_append" */

/* A field of a family's table; INGOT_FIELD_UNKNOWN when it has none of the name. */
ingot_field_type ingot_family_field_type(const ingot_family *f, const char *name);

#ifdef __cplusplus
}
#endif
#endif
