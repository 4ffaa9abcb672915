"""Read and check intent logs: the one entry `toolcommit validate`, the fault harness and
library users call, whichever way the lines are checked (this process, shard processes
sharded by key, or a Dask cluster): the same `Report`."""

from __future__ import annotations

import gc
import shutil
import sys
import tempfile
from contextlib import contextmanager
from itertools import chain, islice

from toolcommit.checker.logs import asks, pool
from toolcommit.checker.logs.conformance import Conformance, EventError
from toolcommit.checker.logs.events import TYPES
from toolcommit.checker.logs.merge import focus_message
from toolcommit.checker.logs.read import (
    DEFAULT_MAX_LINE_BYTES,
    check_paths,
    decode,
    open_log,
    read_batches,
)
from toolcommit.checker.logs.report import Report, with_findings
from toolcommit.checker.logs.typed import from_dict
from toolcommit.model.errors import InputError, UsageError


def validate(
    paths,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    focus=(),
    stdin=None,
    complete_effects: bool = False,
    jobs: int = 1,
    engine: str = "local",
    scheduler=None,
    joined=None,
) -> Report:
    """Read and check `paths`; raise `InputError` on unusable input. `complete_effects`:
    the effect lines are the provider's whole ledger (see `Conformance`). With `jobs` > 1
    and logs worth it (`pool.worth_sharding`), in `jobs` processes sharded by key; with
    `engine` "dask", in `jobs` shards on a Dask cluster (`scheduler`'s, or a local one):
    the same report. `joined`: (ledger files, effect events as `calls.Placed`) to check
    after the logs, in this process (`adapters.intentlog.join`). Then, in this process,
    the requests are compared across scopes (`asks`: a second reading of the files; stdin
    is copied to a temporary file first, to be read twice)."""
    check_paths(paths, max_line_bytes)  # before stdin is read: a usage error reads nothing
    if engine == "dask" and "-" in paths:
        raise UsageError(
            "--engine dask reads files, not stdin ('-'); save the log to a "
            "file every worker can open"
        )
    kept = asks.Collector()
    with _spooled(paths, stdin) as stdin:
        report = _by_key(
            paths,
            max_line_bytes,
            focus,
            stdin,
            complete_effects,
            jobs,
            engine,
            scheduler,
            joined,
            kept,
        )
        ledgers, effects = joined or ((), ())
        return with_asks(
            report, paths, ledgers, effects, focus, complete_effects, stdin, kept.events
        )


@contextmanager
def _spooled(paths, stdin):
    """`stdin` (or the process's), copied to a temporary file when a path is "-", so it can
    be read twice; else `stdin` as given."""
    if "-" not in paths:
        yield stdin
        return
    src = stdin if stdin is not None else sys.stdin.buffer
    with tempfile.TemporaryFile(prefix="toolcommit-stdin-") as f:
        shutil.copyfileobj(src, f, 1 << 20)
        f.seek(0)
        yield f


def with_asks(
    report,
    paths,
    ledgers=(),
    effects=(),
    focus=(),
    complete_effects=False,
    stdin=None,
    kept=None,
) -> Report:
    """`report` (the per-key pass over logs `paths`, then `effects` from `ledgers`) with the
    findings of the requests compared across scopes (`asks`): from `kept`, the proposals
    and effects the per-key pass read (an `asks.Collector`'s events), else read again from
    the files (``-``: from `stdin`, a seekable copy)."""
    names = [("<stdin>" if p == "-" else p) for p in paths] + list(ledgers)
    placed = [(from_dict(p.event), p.file_index, p.line) for p in effects]

    def read(types):
        if kept is not None and set(types) <= set(asks.FIRST):
            logs = (e for e in kept if e[0].type in types)
        else:
            if stdin is not None:
                stdin.seek(0)
            logs = raw_events(paths, stdin=stdin, types=types)
        return chain(logs, (e for e in placed if e[0].type in types))

    found = asks.judge(names, read, complete_effects)
    if focus:
        found = [f for f in found if any(k in focus for k in asks.keys_of(f))]
    return with_findings(report, found)


