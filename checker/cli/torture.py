"""`toolcommit torture`: seeded runs of a runtime under real crashes and network faults.

Exit codes: 0 every run's log CONFORMS, 1 a run VIOLATES, 3 a run was inconclusive, stuck
or failed, 2 bad usage (one line on stderr). SIGINT and SIGTERM stop the campaign after
its processes are ended and its run folders removed (130 for Ctrl-C; SIGTERM ends it by
that signal).
"""

from __future__ import annotations

import argparse
import os
import sys

from toolcommit.checker.cli import flags
from toolcommit.checker.cli.terminal import Progress, width
from toolcommit.checker.interrupts import Interrupts
from toolcommit.checker.render.fit import fit
from toolcommit.checker.torture.profiles import (
    DESIGN_FILES,
    PROFILES,
    add_provider,
    design,
    has_design,
)
from toolcommit.model.errors import UsageError
from toolcommit.model.provider_file import looks_like_file

MAX_RUNS = 100_000


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "torture",
        help="run a runtime under real crashes and faults; validate every run",
        description="Seeded fault harness: worker processes run an agent loop on a runtime "
        "against a provider on 127.0.0.1, behind a proxy that drops and delays responses, "
        "while the harness SIGKILLs workers at planned points, pauses them with their leases "
        "expired and cancels intents. Every run's log (plus the provider's ledger) is "
        "checked by the code of 'toolcommit validate'. The same seed is the same schedule. "
        "Exit 0 all clean, 1 a violation, 3 inconclusive, stuck or failed, 2 bad usage.",
    )
    p.add_argument(
        "--runtime",
        choices=("library", "park", "chat", "ts"),
        default="library",
        help="library: toolcommit.runtime's intent log, following the design "
        "proved for the provider (spec/designs/<env>.json) with --env; park: the "
        "intent log as it shipped before (one status read, park the record on "
        "absent); chat: trust the call id and retry blindly; ts: the TypeScript "
        "library (ts/) in Node workers, as library on an --env profile with a design "
        "(default library)",
    )
    p.add_argument("--runs", type=int, default=30, metavar="N", help="runs (default 30)")
    p.add_argument(
        "--seed",
        type=int,
        default=1,
        metavar="S",
        help="first seed; run i uses seed S+i (default 1)",
    )
    p.add_argument(
        "--workers", type=int, default=2, metavar="W", help="worker processes per run (default 2)"
    )
    p.add_argument(
        "--env",
        type=_env,
        default=None,
        metavar="NAME|FILE",
        help="the provider's profile: one of spec/environments.json's, a provider "
        "that behaves as it documents (ideal; stripe: saved responses per key, "
        "500s included, 409 while a key is in flight, keys pruned after their "
        "lifetime, no fences, a consistent list and a lagging search; email: no "
        "keys, no status read; fenced-store: fences and create-once keys; "
        "async-log: ideal's provider, as the harness does not fail the log's store "
        "over), time compressed (1 h = 1 s); or one of the harness's own, each one "
        "promise on or off (fenced: idempotency keys with a TTL, saved responses, "
        "fences; keyed; fences-only; bare). Default: fenced, or with --itf the one "
        f"matching the trace's assumptions. One of: {', '.join(PROFILES)}; or a provider "
        "file (docs/provider-file.md): a fake that behaves as the file says, the library "
        "following the design the file names (or --design)",
    )
    p.add_argument(
        "--design",
        metavar="FILE",
        help="the design file the library follows (`toolcommit design --env FILE -o "
        "DESIGN`; its environment must be --env's): instead of the shipped one, or the one "
        "a provider file names",
    )
    flags.alias(p, "--profile", "--env")
    p.add_argument(
        "--store",
        choices=("sqlite", "postgres"),
        default="sqlite",
        help="the library's store (default sqlite)",
    )
    p.add_argument(
        "--dsn",
        default="",
        metavar="CONNINFO",
        help="PostgreSQL connection string for --store postgres",
    )
    p.add_argument(
        "--itf",
        metavar="FILE",
        help="replay the schedule of a stored counterexample (an .itf.json trace) "
        "instead of seeded schedules: one run",
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help="parallel workers; here a worker is a run (its harness, provider and "
        "worker processes), N runs at once (default 1)",
    )
    p.add_argument("--keep", metavar="DIR", help="keep the log of every run that is not clean")
    p.add_argument(
        "--keep-going",
        action="store_true",
        help="run every seed instead of stopping at the first run that is not clean",
    )
    p.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress line on stderr (there is one only when stderr is a "
        "terminal and the campaign has run two seconds)",
    )
    return p


