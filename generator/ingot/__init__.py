"""ingot: casts GPU kernel packs from YAML pack configs, and runs them.

The generator is the `ingot` command (`python -m ingot`, ingot.cli). The
runtime API is loaded on first use, so `import ingot` imports neither torch
nor libingot:

    ingot.decode(q, k_cache, v_cache, seq_lens, ...)   attention decode on torch tensors
    ingot.DecodePlan(...)                             the same, planned once and reused
    ingot.IngotError                                  the one exception the API raises
    ingot.Runtime                                     the ctypes binding of libingot (ingot.runtime)

docs/python.md is the reference."""

__version__ = "0.1.0"

_LAZY = {"decode": "ingot.torch_api", "DecodePlan": "ingot.torch_api", "default_context": "ingot.torch_api",
         "IngotError": "ingot.runtime", "Runtime": "ingot.runtime"}

__all__ = ["__version__"]  # the lazy names are reached as ingot.NAME


_SUBMODULES = ("paths", "runtime", "torch_api")


def __getattr__(name):
    import importlib
    if name in _SUBMODULES:
        return importlib.import_module(f"ingot.{name}")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ingot' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
