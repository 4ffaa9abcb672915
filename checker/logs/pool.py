"""The sharded checker on this machine's cores: one forked process per shard, each serving
`toolcommit.checker.logs.shards.Shard` calls over a pipe, the fixup shard in the calling
process. The report is the single process's (`toolcommit.checker.logs.merge`).

This process runs the line index (`toolcommit.checker.logs.index`) while the shards read,
so they decode only their own lines. Sharding pays only on large logs (each shard still
reads every line's bytes): `validate` uses it for regular files of at least
`SHARD_MIN_BYTES` in total when it may use more than one core (``--jobs``; environment
``TOOLCOMMIT_SHARD_MIN_BYTES`` moves the threshold).

A shard holds only its own end of its own pipe (it closes the parent's ends it inherited
at the fork) and is killed by the kernel when the calling process dies
(`toolcommit.checker.logs.children`), so no shard outlives a stopped run. A shard that
runs out of memory, or is killed, ends the run with exit 5, not as a bug.
"""

from __future__ import annotations

import multiprocessing
import os
import stat
import traceback
from typing import Sequence

from toolcommit.checker.logs import index, lane
from toolcommit.checker.logs.children import child_start, held_signals
from toolcommit.checker.logs.merge import merge
from toolcommit.checker.logs.report import Report
from toolcommit.checker.logs.shards import IndexGaveUp, Part, Shard, changed, coordinate
from toolcommit.checker.machine import cores  # noqa: F401 - validate's default --jobs
from toolcommit.model.errors import InternalError, ResourceError, ToolcommitError, UsageError

DEFAULT_SHARD_MIN_BYTES = 32 << 20
MAX_JOBS = 1024  # shards of one run, on this machine or a cluster


def _min_bytes(text: str):
    """TOOLCOMMIT_SHARD_MIN_BYTES as a whole number of bytes, or None if it is not one."""
    try:
        n = int(text)
    except ValueError:
        return None
    return n if n >= 0 else None


SHARD_MIN_BYTES = _min_bytes(
    os.environ.get("TOOLCOMMIT_SHARD_MIN_BYTES", str(DEFAULT_SHARD_MIN_BYTES))
)


def worth_sharding(paths: Sequence[str], jobs: int) -> bool:
    """More than one job, every log a regular file (not stdin), `SHARD_MIN_BYTES` in all,
    and a way to fork."""
    if jobs < 2 or "-" in paths or "fork" not in multiprocessing.get_all_start_methods():
        return False
    if SHARD_MIN_BYTES is None:
        raise UsageError(
            f"TOOLCOMMIT_SHARD_MIN_BYTES="
            f"{os.environ.get('TOOLCOMMIT_SHARD_MIN_BYTES')}: give a whole number "
            f"of bytes (default {DEFAULT_SHARD_MIN_BYTES}), or unset it"
        )
    total = 0
    for p in paths:
        try:
            st = os.stat(p)
        except OSError:
            return False  # the single process words the error
        if not stat.S_ISREG(st.st_mode):
            return False
        total += st.st_size
    return total >= SHARD_MIN_BYTES


OUT_OF_MEMORY = "out of memory"


def _serve(conn, args, parent: int, inherited) -> None:
    """A shard process: answer calls ``(method, args)`` until ``None``. `inherited` are the
    parent's pipe ends this fork copied: closed, so that only the parent holds them. A pipe
    the parent closed (it was stopped: a Ctrl-C, an error in another shard) ends the shard
    quietly: no one is left to read an answer or a traceback."""
    child_start(parent)  # a Ctrl-C is the parent's to handle: it ends the shards
    for c in inherited:
        c.close()
    try:
        _answer(conn, args)
    except (BrokenPipeError, EOFError, ConnectionResetError):
        pass


