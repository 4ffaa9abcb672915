"""Benchmark `toolcommit validate` (not a test): wall clock beside a bare msgspec parse.

Generates a conforming multi-writer log (proposals, transitions, provider effects, some
ack losses reconciled, duplicate proposals, crashes; a small window of keys open at once),
then measures, each mode in a fresh subprocess so peak memory is its own:

- parse: the goal's baseline, a bare msgspec parse: read the file line by line and decode
  each line with ``msgspec.json.decode`` (untyped: dicts), nothing else;
- parse-orjson: the same with ``orjson.loads`` (the decoder before typed decoding);
- typed: the same with the typed decoder (msgspec structs of `checker/logs/typed.py`: the
  decoding and every field check of a common line);
- read: the validate reader alone (chunked reads, typed decoding, the thorough path for
  unusual lines), no conformance;
- validate-1: `validate --jobs 1` (reader, field checks, conformance, one process);
- validate-N: `validate --jobs N`, sharded by key over N processes (N: the cores), with
  the line index (the writer stage once, shards decoding only their own lines);
- validate-N-old: the same without the line index (each shard decodes every line and
  holds every writer: the sharding before it);
- parse-command, validate-command: the whole command in a process of its own, interpreter
  start and imports included: ``python -c`` of the bare parse against ``python -m
  toolcommit.checker.cli validate --jobs 1`` (what a user waits for; the import cost shows here);
- dask-N: `validate --engine dask --jobs N` on a loopback LocalCluster started before the
  clock starts (its start time is printed apart), if the extra is installed.

For sharded modes, "shard CPU s" is the largest CPU time of one shard process: the wall
clock the mode would take on idle cores (the machine is shared, so measured wall clock
also counts waiting for a core).

Each mode runs `--repeat` times, alternating, and the fastest run counts (the machine is
shared; the slower runs measure the neighbours). Seconds are wall clock (the goal's
measure) with the CPU seconds of every process of the mode beside them; peak memory is
the child's peak RSS, plus, for sharded modes, the sum of the shards' peaks (they run at
once). A ratio of validate's speed to the bare parse's closes the report.

Usage::

    python benchmarks/bench_validate.py --lines 1000000 [--keep FILE] [--only MODE ...]
        [--repeat 3] [--jobs N] [--distinct-writers]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time

MODES = (
    "parse",
    "parse-orjson",
    "typed",
    "read",
    "validate-1",
    "validate-N",
    "validate-N-old",
    "dask-N",
    "parse-command",
    "validate-command",
)
# the bare parse as a command of its own (the baseline of validate-command)
PARSE_COMMAND = (
    "import sys, msgspec\n"
    "decode = msgspec.json.Decoder().decode\n"
    "with open(sys.argv[1], 'rb') as f:\n"
    "    for line in f:\n"
    "        decode(line)\n"
)


def generate(path: str, lines: int, seed: int = 7, window: int = 64, writers: bool = False) -> int:
    """Write a conforming log of about `lines` lines; return the number written. With
    `writers`, every intent is written by a writer of its own (the log's writers then
    number about a fifth of its lines: what holding writers costs)."""
    rng = random.Random(seed)
    seq: dict[str, int] = {}
    out = open(path, "w", buffering=1 << 20)
    n = 0
    workers = [f"worker-{i}" for i in range(8)]

    def emit(d: dict) -> None:
        nonlocal n
        w = d["writer"]
        seq[w] = seq.get(w, 0) + 1
        d["seq"] = seq[w]
        d["ts"] = "2024-05-01T12:%02d:%02d.%06dZ" % (n // 60000 % 60, n // 1000 % 60, n % 1000000)
        out.write(json.dumps(d, separators=(",", ":")) + "\n")
        n += 1

    # each intent is a small script of events; `window` intents progress interleaved
    def script(i: int):
        w = f"worker-{i}" if writers else rng.choice(workers)
        key = "k-%016x" % rng.getrandbits(64)
        args = {
            "amount": rng.randint(1, 10**6),
            "currency": rng.choice(("USD", "EUR")),
            "order": f"o-{i}",
        }
        scope = f"user:{rng.randint(1, 10**5)}:checkout:{i}"
        base = {"tool": "refund", "args": args, "scope": scope}
        yield {
            "type": "proposal",
            "writer": w,
            "call_id": f"t{i}",
            "key": key,
            "decision": "accepted",
            **base,
        }
        yield {"type": "transition", "writer": w, "key": key, "from": "PROPOSED", "to": "RECORDED"}
        yield {
            "type": "transition",
            "writer": w,
            "key": key,
            "from": "RECORDED",
            "to": "DISPATCHED",
            "fence": 1,
        }
        yield {
            "type": "effect",
            "writer": "provider",
            "key": key,
            "kind": "apply",
            "fence": 1,
            "effect_id": f"e{i}",
            **base,
        }
        r = rng.random()
        if r < 0.1:  # ack lost: reconcile, possibly by another worker
            w2 = f"worker-{i}-2" if writers else rng.choice(workers)
            yield {
                "type": "transition",
                "writer": w,
                "key": key,
                "from": "DISPATCHED",
                "to": "UNKNOWN",
            }
            yield {
                "type": "proposal",
                "writer": w,
                "call_id": f"t{i}r",
                "key": key,
                "decision": "duplicate",
                **base,
            }
            yield {
                "type": "transition",
                "writer": w2,
                "key": key,
                "from": "UNKNOWN",
                "to": "RECONCILING",
                "fence": 2,
            }
            yield {
                "type": "transition",
                "writer": w2,
                "key": key,
                "from": "RECONCILING",
                "to": "ACKED",
                "fence": 2,
            }
        else:
            yield {
                "type": "transition",
                "writer": w,
                "key": key,
                "from": "DISPATCHED",
                "to": "ACKED",
                "fence": 1,
            }

    active: list = []
    i = 0
    while n < lines:
        while len(active) < window:
            active.append(script(i))
            i += 1
        j = rng.randrange(len(active))
        try:
            emit(next(active[j]))
        except StopIteration:
            active[j] = active[-1]
            active.pop()
        if n % 100000 == 0 and rng.random() < 0.5:
            emit({"type": "crash", "writer": "worker-crashy"})
            emit({"type": "restart", "writer": "worker-crashy"})
    for a in active:  # finish what is open so the log conforms
        for ev in a:
            emit(ev)
    out.close()
    return n


def _lines(path: str, decode) -> int:
    n = 0
    with open(path, "rb") as f:
        for line in f:
            decode(line)
            n += 1
    return n


def _parts_peak(module) -> list:
    """Record the shards' (peak KiB, CPU s) as `module.merge` receives their parts."""
    seen: list = []
    real = module.merge

    def spy(parts, fixup, focus, index=None):
        seen.extend((p.peak_kib, p.cpu_s) for p in [*parts, *([fixup] if fixup else [])])
        return real(parts, fixup, focus, index)

    module.merge = spy
    return seen


