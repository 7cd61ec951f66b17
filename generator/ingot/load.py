"""Stage 1: load a YAML config into plain Python values, remembering where each
value came from (file, line, column) so that later stages can point at it."""

import os

import yaml

from ingot.errors import ConfigErrors, ConfigError, Mark


class Located:
    """A loaded config: `data` (plain dicts, lists, scalars) and `marks`
    (key path tuple -> Mark of the value at that path)."""

    def __init__(self, path, data, marks):
        self.path = path
        self.data = data
        self.marks = marks

    def mark(self, keypath):
        """Mark of the deepest existing prefix of keypath."""
        keypath = tuple(keypath)
        while keypath not in self.marks and keypath:
            keypath = keypath[:-1]
        return self.marks.get(keypath, Mark(self.path, 1, 1))


def _mark(display, node):
    return Mark(display, node.start_mark.line + 1, node.start_mark.column + 1)


def _convert(node, display, path, marks, errors):
    marks[path] = _mark(display, node)
    if isinstance(node, yaml.MappingNode):
        out = {}
        for knode, vnode in node.value:
            if not isinstance(knode, yaml.ScalarNode):
                errors.append(ConfigError(_mark(display, knode), format_path(path), "keys must be plain strings"))
                continue
            key = knode.value
            if key in out:
                errors.append(ConfigError(_mark(display, knode), format_path(path + (key,)),
                                          f"duplicate key '{key}'"))
                continue
            out[key] = _convert(vnode, display, path + (key,), marks, errors)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_convert(v, display, path + (i,), marks, errors) for i, v in enumerate(node.value)]
    # Scalars: resolve with the safe loader's own rules (int, float, bool, null, str).
    return yaml.SafeLoader(b"").construct_object(node, deep=True)


def format_path(path):
    s = ""
    for p in path:
        s += f"[{p}]" if isinstance(p, int) else (f".{p}" if s else str(p))
    return s


def load_config(path, display=None):
    """Returns a Located. Raises ConfigErrors for unreadable files and YAML syntax errors."""
    display = display or os.path.relpath(path)
    try:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8")
    except OSError as e:
        raise ConfigErrors([ConfigError(Mark(display, 1, 1), "", f"cannot read config: {e.strerror}")])
    except UnicodeDecodeError as e:
        before = e.object[:e.start]
        line, column = before.count(b"\n") + 1, e.start - (before.rfind(b"\n") + 1) + 1
        raise ConfigErrors([ConfigError(Mark(display, line, column), "",
                                        f"config is not UTF-8 ({e.reason} at byte {e.start})")])
    return load_text(text, display)


def load_text(text, display):
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as e:
        m = e.problem_mark
        mark = Mark(display, m.line + 1, m.column + 1) if m else Mark(display, 1, 1)
        raise ConfigErrors([ConfigError(mark, "", f"YAML syntax error: {e.problem}")])
    except yaml.YAMLError as e:
        raise ConfigErrors([ConfigError(Mark(display, 1, 1), "", f"YAML error: {e}")])
    if node is None:
        raise ConfigErrors([ConfigError(Mark(display, 1, 1), "", "config is empty (expected a mapping with 'pack', 'family', 'archs', 'variants')")])
    marks, errors = {}, []
    try:
        data = _convert(node, display, (), marks, errors)
    except yaml.YAMLError as e:
        raise ConfigErrors([ConfigError(Mark(display, 1, 1), "", f"YAML error: {e}")])
    if errors:
        raise ConfigErrors(errors)
    return Located(display, data, marks)
