"""The sharded checker on a Dask cluster (`validate --engine dask`): logs beyond one machine.

Each shard of `toolcommit.checker.logs.shards` runs as a Dask actor (a stateful object
on a worker; shard i on worker i mod the cluster's workers), keys routed by CRC-32 so that
every worker process agrees, and the same protocol (`shards.coordinate`) and merge
(`toolcommit.checker.logs.merge`) make the single process's report. The fixup shard, when
one is needed, is one more actor. Every worker must be able to open the logs by the paths
given (the same mount on every machine), and have toolcommit installed.

Without a scheduler address a `LocalCluster` on the loopback interface is started for the
run (one single-threaded worker process per shard) and closed after it. Needs the
``distributed`` extra: ``pip install 'toolcommit[distributed]'``.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Optional, Sequence

from toolcommit.model.errors import InternalError, UsageError

from toolcommit.checker.logs.merge import merge
from toolcommit.checker.logs.report import Report
from toolcommit.checker.logs.shards import Part, Shard, changed, coordinate

EXTRA = "pip install 'toolcommit[distributed]'"


def _dask():
    try:
        from dask import distributed
    except ImportError:
        raise UsageError("--engine dask needs Dask's distributed scheduler, which is not "
                         f"installed; install the extra: {EXTRA}") from None
    return distributed


@contextmanager
def client(scheduler: Optional[str], workers: int) -> Iterator:
    """A client of the cluster at `scheduler`, or of a new loopback `LocalCluster` of
    `workers` single-threaded processes (closed on exit)."""
    distributed = _dask()
    if scheduler:
        try:
            c = distributed.Client(scheduler, timeout="20s")
        except (OSError, TimeoutError) as e:
            raise UsageError(f"--scheduler {scheduler}: cannot connect ({e}); start one "
                             "with `dask scheduler` or leave --scheduler out") from None
        with c:
            yield c
        return
    with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None,
                                  silence_logs=40) as cluster, \
            distributed.Client(cluster) as c:
        yield c


def check(paths: Sequence[str], max_line_bytes: int, focus: Sequence[str], shards: int,
          scheduler: Optional[str] = None, dask_client=None,
          complete_effects: bool = False) -> Report:
    """Check `paths` in `shards` shards on a Dask cluster (`dask_client`'s, the one at
    `scheduler`, or a new local one); the single process's report, or its errors."""
    if dask_client is not None:
        return _check(dask_client, paths, max_line_bytes, focus, shards, complete_effects)
    with client(scheduler, shards) as c:
        return _check(c, paths, max_line_bytes, focus, shards, complete_effects)


def _check(c, paths, max_line_bytes, focus, shards, complete_effects) -> Report:
    paths, focus = list(paths), list(focus)
    where = sorted(c.scheduler_info()["workers"])
    if not where:
        raise UsageError("the Dask cluster has no workers; start some with `dask worker`")

    def actor(i: int, owned=None):
        return c.submit(Shard, paths, max_line_bytes, focus, i, shards, owned, True,
                        complete_effects, actor=True, workers=[where[i % len(where)]],
                        pure=False)

    every = [f.result() for f in [actor(i) for i in range(shards)]]

    def call(method: str, args: list) -> list:
        futures = [getattr(a, method)(*x) for a, x in zip(every, args)]
        try:
            return [f.result() for f in futures]
        except Exception as e:  # noqa: BLE001 - a bug in a shard, or a lost worker
            raise InternalError(f"a shard of validate failed on the Dask cluster: "
                                f"{type(e).__name__}: {e}") from None

    def fixup(keys: set) -> Part:
        a = actor(0, keys).result()
        if a.run().result()[0] is not None:   # an error no shard met: the logs changed
            raise changed()
        return a.finish().result()

    parts, fix = coordinate(call, shards, fixup)
    return merge(parts, fix, focus)
