"""Settling the records in doubt through their registered tools: one pass
(`recover_settle`), the settler's pass (`settle_pass`, run by `IntentLog.settle_with`), the
registration that starts it (`serve`), and the sweeper (`sweep`: passes until nothing is
open or a deadline, what ``toolcommit recover`` runs)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any, Optional

from toolcommit.runtime import otel
from toolcommit.runtime.exceptions import EffectError
from toolcommit.runtime.log import IntentLog, Record, Ticket
from toolcommit.runtime.registry import Lazy, Tool, lazy_one, tool_for
from toolcommit.runtime.steps import _drive_async, _steps
from toolcommit.runtime.store import OPEN_STATES


def needs_tool(log: IntentLog, rec: Record) -> bool:
    """Whether settling `rec` needs its tool and `log` has none registered for it
    (a replay or a status read; a dispatch): then only a call, or a registration, settles it."""
    return tool_for(log, rec.tool) is None and (log.design.status_read or rec.state == "RECORDED")


def recover_settle(
    log: IntentLog, limit: int = 100, tools: Optional[set[str]] = None
) -> dict[str, str]:
    """One pass that never waits: take over the records of gone holders (`IntentLog.recover`)
    and settle every record in doubt this writer holds (`IntentLog.in_doubt`) through the
    design, with the log's registered tool (`register`; only `tools` if given): a replay
    under the same key, a status read, a give-up. Returns {key: state after}; a record whose
    tool the log has not, or whose read the design defers (`IntentLog.due` says for how
    long), stays held (UNKNOWN or RECONCILING) for the next pass. Async tools run in a fresh
    event loop (call this from sync code). Traced as one ``toolcommit.recover`` span, each
    record settled a ``toolcommit.settle`` span (`toolcommit.runtime.otel`)."""
    with otel.recover_span(log, "pass") as counts:
        return _recover_settle(log, limit, tools, counts)


def _recover_settle(
    log: IntentLog, limit: int, tools: Optional[set[str]], counts: dict[str, Any]
) -> dict[str, str]:
    taken = len(log.taken_over)
    log.recover(limit, tools)
    out = {}
    for rec in log.in_doubt():
        if log.closing:
            break  # `close` began: settle nothing more (what is under way ends first)
        if tools is not None and rec.tool not in tools:
            continue
        if needs_tool(log, rec) or rec.state == "RECONCILING" and log.read_wait(rec.key) > 0:
            out[rec.key] = rec.state  # needs the tool, or not due yet: left for later
            continue
        tool = tool_for(log, rec.tool)

        def execute(t: Ticket, tool: Optional[Tool] = tool) -> Any:
            assert tool is not None  # needs_tool said the log has it
            return tool.run(t.args)

        with (
            otel.settle_span(log, rec),
            contextlib.closing(_steps(log, rec.key, lambda r: r, wait=0)) as gen,
        ):
            try:
                asyncio.run(_drive_async(log, gen, execute, None if tool is None else tool.status))
            except EffectError:
                pass
        now = log.record(rec.key)
        out[rec.key] = rec.state if now is None else now.state
    left = sum(s in OPEN_STATES for s in out.values())
    counts.update(taken=len(log.taken_over) - taken, settled=len(out) - left, left=left)
    return out


def settle_pass(log: IntentLog) -> float:
    """The settler's pass (`IntentLog.settle_with`): `recover_settle` for the tools
    registered with `log`; the seconds until the next is due (at most `settle_every`). A
    pass is traced (`recover_settle`) only when something was due as it began."""
    due = log.due() if otel.tracing() else 0.0
    with otel.recover_span(log, "settler", quiet=due is None or due > 0) as counts:
        _recover_settle(log, 1000, None if log.tools is None else set(log.tools), counts)
    due = log.due()
    return log.settle_every if due is None or due <= 0 else min(due, log.settle_every)


def serve(log: IntentLog, tool: str, opener: Optional[Lazy] = None) -> None:
    """Register `tool` with `log`'s settler (started with the first, once per log, stopped
    by `IntentLog.close`); a tool registered with the function that opened `log` becomes
    `log`'s here: `opener`'s, else the only one of its name so registered (`register`). Every
    guarded call's log is served (`effectful`, the framework wrappers), so a record in
    doubt is settled in a live process as soon as the design allows, with nobody calling
    recover."""
    lazy_one(log, tool, opener)
    if log.tools is not None and tool not in log.tools:
        log.tools.add(tool)
        log.settle_with(settle_pass)


def sweep(log: IntentLog, until: float, poll: float = 0.2) -> dict[str, str]:
    """The sweeper (``toolcommit recover``): passes of `recover_settle` until no record of
    the log is open (or only ones this writer holds and cannot settle: a tool not
    registered) or `until` (`time.monotonic`) passes; between passes it keeps what it took
    (`IntentLog.renew_held`) and waits what `IntentLog.due` says (at least `poll` seconds,
    at most the log's `settle_every`). Returns {key: state after} of the records settled."""
    done: dict[str, str] = {}
    while True:
        done.update(recover_settle(log, limit=10**6))
        if all(_stuck(log, r) for r in log.records(OPEN_STATES)):
            return done
        log.renew_held()  # what it took stays its own while it waits
        due = log.due()
        pause = (
            log.settle_every if due is None or due <= 0 else max(min(due, log.settle_every), poll)
        )
        rest = until - time.monotonic()
        if rest <= 0:
            return done
        time.sleep(min(pause, rest))


def _stuck(log: IntentLog, rec: Record) -> bool:
    """Whether `rec` is `log`'s and needs a tool it does not have."""
    return (rec.owner, rec.owner_inc) == (log.writer, log.incarnation) and needs_tool(log, rec)
