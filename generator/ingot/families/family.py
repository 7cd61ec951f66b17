"""The interface between the generator's core and a kernel family (the
package docstring, ingot/families/__init__.py, says how the core uses it)."""

import re
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Const:
    """One ABI constant of a family (Family.abi): a C macro of ingot_abi.h."""

    name: str
    value: int
    doc: str
    hex: bool = False  # a mask: written in hex


@dataclass(frozen=True)
class KnownSpill:
    """A spill some of a family's kernels have and ship with (Family.known_spills): the
    census names it beside its reason, and tests/generator/test_built_pack.py fails the
    build on any spill or scratch that no known spill covers, or on a larger one."""

    archs: tuple  # the arch names it is known on
    kernel: str  # a regular expression searched in the kernel's name
    max_bytes: int  # at most this many bytes spilled (and of scratch) by each entry point
    why: str  # why it ships: what was measured, where it is recorded
    agpr_only: bool = False  # AMD: values parked in AGPRs only, no scratch

    def names(self, kernel, arch):
        return arch in self.archs and re.search(self.kernel, kernel) is not None

    def covers(self, kernel, arch, spill, scratch, agpr_spill):
        if not self.names(kernel, arch):
            return False
        if self.agpr_only:
            return scratch == 0 and agpr_spill == spill <= self.max_bytes
        return spill <= self.max_bytes and scratch <= self.max_bytes


@dataclass(frozen=True)
class Family:
    """Everything the core knows of a family. Hooks take the family's own
    instances and the core's objects (config.Variant, config.Pack, an
    archs.Arch, the schema Context for errors) and return plain data."""

    name: str  # the config's `family:` value
    # Config schema, as schema nodes: a variant lists values of each axis (an
    # axis in axis_defaults may be left out and takes those values); `knobs`
    # are the pack's (optional_knobs: name -> default) and a variant's
    # overrides; `admit` is a variant's admit map; pack_keys adds top-level
    # keys of the family's own, name -> (node, required, default), kept in
    # Pack.settings.
    axes: dict
    axis_defaults: dict
    knobs: dict
    optional_knobs: dict
    admit: object
    pack_keys: dict
    # Expansion. check_variant(variant, ctx) -> bool reports every broken rule
    # of a variant at its key path. expand(variant, points, ctx) -> [instance]
    # makes one instance per point (axis -> value) the family keeps, or returns
    # None after reporting an error. no_instance_reason says why a variant can
    # expand to nothing (the core's error when it does).
    check_variant: Callable
    expand: Callable
    no_instance_reason: str
    # Descriptors: the KMD fields (name -> type) every instance's metadata()
    # has; the entry points of every kernel, in the order the UDD lists them;
    # the kernarg signature, ((name, kind, size), ...) in order; the graph-scope
    # UMD's constraints; workspace(pack) -> the UDD's workspace object.
    metadata_types: dict
    entry_points: tuple
    kernargs: tuple
    graph_constraints: list
    workspace: Callable
    # Rendering: template names in the template folder, one kernel source per
    # instance and arch and the pack's dispatch stub (dispatch/<pack>_dispatch.c
    # and .h); kernarg_expr maps each kernarg to the C expression the stub writes
    # for it; kernel_context(inst, arch) and dispatch_context(pack) give the
    # family's own template variables beside the core's.
    kernel_template: str
    dispatch_source_template: str
    dispatch_header_template: str
    kernarg_expr: dict
    kernel_context: Callable
    dispatch_context: Callable
    # ABI: the constants the family's kernels, its planner and this module
    # must agree on, as Const rows; written once, into the generated
    # templates/ingot_abi.h (abi.py), which the C and device code include.
    abi: tuple = ()
    # The spills its shipped kernels are known to have, as KnownSpill rows.
    known_spills: tuple = ()

    def signature(self):
        """The kernargs with their offsets, each aligned to its size (the C ABI
        both vendors' targets use)."""
        out, off = [], 0
        for name, kind, size in self.kernargs:
            off = (off + size - 1) // size * size
            out.append({"name": name, "kind": kind, "size": size, "offset": off})
            off += size
        return out

    def kernarg_size(self):
        last = self.signature()[-1]
        return last["offset"] + last["size"]