def run_mode(mode: str, path: str, jobs: int) -> dict:
    """One mode, timed; (lines, seconds, verdict, shard peaks in KiB, cluster start s)."""
    verdict, shards, start = "", [], 0.0
    if mode == "parse":
        import msgspec

        t = time.perf_counter()
        n = _lines(path, msgspec.json.Decoder().decode)
    elif mode == "parse-orjson":
        import orjson

        t = time.perf_counter()
        n = _lines(path, orjson.loads)
    elif mode == "typed":
        from toolcommit.checker.logs.typed import decode

        t = time.perf_counter()
        n = _lines(path, decode)
    elif mode in ("parse-command", "validate-command"):
        if mode == "parse-command":
            argv = [sys.executable, "-c", PARSE_COMMAND, path]
        else:
            argv = [sys.executable, "-m", "toolcommit.checker.cli", "validate", "--jobs", "1", path]
        with open(path, "rb") as f:
            n = sum(1 for _ in f)  # counted before the clock starts
        t = time.perf_counter()
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        if mode == "validate-command":
            verdict = done.stdout.decode().split(maxsplit=1)[0] if done.stdout else "?"
    elif mode == "read":
        from toolcommit.checker.logs.read import read_lines

        t = time.perf_counter()
        n = sum(1 for _ in read_lines(path))
    else:
        from toolcommit.checker.cli.validate import validate

        if mode == "dask-N":
            from dask.distributed import LocalCluster

            from toolcommit.checker.logs import cluster

            shards = _parts_peak(cluster)
            t0 = time.perf_counter()
            lc = LocalCluster(
                n_workers=jobs,
                threads_per_worker=1,
                host="127.0.0.1",
                dashboard_address=None,
                silence_logs=40,
            )
            start = time.perf_counter() - t0
            t = time.perf_counter()
            report = validate([path], jobs=jobs, engine="dask", scheduler=lc.scheduler_address)
        else:
            from toolcommit.checker.logs import index, pool

            shards = _parts_peak(pool)
            if mode == "validate-N-old":  # the shards without the line index (before it)
                index.usable = lambda *args: False
            t = time.perf_counter()
            report = validate([path], jobs=1 if mode == "validate-1" else jobs)
        s = report.stats
        n = sum(s[k] for k in ("proposal", "transition", "effect", "crash", "restart"))
        verdict = report.verdict.value
    dt = time.perf_counter() - t
    if mode == "dask-N":
        lc.close()
    return {"lines": n, "seconds": dt, "verdict": verdict, "shards_kib": shards, "start": start}


