"""Many seeded runs and their report: the denominator printed with the verdict.

`torture` runs seeds ``seed .. seed + runs - 1`` (each `run_once` of `random_plan(seed)`),
optionally in `jobs` forked processes, and by default stops at the first run that is not
clean. `render` prints what was run and injected (runs, crashes, pauses, cancels, drops,
delays, duplicated requests, intents, effects) beside the verdicts.

It first removes the run folders that killed campaigns left (`harness.sweep`). A job
process dies with the campaign (`toolcommit.checker.logs.children`) and ignores SIGINT: the
campaign stops its jobs (SIGTERM, then SIGKILL after `GRACE` seconds), reaps them and
removes what they left, whatever stopped it.
"""

from __future__ import annotations

import json
import os
import selectors
import shlex
import signal
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Callable, Optional

from toolcommit.checker.logs.children import fork, held_signals
from toolcommit.checker.torture.harness import RunResult, run_once, sweep
from toolcommit.checker.torture.plan import Plan, Timing, random_plan
from toolcommit.checker.torture.profiles import DESIGN_FILES, PROFILES, PROVIDER_PATHS, design
from toolcommit.model.knobs import preset

VERDICTS = ("CONFORMS", "VIOLATES", "INCONCLUSIVE", "STUCK", "ERROR")
GRACE = 10.0  # seconds a job process has to clean up after SIGTERM before SIGKILL


@dataclass
class Campaign:
    """What was asked (`options`), each run's result, the wall time, and whether it stopped
    at a failing run before the end."""

    options: dict
    results: list = field(default_factory=list)
    elapsed: float = 0.0
    stopped: bool = False

    def total(self, name: str) -> int:
        return sum(r.counts.get(name, 0) for r in self.results)

    def verdicts(self) -> dict:
        out = {v: 0 for v in VERDICTS}
        for r in self.results:
            out[r.verdict] += 1
        return out

    @property
    def first_failure(self) -> Optional[tuple[int, RunResult]]:
        for i, r in enumerate(sorted(self.results, key=lambda r: r.seed), start=1):
            if not r.clean:
                return i, r
        return None

    @property
    def exit_code(self) -> int:
        """0 every run clean, 1 some run violates, 3 otherwise (inconclusive, stuck, error)."""
        v = self.verdicts()
        if v["VIOLATES"]:
            return 1
        return 0 if v["CONFORMS"] == len(self.results) and self.results else 3


RUNTIMES = {
    "library": "the intent log, following the design proved for the provider "
    "(spec/designs/<env>.json) on --env profiles; on the harness's own "
    "profiles, the recommended design",
    "park": "the intent log as it shipped before it followed a provider's design: "
    "an unknown outcome sealed and read once, an absent read parks the "
    "record (DEAD_LETTER) and the model hears it given up",
    "chat": "trust the model's call id, retry blindly, no idempotency key",
    "ts": "the TypeScript library (ts/) in Node workers, following the design proved "
    "for the provider (spec/designs/<env>.json); --env profiles with a design only",
}
_PRESET_OF = {"park": "recommended", "chat": "naive"}


def sdk_retries(runtime: str, profile: str) -> bool:
    """Whether the runtime's client re-sends a request whose answer it missed (the knob
    ``sdk_retries`` of its design): only then may the network deliver a request twice."""
    env = PROFILES[profile].env
    if runtime in ("library", "ts") and env:
        return design(env)["sdk_retries"] == "on"
    return preset(_PRESET_OF.get(runtime, "recommended")).knobs["sdk_retries"] == "on"


def plan_for(seed: int, o: dict) -> Plan:
    """The schedule of seed `seed` under the campaign's options `o`: the provider's faults
    of its profile, its timing within the profile's delay bound, and no duplicated request
    for a client that does not retry (on a profile of spec/environments.json)."""
    prof = PROFILES[o["profile"]]
    plan = random_plan(
        seed, o["workers"], o.get("timing") or Timing().within(prof.delay_bound), prof.faults
    )
    if prof.env and not sdk_retries(o["runtime"], o["profile"]):
        plan = replace(plan, rates=plan.rates[:2] + (0.0,))
    return plan


