"""Stage 5: write rendered packs, a whole pack tree or nothing.

`write_packs` holds an exclusive lock on the output root (flock on the folder
itself, so no lock file is left behind) for the whole write, so concurrent runs
on one output take turns. Under the lock it first cleans what a killed run left
(`.ingot-stage-*`, `.ingot-old-*`), then, for every pack:

- plans: reads the old tree; a produced file whose bytes are unchanged is kept
  (hard-linked, so its inode and mtime stay and the build does not see it
  rewritten); a file the generator wrote before (listed in the old tree's
  MANIFEST) that is no longer produced is pruned; any other file is someone
  else's and is kept, unless prune_unknown;
- stages: builds the complete new tree in `<out>/.ingot-stage-<pack>-<hex>`,
  beside the pack folder on the same filesystem;

and only when every pack is staged swaps each staged tree in with one atomic
rename: renameat2(RENAME_EXCHANGE), or, where the filesystem or libc lacks it,
two renames through `<out>/.ingot-old-<pack>-<hex>` (those folder names are the
journal: found with no pack folder beside it, it is the old tree and goes back).
A pack with nothing to change is not touched at all.

`check` compares instead of writing and returns a unified diff."""

import contextlib
import ctypes
import difflib
import errno
import fcntl
import os
import secrets
import shutil
import stat
import time

MANIFEST = "MANIFEST.ingot"
TEMP_PREFIX = ".ingot-"  # every temporary the generator makes starts so; no output file does
STAGE_PREFIX = TEMP_PREFIX + "stage-"
OLD_PREFIX = TEMP_PREFIX + "old-"
# A tree with no MANIFEST was written by an older ingot: these folders were its own.
LEGACY_DIRS = ("kernels", "dispatch", "descriptors")
DEFAULT_LOCK_TIMEOUT = 600.0


class OutputError(Exception):
    """An output location that cannot be used, or an I/O error while writing."""

    def __init__(self, path, reason):
        super().__init__(f"{path}: {reason}")
        self.path, self.reason = path, reason


def _io_error(e, fallback_path):
    return OutputError(e.filename if e.filename is not None else fallback_path, e.strerror or str(e))


def manifest_text(files):
    """The MANIFEST of a pack tree: the files the generator writes there, so that a
    later run prunes those (when no longer produced) and nothing else."""
    lines = ["# Written by ingot generate: the files it wrote in this folder. When a config stops",
             "# producing one of them, generate removes it; any other file here is left alone",
             "# (unless --prune-unknown)."]
    return "\n".join(lines + sorted(f for f in files if f != MANIFEST)) + "\n"


def with_manifest(files):
    out = dict(files)
    out[MANIFEST] = manifest_text(files)
    return out


def _parse_manifest(data):
    return {line for line in data.decode("utf-8", "replace").splitlines() if line and not line.startswith("#")}


# ---------------------------------------------------------------- locking

@contextlib.contextmanager
def locked(out, timeout=DEFAULT_LOCK_TIMEOUT, shared=False):
    """Holds flock on the folder out (exclusive, or shared for readers) for the
    with-block; waits up to timeout seconds for another run to let go."""
    try:
        fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as e:
        raise _io_error(e, out) from None
    try:
        deadline = time.monotonic() + timeout
        pause = 0.005
        while True:
            try:
                fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise OutputError(out, f"another ingot run has held this output folder's lock for "
                                      f"{timeout:g} s; gave up waiting (allowed: --lock-timeout SECONDS)") from None
                time.sleep(pause)
                pause = min(pause * 2, 0.1)
        yield
    finally:
        os.close(fd)  # closing the only descriptor releases the lock