def _env(name: str) -> str:
    """A harness profile's name, or the provider file at path `name` read into one."""
    if name in PROFILES:
        return name
    if looks_like_file(name):
        return add_provider(name)
    raise UsageError(
        f"--env {name!r}: one of {', '.join(PROFILES)}, or a provider file's path "
        "(docs/provider-file.md)"
    )


def _use_design(args) -> None:
    """`--design FILE`: the design file the library follows in --env (UsageError if it was
    proven for another environment)."""
    from toolcommit.runtime.design import read

    if not args.env or not PROFILES[args.env].env:
        raise UsageError("--design needs --env (a profile of spec/environments.json or a file)")
    d = read(args.design)
    if d.environment != args.env:
        raise UsageError(
            f"--design {args.design}: proven for {d.environment}, not --env {args.env}"
        )
    DESIGN_FILES[args.env] = args.design
    design.cache_clear()


def _check(args) -> None:
    if args.design:
        _use_design(args)
    if not 1 <= args.runs <= MAX_RUNS:
        raise UsageError(f"--runs {args.runs}: use 1 to {MAX_RUNS}")
    if not 1 <= args.workers <= 8:
        raise UsageError(f"--workers {args.workers}: use 1 to 8")
    if not 1 <= args.jobs <= 16:
        raise UsageError(f"--jobs {args.jobs}: use 1 to 16")
    if (
        args.runtime == "library"
        and args.env
        and PROFILES[args.env].env
        and not has_design(args.env)
    ):
        raise UsageError(
            f"--env {args.env}: no design keeps the guarantee there (see: "
            f"toolcommit design --env {args.env}), so the library has none to "
            "follow; give --runtime park or chat, or another --env"
        )
    if args.runtime == "ts":
        from toolcommit.checker.torture import tsworker

        if not args.itf and not (args.env and PROFILES[args.env].env and has_design(args.env)):
            raise UsageError(
                "--runtime ts follows the design the library ships for a provider: give "
                "--env with one ("
                + ", ".join(p for p in PROFILES if PROFILES[p].env and has_design(p))
                + ")"
            )
        try:
            tsworker.check()
        except tsworker.NoNode as e:
            raise UsageError(str(e)) from None
    if args.seed < 0:
        raise UsageError(f"--seed {args.seed}: use 0 or more")
    if args.store == "postgres" and not args.dsn:
        raise UsageError("--store postgres needs --dsn CONNINFO (a libpq connection string)")
    if args.store == "postgres" and args.runtime == "chat":
        raise UsageError("--store postgres is the library's store; the chat runtime has none")
    if args.keep:
        try:
            os.makedirs(args.keep, exist_ok=True)
        except OSError as e:
            raise UsageError(
                f"--keep {args.keep}: {e.strerror}; choose a folder you can write"
            ) from None
    if args.store == "postgres":
        from toolcommit.runtime.store import PostgresStore

        PostgresStore(args.dsn, "tc_probe").close()  # fails here, in one line, if unusable


def run(args) -> int:
    _check(args)
    from toolcommit.checker.torture.campaign import render, torture

    progress = Progress()
    dot = (lambda r: None) if args.quiet else progress.run
    with Interrupts():  # a signal unwinds the runs' cleanups, then takes its effect
        if args.itf:
            from toolcommit.checker.torture.itf import replay

            campaign = replay(args.itf, args.runtime, args.env, args.store, args.dsn, args.keep)
        else:
            campaign = torture(
                args.runs,
                args.seed,
                args.runtime,
                args.env or "fenced",
                args.store,
                args.dsn,
                args.workers,
                args.jobs,
                args.keep,
                args.keep_going,
                dot,
            )
    progress.close()
    sys.stdout.write(fit(render(campaign), width(), whole=("  rerun: ",)))
    return campaign.exit_code
