"""Produce the trace fixtures with the real frameworks, offline.

``python tests/adapters/make_traces.py [DIR]`` (default: tests/fixtures/traces) runs every
scenario with Pydantic AI (FunctionModel), LangGraph (a fake chat model), the OpenAI
Agents SDK (a custom Model), DBOS (a SQLite system database, a real SIGKILL) and Temporal
(histories built with the SDK's types and checked by its Replayer: no server runs here),
and the intent-log library itself (alone, and guarding the refund of the OpenAI Agents,
Temporal and DBOS runs: `guarded_runs`), and writes what they exported. Exception stack traces
are dropped from the spans (they name this machine's paths and say nothing the adapter
reads). The pinned fixtures
were made by this script; the framework tests run it again into a temporary directory and
expect the same verdicts (`expected.json` beside the fixtures).
"""

from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures", "traces")


def _strip(value):
    """Drop ``exception.stacktrace`` wherever it sits (plain dicts or OTLP key/values)."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k != "exception.stacktrace"}
    if isinstance(value, list):
        return [
            _strip(v)
            for v in value
            if not (isinstance(v, dict) and v.get("key") == "exception.stacktrace")
        ]
    return value


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def _jsonl(rows):
    return "".join(json.dumps(r) + "\n" for r in rows)


def pydantic_scenarios(out):
    import pydantic_runs as p

    for name, calls, fail, fmt in (
        ("clean", p.CLEAN, False, "console"),
        ("reissue", p.REISSUED, True, "otlp"),
    ):
        ledger: list = []
        spans = p.run(calls, fail, ledger)
        if fmt == "console":
            docs = [_strip(json.loads(s.to_json())) for s in spans]
            text = "".join(json.dumps(d, indent=4) + "\n" for d in docs)
        else:
            text = json.dumps(_strip(json.loads(p.otlp_json(spans))), separators=(",", ":")) + "\n"
        _write(os.path.join(out, f"pydantic-{name}.{fmt}.json"), text)
        _write(os.path.join(out, f"pydantic-{name}-ledger.jsonl"), _jsonl(ledger))


def langgraph_scenarios(out):
    import langgraph_runs as L

    def path(name):
        p = os.path.join(out, name)
        if os.path.exists(p):
            os.remove(p)
        return p

    L.run(L.CLEAN, path("langgraph-clean.jsonl"), path("langgraph-clean-ledger.jsonl"))
    L.run(
        L.CLEAN,
        path("langgraph-retry.jsonl"),
        path("langgraph-retry-ledger.jsonl"),
        L.timeout_once,
        retry=True,
    )
    L.run(
        L.REISSUED,
        path("langgraph-reissue.jsonl"),
        path("langgraph-reissue-ledger.jsonl"),
        L.timeout_once,
        handle_errors=True,
    )
    db = path("checkpoints.sqlite")
    L.crash_run(
        out,
        path("langgraph-crash-1.jsonl"),
        path("langgraph-crash-2.jsonl"),
        path("langgraph-crash-ledger.jsonl"),
        path("langgraph-crash-checkpoints.jsonl"),
    )
    os.remove(db)


def _fresh(out, name):
    p = os.path.join(out, name)
    if os.path.exists(p):
        os.remove(p)
    return p


def openai_agents_scenarios(out):
    import openai_agents_runs as o

    for name, calls, fail in (("clean", o.CLEAN, False), ("reissue", o.REISSUED, True)):
        ledger: list = []
        items = o.run(calls, fail, _fresh(out, f"openai-agents-{name}.jsonl"), ledger)
        _write(
            os.path.join(out, f"openai-agents-{name}-items.json"),
            json.dumps(items, indent=1) + "\n",
        )
        _write(os.path.join(out, f"openai-agents-{name}-ledger.jsonl"), _jsonl(ledger))


def dbos_scenarios(out):
    import dbos_runs as d

    for name, crash in (("clean", False), ("crash", True)):
        db = _fresh(out, f"dbos-{name}.sqlite")
        d.run(db, _fresh(out, f"dbos-{name}-ledger.jsonl"), crash)
        d.export_json(db, os.path.join(out, f"dbos-{name}.json"))
        if not crash:
            os.remove(db)


def temporal_scenarios(out):
    import temporal_runs as t

    for name in ("clean", "retry", "resend"):
        ledger: list = []
        _write(os.path.join(out, f"temporal-{name}.json"), t.scenario(name, ledger) + "\n")
        _write(os.path.join(out, f"temporal-{name}-ledger.jsonl"), _jsonl(ledger))


def library_scenario(out):
    """The intent-log library's own log for one refund, and the ledger of a provider that
    applied its request twice (it ignored the idempotency key on a transport retry)."""
    import tempfile

    from toolcommit.runtime import IntentLog

    with tempfile.TemporaryDirectory() as tmp:
        log = IntentLog.sqlite(
            os.path.join(tmp, "intents.db"), writer="worker-1", provider="stripe"
        )
        d = log.propose(
            "call_1", "refund", {"order": "o-7", "amount": 20}, "user:42", principal="user:1"
        )
        t = log.dispatch(d.key)
        log.ack(t, {"id": "re_1"})
        with open(os.path.join(out, "library-refund.jsonl"), "w") as f:
            log.export(f)
        log.close()
    _write(
        os.path.join(out, "library-refund-ledger.jsonl"),
        _jsonl([{"idempotency_key": t.idempotency_key, "effect_id": f"re_{n}"} for n in (1, 2)]),
    )


def guarded_scenarios(out):
    """The same runtimes with the refund guarded by the library: the trace, the library's
    own log and the provider's ledger of each (`guarded_runs`)."""
    import guarded_runs as g

    g.openai_agents(out)
    g.pydantic_ai(out)
    g.temporal(out)
    g.dbos(out)


def main(out=FIXTURES):
    sys.path.insert(0, HERE)
    os.makedirs(out, exist_ok=True)
    pydantic_scenarios(out)
    langgraph_scenarios(out)
    openai_agents_scenarios(out)
    dbos_scenarios(out)
    temporal_scenarios(out)
    library_scenario(out)
    guarded_scenarios(out)


if __name__ == "__main__":
    main(*sys.argv[1:])
