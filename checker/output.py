"""Writing output safely: a file is always its old or its new complete content.

Contract of every write here
----------------------------
- Content goes to a temporary beside its destination, named
  ``.toolcommit-<pid>-<token>.<name>...``, is fsynced, and is renamed over the destination
  once (`os.replace`); the destination is never missing in between.
- A destination that is a symlink is written through: the link stays, its target changes.
- An existing destination keeps its mode (and owner, where allowed); a new file or folder
  gets the umask default (0644 and 0755 under umask 022).
- A destination that is one of the command's inputs is refused (same st_dev and st_ino).
- A folder of files (`write_tree`) is written file by file, each atomically, and only the
  files given plus the stale files the caller names are touched: nothing else in the folder.
- SIGINT and SIGTERM remove the temporaries before the process ends; during the renames of a
  commit they wait until the commit is done, so a signal never leaves a half-applied folder.
- SIGKILL leaves temporaries named with a dead pid: the next write in the same folder
  removes them; a folder commit whose journal was written is completed first (rolled forward).
- Every OSError becomes an `OutputError` naming the path, the reason and what to do
  (one line, exit 2). That holds for stdout too (`guarded_stdout`).
- No raw control, bidi, format or line-separator character reaches stdout or a written file
  (`visible`): a log's ``ESC]52`` clipboard write, ``ESC[2J``, ``\\r`` or U+202E is written as
  its ``\\uXXXX`` escape, which is the same value inside a JSON string and plain to read
  everywhere else.

Not thread-safe: one write at a time per process (the CLI never writes concurrently).
"""

from __future__ import annotations

import errno
import json
import os
import re
import secrets
import shutil
import stat
import sys
from contextlib import contextmanager, suppress
from pathlib import Path

from toolcommit.checker.interrupts import Interrupts
from toolcommit.model.errors import OutputError

PREFIX = ".toolcommit-"
TEMP = re.compile(r"^\.toolcommit-(\d+)-[0-9a-f]{8}\.")
JOURNAL = "journal.json"
STDOUT = "<stdout>"

# Cc but newline and tab, Cf, Cs, Zl and Zp (tests/cli/test_visible.py checks the ranges
# against unicodedata): what a terminal or a browser would act on, or draw reordered
_HIDDEN = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891"
    r"\u08e2\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ud800-\udfff"
    r"\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
    r"\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]"
)


def _escape(m: re.Match) -> str:
    c = ord(m.group())
    if c > 0xFFFF:  # as a JSON surrogate pair, so a JSON text stays valid
        c -= 0x10000
        return "\\u%04x\\u%04x" % (0xD800 + (c >> 10), 0xDC00 + (c & 0x3FF))
    return "\\u%04x" % c


def visible(text: str) -> str:
    """`text` with every character a terminal or a browser would act on or reorder (C0 and
    C1 controls but newline and tab, bidi and other format characters, line separators,
    lone surrogates) written as its ``\\uXXXX`` escape.

    >>> visible("k1\u202eevil\x1b[2J\\r")
    'k1\\\\u202eevil\\\\u001b[2J\\\\u000d'
    """
    return _HIDDEN.sub(_escape, text)


HINTS = {
    errno.ENOSPC: "free some space or write elsewhere",
    errno.EDQUOT: "free some space or write elsewhere",
    errno.EISDIR: "it is a folder: give a file name",
    errno.ENOTDIR: "a part of the path is a file, not a folder: choose another path",
    errno.EEXIST: "it is a file, not a folder: choose another path",
    errno.EACCES: "no permission to write there: choose a writable folder",
    errno.EPERM: "no permission to write there: choose a writable folder",
    errno.EROFS: "the file system is read-only: choose a writable folder",
    errno.ENOENT: "that folder does not exist and cannot be made there: choose another path",
    errno.ENAMETOOLONG: "use a shorter path",
    errno.ELOOP: "a symlink loop is in the way: choose another path",
    errno.EPIPE: "the reader closed the pipe before the output ended",
}


def output_error(shown: str, e: OSError) -> OutputError:
    """`e` as an `OutputError` about `shown` (the path the user gave)."""
    reason = e.strerror or str(e)
    if e.filename is not None and os.path.abspath(str(e.filename)) != os.path.abspath(shown):
        reason += f" ({e.filename})"
    return OutputError(shown, reason, HINTS.get(e.errno, "choose another path"))


@contextmanager
def _errors(shown: str):
    try:
        yield
    except OSError as e:
        raise output_error(shown, e) from None


# --- one file ----------------------------------------------------------------------------


