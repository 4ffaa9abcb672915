"""`toolcommit prove`: prove invariants for every depth of one instance (k-induction or PDR).

Exit codes: 0 every property proved, 1 one is violated (with a replayed counterexample),
3 one is unknown (with the reason), 2 bad usage.
"""

from __future__ import annotations

import sys
import time

from toolcommit.checker.cli.check import add_env_option, bounds_from, config_from
from toolcommit.checker.cli.exits import EXIT
from toolcommit.checker.cli.terminal import Progress, width
from toolcommit.checker.engines.base import Limits, Tick
from toolcommit.checker.engines.portfolio import for_prove
from toolcommit.checker.engines.smt import METHODS
from toolcommit.checker.engines.verdict import overall
from toolcommit.checker.render.proof import render_proof_json, render_proof_text
from toolcommit.model.environment import instance_in
from toolcommit.model.errors import UsageError
from toolcommit.model.instance import instance, instance_names
from toolcommit.model.knobs import PRESETS
from toolcommit.model.properties import state_predicates
from toolcommit.model.semantics import build

INVARIANTS = state_predicates()


def add_parser(sub):
    p = sub.add_parser(
        "prove",
        help="prove invariants for all depths (k-induction or PDR)",
        description="Unbounded proofs with z3: strengthening lemmas from "
        "spec/lemmas.json (kept only if they are themselves inductive), BMC for "
        "the base case, k-induction; or z3 Spacer (PDR). A violation found on the "
        "way is a shortest counterexample, replayed through the model.",
    )
    p.add_argument(
        "--preset",
        default="recommended",
        choices=PRESETS,
        help="starting policy (default: %(default)s)",
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
        help=f"instance (default: default); one of: {', '.join(instance_names())}",
    )
    p.add_argument(
        "--bounds",
        metavar="NAME=N,...",
        help="override workers, max_fence or fault budgets, e.g. workers=3,crashes=2",
    )
    add_env_option(p)
    p.add_argument(
        "--property",
        action="append",
        metavar="P",
        help=f"invariant to prove (repeatable; default all: {', '.join(INVARIANTS)})",
    )
    p.add_argument(
        "--method",
        choices=METHODS,
        default="kind",
        help="kind: lemmas + BMC + k-induction (default); pdr: z3 Spacer",
    )
    p.add_argument(
        "--max-k",
        type=int,
        default=12,
        help="deepest BMC base case and induction step (default: %(default)s)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="the whole command's wall-clock limit (verdict "
        "UNKNOWN; default: %(default)s, no limit)",
    )
    p.add_argument("--format", choices=("text", "json"), default="text")
    return p


def run(args) -> int:
    props = list(dict.fromkeys(args.property or INVARIANTS))
    bad = [p for p in props if p not in INVARIANTS]
    if bad:
        raise UsageError(
            f"prove takes invariants; unknown {bad[0]!r}; valid: {', '.join(INVARIANTS)}"
        )
    engine = for_prove(args.method, args.max_k)
    limits = Limits(0, args.timeout)
    config = config_from(args)
    names_ = list(dict.fromkeys(args.instance or ["default"]))
    if len(names_) > 1:
        raise UsageError(
            f"prove takes one --instance, got {', '.join(names_)}; run it once per instance"
        )
    inst = instance_in(instance(names_[0]), config.env).with_bounds(bounds_from(args))
    system = build(config, inst)
    t0 = time.perf_counter()
    progress = Progress()
    verdicts = engine.run(system, props, limits, _steps(progress)).verdicts
    progress.close()
    seconds = time.perf_counter() - t0
    if args.format == "json":
        sys.stdout.write(
            render_proof_json(config, inst, args.method, args.max_k, verdicts, seconds)
        )
    else:
        sys.stdout.write(render_proof_text(config, inst, args.method, verdicts, seconds, width()))
    return EXIT[overall(verdicts)]


def _steps(progress: Progress):
    """The prover's ticks (a phase and the step it reached) as progress lines."""

    def tick(t: Tick) -> None:
        progress.show(f"  [{t.phase}] step {t.depth}, {progress.elapsed():.0f}s")

    return tick
