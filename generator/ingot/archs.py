"""The arch table: one entry per target. Everything arch-specific the generator
and the build need is data here (vendor, wave size, compiler, flags, suffix)."""

from dataclasses import dataclass


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


ARCHS = {
    "gfx942": Arch("gfx942", "amd", 64, "clang",
                   ("-x", "hip", "-std=c++17", "--offload-arch=gfx942", "-nogpuinc", "-nogpulib",
                    "--cuda-device-only", "--no-gpu-bundle-output", "-O3"),
                   "co", 65536, 512, 65536),
    "gfx950": Arch("gfx950", "amd", 64, "clang",
                   ("-x", "hip", "-std=c++17", "--offload-arch=gfx950", "-nogpuinc", "-nogpulib",
                    "--cuda-device-only", "--no-gpu-bundle-output", "-O3"),
                   "co", 163840, 512, 163840),
    "sm_90": Arch("sm_90", "nvidia", 32, "nvcc",
                  ("-x", "cu", "-std=c++17", "-cubin", "-arch=sm_90", "-O3"),
                  "cubin", 49152, 255, 232448),
}


def known_archs():
    return sorted(ARCHS)