def ensure_folder(out):
    """out exists as a folder afterwards, or OutputError says why it cannot. Safe
    against a concurrent run that creates the folder meanwhile (what is there is
    judged after the attempt, not before it)."""
    if os.path.isdir(out):
        return
    try:
        os.makedirs(out, exist_ok=True)
    except FileExistsError:
        pass  # a file or a dangling link there, or a folder another run just made: told apart below
    except OSError as e:
        raise OutputError(e.filename or out, f"cannot create the output folder: {e.strerror}") from None
    if not os.path.isdir(out):
        raise OutputError(out, "not a folder (allowed: a folder, or a path where one can be created)")


# ---------------------------------------------------------------- recovery

def recover(out):
    """Cleans what killed runs left in out (call under the exclusive lock): a
    staging folder is unfinished work; an old tree whose pack folder is missing
    is put back (a run died between its two renames), else removed."""
    for name in sorted(os.listdir(out)):
        path = os.path.join(out, name)
        if name.startswith(STAGE_PREFIX):
            _remove(path)
        elif name.startswith(OLD_PREFIX):
            pack = os.path.join(out, name[len(OLD_PREFIX):].rsplit("-", 1)[0])
            if not os.path.lexists(pack) and os.path.isdir(path) and not os.path.islink(path):
                os.rename(path, pack)
            else:
                _remove(path)


def _remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    else:
        os.unlink(path)


# ---------------------------------------------------------------- planning

class PackPlan:
    """What writing one pack does. files: {relpath: text} to produce; link:
    relpaths taken from the old tree as they are (unchanged outputs); write:
    relpaths written anew; removed; kept (files not the generator's, left
    alone); dirs: folders not the generator's, kept even when empty."""

    def __init__(self, name, root, files):
        self.name, self.root, self.files = name, root, files
        self.link, self.write, self.removed, self.kept, self.dirs = [], [], [], [], []
        self.pruned_unknown = []  # removed although not the generator's (prune_unknown)
        self.root_mode = None

    @property
    def changes(self):
        return bool(self.write or self.removed)


def _scan(root):
    """{relpath: lstat result} of everything under root (folders too), not following links."""
    found = {}
    stack = [""]
    while stack:
        rel = stack.pop()
        with os.scandir(os.path.join(root, rel) if rel else root) as it:
            for entry in it:
                r = os.path.join(rel, entry.name) if rel else entry.name
                st = entry.stat(follow_symlinks=False)
                found[r] = st
                if stat.S_ISDIR(st.st_mode):
                    stack.append(r)
    return found


def _read_regular(path, st):
    """The bytes of a regular file, None for anything else (a FIFO must not be opened)."""
    if not stat.S_ISREG(st.st_mode):
        return None
    with open(path, "rb") as f:
        return f.read()


def plan_pack(name, root, files, prune_unknown=False):
    """A PackPlan for writing files ({relpath: text}) as the tree at root.
    Raises OutputError when root cannot hold the pack."""
    plan = PackPlan(name, root, files)
    if os.path.islink(root) or (os.path.lexists(root) and not os.path.isdir(root)):
        what = "a symbolic link" if os.path.islink(root) else "a file"
        raise OutputError(root, f"{what}, not a folder, is where pack '{name}' is written "
                          "(allowed: a folder, or nothing; move it away)")
    try:
        old = _scan(root) if os.path.isdir(root) else {}
        if os.path.isdir(root):
            plan.root_mode = stat.S_IMODE(os.stat(root).st_mode)
        owned = _ownership(root, old)
        produced_dirs = {d for r in files for d in _parents(r)}
        for rel in sorted(files):
            st = old.get(rel)
            if st is not None and stat.S_ISDIR(st.st_mode):
                if not prune_unknown and any(o.startswith(rel + os.sep) and not owned(o) for o in old):
                    raise OutputError(os.path.join(root, rel), "a folder is where ingot writes a file of "
                                      f"pack '{name}' (move it away, or use --prune-unknown)")
            if st is not None and _read_regular(os.path.join(root, rel), st) == files[rel].encode("utf-8"):
                plan.link.append(rel)
            else:
                plan.write.append(rel)
        for rel, st in sorted(old.items()):
            if rel in files or any(p in files for p in _parents(rel)):
                continue  # the produced file replaces it (or the folder holding it)
            if stat.S_ISDIR(st.st_mode):
                if rel not in produced_dirs and not owned(rel) and not prune_unknown:
                    plan.dirs.append(rel)  # someone's folder: kept, even when empty
                continue
            if owned(rel):
                plan.removed.append(rel)
            elif prune_unknown:
                plan.removed.append(rel)
                plan.pruned_unknown.append(rel)
            elif rel in produced_dirs:
                raise OutputError(os.path.join(root, rel), "a file ingot did not write is where ingot writes "
                                  f"the folder {rel}/ of pack '{name}' (move it away, or use --prune-unknown)")
            else:
                plan.kept.append(rel)
    except OSError as e:
        raise _io_error(e, root) from None
    return plan


