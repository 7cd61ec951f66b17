/* elf_symbols.c: the entry points a code object defines, read from its ELF64
 * symbol tables (SHT_SYMTAB and SHT_DYNSYM) with every offset, size and string
 * checked against the file before it is used. Only what the check needs is
 * read: the header, the section table, the symbol tables and their strings. */
#include <stdint.h>
#include <string.h>

#include "elf_symbols.h"

enum {
  kEhdrSize = 64, kShdrSize = 64, kSymSize = 24,
  kShtSymtab = 2, kShtStrtab = 3, kShtDynsym = 11,
  kSttObject = 1, kSttFunc = 2,
  kEmCuda = 190, kEmAmdgpu = 224,
  kAmdgpuMachMask = 0xff,
  kMaxListed = 8 /* defined kernels named in a message */
};

/* The AMDGPU ELF e_flags mach of the archs the project builds (LLVM's
 * EF_AMDGPU_MACH_AMDGCN_GFX942 / _GFX950); other gfx archs are not checked. */
static const struct {
  const char *arch;
  unsigned mach;
} kAmdMach[] = {{"gfx942", 0x4c}, {"gfx950", 0x4f}};

static uint16_t rd16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const unsigned char *p) { return (uint32_t)rd16(p) | (uint32_t)rd16(p + 2) << 16; }
static uint64_t rd64(const unsigned char *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }

/* [off, off+len) inside a file of `size` bytes, without overflow. */
static int in_file(uint64_t off, uint64_t len, size_t size) { return off <= size && len <= size - off; }

typedef struct symtab {
  const unsigned char *syms, *strs;
  uint64_t num_syms, str_size;
} symtab;

typedef struct elf {
  const unsigned char *data;
  size_t size;
  size_t num_tabs;
  symtab tabs[2]; /* the SHT_SYMTAB and the SHT_DYNSYM, where present */
} elf;

