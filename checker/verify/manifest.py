"""Expected results, recorded as data beside the spec: `spec/expected.json`.

For every preset and every instance of the default suite: the distinct-state count, the
depth, and each property's verdict (with the shortest counterexample's length). Tests
recompute it and compare; a model change that moves a count must move this file in the
same commit. Regenerate with `python -m toolcommit.checker.verify.manifest --write`; to
search every shipped design (spec/designs/ENV.json, which the profiles' entries judge) again
first, `python -m toolcommit.checker.design.regenerate` (it runs the design search, a layer
above this one, then writes this manifest).
"""

from __future__ import annotations

import json
import sys
from importlib import resources

from toolcommit.checker.engines.verdict import Status
from toolcommit.checker.output import write_atomic
from toolcommit.checker.verify.suite import SuiteResult, resolve_instances, run_suite
from toolcommit.model.environment import config_for, configure, names
from toolcommit.model.knobs import PRESETS, preset

MANIFEST = "expected.json"


def _cell(v) -> str:
    if v.status is Status.VIOLATED:
        return f"VIOLATED in {v.counterexample.length}"
    return v.status.value


def entry(suite: SuiteResult) -> dict:
    out = {}
    for r in suite.results:
        out[r.instance.name] = {
            "states": r.stats["states"],
            "transitions": r.stats["transitions"],
            "depth": r.stats["depth"],
            "verdicts": {v.property: _cell(v) for v in r.verdicts},
        }
    if suite.p5 is not None:
        out["P5"] = _cell(suite.p5)
    return out


def compute(suites: dict | None = None, profiles: bool = True) -> dict:
    """The manifest for every preset (pass precomputed suites to avoid rerunning) and, with
    `profiles`, for every environment profile (`profile_entries`)."""
    suites = suites or {p: run_suite(preset(p), resolve_instances(None, {})) for p in PRESETS}
    doc = {"about": ABOUT, "presets": {p: entry(s) for p, s in suites.items()}}
    if profiles:
        doc["profiles"] = profile_entries()
    return doc


ABOUT = (
    "expected results of `toolcommit check --preset P` (presets: the ideal environment) "
    "and of `toolcommit check --env ENV` (profiles: each preset on every failure class; "
    "recommended and the profile's shipped design, spec/designs/ENV.json, on the default "
    "instance too, and the design on the stress instance, what `design` judged it on; "
    "naive's and seed's default searches are benchmarks, not manifest entries: "
    "naive@stripe default has 45,795,061 states) (generated; do not edit)"
)


def profile_configs(env: str) -> list[tuple]:
    """(label, config, instances) recorded for environment `env`."""
    from toolcommit.checker.verify.suite import design_names, suite_names
    from toolcommit.model.design_file import checked, strict_json

    classes = [n for n in suite_names() if n != "default"]
    out = [
        (p, configure(preset(p), env), classes if p != "recommended" else suite_names())
        for p in PRESETS
    ]
    shipped = resources.files("toolcommit.spec").joinpath("designs", f"{env}.json")
    if shipped.is_file():
        where = f"spec/designs/{env}.json"
        read = checked(strict_json(shipped.read_bytes(), where), where)  # the one reader
        design, denv = read.design, read.environment
        out.append((f"design:{env}", config_for(design, denv), design_names()))
    return out


def profile_entries() -> dict:
    out = {}
    for env in names():
        if env == "ideal":
            continue
        out[env] = {}
        for label, cfg, insts in profile_configs(env):
            suite = run_suite(cfg, resolve_instances(insts, {}, env))
            out[env][label] = entry(suite)
    return out


def stored() -> dict:
    return json.loads(resources.files("toolcommit.spec").joinpath(MANIFEST).read_text("utf-8"))


def dumps(doc: dict) -> str:
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--designs" in argv:  # the design search sits above this module
        print(
            "--designs: search the shipped designs again, then write this manifest, with "
            "python -m toolcommit.checker.design.regenerate",
            file=sys.stderr,
        )
        return 2
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
