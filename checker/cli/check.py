"""`toolcommit check`: model-check a preset (plus knob changes) over instances."""

from __future__ import annotations

import sys
import time
from dataclasses import replace

from toolcommit.checker.cli import flags
from toolcommit.checker.cli.exits import EXIT
from toolcommit.checker.cli.terminal import Progress, width
from toolcommit.checker.engines.base import Limits, without_state_limit
from toolcommit.checker.engines.portfolio import for_check
from toolcommit.checker.engines.verdict import Status
from toolcommit.checker.machine import cores
from toolcommit.checker.output import write_atomic
from toolcommit.checker.render.fit import DEFAULT, fit
from toolcommit.checker.render.suite import render_json, render_programs, render_suite_text
from toolcommit.checker.verify.suite import (
    outside_claim,
    reliance,
    resolve_instances,
    run_suite,
    suite_names,
)
from toolcommit.model.environment import configure
from toolcommit.model.environment import names as env_names
from toolcommit.model.environment import resolve as resolve_env
from toolcommit.model.errors import UsageError
from toolcommit.model.instance import instance_names, parse_bounds
from toolcommit.model.knobs import PRESETS, parse_settings, preset
from toolcommit.model.properties import all_names

ALL = all_names()


def add_parser(sub):
    p = sub.add_parser(
        "check",
        help="search every interleaving of an instance for violations",
        description="Exhaustive breadth-first model checking: every counterexample "
        "is a shortest one and is replayed through the model before it is shown.",
    )
    add_model_options(p)
    p.add_argument(
        "--property",
        action="append",
        metavar="P",
        help=f"property to check (repeatable; default all: {', '.join(ALL)}; with "
        "--design, the file's)",
    )
    p.add_argument(
        "--all",
        action="store_true",
        help="with --design: also judge what the file does not claim (every other "
        "property, every instance of the suite), shown marked outside the claim; "
        "the exit code is the claim's",
    )
    p.add_argument(
        "--max-states",
        type=int,
        default=0,
        help="stop after N states (verdict UNKNOWN; default: %(default)s, no limit)",
    )
    add_timeouts(p, "instance")
    p.add_argument(
        "--first",
        action="store_true",
        help="explicit: stop an instance's search once every property asked for is "
        "violated (same shortest counterexamples; the state counts are then of the "
        "part searched, and the output says it stopped early; PROGRESS, which needs "
        "the whole graph, keeps the search going)",
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=None,
        metavar="N",
        help="parallel workers; here a worker is a search thread (explicit engine, "
        f"where the native engine answers; default: the cores available, {cores()}), "
        "an instance's P4 search beside its main one; the states, counts, depths, "
        "verdicts and counterexamples are those of --jobs 1",
    )
    p.add_argument(
        "--engine",
        choices=("explicit", "smt", "random"),
        default="explicit",
        help="explicit: exhaustive BFS (all properties); smt: bounded model checking "
        "with z3 to --depth; random: seeded simulation (invariants only for smt and random)",
    )
    p.add_argument(
        "--depth", type=int, default=15, help="smt: steps to unroll (default: %(default)s)"
    )
    p.add_argument(
        "--runs", type=int, default=1000, help="random: number of runs (default: %(default)s)"
    )
    p.add_argument("--seed", type=int, default=0, help="random: seed (default: %(default)s)")
    p.add_argument(
        "--max-steps", type=int, default=60, help="random: steps per run (default: %(default)s)"
    )
    p.add_argument(
        "--format",
        choices=("text", "json", "python", "html"),
        default="text",
        help="python: each counterexample as a pytest test that replays it; html: one "
        "self-contained page, each counterexample a sequence diagram",
    )
    p.add_argument(
        "--explain",
        choices=("first", "all", "none"),
        default="first",
        help="which counterexamples to explain in full (text format)",
    )
    p.add_argument(
        "-o", "--output", metavar="FILE", help="write the report here (atomically), not to stdout"
    )
    p.add_argument(
        "--write",
        action="store_true",
        help="store counterexamples in the repository's place: under "
        "--out-dir/<config>/ (other --bounds: <config>@<bounds>/) as .itf.json, .txt "
        "and .mmd; only the files of this run's instances and properties change",
    )
    add_out_dir(p, "--write")
    return p


