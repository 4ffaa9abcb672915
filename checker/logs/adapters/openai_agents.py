"""OpenAI Agents SDK traces (and run items) -> `Call`s.

Reads what a ``TracingProcessor`` wrote: ``span.export()`` and ``trace.export()`` as JSON
documents (one per line, a list, or the backend exporter's ``{"data": [...]}`` payload).
A tool call is a span whose ``span_data.type`` is ``function`` (function tools, MCP
tools, and the hosted-tool shims the SDK traces as functions):

==============  ==========================================================================
tool            ``span_data.name``
arguments       ``span_data.input`` (recorded when ``trace_include_sensitive_data``, the
                default), else the joined run item's ``arguments``
call id         not in the span: joined from the run items (``--run-items``), else none
outcome         ``error`` set: failed (the SDK's default ``failure_error_function`` turns
                an exception into a message for the model and sets it); ``ended_at`` set:
                succeeded; exported at its start only: the process stopped inside it
scope (default) the trace's ``group_id`` (the conversation: the same across the runs of a
                resumed conversation when the app passes it), else the trace id
writer          the trace file: one process
==============  ==========================================================================

The run items are the ``function_call`` items of ``result.to_input_list()`` or of
``result.new_items`` (``item.raw_item.model_dump()``), dumped as JSON (one list per run, or
one item per line; an item repeated by a later run's input list is read once). Each
function span takes the call id of the first unjoined item of its tool, with the same
arguments when the span recorded them, else by order (a note says so). A span exported
twice (at its start and its end) is one attempt; a tool call rejected by the approval
flow never ran and is left out with a note.
"""

from __future__ import annotations

import json
import os
from typing import Optional

from toolcommit.checker.logs.adapters.calls import ERROR, OK, OPEN, Call
from toolcommit.checker.logs.adapters.docs import Lines, documents, read_text
from toolcommit.model.errors import InputError

_REJECTED = "was manually rejected by user"


def _records(value):
    """The exported traces and spans in one decoded document."""
    if isinstance(value, list):
        for v in value:
            yield from _records(v)
    elif isinstance(value, dict):
        if value.get("object") in ("trace", "trace.span"):
            yield value
        elif isinstance(value.get("data"), list):
            yield from _records(value["data"])


def _json(text):
    if isinstance(text, str):
        try:
            return json.loads(text)
        except ValueError:
            return {"input": text}
    return text


def _args(value) -> Optional[dict]:
    if value is None:
        return None
    v = _json(value)
    return v if isinstance(v, dict) else {"input": v}


class _Span:
    """One function span: the latest export of it (an end supersedes a start)."""

    def __init__(self, rec: dict, fi: int, line: int, writer: str):
        self.rec, self.fi, self.line, self.writer = rec, fi, line, writer
        self.end_line = 0

    def update(self, rec: dict, line: int) -> None:
        if rec.get("ended_at") or not self.rec.get("ended_at"):
            self.rec = rec
            if rec.get("ended_at"):
                self.end_line = line

    @property
    def data(self) -> dict:
        return self.rec.get("span_data") or {}

    @property
    def tool(self) -> str:
        return str(self.data.get("name") or "")


def _read_file(path: str, fi: int, spans: dict, traces: dict) -> int:
    text = read_text(path)
    lines = Lines(text)
    writer = os.path.basename(path)
    found = 0
    for value, at in documents(text, path):
        for rec in _records(value):
            found += 1
            try:
                if rec["object"] == "trace":
                    traces.setdefault(str(rec["id"]), rec)
                    continue
                data = rec.get("span_data") or {}
                if not isinstance(data, dict):
                    raise TypeError("span_data is not an object")
                if data.get("type") != "function":
                    continue
                sid = (str(rec["trace_id"]), str(rec["id"]))
                line = lines.of(json.dumps(rec["id"]), at)
                if sid in spans:
                    spans[sid].update(rec, line)
                else:
                    s = spans[sid] = _Span(rec, fi, line, writer)
                    if rec.get("ended_at"):
                        s.end_line = line
            except (KeyError, TypeError, AttributeError) as e:
                raise InputError(
                    f"not an OpenAI Agents trace export ({type(e).__name__}: {e})",
                    path,
                    lines.at(at),
                ) from None
    return found


def run_items(paths) -> list[dict]:
    """The ``function_call`` items (``call_id``, ``name``, ``arguments``) in run-item
    files, in file order, first occurrence of each call id."""
    seen: dict[str, dict] = {}

    def walk(v, depth=0) -> int:
        if depth > 40:
            return 0
        if isinstance(v, dict):
            if v.get("type") == "function_call" and v.get("call_id") and v.get("name"):
                seen.setdefault(str(v["call_id"]), v)
                return 1
            if isinstance(v.get("raw_item"), dict):
                return walk(v["raw_item"], depth + 1)
            v = list(v.values())
        if isinstance(v, list):
            return sum(walk(x, depth + 1) for x in v)
        return 0

    for path in paths:
        text = read_text(path)
        if not sum(walk(value) for value, _ in documents(text, path)):
            raise InputError(
                "no function_call items found: expected the items of "
                "result.to_input_list() or result.new_items as JSON",
                path,
            )
    return list(seen.values())


