"""Runs of the real runtimes with the refund guarded by ``toolcommit.runtime``, offline: an
OpenAI Agents function tool calling an ``@effectful`` refund, the same with Pydantic AI
traced by OpenTelemetry (the guard's lines ride on its spans), a Temporal activity wrapping
one (its attempts run by the SDK's ``ActivityEnvironment``), and a DBOS step wrapping one
(killed by SIGKILL between the effect and DBOS recording the step's output). Each writes
the runtime's trace, the library's own log (``log.export``), and the provider's ledger.

The provider (`Provider`) keeps its ledger in a file, as Stripe keeps its requests: a
request under an idempotency key it has seen gets the saved answer and applies nothing;
its status read finds an effect by the intent's key. It can lose its first answer after
applying (an ack lost on the way back). Needs the ``frameworks`` extra.
"""

from __future__ import annotations

import json
import os
import tempfile

from toolcommit.checker.cli.export_log import log_text
from toolcommit.runtime import IntentLog, current_ticket, effectful

SCOPE = "user:42:order:o-7"


class Provider:
    """A Stripe-like provider over a JSON Lines ledger file (one line per applied effect:
    ``idempotency_key``, ``key``, ``effect_id``)."""

    def __init__(self, path: str, lose_first_ack: bool = False):
        self.path, self.lose = path, lose_first_ack

    def _rows(self) -> list:
        if not os.path.exists(self.path):
            return []
        with open(self.path) as f:
            return [json.loads(line) for line in f if line.strip()]

    def apply(self, after=None) -> dict:
        """Apply the running effect once per idempotency key; `after` runs once it applied
        (a crash, say)."""
        t = current_ticket()
        rows = self._rows()
        for r in rows:
            if r["idempotency_key"] == t.idempotency_key:
                return {"id": r["effect_id"]}
        row = {
            "idempotency_key": t.idempotency_key,
            "key": t.key,
            "effect_id": f"re_{len(rows) + 1}",
        }
        with open(self.path, "a") as f:
            f.write(json.dumps(row) + "\n")
            f.flush()
            os.fsync(f.fileno())
        if after is not None:
            after()
        if self.lose:
            self.lose = False
            raise TimeoutError("the provider's answer was lost")
        return {"id": row["effect_id"]}

    def status(self, ticket):
        return next(({"id": r["effect_id"]} for r in self._rows() if r["key"] == ticket.key), None)


def _guarded(log, provider: Provider, after=None, is_async: bool = False):
    if is_async:

        @effectful(
            log,
            tool="refund",
            scope=lambda order, amount: SCOPE,
            status=provider.status,
            principal="user:1",
        )
        async def refund(order: str, amount: float) -> dict:
            return provider.apply(after)
    else:

        @effectful(
            log,
            tool="refund",
            scope=lambda order, amount: SCOPE,
            status=provider.status,
            principal="user:1",
        )
        def refund(order: str, amount: float) -> dict:
            return provider.apply(after)

    return refund


def _export(db: str, path: str) -> None:
    with open(path, "w") as f:
        f.write(log_text(db))


def _paths(out: str, name: str, trace: str) -> dict:
    """Where run `name` writes: the trace, the library's log and the ledger in `out`
    (pinned as fixtures), its databases in a temporary directory beside nothing."""
    tmp = tempfile.mkdtemp(prefix="toolcommit-guarded-")
    base = os.path.join(out, f"guarded-{name}")
    return {
        "trace": base + trace,
        "log": base + "-log.jsonl",
        "ledger": base + "-ledger.jsonl",
        "items": base + "-items.json",
        "intents": os.path.join(tmp, "intents.db"),
        "system": os.path.join(tmp, "dbos.sqlite"),
    }


def _fresh(p: dict) -> dict:
    for k in ("trace", "log", "ledger", "items"):
        if os.path.exists(p[k]):
            os.remove(p[k])
    return p


def openai_agents(out: str) -> dict:
    """The model calls refund, the provider applies it and the answer is lost (the guard
    replays under the same key: one refund), and the model calls it again under a new
    call id (a duplicate: the saved answer). Returns the paths written."""
    import openai_agents_runs as o

    p = _fresh(_paths(out, "openai-agents", ".jsonl"))
    log = IntentLog.sqlite(p["intents"], writer="agent", provider="stripe")
    refund = _guarded(log, Provider(p["ledger"], lose_first_ack=True))
    items = o.run(
        o.REISSUED,
        False,
        p["trace"],
        [],
        effect=lambda cid, order, amount: json.dumps(refund(order, amount, call_id=cid)),
    )
    log.close()
    with open(p["items"], "w") as f:
        f.write(json.dumps(items, indent=1) + "\n")
    _export(p["intents"], p["log"])
    return p


