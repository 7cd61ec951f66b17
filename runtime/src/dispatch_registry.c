/* dispatch_registry.c: finds the dispatch stub a UDD's dispatch_symbol names.
 * First the stubs compiled into libingot, then (dispatch.h) the running
 * process's exported symbols, so a provider's or a test's own generated stub
 * is found too. Only names of the generated form ingot_<pack>_dispatch are
 * looked up, so a descriptor cannot point the runtime at arbitrary data. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>

#include "dispatch.h"

extern const ingot_dispatch_entry ingot_attention_decode_dispatch;

static const ingot_dispatch_entry *const kEntries[] = {
    &ingot_attention_decode_dispatch,
};

static int generated_name(const char *s) {
  size_t n = strlen(s);
  const char *prefix = "ingot_", *suffix = "_dispatch";
  if (n <= strlen(prefix) + strlen(suffix) || n > 128) return 0;
  if (strncmp(s, prefix, strlen(prefix)) != 0 || strcmp(s + n - strlen(suffix), suffix) != 0) return 0;
  for (size_t i = 0; i < n; ++i) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return 0;
  }
  return 1;
}

const ingot_dispatch_entry *ingot_dispatch_find(const char *symbol) {
  if (symbol == NULL) return NULL;
  for (size_t i = 0; i < sizeof(kEntries) / sizeof(kEntries[0]); ++i)
    if (kEntries[i]->symbol != NULL && strcmp(kEntries[i]->symbol, symbol) == 0) return kEntries[i];
  if (!generated_name(symbol)) return NULL;
  const ingot_dispatch_entry *e = (const ingot_dispatch_entry *)dlsym(RTLD_DEFAULT, symbol);
  if (e == NULL || e->symbol == NULL || strcmp(e->symbol, symbol) != 0 || e->plan == NULL || e->pack == NULL)
    return NULL;
  return e;
}
