"""`toolcommit validate LOG...`: does an intent log conform to the protocol?

Reads JSON Lines logs (files, ``-`` for stdin, plain or gzip), streams them through the
conformance core and prints the verdict with its findings. Large files are checked by
``--jobs`` processes sharded by key (`toolcommit.checker.logs.pool`), or on a Dask
cluster with ``--engine dask`` (`toolcommit.checker.logs.cluster`): the same report. Exit codes: 0 CONFORMS,
1 VIOLATES, 3 INCONCLUSIVE, 2 unusable input or usage, 5 out of memory or a lost Dask worker
(one line on stderr).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from toolcommit.checker.cli import validate_design, validate_from
from toolcommit.checker.logs import lane, pool
from toolcommit.checker.logs.read import DEFAULT_MAX_LINE_BYTES, check_paths
from toolcommit.checker.logs.report import LogVerdict, Report, count, with_findings
from toolcommit.checker.logs.validate import validate
from toolcommit.checker.output import refuse_inputs, visible, write_atomic
from toolcommit.checker.render.findings import RENDERERS
from toolcommit.model.errors import InputError, UsageError

EXIT_CODES = {LogVerdict.CONFORMS: 0, LogVerdict.VIOLATES: 1, LogVerdict.INCONCLUSIVE: 3}


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "validate",
        help="check intent logs against the protocol (exit 0/1/3, 2 bad input)",
        description="Check JSON Lines intent logs (see spec/log.schema.json): every transition "
        "is an edge of the spec graph on one chain per key, no intent takes effect twice "
        "(I1/P1), P2, P3, P4, fencing, canonical intent identity, and completeness. Clocks are "
        "never trusted. Exit 0 CONFORMS, 1 VIOLATES, 3 INCONCLUSIVE, 2 bad input.",
    )
    p.add_argument(
        "logs",
        nargs="+",
        metavar="LOG",
        help="log files (plain or gzip; '-' reads stdin); one writer may span files",
    )
    p.add_argument(
        "--format",
        choices=sorted([*RENDERERS, "html"]),
        default="text",
        help="text (explanations), json, mermaid (sequence diagrams), or html (one "
        "self-contained page: a timeline per writer, each event with its file:line)",
    )
    p.add_argument(
        "--max-line-bytes",
        type=int,
        default=None,
        metavar="N",
        help=f"reject longer lines (default {DEFAULT_MAX_LINE_BYTES}; with --from, "
        "no limit unless given)",
    )
    p.add_argument(
        "--key",
        action="append",
        default=[],
        metavar="K",
        help="focus on key K: only its findings, and its full history in mermaid (repeatable)",
    )
    p.add_argument("-o", "--output", metavar="FILE", help="write the report here (atomically)")
    least = pool.DEFAULT_SHARD_MIN_BYTES if pool.SHARD_MIN_BYTES is None else pool.SHARD_MIN_BYTES
    p.add_argument(
        "--jobs",
        type=int,
        default=None,
        metavar="N",
        help="parallel workers; here a worker is a process checking one shard "
        f"(by key) of a large log (regular files of at least {least >> 20} MiB); 1 "
        f"checks in this one (default: the cores available, {pool.cores()}); the "
        "report is the same",
    )
    p.add_argument(
        "--engine",
        choices=("local", "dask"),
        default="local",
        help="local: this machine's processes (default); dask: N shards on a Dask "
        "cluster, for logs beyond one machine (needs the extra: pip install "
        "'toolcommit[distributed]')",
    )
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="with --engine dask: the scheduler to use (e.g. tcp://10.0.0.5:8786); "
        "default: a cluster on this machine's loopback for the run",
    )
    validate_design.add_arguments(p)
    validate_from.add_arguments(p)
    return p


def _hinted(e: InputError, logs) -> InputError:
    """`e`, with a hint when the file it names looks like a trace (read it with --from)."""
    from toolcommit.checker.logs.adapters.sniff import INTENT_LOG_DB, looks_like

    source = looks_like(e.path) if e.path in logs else None
    if source is None:
        return e
    hinted = InputError("", e.path, e.line)
    if source == INTENT_LOG_DB:
        hinted.args = (
            f"{e.path}: this is the intent log library's database, not its log "
            f"as JSON Lines: write the log with `toolcommit export {e.path} -o "
            "intents.jsonl`, then validate intents.jsonl",
        )
        return hinted
    hinted.args = (
        f"{e}; the file looks like what --from {source} reads, not an intent "
        f"log: add --from {source}",
    )
    return hinted


def _join_ledgers(args):
    """The ledgers' effects joined to the log's keys, refusing what cannot honour them."""
    from toolcommit.checker.logs.adapters import intentlog

    if "-" in args.logs:
        raise UsageError(
            "--ledger reads the log twice (its keys, then the check): give "
            "the log as a file, not stdin ('-')"
        )
    if args.engine != "local" or args.scheduler:
        raise UsageError(
            "--ledger with an intent log is checked in this process, not on --engine dask"
        )
    if args.jobs not in (None, 1):
        raise UsageError(
            f"--jobs {args.jobs}: with --ledger the log is checked in this "
            "process; drop --jobs (or --jobs 1)"
        )
    limit = DEFAULT_MAX_LINE_BYTES if args.max_line_bytes is None else args.max_line_bytes
    check_paths(args.logs, limit)
    return intentlog.join(args.logs, args.ledger, limit)


def run(args) -> int:
    if args.output:  # before reading: the report never replaces a file it reads
        refuse_inputs(
            Path(args.output),
            [
                *args.logs,
                *args.ledger,
                *args.checkpoints,
                *args.run_items,
                *args.intent_logs,
                args.design,
            ],
            args.output,
        )
    claim = validate_design.claim(args) if args.design else None
    if args.source:
        if args.engine != "local" or args.scheduler:
            raise UsageError(
                "--engine dask checks intent logs; with --from, --emit the "
                "derived log and validate it with --engine dask"
            )
        if args.jobs not in (None, 1):
            raise UsageError(
                f"--jobs {args.jobs} shards intent logs; with --from the derived "
                "log is checked in this process: --emit it and validate it with "
                f"--jobs {args.jobs}"
            )
        return validate_from.run(args)
    validate_from.refuse_without_source(args)
    jobs = pool.cores() if args.jobs is None else args.jobs
    limit = DEFAULT_MAX_LINE_BYTES if args.max_line_bytes is None else args.max_line_bytes
    try:
        joined = _join_ledgers(args) if args.ledger else None
        report = validate(
            args.logs,
            limit,
            args.key,
            jobs=jobs,
            engine=args.engine,
            scheduler=args.scheduler,
            joined=(args.ledger, joined.effects) if joined else None,
        )
        if joined is not None:  # an effect no call explains never conforms
            report = with_findings(with_findings(report, *joined.orphans), joined.mismatched)
            if joined.missing and report.verdict is LogVerdict.CONFORMS:
                report = replace(report, verdict=LogVerdict.INCONCLUSIVE)
    except InputError as e:
        raise _hinted(e, args.logs) from None
    if args.key:
        wanted = set(args.key)
        kept = tuple(
            f
            for f in report.findings
            if f.key in wanted or any(k in wanted for k in f.key.split(" + "))
        )
        report = Report(
            report.verdict, kept, report.warnings, report.stats, 0, report.history, count(kept)
        )
    if claim is not None:
        report = validate_design.apply(report, args, claim, limit)
    code = EXIT_CODES[report.verdict]
    fmt = validate_from.base_format(args.format)
    text = RENDERERS[fmt](report, code)
    if joined is not None:
        text = validate_from.with_ledger(text, fmt, args.ledger, joined)
    text = validate_from.finish(report, text, args)
    if args.output:
        write_atomic(args.output, text, inputs=args.logs)
    else:
        sys.stdout.write(text)
    if args.output or args.format != "text":  # text output already lists them
        for w in report.warnings:
            print(visible(f"toolcommit: warning: {w}"), file=sys.stderr)
    _lane_note()
    return code


def _lane_note() -> None:
    """Say on stderr when the native lane was wanted but could not be used on this machine
    (asking for the Python core with TOOLCOMMIT_LANE=python is not worth a note, and a run
    that never wanted it, with --key, builds nothing to say so)."""
    module, why = lane.tried() or (True, "")
    if module is None and not why.startswith("TOOLCOMMIT_LANE"):
        print(
            f"toolcommit: note: the Python core checked the log, about twice as slowly, "
            f"because the native lane is unavailable: {why}",
            file=sys.stderr,
        )
