"""The arch table: one entry per target. Everything arch-specific the generator
and the build need is data here (vendor, wave size, compiler, flags, suffix).
The build compiles with exactly these flags: IngotPack.cmake reads them from
`ingot list --json` (key `compile`), so they are written nowhere else."""

from dataclasses import dataclass

# Code object v5 (EI_ABIVERSION 3): clang-22 defaults to v6, which ROCm
# releases before 6.3 refuse; every ROCm 6.0+ runtime loads v4 and v5, and the
# flag changes no instruction (tools/amd_code_object_diff.py shows it).
AMD_CODE_OBJECT_VERSION = 5


@dataclass(frozen=True)
class Arch:
    name: str
    vendor: str  # "amd" | "nvidia"
    wave_size: int
    compiler: str  # "clang" | "nvcc"
    flags: tuple
    suffix: str  # code object suffix
    max_lds_bytes: int  # static LDS / shared memory one workgroup may use
    max_registers: int  # per lane, before spilling
    max_dynamic_lds_bytes: int  # LDS one workgroup may take at launch (NVIDIA: opt-in per function)
    compute_units: int  # CUs / SMs of the product the arch is built for (the plan's default)
    code_object_version: int = 0  # AMD: the HSA code object version built (0: not an AMD object)
    emulates: str = ""  # a test arch: the real arch it runs on (its wave emulated)


def _amd(name, max_lds, compute_units):
    return Arch(name, "amd", 64, "clang",
                ("-x", "hip", "-std=c++17", f"--offload-arch={name}", "-nogpuinc", "-nogpulib",
                 "--cuda-device-only", "--no-gpu-bundle-output",
                 f"-mcode-object-version={AMD_CODE_OBJECT_VERSION}", "-O3"),
                "co", max_lds, AMD_CU["vgprs"][0], max_lds, compute_units, AMD_CODE_OBJECT_VERSION)


# The occupancy model's per-CU resources (the runtime's ingot_blocks_per_cu), by
# vendor: name -> (value, what it is). Hopper (sm_90) and CDNA3 (gfx942, gfx950).
NVIDIA_SM = {
    "registers": (65536, "32-bit registers per SM"),
    "register_unit": (256, "registers are allocated per warp in units of this many"),
    "threads": (2048, "resident threads per SM"),
    "blocks": (32, "resident blocks per SM"),
    "shared": (233472, "shared memory per SM, bytes"),
    "block_reserved_shared": (1024, "shared memory the system reserves per block, bytes"),
}
AMD_CU = {
    "simds": (4, "SIMDs per CU"),
    "vgprs": (512, "VGPRs (AGPRs included) per lane of a SIMD"),
    "vgpr_unit": (8, "VGPRs are allocated in units of this many"),
    "waves_per_simd": (8, "resident waves per SIMD"),
}
# An arch outside the table (a context opened for another name) plans for the
# H200's SM count, the one GPU this project measures on.
DEFAULT_COMPUTE_UNITS = 132


# sm_90_w64: the H200 running the AMD kernels' 64-lane wave as two warps
# (templates/ingot_arch.h, INGOT_EMULATE_WAVE64: 64-lane shuffles through a
# per-wave exchange slot in shared memory and a 64-thread named barrier; no
# tensor cores, so the SIMT path runs as on AMD). A test arch: only the test
# build's wave64 pack names it (tests/gpu/wave64_config.py), no shipped pack.
# The exchange slots take EMULATED_WAVE64_LDS bytes of the 48 KiB.
EMULATED_WAVE64_LDS = 15 * 64 * 4
EMULATED_WAVE64_SUFFIX = "_w64"

# Compute units: MI300X 304, MI355X 256, H200 132.
ARCHS = {
    "gfx942": _amd("gfx942", 65536, 304),
    "gfx950": _amd("gfx950", 163840, 256),
    "sm_90": Arch("sm_90", "nvidia", 32, "nvcc",
                  ("-x", "cu", "-std=c++17", "-cubin", "-arch=sm_90", "-O3"),
                  "cubin", 49152, 255, 232448, 132),
    "sm_90_w64": Arch("sm_90" + EMULATED_WAVE64_SUFFIX, "nvidia", 64, "nvcc",
                      ("-x", "cu", "-std=c++17", "-cubin", "-arch=sm_90", "-DINGOT_EMULATE_WAVE64=1", "-O3"),
                      "cubin", 49152 - EMULATED_WAVE64_LDS, 255, 232448 - EMULATED_WAVE64_LDS, 132,
                      emulates="sm_90"),
}

# EI_ABIVERSION (byte 8 of an AMDGPU HSA ELF header) -> code object version.
AMD_ABI_VERSIONS = {2: 4, 3: 5, 4: 6}


def known_archs():
    return sorted(ARCHS)
