"""Reading code objects back: the kernarg signature and resource usage of each
kernel, from the code object itself (never from the compiler's console).

AMD (gfx*): the NT_AMDGPU_METADATA note, as `llvm-readelf --notes` prints it,
the code object version from the ELF header, and AGPRs used as spill space,
counted from the disassembly (`llvm-objdump -d`).
NVIDIA (cubin): the ELF's .nv.info sections (EIATTR records: KPARAM_INFO for the
parameters, REGCOUNT and FRAME_SIZE per kernel), the .nv.shared.<kernel>
section for static shared memory, and the symbol table for code size."""

import re
import struct
import subprocess

import yaml

from ingot.archs import AMD_ABI_VERSIONS


class CodeObjectError(Exception):
    pass


# ---- a minimal ELF64 little-endian reader --------------------------------------

class Elf:
    def __init__(self, data, path):
        self.data, self.path = data, path
        if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
            raise CodeObjectError(f"{path}: not a 64-bit little-endian ELF file")
        if len(data) < 0x40:
            raise CodeObjectError(f"{path}: truncated ELF header ({len(data)} bytes, an ELF64 header has 64)")
        (self.shoff,) = struct.unpack_from("<Q", data, 0x28)
        self.shentsize, self.shnum, self.shstrndx = struct.unpack_from("<HHH", data, 0x3A)
        if self.shoff + self.shnum * self.shentsize > len(data):
            raise CodeObjectError(f"{path}: section table past the end of the file")
        if self.shnum == 0:
            raise CodeObjectError(f"{path}: no section table (a code object needs its symbols and notes)")
        if self.shentsize < 0x40 or self.shstrndx >= self.shnum:
            raise CodeObjectError(f"{path}: malformed section table ({self.shnum} sections of "
                                  f"{self.shentsize} bytes, names in section {self.shstrndx})")
        self.sections = []
        for i in range(self.shnum):
            off = self.shoff + i * self.shentsize
            name, typ, _flags, _addr, offset, size, link, info = struct.unpack_from("<IIQQQQII", data, off)
            if typ != 8 and offset + size > len(data):  # SHT_NOBITS occupies no file bytes
                raise CodeObjectError(f"{path}: section {i} ({size} bytes at {offset}) past the end of the file")
            self.sections.append({"name_off": name, "type": typ, "offset": offset, "size": size,
                                  "link": link, "info": info})
        strtab = self.sections[self.shstrndx]
        for s in self.sections:
            s["name"] = self._str(strtab, s["name_off"])

    def _str(self, sec, off):
        start = sec["offset"] + off
        end = self.data.find(b"\0", start, sec["offset"] + sec["size"])
        if off >= sec["size"] or end < 0:
            raise CodeObjectError(f"{self.path}: string at offset {off} lies outside its string table")
        return self.data[start:end].decode("ascii", errors="replace")

    def section(self, name):
        return next((s for s in self.sections if s["name"] == name), None)

    def contents(self, sec):
        if sec["type"] == 8:  # SHT_NOBITS
            return b""
        return self.data[sec["offset"]:sec["offset"] + sec["size"]]

    def symbols(self):
        """[(name, value, size, type, shndx)] from .symtab."""
        sym = next((s for s in self.sections if s["type"] == 2), None)
        if sym is None:
            return []
        strtab = self.sections[sym["link"]]
        out = []
        raw = self.contents(sym)
        for off in range(0, len(raw), 24):
            name, info, _other, shndx, value, size = struct.unpack_from("<IBBHQQ", raw, off)
            out.append((self._str(strtab, name), value, size, info & 0xF, shndx))
        return out


def _function_sizes(elf):
    return {name: size for name, _v, size, typ, _s in elf.symbols() if typ == 2}  # STT_FUNC


# ---- NVIDIA cubin -------------------------------------------------------------------

EIATTR_FRAME_SIZE = 0x11
EIATTR_KPARAM_INFO = 0x17
EIATTR_REGCOUNT = 0x2F


def _eiattrs(raw):
    """Yields (attr, payload bytes) of an .nv.info section."""
    i = 0
    while i + 2 <= len(raw):
        fmt, attr = raw[i], raw[i + 1]
        if fmt == 0x04:  # EIFMT_SVAL: u16 size, then the payload
            (size,) = struct.unpack_from("<H", raw, i + 2)
            yield attr, raw[i + 4:i + 4 + size]
            i += 4 + size
        elif fmt in (0x02, 0x03):  # BVAL / HVAL: a 2-byte value
            yield attr, raw[i + 2:i + 4]
            i += 4
        elif fmt == 0x01:  # NVAL
            yield attr, b""
            i += 2
        else:
            raise CodeObjectError(f"unknown .nv.info record format 0x{fmt:02x} at byte {i}")