def _parents(rel):
    out = []
    while True:
        rel = os.path.dirname(rel)
        if not rel:
            return out
        out.append(rel)


def _ownership(root, old):
    """owned(relpath): did the generator write this file (or folder)? Per the old
    tree's MANIFEST; a tree without one is an older ingot's, whose folders
    (LEGACY_DIRS) were its own. Temporaries (TEMP_PREFIX) are always its own."""
    st = old.get(MANIFEST)
    if st is not None:
        data = _read_regular(os.path.join(root, MANIFEST), st)
        files = _parse_manifest(data) if data is not None else set()
        dirs = {d for f in files for d in _parents(f)}
        listed = files | dirs | {MANIFEST}
    else:
        listed = None

    def owned(rel):
        if os.path.basename(rel).startswith(TEMP_PREFIX):
            return True
        if listed is not None:
            return rel in listed
        return rel.split(os.sep, 1)[0] in LEGACY_DIRS

    return owned


# ---------------------------------------------------------------- staging and the swap

def _put_file(path, data):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    try:
        os.fchmod(fd, 0o644)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def _link(src, dst):
    """dst is src's inode (mtime kept); a copy with src's times where links are refused."""
    try:
        os.link(src, dst, follow_symlinks=False)
    except OSError as e:
        if e.errno not in (errno.EPERM, errno.EXDEV, errno.EMLINK, errno.ENOTSUP, errno.EACCES):
            raise
        shutil.copy2(src, dst, follow_symlinks=False)


def _makedirs(stage, rel, old_root, made):
    parts = []
    while rel and rel not in made:
        parts.append(rel)
        rel = os.path.dirname(rel)
    for d in reversed(parts):
        os.mkdir(os.path.join(stage, d))
        try:
            mode = stat.S_IMODE(os.lstat(os.path.join(old_root, d)).st_mode)
            os.chmod(os.path.join(stage, d), mode)
        except FileNotFoundError:
            pass
        made.add(d)


def stage_pack(plan, out):
    """Builds plan's complete tree in a new staging folder in out; returns its path."""
    while True:
        stage = os.path.join(out, f"{STAGE_PREFIX}{plan.name}-{secrets.token_hex(4)}")
        try:
            os.mkdir(stage)
            break
        except FileExistsError:
            continue
        except OSError as e:
            raise OutputError(out, f"cannot write in the output folder: {e.strerror}") from None
    try:
        if plan.root_mode is not None:
            os.chmod(stage, plan.root_mode)
        made = {""}
        for rel in plan.dirs:
            _makedirs(stage, rel, plan.root, made)
        for rel in sorted(plan.link + plan.kept):
            _makedirs(stage, os.path.dirname(rel), plan.root, made)
            _link(os.path.join(plan.root, rel), os.path.join(stage, rel))
        for rel in sorted(plan.write):
            _makedirs(stage, os.path.dirname(rel), plan.root, made)
            _put_file(os.path.join(stage, rel), plan.files[rel].encode("utf-8"))
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return stage


