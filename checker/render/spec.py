"""Renderers of the spec (`toolcommit spec`): both lifecycles and the properties as text,
Mermaid, DOT or JSON, and the knobs as a Markdown table. They only read `spec/`.
"""

from __future__ import annotations

import json

from toolcommit.checker.render.fit import DEFAULT, fit
from toolcommit.spec import protocol


def render_text(lifecycles, width: int = DEFAULT) -> str:
    """Each lifecycle's states and edges with their meanings, then the properties; no line
    wider than `width`."""
    p = protocol()
    out = []
    for life in lifecycles:
        out.append(f"{life.name} lifecycle: {life.meaning}")
        for state, meaning in life.states.items():
            mark = (
                " (terminal)"
                if state in life.terminal
                else " (initial)"
                if state == life.initial
                else ""
            )
            out.append(f"  {state}{mark}: {meaning}")
        out.append("  edges:")
        for e in life.edges:
            out.append(f"    {e.source} -> {e.target} [{e.event}]: {e.meaning}")
        out.append("")
    out.append("properties:")
    out += [f"  {name}: {prop['meaning']}" for name, prop in p.properties.items()]
    return fit("\n".join(out) + "\n", width)


def render_mermaid(lifecycles) -> str:
    """A Mermaid state diagram, one composite state per lifecycle."""
    out = ["stateDiagram-v2"]
    for life in lifecycles:
        out.append(f"  state {life.name} {{")
        out.append(f"    [*] --> {life.name}_{life.initial}")
        for e in life.edges:
            out.append(f"    {life.name}_{e.source} --> {life.name}_{e.target}: {e.event}")
        for t in life.terminal:
            out.append(f"    {life.name}_{t} --> [*]")
        out.append("  }")
    return "\n".join(out) + "\n"


def render_dot(lifecycles) -> str:
    """A Graphviz digraph, one cluster per lifecycle (terminal states double-circled)."""
    out = ["digraph toolcommit {", "  rankdir=LR;"]
    for life in lifecycles:
        out.append(f'  subgraph "cluster_{life.name}" {{ label="{life.name}";')
        for s in life.states:
            shape = "doublecircle" if s in life.terminal else "box"
            out.append(f'    "{life.name}:{s}" [label="{s}", shape={shape}];')
        for e in life.edges:
            out.append(
                f'    "{life.name}:{e.source}" -> "{life.name}:{e.target}" [label="{e.event}"];'
            )
        out.append("  }")
    out.append("}")
    return "\n".join(out) + "\n"


def render_json(lifecycles) -> str:
    """Each lifecycle as networkx node-link data, plus the properties."""
    import networkx as nx  # here: the command line's start (every --help) does not pay for it

    doc = {life.name: nx.node_link_data(life.graph(), edges="edges") for life in lifecycles}
    doc["properties"] = dict(protocol().properties)
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def render_knobs(_lifecycles=None) -> str:
    """The knobs, their options and each preset's choice, as a Markdown table."""
    rows = [
        "| knob | meaning | options | naive | seed | recommended |",
        "|---|---|---|---|---|---|",
    ]
    for k in protocol().knobs.values():
        opts = "; ".join(f"`{o}`: {m}" for o, m in k.options.items())
        rows.append(
            f"| `{k.name}` | {k.meaning} | {opts} | `{k.presets['naive']}` | "
            f"`{k.presets['seed']}` | `{k.presets['recommended']}` |"
        )
    return "\n".join(rows) + "\n"


RENDER = {
    "text": render_text,
    "mermaid": render_mermaid,
    "dot": render_dot,
    "json": render_json,
    "knobs": render_knobs,
}


def render_envs(fmt: str = "text", width: int = DEFAULT) -> str:
    """Every environment profile: its meaning, what it sets, and each behaviour's source
    (text: no line wider than `width`)."""
    from toolcommit.model.environment import held_fixed, names, profile

    if fmt == "json":
        doc = {
            n: {
                "meaning": profile(n).meaning,
                "holds_fixed": held_fixed(n),
                "behaviours": [
                    {"sets": dict(b.sets), "what": b.what, "url": b.url, "rests_on": b.rests_on}
                    for b in profile(n).behaviours
                ],
            }
            for n in names()
        }
        return json.dumps(doc, indent=2, sort_keys=True) + "\n"
    out = []
    for n in names():
        p = profile(n)
        sets = ", ".join(f"{k}={v}" for k, v in held_fixed(n).items())
        out += [f"{n}: {p.meaning}", f"  holds fixed: {sets}"]
        for b in p.behaviours:
            what = ", ".join(f"{k}={v}" for k, v in b.sets.items())
            out.append(f"  - {what}: {b.what}")
            if b.url:
                out.append(f"      source: {b.url}")
                out.append(f'      "{b.rests_on}"')
            else:
                out.append(f"      no source: {b.rests_on}")
        out.append("")
    return fit("\n".join(out), width)
