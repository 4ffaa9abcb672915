"""The stored counterexample catalogue: `counterexamples/<config>/<instance>/<property>.*`.

Deterministic: the same model gives the same bytes (no timings, sorted keys where order
is free). A catalogue is written to a temporary folder and renamed into place, so a
half-written catalogue never stands where a complete one is expected.
"""
from __future__ import annotations

import json
from pathlib import Path

from toolcommit.model.semantics import build

from toolcommit.checker.verify.hyper import personality_instance
from toolcommit.checker.output import write_tree
from toolcommit.checker.render.counterexample import itf_json, render_mermaid, render_text
from toolcommit.checker.verify.suite import SuiteResult
from toolcommit.checker.engines.verdict import Status


def files_for(suite: SuiteResult) -> dict[str, str]:
    """Relative path -> content for every counterexample in `suite`, plus an index."""
    files: dict[str, str] = {}
    index = {"config": suite.config.label(), "knobs": dict(suite.config.knobs),
             "assumptions": dict(suite.config.assumptions), "instances": {}}
    for r in suite.results:
        system = build(suite.config, r.instance)
        entry = {"states": r.stats["states"], "depth": r.stats["depth"], "verdicts": {}}
        for v in r.verdicts:
            entry["verdicts"][v.property] = _verdict_entry(v)
            if v.counterexample is not None:
                _add(files, f"{r.instance.name}/{v.property}", v.counterexample, system)
        index["instances"][r.instance.name] = entry
    if suite.p5 is not None:
        index["P5"] = _verdict_entry(suite.p5)
        if suite.p5.counterexample is not None:
            inst = personality_instance(suite.p5.extra["personalities"][0])
            _add(files, "personalities/P5", suite.p5.counterexample, build(suite.config, inst))
    files["index.json"] = json.dumps(index, indent=2, sort_keys=True) + "\n"
    return files


def _verdict_entry(v) -> dict:
    out = {"status": v.status.value}
    if v.status is Status.VIOLATED:
        out["steps"] = v.counterexample.length
    if v.scope:
        out["scope"] = v.scope
    if v.reason:
        out["reason"] = v.reason
    return out


def _add(files: dict, stem: str, cx, system) -> None:
    files[f"{stem}.itf.json"] = itf_json(cx, system)
    files[f"{stem}.txt"] = render_text(cx, system)
    files[f"{stem}.mmd"] = render_mermaid(cx, system)


def write_catalogue(root, suite: SuiteResult) -> Path:
    """Replace `root/<config label>` with the catalogue of `suite`; returns that folder."""
    return write_tree(Path(root) / suite.config.label(), files_for(suite))
