"""Compiling C on first use and loading it safely: the one home for finding the machine's C
compiler, the cache directory, building a shared library atomically, and opening a cached
one (the native engine and the log checker's native lane both use it; neither adds a
Python dependency).

A library lives in the cache directory under a name keyed by the hash of its source, the
compiler and the flags, written as a temporary file and renamed into place, so two
processes can race and a reader sees all or nothing. The C source is kept beside it, and
so is its manifest entry, ``NAME.sha256`` (``sha256sum`` format: the library's SHA-256 and
name), written at build time.

What is loaded (`verified`)
---------------------------
- The cache is ``$XDG_CACHE_HOME/toolcommit/native`` when ``XDG_CACHE_HOME`` is an absolute
  path, else ``~/.cache/toolcommit/native`` (a relative one is ignored, as the XDG spec
  says). Its folders are created with mode 0700; an existing one must be owned by this
  user and writable by no one else (one this user owns that others could only read is
  tightened to 0700); otherwise it is refused.
- A library is loaded only if it is a regular file this user owns that no one else can
  write, and its SHA-256 matches its manifest entry; the check and the load are on one open
  file (``/proc/self/fd/N``), so it cannot be swapped in between. That descriptor stays
  open while the process runs (a library is never unloaded either): the loader knows a
  library by its path, and a path ``/proc/self/fd/N`` reused for another file would give
  the first library again. Anything else is rebuilt.
- When the cache is refused, the library is built in a private temporary folder (removed
  once loaded) and `NOTES` says why; when no build works, the caller's Python path
  answers, saying why.

The directory stays bounded: each build drops the least recently used libraries beyond
`KEEP` (loading one marks it used), never one used in the last `MIN_AGE` seconds.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import stat
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional, Sequence

from toolcommit.checker.interrupts import Interrupts

KEEP = 256  # libraries kept in the cache (each with its C source beside it)
MIN_AGE = 3600.0  # seconds: a library used this recently is never dropped
_OURS = (".engine-", ".lane-", "engine-", "lane-")
MANIFEST = ".sha256"
NOTES: list[str] = []  # why a library was built outside the cache, once per reason
_HELD: list[int] = []  # descriptors of the libraries loaded: open as long as they are


def cache_dir() -> Path:
    """Where compiled libraries live: $XDG_CACHE_HOME/toolcommit/native when that is an
    absolute path, else ~/.cache/toolcommit/native."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "toolcommit" / "native"


def compiler() -> Optional[list[str]]:
    """The C compiler command: $CC when set, else the first of cc, gcc, clang on PATH."""
    cc = os.environ.get("CC", "").strip()
    if cc:
        return shlex.split(cc)
    for name in ("cc", "gcc", "clang"):
        path = shutil.which(name)
        if path:
            return [path]
    return None


# ----- the cache folder ---------------------------------------------------------------------
def private(folder: Path, levels: int = 2) -> str:
    """Make `folder` and its `levels` - 1 parents (``toolcommit/native``) private: create
    the missing ones with mode 0700 and check every one. '' if `folder` may hold what this
    process loads, else why not."""
    chain = [folder]
    for _ in range(levels - 1):
        chain.insert(0, chain[0].parent)
    try:  # the cache base ($XDG_CACHE_HOME), as XDG says
        os.makedirs(chain[0].parent, 0o700, exist_ok=True)
    except OSError as e:
        return f"cannot create the cache folder {chain[0].parent}: {e.strerror or e}"
    for d in chain:
        try:
            os.mkdir(d, 0o700)
            os.chmod(d, 0o700)  # whatever the umask took away or left
        except FileExistsError:
            pass
        except OSError as e:
            return f"cannot create the cache folder {d}: {e.strerror or e}"
        why = _own_folder(d)
        if why:
            return why
    return ""


def _own_folder(d: Path) -> str:
    try:
        st = os.lstat(d)
    except OSError as e:
        return f"cannot read the cache folder {d}: {e.strerror or e}"
    if not stat.S_ISDIR(st.st_mode):
        return f"the cache folder {d} is not a folder"
    if st.st_uid != os.geteuid():
        return f"the cache folder {d} belongs to another user (uid {st.st_uid})"
    if st.st_mode & 0o022:
        return (
            f"the cache folder {d} can be written by others (mode "
            f"{stat.S_IMODE(st.st_mode):o}); make it 0700 or remove it"
        )
    if st.st_mode & 0o077:
        try:
            os.chmod(d, 0o700)  # ours, readable by others: tightened
        except OSError as e:
            return f"cannot make the cache folder {d} private: {e.strerror or e}"
    return ""


