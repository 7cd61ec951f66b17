"""Stage 4: render every output file of a pack into memory. One Jinja
Environment with StrictUndefined: a missing variable is an error, never an
empty string. Templates only bind parameters; the algorithms live in the
hand-written headers beside them."""

import jinja2

from ingot import ctokens, descriptors, paths
from ingot.archs import ARCHS
from ingot.families import FAMILIES

TEMPLATE_DIR = paths.template_dir()  # $INGOT_TEMPLATE_DIR, the installed templates, or the tree's


def environment(template_dir=TEMPLATE_DIR):
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(template_dir), undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True, autoescape=False)
    # Every value a template takes from the config goes through one of these: a
    # C token, an escaped string for a comment or a literal, or a checked identifier.
    env.filters.update(c_bool=ctokens.c_bool, c_int=ctokens.c_int, c_dtype=ctokens.c_dtype,
                       c_string=ctokens.c_string, c_math=ctokens.c_math, c_comment=ctokens.c_comment,
                       c_ident=ctokens.c_ident)
    return env


def render_pack(pack, env=None):
    """Returns {relative path under generated/<pack>/: text}."""
    env = env or environment()
    family = FAMILIES[pack.family]
    files = {}
    kt = env.get_template(family.kernel_template)
    for inst in pack.instances:
        for arch in inst.archs:
            symbols = {e: inst.symbol(e) for e in family.entry_points}
            files[inst.filename(arch)] = kt.render(inst=inst, arch=arch, config=pack.config_path, symbols=symbols,
                                                   **family.kernel_context(inst, ARCHS[arch]))
    # The dispatch stub writes each kernarg with the family's C expression for it.
    missing = set(family.kernarg_expr) ^ {a["name"] for a in family.signature()}
    if missing:
        raise ValueError(f"kernarg expressions and signature disagree on: {sorted(missing)}")
    sig = [dict(a, expr=family.kernarg_expr[a["name"]]) for a in family.signature()]
    ctx = dict(pack=pack, config=pack.config_path, symbol=descriptors.dispatch_symbol(pack),
               signature=sig, kernarg_size=family.kernarg_size(), **family.dispatch_context(pack))
    files[f"dispatch/{pack.name}_dispatch.c"] = env.get_template(family.dispatch_source_template).render(**ctx)
    files[f"dispatch/{pack.name}_dispatch.h"] = env.get_template(family.dispatch_header_template).render(**ctx)
    for fname, obj in descriptors.build(pack).items():
        files[f"descriptors/{fname}"] = descriptors.dumps(obj)
    return files