def write_atomic(path, text: str, inputs=()) -> Path:
    """Replace the file at `path` with `text` (UTF-8), atomically; returns `path`.

    Follows a symlink at `path`, keeps an existing file's mode, refuses a `path` that is the
    same file as one of `inputs`, and raises `OutputError` on any OSError. `text` is written
    `visible`.
    """
    shown, text = str(path), visible(text)
    with _errors(shown):
        if _special(Path(path)):  # a device or a pipe (/dev/stdout, a FIFO): written in place
            refuse_inputs(Path(path), inputs, shown)
            with open(path, "wb") as f:
                f.write(text.encode("utf-8"))
            return Path(path)
        dest = _file_destination(Path(path), inputs, shown)
        dest.parent.mkdir(parents=True, exist_ok=True)
        with Interrupts() as sig:
            with sig.hold():
                sweep(dest.parent)
            tmp = dest.parent / _temp_name(dest.name, ".tmp")
            sig.temps.append(tmp)
            _write_file(tmp, text.encode("utf-8"), _meta(dest))
            with sig.hold():
                os.replace(tmp, dest)
            _fsync_dir(dest.parent)
    return Path(path)


def _file_destination(path: Path, inputs, shown: str) -> Path:
    """The real file a write to `path` lands in (symlinks followed); never a folder or an input."""
    real = Path(os.path.realpath(path))
    if real.is_dir():
        raise OSError(errno.EISDIR, os.strerror(errno.EISDIR), shown)
    refuse_inputs(real, inputs, shown)
    return real


def _special(path: Path) -> bool:
    """Whether `path` exists and is neither a regular file nor a folder (never replaced)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def refuse_inputs(dest: Path, inputs, shown: str) -> None:
    """Raise `OutputError` if `dest` is the same file as one of `inputs` ('-' is stdin)."""
    for given in inputs or ():
        if given is None or str(given) == "-":
            continue
        try:
            same = os.path.samefile(dest, given)
        except (OSError, ValueError):
            continue
        if same:
            raise OutputError(
                shown,
                f"it is the input {given}",
                "write the output to another file, never over an input",
            )


def _temp_name(name: str, suffix: str) -> str:
    return f"{PREFIX}{os.getpid()}-{secrets.token_hex(4)}.{name[:120]}{suffix}"


def _meta(dest: Path):
    """(mode, uid, gid) of an existing regular file at `dest`, else None (umask default)."""
    try:
        st = os.stat(dest)
    except FileNotFoundError:
        return None
    return (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid) if stat.S_ISREG(st.st_mode) else None


def _write_file(tmp: Path, data: bytes, meta) -> None:
    """Create `tmp` (never an existing file), write `data`, give it `meta`, fsync."""
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if meta is not None:
            mode, uid, gid = meta
            with suppress(PermissionError):
                if (uid, gid) != (os.geteuid(), os.getegid()):
                    os.fchown(fd, uid, gid)
            os.fchmod(fd, mode)
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(folder: Path) -> None:
    with suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# --- a folder of files -------------------------------------------------------------------


def write_tree(target, files: dict, stale=(), inputs=()) -> Path:
    """Write `files` (relative path -> text, in the order given) into folder `target`, and
    remove the `stale` relative paths; touch nothing else in `target`. Returns `target`.

    Every changed file is staged and fsynced beside `target` first; then a journal is
    written and the staged files are renamed into place (each atomically, unchanged files
    are left alone), the stale files removed (regular files only, and folders left empty by
    that). A run killed after the journal is written is completed by the next write there.
    """
    shown = str(target)
    with _errors(shown):
        root = Path(os.path.realpath(target))
        root.parent.mkdir(parents=True, exist_ok=True)
        if root.exists() and not root.is_dir():
            raise OSError(errno.EEXIST, "a file is in the way of this folder", shown)
        with Interrupts() as sig:
            with sig.hold():
                sweep(root.parent)
            stage = root.parent / _temp_name(root.name, ".d")
            sig.temps.append(stage)
            stage.mkdir()
            moves = _stage(root, stage, files, inputs)
            removals = _removals(root, stale, inputs)
            _write_journal(stage, root, moves, removals)
            with sig.hold():
                _apply(root, moves, removals)
    return Path(target)


def _inside(root: Path, rel: str) -> Path:
    parts = Path(rel).parts
    if not parts or Path(rel).is_absolute() or ".." in parts:
        raise OSError(errno.EINVAL, f"{rel!r} is not a path inside the folder", str(root))
    return root.joinpath(*parts)


def _stage(root: Path, stage: Path, files: dict, inputs) -> list[tuple[str, str]]:
    """Write each changed file into `stage`; returns (staged, destination) pairs."""
    moves = []
    for rel, text in files.items():
        given = _inside(root, rel)
        dest = _file_destination(given, inputs, str(given))
        if _special(dest):
            raise OSError(errno.EINVAL, "not a regular file, so it cannot be replaced", str(given))
        data = text.encode("utf-8")
        if _holds(dest, data):
            continue
        staged = stage / f"{len(moves):05d}"
        _write_file(staged, data, _meta(dest))
        moves.append((str(staged), str(dest)))
    return moves


def _holds(dest: Path, data: bytes) -> bool:
    """Whether `dest` is a regular file with exactly `data` (then it is left alone)."""
    try:
        return dest.is_file() and dest.stat().st_size == len(data) and dest.read_bytes() == data
    except OSError:
        return False


def _removals(root: Path, stale, inputs) -> list[str]:
    """The stale files to remove: regular files really inside `root`, none an input."""
    out = []
    for rel in sorted(stale):
        path = _inside(root, rel)
        if not _within(Path(os.path.realpath(path.parent)), root):
            continue
        with suppress(FileNotFoundError, NotADirectoryError):
            if stat.S_ISREG(os.lstat(path).st_mode):
                refuse_inputs(path, inputs, str(path))
                out.append(str(path))
    return out


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _write_journal(stage: Path, root: Path, moves, removals) -> None:
    """The commit record: once it exists, the commit can always be completed."""
    doc = {"root": str(root), "moves": moves, "remove": removals}
    tmp = stage / (JOURNAL + ".tmp")
    _write_file(tmp, json.dumps(doc).encode("utf-8"), None)
    os.replace(tmp, stage / JOURNAL)
    _fsync_dir(stage)


def _apply(root: Path, moves, removals) -> None:
    """Rename staged files into place, then remove stale files (idempotent: a replay after a
    kill skips what is done)."""
    touched = set()
    for staged, dest in moves:
        if not os.path.lexists(staged):
            continue
        dest = Path(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        _move(Path(staged), dest)
        touched.add(dest.parent)
    for path in map(Path, removals):
        with suppress(FileNotFoundError):
            os.unlink(path)
        touched.add(_prune(path.parent, root))
    for folder in touched:
        _fsync_dir(folder)


def _move(staged: Path, dest: Path) -> None:
    try:
        os.replace(staged, dest)
    except OSError as e:
        if e.errno != errno.EXDEV:  # dest is a symlink into another file system
            raise
        tmp = dest.parent / _temp_name(dest.name, ".tmp")
        try:
            shutil.copy2(staged, tmp)
            os.replace(tmp, dest)
        finally:
            with suppress(FileNotFoundError):
                os.unlink(tmp)
        os.unlink(staged)


def _prune(folder: Path, root: Path) -> Path:
    """Remove folders below `root` left empty; returns the first folder kept."""
    while folder != root and _within(folder, root):
        try:
            os.rmdir(folder)
        except OSError:
            break
        folder = folder.parent
    return folder


# --- what a killed run left behind -------------------------------------------------------


def sweep(folder: Path) -> None:
    """Remove the temporaries that killed toolcommit runs left in `folder` (their pid is
    dead); a folder commit with a journal is completed first, never dropped half-way."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        m = TEMP.match(name)
        path = Path(folder) / name
        if not m or _alive(int(m.group(1))) or not _owned(path):
            continue
        if path.is_dir() and not path.is_symlink():
            if _roll_forward(path):
                shutil.rmtree(path, ignore_errors=True)
        else:
            with suppress(FileNotFoundError):
                os.unlink(path)