# ----- building ----------------------------------------------------------------------------
def compile_atomic(
    folder: Path,
    target: Path,
    source: str,
    cc: list[str],
    flags: Sequence[str],
    prefix: str = ".engine-",
) -> str:
    """Compile `source` into `target` atomically, with its manifest entry; '' on success,
    else why not. `folder` must be `private` already.

    The compiler runs with ``TMPDIR`` a private folder of its own in `folder`, so its
    intermediate files (``cc*.s``, ``cc*.o``) never land in the user's ``$TMPDIR``. SIGINT
    or SIGTERM during the build stops the compiler (asked first, so it removes its own
    files; killed if it does not end), removes that folder and the half-built files, and
    then takes its usual effect: an interrupted build leaves nothing behind (a signal
    while a temporary is made or the manifest written waits until it is registered or in
    place, so no moment leaves one for `prune`'s hour)."""
    with Interrupts() as sig:
        try:
            with sig.hold():  # a signal waits until each temporary made is registered
                work = tempfile.mkdtemp(dir=folder, prefix=prefix + "build-")
                sig.temps.append(Path(work))
                fd, src = tempfile.mkstemp(dir=folder, prefix=prefix, suffix=".c")
                sig.temps.append(Path(src))
                fd_so, tmp = tempfile.mkstemp(dir=folder, prefix=prefix, suffix=".so")
                sig.temps.append(Path(tmp))
                os.close(fd_so)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(source)
        except OSError as e:
            return f"cannot write the cache directory {folder}: {e.strerror or e}"
        why = _run_compiler([*cc, *flags, "-o", tmp, src], work)
        if why:
            return why
        try:
            with sig.hold():  # its temporary is renamed before a signal takes effect
                _write_manifest(target, _sha256_path(tmp), prefix)
            os.chmod(tmp, 0o700)
        except OSError as e:
            return f"cannot write the cache directory {folder}: {e.strerror or e}"
        with sig.hold():
            os.replace(tmp, target)  # atomic: a reader sees all or nothing
            os.replace(src, target.with_suffix(".c"))  # kept beside it, for reading
    prune(folder)
    return ""


def _run_compiler(argv: list[str], work: str) -> str:
    """Run the compiler with `work` as its ``TMPDIR``; '' on success, else why not. On any
    exception (an interrupt included) the compiler is stopped before it propagates."""
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "TMPDIR": work},
        )
    except OSError as e:
        return f"C compiler {argv[0]} did not run: {e}"
    try:
        _out, err = proc.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        _stop(proc)
        return f"C compiler {argv[0]} did not run: it took longer than 600 s"
    except BaseException:
        _stop(proc)
        raise
    if proc.returncode != 0:
        first = (err.strip().splitlines() or ["no message"])[0][:200]
        return f"C compiler {argv[0]} failed (exit {proc.returncode}): {first}"
    return ""


def _stop(proc: subprocess.Popen) -> None:
    """Ask the compiler to end (it removes its temporaries on SIGTERM), kill it after 5 s."""
    try:
        proc.terminate()
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    except OSError:
        pass


