"""OpenTelemetry GenAI tool spans -> `Call`s.

Reads OTLP JSON (``ExportTraceServiceRequest``: ``resourceSpans / scopeSpans / spans``,
attributes as key / AnyValue pairs, camelCase or snake_case field names; one document,
JSON Lines as the Collector's file exporter writes, or a JSON array) and the Python SDK's
``ConsoleSpanExporter`` output (``span.to_json()`` documents one after another).

A tool span is one with ``gen_ai.operation.name = execute_tool`` (semantic conventions,
Development status), or LangSmith's ``langsmith.span.kind = tool``, or Pydantic AI's older
``running tool`` span. Names, in the order tried:

======================  ==================================================================
tool                    ``gen_ai.tool.name``, ``langsmith.trace.name``, the span name
call id                 ``gen_ai.tool.call.id``; LangSmith: ``tool_call_id`` inside
                        ``gen_ai.completion`` or ``langsmith.metadata.tool_call_id``
arguments               ``gen_ai.tool.call.arguments`` (opt-in; a JSON string or a
                        structured value), Pydantic AI v2 ``tool_arguments``, LangSmith
                        ``gen_ai.prompt``
result                  ``gen_ai.tool.call.result``, ``tool_response``,
                        ``gen_ai.completion``
outcome                 span status ERROR or an ``error.type`` attribute: failed (the
                        error is ``error.type``, else the exception event's type, else the
                        status description); otherwise succeeded
scope (default)         ``gen_ai.conversation.id``, else LangSmith's thread
                        (``langsmith.metadata.`` ``thread_id``, ``session_id`` or
                        ``conversation_id``: a resumed thread keeps it), else the trace id
writer                  the resource's ``service.name`` (and ``service.instance.id``)
======================  ==================================================================

A span's ``toolcommit.<type>`` events (``toolcommit.runtime`` puts each line its intent
log commits on the current span: `toolcommit.runtime.telemetry`) are read back as
those lines (`Call.lines`), so a guarded call is judged by the guard's own lines. The
guard's own span (``toolcommit.span = guard``, an ``execute_tool`` span of its own:
`toolcommit.runtime.otel`) inside a framework's tool span is folded into it (one
call, the guard's lines); without one above it, it is the call. Lines the settler writes
(``toolcommit.settle`` spans) belong to no call and are not read.

Pydantic AI spans whose call never ran (``pydantic_ai.tool.failure_stage = validation``,
or a deferral) are not dispatches and are left out, with a note; its
``pydantic_ai.tool.retry.*`` attributes are kept as notes. Attempts are ordered by span
start time, which is one process's clock. A span exported twice (the same trace and span
id) counts once; a span without a trace or span id is never taken for another: it is read
as a span of its own, with a note.
"""

from __future__ import annotations

import base64
import json
from datetime import datetime
from typing import Iterator, Optional

from toolcommit.checker.logs.adapters.calls import ERROR, OK, Call
from toolcommit.checker.logs.adapters.docs import Lines, documents, read_text
from toolcommit.model.errors import InputError

TOOL_OPERATION = "execute_tool"
ARG_NAMES = ("gen_ai.tool.call.arguments", "tool_arguments", "gen_ai.prompt")
RESULT_NAMES = ("gen_ai.tool.call.result", "tool_response", "gen_ai.completion")
SCOPE_NAMES = (
    "gen_ai.conversation.id",
    "langsmith.metadata.thread_id",
    "langsmith.metadata.session_id",
    "langsmith.metadata.conversation_id",
)


# ----- OTLP JSON values ------------------------------------------------------------------
def _g(d: dict, camel: str, snake: str, default=None):
    v = d.get(camel)
    return d.get(snake, default) if v is None else v


def any_value(v):
    """An OTLP AnyValue as a plain Python value."""
    if not isinstance(v, dict):
        return v
    for camel, snake in (
        ("stringValue", "string_value"),
        ("boolValue", "bool_value"),
        ("doubleValue", "double_value"),
    ):
        if camel in v or snake in v:
            return _g(v, camel, snake)
    if "intValue" in v or "int_value" in v:
        return int(_g(v, "intValue", "int_value"))
    if "arrayValue" in v or "array_value" in v:
        return [any_value(x) for x in (_g(v, "arrayValue", "array_value") or {}).get("values", [])]
    if "kvlistValue" in v or "kvlist_value" in v:
        return kv_list((_g(v, "kvlistValue", "kvlist_value") or {}).get("values", []))
    if "bytesValue" in v or "bytes_value" in v:
        return base64.b64decode(_g(v, "bytesValue", "bytes_value")).hex()
    return None


