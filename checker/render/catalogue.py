"""The stored counterexample catalogue: `counterexamples/<config>/<instance>/<property>.*`.

Deterministic: the same model gives the same bytes (no timings, sorted keys where order
is free). Writing one (`write_catalogue`) touches only what the run produced: the files of
its instances and properties and their index entries; entries and files of other
instances stay. A file is removed only if the folder's `index.json`, which toolcommit
writes, records it as produced and the new index no longer does. A run with bounds other
than the instances' defaults goes to its own folder, `<config>@<bound>=<n>,...`, so it
never overwrites the default catalogue. Each file is replaced atomically (`write_tree`).
"""

from __future__ import annotations

import json
from pathlib import Path

from toolcommit.checker.engines.verdict import Status
from toolcommit.checker.output import write_tree
from toolcommit.checker.render.counterexample import itf_json, render_mermaid, render_text
from toolcommit.checker.verify.suite import SuiteResult
from toolcommit.model.errors import OutputError
from toolcommit.model.instance import instance
from toolcommit.model.knobs import bearing, stored_assumptions, stored_knobs
from toolcommit.model.properties import default_names


def files_for(suite: SuiteResult) -> dict[str, str]:
    """Relative path -> content for every counterexample in `suite`, plus an index."""
    files: dict[str, str] = {}
    index = {
        "config": suite.config.label(),
        "knobs": stored_knobs(bearing(suite.config.knobs, [r.instance for r in suite.results])),
        "assumptions": stored_assumptions(suite.config.assumptions),
        "instances": {},
    }
    bounds = changed_bounds(suite)
    if bounds:
        index["bounds"] = bounds
    for r in suite.results:
        entry = {"states": r.stats["states"], "depth": r.stats["depth"], "verdicts": {}}
        for v in r.verdicts:
            entry["verdicts"][v.property] = _verdict_entry(v)
            if v.counterexample is not None:
                _add(files, f"{r.instance.name}/{v.property}", v.counterexample)
        index["instances"][r.instance.name] = entry
    if suite.p5 is not None:
        index["P5"] = _verdict_entry(suite.p5)
        if suite.p5.counterexample is not None:
            _add(files, "personalities/P5", suite.p5.counterexample)
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


def _add(files: dict, stem: str, cx) -> None:
    files[f"{stem}.itf.json"] = itf_json(cx)
    files[f"{stem}.txt"] = render_text(cx)
    files[f"{stem}.mmd"] = render_mermaid(cx)


def changed_bounds(suite: SuiteResult) -> dict[str, int]:
    """The bounds of `suite`'s instances that differ from their defaults (a missing fault
    budget counts as 0); empty for a run with the default bounds."""
    out: dict[str, int] = {}
    for r in suite.results:
        default = instance(r.instance.name).bounds()
        for name, value in r.instance.bounds().items():
            if default.get(name, 0) != value:
                out[name] = value
    return out


def catalogue_label(suite: SuiteResult) -> str:
    """The folder name of `suite`'s catalogue: the config label, plus `@name=n,...` (sorted)
    for bounds that differ from the defaults, e.g. `naive@crashes=2,workers=3`."""
    bounds = changed_bounds(suite)
    return suite.config.label() + (
        "@" + ",".join(f"{k}={v}" for k, v in sorted(bounds.items())) if bounds else ""
    )


def recorded(index: dict) -> set[str]:
    """The files a catalogue `index` records as produced: `index.json`, and the three
    renderings of every VIOLATED verdict (the only verdicts with a counterexample)."""
    out = {"index.json"}
    for name, entry in index.get("instances", {}).items():
        for prop, v in entry.get("verdicts", {}).items():
            if "steps" in v:
                out |= _renderings(f"{name}/{prop}")
    if "steps" in index.get("P5", {}):
        out |= _renderings("personalities/P5")
    return out


def _renderings(stem: str) -> set[str]:
    return {f"{stem}.itf.json", f"{stem}.txt", f"{stem}.mmd"}


def merge(old: dict | None, new: dict, props) -> dict:
    """The index after writing a run with index `new` (over properties `props`) into a
    catalogue with index `old`: the run's instances replace theirs (only the verdicts of
    `props`, when the run checked a subset); other instances, and P5 when the run did not
    check it, stay as they were. Its knobs are those that bear on any instance it records
    (the union of both: one config, so they agree)."""
    if old is None:
        return new
    instances = dict(old.get("instances", {}))
    every = set(default_names()) <= set(props)
    for name, entry in new["instances"].items():
        if every or name not in instances:
            instances[name] = entry
        else:
            instances[name] = {
                **entry,
                "verdicts": {**instances[name].get("verdicts", {}), **entry["verdicts"]},
            }
    index = {
        **new,
        "knobs": {**old.get("knobs", {}), **new.get("knobs", {})},
        "instances": instances,
    }
    if "P5" not in new and "P5" in old:
        index["P5"] = old["P5"]
    return index


def write_catalogue(root, suite: SuiteResult) -> Path:
    """Write `suite`'s catalogue into `root/<catalogue_label>`, merged with what is there
    (see `merge`); returns that folder. Raises `OutputError` if the folder holds another
    configuration's catalogue or an index that is not toolcommit's."""
    folder = Path(root) / catalogue_label(suite)
    files = files_for(suite)
    new = json.loads(files.pop("index.json"))
    old = _stored_index(
        folder,
        lambda doc: (
            doc.get("config") == new["config"] and doc.get("bounds", {}) == new.get("bounds", {})
        ),
    )
    index = merge(old, new, suite.props)
    files["index.json"] = json.dumps(index, indent=2, sort_keys=True) + "\n"
    stale = recorded(old) - recorded(index) if old else set()
    return write_tree(folder, files, stale)


def write_question(folder, files: dict, inputs=()) -> Path:
    """Write a question's counterexample `files` (with their `index.json`) into `folder`,
    removing the files an earlier answer of the same question recorded and this one does not."""
    new = json.loads(files["index.json"])
    old = _stored_index(Path(folder), lambda doc: doc.get("question") == new["question"])
    stale = (
        {"index.json"}
        | {f"{stem}{ext}" for stem in old.get("cells", {}) for ext in (".itf.json", ".txt", ".mmd")}
        if old
        else set()
    )
    return write_tree(folder, files, stale - set(files), inputs)


def _stored_index(folder: Path, ours) -> dict | None:
    """The `index.json` toolcommit wrote in `folder`, None if there is none; `OutputError`
    if it is unreadable or `ours(index)` says it belongs to another catalogue."""
    path = folder / "index.json"
    try:
        doc = json.loads(path.read_text("utf-8"))
    except (FileNotFoundError, NotADirectoryError):
        return None  # no catalogue yet (or a file in the way: write_tree says so)
    except (OSError, ValueError) as e:
        raise OutputError(
            str(folder),
            f"its index.json is not a toolcommit index ({e})",
            "choose another --out, or move that folder away",
        ) from None
    if not isinstance(doc, dict) or not ours(doc):
        raise OutputError(
            str(folder),
            "it holds another catalogue (see its index.json)",
            "choose another --out, or move that folder away",
        )
    return doc
