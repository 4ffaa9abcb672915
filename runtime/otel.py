"""Optional OpenTelemetry: the guard's own spans and metrics, through the API only.

With ``opentelemetry-api`` importable (the extra ``otel``), each guarded call is one span
``execute_tool {tool}`` (GenAI semantic conventions: ``gen_ai.operation.name`` =
``execute_tool``, ``gen_ai.tool.name``, ``gen_ai.tool.call.id``), current while the call
runs, so the intent log's lines land on it as ``toolcommit.*`` events
(`toolcommit.runtime.telemetry`); each recovery pass is a span ``toolcommit.recover``,
each record the pass settles a child ``toolcommit.settle {tool}``. Metrics: see
`METRICS`. Spans and instruments come from the global providers unless `configure` names
others. Without the package nothing is imported and every function here does nothing.

The attribute names and values are in docs/telemetry.md; values come from the spec: a
decision is the log's on the proposal (``accepted``, ``duplicate``, ``conflict``,
``held``, ``answered``), a resolution a path of ``spec/log-design.json``
(``replay_answered``, ``read_present``, ``read_absent``, ``give_up``) or ``settler`` (the
call ended in doubt: the log settles it later), an outcome what the model was told
(``result``: this call's request or replay answered; ``saved``: the log's answer, nothing
sent by this call; or the error's class: ``Conflict``, ``GaveUp``, ``InDoubt``,
``Held``, ``Answered``).
"""

from __future__ import annotations

import contextvars
import threading
import time
import weakref
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional

try:  # optional: the extra ``otel``
    from opentelemetry import metrics as _metrics
    from opentelemetry import trace as _trace
except ImportError:  # pragma: no cover - depends on the environment
    _metrics = _trace = None  # type: ignore[assignment]  # no opentelemetry: nothing traced

from toolcommit.model.states import IN_DOUBT
from toolcommit.runtime import lines as L

if TYPE_CHECKING:
    from toolcommit.runtime.log import IntentLog
    from toolcommit.runtime.records import Decision, Record

SCOPE = "toolcommit.runtime"
SETTLED = ("ACKED", "DEAD_LETTER", "COMPENSATED")
GIVE_UP = ("DEAD_LETTER", "COMPENSATED")
#: a transition's reason (`lines.REASON`) -> the resolution it is (a path of log-design.json)
RESOLUTION = {
    L.REASON["replay_answered"]: "replay_answered",
    L.REASON["present"]: "read_present",
    L.REASON["absent"]: "read_absent",
    L.REASON["no_read"]: "give_up",
    L.REASON["park"]: "give_up",
}
#: error classes that end the span with status ERROR (a give-up, a refusal)
ERRORS = ("GaveUp", "Conflict")
#: the instruments (name: kind, unit, meaning)
METRICS = {
    "toolcommit.decisions": (
        "counter",
        "{call}",
        "guarded calls by the log's decision on "
        "their proposal (toolcommit.decision, gen_ai.tool.name)",
    ),
    "toolcommit.give_ups": (
        "counter",
        "{record}",
        "records given up (DEAD_LETTER, "
        "COMPENSATED) by this process (toolcommit.state, gen_ai.tool.name)",
    ),
    "toolcommit.settle.duration": (
        "histogram",
        "s",
        "seconds from a record's line into doubt "
        "(DISPATCHED -> UNKNOWN) to its settling line, both written "
        "by this process (gen_ai.tool.name, toolcommit.state)",
    ),
    "toolcommit.in_doubt": (
        "gauge",
        "{record}",
        "records UNKNOWN or RECONCILING in each open "
        "log's store (gen_ai.tool.name, toolcommit.writer)",
    ),
}

_tp: Any = None  # configured providers; None: the global ones
_mp: Any = None
_inst: Optional[dict[str, Any]] = None  # the instruments, made on first use
_tracer_made: Any = None  # the tracer, made on first use under a real provider
_inst_lock = threading.Lock()
_LOGS: "weakref.WeakSet[IntentLog]" = weakref.WeakSet()
_DOUBT_SINCE: dict[str, float] = {}  # key -> monotonic time it went UNKNOWN here
_doubt_lock = threading.Lock()
_MAX_KEYS = 10000
_CURRENT: contextvars.ContextVar[Optional[_Call]] = contextvars.ContextVar(
    "toolcommit_otel_call", default=None
)
_PASS: contextvars.ContextVar[bool] = contextvars.ContextVar("toolcommit_otel_pass", default=False)


def available() -> bool:
    """True when opentelemetry-api is importable."""
    return _trace is not None


