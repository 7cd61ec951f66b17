"""A small declarative schema for configs. Unlike a JSON Schema run on the
loaded data, it knows where each value came from and writes the messages a
person editing YAML needs: file:line:column, key path, the bad value, what is
allowed, and a did-you-mean for misspelt keys. It reports every error at once."""

import difflib

from ingot.errors import printable
from ingot.load import format_path


def _type_name(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "list"
    if isinstance(v, dict):
        return "mapping"
    return type(v).__name__


def show(v):
    if isinstance(v, str):
        return _clip(f"'{printable(v)}'")
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, list):
        return _clip("[" + ", ".join(show(x) for x in v) + "]")
    if isinstance(v, dict):
        return _clip("{" + ", ".join(f"{printable(str(k))}: {show(x)}" for k, x in v.items()) + "}")
    return _clip(printable(str(v)))


def _clip(text, limit=60):
    """A value in a message is a reminder of what the file says, not a dump of it."""
    return text if len(text) <= limit else text[:limit - 4] + " ..."


class Node:
    def check(self, value, path, ctx):
        raise NotImplementedError


class Str(Node):
    def __init__(self, choices=None, pattern=None, pattern_desc=None, max_len=128):
        self.choices, self.pattern, self.pattern_desc, self.max_len = choices, pattern, pattern_desc, max_len

    def check(self, value, path, ctx):
        if not isinstance(value, str):
            return ctx.error(path, f"expected a string, got {_type_name(value)} {show(value)}")
        if self.choices is not None and value not in self.choices:
            hint = difflib.get_close_matches(value, self.choices, n=1)
            dym = f"did you mean '{hint[0]}'? " if hint else ""
            return ctx.error(path, f"{show(value)} is not allowed ({dym}allowed: {', '.join(self.choices)})")
        if len(value) > self.max_len:
            return ctx.error(path, f"string of {len(value)} characters is too long (at most {self.max_len})")
        if self.pattern is not None and not self.pattern.fullmatch(value):
            return ctx.error(path, f"{show(value)} is not {self.pattern_desc}")
        return value


class Int(Node):
    def __init__(self, lo=None, hi=None):
        self.lo, self.hi = lo, hi

    def check(self, value, path, ctx):
        if isinstance(value, bool) or not isinstance(value, int):
            return ctx.error(path, f"expected an integer, got {_type_name(value)} {show(value)}")
        if (self.lo is not None and value < self.lo) or (self.hi is not None and value > self.hi):
            return ctx.error(path, f"{value} is out of range (allowed: {self.lo}..{self.hi})")
        return value


class Bool(Node):
    def check(self, value, path, ctx):
        if not isinstance(value, bool):
            return ctx.error(path, f"expected true or false, got {_type_name(value)} {show(value)}")
        return value


class List(Node):
    def __init__(self, item, min_len=1, max_len=4096, unique=False):
        self.item, self.min_len, self.max_len, self.unique = item, min_len, max_len, unique

    def check(self, value, path, ctx):
        if not isinstance(value, list):
            return ctx.error(path, f"expected a list, got {_type_name(value)} {show(value)}")
        if len(value) < self.min_len:
            return ctx.error(path, f"expected at least {self.min_len} item(s), got {len(value)}")
        if len(value) > self.max_len:
            return ctx.error(path, f"expected at most {self.max_len} items, got {len(value)}")
        out, seen = [], []
        for i, v in enumerate(value):
            r = self.item.check(v, path + (i,), ctx)
            if r is ctx.BAD:
                continue
            if self.unique and r in seen:
                ctx.error(path + (i,), f"duplicate value {show(r)}")
                continue
            seen.append(r)
            out.append(r)
        return out


class Range(Node):
    """[min, max] of integers, min <= max, both within [lo, hi]."""

    def __init__(self, lo, hi):
        self.lo, self.hi = lo, hi

    def check(self, value, path, ctx):
        if (not isinstance(value, list) or len(value) != 2
                or any(isinstance(x, bool) or not isinstance(x, int) for x in value)):
            return ctx.error(path, f"expected a range [min, max] of two integers, got {show(value)}")
        a, b = value
        if a > b:
            return ctx.error(path, f"range {show(value)} is inverted (min must be <= max)")
        if a < self.lo or b > self.hi:
            return ctx.error(path, f"range {show(value)} leaves the allowed {self.lo}..{self.hi}")
        return (a, b)


class Map(Node):
    """fields: name -> (node, required, default)."""

    def __init__(self, fields):
        self.fields = fields

    def check(self, value, path, ctx):
        if not isinstance(value, dict):
            return ctx.error(path, f"expected a mapping, got {_type_name(value)} {show(value)}")
        out, bad = {}, False
        for key in value:
            if key not in self.fields:
                hint = difflib.get_close_matches(key, list(self.fields), n=1)
                dym = f"did you mean '{hint[0]}'? " if hint else ""
                ctx.error(path + (key,), f"unknown key '{key}' ({dym}allowed: {', '.join(sorted(self.fields))})")
                bad = True
        for name, (node, required, default) in self.fields.items():
            if name not in value:
                if required:
                    ctx.error(path, f"missing required key '{name}'")
                    bad = True
                else:
                    out[name] = default
                continue
            r = node.check(value[name], path + (name,), ctx)
            if r is ctx.BAD:
                bad = True
            else:
                out[name] = r
        return ctx.BAD if bad else out


class Context:
    BAD = object()

    def __init__(self, located, sink):
        self.located, self.sink = located, sink

    def error(self, path, message):
        self.sink.add(self.located.mark(path), format_path(path), message)
        return self.BAD
