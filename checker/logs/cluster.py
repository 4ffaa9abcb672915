"""The sharded checker on a Dask cluster (`validate --engine dask`): logs beyond one machine.

Each shard of `toolcommit.checker.logs.shards` runs as a Dask actor (a stateful object
on a worker; shard i on worker i mod the cluster's workers), keys routed by CRC-32 so that
every worker process agrees, and the same protocol (`shards.coordinate`) and merge
(`toolcommit.checker.logs.merge`) make the single process's report. The fixup shard, when
one is needed, is one more actor. Every worker must be able to open the logs by the paths
given (the same mount on every machine), and have toolcommit installed.

Without a scheduler address a `LocalCluster` on the loopback interface is started for the
run (one single-threaded worker process per shard) and closed after it. A Dask comm runs
whatever pickled task it is sent, so that cluster speaks TLS with a throwaway certificate
authority (`Security.temporary`, made in memory for the run): a process without its
certificates, another local user's included, cannot connect. Its HTTP servers (which Dask
starts even without a dashboard) listen on loopback ports of their own and serve only
``/health``. Needs the ``distributed`` extra: ``pip install 'toolcommit[distributed]'``.

Every wait has an end: connecting to a scheduler, its handshake included, gives up after
`CONNECT_S` (something else listening on that port never answers Dask's handshake); while
the shards run, the workers that hold them are looked at every `POLL_S`, and a worker
that left the cluster (killed, lost) ends the run with a `ResourceError` (exit 5) instead
of a wait for an answer that cannot come.
"""

from __future__ import annotations

import asyncio
import threading
from contextlib import contextmanager
from typing import Iterator, Optional, Sequence

from toolcommit.checker.logs.merge import merge
from toolcommit.checker.logs.report import Report
from toolcommit.checker.logs.shards import Part, Shard, changed, coordinate
from toolcommit.model.errors import InternalError, ResourceError, UsageError

EXTRA = "pip install 'toolcommit[distributed]'"
# the only HTTP route the local cluster's scheduler and workers serve
_HEALTH_ONLY = {
    "distributed.scheduler.http.routes": ["distributed.http.health"],
    "distributed.worker.http.routes": ["distributed.http.health"],
}
CONNECT_S = 20.0  # seconds to connect to a scheduler, handshake included
POLL_S = 1.0  # seconds between looks at the workers that hold the shards


def _dask():
    try:
        import cryptography  # noqa: F401 - the local cluster's throwaway certificates
        from dask import distributed
    except ImportError as e:
        raise UsageError(
            f"--engine dask needs Dask's distributed scheduler and cryptography ({e.name} "
            f"is not installed); install the extra: {EXTRA}"
        ) from None
    return distributed


@contextmanager
def client(scheduler: Optional[str], workers: int) -> Iterator:
    """A client of the cluster at `scheduler`, or of a new loopback `LocalCluster` of
    `workers` single-threaded processes over TLS with throwaway certificates, serving no
    HTTP but ``/health`` (closed on exit)."""
    distributed = _dask()
    if scheduler:
        with _connect(distributed, scheduler) as c:
            yield c
        return
    import dask
    from distributed.security import Security

    security = Security.temporary()
    with (
        dask.config.set(_HEALTH_ONLY),
        distributed.LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            protocol="tls",
            security=security,
            dashboard_address="127.0.0.1:0",  # no fixed port: Dask serves HTTP regardless
            scheduler_kwargs={"dashboard": False},
            silence_logs=40,
        ) as cluster,
        distributed.Client(cluster, security=security) as c,
    ):
        yield c