def configure(tracer_provider: Any = None, meter_provider: Any = None) -> None:
    """Use these providers for toolcommit's spans and instruments (None: the global ones,
    as OpenTelemetry's instrumentations do). Instruments are made again on the next use."""
    global _tp, _mp, _inst, _tracer_made
    with _inst_lock:
        _tp, _mp, _inst, _tracer_made = tracer_provider, meter_provider, None, None


def tracing() -> bool:
    """Whether a real tracer provider is set (not the API's no-op or proxy default): else
    no span is made (it would record nothing)."""
    if _trace is None:
        return False
    if _tracer_made is not None:
        return True
    tp = _tp or _trace.get_tracer_provider()
    return not isinstance(tp, (_trace.ProxyTracerProvider, _trace.NoOpTracerProvider))


def _tracer() -> Any:
    global _tracer_made
    if _tracer_made is None:  # made once a real provider is set (see `tracing`)
        _tracer_made = _trace.get_tracer(SCOPE, tracer_provider=_tp)
    return _tracer_made


def _instruments() -> dict[str, Any]:
    global _inst
    with _inst_lock:
        if _inst is None:
            m = _metrics.get_meter(SCOPE, meter_provider=_mp)
            make: dict[str, Callable[..., Any]] = {
                "counter": m.create_counter,
                "histogram": m.create_histogram,
            }
            _inst = {
                name: make[kind](name, unit=unit, description=text)
                for name, (kind, unit, text) in METRICS.items()
                if kind in make
            }
            kind, unit, text = METRICS["toolcommit.in_doubt"]
            _inst["toolcommit.in_doubt"] = m.create_observable_gauge(
                "toolcommit.in_doubt", callbacks=[_observe_doubt], unit=unit, description=text
            )
        return _inst


def _observe_doubt(options: Any = None) -> list[Any]:
    out: list[Any] = []
    for log in list(_LOGS):
        try:
            counts = log.doubt_counts()
        except Exception:  # closed, or the store is down: nothing to report
            continue
        out += [
            _metrics.Observation(n, {"gen_ai.tool.name": tool, "toolcommit.writer": log.writer})
            for tool, n in sorted(counts.items())
        ]
    return out


def watch(log: IntentLog) -> None:
    """Report `log`'s records in doubt on the gauge while it is open (held weakly)."""
    if _trace is None:
        return
    _LOGS.add(log)
    _instruments()


# ----- what the log commits ----------------------------------------------------------------
class _Call:
    """What one guard or settle span has seen (the span itself, its tool, its last state)."""

    def __init__(self, span: Any, tool: Optional[str]) -> None:
        self.span, self.tool = span, tool
        self.key: Optional[str] = None
        self.decision: Optional[str] = None
        self.resolution: Optional[str] = None
        self.state: Optional[str] = None
        self.sent = False


def committed(log: IntentLog, line: dict[str, Any]) -> None:
    """One line `log` committed: note it on the current guard or settle span and feed the
    metrics (a give-up, time to settle)."""
    if _trace is None or line.get("type") != "transition":
        return
    cur, key, to = _CURRENT.get(), line["key"], line["to"]
    if cur is not None and cur.key in (None, key):
        cur.key, cur.state = key, to
        if line.get("reason") in RESOLUTION:
            cur.resolution = RESOLUTION[line["reason"]]
    with _doubt_lock:
        if to == "UNKNOWN":
            if len(_DOUBT_SINCE) >= _MAX_KEYS:
                _DOUBT_SINCE.pop(next(iter(_DOUBT_SINCE)))
            _DOUBT_SINCE[key] = time.monotonic()
            return
        since = _DOUBT_SINCE.pop(key, None) if to in SETTLED else None
    if since is None and to not in GIVE_UP:
        return
    if cur is not None and cur.key == key:
        tool = cur.tool
    else:
        try:
            rec = log.record(key)
        except Exception:  # the store went down after the commit: the line stands, untold
            return
        if rec is None:  # no record to name its tool: the line stands, untold
            return
        tool = rec.tool
    attrs = {"gen_ai.tool.name": tool, "toolcommit.state": to}
    inst = _instruments()
    if since is not None:
        inst["toolcommit.settle.duration"].record(time.monotonic() - since, attrs)
    if to in GIVE_UP:
        inst["toolcommit.give_ups"].add(1, attrs)