def pydantic_ai(out: str, guard_spans: bool = False) -> dict:
    """The OpenAI Agents scenario with Pydantic AI (the refund wrapped by
    `pydantic_ai_tool`), traced by OpenTelemetry (OTLP JSON): the guard puts its log's
    lines on each tool span (``toolcommit.*`` events; with `guard_spans`, on its own span
    inside Pydantic AI's, `toolcommit.runtime.otel`), so the trace alone carries what the
    guard decided. Returns the paths written."""
    import pydantic_runs as pr
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from pydantic_ai import Agent
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.models.instrumented import InstrumentationSettings

    from toolcommit.runtime.frameworks import pydantic_ai_tool

    p = _fresh(_paths(out, "pydantic", ".otlp.json"))
    exporter = InMemorySpanExporter()
    tp = TracerProvider(resource=Resource.create({"service.name": "refund-agent"}))
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    if guard_spans:
        from toolcommit.runtime.otel import configure

        configure(tp)
    log = IntentLog.sqlite(p["intents"], writer="agent", provider="stripe")
    provider = Provider(p["ledger"], lose_first_ack=True)

    def refund(order: str, amount: float) -> dict:
        """Refund an order."""
        return provider.apply()

    def order_status(order: str) -> str:
        """Read an order's status (no effect)."""
        return "paid"

    agent = Agent(
        FunctionModel(pr._script(pr.REISSUED)),
        tools=[
            pydantic_ai_tool(log, refund, scope=SCOPE, status=provider.status, principal="user:1"),
            order_status,
        ],
    )
    agent.instrument = InstrumentationSettings(tracer_provider=tp, include_content=True)
    try:
        agent.run_sync("refund order o-7")
    finally:
        if guard_spans:
            configure()
    log.close()
    with open(p["trace"], "w") as f:
        f.write(pr.otlp_json(exporter.get_finished_spans()))
    _export(p["intents"], p["log"])
    return p


def temporal(out: str, name: str = "retry") -> dict:
    """Temporal's `name` scenario (`temporal_runs.scenario`) with the activity guarded:
    under ``retry`` the server timed out attempt 1 after it applied, and attempt 2 meets
    the acknowledged intent (no second send). Returns the paths written."""
    import temporal_runs as t
    from temporalio import activity

    p = _fresh(_paths(out, f"temporal-{name}", ".json"))
    log = IntentLog.sqlite(p["intents"], writer="worker-1", provider="stripe")
    refund = _guarded(log, Provider(p["ledger"]), is_async=True)

    @activity.defn(name="refund")
    async def guarded_activity(order: str, amount: float) -> str:
        info = activity.info()
        got = await refund(
            order, amount, call_id=f"{info.workflow_run_id}:{info.activity_id}#{info.attempt}"
        )
        return f"refunded {amount} ({got['id']})"

    text = t.scenario(name, [], guarded_activity)
    log.close()
    with open(p["trace"], "w") as f:
        f.write(text + "\n")
    _export(p["intents"], p["log"])
    return p


def guarded_step(log_path: str, ledger: str, crash: bool):
    """The refund a DBOS step runs (in `dbos_runs`' phase process), guarded by the intent
    log at `log_path` under one writer name across restarts; with `crash`, the process is
    killed after the provider applied and before anything recorded it."""
    import signal

    log = IntentLog.sqlite(log_path, writer="dbos-worker", provider="stripe")
    after = (lambda: os.kill(os.getpid(), signal.SIGKILL)) if crash else None
    refund = _guarded(log, Provider(ledger), after)
    return lambda order, amount, call_id: refund(order, amount, call_id=call_id)["id"]


def dbos(out: str) -> dict:
    """A DBOS run on SQLite with the refund step guarded, killed inside the step after the
    effect and recovered by a second process (the guard replays under the same key: one
    refund). Writes the system database's tables as JSON. Returns the paths written."""
    import dbos_runs as d

    p = _fresh(_paths(out, "dbos-crash", ".json"))
    d.run(p["system"], p["ledger"], True, p["intents"])
    d.export_json(p["system"], p["trace"])
    _export(p["intents"], p["log"])
    return p
