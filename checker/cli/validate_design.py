"""`toolcommit validate --design FILE LOG...`: the log against the design it claims to run.

Every logged step must be one the design allows, knob by knob (`toolcommit.checker.logs.
refine`); a departure is a ``DESIGN`` finding, and the report gains the design's coverage
table (which of its actions and fault paths the logs took). FILE is a design file
(``toolcommit design -o FILE``) or a shipped design's name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolcommit.model.errors import UsageError
from toolcommit.spec import SHIPPED_DESIGNS

if TYPE_CHECKING:  # imported where a design is checked: a plain log's check needs neither
    from toolcommit.checker.logs.claim import Claim
    from toolcommit.runtime import design as D


def add_arguments(p) -> None:
    p.add_argument(
        "--design",
        metavar="FILE",
        help="also check that every logged step is one this design allows, knob by "
        f"knob, and show which of its paths the logs took (a design file, or one of "
        f"{', '.join(SHIPPED_DESIGNS)}); a departure is a DESIGN finding",
    )


def claim(args) -> Claim:
    """The design `args.design` names, refused in one line where it cannot be checked."""
    if args.source:
        raise UsageError(
            "--design checks intent logs; with --from, --emit the derived log "
            "and validate it with --design"
        )
    if "-" in args.logs:
        raise UsageError(
            "--design reads the log twice (the generic check, then the design's): "
            "give the log as a file, not stdin ('-')"
        )
    from toolcommit.runtime import design as D

    try:
        return claim_of(D.read(args.design))
    except D.DesignError as e:
        raise UsageError(f"--design {args.design}: {e}") from None


def claim_of(d: D.Design) -> Claim:
    """What `refine` judges a log against, of a read design."""
    from toolcommit.checker.logs.claim import Claim

    return Claim(
        d.source,
        d.environment,
        d.guarantee,
        dict(d.knobs),
        dict(d.provider),
        d.replay_window,
        d.delay_bound,
    )


def apply(report, args, the_claim: Claim, max_line_bytes: int):
    """`report` with the design's findings (only those on `args.key`, if given)."""
    from toolcommit.checker.logs import refinement

    dc = refinement.check(args.logs, the_claim, max_line_bytes, keep=frozenset(args.key))
    return refinement.with_design(report, dc.focus(args.key) if args.key else dc)