# ----- spans --------------------------------------------------------------------------------
@contextmanager
def guard_span(log: IntentLog, call_id: str, tool: str) -> Iterator[Optional[_Call]]:
    """The span of one guarded call (current inside), ended with what the model was told;
    None (and nothing done) without opentelemetry."""
    if _trace is None:
        yield None
        return
    if not tracing():  # no span to make: the metrics still count
        yield from _run(_Call(_trace.INVALID_SPAN, tool))
        return
    attrs = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": tool,
        "gen_ai.tool.call.id": call_id,
        "gen_ai.tool.type": "function",
        "toolcommit.span": "guard",
        "toolcommit.writer": log.writer,
        "toolcommit.design": log.design.name,
    }
    with _tracer().start_as_current_span(
        f"execute_tool {tool}",
        attributes=attrs,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        yield from _run(_Call(span, tool))


def _run(cur: _Call) -> Iterator[_Call]:
    """The body of `guard_span`: `cur` current while the call runs, then ended."""
    token = _CURRENT.set(cur)
    try:
        yield cur
    except BaseException as e:
        _end(cur, e)
        raise
    else:
        _end(cur, None)
    finally:
        _CURRENT.reset(token)


def decided(d: Decision) -> None:
    """The log's decision on the current guarded call's proposal (the last, after a hold)."""
    cur = _CURRENT.get()
    if cur is None:
        return
    cur.key, cur.decision = d.key, d.decision
    rec = d.record
    cur.span.set_attributes(
        {
            "toolcommit.decision": d.decision,
            "toolcommit.key": d.key,
            **({"toolcommit.epoch": rec.epoch} if rec is not None else {}),
        }
    )


def answered() -> None:
    """The current guarded call's own request (or replay) was answered: its result is live."""
    cur = _CURRENT.get()
    if cur is not None:
        cur.sent = True


def _end(cur: _Call, e: Optional[BaseException]) -> None:
    span = cur.span
    name = type(e).__name__ if e is not None else ("result" if cur.sent else "saved")
    happened = getattr(e, "happened", None) if e is not None else "yes"
    if cur.resolution is None and (name in ("InDoubt", "Held") or cur.state in IN_DOUBT):
        cur.resolution = "settler"
    attrs = {
        "toolcommit.outcome": name,
        "toolcommit.happened": happened,
        "toolcommit.resolution": cur.resolution,
    }
    span.set_attributes({k: v for k, v in attrs.items() if v is not None})
    if e is not None and (name in ERRORS or not hasattr(e, "happened")):
        span.set_attribute("error.type", name)
        if not hasattr(e, "happened"):
            span.record_exception(e)
        span.set_status(_trace.Status(_trace.StatusCode.ERROR, str(e)[:200]))
    if cur.decision is not None:
        _instruments()["toolcommit.decisions"].add(
            1, {"toolcommit.decision": cur.decision, "gen_ai.tool.name": cur.tool}
        )


@contextmanager
def recover_span(log: IntentLog, trigger: str, quiet: bool = False) -> Iterator[dict[str, Any]]:
    """The span of one recovery pass (`trigger`: ``open``, ``recover``, ``pass``,
    ``settler``); a dict the pass fills with its counts (``taken``, ``settled``, ``left``).
    Inside another pass, or `quiet`, or without opentelemetry: no span (the dict still)."""
    counts: dict[str, Any] = {}
    if _trace is None or _PASS.get():
        yield counts
        return
    token = _PASS.set(True)  # a quiet pass is still a pass: nothing inside is traced
    try:
        if quiet or not tracing():
            yield counts
            return
        with _tracer().start_as_current_span(
            "toolcommit.recover",
            attributes={
                "toolcommit.span": "recover",
                "toolcommit.trigger": trigger,
                "toolcommit.writer": log.writer,
            },
        ) as span:
            yield counts
            span.set_attributes({f"toolcommit.{k}": v for k, v in counts.items()})
    finally:
        _PASS.reset(token)


@contextmanager
def settle_span(log: IntentLog, rec: Record) -> Iterator[None]:
    """The span of settling one record in doubt in a recovery pass; status ERROR when the
    record was given up."""
    if not tracing():
        yield
        return
    attrs = {
        "gen_ai.tool.name": rec.tool,
        "toolcommit.span": "settle",
        "toolcommit.key": rec.key,
        "toolcommit.epoch": rec.epoch,
        "toolcommit.from": rec.state,
        "toolcommit.writer": log.writer,
    }
    with _tracer().start_as_current_span(f"toolcommit.settle {rec.tool}", attributes=attrs) as span:
        cur = _Call(span, rec.tool)
        cur.key = rec.key
        token = _CURRENT.set(cur)
        try:
            yield
        finally:
            _CURRENT.reset(token)
            state = cur.state or rec.state
            span.set_attributes(
                {
                    k: v
                    for k, v in (
                        ("toolcommit.state", state),
                        ("toolcommit.resolution", cur.resolution),
                    )
                    if v is not None
                }
            )
            if state in GIVE_UP:
                span.set_status(_trace.Status(_trace.StatusCode.ERROR, f"given up: {state}"))