def kv_list(items) -> dict:
    """OTLP ``[{"key": k, "value": AnyValue}, ...]`` as a dict (a dict is kept as is)."""
    if isinstance(items, dict):
        return items
    return {kv.get("key"): any_value(kv.get("value")) for kv in items or () if isinstance(kv, dict)}


# ----- spans in either format, as one shape ---------------------------------------------
class Span(dict):
    """A span as: name, trace_id, span_id, parent_id ('' for a root), start (sortable),
    attributes, events (list of (name, attributes)), error (bool), status_text, resource
    (attributes)."""


_ERROR_CODES = (2, "2", "STATUS_CODE_ERROR", "ERROR", "StatusCode.ERROR")


def _ident(v, field: str) -> str:
    """A trace or span id: a string (absent is ''); `ValueError` for any other value."""
    if v is None or isinstance(v, str):
        return v or ""
    raise ValueError(f"{field} must be a string")


def _otlp_spans(doc: dict) -> Iterator[Span]:
    for rs in _g(doc, "resourceSpans", "resource_spans", []) or []:
        resource = kv_list((rs.get("resource") or {}).get("attributes"))
        scopes = (
            _g(rs, "scopeSpans", "scope_spans")
            or _g(rs, "instrumentationLibrarySpans", "instrumentation_library_spans")
            or []
        )
        for ss in scopes:
            for s in ss.get("spans") or []:
                status = s.get("status") or {}
                yield Span(
                    name=s.get("name", ""),
                    trace_id=_ident(_g(s, "traceId", "trace_id", ""), "traceId"),
                    span_id=_ident(_g(s, "spanId", "span_id", ""), "spanId"),
                    parent_id=_ident(_g(s, "parentSpanId", "parent_span_id", ""), "parentSpanId"),
                    start=int(_g(s, "startTimeUnixNano", "start_time_unix_nano", 0)),
                    attributes=kv_list(s.get("attributes")),
                    events=[
                        (e.get("name"), kv_list(e.get("attributes"))) for e in s.get("events") or ()
                    ],
                    error=status.get("code") in _ERROR_CODES,
                    status_text=status.get("message", ""),
                    resource=resource,
                )


def _iso_ns(text) -> int:
    if not text:
        return 0
    t = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    return int(t.timestamp()) * 10**9 + t.microsecond * 1000


def _console_span(doc: dict) -> Span:
    ctx = doc.get("context") or {}
    status = doc.get("status") or {}
    return Span(
        name=doc.get("name", ""),
        trace_id=_ident(ctx.get("trace_id"), "trace_id"),
        span_id=_ident(ctx.get("span_id"), "span_id"),
        parent_id=_ident(doc.get("parent_id"), "parent_id"),
        start=_iso_ns(doc.get("start_time")),
        attributes=dict(doc.get("attributes") or {}),
        events=[(e.get("name"), dict(e.get("attributes") or {})) for e in doc.get("events") or ()],
        error=status.get("status_code") in _ERROR_CODES,
        status_text=status.get("description") or "",
        resource=dict((doc.get("resource") or {}).get("attributes") or {}),
    )


def spans(value) -> Iterator[Span]:
    """Every span in one decoded document of either format."""
    if isinstance(value, list):
        for v in value:
            yield from spans(v)
    elif isinstance(value, dict):
        if any(k in value for k in ("resourceSpans", "resource_spans")):
            yield from _otlp_spans(value)
        elif "context" in value and "name" in value:
            yield _console_span(value)


# ----- tool spans -> calls ---------------------------------------------------------------
def is_tool_span(s: Span) -> bool:
    a = s["attributes"]
    return (
        a.get("gen_ai.operation.name") == TOOL_OPERATION
        or a.get("langsmith.span.kind") == "tool"
        or (s["name"] == "running tool" and "gen_ai.tool.name" in a)
    )


def _json(v):
    if isinstance(v, str):
        try:
            return json.loads(v)
        except ValueError:
            return v
    return v


