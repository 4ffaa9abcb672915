"""A counterexample carries everything its renderers need: no renderer takes the model."""

import inspect
import json

from toolcommit.checker.engines.trace import KeyInfo, from_actions
from toolcommit.checker.render import counterexample as render
from toolcommit.model.instance import instance
from toolcommit.model.knobs import preset
from toolcommit.model.semantics import build
from toolcommit.spec import protocol


def _walk(wipe=False, steps=4):
    """The first enabled fault-free action, `steps` times, on the default instance: a trace
    that breaks nothing, labelled I1."""
    system = build(preset("recommended"), instance("default"), wipe=wipe)
    state, acts = dict(system.init), []
    for _ in range(steps):
        a = next(a for a in system.actions if not a.fault and system.enabled(a, state))
        state = system.step(a, state)
        acts.append(a)
    return system, from_actions(system, acts, "I1", "walk")


def test_a_counterexample_carries_the_models_declarations_keys_workers_and_wipe_flag():
    system, cx = _walk()
    assert cx.variables == system.variables
    assert cx.keys == tuple(
        KeyInfo(k["name"], k["ident"], tuple(k["callers"])) for k in system.meta["keys"]
    )
    assert cx.workers == tuple(system.meta["workers"]) and cx.wipe is False
    assert _walk(wipe=True)[1].wipe is True


def test_no_renderer_takes_a_system():
    for name in ("render_text", "render_itf", "itf_json", "render_mermaid", "render_python"):
        params = inspect.signature(getattr(render, name)).parameters
        assert list(params)[0] == "cx" and set(list(params)[1:]) <= {"width"}, name


def test_a_parsed_itf_trace_is_the_counterexample_that_was_written():
    system, cx = _walk()
    back = render.parse_itf(json.loads(render.itf_json(cx)), system)
    assert back == cx
    assert render.itf_json(back) == render.itf_json(cx)


def test_the_text_explanation_reads_its_sentences_from_the_spec():
    _, cx = _walk()
    text = render.render_text(cx)
    for i, step in enumerate(cx.steps[1:], start=1):
        assert f"{i:>2}. {protocol().sentence(step.action).format(**step.params)}\n" in text
