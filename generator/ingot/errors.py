"""Config errors: collected, never raised one at a time, so a user sees every
problem of a config in one run. Each names file:line:column, the key path, the
bad value and what is allowed."""

from dataclasses import dataclass


def printable(text):
    """text with control characters escaped, so that a message stays one line
    whatever a file name or a value holds."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


@dataclass(frozen=True)
class Mark:
    file: str
    line: int  # 1-based
    column: int  # 1-based

    def __str__(self):
        return f"{printable(self.file)}:{self.line}:{self.column}"


@dataclass(frozen=True)
class ConfigError:
    mark: Mark
    path: str  # dotted key path, e.g. variants[0].axes.dtype
    message: str

    def __str__(self):
        where = f"{self.mark}: " if self.mark else ""
        return printable(f"{where}{self.path}: {self.message}" if self.path else f"{where}{self.message}")


class ConfigErrors(Exception):
    """All errors of one run; raised after a stage has collected them."""

    def __init__(self, errors):
        super().__init__("\n".join(str(e) for e in errors))
        self.errors = list(errors)


class ErrorSink:
    def __init__(self):
        self.errors = []

    def add(self, mark, path, message):
        self.errors.append(ConfigError(mark, path, message))

    def raise_if_any(self):
        if self.errors:
            raise ConfigErrors(sorted(self.errors, key=_order))


def _order(e):
    m = e.mark
    return (m.file, m.line, m.column, e.path, e.message) if m else ("", 0, 0, e.path, e.message)