def _one(seed: int, o: dict) -> RunResult:
    return run_once(plan_for(seed, o), o["runtime"], o["profile"], o["store"], o["dsn"], o["keep"])


def torture(
    runs: int,
    seed: int = 1,
    runtime: str = "library",
    profile: str = "fenced",
    store: str = "sqlite",
    dsn: str = "",
    workers: int = 2,
    jobs: int = 1,
    keep: Optional[str] = None,
    keep_going: bool = False,
    progress: Optional[Callable[[RunResult], None]] = None,
    timing: Optional[Timing] = None,
) -> Campaign:
    """Run the seeds and collect a `Campaign` (see the module docstring)."""
    o = {
        "runtime": runtime,
        "profile": profile,
        "store": store,
        "dsn": dsn,
        "workers": workers,
        "keep": keep,
        "seed": seed,
        "runs": runs,
        "jobs": jobs,
        "timing": timing,
    }
    c = Campaign({k: v for k, v in o.items() if k != "timing"})
    sweep()  # what campaigns killed before left behind
    start = time.monotonic()
    seeds = list(range(seed, seed + runs))
    if jobs <= 1:
        for s in seeds:
            r = _one(s, o)
            c.results.append(r)
            if progress:
                progress(r)
            if not r.clean and not keep_going:
                c.stopped = s != seeds[-1]
                break
    else:
        c.stopped = _parallel(seeds, o, jobs, c, progress, keep_going)
    c.elapsed = time.monotonic() - start
    return c


def _parallel(seeds, o, jobs, c: Campaign, progress, keep_going) -> bool:
    """Seeds over `jobs` forked processes (job j takes every jobs-th seed); results come
    back as JSON lines. Returns True if it stopped early at a failing run."""
    procs: dict = {}
    sel = selectors.DefaultSelector()
    stopped = False
    try:
        for j in range(jobs):
            r, w = os.pipe()
            with held_signals():  # a job is on record before a stop can land
                pid = fork()  # the job ignores Ctrl-C: the campaign stops it
                if pid == 0:
                    _job(seeds[j::jobs], o, r, w, list(procs.values()))
                os.close(w)
                procs[pid] = r
                sel.register(r, selectors.EVENT_READ, [b""])
        open_fds = set(procs.values())
        while open_fds and not stopped:
            for key, _ in sel.select():
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fd)
                    open_fds.discard(key.fd)
                    continue
                key.data[0] += chunk
                while b"\n" in key.data[0]:
                    line, key.data[0] = key.data[0].split(b"\n", 1)
                    d = json.loads(line)
                    res = RunResult(**{**d, "properties": tuple(d["properties"])})
                    c.results.append(res)
                    if progress:
                        progress(res)
                    if not res.clean and not keep_going:
                        stopped = len(c.results) < len(seeds)
    finally:
        with held_signals():
            _end_jobs(procs)
        sel.close()
    c.results.sort(key=lambda r: r.seed)
    return stopped


def _job(seeds, o: dict, r: int, w: int, others: list) -> None:
    """A job process: run `seeds`, one JSON line per result on `w`; never returns. SIGTERM
    unwinds the run in progress (its cleanup runs) and ends the job."""
    code = 0
    try:
        os.close(r)
        for fd in others:  # the other jobs' pipes are the campaign's
            os.close(fd)
        signal.signal(signal.SIGTERM, _stop_job)
        for s in seeds:
            res = _one(s, o)
            os.write(w, (json.dumps(asdict(res)) + "\n").encode())
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def _stop_job(signum, frame) -> None:
    raise SystemExit(128 + signum)


def _end_jobs(procs: dict) -> None:
    """SIGTERM every job, give them `GRACE` seconds to clean up, SIGKILL the rest, reap
    them all and remove the run folders any of them left."""
    for pid in procs:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + GRACE
    for pid, fd in procs.items():
        while os.waitpid(pid, os.WNOHANG) == (0, 0):
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                break
            time.sleep(0.05)
        os.close(fd)
        sweep(owner=pid)