def add_out_dir(p, what: str) -> None:
    """`--out-dir DIR` (old spelling `--out`): the folder of a command's output files."""
    p.add_argument(
        "--out-dir",
        default="counterexamples",
        metavar="DIR",
        help=f"folder for {what} (default: %(default)s)",
    )
    flags.alias(p, "--out", "--out-dir")


def add_timeouts(p, run: str) -> None:
    """`--timeout` (the whole command's wall-clock limit) and `--run-timeout` (each `run`'s)."""
    p.add_argument(
        "--timeout",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="the whole command's wall-clock limit: every search still running "
        "then stops, UNKNOWN (default: %(default)s, no limit)",
    )
    p.add_argument(
        "--run-timeout",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help=f"seconds per {run} (verdict UNKNOWN; default: %(default)s, no limit)",
    )


def add_model_options(p) -> None:
    p.add_argument(
        "--preset", default=None, choices=PRESETS, help="starting policy (default: recommended)"
    )
    p.add_argument(
        "--design",
        metavar="FILE",
        help="start from a design file that `toolcommit design -o FILE` wrote "
        "(its knobs, timing and environment; instead of --preset and --env)",
    )
    p.add_argument(
        "--set",
        action="append",
        metavar="KNOB=OPTION",
        help="change one knob or assumption (repeatable)",
    )
    p.add_argument(
        "--instance",
        action="append",
        metavar="NAME",
        help="instance to check (repeatable; default: default plus every failure class)"
        f"; one of: {', '.join(instance_names())}",
    )
    p.add_argument(
        "--bounds",
        metavar="NAME=N,...",
        help="override workers, max_fence or fault budgets, e.g. workers=3,crashes=2",
    )
    add_env_option(p)


def add_env_option(p) -> None:
    p.add_argument(
        "--env",
        default="ideal",
        metavar="NAME|FILE",
        type=resolve_env,  # a provider file is read (and checked) here: exit 2 if unusable
        help="environment profile (default: %(default)s); one of: "
        f"{', '.join(env_names())} (see: toolcommit spec --envs), or a provider file "
        "(docs/provider-file.md)",
    )


def bounds_from(args) -> dict:
    """`--bounds` parsed; an empty `--bounds ''` is a usage error, not 'no change'."""
    if args.bounds is not None and not args.bounds.strip():
        raise UsageError(
            "--bounds is empty; give name=number[,name=number], e.g. workers=3,crashes=2"
        )
    return parse_bounds(args.bounds)


def config_from(args):
    """The preset (or the design file), in the environment, then the --set changes (which
    win)."""
    if getattr(args, "design", None):
        return design_config(args)
    return configure(preset(args.preset or "recommended"), args.env).with_knobs(
        parse_settings(args.set)
    )


def design_config(args):
    """The config of `--design FILE` (read here, at the edge): its knobs and timing, in its
    environment under its assumptions, with --set on top."""
    from toolcommit.checker.design.file import config_for

    design, env, claim = design_file(args)
    return config_for(design, env).with_knobs({**claim.given, **parse_settings(args.set)})


def design_file(args):
    """(design, environment, claim) of `--design FILE` (the one design-file reader,
    `toolcommit.model.design_file.read_file`); InputError naming the file and field,
    UsageError if --preset or another --env is given beside it."""
    from toolcommit.model.design_file import read_file

    if args.preset:
        raise UsageError("--design and --preset both choose the design; give one")
    read = read_file(args.design)
    design, env, claim = read.design, read.environment, read.claim
    if args.env not in ("ideal", env):
        raise UsageError(
            f"--env {args.env}: the design file {args.design} was proved for {env}; "
            f"drop --env, or write a design for {args.env}"
        )
    return design, env, claim