def read_cubin(path):
    with open(path, "rb") as f:
        elf = Elf(f.read(), path)
    syms = elf.symbols()
    index = {i: s[0] for i, s in enumerate(syms)}
    sizes = _function_sizes(elf)
    per_sym = {}
    glob = elf.section(".nv.info")
    if glob is not None:
        for attr, payload in _eiattrs(elf.contents(glob)):
            if attr in (EIATTR_REGCOUNT, EIATTR_FRAME_SIZE) and len(payload) == 8:
                sym, value = struct.unpack("<II", payload)
                key = "registers" if attr == EIATTR_REGCOUNT else "frame_bytes"
                per_sym.setdefault(index.get(sym, ""), {})[key] = value
    kernels = {}
    for sec in elf.sections:
        if not sec["name"].startswith(".nv.info."):
            continue
        name = sec["name"][len(".nv.info."):]
        params = []
        for attr, payload in _eiattrs(elf.contents(sec)):
            if attr == EIATTR_KPARAM_INFO and len(payload) == 12:
                _index, ordinal, offset, flags = struct.unpack("<IHHI", payload)
                params.append((ordinal, offset, (flags >> 18) & 0x3FFF))
        params.sort()
        shared = elf.section(f".nv.shared.{name}")
        info = per_sym.get(name, {})
        kernels[name] = {
            "signature": [{"offset": off, "size": size} for _o, off, size in params],
            "kernarg_size": max((off + size for _o, off, size in params), default=0),
            "resources": {
                "registers": info.get("registers", 0),
                "scratch": info.get("frame_bytes", 0),
                "spill": info.get("frame_bytes", 0),  # the cubin keeps no spill count: local frame bytes bound it
                "lds": shared["size"] if shared else 0,
                "code_bytes": sizes.get(name, 0),
            },
        }
    return kernels


# ---- AMD code objects -------------------------------------------------------------

ELFOSABI_AMDGPU_HSA = 64


def amd_code_object_version(data, path):
    """The HSA code object version (4, 5, 6) from EI_OSABI and EI_ABIVERSION."""
    if len(data) < 16 or data[:4] != b"\x7fELF":
        raise CodeObjectError(f"{path}: not an ELF file")
    if data[7] != ELFOSABI_AMDGPU_HSA:
        raise CodeObjectError(f"{path}: EI_OSABI {data[7]}, not {ELFOSABI_AMDGPU_HSA} (AMDGPU HSA)")
    version = AMD_ABI_VERSIONS.get(data[8])
    if version is None:
        known = ", ".join(f"{abi} (v{v})" for abi, v in sorted(AMD_ABI_VERSIONS.items()))
        raise CodeObjectError(f"{path}: EI_ABIVERSION {data[8]} is no known code object version (known: {known})")
    return version


# libyaml's loader where PyYAML has it (Debian's does): the notes of a large object
# parse in a tenth of the pure-Python loader's time.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_FUNCTION = re.compile(r"^[0-9a-f]+ <([^>]+)>:$")
_ACCVGPR_MOVE = re.compile(r"^\s*v_accvgpr_(read|write|mov)_b32\b")
_MFMA = re.compile(r"^\s*v_(s)?mfma")


def amd_register_moves(path, objdump, mcpu):
    """{function: (AGPR moves, MFMA instructions)} from the disassembly."""
    try:
        out = subprocess.run([objdump, "-d", f"--mcpu={mcpu}", path], check=True, capture_output=True,
                             text=True).stdout
    except FileNotFoundError:
        raise CodeObjectError(f"{objdump} not found: install package llvm-22") from None
    except subprocess.CalledProcessError as e:
        raise CodeObjectError(f"{objdump} -d {path} failed: {e.stderr.strip()}") from None
    counts, current = {}, None
    for line in out.splitlines():
        m = _FUNCTION.match(line)
        if m:
            current = m.group(1)
            counts[current] = [0, 0]
        elif current is not None:
            counts[current][0] += bool(_ACCVGPR_MOVE.match(line))
            counts[current][1] += bool(_MFMA.match(line))
    return {name: tuple(c) for name, c in counts.items()}


