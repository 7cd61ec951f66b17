"""Stage 5: write rendered files. A file is written only when its content
changed, through a temporary file and a rename, so a reader never sees half a
file; nothing is written at all unless every file rendered. `check` compares
instead of writing and returns a unified diff."""

import difflib
import os
import tempfile


def write_tree(root, files, prune=True):
    """Writes {relpath: text} under root. Removes files under root that are no
    longer produced (when prune). Returns (written, removed) relpaths."""
    written, removed = [], []
    for rel in sorted(files):
        path = os.path.join(root, rel)
        data = files[rel].encode("utf-8")
        try:
            with open(path, "rb") as f:
                if f.read() == data:
                    continue
        except FileNotFoundError:
            pass
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".ingot-", dir=os.path.dirname(path))
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        written.append(rel)
    if prune:
        for rel in sorted(existing_files(root)):
            if rel not in files:
                os.unlink(os.path.join(root, rel))
                removed.append(rel)
    return written, removed


def existing_files(root):
    out = set()
    if not os.path.isdir(root):
        return out
    for dirpath, _, names in os.walk(root):
        for n in names:
            out.add(os.path.relpath(os.path.join(dirpath, n), root))
    return out


def diff_tree(root, files, label):
    """Unified diff between what is under root and files; '' when identical."""
    chunks = []
    on_disk = existing_files(root)
    for rel in sorted(set(files) | on_disk):
        path = os.path.join(root, rel)
        old = ""
        if rel in on_disk:
            with open(path, "rb") as f:
                old = f.read().decode("utf-8", errors="replace")
        new = files.get(rel, "")
        if old != new or (rel in files) != (rel in on_disk):
            a = f"a/{label}/{rel}" if rel in on_disk else "/dev/null"
            b = f"b/{label}/{rel}" if rel in files else "/dev/null"
            chunks.append("".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), a, b)))
    return "".join(chunks)
