/* matcher.c: UMD constraints as data. A constraint is
 * {"field": F, "op": eq|in|range|multiple_of|power_of_two, operands...};
 * F is one of the derived graph fields (graph.c). Nothing here knows a shape. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int value_has_type(json_t *v, ingot_field_type t) {
  switch (t) {
  case INGOT_FIELD_INT: return json_is_integer(v);
  case INGOT_FIELD_STRING: return json_is_string(v);
  case INGOT_FIELD_BOOL: return json_is_boolean(v);
  case INGOT_FIELD_INT_PAIR:
    return json_is_array(v) && json_array_size(v) == 2 && json_is_integer(json_array_get(v, 0)) &&
           json_is_integer(json_array_get(v, 1));
  case INGOT_FIELD_UNKNOWN: break;
  }
  return 0;
}

static const char *type_name(ingot_field_type t) {
  switch (t) {
  case INGOT_FIELD_INT: return "an integer";
  case INGOT_FIELD_STRING: return "a string";
  case INGOT_FIELD_BOOL: return "a boolean";
  case INGOT_FIELD_INT_PAIR: return "a list of two integers";
  case INGOT_FIELD_UNKNOWN: break;
  }
  return "?";
}

/* Keys each op takes besides field and op. */
static const char *op_keys(const char *op) {
  if (!strcmp(op, "eq")) return "value";
  if (!strcmp(op, "in")) return "values";
  if (!strcmp(op, "range")) return "min max";
  if (!strcmp(op, "multiple_of")) return "value";
  if (!strcmp(op, "power_of_two")) return "";
  return NULL;
}

static int key_in(const char *key, const char *list) {
  size_t n = strlen(key);
  for (const char *p = list; *p;) {
    const char *e = strchr(p, ' ');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == n && strncmp(p, key, n) == 0) return 1;
    p += len;
    while (*p == ' ') ++p;
  }
  return 0;
}

int ingot_constraint_check(json_t *c, char *err, size_t err_size) {
  if (!json_is_object(c)) {
    ingot_format(err, err_size, "expected an object {\"field\", \"op\", ...}");
    return 0;
  }
  json_t *jf = json_object_get(c, "field"), *jo = json_object_get(c, "op");
  if (!json_is_string(jf)) {
    ingot_format(err, err_size, "field: missing or not a string (allowed: %s)", ingot_graph_field_names());
    return 0;
  }
  const char *field = json_string_value(jf);
  ingot_field_type t = ingot_graph_field_type(field);
  if (t == INGOT_FIELD_UNKNOWN) {
    ingot_format(err, err_size, "field: unknown field \"%.64s\" (allowed: %s)", field,
                 ingot_graph_field_names());
    return 0;
  }
  const char *op = json_is_string(jo) ? json_string_value(jo) : NULL;
  const char *keys = op ? op_keys(op) : NULL;
  if (keys == NULL) {
    ingot_format(err, err_size, "op: %s%.64s%s (allowed: eq, in, range, multiple_of, power_of_two)",
                 op ? "\"" : "", op ? op : "missing or not a string", op ? "\"" : "");
    return 0;
  }
  const char *key;
  json_t *val;
  json_object_foreach(c, key, val) {
    if (strcmp(key, "field") && strcmp(key, "op") && !key_in(key, keys)) {
      ingot_format(err, err_size, "%.64s: unknown key for op %s (allowed: field, op%s%s)", key, op,
                   keys[0] ? ", " : "", keys);
      return 0;
    }
  }
  if (!strcmp(op, "eq")) {
    json_t *v = json_object_get(c, "value");
    if (!value_has_type(v, t)) {
      ingot_format(err, err_size, "value: missing or of the wrong type (allowed: %s, the type of %s)",
                   type_name(t), field);
      return 0;
    }
  } else if (!strcmp(op, "in")) {
    json_t *vs = json_object_get(c, "values");
    if (!json_is_array(vs) || json_array_size(vs) == 0) {
      ingot_format(err, err_size, "values: missing, not a list or empty (allowed: a non-empty list)");
      return 0;
    }
    size_t i;
    json_t *v;
    json_array_foreach(vs, i, v) {
      if (!value_has_type(v, t)) {
        ingot_format(err, err_size, "values[%zu]: wrong type (allowed: %s, the type of %s)", i,
                     type_name(t), field);
        return 0;
      }
    }
  } else {
    if (t != INGOT_FIELD_INT) {
      ingot_format(err, err_size, "op: %s applies to integer fields only, %s is %s", op, field,
                   type_name(t));
      return 0;
    }
    if (!strcmp(op, "range")) {
      json_t *lo = json_object_get(c, "min"), *hi = json_object_get(c, "max");
      if (!json_is_integer(lo) || !json_is_integer(hi) ||
          json_integer_value(lo) > json_integer_value(hi)) {
        ingot_format(err, err_size, "min, max: missing, not integers or min > max (allowed: integers, min <= max)");
        return 0;
      }
    } else if (!strcmp(op, "multiple_of")) {
      json_t *v = json_object_get(c, "value");
      if (!json_is_integer(v) || json_integer_value(v) < 1) {
        ingot_format(err, err_size, "value: missing or not a positive integer (allowed: an integer >= 1)");
        return 0;
      }
    }
  }
  return 1;
}

