"""Python values -> C tokens. Raises on anything it does not know, so a new
config value can never turn into silently wrong C."""

DTYPE_TOKENS = {"bf16": "ingot::kBF16", "fp16": "ingot::kFP16"}
DTYPE_ENUMS = {"bf16": "INGOT_DTYPE_BF16", "fp16": "INGOT_DTYPE_FP16"}


def c_bool(v):
    if not isinstance(v, bool):
        raise TypeError(f"expected a bool for C, got {v!r}")
    return "true" if v else "false"


def c_int(v):
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"expected an int for C, got {v!r}")
    if not -(1 << 31) <= v < (1 << 31):
        raise ValueError(f"{v} does not fit a C int")
    return str(v)


def c_dtype(v):
    try:
        return DTYPE_TOKENS[v]
    except KeyError:
        raise ValueError(f"no C token for dtype {v!r} (known: {', '.join(sorted(DTYPE_TOKENS))})") from None


def c_string(v):
    if not isinstance(v, str) or any(c in v for c in '"\\\n') or not v.isascii():
        raise ValueError(f"not a plain C string literal: {v!r}")
    return f'"{v}"'


MATH_TOKENS = {"simt": "ingot::kMathSimt", "auto": "ingot::kMathAuto"}


def c_math(v):
    try:
        return MATH_TOKENS[v]
    except KeyError:
        raise ValueError(f"no C token for math {v!r} (known: {', '.join(sorted(MATH_TOKENS))})") from None
