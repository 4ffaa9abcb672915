"""`toolcommit ask QUESTION`: a design question answered by the engines.

QUESTION is a built-in name (`toolcommit ask --list`) or a path to a question JSON file.
Prints the grid (rows the options, columns the assumptions or situations) and the answer
in words, citing shortest counterexamples. With `--env NAME` (a profile other than ideal) the
grid keeps only the cells that are worlds of the profile, the question is answered under
ideal too, and the output says which cells differ and which documented behaviour makes each
difference (`toolcommit.checker.design.changes`). `--set` changes every cell as `check --set`
does. Exit codes (`exits.ASK_DESIGN_CODES`): 0 a cell holds (an answer that holds was found),
1 none holds (every judged cell VIOLATED), 3 a cell is UNKNOWN (undecided), 2 bad input.

Limits: `--max-states` and `--run-timeout` (per engine run) are honoured. Without them, a
search that stops at the question's limits hands the open invariants to bounded SMT; with
them, it does so only if `--bmc-depth` is given too (each SMT run then lasts at most
`--run-timeout` seconds), and the output names the depth and time of that fallback.
`--timeout` is the whole command's wall-clock limit: each run's limits are cut to the time
left, and does not turn the fallback off. See `toolcommit.checker.design.question.Limits`.
"""

from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

from toolcommit.checker.cli.check import add_env_option, add_out_dir
from toolcommit.checker.cli.exits import ASK_DESIGN_CODES, answer_exit
from toolcommit.checker.cli.terminal import Progress, width
from toolcommit.checker.design.question import Limits, with_settings
from toolcommit.checker.design.run import answer
from toolcommit.checker.design.schema import builtin_names, load_question
from toolcommit.checker.output import write_atomic
from toolcommit.checker.render.answers import (
    counterexample_files,
    render_answer_json,
    render_answer_markdown,
    render_answer_text,
)
from toolcommit.checker.render.catalogue import write_question
from toolcommit.checker.render.fit import fit, wrap_line
from toolcommit.model.environment import profile as env_profile
from toolcommit.model.errors import UsageError
from toolcommit.model.knobs import parse_settings


