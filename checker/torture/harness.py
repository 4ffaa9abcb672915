"""The supervisor: one run of a plan with real processes, real kills, a real network.

`run_once` forks the provider process (provider and proxy on 127.0.0.1) and one process per
worker, all in one new process group; answers the workers' hook points, striking the
plan's faults there (SIGKILL, a zombie pause with its leases expired, a user's cancel);
restarts killed workers (same writer name, next incarnation); and at the end flushes the
delayed requests, reads the provider's ledger and validates the run's exported log plus
the ledger (as ``effect`` lines) with the code of ``toolcommit validate``. The process
group is killed in ``finally``: nothing outlives a run, and every process also stops on
its own when the supervisor's pipes close, and is killed by the kernel when the
supervisor dies (`toolcommit.checker.logs.children`).

A run's temporary folder is ``toolcommit-torture-<supervisor pid>-<seed>-*`` in the
temporary directory. It goes in ``finally`` (SIGINT and SIGTERM wait for that cleanup:
the caller turns them into exceptions, `toolcommit.checker.interrupts`); a SIGKILL leaves
it, and `sweep` removes the folders of supervisors that are no longer alive (`torture`
runs it first).
"""

from __future__ import annotations

import json
import os
import re
import selectors
import shutil
import signal
import tempfile
import time
import traceback
import urllib.request
from dataclasses import dataclass, field
from typing import Optional

from toolcommit.checker.logs.children import fork, held_signals
from toolcommit.checker.logs.validate import validate
from toolcommit.checker.torture import provider as P
from toolcommit.checker.torture import tsworker
from toolcommit.checker.torture.plan import Plan
from toolcommit.checker.torture.worker import LIBRARY_DESIGN, env_design, worker_main
from toolcommit.runtime import IntentLog
from toolcommit.runtime import lines as L
from toolcommit.runtime.log import expire_leases, read_lines
from toolcommit.runtime.store import PostgresStore, SqliteStore

# what the provider counts of its own rules and faults (`provider.Provider.counts`)
PROVIDER_COUNTS = (
    "slow",
    "errors_before",
    "errors_after",
    "in_flight",
    "mismatched",
    "pruned",
    "expired",
    "beyond_bound",
    "stale",
)


@dataclass
class RunResult:
    """One run: its verdict (CONFORMS / VIOLATES / INCONCLUSIVE, or STUCK / ERROR), the
    properties found, what was injected and done, and where its log was kept."""

    seed: int
    verdict: str
    properties: tuple = ()
    counts: dict = field(default_factory=dict)
    elapsed: float = 0.0
    log: Optional[str] = None
    error: str = ""

    @property
    def clean(self) -> bool:
        return self.verdict == "CONFORMS"


def _close_fds(keep: set) -> None:
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


TEMP_PREFIX = "toolcommit-torture-"
_TEMP = re.compile(r"^toolcommit-torture-(\d+)-\d+-")


def sweep(owner: Optional[int] = None) -> int:
    """Remove the run folders (`TEMP_PREFIX`) this user's dead supervisors left (SIGKILL),
    or with `owner`, those of that one (reaped) process. Returns how many went."""
    base, gone = tempfile.gettempdir(), 0
    try:
        entries = list(os.scandir(base))
    except OSError:
        return 0
    for e in entries:
        m = _TEMP.match(e.name)
        if not m or not e.is_dir(follow_symlinks=False):
            continue
        pid = int(m.group(1))
        try:
            if e.stat(follow_symlinks=False).st_uid != os.getuid():
                continue
        except OSError:
            continue
        if owner is None and _alive(pid) or owner is not None and pid != owner:
            continue
        shutil.rmtree(e.path, ignore_errors=True)
        gone += 1
    return gone


def _alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie no one reaped does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _fork(pgid: int, keep: set, body) -> int:
    """Fork a child in process group `pgid` (0: a new group led by the child) that dies with
    this process, closes every other descriptor, runs ``body()`` and exits with its return
    code."""
    pid = fork()
    if pid == 0:
        code = 70
        try:
            os.setpgid(0, pgid)
        except PermissionError:  # the group's leader is gone: the run is being stopped
            os._exit(code)
        try:
            _close_fds(keep)
            code = body() or 0
        except BaseException:
            try:
                os.write(2, traceback.format_exc().encode())
            except OSError:
                pass
        finally:
            os._exit(code)
    try:
        os.setpgid(pid, pgid or pid)
    except OSError:
        pass
    return pid