def raw_events(paths, first_index: int = 0, stdin=None, types=None):
    """``(typed event, file index, line)`` of every event of the log files `paths` (already
    checked by the per-key pass: a line it refused is not read here); with `types`, only
    lines whose text names one of them are decoded (a superset of the events of those
    types: the caller checks ``type``)."""
    names = None if types is None else tuple(t.encode() for t in types)
    collecting = gc.isenabled()
    gc.disable()  # many small dicts, no cycles: collection would only cost time
    try:
        yield from _raw(paths, first_index, stdin, names)
    finally:
        if collecting:
            gc.enable()


def _raw(paths, first_index, stdin, names):
    a, b = (names + names)[:2] if names else (b"", b"")  # at most two needles (asks' readings)
    for fi, path in enumerate(paths, first_index):
        f, to_close = open_log(path, stdin)
        try:
            for n, line in enumerate(f, 1):
                if names is not None and a not in line and b not in line:
                    continue
                if not line.strip():
                    continue
                try:
                    ev = decode(line)
                except ValueError:
                    continue  # a cut-off last line: the per-key pass reported it
                if type(ev) is dict and ev.get("type") in TYPES:
                    yield from_dict(ev), fi, n
        finally:
            for c in to_close:
                c.close()


def _by_key(
    paths, max_line_bytes, focus, stdin, complete_effects, jobs, engine, scheduler, joined, keep
) -> Report:
    """The per-key pass of `validate` (same arguments); `keep` (an `asks.Collector`) gets
    the batches when the lines are read in this process, else is told it got none."""
    check_paths(paths, max_line_bytes)
    if not 1 <= jobs <= pool.MAX_JOBS:
        raise UsageError(f"--jobs {jobs}: use 1 to {pool.MAX_JOBS} (1 checks in this process)")
    if scheduler and engine != "dask":
        raise UsageError("--scheduler is for --engine dask")
    if engine == "dask":
        if "-" in paths:
            raise UsageError(
                "--engine dask reads files, not stdin ('-'); save the log to a "
                "file every worker can open"
            )
        from toolcommit.checker.logs import cluster

        keep.events = None
        return cluster.check(
            paths, max_line_bytes, focus, jobs, scheduler, complete_effects=complete_effects
        )
    if joined is None and pool.worth_sharding(paths, jobs):
        keep.events = None
        return pool.check(paths, max_line_bytes, focus, jobs, complete_effects)
    warnings: list[str] = []
    ledgers, effects = joined or ((), ())
    checker = Conformance(
        [("<stdin>" if p == "-" else p) for p in paths] + list(ledgers),
        focus,
        complete_effects=complete_effects,
    )
    feed_files(checker, paths, max_line_bytes, warnings, stdin, keep=keep)
    for p in effects:
        checker.feed(from_dict(p.event), p.file_index, p.line)
    _check_focus(focus, checker.keys)
    return checker.finish(warnings)


def feed_files(
    checker: Conformance,
    paths,
    max_line_bytes: int,
    warnings: list,
    stdin=None,
    first_index: int = 0,
    keep=None,
) -> None:
    """Feed the log files `paths` to `checker`, in order (file indexes from `first_index`);
    a cut-off last line is the checker's `cut_off`, warnings go to `warnings`; `keep`, if
    given, is called with each batch too (``keep(numbers, events, file index)``). Raises
    `InputError` (file:line) on an unusable line."""
    feed_batch = checker.feed_batch
    collecting = gc.isenabled()
    gc.disable()  # the core builds no reference cycles; collection would only cost time
    try:
        for fi, path in enumerate(paths, first_index):  # the hot loop is here
            try:
                for numbers, events in read_batches(
                    path,
                    max_line_bytes,
                    stdin,
                    warnings.append,
                    on_cut=lambda line, fi=fi: checker.cut_off(fi, line),
                ):
                    feed_batch(numbers, events, fi)
                    if keep is not None:
                        keep(numbers, events, fi)
            except EventError as e:
                raise InputError(str(e), path, e.line) from None
    finally:
        if collecting:
            gc.enable()


def _check_focus(focus, keys) -> None:
    """Refuse a --key the log does not name, listing some it does."""
    missing = [k for k in dict.fromkeys(focus) if k not in keys]
    if missing:
        raise UsageError(focus_message(missing, list(islice(keys, 5)), len(keys)))
