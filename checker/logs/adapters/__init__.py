"""Adapters: real traces in, the log contract out, checked by the same conformance core.

``validate --from SOURCE`` runs `check_trace`: the source's reader turns trace files (or a
system database) into `calls.Call`s (``otel.py``, ``langgraph.py``, ``openai_agents.py``,
``dbos.py``, ``temporal.py``), `rules.Rules` set each call's
scope and idempotency key and keep the effectful tools, `calls.to_log` writes the log
contract, `ledger.join` adds the provider's effects, and `Conformance` judges the result.
The report says, property by property, what the source let it judge
(`capability.judged`, data in ``spec/sources.json``).

A guarded run (its tool wrapped by ``toolcommit.runtime``) is judged by the library's own
intent log, given beside the trace (``--log``, `intentlog.beside`) or carried in it (the
lines the guard put on OpenTelemetry spans, `intentlog.in_trace`): the trace's calls of a
tool the log holds proposals of are judged by the log's lines (the guard's decisions, and
the keys it sent, which the ledger joins), the others from the trace, so the trace gives
the verdict the log gives. An effect of the ledger that joins no call is a possible
ORPHAN_EFFECT (`ledger.orphans`).

Nothing passes for want of looking: a run with no effectful call to judge, a ledger that
joins no call, or a ledger given only in part (`ledger.Ledger.partial`) cannot conform: a
report that found nothing is then INCONCLUSIVE, and `TraceReport.missing` says what was
missing (a violation found anyway stands). `--effectful` naming no tool of the trace is a
usage error that lists the tools the trace has.
"""