def _sha256_path(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _write_manifest(target: Path, digest: str, prefix: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=prefix, suffix=MANIFEST)
    with os.fdopen(fd, "w", encoding="ascii") as f:
        f.write(f"{digest}  {target.name}\n")
    os.replace(tmp, manifest_of(target))


def manifest_of(target: Path) -> Path:
    return target.with_name(target.name + MANIFEST)


# ----- loading -----------------------------------------------------------------------------
@contextmanager
def verified(
    target: Path, source: str, cc: list[str], flags: Sequence[str], prefix: str = ".engine-"
) -> Iterator[tuple[Optional[str], str]]:
    """The cached library `target` (built from `source` when absent or not to be trusted),
    as ``(path to load, '')`` while the block runs, or ``(None, why not)``. See the module
    docstring: the path names the one open file that was checked."""
    folder = target.parent
    why = private(folder)
    temp = None
    if why:
        temp = Path(tempfile.mkdtemp(prefix="toolcommit-build-"))
        _note(f"{why}: compiled in a private temporary folder instead (slower to start)")
        target = temp / target.name
    fd = None
    try:
        fd, bad = _open_checked(target)
        if fd is None and bad not in ("absent", "no manifest entry"):  # not an older build's
            _note(f"{bad}: built again")
        if fd is None:
            why = compile_atomic(target.parent, target, source, cc, flags, prefix)
            if why:
                yield None, why
                return
            fd, bad = _open_checked(target)
            if fd is None:
                yield None, f"the library just built does not check: {bad}"
                return
        touch(target)
        if not os.path.isdir("/proc/self/fd"):  # pragma: no cover - not Linux
            yield str(target), ""
            return
        _HELD.append(fd)  # kept open: no later library can get its name
        yield f"/proc/self/fd/{fd}", ""
    finally:
        if fd is not None and fd not in _HELD:
            os.close(fd)
        if temp is not None:  # a loaded library stays mapped without its file
            shutil.rmtree(temp, ignore_errors=True)


def _note(text: str) -> None:
    if text not in NOTES:
        NOTES.append(text)


def _open_checked(target: Path) -> tuple[Optional[int], str]:
    """An open descriptor of `target` if it may be loaded, else (None, why not)."""
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None, "absent"
    except OSError as e:
        return None, f"cannot open {target}: {e.strerror or e}"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
            raise ValueError(f"{target} is not a file of this user that only it can write")
        h = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            h.update(chunk)
        entry = _manifest_entry(target)
        if not entry:
            raise ValueError("no manifest entry")
        if entry != f"{h.hexdigest()}  {target.name}":
            raise ValueError(f"{target} does not match its manifest entry")
    except (OSError, ValueError) as e:
        os.close(fd)
        return None, str(e)
    return fd, ""


def _manifest_entry(target: Path) -> str:
    try:
        fd = os.open(manifest_of(target), os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if st.st_uid != os.geteuid() or st.st_mode & 0o022 or not stat.S_ISREG(st.st_mode):
            return ""
        return f.read(4096).decode("ascii", "replace").strip()


def touch(target: Path) -> None:
    """Mark a cached library used (`prune` drops the least recently used first)."""
    try:
        os.utime(target)
    except OSError:
        pass


def prune(folder: Path, keep: int = KEEP, min_age: float = MIN_AGE) -> int:
    """Drop the least recently used libraries of `folder` beyond `keep`, with their C
    sources and manifest entries, and temporary files of builds that died; never anything
    used in the last `min_age` seconds, nor a file this module did not name. Returns how
    many files went."""
    now = time.time()
    try:
        entries = [
            (e.stat().st_mtime, e)
            for e in os.scandir(folder)
            if e.is_file() and e.name.startswith(_OURS)
        ]
    except OSError:
        return 0
    libs = sorted(
        (
            (t, e)
            for t, e in entries
            if not e.name.startswith(".") and not e.name.endswith((".c", MANIFEST))
        ),
        key=lambda x: x[0],
        reverse=True,
    )
    old = [e.path for t, e in libs[keep:] if now - t > min_age]
    doomed = old + [p[: -len(Path(p).suffix)] + ".c" for p in old] + [p + MANIFEST for p in old]
    doomed += [e.path for t, e in entries if e.name.startswith(".") and now - t > min_age]
    gone = _prune_build_folders(folder, now - min_age)
    for path in doomed:
        try:
            os.unlink(path)
            gone += 1
        except OSError:
            pass
    return gone


def _prune_build_folders(folder: Path, before: float) -> int:
    """Remove the compilers' private ``TMPDIR`` folders of builds that died (SIGKILL)
    before time `before`; how many went."""
    gone = 0
    try:
        stale = [
            e.path
            for e in os.scandir(folder)
            if e.is_dir(follow_symlinks=False)
            and e.name.startswith(tuple(p + "build-" for p in _OURS if p[0] == "."))
            and e.stat(follow_symlinks=False).st_mtime < before
        ]
    except OSError:
        return 0
    for path in stale:
        shutil.rmtree(path, ignore_errors=True)
        gone += 1
    return gone
