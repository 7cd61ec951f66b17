"""Kernel families: the generator's plug-ins. A config names its family
(`family:`); the core (config, render, descriptors) looks it up in FAMILIES
and never names one. A family is one module here that builds a Family
(family.py) and is registered below, plus its templates in templates/
(docs/design/generator-families.md).

What the core does with a family:
- validate: the pack's and each variant's keys against the family's schema
  nodes; the KMD the config declares against metadata_types; then the
  family's check_variant on each variant (the core checks the variant's
  `archs` and `exclude`).
- expand: the core takes the product of a variant's axes less its excludes
  (the points) and calls expand; over the instances of all variants it
  rejects duplicates (code_key, name) and shadowed kernels (admission, rank).
- render: kernel_template once per instance and arch, to inst.filename(arch),
  with inst, arch (its name), config and symbols (entry point -> kernel
  symbol); the dispatch templates with pack, config, symbol (the dispatch
  symbol), signature (each kernarg with its `expr`) and kernarg_size; each
  with the family's own variables (kernel_context, dispatch_context).
- describe: the five descriptors, from the family's fields and instances.

An instance (what expand returns) is a frozen object with:
  pack, name, variant, priority, archs   what it is and where it is built
  filename(arch), symbol(entry)          its kernel source and entry symbols
  code_key                               what changes its code: equal keys are duplicates
  admission()                            {dimension: frozenset or (lo, hi)} it admits
  rank                                   a key: the higher wins on a graph both admit
  metadata()                             its KMD values (metadata_types' fields)
  constraints()                          its kernel-scope UMD constraints
  spec()                                 the KDP kernel_source.spec fields beside `variant`
  entry_dynamic_lds(arch)                {entry: bytes} launched with dynamic LDS (none: {})
"""

from ingot.families import attention_decode
from ingot.families import kv_append

FAMILIES = {f.name: f for f in (attention_decode.FAMILY, kv_append.FAMILY)}
