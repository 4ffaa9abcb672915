"""`toolcommit design --env NAME|FILE`: what a team must build to be safe in an environment.

Exit codes (`exits.ASK_DESIGN_CODES`): 0 a design keeps a guarantee (printed with why each of its departures from
naive is needed; with --write, stored as a design file), 1 the search was whole and none
holds (the weakest environment promises that make one hold are printed, if found), 3 a
limit (--timeout, --max-states) left it open: nothing unconfirmed is reported, 2 bad usage.
"""

from __future__ import annotations

import sys

from toolcommit.checker.cli import flags
from toolcommit.checker.cli.check import add_env_option
from toolcommit.checker.cli.exits import ASK_DESIGN_CODES
from toolcommit.checker.cli.terminal import Progress, width
from toolcommit.checker.design.file import document_text
from toolcommit.checker.design.summary import summarize
from toolcommit.checker.design.synthesis import DEFAULT_PROPS, synthesize
from toolcommit.checker.engines.base import Limits
from toolcommit.checker.engines.verdict import Status
from toolcommit.checker.output import write_atomic
from toolcommit.checker.render.design import render_json, render_text
from toolcommit.checker.verify.suite import design_names
from toolcommit.model.errors import UsageError
from toolcommit.model.instance import instance_names
from toolcommit.model.knobs import parse_settings


def add_parser(sub):
    p = sub.add_parser(
        "design",
        help="search the knob combinations for the minimal designs "
        "that keep the properties in an environment",
        description="Judge recommended and every design one knob away, minimize "
        "each that holds toward naive, and print the minimal designs with the "
        "counterexample for every departure turned back; or, when none holds, the "
        "weakest environment promises under which one does.",
        epilog=ASK_DESIGN_CODES,
    )
    add_env_option(p)
    p.add_argument(
        "--instance",
        action="append",
        metavar="NAME",
        help="instance to judge on (repeatable; default: default, every failure "
        f"class and the stress instance, every fault combined); one of: {', '.join(instance_names())}",
    )
    p.add_argument(
        "--property",
        action="append",
        metavar="P",
        help=f"property every design must keep (repeatable; default: {', '.join(DEFAULT_PROPS)}; "
        "add P2, LEGAL or FENCE to require the article's mechanism too)",
    )
    p.add_argument(
        "--max-states",
        type=int,
        default=0,
        help="per instance and design: stop after N states (that design does not hold)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=600.0,
        metavar="SECONDS",
        help="the whole command's wall-clock limit (default: %(default)s; 0: none)",
    )
    p.add_argument(
        "--set",
        action="append",
        metavar="NAME=VALUE",
        help="change an environment assumption or timing number of the profile "
        "(repeatable), e.g. delay_bound=48h: what if the delay outlived the key?",
    )
    p.add_argument(
        "--format",
        choices=("text", "json", "html"),
        default="text",
        help="html: one self-contained page, the design table with each "
        "departure's counterexample as a sequence diagram",
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="store the design to build first (the first minimal design that needs no human "
        "at the approval gate) as a design file, "
        "for `toolcommit check --design FILE` and toolcommit.runtime",
    )
    flags.alias(p, "--write", "--output")
    p.add_argument(
        "--explain",
        choices=("first", "all", "none"),
        default="all",
        help="which counterexamples to print step by step: the first one, all "
        "(default) or none (only each one's length)",
    )
    return p


def run(args) -> int:
    if args.output is not None and not args.output.strip():
        raise UsageError("-o/--output: give the design file's name (it was empty)")
    if args.max_states < 0:
        raise UsageError(f"--max-states {args.max_states}: give 0 (no limit) or a positive number")
    if not args.timeout >= 0 or args.timeout == float("inf"):
        raise UsageError(
            f"--timeout must be a number of seconds >= 0 (0: no limit), not {args.timeout:g}"
        )
    names = list(dict.fromkeys(args.instance or design_names()))
    Limits(args.max_states, args.timeout)  # both range-checked before any search
    progress = Progress()
    s = synthesize(
        args.env,
        names,
        args.property,
        Limits(args.max_states, 0.0),
        args.timeout,
        progress.design,
        parse_settings(args.set),
    )
    progress.close()
    if args.output and s.status is Status.HOLDS:
        write_atomic(args.output, document_text(s))
        print(f"wrote {args.output}", file=sys.stderr)
    elif args.output:
        print(
            f"toolcommit design: nothing written to {args.output}: no design was confirmed",
            file=sys.stderr,
        )
    sm = summarize(s)  # decided here; the renderers format it
    if args.format == "text":
        out = render_text(sm, args.explain, width())
    else:
        out = render_json(sm)
        if args.format == "html":
            from toolcommit.checker.render.html.design import render_design_html

            out = render_design_html(sm, out)
    sys.stdout.write(out)
    return {Status.HOLDS: 0, Status.VIOLATED: 1, Status.UNKNOWN: 3}[s.status]