def _alive(pid: int) -> bool:
    """Whether `pid` runs (another process of that pid may own the temporary: keep it).

    This process's own pid counts as dead: a sweep runs before this process creates any
    temporary, so one carrying its pid was left by an earlier process that had the same pid.
    """
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _owned(path: Path) -> bool:
    """Whether this user owns `path`: another user's look-alike is never touched."""
    try:
        return os.lstat(path).st_uid == os.geteuid()
    except OSError:
        return False


def _roll_forward(stage: Path) -> bool:
    """Complete the commit journaled in `stage`, if any; False if it could not be done.

    Only what a journal of ours can say is done: staged files of `stage` moved into the
    folder beside it, regular files inside that folder removed. Anything else is skipped.
    """
    try:
        doc = json.loads((stage / JOURNAL).read_text("utf-8"))
        root = Path(doc["root"])
        moves = [
            (a, b) for a, b in doc["moves"] if Path(a).parent == stage and _within(Path(b), root)
        ]
        removals = [r for r in doc["remove"] if _within(Path(r), root)]
    except FileNotFoundError:
        return True  # killed while staging: nothing was committed
    except (OSError, ValueError, KeyError, TypeError):
        return True  # not a journal of ours
    if root.parent != stage.parent:
        return True
    try:
        _apply(root, moves, _removals(root, [os.path.relpath(r, root) for r in removals], ()))
    except OSError:
        return False
    return True


# --- stdout ------------------------------------------------------------------------------


class _Guarded:
    """A text stream whose write errors are `OutputError`s about `<stdout>`, and that writes
    every text `visible`."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        with _errors(STDOUT):
            return self._stream.write(visible(text))

    def flush(self):
        with _errors(STDOUT):
            return self._stream.flush()

    def __getattr__(self, name):
        return getattr(self._stream, name)


@contextmanager
def guarded_stdout():
    """Within: any OSError writing `sys.stdout` (ENOSPC on /dev/full, EPIPE, EIO) raises
    `OutputError`; stdout is flushed before leaving, so a late error is caught here too.

    After such an error the real stdout is pointed at /dev/null, so Python's own flush at
    exit cannot print a second error.
    """
    real = sys.stdout
    sys.stdout = _Guarded(real)
    try:
        yield
        sys.stdout.flush()
    except OutputError as e:
        if e.path == STDOUT:
            _silence(real)
        raise
    finally:
        sys.stdout = real


def _silence(stream) -> None:
    if stream is not sys.__stdout__:
        return
    with suppress(OSError, ValueError, AttributeError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, stream.fileno())
        os.close(null)