class _Worker:
    """The supervisor's view of one worker: its process, pipes and incarnation."""

    def __init__(self, name: str):
        self.name, self.inc, self.pid = name, 0, 0
        self.rd = self.wr = -1
        self.buf = b""
        self.done = False
        self.killed = False
        self.restart_at = 0.0
        self.resume_at = 0.0  # a paused worker gets its go-ahead then


class Run:
    """One run of `plan` under `conf` (see `run_once`)."""

    def __init__(self, plan: Plan, conf: dict):
        self.plan, self.conf = plan, dict(conf)
        self.counts = {"crashes": 0, "pauses": 0, "cancels": 0, "restarts": 0}
        self.hits: dict[tuple, int] = {}
        self.workers = {n: _Worker(n) for n in plan.workers}
        self.sel = selectors.DefaultSelector()
        self.pgid = 0

    # ----- processes -------------------------------------------------------------------------
    def start_provider(self) -> None:
        r_ready, w_ready = os.pipe()
        self.r_ctl, w_ctl = os.pipe()
        profile = P.PROFILES[self.conf["profile"]]
        plan, timing = self.plan, self.plan.timing
        pid = _fork(
            0, {w_ready, self.r_ctl}, lambda: P.serve(profile, plan, timing, w_ready, self.r_ctl)
        )
        self.pgid, self.provider_pid, self.w_ctl = pid, pid, w_ctl
        os.close(w_ready)
        os.close(self.r_ctl)
        sel = selectors.DefaultSelector()
        sel.register(r_ready, selectors.EVENT_READ)
        if not sel.select(10.0):
            raise RuntimeError("the provider did not start within 10 s")
        sel.close()
        ports = os.read(r_ready, 64).decode().split()
        os.close(r_ready)
        self.provider_port, self.conf["proxy_port"] = int(ports[0]), int(ports[1])

    def spawn(self, w: _Worker) -> None:
        w.inc += 1
        to_r, to_w = os.pipe()  # worker -> supervisor
        from_r, from_w = os.pipe()  # supervisor -> worker
        conf, plan, name, inc = self.conf, self.plan, w.name, w.inc
        err = os.open(
            os.path.join(conf["dir"], f"{name}.{inc}.err"),
            os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
            0o644,
        )

        def body():
            os.dup2(err, 2)
            if conf["runtime"] == "ts":  # a Node process: the TypeScript library
                tsworker.exec_worker(conf, plan, name, inc, to_w, from_r)
            return worker_main(conf, plan, name, inc, to_w, from_r)

        w.pid = _fork(self.pgid, {to_w, from_r, err}, body)
        os.close(to_w)
        os.close(from_r)
        os.close(err)
        w.rd, w.wr, w.buf, w.killed, w.resume_at = to_r, from_w, b"", False, 0.0
        self.sel.register(to_r, selectors.EVENT_READ, w)

    def _drop_pipes(self, w: _Worker) -> None:
        if w.rd >= 0:
            self.sel.unregister(w.rd)
            os.close(w.rd)
            os.close(w.wr)
        w.rd = w.wr = -1

    # ----- faults ----------------------------------------------------------------------------
    def on_hook(self, w: _Worker, point: str, key: str) -> None:
        n = self.hits[(w.name, point)] = self.hits.get((w.name, point), 0) + 1
        fault = self.plan.fault_at(w.name, point, n)
        if fault == "kill":
            os.kill(w.pid, signal.SIGKILL)
            self.counts["crashes"] += 1
            w.killed = True
            return
        if fault == "pause":
            self.counts["pauses"] += 1
            if self.conf["runtime"] != "chat":
                with _store(self.conf) as store:
                    expire_leases(store, w.name)
            w.resume_at = time.monotonic() + self.plan.timing.pause
            return
        if fault == "cancel":
            self.counts["cancels"] += 1
            self._cancel(key)
        os.write(w.wr, b"c")

    def _cancel(self, key: str) -> None:
        if self.conf["runtime"] != "chat":
            # opened and closed here: an SQLite connection must never live across a fork
            log = _open_log(self.conf, "user")
            try:
                log.cancel(key)
            finally:
                log.close()
            return
        path = os.path.join(self.conf["dir"], "chat-user.jsonl")
        self.user_seq = getattr(self, "user_seq", 0) + 1
        with open(path, "a", encoding="utf-8") as f:
            f.write(
                L.dumps(
                    L.stamp(
                        L.transition(key, "RECORDED", "REJECTED_CONFLICT", reason="cancelled"),
                        "user",
                        self.user_seq,
                        L.now_rfc3339(),
                    )
                )
                + "\n"
            )

    # ----- the loop --------------------------------------------------------------------------
    def supervise(self) -> bool:
        """Run until every worker finished; False if the deadline passed first."""
        t = self.plan.timing
        deadline = time.monotonic() + t.deadline
        for w in self.workers.values():
            self.spawn(w)
        while not all(w.done for w in self.workers.values()):
            now = time.monotonic()
            if now > deadline:
                return False
            for key, _ in self.sel.select(t.poll):
                w = key.data
                chunk = os.read(w.rd, 4096)
                if not chunk:
                    self._reap(w)
                    continue
                w.buf += chunk
                while b"\n" in w.buf and not w.killed and not w.resume_at:
                    line, w.buf = w.buf.split(b"\n", 1)
                    point, _, k = line.decode().partition(" ")
                    self.on_hook(w, point, k)
            for w in self.workers.values():
                if w.resume_at and time.monotonic() >= w.resume_at and w.rd >= 0:
                    w.resume_at = 0.0
                    os.write(w.wr, b"c")
                if not w.done and w.rd < 0 and w.restart_at and time.monotonic() >= w.restart_at:
                    w.restart_at = 0.0
                    self.counts["restarts"] += 1
                    self.spawn(w)
        return True

    def _reap(self, w: _Worker) -> None:
        _, status = os.waitpid(w.pid, 0)
        self._drop_pipes(w)
        if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL and w.killed:
            w.restart_at = time.monotonic() + self.plan.timing.restart
            return
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            err = open(os.path.join(self.conf["dir"], f"{w.name}.{w.inc}.err")).read()
            raise WorkerFailed(
                f"worker {w.name} (incarnation {w.inc}) exited {code}: "
                f"{err.strip().splitlines()[-1] if err.strip() else ''}"
            )
        w.done = True

    # ----- the end ---------------------------------------------------------------------------
    def ledger(self) -> dict:
        base = f"http://127.0.0.1:{self.provider_port}"
        urllib.request.urlopen(base + "/flush", timeout=30).read()
        return json.loads(urllib.request.urlopen(base + "/ledger", timeout=30).read())

    def export(self, ledger: dict, path: str) -> dict:
        """Write the run's log plus the ledger's effect lines to `path`; counts."""
        n = {"proposals": 0, "intents": 0, "lines": 0}
        with open(path, "w", encoding="utf-8") as out:
            for text in self._log_lines():
                ev = json.loads(text)
                if ev["type"] == "proposal":
                    n["proposals"] += 1
                    n["intents"] += ev["decision"] == "accepted"
                out.write(text + "\n")
                n["lines"] += 1
            ts = L.now_rfc3339()
            for i, eff in enumerate(ledger["effects"], start=1):
                out.write(L.dumps(L.stamp({"type": "effect", **eff}, "provider", i, ts)) + "\n")
        return n

    def _log_lines(self):
        if self.conf["runtime"] != "chat":
            with _store(self.conf) as store:
                yield from read_lines(store)
            return
        d = self.conf["dir"]
        for name in sorted(os.listdir(d)):
            if name.startswith("chat-") and name.endswith(".jsonl"):
                with open(os.path.join(d, name), encoding="utf-8") as f:
                    yield from (ln.rstrip("\n") for ln in f if ln.strip())

    def stop(self) -> None:
        """Kill the process group and reap every child (always, in ``finally``)."""
        if self.pgid:
            try:
                os.killpg(self.pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for w in self.workers.values():
            self._drop_pipes(w)
        try:
            os.close(self.w_ctl)
        except (OSError, AttributeError):
            pass
        pids = [p for p in [self.pgid] + [w.pid for w in self.workers.values()] if p]
        for pid in pids:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        self.sel.close()


class WorkerFailed(RuntimeError):
    """A worker died of an error of its own (not a planned kill): a harness failure."""


class _store:
    """The run's store, opened for the supervisor's own reads and admin writes."""

    def __init__(self, conf: dict):
        self.conf = conf

    def __enter__(self):
        c = self.conf
        self.s = (
            PostgresStore(c["dsn"], c["schema"])
            if c["store"] == "postgres"
            else SqliteStore(c["db"], "NORMAL")
        )
        return self.s

    def __exit__(self, *exc):
        self.s.close()


def _open_log(conf: dict, writer: str) -> IntentLog:
    """The log as the run's workers open it (the same design: `worker.open_runtime`)."""
    env = conf["runtime"] in ("library", "ts") and P.PROFILES[conf["profile"]].env
    design = env_design(env) if env else LIBRARY_DESIGN
    if conf["store"] == "postgres":
        return IntentLog.postgres(
            conf["dsn"], writer, schema=conf["schema"], lease=conf["lease"], provider=design
        )
    return IntentLog.sqlite(
        conf["db"], writer, synchronous="NORMAL", lease=conf["lease"], provider=design
    )


def run_once(
    plan: Plan,
    runtime: str = "library",
    profile: str = "fenced",
    store: str = "sqlite",
    dsn: str = "",
    keep: Optional[str] = None,
    lease: float = 10.0,
) -> RunResult:
    """Run `plan` once with real processes and return its `RunResult` (the run's log is
    kept in `keep` when it is not clean). Never leaves a process or a temporary file."""
    start = time.monotonic()
    schema = f"tc_run_{os.getpid()}_{plan.seed}"
    result = RunResult(plan.seed, "ERROR")
    run = tmp = None
    try:
        with held_signals():  # the folder is on record (tmp) before a stop can land
            tmp = tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-{plan.seed}-")
        conf = {
            "runtime": runtime,
            "profile": profile,
            "store": store,
            "dsn": dsn,
            "schema": schema,
            "dir": tmp,
            "db": os.path.join(tmp, "intents.db"),
            "lease": lease,
        }
        run = Run(plan, conf)
        with _store(conf):  # the schema, once, before any worker (then closed:
            pass  # no SQLite connection may live across a fork)
        run.start_provider()
        finished = run.supervise()
        if not finished:
            result.verdict, result.error = "STUCK", f"not settled within {plan.timing.deadline} s"
        ledger = run.ledger()
        path = os.path.join(tmp, "run.jsonl")
        counts = run.export(ledger, path)
        report = validate([path], complete_effects=True)
        if finished:
            result.verdict = report.verdict.value
        result.properties = tuple(sorted({f.property for f in report.findings}))
        net = ledger["network"]
        result.counts = {
            **run.counts,
            "drops": net["drop"],
            "delays": net["delay"],
            "dups": net["dup"],
            "requests": net["requests"],
            "effects": len(ledger["effects"]),
            "fenced_out": ledger["provider"]["fenced_out"],
            "replayed": ledger["provider"]["replayed"],
            "late": net.get("late", 0),
            **{k: ledger["provider"].get(k, 0) for k in PROVIDER_COUNTS},
            **counts,
        }
        if keep and not result.clean:
            os.makedirs(keep, exist_ok=True)
            result.log = os.path.join(keep, f"{runtime}-seed{plan.seed}.jsonl")
            shutil.copyfile(path, result.log)
    except WorkerFailed as e:
        result.error = str(e)
    finally:
        with held_signals():  # an interrupt waits until nothing is left
            if run is not None:
                run.stop()
            if store == "postgres" and run is not None:
                _drop_schema(dsn, schema)
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)
    result.elapsed = time.monotonic() - start
    return result


def _drop_schema(dsn: str, schema: str) -> None:
    from toolcommit.runtime.store.postgres import drop_schema

    try:
        drop_schema(dsn, schema)
    except Exception:  # a cleanup: the run's verdict stands either way
        pass
