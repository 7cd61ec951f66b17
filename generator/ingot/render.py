"""Stage 4: render every output file of a pack into memory. One Jinja
Environment with StrictUndefined: a missing variable is an error, never an
empty string. Templates only bind parameters; the algorithms live in the
hand-written headers beside them."""

import jinja2

from ingot import ctokens, descriptors, paths
from ingot.archs import ARCHS
from ingot.families import attention_decode as ad

TEMPLATE_DIR = paths.template_dir()  # $INGOT_TEMPLATE_DIR, the installed templates, or the tree's

# The C expression a dispatch stub writes for each kernarg (plan p, buffers b, workspace ws).
KERNARG_EXPR = {
    "q": "b->q", "k": "b->k", "v": "b->v", "o": "b->o", "lse": "b->lse", "seq_lens": "b->seq_lens",
    "page_table": "b->page_table", "workspace": "ws",
    "q_stride_b": "p->q_stride[0]", "q_stride_h": "p->q_stride[1]", "q_stride_s": "p->q_stride[2]",
    "k_stride_b": "p->k_stride[0]", "k_stride_t": "p->k_stride[1]", "k_stride_h": "p->k_stride[2]",
    "v_stride_b": "p->v_stride[0]", "v_stride_t": "p->v_stride[1]", "v_stride_h": "p->v_stride[2]",
    "o_stride_b": "p->o_stride[0]", "o_stride_h": "p->o_stride[1]", "o_stride_s": "p->o_stride[2]",
    "page_table_stride": "p->page_table_stride", "capacity": "p->capacity", "page_size": "p->page_size",
    "sq": "p->sq", "num_splits": "p->num_splits", "num_kv_heads": "p->num_kv_heads", "flags": "p->flags",
    "scale": "p->scale", "group": "p->group",
}


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
    files = {}
    kt = env.get_template("attention_decode.hip.j2")
    for inst in pack.instances:
        for arch in inst.archs:
            files[inst.filename(arch)] = kt.render(inst=inst, arch=arch, config=pack.config_path,
                                                   symbols={e: inst.symbol(e) for e in ad.ENTRY_POINTS},
                                                   dynamic_lds=inst.dynamic_lds(ARCHS[arch]))
    sig = [dict(a, expr=KERNARG_EXPR[a["name"]]) for a in ad.signature()]
    missing = set(KERNARG_EXPR) ^ {a["name"] for a in sig}
    if missing:
        raise ValueError(f"kernarg expressions and signature disagree on: {sorted(missing)}")
    ctx = dict(pack=pack, config=pack.config_path, symbol=descriptors.dispatch_symbol(pack),
               signature=sig, kernarg_size=ad.kernarg_size(), split=dict(pack.split),
               kernel_max_splits=ad.MAX_SPLITS)
    files[f"dispatch/{pack.name}_dispatch.c"] = env.get_template("attention_decode_dispatch.c.j2").render(**ctx)
    files[f"dispatch/{pack.name}_dispatch.h"] = env.get_template("attention_decode_dispatch.h.j2").render(**ctx)
    for fname, obj in descriptors.build(pack).items():
        files[f"descriptors/{fname}"] = descriptors.dumps(obj)
    return files
