"""Stage 1: load a YAML config into plain Python values, remembering where each
value came from (file, line, column) so that later stages can point at it.

Only plain YAML is read: no anchors or aliases (refused while composing, before
anything is expanded, so a recursive alias or a billion-laughs config costs
nothing), no tags but the core scalar, list and mapping ones, a bounded nesting
depth, and a bounded file size. Every way a YAML value can fail to construct
(a bad date, `!!int "abc"`, an integer too long to convert) is a config error
at the value's own file:line:col."""

import os
import stat

import yaml

from ingot.errors import ConfigErrors, ConfigError, Mark

# A config is a few kilobytes; one that is not is a mistake, not a config.
MAX_CONFIG_BYTES = 1 << 20
# The deepest a valid config nests is 7 (pack -> variants -> [i] -> admit -> heads -> [j] -> value).
MAX_DEPTH = 32
# No config value comes near this; Python refuses past 4300 digits with a message naming its own API.
MAX_INT_CHARS = 100

_CORE = "tag:yaml.org,2002:"
SCALAR_TAGS = tuple(_CORE + t for t in ("str", "int", "float", "bool", "null"))
ALLOWED_TAGS = {yaml.ScalarEvent: SCALAR_TAGS, yaml.SequenceStartEvent: (_CORE + "seq",),
                yaml.MappingStartEvent: (_CORE + "map",)}


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


class _Refused(Exception):
    def __init__(self, mark, path, message):
        super().__init__(message)
        self.mark, self.path, self.message = mark, path, message


def _short_tag(tag):
    return "!!" + tag[len(_CORE):] if tag.startswith(_CORE) else tag


class _PlainLoader(yaml.SafeLoader):
    """SafeLoader that refuses anchors, aliases, other tags and deep nesting at
    the event that introduces them, while composing."""

    def __init__(self, stream, display):
        super().__init__(stream)
        self.display = display
        self.path = []  # key path components of the node being composed

    def _mark(self, event):
        return Mark(self.display, event.start_mark.line + 1, event.start_mark.column + 1)

    def compose_node(self, parent, index):
        if parent is not None:
            # index: the key node (a mapping's value), an int (a list's item) or None (a key)
            if isinstance(index, yaml.ScalarNode):
                self.path.append((index.value,))
            elif isinstance(index, int) and not isinstance(index, bool):
                self.path.append((index,))
            else:
                self.path.append(())
        try:
            event = self.peek_event()
            where = format_path(sum(self.path, ()))
            if isinstance(event, yaml.AliasEvent):
                raise _Refused(self._mark(event), where, f"YAML anchors and aliases are not allowed (found "
                               f"alias '*{event.anchor}'; write the value out in full)")
            if getattr(event, "anchor", None) is not None:
                raise _Refused(self._mark(event), where, f"YAML anchors and aliases are not allowed (found "
                               f"anchor '&{event.anchor}'; write the value out in full)")
            tag = getattr(event, "tag", None)
            allowed = ALLOWED_TAGS.get(type(event), ())
            if tag is not None and tag != "!" and tag not in allowed:
                raise _Refused(self._mark(event), where, f"YAML tag '{_short_tag(tag)}' is not allowed here "
                               f"(allowed: {', '.join(_short_tag(t) for t in allowed) or 'none'})")
            if len(self.path) >= MAX_DEPTH:
                raise _Refused(self._mark(event), where, f"nested deeper than {MAX_DEPTH} levels "
                               f"(allowed: at most {MAX_DEPTH})")
            return super().compose_node(parent, index)
        finally:
            if parent is not None:
                self.path.pop()


def _mark(display, node):
    return Mark(display, node.start_mark.line + 1, node.start_mark.column + 1)


_CONSTRUCTOR = yaml.SafeLoader("")