def add_parser(sub):
    p = sub.add_parser(
        "ask",
        help="answer a design question with the engines (a grid of verdicts)",
        description="Run every combination of a design question (a knob's options "
        "by environment assumptions, on a scenario) through the engines and print "
        "the grid plus the answer in words, citing shortest counterexamples.",
        epilog=ASK_DESIGN_CODES,
    )
    p.add_argument(
        "question",
        nargs="?",
        metavar="QUESTION",
        help="a built-in question (see --list) or a path to a question JSON file",
    )
    p.add_argument("--list", action="store_true", help="list the built-in questions and exit")
    p.add_argument(
        "--format",
        choices=("text", "markdown", "json", "html"),
        default="text",
        help="html: one self-contained page, the grid as a coloured matrix whose "
        "cells link to their counterexamples, drawn as sequence diagrams",
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write the answer here (atomically, in --format; markdown links "
        "relative to FILE), not to stdout",
    )
    p.add_argument(
        "--write",
        action="store_true",
        help="store the counterexamples in the repository's place: under "
        "--out-dir/questions/<question>/",
    )
    add_out_dir(p, "--write")
    p.add_argument(
        "--answer",
        metavar="FILE",
        help="also write the markdown answer to FILE (links relative to FILE)",
    )
    d = Limits()
    p.add_argument(
        "--max-states",
        type=int,
        metavar="N",
        help=f"explicit-engine state limit per run (default: the question's, else "
        f"{d.max_states}; 0 = none). Setting it (or --run-timeout) turns the SMT fallback "
        "off unless --bmc-depth is given: a stopped search is then UNKNOWN",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="the whole command's wall-clock limit: every search still running "
        "then stops, its cell UNKNOWN (default: %(default)s, no limit)",
    )
    p.add_argument(
        "--run-timeout",
        type=float,
        metavar="SECONDS",
        help=f"seconds per engine run, explicit and SMT fallback (default: the "
        f"question's, else {d.timeout:g}; 0 = none)",
    )
    p.add_argument(
        "--bmc-depth",
        type=int,
        metavar="K",
        help=f"depth of the SMT fallback that judges the invariants a stopped explicit "
        f"search left open (default: the question's, else {d.bmc_depth})",
    )
    add_env_option(p)
    p.add_argument(
        "--set",
        action="append",
        metavar="NAME=VALUE",
        help="change a knob, environment assumption, timing number or environment fault "
        "budget in every cell (repeatable), as `check --set` does; e.g. key_lifetime=1h. "
        "A setting the question's grid varies is refused",
    )
    return p


def run(args) -> int:
    if args.list:
        for name in builtin_names():  # each title wrapped under itself
            print("\n".join(wrap_line(f"{name:<20} {load_question(name).title}", width(), 21)))
        return 0
    if not args.question:
        raise UsageError(
            "ask needs a QUESTION: one of "
            + ", ".join(builtin_names())
            + ", or a path to a question JSON file"
        )
    q = load_question(args.question)
    lim = {
        k: v
        for k, v in (
            ("max_states", args.max_states),
            ("timeout", args.run_timeout),
            ("bmc_depth", args.bmc_depth),
        )
        if v is not None
    }
    for name, value in [*lim.items(), ("whole_timeout", args.timeout)]:
        if not math.isfinite(value) or value < 0:
            flag = {"timeout": "run-timeout", "whole_timeout": "timeout"}.get(name, name)
            raise UsageError(
                f"--{flag.replace('_', '-')} must be a number >= 0 (0 = no limit), got {value:g}"
            )
    if lim:
        q = replace(q, limits=q.limits.override(**lim))
    if args.env != "ideal":
        env_profile(args.env)
        q = replace(q, env=args.env, name=f"{q.name}@{args.env}")
    if args.set:
        q = with_settings(q, parse_settings(args.set))
    progress = Progress()
    a = answer(q, progress, time.monotonic() + args.timeout if args.timeout else 0.0)
    progress.close()
    folder = Path(args.out_dir) / "questions" / q.name
    files = counterexample_files(a)
    stems = {c.stem for c in a.violated_cells()}
    if args.write:
        write_question(folder, files, inputs=(args.question,))
        print(f"wrote {folder}", file=sys.stderr)
    if args.answer:
        target = Path(args.answer)
        write_atomic(
            target,
            render_answer_markdown(a, answer_links(folder, target, stems)),
            inputs=(args.question,),
        )
        print(f"wrote {target}", file=sys.stderr)
    links = (
        {s: (folder / f"{s}.txt").as_posix() for s in stems}
        if not args.output
        else answer_links(folder, Path(args.output), stems)
    )
    if args.format == "text":
        out = render_answer_text(a, links, width())
        if stems and not args.write:
            out += fit(
                f"(counterexample files not written; add --write to store them under "
                f"{folder.as_posix()})\n",
                width(),
            )
    elif args.format == "html":
        from toolcommit.checker.render.html.ask import render_ask_html

        out = render_ask_html(a, render_answer_json(a, links))
    else:
        out = {"markdown": render_answer_markdown, "json": render_answer_json}[args.format](
            a, links
        )
    if args.output:
        write_atomic(args.output, out, inputs=(args.question,))
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(out)
    return answer_exit(c.status for c in a.cells.values())


def answer_links(folder: Path, answer_file: Path, stems) -> dict:
    """Links from a markdown answer stored at `answer_file` to the `.txt` counterexamples
    stored in `folder` (relative, with forward slashes)."""
    rel = os.path.relpath(Path(folder).absolute(), Path(answer_file).absolute().parent)
    return {s: Path(rel, f"{s}.txt").as_posix() for s in sorted(stems)}
