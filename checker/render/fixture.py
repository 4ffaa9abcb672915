"""The article's fixture itself, in words (`toolcommit check --preset seed`): its flaws with
their article lines, and what its own acceptance run can and cannot see."""

from __future__ import annotations

from toolcommit.checker.verify.fixture import FixtureRun, Flaw, manifest


def render_fixture_text(run: FixtureRun, flaws: list[Flaw]) -> list[str]:
    src = manifest()["source"]
    lines = [
        "",
        f"The article's fixture itself ({src['article']}, lines {src['lines'][0]}-"
        f"{src['lines'][1]}), beyond what the instances above show:",
    ]
    for f in flaws:
        lines.append(
            f"  line{'s' if len(f.lines) > 1 else ''} {', '.join(map(str, f.lines))}: {f.what}"
        )
        lines.append(f"    shown {f.evidence}")
    n = len(run.injections)
    classes = [i.name for i in run.injections if i.name != "none"]
    lines.append(
        f"  Run as the article suggests (line {manifest()['suggests']['line']}: {run.seeds:,} "
        f"seeds x {n} inject values, {', '.join(classes)} and none; "
        f"{run.seeds * n:,} runs): {run.violations} violation(s) of effects <= 1."
    )
    if run.seed_blind:
        lines.append(
            "    every seed gives the same run: `rng=random.Random(seed)` (line 97) is "
            "never used, so the seed set is one run, not a denominator"
        )
    if run.no_injector:
        lines.append(
            f"    no injector for {', '.join(run.no_injector)}: `run` (lines 96-114) never "
            "tests for them, so their runs are the uninjected one"
        )
    if run.unobservable:
        lines.append(
            f"    {', '.join(run.unobservable)} is injected (lines 108-110) but ends exactly "
            "as the uninjected run: the canary cannot tell whether it happened"
        )
    return lines


def fixture_json(run: FixtureRun, flaws: list[Flaw]) -> dict:
    return {
        "seeds": run.seeds,
        "runs": run.seeds * len(run.injections),
        "violations": run.violations,
        "seed_blind": run.seed_blind,
        "no_injector": run.no_injector,
        "unobservable": run.unobservable,
        "flaws": [
            {"name": f.name, "lines": list(f.lines), "what": f.what, "evidence": f.evidence}
            for f in flaws
        ],
    }
