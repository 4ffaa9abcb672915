"""Expected results, recorded as data beside the spec: `spec/expected.json`.

For every preset and every instance of the default suite: the distinct-state count, the
depth, and each property's verdict (with the shortest counterexample's length). Tests
recompute it and compare; a model change that moves a count must move this file in the
same commit. Regenerate with `python -m toolcommit.checker.verify.manifest --write`.
"""
from __future__ import annotations

import json
import sys
from importlib import resources

from toolcommit.model.knobs import PRESETS, preset

from toolcommit.checker.output import write_atomic
from toolcommit.checker.verify.suite import SuiteResult, resolve_instances, run_suite
from toolcommit.checker.engines.verdict import Status

MANIFEST = "expected.json"


def _cell(v) -> str:
    if v.status is Status.VIOLATED:
        return f"VIOLATED in {v.counterexample.length}"
    return v.status.value


def entry(suite: SuiteResult) -> dict:
    out = {}
    for r in suite.results:
        out[r.instance.name] = {"states": r.stats["states"], "transitions": r.stats["transitions"],
                                "depth": r.stats["depth"],
                                "verdicts": {v.property: _cell(v) for v in r.verdicts}}
    if suite.p5 is not None:
        out["P5"] = _cell(suite.p5)
    return out


def compute(suites: dict | None = None) -> dict:
    """The manifest for every preset (pass precomputed suites to avoid rerunning)."""
    suites = suites or {p: run_suite(preset(p), resolve_instances(None, {})) for p in PRESETS}
    return {"about": "expected results of `toolcommit check --preset P` (generated; do not edit)",
            "presets": {p: entry(s) for p, s in suites.items()}}


def stored() -> dict:
    return json.loads(resources.files("toolcommit.spec").joinpath(MANIFEST).read_text("utf-8"))


def dumps(doc: dict) -> str:
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    doc = compute()
    if "--write" in argv:
        path = resources.files("toolcommit.spec").joinpath(MANIFEST)
        write_atomic(str(path), dumps(doc))
        print(f"wrote {path}")
    else:
        sys.stdout.write(dumps(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