def _args(a: dict) -> Optional[dict]:
    for name in ARG_NAMES:
        if name in a:
            v = _json(a[name])
            if isinstance(v, dict) and set(v) == {"input"}:  # LangSmith: {"input": "..."}
                inner = _json(v["input"])
                v = inner if isinstance(inner, dict) else v
            return v if isinstance(v, dict) else {"input": v}
    return None


def _find(v, name: str, depth: int = 0):
    """The first value named `name` inside a decoded JSON value (LangSmith nests it)."""
    if depth > 8:
        return None
    if isinstance(v, dict):
        if isinstance(v.get(name), str):
            return v[name]
        v = list(v.values())
    if isinstance(v, list):
        for x in v:
            got = _find(x, name, depth + 1)
            if got:
                return got
    return None


def _call_id(a: dict) -> Optional[str]:
    cid = a.get("gen_ai.tool.call.id") or a.get("langsmith.metadata.tool_call_id")
    if cid:
        return str(cid)
    if "gen_ai.completion" in a:
        return _find(_json(a["gen_ai.completion"]), "tool_call_id")
    return None


def _tool(s: Span) -> str:
    a = s["attributes"]
    name = a.get("gen_ai.tool.name") or a.get("langsmith.trace.name") or s["name"]
    return str(name).removeprefix("execute_tool ").strip()


def _error(s: Span) -> str:
    a = s["attributes"]
    if a.get("error.type"):
        return str(a["error.type"])
    for name, attrs in s["events"]:
        if name == "exception" and attrs.get("exception.type"):
            return str(attrs["exception.type"])
    return s["status_text"] or "span status ERROR"


def _writer(resource: dict) -> str:
    name = resource.get("service.name") or "otel"
    inst = resource.get("service.instance.id")
    return f"{name}/{inst}" if inst else str(name)


def _skip_reason(a: dict) -> str:
    if a.get("pydantic_ai.tool.failure_stage"):
        return (
            f"rejected before the tool ran "
            f"(pydantic_ai.tool.failure_stage={a['pydantic_ai.tool.failure_stage']})"
        )
    if a.get("pydantic_ai.tool.deferral.name"):
        return f"deferred, not run ({a['pydantic_ai.tool.deferral.name']})"
    return ""


def _retry_note(a: dict) -> str:
    if "pydantic_ai.tool.retry.cause" not in a:
        return ""
    at, top = a.get("pydantic_ai.tool.retry.attempt"), a.get("pydantic_ai.tool.retry.max_retries")
    of = f" (attempt {at} of {top})" if at is not None else ""
    return (
        f"the model was asked to call again{of}: "
        f"pydantic_ai.tool.retry.cause={a['pydantic_ai.tool.retry.cause']}; "
        "the call it re-issues has a new call id"
    )


GUARD_PREFIX = "toolcommit."
GUARD_SPAN = ("toolcommit.span", "guard")  # the guard's own span (toolcommit.runtime.otel)
_ENCODED = ("args", "result", "identity")  # JSON-encoded on the span (not scalars)


def guard_lines(s: Span) -> tuple:
    """The intent-log lines on span `s` (its ``toolcommit.<type>`` events), as dicts."""
    out = []
    for name, attrs in s["events"]:
        if not str(name).startswith(GUARD_PREFIX):
            continue
        line = {
            k[len(GUARD_PREFIX) :]: v for k, v in attrs.items() if str(k).startswith(GUARD_PREFIX)
        }
        for k in _ENCODED:
            if isinstance(line.get(k), str):
                line[k] = _json(line[k])
        out.append(line)
    return tuple(out)


def is_guard_span(s: Span) -> bool:
    """The guard's own span of one call (``toolcommit.span = guard``)."""
    return s["attributes"].get(GUARD_SPAN[0]) == GUARD_SPAN[1]


