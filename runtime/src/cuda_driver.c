/* cuda_driver.c: loads the CUDA driver library and resolves the symbol table
 * of cuda_driver.h. Nothing here is global: the table lives where its caller
 * puts it. */
#include "cuda_driver.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CUDA_DEFAULT_LIBRARY "libcuda.so.1"
#define CUDA_LIBRARY_ENV "INGOT_CUDA_LIBRARY"

/* POSIX dlsym returns data pointers; a function pointer is copied bit for bit. */
_Static_assert(sizeof(void *) == sizeof(void (*)(void)), "function and data pointers differ in size");

/* The table as data: where each symbol goes in ingot_cuda_driver, and who needs it. */
static const struct cuda_symbol {
  const char *name, *old_name;
  unsigned needed_by;
  size_t offset;
} kSymbols[] = {
#define CUDA_SYMBOL_ENTRY(field, ret, params, name, old_name, needed_by) \
  {name, old_name, needed_by, offsetof(ingot_cuda_driver, field)},
    INGOT_CUDA_DRIVER_SYMBOLS(CUDA_SYMBOL_ENTRY)
#undef CUDA_SYMBOL_ENTRY
};

ingot_cuda_driver_result ingot_cuda_driver_load(ingot_cuda_driver *d, unsigned user, char *err,
                                                size_t err_size) {
  memset(d, 0, sizeof *d);
  const char *override = getenv(CUDA_LIBRARY_ENV);
  const int overridden = override != NULL && override[0] != '\0';
  const char *name = overridden ? override : CUDA_DEFAULT_LIBRARY;
  snprintf(d->library_name, sizeof d->library_name, "%s", name);

  dlerror(); /* a stale message must not stand for this dlopen's */
  d->library = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (d->library == NULL) {
    const char *why = dlerror();
    if (err != NULL && err_size > 0)
      snprintf(err, err_size, "%s%s not found (dlopen: %s)", name,
               overridden ? " (named by " CUDA_LIBRARY_ENV ")" : "", why ? why : "no reason given");
    memset(d, 0, sizeof *d);
    return INGOT_CUDA_DRIVER_NOT_FOUND;
  }

  for (size_t i = 0; i < sizeof kSymbols / sizeof kSymbols[0]; ++i) {
    const struct cuda_symbol *s = &kSymbols[i];
    void *sym = dlsym(d->library, s->name);
    if (sym == NULL && s->old_name != NULL) sym = dlsym(d->library, s->old_name);
    if (sym == NULL && (s->needed_by & user)) {
      if (err != NULL && err_size > 0)
        snprintf(err, err_size, "%s has no symbol %s", d->library_name, s->name);
      ingot_cuda_driver_unload(d);
      return INGOT_CUDA_DRIVER_NO_SYMBOL;
    }
    memcpy((char *)d + s->offset, &sym, sizeof sym);
  }
  return INGOT_CUDA_DRIVER_OK;
}

void ingot_cuda_driver_unload(ingot_cuda_driver *d) {
  if (d == NULL) return;
  if (d->library != NULL) dlclose(d->library);
  memset(d, 0, sizeof *d);
}
