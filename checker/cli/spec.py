"""`toolcommit spec`: print the protocol's state machines as text, Mermaid, DOT or JSON."""

from __future__ import annotations

import sys

from toolcommit.checker.cli.terminal import width
from toolcommit.checker.render.spec import RENDER, render_envs, render_text
from toolcommit.spec import protocol


def add_parser(sub):
    p = sub.add_parser(
        "spec",
        help="print the protocol's states, edges and properties",
        description="Print the spec graph (both lifecycles) and the properties.",
    )
    p.add_argument(
        "--format",
        choices=("text", "mermaid", "dot", "json", "knobs"),
        default="text",
        help="knobs: the policy knobs and presets as a Markdown table",
    )
    p.add_argument("--lifecycle", choices=("proposal", "record", "both"), default="both")
    p.add_argument(
        "--envs",
        action="store_true",
        help="list the environment profiles (spec/environments.json): what each sets "
        "and the public document each behaviour rests on",
    )
    return p


def _lifecycles(which: str):
    p = protocol()
    return [p.proposal, p.record] if which == "both" else [getattr(p, which)]


def run(args) -> int:
    if args.envs:
        sys.stdout.write(render_envs("json" if args.format == "json" else "text", width()))
        return 0
    lifecycles = _lifecycles(args.lifecycle)
    sys.stdout.write(
        render_text(lifecycles, width())
        if args.format == "text"
        else RENDER[args.format](lifecycles)
    )
    return 0