@contextmanager
def _connect(distributed, scheduler: str) -> Iterator:
    """A client of the scheduler at `scheduler`, connected within `CONNECT_S` seconds or
    a `UsageError`: distributed's own timeout covers the TCP connect, not the handshake
    after it, so the connection is made on a thread that is abandoned if it hangs."""
    try:
        from distributed.comm import resolve_address

        resolve_address(scheduler)
    except Exception as e:  # noqa: BLE001 - distributed's parsers raise several kinds
        raise UsageError(
            f"--scheduler {scheduler}: not a scheduler address ({e}); give one "
            "such as tcp://10.0.0.5:8786"
        ) from None
    box: dict = {}

    def connect() -> None:  # the client must be the default one: actors find it so
        try:
            box["client"] = distributed.Client(scheduler, timeout=f"{CONNECT_S}s")
        except BaseException as e:  # noqa: BLE001 - handed to the caller below
            box["error"] = e

    t = threading.Thread(target=connect, name="toolcommit-dask-connect", daemon=True)
    t.start()
    t.join(CONNECT_S + 5)
    e = box.get("error")
    if t.is_alive() or isinstance(e, (OSError, TimeoutError, asyncio.TimeoutError)):
        why = (
            f"cannot connect ({e})"
            if e
            else (
                f"no Dask scheduler answered within "
                f"{CONNECT_S + 5:g} s (something else may "
                "listen there)"
            )
        )
        raise UsageError(
            f"--scheduler {scheduler}: {why}; start one with `dask scheduler` "
            "or leave --scheduler out"
        )
    if e is not None:
        raise e
    with box["client"] as c:
        yield c


def check(
    paths: Sequence[str],
    max_line_bytes: int,
    focus: Sequence[str],
    shards: int,
    scheduler: Optional[str] = None,
    dask_client=None,
    complete_effects: bool = False,
) -> Report:
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
        return c.submit(
            Shard,
            paths,
            max_line_bytes,
            focus,
            i,
            shards,
            owned,
            True,
            complete_effects,
            actor=True,
            workers=[where[i % len(where)]],
            pure=False,
        )

    holders = [where[i % len(where)] for i in range(shards)]
    every = _results(c, [actor(i) for i in range(shards)], holders)

    def call(method: str, args: list) -> list:
        return _results(c, [getattr(a, method)(*x) for a, x in zip(every, args)], holders)

    def fixup(keys: set) -> Part:
        a = _results(c, [actor(0, keys)], holders[:1])[0]
        if _results(c, [a.run()], holders[:1])[0][0] is not None:  # the logs changed
            raise changed()
        return _results(c, [a.finish()], holders[:1])[0]

    parts, fix = coordinate(call, shards, fixup)
    return merge(parts, fix, focus)


def _results(c, futures: list, holders: list) -> list:
    """The results of `futures` (shard i's on worker ``holders[i]``), in order. Every
    `POLL_S` without all of them the workers are looked at: one that left the cluster is a
    `ResourceError`; a shard's own failure is an `InternalError` (a bug)."""
    out: dict = {}
    while len(out) < len(futures):
        for i, f in enumerate(futures):
            if i in out:
                continue
            try:
                out[i] = f.result(timeout=POLL_S)
            except (TimeoutError, asyncio.TimeoutError):  # one class since Python 3.11
                continue
            except Exception as e:  # noqa: BLE001 - a bug in a shard, or a lost worker
                _lost(c, holders, i, e)
                raise InternalError(
                    f"a shard of validate failed on the Dask cluster: {type(e).__name__}: {e}"
                ) from None
        if len(out) < len(futures):
            _lost(c, holders, None, None)
    return [out[i] for i in range(len(futures))]


def _lost(c, holders: list, i, error) -> None:
    """`ResourceError` if a worker that holds a shard has left the cluster, or shard `i`'s
    worker could not be reached (a connection error: the worker is lost, the shard is not
    at fault, whether or not the scheduler has noticed yet)."""
    try:
        alive = set(c.scheduler_info()["workers"])
    except Exception as e:  # noqa: BLE001 - the scheduler itself is gone
        raise ResourceError(
            f"the Dask scheduler stopped answering ({type(e).__name__}: "
            f"{e}); nothing was judged: run again"
        ) from None
    gone = sorted({w for w in holders if w not in alive})
    if gone:
        why = f" ({type(error).__name__}: {error})" if error is not None else ""
        raise ResourceError(
            f"the Dask worker {', '.join(gone)} holding a shard left the "
            f"cluster (killed or lost){why}; nothing was judged: run again, "
            "on workers with enough memory"
        ) from None
    if isinstance(error, OSError) and i is not None:  # the scheduler has not noticed yet
        raise ResourceError(
            f"the Dask worker {holders[i]} holding a shard could not be reached "
            f"({type(error).__name__}: {error}); nothing was judged: run again, "
            "on workers with enough memory"
        ) from None
