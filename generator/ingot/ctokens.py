"""Python values -> C tokens. Raises on anything it does not know, so a new
config value can never turn into silently wrong C; strings are escaped for
the place they go (comment, string literal), identifiers are checked."""

import re

DTYPE_TOKENS = {"bf16": "ingot::kBF16", "fp16": "ingot::kFP16"}  # templates/ingot_dtype.h
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
    """A C string literal holding v's UTF-8 bytes: quote, backslash, '?' (a
    trigraph's start) and every byte outside printable ASCII escaped, the latter
    as three octal digits (a hex escape would swallow the hex digits after it)."""
    if not isinstance(v, str):
        raise TypeError(f"expected a string for a C string literal, got {v!r}")
    out = []
    for b in v.encode("utf-8", "surrogateescape"):
        c = chr(b)
        if c in '"\\?':
            out.append("\\" + c)
        elif 0x20 <= b < 0x7F:
            out.append(c)
        else:
            out.append(f"\\{b:03o}")
    return '"' + "".join(out) + '"'


def c_comment(v):
    """v as text inside a // or /* */ comment: a line break (or any control
    character, or anything past ASCII) cannot end the comment, a backslash cannot
    splice the next line into it, '*/' cannot close it and '??' makes no trigraph.
    Each such character becomes a \\xNN / \\uNNNN escape; printable ASCII stays."""
    if not isinstance(v, str):
        raise TypeError(f"expected a string for a C comment, got {v!r}")
    out = []
    for c in v:
        o = ord(c)
        if c == "\\":
            out.append("\\x5c")
        elif 0x20 <= o < 0x7F:
            out.append(c)
        elif o < 0x100:
            out.append(f"\\x{o:02x}")
        elif o < 0x10000:
            out.append(f"\\u{o:04x}")
        else:
            out.append(f"\\U{o:08x}")
    text = "".join(out)
    return text.replace("*/", "*\\x2f").replace("/*", "/\\x2a").replace("??", "?\\x3f")


IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# C11 and C++17 keywords: the kernels are HIP (C++), the dispatch stubs C.
KEYWORDS = frozenset("""
    auto break case char const continue default do double else enum extern float for goto if inline
    int long register restrict return short signed sizeof static struct switch typedef union unsigned
    void volatile while _Alignas _Alignof _Atomic _Bool _Complex _Generic _Imaginary _Noreturn
    _Static_assert _Thread_local alignas alignof and and_eq asm bitand bitor bool catch char16_t
    char32_t class compl constexpr const_cast decltype delete dynamic_cast explicit export false friend
    mutable namespace new noexcept not not_eq nullptr operator or or_eq private protected public
    reinterpret_cast static_assert static_cast template this thread_local throw true try typeid
    typename using virtual wchar_t xor xor_eq""".split())


def c_ident(v):
    """v itself where it is a C (and C++) identifier; raises on anything else, as
    there is no escaping an identifier."""
    if not isinstance(v, str) or not IDENTIFIER.fullmatch(v) or v in KEYWORDS:
        raise ValueError(f"not a C identifier: {v!r}")
    return v


MATH_TOKENS = {"simt": "ingot::kMathSimt", "auto": "ingot::kMathAuto"}


def c_math(v):
    try:
        return MATH_TOKENS[v]
    except KeyError:
        raise ValueError(f"no C token for math {v!r} (known: {', '.join(sorted(MATH_TOKENS))})") from None
