"""The spec is well-formed data and every name in it is used consistently."""

import networkx as nx

from toolcommit.model.semantics import record_values
from toolcommit.spec import protocol, spec_graph


def test_every_record_state_is_reachable_from_the_initial_state_in_the_spec_graph():
    life = protocol().record
    g = life.graph()
    assert set(nx.descendants(g, life.initial)) | {life.initial} == set(life.states)


def test_terminal_states_have_no_outgoing_edges_and_others_do():
    for life in (protocol().record, protocol().proposal):
        g = life.graph()
        for s in life.states:
            assert (g.out_degree(s) == 0) == (s in life.terminal), s


def test_unknown_only_leads_where_P2_allows():
    succ = {t for s, t in protocol().record.edge_set if s == "UNKNOWN"}
    assert succ == {"RECONCILING", "COMPENSATED", "DEAD_LETTER"}


def test_model_record_values_are_the_spec_states_in_order():
    assert record_values() == tuple(protocol().record.states)


def test_every_knob_names_an_option_for_each_preset():
    for knob in protocol().knobs.values():
        for p, option in knob.presets.items():
            assert option in knob.options, (knob.name, p)


def test_every_fault_budget_names_a_fault_action():
    actions = protocol().actions
    for budget, action in protocol().faults.items():
        assert actions[action]["fault"], budget


def test_spec_graph_holds_both_lifecycles():
    g = spec_graph()
    assert ("record", "DISPATCHED") in g and ("proposal", "REJECTED_DUPLICATE") in g
    assert g.number_of_edges() == len(protocol().record.edges) + len(protocol().proposal.edges)


def test_the_models_state_predicates_are_the_tables_invariants_and_monitors():
    from toolcommit.model.instance import instance
    from toolcommit.model.knobs import preset
    from toolcommit.model.properties import state_predicates
    from toolcommit.model.semantics import build

    system = build(preset("recommended"), instance("default"))
    assert tuple(system.invariants) == state_predicates()


def test_every_monitor_is_a_flag_variable_of_the_model():
    from toolcommit.model.instance import instance
    from toolcommit.model.knobs import preset
    from toolcommit.model.properties import monitors
    from toolcommit.model.semantics import build

    system = build(preset("naive"), instance("default"))
    for m in monitors():
        assert system.var(m.flag).family == "bad"


def _built_actions():
    """Every ground action the model builds: each preset on each instance, with and without
    the wipe adversary, and each knob or assumption option on the default instance."""
    from toolcommit.model.instance import instance, instance_names
    from toolcommit.model.knobs import PRESETS, preset
    from toolcommit.model.semantics import build

    for p in PRESETS:
        for name in instance_names():
            for wipe in (False, True):
                yield from build(preset(p), instance(name), wipe=wipe).actions
    settings = {
        **{k.name: k.options for k in protocol().knobs.values()},
        **{a: spec["options"] for a, spec in protocol().assumptions.items()},
    }
    for knob, options in settings.items():
        for option in options:
            yield from build(
                preset("recommended").with_knobs({knob: option}), instance("default")
            ).actions
    from toolcommit.model.environment import configure, instance_in, names

    for env in names():  # the profiles' faults, and the clock where keys are pruned
        cfg = configure(preset("recommended"), env).with_knobs(
            {"on_unknown": "replay_then_reconcile"}
        )
        yield from build(cfg, instance_in(instance("default"), env)).actions
    from toolcommit.model.environment import configure, instance_in
    from toolcommit.model.environment import names as env_names

    for env in env_names():  # the real systems' faults exist only in their profiles
        for p in PRESETS:
            yield from build(
                configure(preset(p), env), instance_in(instance("default"), env)
            ).actions


def test_every_action_the_model_builds_has_a_sentence_over_its_own_parameters():
    import string

    seen = set()
    for a in _built_actions():
        template = protocol().sentence(a.name)
        assert template, f"spec/protocol.json: action {a.name!r} has no sentence"
        fields = {f for _, f, _, _ in string.Formatter().parse(template) if f}
        assert fields <= set(a.params), (a.name, sorted(fields - set(a.params)))
        seen.add(a.name)
    assert seen == set(protocol().actions), "every spec action is built somewhere"
    assert protocol().sentence("init") == "nothing has happened yet"
