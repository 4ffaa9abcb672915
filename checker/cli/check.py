"""`toolcommit check`: model-check a preset (plus knob changes) over instances."""
from __future__ import annotations

import json
import sys
import time

from toolcommit.model.errors import UsageError
from toolcommit.model.instance import instance_names, parse_bounds
from toolcommit.model.knobs import PRESETS, parse_settings, preset
from toolcommit.model.semantics import build

from toolcommit.model.properties import all_names, of_kind
from toolcommit.checker.engines.base import Limits
from toolcommit.checker.engines.portfolio import for_check
from toolcommit.checker.verify.hyper import personality_instance
from toolcommit.checker.render.counterexample import render_itf, render_python, render_text
from toolcommit.checker.verify.suite import SuiteResult, reliance, resolve_instances, run_suite
from toolcommit.checker.engines.verdict import EXIT, Status

ALL = all_names()


def add_parser(sub):
    p = sub.add_parser("check", help="search every interleaving of an instance for violations",
                       description="Exhaustive breadth-first model checking: every counterexample "
                       "is a shortest one and is replayed through the model before it is shown.")
    add_model_options(p)
    p.add_argument("--property", action="append", metavar="P",
                   help=f"property to check (repeatable; default all: {', '.join(ALL)})")
    p.add_argument("--max-states", type=int, default=0,
                   help="stop after N states (verdict UNKNOWN; default: %(default)s, no limit)")
    p.add_argument("--timeout", type=float, default=0.0,
                   help="seconds per instance (verdict UNKNOWN; default: %(default)s, no limit)")
    p.add_argument("--engine", choices=("explicit", "smt", "random"), default="explicit",
                   help="explicit: exhaustive BFS (all properties); smt: bounded model checking "
                   "with z3 to --depth; random: seeded simulation (invariants only for smt and random)")
    p.add_argument("--depth", type=int, default=15, help="smt: steps to unroll (default: %(default)s)")
    p.add_argument("--runs", type=int, default=1000, help="random: number of runs (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="random: seed (default: %(default)s)")
    p.add_argument("--max-steps", type=int, default=60, help="random: steps per run (default: %(default)s)")
    p.add_argument("--format", choices=("text", "json", "python"), default="text",
                   help="python: each counterexample as a pytest test that replays it")
    p.add_argument("--explain", choices=("first", "all", "none"), default="first",
                   help="which counterexamples to explain in full (text format)")
    p.add_argument("--write", action="store_true",
                   help="store counterexamples under --out/<config>/ (other --bounds: "
                   "<config>@<bounds>/) as .itf.json, .txt and .mmd; only the files of this "
                   "run's instances and properties change")
    p.add_argument("--out", default="counterexamples", help="folder for --write (default: %(default)s)")
    return p


def add_model_options(p) -> None:
    p.add_argument("--preset", default="recommended", choices=PRESETS,
                   help="starting policy (default: %(default)s)")
    p.add_argument("--set", action="append", metavar="KNOB=OPTION",
                   help="change one knob or assumption (repeatable)")
    p.add_argument("--instance", action="append", metavar="NAME",
                   help="instance to check (repeatable; default: default plus every failure class)"
                   f"; one of: {', '.join(instance_names())}")
    p.add_argument("--bounds", metavar="NAME=N,...",
                   help="override workers, max_fence or fault budgets, e.g. workers=3,crashes=2")


def bounds_from(args) -> dict:
    """`--bounds` parsed; an empty `--bounds ''` is a usage error, not 'no change'."""
    if args.bounds is not None and not args.bounds.strip():
        raise UsageError("--bounds is empty; give name=number[,name=number], e.g. workers=3,crashes=2")
    return parse_bounds(args.bounds)


def config_from(args):
    return preset(args.preset).with_knobs(parse_settings(args.set))


class Progress:
    """A progress line on stderr for runs longer than two seconds."""

    def __init__(self, stream=sys.stderr):
        self.stream, self.t0, self.shown = stream, time.perf_counter(), False

    def __call__(self, tick, info=None) -> None:
        if time.perf_counter() - self.t0 < 2:
            return
        if info is None:   # a Tick; (name, info dict) is the design runner's older shape
            name, info = tick.phase, {"states": tick.states, "depth": tick.depth,
                                      "seconds": tick.seconds}
        else:
            name = tick
        rate = info["states"] / max(info["seconds"], 1e-9)
        end = "\r" if self.stream.isatty() else "\n"
        self.stream.write(f"  [{name}] {info['states']:,} states, depth {info['depth']}, "
                          f"{rate:,.0f} states/s, {info['seconds']:.0f}s{end}")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown and self.stream.isatty():
            self.stream.write("\n")


def run(args) -> int:
    config = config_from(args)
    engine = for_check(args.engine, args.depth, args.runs, args.seed, args.max_steps)
    limits = Limits(args.max_states, args.timeout)
    insts = resolve_instances(args.instance, bounds_from(args))
    progress = Progress()
    suite = run_suite(config, insts, args.property, limits, progress, engine)
    progress.close()
    if args.write:
        from toolcommit.checker.render.catalogue import write_catalogue
        where = write_catalogue(args.out, suite)
        print(f"wrote {where}", file=sys.stderr)
    if suite.status is Status.HOLDS and args.engine == "explicit" and not args.max_states \
            and not args.timeout:
        suite.reliance = reliance(config, insts, suite.props)
    out = {"json": render_json, "python": render_programs}.get(
        args.format, lambda s: render_suite_text(s, args.explain))(suite)
    sys.stdout.write(out)
    return EXIT[suite.status]


def _cell(v) -> str:
    if v is None:
        return "-"
    if v.status is Status.HOLDS:
        return "ok"
    if v.status is Status.VIOLATED:
        return f"x{v.counterexample.length}"
    return "?"


def render_suite_text(suite: SuiteResult, explain: str = "first") -> str:
    cfg = suite.config
    cols = [p for p in ALL if p in suite.props and p not in of_kind("hyper")]  # hyper: apart
    lines = [f"toolcommit check: {cfg.label()}",
             "knobs: " + ", ".join(f"{k}={v}" for k, v in cfg.knobs.items()),
             "assumptions: " + ", ".join(f"{k}={v}" for k, v in cfg.assumptions.items()),
             "", _legend(suite), ""]
    width = {c: max(len(c), 3) for c in cols}
    lines.append(f"{'instance':<24}{'states':>9}{'depth':>6}  " + " ".join(f"{c:>{width[c]}}" for c in cols))
    for r in suite.results:
        by = {v.property: v for v in r.verdicts}
        lines.append(f"{r.instance.name:<24}{str(r.stats['states']):>9}{r.stats['depth']:>6}  "
                     + " ".join(f"{_cell(by.get(c)):>{width[c]}}" for c in cols))
    lines += _coverage(suite)
    if suite.engine == "random":
        lines += ["", "denominator (random engine):"]
        for r in suite.results:
            faults = ", ".join(f"{k}={v}" for k, v in sorted((r.stats.get("faults") or {}).items()))
            lines.append(f"  {r.instance.name}: {r.stats.get('runs')} runs, {r.stats.get('steps')} steps;"
                         f" faults fired: {faults or 'none'}")
    if suite.p5 is not None:
        lines += ["", f"P5 (model personalities): {suite.p5.line()}"
                  + (f" -- {suite.p5.reason}" if suite.p5.status is Status.HOLDS and suite.p5.reason else "")]
    lines += _unknowns(suite) + _violations(suite, explain)
    lines += ["", _summary(suite)]
    return "\n".join(lines) + "\n"


def _legend(suite: SuiteResult) -> str:
    if suite.engine == "explicit":
        return ("cells: ok = holds on every reachable state of the instance; xN = violated, "
                "shortest counterexample has N steps; ? = unknown")
    scopes = sorted({v.scope for v in suite.verdicts() if v.status is Status.HOLDS})
    return (f"engine: {suite.engine}; cells: ok = holds {' / '.join(scopes) or '(none hold)'}, "
            "not a proof; xN = violated in N steps; ? = unknown")


def _coverage(suite: SuiteResult) -> list[str]:
    """Which declared actions never fired: a fault that cannot fire checks nothing."""
    if suite.engine != "explicit":
        return []
    idle = [(r.instance.name, sorted(a for a, n in r.coverage.items() if n == 0))
            for r in suite.results]
    idle = [(name, acts) for name, acts in idle if acts]
    if not idle:
        return ["", "coverage: every action of every instance fired at least once"]
    return ["", "coverage: actions this instance never fires (no fault or call of it leads there):"] + \
        [f"  {name}: {', '.join(acts)}" for name, acts in idle]


def _unknowns(suite) -> list[str]:
    out = [f"  {r.instance.name}: {v.line()}" for r in suite.results for v in r.verdicts
           if v.status is Status.UNKNOWN]
    return ["", "Unknown:"] + out if out else []


def _violations(suite: SuiteResult, explain: str) -> list[str]:
    found = [(r, v) for r in suite.results for v in r.verdicts if v.status is Status.VIOLATED]
    if suite.p5 is not None and suite.p5.status is Status.VIOLATED:
        found.append((None, suite.p5))
    if not found:
        return []
    out = ["", "Shortest counterexamples:"]
    for r, v in found:
        name = r.instance.name if r else "personalities"
        steps = " ; ".join(s.label() for s in v.counterexample.steps[1:])
        out.append(f"  {name} {v.property} ({v.counterexample.length} steps): {steps}")
    if explain == "none":
        return out
    chosen = found if explain == "all" else [_headline(found)]
    for r, v in chosen:
        inst = r.instance if r else personality_instance(v.extra["personalities"][0])
        out += ["", render_text(v.counterexample, build(suite.config, inst)).rstrip()]
    return out


def _headline(found):
    for r, v in found:
        if v.property == "I1":
            return r, v
    return found[0]


def _summary(suite: SuiteResult) -> str:
    vs = suite.verdicts()
    n = {s: sum(v.status is s for v in vs) for s in Status}
    if suite.status is Status.HOLDS:
        how = "exhaustively" if suite.engine == "explicit" else "within the engine's bounds"
        head = f"HOLDS: all {len(vs)} verdicts hold {how} on {len(suite.results)} instance(s)"
        return head + "".join("\n" + line for line in _reliance_lines(suite))
    return (f"{suite.status.value}: {n[Status.VIOLATED]} violated, {n[Status.UNKNOWN]} unknown, "
            f"{n[Status.HOLDS]} hold")


def _reliance_lines(suite: SuiteResult) -> list[str]:
    if not suite.reliance:
        return []
    cfg, out = suite.config, []
    for name, found in suite.reliance.items():
        if found:
            inst, prop, steps = found
            out.append(f"  relies on {name}={cfg.assumptions[name]}: without it, {inst} violates "
                       f"{prop} in {steps} steps")
        else:
            out.append(f"  does not rely on {name}={cfg.assumptions[name]}: every verdict above "
                       "holds without it too")
    return out


def render_programs(suite: SuiteResult) -> str:
    """Every counterexample of `suite` as a pasteable pytest test."""
    out = []
    for r in suite.results:
        for v in r.verdicts:
            if v.counterexample is not None:
                system = build(suite.config, r.instance, wipe=v.property == "P4")
                out.append(render_python(v.counterexample, system))
    return "\n\n".join(out)


def render_json(suite: SuiteResult) -> str:
    doc = {"config": suite.config.label(), "engine": suite.engine, "knobs": dict(suite.config.knobs),
           "assumptions": dict(suite.config.assumptions), "status": suite.status.value,
           "instances": []}
    if suite.reliance:
        doc["reliance"] = {k: (dict(zip(("instance", "property", "steps"), v)) if v else None)
                           for k, v in suite.reliance.items()}
    for r in suite.results:
        system = build(suite.config, r.instance)
        doc["instances"].append({"instance": r.instance.name, "bounds": r.instance.bounds(),
                                 "stats": r.stats, "coverage": r.coverage,
                                 "verdicts": [_verdict_json(v, system) for v in r.verdicts]})
    if suite.p5 is not None:
        system = None
        if suite.p5.counterexample is not None:
            system = build(suite.config, personality_instance(suite.p5.extra["personalities"][0]))
        doc["P5"] = _verdict_json(suite.p5, system)
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def _verdict_json(v, system) -> dict:
    out = {"property": v.property, "status": v.status.value, "scope": v.scope, "reason": v.reason}
    if v.counterexample is not None:
        out["steps"] = v.counterexample.length
        out["counterexample"] = render_itf(v.counterexample, system)
    return out