static void append_json(ingot_strbuf *sb, json_t *v) {
  char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
  ingot_strbuf_appendf(sb, "%s", s ? s : "?");
  free(s);
}

int ingot_constraint_holds(json_t *c, const ingot_attention_graph *g, ingot_strbuf *why) {
  const char *field = json_string_value(json_object_get(c, "field"));
  const char *op = json_string_value(json_object_get(c, "op"));
  json_t *v = ingot_graph_field(g, field);
  if (v == NULL) { /* unreachable after ingot_constraint_check; decline rather than admit */
    ingot_strbuf_appendf(why, "%s: not derivable", field);
    return 0;
  }
  int ok = 0;
  json_t *operand = NULL;
  if (!strcmp(op, "eq")) {
    operand = json_object_get(c, "value");
    ok = json_equal(v, operand);
  } else if (!strcmp(op, "in")) {
    operand = json_object_get(c, "values");
    size_t i;
    json_t *x;
    json_array_foreach(operand, i, x) ok = ok || json_equal(v, x);
  } else {
    json_int_t x = json_integer_value(v);
    if (!strcmp(op, "range")) {
      ok = x >= json_integer_value(json_object_get(c, "min")) &&
           x <= json_integer_value(json_object_get(c, "max"));
    } else if (!strcmp(op, "multiple_of")) {
      operand = json_object_get(c, "value");
      ok = x % json_integer_value(operand) == 0;
    } else if (!strcmp(op, "power_of_two")) {
      ok = x > 0 && (x & (x - 1)) == 0;
    }
  }
  if (!ok) {
    ingot_strbuf_appendf(why, "%s = ", field);
    append_json(why, v);
    ingot_strbuf_appendf(why, ", allowed %s", op);
    if (!strcmp(op, "range")) {
      ingot_strbuf_appendf(why, " [%lld, %lld]",
                           (long long)json_integer_value(json_object_get(c, "min")),
                           (long long)json_integer_value(json_object_get(c, "max")));
    } else if (operand != NULL) {
      ingot_strbuf_appendf(why, " ");
      append_json(why, operand);
    }
  }
  json_decref(v);
  return ok;
}

/* First failing constraint of the UMDs, appended to why; 1 when all hold. */
static int umds_hold(const ingot_umd *const *umds, size_t n, const ingot_attention_graph *g,
                     ingot_strbuf *why) {
  for (size_t u = 0; u < n; ++u) {
    size_t i;
    json_t *c;
    json_array_foreach(umds[u]->constraints, i, c) {
      if (!ingot_constraint_holds(c, g, why)) return 0;
    }
  }
  return 1;
}

