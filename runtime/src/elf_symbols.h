/* elf_symbols.h: a small, bounds-checked reader of the symbol tables of an
 * ELF64 little-endian code object (AMDGPU .co, NVIDIA .cubin), so that the
 * loader can check, before any driver call, that a code object holds the entry
 * points its KDP names. */
#ifndef INGOT_ELF_SYMBOLS_H
#define INGOT_ELF_SYMBOLS_H

#include <stddef.h>

#include "internal.h"

/* Checks that `data` (a whole code object of `size` bytes, built for `arch`)
 * is a well-formed ELF64 LE file for that arch's machine and defines every one
 * of `symbols`: on AMD (gfx*) a FUNC symbol and its `<symbol>.kd` OBJECT (the
 * kernel descriptor the driver launches from), on NVIDIA (sm_*) a FUNC symbol.
 * Returns 1 when it does; else 0 with `why` holding the problem, and `missing`
 * (may be NULL) set to the index of the first missing symbol, or -1 when the
 * file itself is malformed. Every offset and size is checked against `size`. */
int ingot_elf_check_entry_points(const unsigned char *data, size_t size, const char *arch,
                                 const char *const *symbols, size_t num_symbols, int *missing,
                                 ingot_strbuf *why);

#endif