def _scalar(node, display, path, errors):
    """The value of a scalar by the safe loader's rules (int, float, bool, null,
    str), or a config error at the scalar when it does not construct."""
    if node.tag in (_CORE + "merge", _CORE + "value"):
        return node.value  # `<<` and `=` are plain strings in a config
    if node.tag == _CORE + "int" and len(node.value) > MAX_INT_CHARS:
        errors.append(ConfigError(_mark(display, node), format_path(path), f"integer of {len(node.value)} "
                                  f"characters is far too long (allowed: at most {MAX_INT_CHARS})"))
        return None
    try:
        return _CONSTRUCTOR.construct_object(node, deep=True)
    except (ValueError, TypeError, OverflowError, yaml.YAMLError) as e:
        reason = getattr(e, "problem", None) or str(e)
        kind = _short_tag(node.tag)
        hint = ("; quote it to make it a string" if node.tag == _CORE + "timestamp" else "")
        errors.append(ConfigError(_mark(display, node), format_path(path),
                                  f"{_quote(node.value)} is not a valid {kind} value ({reason}){hint}"))
        return None


def _quote(text, limit=60):
    text = text if len(text) <= limit else text[:limit - 4] + " ..."
    return "'" + text.encode("unicode_escape").decode("ascii") + "'"


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
    return _scalar(node, display, path, errors)


def format_path(path):
    s = ""
    for p in path:
        s += f"[{p}]" if isinstance(p, int) else (f".{p}" if s else str(p))
    return s


def _error(display, message, line=1, column=1):
    return ConfigErrors([ConfigError(Mark(display, line, column), "", message)])


def read_config(path, display):
    """The config's bytes. Opens without blocking (a FIFO would hang a read) and
    reads only a regular file of at most MAX_CONFIG_BYTES."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise _error(display, f"cannot read config: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            what = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            raise _error(display, f"cannot read config: {what} (allowed: a YAML file)")
        if st.st_size > MAX_CONFIG_BYTES:
            raise _error(display, f"config of {st.st_size} bytes is too large (allowed: at most "
                         f"{MAX_CONFIG_BYTES} bytes)")
        chunks, size = [], 0
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            size += len(chunk)
            if size > MAX_CONFIG_BYTES:  # it grew while being read
                raise _error(display, f"config of more than {MAX_CONFIG_BYTES} bytes is too large "
                             f"(allowed: at most {MAX_CONFIG_BYTES} bytes)")
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as e:
        raise _error(display, f"cannot read config: {e.strerror}") from None
    finally:
        os.close(fd)


def load_config(path, display=None):
    """Returns a Located. Raises ConfigErrors for unreadable files and YAML syntax errors."""
    display = display or os.path.relpath(path)
    return load_bytes(read_config(path, display), display)


def load_bytes(data, display):
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        before = e.object[:e.start]
        line, column = before.count(b"\n") + 1, e.start - (before.rfind(b"\n") + 1) + 1
        raise _error(display, f"config is not UTF-8 ({e.reason} at byte {e.start})", line, column) from None
    return load_text(text, display)


def load_text(text, display):
    loader = None
    try:
        loader = _PlainLoader(text, display)
        node = loader.get_single_node()
    except _Refused as e:
        raise ConfigErrors([ConfigError(e.mark, e.path, e.message)]) from None
    except yaml.reader.ReaderError as e:
        before = text[:e.position]
        line, column = before.count("\n") + 1, e.position - (before.rfind("\n") + 1) + 1
        code = e.character if isinstance(e.character, int) else ord(e.character[:1] or "\0")
        raise _error(display, f"YAML syntax error: character U+{code:04X} is not allowed in YAML "
                     f"({e.reason})", line, column) from None
    except yaml.MarkedYAMLError as e:
        m = e.problem_mark or e.context_mark
        line, column = (m.line + 1, m.column + 1) if m else (1, 1)
        raise _error(display, f"YAML syntax error: {e.problem or e.context}", line, column) from None
    except yaml.YAMLError as e:
        raise _error(display, f"YAML error: {e}") from None
    finally:
        if loader is not None:
            loader.dispose()
    if node is None:
        raise _error(display, "config is empty (expected a mapping with 'pack', 'family', 'archs', 'variants')")
    marks, errors = {}, []
    data = _convert(node, display, (), marks, errors)
    if errors:
        raise ConfigErrors(errors)
    return Located(display, data, marks)