def read_amd(path, readelf, objdump, mcpu):
    try:
        out = subprocess.run([readelf, "--notes", path], check=True, capture_output=True, text=True).stdout
    except FileNotFoundError:
        raise CodeObjectError(f"{readelf} not found: install package llvm-22") from None
    except subprocess.CalledProcessError as e:
        raise CodeObjectError(f"{readelf} --notes {path} failed: {e.stderr.strip()}") from None
    start, end = out.find("---"), out.rfind("\n...")
    if start < 0 or end < 0:
        raise CodeObjectError(f"{path}: no AMDGPU metadata note")
    meta = yaml.load(out[start:end], Loader=_YAML_LOADER)
    with open(path, "rb") as f:
        data = f.read()
    sizes = _function_sizes(Elf(data, path))
    version = amd_code_object_version(data, path)
    moves = amd_register_moves(path, objdump, mcpu)
    kernels = {}
    for k in meta.get("amdhsa.kernels", []):
        args = [a for a in k.get(".args", []) if not a.get(".value_kind", "").startswith("hidden_")]
        # On gfx90a and later the AGPRs are part of the one VGPR file and .vgpr_count
        # already includes them. A kernel without MFMA has no use for an AGPR but to
        # park a VGPR's value there: each one it uses is a spilled register.
        agpr = k.get(".agpr_count", 0)
        n_moves, n_mfma = moves.get(k[".name"], (0, 0))
        agpr_spill = agpr if n_moves and not n_mfma else 0
        kernels[k[".name"]] = {
            "signature": [{"kind": a[".value_kind"], "offset": a[".offset"], "size": a[".size"]} for a in args],
            "kernarg_size": max((a[".offset"] + a[".size"] for a in args), default=0),
            "code_object_version": version,
            "resources": {
                "vgpr": k.get(".vgpr_count", 0), "sgpr": k.get(".sgpr_count", 0),
                "agpr": agpr, "agpr_spill": agpr_spill,
                "spill": k.get(".vgpr_spill_count", 0) + k.get(".sgpr_spill_count", 0) + agpr_spill,
                "scratch": k.get(".private_segment_fixed_size", 0),
                "lds": k.get(".group_segment_fixed_size", 0),
                "wavefront_size": k.get(".wavefront_size", 0),
                "code_bytes": sizes.get(k[".name"], 0),
            },
        }
    return kernels


# ---- the split loop's load pipeline, read from an AMD disassembly ------------------
# (test_built_pack checks every AMD split with it; bench/amd_model.py reports it)


def split_body(listing, symbol):
    """The disassembly (llvm-objdump -d) of one kernel symbol."""
    return listing.split(f"<{symbol}>:", 1)[1].split("\n\n", 1)[0]


_ISA_LINE = re.compile(r"^\s+([a-z_0-9]+)\b([^/]*)//\s*([0-9A-Fa-f]+):")
_VMCNT = re.compile(r"vmcnt\((\d+)\)")


# A vector-memory load's bytes, in 16-byte loads (loop_pipeline).
_LOAD_UNITS = {"global_load_dwordx4": 1.0, "global_load_dwordx2": 0.5}


def loop_pipeline(body, chunk_loads):
    """(share, valu) for the disassembly of one AMD split: the share of the vector-ALU
    instructions of its main loop (the backward branch whose range holds the most
    bytes of 16- and 8-byte loads) that run while at least chunk_loads 16 bytes' worth
    of them are in flight (an 8-byte load, the matrix-core path's V at head dim 64, is
    half of one).
    In program order through the loop body, twice (the second pass starts with what
    the back edge leaves in flight); loads return in order, so after s_waitcnt
    vmcnt(N) the newest N vector-memory loads may still be in flight."""
    ins = []
    for line in body.splitlines():
        m = _ISA_LINE.match(line)
        if m:
            ins.append((int(m.group(3), 16), m.group(1), m.group(2).strip()))
    best = None
    for addr, op, args in ins:
        m = re.match(r"(\d+)", args)
        if not (op.startswith("s_cbranch_") or op == "s_branch") or not m:
            continue
        simm = int(m.group(1))
        simm = simm - (1 << 16) if simm >= 1 << 15 else simm
        if simm < 0:
            span = [x for x in ins if addr + 4 + 4 * simm <= x[0] <= addr]
            loads = sum(_LOAD_UNITS.get(x[1], 0) for x in span)
            if best is None or loads > best[0]:
                best = (loads, span)
    if best is None or best[0] == 0:
        return 0.0, 0
    flight, valu, hidden = [], 0, 0  # flight: the loads in flight, oldest first, in 16-byte units (other loads 0)
    for rnd in range(2):
        for _addr, op, args in best[1]:
            if op.startswith(("global_load", "buffer_load")):
                flight.append(_LOAD_UNITS.get(op, 0))
            elif op == "s_waitcnt" and _VMCNT.search(args):
                n = int(_VMCNT.search(args).group(1))
                flight = flight[len(flight) - n:] if n < len(flight) else flight
            elif op.startswith("v_") and rnd == 1:
                valu += 1
                hidden += sum(flight) >= chunk_loads
    return (hidden / valu if valu else 0.0), valu