def _same_args(span_input, item_args) -> bool:
    if span_input is None:
        return True
    return _args(span_input) == _args(item_args)


def _join(spans: list[_Span], items: list[dict], notes: list) -> dict:
    """Span -> run item, in span order: the first unjoined item of the span's tool with
    its arguments, else the first of its tool (by order: noted)."""
    free = list(items)
    out: dict = {}
    by_order = 0
    for s in spans:
        same_tool = [
            it
            for it in free
            if it.get("name") == s.tool or s.tool.endswith("." + str(it.get("name")))
        ]
        exact = [it for it in same_tool if _same_args(s.data.get("input"), it.get("arguments"))]
        pick = exact[0] if exact else (same_tool[0] if same_tool else None)
        if pick is None:
            continue
        if not exact or s.data.get("input") is None:
            by_order += 1
        free.remove(pick)
        out[id(s)] = pick
    if by_order:
        notes.append(
            f"{by_order} function span(s) joined their run item by order alone "
            "(the span did not record its arguments, or they differ)"
        )
    left = [str(it["call_id"]) for it in free]
    if left:
        notes.append(
            f"{len(left)} function call(s) of the run items have no function span "
            f"(not traced, or not run): {', '.join(left[:5])}"
        )
    return out


def read(paths, first_index: int = 0, items_paths=()) -> tuple[list[Call], list[str]]:
    """The tool calls in trace files `paths` (file indexes from `first_index`), their call
    ids joined from run-item files `items_paths`, and notes. `InputError` on a file with
    no exported trace or span."""
    spans: dict = {}
    traces: dict = {}
    for fi, path in enumerate(paths, first_index):
        if not _read_file(path, fi, spans, traces):
            raise InputError(
                "no OpenAI Agents trace export found: expected span.export() "
                "and trace.export() JSON, one per line",
                path,
            )
    notes: list[str] = []
    ordered = sorted(
        spans.values(), key=lambda s: (str(s.rec.get("started_at") or ""), s.fi, s.line)
    )
    ordered = [s for s in ordered if not _skipped(s, notes)]
    joined = _join(ordered, run_items(items_paths), notes) if items_paths else {}
    if not items_paths and ordered:
        notes.append(
            "the SDK's function spans carry no call id: each span is its own call, "
            "in span order; give --run-items (the function_call items of "
            "result.to_input_list()) to join the model's call ids"
        )
    return [_call(s, joined.get(id(s)), traces) for s in ordered], notes


def _skipped(s: _Span, notes: list) -> bool:
    err = s.rec.get("error") or {}
    detail = str((err.get("data") or {}).get("error") or "") if isinstance(err, dict) else ""
    if _REJECTED in detail:
        notes.append(
            f"left out: {s.tool} span {s.rec.get('id')}: rejected by the approval flow, never run"
        )
        return True
    return False


def _error_text(err) -> str:
    if not isinstance(err, dict):
        return str(err)
    detail = (err.get("data") or {}).get("error")
    return f"{err.get('message', 'error')}: {detail}" if detail else str(err.get("message"))


def _call(s: _Span, item: Optional[dict], traces: dict) -> Call:
    rec, data = s.rec, s.data
    trace = traces.get(str(rec.get("trace_id"))) or {}
    args = _args(data.get("input"))
    if args is None and item is not None:
        args = _args(item.get("arguments"))
    cid = str(item["call_id"]) if item else None
    if rec.get("error"):
        outcome, error = ERROR, _error_text(rec["error"])
    elif rec.get("ended_at"):
        outcome, error = OK, ""
    else:
        outcome, error = OPEN, ""
    view = {
        "tool": s.tool,
        "call_id": cid,
        "args": args,
        "result": data.get("output"),
        "span": rec,
        "trace": trace,
        "trace_id": rec.get("trace_id"),
        "span_id": rec.get("id"),
        "group_id": trace.get("group_id"),
        "metadata": trace.get("metadata") or rec.get("metadata") or {},
        "mcp_data": data.get("mcp_data"),
    }
    scope = trace.get("group_id") or f"trace:{rec.get('trace_id')}"
    return Call(
        tool=s.tool,
        call_id=cid,
        args=args,
        outcome=outcome,
        writer=s.writer,
        order=(str(rec.get("started_at") or ""), s.fi, s.line),
        loc=(s.fi, s.line),
        end_loc=(s.fi, s.end_line) if s.end_line else (0, 0),
        error=error,
        ident=f"span {rec.get('id')}",
        view=view,
        scope=str(scope),
    )