def run(args) -> int:
    config = config_from(args)
    claim = design_file(args)[2] if args.design else None
    if args.all and claim is None:
        raise UsageError("--all judges what a design file does not claim; give --design FILE")
    if args.jobs is not None and args.engine != "explicit":
        raise UsageError(
            f"--jobs is for --engine explicit (the {args.engine} engine runs on one core)"
        )
    jobs = cores() if args.jobs is None else args.jobs
    engine = for_check(args.engine, args.depth, args.runs, args.seed, args.max_steps, jobs)
    limits = Limits(args.max_states, args.run_timeout, args.first)
    Limits(0, args.timeout)  # range-checked before any search
    deadline = time.monotonic() + args.timeout if args.timeout else 0.0
    if args.engine != "explicit":
        without_state_limit(args.engine, limits)  # refused before any search
    props = args.property or (list(claim.properties) if claim else None)
    names = args.instance or (list(claim.instances) if claim else None)
    insts = resolve_instances(names, bounds_from(args), config.env)
    progress = Progress()
    suite = run_suite(config, insts, props, limits, progress, engine, deadline)
    if claim is not None:
        suite = replace(suite, claim=_claim_line(args, claim, props, names))
    if args.all:
        beyond = resolve_instances(
            list(dict.fromkeys(list(names) + suite_names())), bounds_from(args), config.env
        )
        every = run_suite(config, beyond, None, limits, progress, engine, deadline)
        suite = replace(suite, outside=outside_claim(every, props, names))
    if args.write:
        from toolcommit.checker.render.catalogue import write_catalogue

        where = write_catalogue(args.out_dir, suite)
        print(f"wrote {where}", file=sys.stderr)
    if (
        suite.status is Status.HOLDS
        and args.engine == "explicit"
        and not args.max_states
        and not args.timeout
        and not args.run_timeout
    ):
        progress.show("  [reliance] judging the verdicts without each environment assumption")

        def step(what: str) -> None:
            progress.show(f"  [reliance] judging the verdicts under {what}")

        suite = replace(suite, reliance=reliance(config, insts, suite.props, engine, step))
    progress.close()
    text = _render(suite, args, config.label() == "seed" and args.engine == "explicit")
    if args.output:
        write_atomic(args.output, text, inputs=[args.design] if args.design else ())
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return EXIT[suite.status]


def _claim_line(args, claim, props, names) -> str:
    """What a --design run judged: the file's claim, or what --property, --instance and
    --bounds chose instead."""
    what = (
        f"{', '.join(props)} on {', '.join(names)}"
        if len(names) <= 3
        else f"{', '.join(props)} on {len(names)} instances"
    )
    if (
        list(props) == list(claim.properties)
        and list(names) == list(claim.instances)
        and not args.bounds
    ):
        return f"the claim of {args.design}: {what}, under its assumptions"
    return f"{what} (chosen by --property/--instance/--bounds), under {args.design}"


def _render(suite, args, fixture: bool) -> str:
    """The report in --format (text fitted to the terminal's width); the seed preset's
    with the article's fixture itself. HTML embeds the JSON report whole."""
    if args.format == "python":
        return render_programs(suite)
    if args.format in ("json", "html"):
        out = render_json(suite)
        out = _with_fixture(out, "json") if fixture else out
        if args.format == "html":
            from toolcommit.checker.render.html.check import render_check_html

            return render_check_html(suite, out, _text(suite, "none", DEFAULT, fixture))
        return out
    return _text(suite, args.explain, width(), fixture)


def _text(suite, explain: str, w: int, fixture: bool) -> str:
    out = render_suite_text(suite, explain, w)
    return fit(_with_fixture(out, "text"), w) if fixture else out


def _with_fixture(out: str, fmt: str) -> str:
    """The seed preset's report with the article's fixture itself (its flaws, its own run)."""
    import json

    from toolcommit.checker.render.fixture import fixture_json, render_fixture_text
    from toolcommit.checker.verify.fixture import flaws, run_fixture

    run, found = run_fixture(), flaws()
    if fmt == "json":
        doc = json.loads(out)
        doc["fixture"] = fixture_json(run, found)
        return json.dumps(doc, indent=2, sort_keys=True) + "\n"
    body, summary = out.rstrip("\n").rsplit("\n\n", 1)
    return "\n".join([body] + render_fixture_text(run, found) + ["", summary]) + "\n"