def fold_guard_spans(found: list) -> list:
    """Tool spans `found` (``(span, file index, line, where)``) with each guard span whose
    parent is another tool span folded into that parent: its ``toolcommit.*`` events join
    the parent's (in start order), and it is not a call of its own; a guard span with no
    tool span above it in the trace is the call. Pure."""
    by_id = {(s["trace_id"], s["span_id"]): s for s, *_ in found if s["span_id"]}
    children: dict = {}
    for s, *_ in found:
        parent = by_id.get((s["trace_id"], s.get("parent_id")))
        if (
            is_guard_span(s)
            and s.get("parent_id")
            and parent is not None
            and not is_guard_span(parent)
        ):
            children.setdefault(id(parent), []).append(s)
    folded = {id(c) for cs in children.values() for c in cs}
    out = []
    for s, fi, line, where in found:
        if id(s) in folded:
            continue
        if id(s) in children:
            extra = [
                ev
                for c in sorted(children[id(s)], key=lambda c: c["start"])
                for ev in c["events"]
                if str(ev[0]).startswith(GUARD_PREFIX)
            ]
            s = Span(s, events=list(s["events"]) + extra)
        out.append((s, fi, line, where))
    return out


def to_call(s: Span, fi: int, line: int, skipped: list, where: str = "") -> Optional[Call]:
    """The `Call` of one tool span, or None (left out: the reason goes to `skipped`);
    `where` (file:line and a count) names a span that has no span id."""
    a = s["attributes"]
    tool, cid = _tool(s), _call_id(a)
    why = _skip_reason(a)
    if why:
        skipped.append(f"{tool} call {cid}: {why}")
        return None
    failed = s["error"] or bool(a.get("error.type"))
    args = _args(a)
    result = next((_json(a[n]) for n in RESULT_NAMES if n in a), None)
    view = {
        "tool": tool,
        "call_id": cid,
        "args": args,
        "result": result,
        "name": s["name"],
        "trace_id": s["trace_id"],
        "span_id": s["span_id"],
        "attributes": a,
        "resource": s["resource"],
    }
    ident = f"span {s['span_id']}" if s["span_id"] else f"span at {where}"
    default_scope = next((a[n] for n in SCOPE_NAMES if a.get(n)), None) or (
        f"trace:{s['trace_id']}" if s["trace_id"] else f"trace of the {ident}"
    )
    note = _retry_note(a)
    return Call(
        tool=tool,
        call_id=cid,
        args=args,
        outcome=ERROR if failed else OK,
        writer=_writer(s["resource"]),
        order=(s["start"], str(s["trace_id"]), str(s["span_id"]), line),
        loc=(fi, line),
        error=_error(s) if failed else "",
        ident=ident,
        view=view,
        scope=str(default_scope),
        notes=(note,) if note else (),
        lines=guard_lines(s),
    )


def read(paths, first_index: int = 0) -> tuple[list[Call], list[str]]:
    """The tool calls in trace files `paths` (file indexes from `first_index`), and notes
    on spans left out. A span exported twice (the same trace and span id, in one file or
    several) counts once. `InputError` on a file that holds no span, or a document whose
    shape is not a span export (file:line)."""
    tools: list = []
    skipped: list[str] = []
    seen: set = set()
    repeats = unnamed = 0
    for fi, path in enumerate(paths, first_index):
        text = read_text(path)
        lines = Lines(text)
        found = 0
        for value, at in documents(text, path):
            try:
                got = list(spans(value))
            except (ValueError, TypeError, AttributeError, KeyError, OverflowError) as e:
                raise InputError(
                    f"not an OpenTelemetry span export ({type(e).__name__}: {e})",
                    path,
                    lines.at(at),
                ) from None
            for s in got:
                found += 1
                ident = (s["trace_id"], s["span_id"])
                if not (s["trace_id"] and s["span_id"]):
                    unnamed += 1  # no id to tell a repeat by: a span of its own
                elif ident in seen:
                    repeats += 1
                    continue
                seen.add(ident)
                if is_tool_span(s):
                    line = lines.of(str(s["span_id"]), at) if s["span_id"] else lines.at(at)
                    tools.append((s, fi, line, f"{path}:{line} (#{unnamed})"))
        if not found:
            raise InputError(
                "no spans found: expected OTLP JSON (resourceSpans) or the "
                "console exporter's span JSON",
                path,
            )
    calls = [
        c
        for c in (
            to_call(s, fi, line, skipped, where) for s, fi, line, where in fold_guard_spans(tools)
        )
        if c is not None
    ]
    notes = [f"left out: {n}" for n in skipped]
    if repeats:
        notes.append(f"{repeats} span(s) exported more than once were read once")
    if unnamed:
        notes.append(
            f"{unnamed} span(s) without a trace id or span id were each read as a "
            "span of its own (a repeated export of one cannot be told)"
        )
    return calls, notes