def _child(mode: str, path: str, jobs: int) -> None:
    r = run_mode(mode, path, jobs)
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    shards = r.pop("shards_kib")
    r.update(
        mode=mode,
        peak_mib=me.ru_maxrss / 1024,
        cpu=me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime,
        shards_mib=sum(kib for kib, _ in shards) / 1024,
        shard_cpu=max((cpu for _, cpu in shards), default=0.0),
    )
    print(json.dumps(r))


def _dask_installed() -> bool:
    try:
        import dask.distributed  # noqa: F401

        return True
    except ImportError:
        return False


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--keep", help="write the generated log here (and reuse it if present)")
    ap.add_argument("--only", nargs="+", choices=MODES, help="these modes only")
    ap.add_argument("--repeat", type=int, default=1, help="runs per mode; the fastest counts")
    ap.add_argument(
        "--distinct-writers",
        action="store_true",
        help="every intent written by a writer of its own (memory per writer)",
    )
    ap.add_argument(
        "--jobs",
        type=int,
        default=len(os.sched_getaffinity(0)),
        help="processes for validate-N and dask-N (default: the cores)",
    )
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        _child(a.child[0], a.child[1], int(a.child[2]))
        return
    path = a.keep or os.path.join(tempfile.mkdtemp(), "bench.jsonl")
    if not os.path.exists(path):
        t = time.perf_counter()
        n = generate(path, a.lines, writers=a.distinct_writers)
        print(
            f"generated {n} lines ({os.path.getsize(path) / 2**20:.0f} MiB) "
            f"in {time.perf_counter() - t:.0f}s: {path}",
            file=sys.stderr,
        )
    modes = [
        m for m in MODES if (not a.only or m in a.only) and (m != "dask-N" or _dask_installed())
    ]
    results: dict = {}
    for _ in range(a.repeat):
        for mode in modes:
            out = subprocess.run(
                [sys.executable, __file__, "--child", mode, path, str(a.jobs)],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            r = json.loads(out.splitlines()[-1])
            best = results.get(mode)
            if best is not None:
                r["peak_mib"] = max(r["peak_mib"], best["peak_mib"])
                r["shards_mib"] = max(r["shards_mib"], best["shards_mib"])
                if best["seconds"] < r["seconds"]:
                    r.update(
                        seconds=best["seconds"],
                        cpu=best["cpu"],
                        start=best["start"],
                        shard_cpu=best["shard_cpu"],
                    )
            results[mode] = r
    print(
        f"{'mode':12s} {'lines':>11s} {'wall s':>7s} {'CPU s':>7s} {'lines/s':>10s} "
        f"{'peak MiB':>9s} {'shards MiB':>10s} {'shard CPU s':>11s}  verdict"
    )
    for mode in modes:
        r = results[mode]
        name = mode.replace("-N", f"-{a.jobs}")
        print(
            f"{name:12s} {r['lines']:>11,d} {r['seconds']:7.2f} {r['cpu']:7.2f} "
            f"{r['lines'] / r['seconds']:>10,.0f} {r['peak_mib']:9.0f} "
            f"{format(r['shards_mib'], '10.0f') if r['shards_mib'] else '':>10} "
            f"{format(r['shard_cpu'], '11.2f') if r['shard_cpu'] else '':>11} {r['verdict']}"
            + (f"  (cluster start {r['start']:.1f} s, not counted)" if r["start"] else "")
        )
    if "parse-command" in results and "validate-command" in results:
        ratio = results["parse-command"]["seconds"] / results["validate-command"]["seconds"]
        print(
            f"validate-command takes {results['validate-command']['seconds']:.2f} s against "
            f"{results['parse-command']['seconds']:.2f} s for the bare parse as a command: "
            f"{ratio:.2f} of its speed (goal: at least 0.6)"
        )
    if "parse" in results:
        base = results["parse"]["lines"] / results["parse"]["seconds"]
        for mode in ("validate-1", "validate-N", "validate-N-old", "dask-N"):
            if mode in results:
                ratio = results[mode]["lines"] / results[mode]["seconds"] / base
                goal = "80%" if mode.startswith("validate-N") else "50%"
                print(
                    f"{mode.replace('-N', f'-{a.jobs}')} runs at {ratio:.0%} of a bare "
                    f"msgspec parse's speed, wall clock (goal: at least {goal})"
                )
    if not a.keep:
        os.unlink(path)


if __name__ == "__main__":
    main()