const ingot_code_object *ingot_kernel_object(const ingot_kernel *k, const char *arch) {
  for (size_t i = 0; i < k->num_objects; ++i)
    if (!strcmp(k->objects[i].arch, arch)) return &k->objects[i];
  return NULL;
}

/* Rank of a kernel for a graph (docs/INTERNALS.md section 3): score (the
 * tightest max_sq), then priority; higher ranks first. */
static int rank_cmp(const ingot_kernel *a, const ingot_kernel *b, int64_t seq_q) {
  int64_t sa = -((int64_t)a->meta.max_sq - seq_q), sb = -((int64_t)b->meta.max_sq - seq_q);
  if (sa != sb) return sa > sb ? 1 : -1;
  if (a->priority != b->priority) return a->priority > b->priority ? 1 : -1;
  return 0;
}

/* Order among kernels of one rank: fewer waves per workgroup, then the lower id. */
static int tie_order(const void *pa, const void *pb) {
  const ingot_kernel *a = *(const ingot_kernel *const *)pa, *b = *(const ingot_kernel *const *)pb;
  if (a->meta.waves != b->meta.waves) return a->meta.waves < b->meta.waves ? -1 : 1;
  return strcmp(a->id, b->id);
}

int ingot_select_kernels(const ingot_context *ctx, const ingot_attention_graph *g, ingot_strbuf *report,
                         const ingot_kernel ***out) {
  *out = NULL;
  const ingot_kernel **list = NULL;
  size_t n = 0, cap = 0;
  for (size_t p = 0; p < ctx->num_packs; ++p) {
    const ingot_pack *pack = ctx->packs[p];
    ingot_strbuf why = {0};
    if (!umds_hold(pack->graph_matchers, pack->num_graph_matchers, g, &why)) {
      ingot_strbuf_appendf(report, "pack %s (all %zu kernels, graph-scope): %s\n", pack->name,
                           pack->num_kernels, ingot_strbuf_str(&why));
      ingot_strbuf_free(&why);
      continue;
    }
    ingot_strbuf_free(&why);
    for (size_t i = 0; i < pack->num_kernels; ++i) {
      const ingot_kernel *k = &pack->kernels[i];
      if (ctx->arch[0] != '\0' && ingot_kernel_object(k, ctx->arch) == NULL) {
        ingot_strbuf_appendf(report, "%s: arch = \"%s\", allowed in [", k->name, ctx->arch);
        for (size_t a = 0; a < k->num_objects; ++a)
          ingot_strbuf_appendf(report, "%s\"%s\"", a ? "," : "", k->objects[a].arch);
        ingot_strbuf_appendf(report, "]\n");
        continue;
      }
      ingot_strbuf kwhy = {0};
      if (!umds_hold(k->matchers, k->num_matchers, g, &kwhy)) {
        ingot_strbuf_appendf(report, "%s: %s\n", k->name, ingot_strbuf_str(&kwhy));
        ingot_strbuf_free(&kwhy);
        continue;
      }
      ingot_strbuf_free(&kwhy);
      /* Keep only the best rank seen so far. */
      const int c = n ? rank_cmp(k, list[0], g->q.dims[2]) : 1;
      if (c < 0) continue;
      if (c > 0 && n) n = 0;
      if (n == cap) {
        const size_t grown = cap ? 2 * cap : 8;
        const ingot_kernel **more = realloc(list, grown * sizeof *list);
        if (more == NULL) {
          free(list);
          return -1;
        }
        list = more, cap = grown;
      }
      list[n++] = k;
    }
  }
  if (ctx->num_packs == 0) ingot_strbuf_appendf(report, "no pack is open on this context\n");
  if (n == 0) {
    free(list);
    return 0;
  }
  qsort(list, n, sizeof *list, tie_order);
  *out = list;
  return (int)n;
}
