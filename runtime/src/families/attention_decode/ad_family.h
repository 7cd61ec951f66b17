/* ad_family.h: the attention decode family's runtime half (family.h): its
 * graph (ad_graph.c), graph JSON (ad_graph_json.c) and the family table
 * (ad_family.c). Private to the runtime, its tests and ingot-inspect. */
#ifndef INGOT_AD_FAMILY_H
#define INGOT_AD_FAMILY_H

#include "ingot_attention_decode_plan.h"
#include "internal.h"

extern const ingot_family ingot_family_attention_decode;

/* Checks the graph's structure (ranks, dims, strides, enums). Whether a kernel
 * supports it is the matcher's business. err gets "graph: <field>: ...". */
ingot_status ingot_graph_validate(const ingot_attention_graph *g, char *err, size_t err_size);

/* One derived field's value (docs/INTERNALS.md section 2; the family's table
 * lists them) as JSON (the caller owns it); NULL for an unknown name. */
json_t *ingot_graph_field(const ingot_attention_graph *g, const char *field);
/* What a derived value means where the value alone would not say (group 0:
 * "Hq 12 is not a multiple of Hkv 5"; "" otherwise). 0 when the field does
 * not apply to g (page_size of a contiguous graph), 1 otherwise. */
int ingot_graph_field_note(const ingot_attention_graph *g, const char *field, char *buf, size_t size);

/* The decoded metadata of a kernel of this family. */
static inline const ingot_ad_kernel_meta *ingot_ad_meta(const ingot_kernel *k) {
  return (const ingot_ad_kernel_meta *)(const void *)k->meta.bytes;
}
/* The graph a plan of this family was made for. */
static inline const ingot_attention_graph *ingot_ad_plan_graph(const ingot_plan *p) {
  return (const ingot_attention_graph *)(const void *)p->graph.bytes;
}

#endif