def _answer(conn, args) -> None:
    try:
        shard = Shard(*args)
    except MemoryError:
        conn.send((None, OUT_OF_MEMORY))
        return
    while True:
        msg = conn.recv()
        if msg is None:
            return
        method, call_args = msg
        try:
            conn.send((True, getattr(shard, method)(*call_args)))
        except MemoryError:
            shard = None  # what it held goes, so that the answer can be sent
            conn.send((None, OUT_OF_MEMORY))
            return
        except (BrokenPipeError, EOFError, ConnectionResetError):
            raise  # the parent stopped listening: nothing to report
        except BaseException:  # noqa: BLE001 - a bug in a shard: the parent reports it
            conn.send((False, traceback.format_exc()))
            return


def check(
    paths: Sequence[str],
    max_line_bytes: int,
    focus: Sequence[str],
    jobs: int,
    complete_effects: bool = False,
    indexed: bool = True,
) -> Report:
    """Check `paths` with `jobs` shard processes; the single process's report, or its
    `InputError` / `UsageError`. With `indexed` and where it can serve (`index.usable`),
    this process runs the line index while the shards read (they decode only their own
    lines and hold no writers); when it gives up, the shards run again without it."""
    mod = lane.load()[0]  # built and loaded once, here: the forked shards inherit it
    if indexed and index.usable(paths, focus, mod):
        try:
            return _check(paths, max_line_bytes, focus, jobs, complete_effects, index.Shared(paths))
        except IndexGaveUp:
            pass
    return _check(paths, max_line_bytes, focus, jobs, complete_effects, None)


def _check(paths, max_line_bytes, focus, jobs, complete_effects, shared) -> Report:
    ctx = multiprocessing.get_context("fork")
    procs, conns = [], []
    ix = None if shared is None else index.Index(paths, max_line_bytes, shared, lane.load()[0])
    try:
        for i in range(jobs):
            here, there = ctx.Pipe()
            p = ctx.Process(
                target=_serve,
                daemon=True,
                args=(
                    there,
                    (paths, max_line_bytes, focus, i, jobs, None, False, complete_effects, shared),
                    os.getpid(),
                    [*conns, here],
                ),
            )
            with held_signals():
                p.start()
            there.close()
            procs.append(p)
            conns.append(here)

        def call(method: str, args: list, meanwhile=None) -> list:
            for conn, a in zip(conns, args):
                conn.send((method, a))
            if meanwhile is not None:
                meanwhile()
            out = []
            for i, conn in enumerate(conns):
                try:
                    ok, value = conn.recv()
                except EOFError:
                    raise _died(i, procs[i]) from None
                if ok is None:
                    raise MemoryError(f"shard {i} of {jobs} ran out of memory")
                if not ok:
                    raise InternalError(f"shard {i} of validate failed:\n{value}")
                out.append(value)
            return out

        def fixup(keys: set) -> Part:
            shard = Shard(
                paths,
                max_line_bytes,
                focus,
                0,
                jobs,
                owned=keys,
                complete_effects=complete_effects,
                shared=shared,
            )
            if shard.run()[0] is not None:  # an error no shard met: the logs changed
                raise changed()
            return shard.finish()

        parts, fix = coordinate(call, jobs, fixup, ix)
        return merge(parts, fix, focus, ix)
    finally:
        _stop(conns, procs, shared)


def _died(i: int, proc) -> ToolcommitError:
    """The error of a shard that ended without answering: killed by a signal (the kernel's
    OOM killer, most often) is the machine's limit; an exit of its own is a bug."""
    proc.join(timeout=5)
    code = proc.exitcode
    if code is not None and code < 0:
        return ResourceError(
            f"shard {i} of validate was killed by signal {-code} (the "
            "kernel's out-of-memory killer, or another process); nothing was "
            "judged: give it more memory, or run with --jobs 1"
        )
    return InternalError(f"shard {i} of validate died (exit code {code}); run with --jobs 1")


def _stop(conns, procs, shared) -> None:
    """Tell every shard to stop, end those that do not within 5 s, and free `shared`."""
    try:
        for conn in conns:
            try:
                conn.send(None)
            except OSError:
                pass
            conn.close()
    finally:
        for p in procs:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
                p.join()
        if shared is not None:
            shared.close()