static int bad(ingot_strbuf *why, int *missing, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(ingot_strbuf *why, int *missing, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ingot_strbuf_vappendf(why, fmt, ap);
  va_end(ap);
  if (missing) *missing = -1;
  return 0;
}

static int parse(elf *e, const char *arch, int *missing, ingot_strbuf *why) {
  const unsigned char *d = e->data;
  if (e->size < kEhdrSize)
    return bad(why, missing, "truncated ELF header (%zu bytes; an ELF64 header has %d)", e->size, kEhdrSize);
  if (memcmp(d, "\177ELF", 4) != 0) return bad(why, missing, "not an ELF file (allowed: an ELF64 code object)");
  if (d[4] != 2 || d[5] != 1)
    return bad(why, missing, "ELF class %u, data encoding %u (allowed: class 2, encoding 1: ELF64 little-endian)",
               d[4], d[5]);
  const int amd = strncmp(arch, "gfx", 3) == 0, nvidia = strncmp(arch, "sm_", 3) == 0;
  const unsigned machine = rd16(d + 0x12);
  if ((amd && machine != kEmAmdgpu) || (nvidia && machine != kEmCuda))
    return bad(why, missing, "ELF machine %u (allowed: %u, %s, for arch %s)", machine, amd ? kEmAmdgpu : kEmCuda,
               amd ? "AMDGPU" : "NVIDIA CUDA", arch);
  for (size_t i = 0; amd && i < sizeof kAmdMach / sizeof kAmdMach[0]; ++i) {
    const unsigned mach = rd32(d + 0x30) & kAmdgpuMachMask;
    if (strcmp(kAmdMach[i].arch, arch) == 0 && mach != kAmdMach[i].mach)
      return bad(why, missing, "built for AMDGPU mach 0x%x (allowed: 0x%x, %s)", mach, kAmdMach[i].mach, arch);
  }
  const uint64_t shoff = rd64(d + 0x28);
  const unsigned shentsize = rd16(d + 0x3A), shnum = rd16(d + 0x3C);
  if (shnum == 0) return bad(why, missing, "no section table (allowed: a code object with its symbol table)");
  if (shentsize != kShdrSize)
    return bad(why, missing, "section headers of %u bytes (allowed: %d, ELF64)", shentsize, kShdrSize);
  if (!in_file(shoff, (uint64_t)shnum * kShdrSize, e->size))
    return bad(why, missing, "section table (%u headers at offset %llu) passes the end of the file (%zu bytes)",
               shnum, (unsigned long long)shoff, e->size);
  for (unsigned i = 0; i < shnum; ++i) {
    const unsigned char *sh = d + shoff + (uint64_t)i * kShdrSize;
    const uint32_t type = rd32(sh + 4);
    if (type != kShtSymtab && type != kShtDynsym) continue;
    const uint64_t off = rd64(sh + 0x18), sz = rd64(sh + 0x20), entsize = rd64(sh + 0x38);
    const uint32_t link = rd32(sh + 0x28);
    if (entsize != kSymSize || sz % kSymSize != 0)
      return bad(why, missing, "symbol table (section %u) has entries of %llu bytes and %llu bytes in all "
                 "(allowed: a multiple of %d-byte entries)", i, (unsigned long long)entsize,
                 (unsigned long long)sz, kSymSize);
    if (!in_file(off, sz, e->size))
      return bad(why, missing, "symbol table (section %u, %llu bytes at offset %llu) passes the end of the file "
                 "(%zu bytes)", i, (unsigned long long)sz, (unsigned long long)off, e->size);
    if (link >= shnum)
      return bad(why, missing, "symbol table (section %u) names string table %u (allowed: a section below %u)", i,
                 link, shnum);
    const unsigned char *st = d + shoff + (uint64_t)link * kShdrSize;
    const uint64_t str_off = rd64(st + 0x18), str_size = rd64(st + 0x20);
    if (rd32(st + 4) != kShtStrtab)
      return bad(why, missing, "symbol table (section %u) names section %u of type %u as its strings (allowed: "
                 "a string table, type %d)", i, link, rd32(st + 4), kShtStrtab);
    if (!in_file(str_off, str_size, e->size) || str_size == 0 || d[str_off + str_size - 1] != 0)
      return bad(why, missing, "string table (section %u, %llu bytes at offset %llu) passes the end of the file "
                 "or does not end in a NUL (allowed: NUL-terminated strings inside the file)", link,
                 (unsigned long long)str_size, (unsigned long long)str_off);
    if (e->num_tabs == 2) continue; /* one of each type is all a code object has */
    symtab *t = &e->tabs[e->num_tabs++];
    t->syms = d + off;
    t->num_syms = sz / kSymSize;
    t->strs = d + str_off;
    t->str_size = str_size;
    for (uint64_t s = 0; s < t->num_syms; ++s)
      if (rd32(t->syms + s * kSymSize) >= str_size)
        return bad(why, missing, "symbol %llu of section %u names string offset %u, past its string table of "
                   "%llu bytes", (unsigned long long)s, i, rd32(t->syms + s * kSymSize),
                   (unsigned long long)str_size);
  }
  if (e->num_tabs == 0) return bad(why, missing, "no symbol table (allowed: a code object with its symbols)");
  return 1;
}

/* Is `name` a defined symbol of this type? Names lie inside their table (parse). */
static int has_symbol(const elf *e, const char *name, const char *suffix, unsigned type) {
  const size_t n = strlen(name);
  for (size_t t = 0; t < e->num_tabs; ++t) {
    const symtab *tab = &e->tabs[t];
    for (uint64_t s = 0; s < tab->num_syms; ++s) {
      const unsigned char *sym = tab->syms + s * kSymSize;
      if ((sym[4] & 0xf) != type || rd16(sym + 6) == 0 /* SHN_UNDEF */) continue;
      const char *str = (const char *)tab->strs + rd32(sym);
      if (strncmp(str, name, n) == 0 && strcmp(str + n, suffix) == 0) return 1;
    }
  }
  return 0;
}

static void list_functions(const elf *e, ingot_strbuf *why) {
  size_t listed = 0;
  const symtab *tab = &e->tabs[0]; /* one table is enough: the kernels are in each */
  for (uint64_t s = 0; s < tab->num_syms; ++s) {
    const unsigned char *sym = tab->syms + s * kSymSize;
    if ((sym[4] & 0xf) != kSttFunc || rd16(sym + 6) == 0) continue;
    if (listed == kMaxListed) {
      ingot_strbuf_appendf(why, ", ...");
      return;
    }
    ingot_strbuf_appendf(why, "%s%s", listed++ ? ", " : "", (const char *)tab->strs + rd32(sym));
  }
  if (listed == 0) ingot_strbuf_appendf(why, "none");
}

int ingot_elf_check_entry_points(const unsigned char *data, size_t size, const char *arch,
                                 const char *const *symbols, size_t num_symbols, int *missing,
                                 ingot_strbuf *why) {
  elf e = {data, size, 0, {{0}}};
  if (!parse(&e, arch, missing, why)) return 0;
  const int amd = strncmp(arch, "gfx", 3) == 0;
  for (size_t i = 0; i < num_symbols; ++i) {
    const int func = has_symbol(&e, symbols[i], "", kSttFunc);
    const int kd = !amd || has_symbol(&e, symbols[i], ".kd", kSttObject);
    if (func && kd) continue;
    if (missing) *missing = (int)i;
    if (!func)
      ingot_strbuf_appendf(why, "no kernel \"%s\" (a defined FUNC symbol) (allowed: the kernels it defines: ",
                           symbols[i]);
    else
      ingot_strbuf_appendf(why, "kernel \"%s\" has no descriptor \"%s.kd\" (a defined OBJECT symbol, what an AMD "
                           "kernel is launched from) (allowed: the kernels it defines: ", symbols[i], symbols[i]);
    list_functions(&e, why);
    ingot_strbuf_appendf(why, ")");
    return 0;
  }
  return 1;
}