AT_FDCWD = -100
RENAME_EXCHANGE = 2


def _exchange(a, b):
    """Swaps a and b atomically (renameat2 RENAME_EXCHANGE). False where libc or the
    filesystem cannot; raises OSError for anything else."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    if fn(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), b)


def swap_in(plan, stage, out):
    """Puts the staged tree at plan.root in one atomic step and removes the old tree."""
    if not os.path.isdir(plan.root):
        os.rename(stage, plan.root)
        return
    # The new tree is in place once the rename is done; an old tree that cannot be
    # removed now is removed by the next run (recover), so its errors do not count.
    if _exchange(stage, plan.root):
        shutil.rmtree(stage, ignore_errors=True)  # now the old tree
        return
    old = os.path.join(out, f"{OLD_PREFIX}{plan.name}-{secrets.token_hex(4)}")
    os.rename(plan.root, old)
    try:
        os.rename(stage, plan.root)
    except OSError:
        os.rename(old, plan.root)
        raise
    shutil.rmtree(old, ignore_errors=True)


class WriteFailed(OutputError):
    """An I/O error during the swaps: `done` names the packs already written."""

    def __init__(self, error, done):
        super().__init__(error.path, error.reason)
        self.done = done


def write_packs(out, packs, prune_unknown=False, lock_timeout=DEFAULT_LOCK_TIMEOUT):
    """Writes {pack name: {relpath: text}} as out/<pack>/ trees. Returns the
    PackPlans. Raises OutputError (nothing written) or WriteFailed."""
    ensure_folder(out)
    with locked(out, lock_timeout):
        try:
            recover(out)
        except OSError as e:
            raise _io_error(e, out) from None
        plans = [plan_pack(name, os.path.join(out, name), files, prune_unknown)
                 for name, files in sorted(packs.items())]
        stages = {}
        try:
            for plan in plans:
                if plan.changes:
                    stages[plan.name] = stage_pack(plan, out)
        except (OSError, OutputError) as e:
            for s in stages.values():
                shutil.rmtree(s, ignore_errors=True)
            raise (e if isinstance(e, OutputError) else _io_error(e, out)) from None
        done = []
        for plan in plans:
            if plan.name not in stages:
                continue
            try:
                swap_in(plan, stages[plan.name], out)
            except OSError as e:
                for name, s in stages.items():
                    if name not in done:
                        shutil.rmtree(s, ignore_errors=True)
                raise WriteFailed(_io_error(e, plan.root), done) from None
            done.append(plan.name)
        return plans


# ---------------------------------------------------------------- check

def diff_tree(root, files, label):
    """Unified diff between what is under root and files; '' when identical.
    Anything that is not a regular file (a FIFO, a link, a folder where a file
    goes) is drift, named without being opened."""
    chunks = []
    found = _scan(root) if os.path.isdir(root) else {}
    on_disk = {r: st for r, st in found.items() if not stat.S_ISDIR(st.st_mode) or r in files}
    for rel in sorted(set(files) | set(on_disk)):
        old = ""
        if rel in on_disk:
            st = on_disk[rel]
            data = _read_regular(os.path.join(root, rel), st)
            old = (data.decode("utf-8", errors="replace") if data is not None
                   else f"<{_kind(st)}, not a regular file>\n")
        new = files.get(rel, "")
        if old != new or (rel in files) != (rel in on_disk):
            a = f"a/{label}/{rel}" if rel in on_disk else "/dev/null"
            b = f"b/{label}/{rel}" if rel in files else "/dev/null"
            chunks.append("".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), a, b)))
    return "".join(chunks)


def _kind(st):
    m = st.st_mode
    return ("a symbolic link" if stat.S_ISLNK(m) else "a FIFO" if stat.S_ISFIFO(m) else
            "a folder" if stat.S_ISDIR(m) else "a socket" if stat.S_ISSOCK(m) else "a device")
