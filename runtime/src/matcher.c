/* matcher.c: UMD constraints as data. A constraint is
 * {"field": F, "op": eq|in|range|multiple_of|power_of_two, operands...};
 * F is one of the derived graph fields of the pack's family (family.h). Nothing
 * here knows a shape or a family. */
#include <stdio.h>
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

/* "dtype, kv_dtype, ...": the family's field names, for messages. */
static void field_names(const ingot_family *family, char *buf, size_t size) {
  size_t at = 0;
  if (size) buf[0] = '\0';
  for (size_t i = 0; i < family->num_fields && at + 1 < size; ++i) {
    const int w = snprintf(buf + at, size - at, "%s%s", i ? ", " : "", family->fields[i].name);
    if (w < 0) break;
    at += (size_t)w;
  }
}

int ingot_constraint_check(json_t *c, const ingot_family *family, char *err, size_t err_size) {
  char names[1024];
  field_names(family, names, sizeof names);
  if (!json_is_object(c)) {
    ingot_format(err, err_size, "expected an object {\"field\", \"op\", ...}");
    return 0;
  }
  json_t *jf = json_object_get(c, "field"), *jo = json_object_get(c, "op");
  if (!json_is_string(jf)) {
    ingot_format(err, err_size, "field: missing or not a string (allowed: %s)", names);
    return 0;
  }
  const char *field = json_string_value(jf);
  ingot_field_type t = ingot_family_field_type(family, field);
  if (t == INGOT_FIELD_UNKNOWN) {
    ingot_format(err, err_size, "field: unknown field \"%.64s\" of family %s (allowed: %s)", field, family->name,
                 names);
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

int ingot_constraint_holds(json_t *c, const ingot_family *family, const void *g, ingot_strbuf *why) {
  const char *field = json_string_value(json_object_get(c, "field"));
  const char *op = json_string_value(json_object_get(c, "op"));
  json_t *v = family->field(g, field);
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
static int umds_hold(const ingot_umd *const *umds, size_t n, const ingot_family *family, const void *g,
                     ingot_strbuf *why) {
  for (size_t u = 0; u < n; ++u) {
    size_t i;
    json_t *c;
    json_array_foreach(umds[u]->constraints, i, c) {
      if (!ingot_constraint_holds(c, family, g, why)) return 0;
    }
  }
  return 1;
}

const ingot_code_object *ingot_kernel_object(const ingot_kernel *k, const char *arch) {
  for (size_t i = 0; i < k->num_objects; ++i)
    if (!strcmp(k->objects[i].arch, arch)) return &k->objects[i];
  return NULL;
}

/* Rank of a kernel for a graph (docs/INTERNALS.md section 3): the family's
 * score, then priority; higher ranks first. */
static int rank_cmp(const ingot_family *family, const ingot_kernel *a, const ingot_kernel *b, const void *g) {
  const int c = family->score_cmp ? family->score_cmp(a->meta.bytes, b->meta.bytes, g) : 0;
  if (c != 0) return c > 0 ? 1 : -1;
  if (a->priority != b->priority) return a->priority > b->priority ? 1 : -1;
  return 0;
}

/* Order among kernels of one rank (of one family): the family's, then the lower id. */
static int tie_order(const void *pa, const void *pb) {
  const ingot_kernel *a = *(const ingot_kernel *const *)pa, *b = *(const ingot_kernel *const *)pb;
  const ingot_family *family = a->pack->family;
  const int c = family->tie_cmp ? family->tie_cmp(a->meta.bytes, b->meta.bytes) : 0;
  if (c != 0) return c;
  return strcmp(a->id, b->id);
}

/* ---- the decline report's summary ---------------------------------------------
 * One line per field whose value no kernel admits, before the per-kernel lines:
 * of the kernels past their pack's graph scope and built for the context's
 * arch, every one that constrains the field fails it (kernels that do not
 * constrain it, e.g. contiguous ones and page_size, do not count: they were
 * declined for something else). The line names what the kernels admit instead:
 * the union of their operands (eq and in values, merged ranges). */
#define SUMMARY_MAX_FIELDS 64
#define SUMMARY_MAX_SHOWN 24 /* values and ranges named on one line */

typedef struct field_summary {
  const char *field; /* borrowed from a UMD */
  size_t constrained, admitted; /* kernels that constrain it / admit the graph's value */
  json_t *values;               /* distinct eq / in operands */
  json_t *ranges;               /* [min, max] operands */
  int multiple_of, power_of_two; /* other ops seen (the last multiple_of operand) */
} field_summary;

typedef struct decline_summary {
  size_t num_fields;
  field_summary fields[SUMMARY_MAX_FIELDS];
  /* the arch filter: kernels of packs past their graph scope, those built for it, and their archs */
  size_t arch_seen, arch_kept;
  json_t *archs;
} decline_summary;

static field_summary *summary_field(decline_summary *s, const char *field) {
  for (size_t i = 0; i < s->num_fields; ++i)
    if (!strcmp(s->fields[i].field, field)) return &s->fields[i];
  if (s->num_fields == SUMMARY_MAX_FIELDS) return NULL; /* more fields than the matcher knows: never */
  field_summary *f = &s->fields[s->num_fields++];
  memset(f, 0, sizeof *f);
  f->field = field;
  f->values = json_array();
  f->ranges = json_array();
  return f;
}

static void add_distinct(json_t *list, json_t *v) {
  size_t i;
  json_t *x;
  json_array_foreach(list, i, x) if (json_equal(x, v)) return;
  json_array_append(list, v);
}

/* Evaluates every kernel-scope constraint of k on g into the summary. */
static void summarize_kernel(decline_summary *s, const ingot_kernel *k, const void *g) {
  enum { kMaxPerKernel = SUMMARY_MAX_FIELDS };
  field_summary *seen[kMaxPerKernel];
  int ok[kMaxPerKernel];
  size_t n = 0;
  for (size_t u = 0; u < k->num_matchers; ++u) {
    size_t i;
    json_t *c;
    json_array_foreach(k->matchers[u]->constraints, i, c) {
      field_summary *f = summary_field(s, json_string_value(json_object_get(c, "field")));
      if (f == NULL) continue;
      ingot_strbuf scratch = {0};
      const int holds = ingot_constraint_holds(c, k->pack->family, g, &scratch);
      ingot_strbuf_free(&scratch);
      size_t j = 0;
      while (j < n && seen[j] != f) ++j;
      if (j == n) {
        if (n == kMaxPerKernel) continue;
        seen[n] = f, ok[n] = 1, ++n;
      }
      ok[j] = ok[j] && holds;
      const char *op = json_string_value(json_object_get(c, "op"));
      if (!strcmp(op, "eq")) {
        add_distinct(f->values, json_object_get(c, "value"));
      } else if (!strcmp(op, "in")) {
        size_t vi;
        json_t *v;
        json_array_foreach(json_object_get(c, "values"), vi, v) add_distinct(f->values, v);
      } else if (!strcmp(op, "range")) {
        json_t *r = json_pack("[OO]", json_object_get(c, "min"), json_object_get(c, "max"));
        add_distinct(f->ranges, r);
        json_decref(r);
      } else if (!strcmp(op, "multiple_of")) {
        f->multiple_of = (int)json_integer_value(json_object_get(c, "value"));
      } else if (!strcmp(op, "power_of_two")) {
        f->power_of_two = 1;
      }
    }
  }
  for (size_t j = 0; j < n; ++j) {
    ++seen[j]->constrained;
    seen[j]->admitted += ok[j] != 0;
  }
}

static int json_value_cmp(const void *pa, const void *pb) {
  json_t *a = *(json_t *const *)pa, *b = *(json_t *const *)pb;
  if (json_is_integer(a) && json_is_integer(b)) {
    const json_int_t x = json_integer_value(a), y = json_integer_value(b);
    return x < y ? -1 : x > y;
  }
  char *sa = json_dumps(a, JSON_ENCODE_ANY | JSON_COMPACT), *sb = json_dumps(b, JSON_ENCODE_ANY | JSON_COMPACT);
  const int c = strcmp(sa ? sa : "", sb ? sb : "");
  free(sa);
  free(sb);
  return c;
}

static int range_cmp(const void *pa, const void *pb) {
  const json_int_t *a = pa, *b = pb;
  return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : (a[1] < b[1] ? -1 : a[1] > b[1]);
}

/* "64, 128, 256", "1..64, 4096..16384", "multiples of 16": what a field admits. */
static void append_admitted(ingot_strbuf *sb, const field_summary *f) {
  size_t shown = 0, total = 0;
  const size_t nv = json_array_size(f->values), nr = json_array_size(f->ranges);
  json_t **vals = nv ? malloc(nv * sizeof *vals) : NULL;
  json_int_t(*rs)[2] = nr ? malloc(nr * sizeof *rs) : NULL;
  if ((nv && vals == NULL) || (nr && rs == NULL)) {
    free(vals);
    free(rs);
    ingot_strbuf_appendf(sb, "?");
    return;
  }
  for (size_t i = 0; i < nv; ++i) vals[i] = json_array_get(f->values, i);
  if (nv > 1) qsort(vals, nv, sizeof *vals, json_value_cmp);
  for (size_t i = 0; i < nv; ++i, ++total) {
    if (shown == SUMMARY_MAX_SHOWN) continue;
    ingot_strbuf_appendf(sb, "%s", shown++ ? ", " : "");
    append_json(sb, vals[i]);
  }
  for (size_t i = 0; i < nr; ++i) {
    rs[i][0] = json_integer_value(json_array_get(json_array_get(f->ranges, i), 0));
    rs[i][1] = json_integer_value(json_array_get(json_array_get(f->ranges, i), 1));
  }
  if (nr > 1) qsort(rs, nr, sizeof *rs, range_cmp);
  for (size_t i = 0; i < nr;) { /* merge overlapping and adjacent ranges */
    json_int_t lo = rs[i][0], hi = rs[i][1];
    size_t j = i + 1;
    for (; j < nr && (hi == INT64_MAX || rs[j][0] <= hi + 1); ++j)
      if (rs[j][1] > hi) hi = rs[j][1];
    ++total;
    if (shown < SUMMARY_MAX_SHOWN) {
      ingot_strbuf_appendf(sb, "%s", shown++ ? ", " : "");
      if (lo == hi) ingot_strbuf_appendf(sb, "%lld", (long long)lo);
      else ingot_strbuf_appendf(sb, "%lld..%lld", (long long)lo, (long long)hi);
    }
    i = j;
  }
  if (f->multiple_of) ingot_strbuf_appendf(sb, "%smultiples of %d", shown++ ? ", " : "", f->multiple_of);
  if (f->power_of_two) ingot_strbuf_appendf(sb, "%spowers of two", shown++ ? ", " : "");
  if (total > SUMMARY_MAX_SHOWN) ingot_strbuf_appendf(sb, ", ... (%zu in all)", total);
  free(vals);
  free(rs);
}

static void summary_free(decline_summary *s) {
  for (size_t i = 0; i < s->num_fields; ++i) {
    json_decref(s->fields[i].values);
    json_decref(s->fields[i].ranges);
  }
  json_decref(s->archs);
}

/* The summary lines of a graph no kernel admits (evaluated only then: a match
 * pays nothing for it). */
static void append_summary(ingot_strbuf *report, const ingot_context *ctx, const ingot_family *family,
                           const void *g) {
  decline_summary s;
  memset(&s, 0, sizeof s);
  s.archs = json_array();
  for (size_t p = 0; p < ctx->num_packs; ++p) {
    const ingot_pack *pack = ctx->packs[p];
    if (pack->family != family) continue;
    ingot_strbuf why = {0};
    const int graph_ok = umds_hold(pack->graph_matchers, pack->num_graph_matchers, family, g, &why);
    ingot_strbuf_free(&why);
    if (!graph_ok) continue;
    for (size_t i = 0; i < pack->num_kernels; ++i) {
      const ingot_kernel *k = &pack->kernels[i];
      ++s.arch_seen;
      if (ctx->arch[0] != '\0' && ingot_kernel_object(k, ctx->arch) == NULL) {
        for (size_t a = 0; a < k->num_objects; ++a) {
          json_t *name = json_string(k->objects[a].arch);
          add_distinct(s.archs, name);
          json_decref(name);
        }
        continue;
      }
      ++s.arch_kept;
      summarize_kernel(&s, k, g);
    }
  }
  if (s.arch_seen > 0 && s.arch_kept == 0) {
    ingot_strbuf_appendf(report, "no kernel has arch \"%s\" (kernels exist for ", ctx->arch);
    field_summary f = {.values = s.archs, .ranges = json_array()};
    append_admitted(report, &f);
    json_decref(f.ranges);
    ingot_strbuf_appendf(report, ")\n");
  }
  for (size_t i = 0; i < s.num_fields; ++i) {
    const field_summary *f = &s.fields[i];
    char note[160] = "";
    if (f->admitted > 0 || f->constrained == 0 || !family->field_note(g, f->field, note, sizeof note))
      continue;
    json_t *v = family->field(g, f->field);
    ingot_strbuf_appendf(report, "no kernel has %s ", f->field);
    append_json(report, v);
    json_decref(v);
    ingot_strbuf_appendf(report, " (%s%skernels exist for ", note, note[0] ? "; " : "");
    append_admitted(report, f);
    ingot_strbuf_appendf(report, ")\n");
  }
  summary_free(&s);
}

int ingot_select_kernels(const ingot_context *ctx, const ingot_family *family, const void *g,
                         ingot_strbuf *report, const ingot_kernel ***out) {
  *out = NULL;
  const ingot_kernel **list = NULL;
  size_t n = 0, cap = 0;
  /* per-kernel lines go after the summary, which is known only at the end */
  ingot_strbuf lines = {0};
  size_t family_packs = 0;
  for (size_t p = 0; p < ctx->num_packs; ++p) {
    const ingot_pack *pack = ctx->packs[p];
    if (pack->family != family) continue; /* another family's kernels compute something else */
    ++family_packs;
    ingot_strbuf why = {0};
    if (!umds_hold(pack->graph_matchers, pack->num_graph_matchers, family, g, &why)) {
      ingot_strbuf_appendf(&lines, "pack %s (all %zu kernels, graph-scope): %s\n", pack->name,
                           pack->num_kernels, ingot_strbuf_str(&why));
      ingot_strbuf_free(&why);
      continue;
    }
    ingot_strbuf_free(&why);
    for (size_t i = 0; i < pack->num_kernels; ++i) {
      const ingot_kernel *k = &pack->kernels[i];
      if (ctx->arch[0] != '\0' && ingot_kernel_object(k, ctx->arch) == NULL) {
        ingot_strbuf_appendf(&lines, "%s: arch = \"%s\", allowed in [", k->name, ctx->arch);
        for (size_t a = 0; a < k->num_objects; ++a) {
          ingot_strbuf_appendf(&lines, "%s\"%s\"", a ? "," : "", k->objects[a].arch);
        }
        ingot_strbuf_appendf(&lines, "]\n");
        continue;
      }
      ingot_strbuf kwhy = {0};
      if (!umds_hold(k->matchers, k->num_matchers, family, g, &kwhy)) {
        ingot_strbuf_appendf(&lines, "%s: %s\n", k->name, ingot_strbuf_str(&kwhy));
        ingot_strbuf_free(&kwhy);
        continue;
      }
      ingot_strbuf_free(&kwhy);
      /* Keep only the best rank seen so far. */
      const int c = n ? rank_cmp(family, k, list[0], g) : 1;
      if (c < 0) continue;
      if (c > 0 && n) n = 0;
      if (n == cap) {
        const size_t grown = cap ? 2 * cap : 8;
        const ingot_kernel **more = realloc(list, grown * sizeof *list);
        if (more == NULL) {
          free(list);
          ingot_strbuf_free(&lines);
          return -1;
        }
        list = more, cap = grown;
      }
      list[n++] = k;
    }
  }
  if (n == 0) {
    append_summary(report, ctx, family, g);
    ingot_strbuf_appendf(report, "%s", ingot_strbuf_str(&lines));
  }
  ingot_strbuf_free(&lines);
  if (ctx->num_packs == 0) {
    ingot_strbuf_appendf(report, "no pack is open on this context\n");
  } else if (family_packs == 0) {
    ingot_strbuf_appendf(report, "no pack of family %s is open on this context (open:", family->name);
    for (size_t p = 0; p < ctx->num_packs; ++p)
      ingot_strbuf_appendf(report, "%s %s (%s)", p ? "," : "", ctx->packs[p]->name, ctx->packs[p]->family->name);
    ingot_strbuf_appendf(report, ")\n");
  }
  if (n == 0) {
    free(list);
    return 0;
  }
  qsort(list, n, sizeof *list, tie_order);
  *out = list;
  return (int)n;
}