def _rerun(o: dict, seed: int) -> str:
    """The command that replays one run of the campaign `o`, quoted for a POSIX shell
    (`shlex.join`); a PostgreSQL DSN is left for the user to give (``--dsn ...``)."""
    args = ["toolcommit", "torture", "--runtime", o["runtime"]]
    if o.get("itf"):
        args += ["--itf", o["itf"]]
    else:
        args += ["--seed", str(seed), "--runs", "1"]
        if o["workers"] != 2:
            args += ["--workers", str(o["workers"])]
    if o["profile"] != "fenced" or o.get("itf"):
        args += ["--env", PROVIDER_PATHS.get(o["profile"], o["profile"])]
    if o["profile"] in DESIGN_FILES:
        args += ["--design", DESIGN_FILES[o["profile"]]]
    if o["store"] != "sqlite":
        args += ["--store", o["store"]]
    return shlex.join(args) + (" --dsn ..." if o["store"] != "sqlite" else "")


def render(c: Campaign) -> str:
    """The campaign's report as text (see the module docstring)."""
    o, v, t = c.options, c.verdicts(), c.total
    n = len(c.results)
    last = o["seed"] + o["runs"] - 1
    what = f"schedule of {o['itf']}" if o.get("itf") else f"seeds {o['seed']}..{last}"
    lines = [
        f"toolcommit torture: runtime {o['runtime']}, store {o['store']}, "
        f"profile {o['profile']}, workers {o['workers']}, {what}",
        *([f"  trace:   found on {o['found_on']}"] if o.get("found_on") else []),
        f"  runs:    {n} of {o['runs']}: "
        + ", ".join(f"{v[k]} {k}" for k in VERDICTS if v[k] or k in VERDICTS[:3]),
        f"  faults:  {t('crashes')} crashes (SIGKILL), {t('pauses')} zombie pauses "
        f"(leases expired), {t('cancels')} cancels, {t('drops')} dropped acks, "
        f"{t('delays')} delayed requests, {t('dups')} duplicated requests",
        *(
            [
                f"  provider: {t('slow')} slow executions (past the timeout), "
                f"{t('errors_before')} refused before executing (429), {t('errors_after')} "
                f"executed with a saved 500, {t('in_flight')} refused in flight (409), "
                f"{t('late')} held past the delay bound ({t('expired')} refused, "
                f"{t('beyond_bound')} never delivered), {t('stale')} stale searches, "
                f"{t('pruned')} keys pruned, {t('mismatched')} parameter mismatches"
            ]
            if PROFILES[o["profile"]].env
            else []
        ),
        f"  work:    {t('intents')} intents from {t('proposals')} proposals, "
        f"{t('requests')} requests, {t('effects')} effects applied ({t('fenced_out')} "
        f"fenced out, {t('replayed')} replayed by key), {t('lines')} log lines",
        f"  time:    {c.elapsed:.1f} s ({c.elapsed / max(n, 1):.2f} s per run)",
    ]
    first = c.first_failure
    if first is None:
        lines.append(
            "clean: every run's log CONFORMS (toolcommit validate, with the "
            "provider's ledger as effect lines)"
            if n
            else "no run"
        )
        return "\n".join(lines) + "\n"
    found: dict[str, int] = {}
    for x in c.results:
        for prop in x.properties:
            found[prop] = found.get(prop, 0) + 1
    if found:
        lines.append(
            "  found:   "
            + ", ".join(f"{p} in {k} runs" for p, k in sorted(found.items(), key=lambda kv: -kv[1]))
        )
    i, r = first
    lines.append(
        f"caught: {r.verdict}"
        if o.get("itf")
        else f"caught at run {i} (seed {r.seed}): {r.verdict}"
    )
    if r.properties:
        lines.append(f"  properties: {', '.join(r.properties)}")
    if r.error:
        lines.append(f"  error: {r.error}")
    others = [x for x in sorted(c.results, key=lambda x: x.seed) if not x.clean and x is not r]
    if others:
        lines.append(
            "  also not clean: "
            + ", ".join(f"seed {x.seed} ({x.verdict})" for x in others[:10])
            + (f" and {len(others) - 10} more" if len(others) > 10 else "")
        )
    lines.append(f"  log: {r.log}" if r.log else "  log: rerun with --keep DIR to keep it")
    lines.append(f"  rerun: {_rerun(o, r.seed)}")
    if c.stopped:
        lines.append("stopped at the first run that is not clean (--keep-going runs them all)")
    return "\n".join(lines) + "\n"
