"""Temporal workflow histories -> `Call`s.

Reads histories as JSON: ``temporal workflow show --output json``, the Web UI's download,
or the Python SDK's ``WorkflowHistory.to_json()`` (protobuf's JSON mapping: camelCase or
snake_case fields, ``EVENT_TYPE_ACTIVITY_TASK_SCHEDULED`` or ``ActivityTaskScheduled``
event types, int64 as strings, payloads base64). A file holds one history (``{"events":
[...]}``) or several, one per line. Each scheduled activity is one tool call:

==============  ==========================================================================
tool            ``activityType.name`` of ``ActivityTaskScheduled``
arguments       its ``input`` payloads when they are ``json/plain``: one object as it is,
                else ``{"args": [...]}``; any other encoding is not recorded
call id         ``WORKFLOW_ID/RUN_ID:ACTIVITY_ID``, the run being the started event's
                ``originalExecutionRunId`` (kept by a reset, so an activity a reset runs
                again is the same call)
attempts        ``ActivityTaskStarted.attempt`` n: the server ran n attempts; the n - 1
                before the last failed or timed out and were retried (each a dispatch
                whose outcome is unknown)
outcome         ``ActivityTaskCompleted``: succeeded; ``Failed``, ``TimedOut`` or
                ``Canceled``: failed (an unknown outcome); no close event: still running
                (pending), or, if the run closed, abandoned (unknown)
scope (default) the workflow id (the same across retries, resets and continue-as-new)
writer          the run (``WORKFLOW_ID@RUN_ID``)
==============  ==========================================================================

Local activities (``MarkerRecorded``) are not read; a note counts them. An activity in
two histories (a reset copies the events before its reset point) is read once.
"""

from __future__ import annotations

import base64
import json
import os
import re
from typing import Optional

from toolcommit.checker.logs.adapters.calls import ERROR, OK, PENDING, Call
from toolcommit.checker.logs.adapters.docs import Lines, documents, read_text
from toolcommit.model.errors import InputError

_CLOSE = {
    "ActivityTaskCompleted",
    "ActivityTaskFailed",
    "ActivityTaskTimedOut",
    "ActivityTaskCanceled",
}
_RUN_CLOSED = {
    "WorkflowExecutionCompleted",
    "WorkflowExecutionFailed",
    "WorkflowExecutionTimedOut",
    "WorkflowExecutionTerminated",
    "WorkflowExecutionCanceled",
    "WorkflowExecutionContinuedAsNew",
}


def _g(d: dict, camel: str, default=None):
    """A field in either of protobuf's JSON spellings."""
    if camel in d:
        return d[camel]
    return d.get(re.sub(r"(?<!^)([A-Z])", r"_\1", camel).lower(), default)


def event_type(ev: dict) -> str:
    """``ActivityTaskScheduled`` from either spelling of the enum."""
    t = str(_g(ev, "eventType", ""))
    if t.startswith("EVENT_TYPE_"):
        return "".join(w.capitalize() for w in t[len("EVENT_TYPE_") :].split("_"))
    return t


def attributes(ev: dict) -> dict:
    t = event_type(ev)
    name = t[:1].lower() + t[1:] + "EventAttributes"
    return _g(ev, name, None) or {}


def payload(p) -> tuple[bool, object]:
    """(decoded, value) of one payload: JSON payloads decode, ``binary/null`` is None,
    anything else (protobuf, encrypted, a codec's) is not decoded."""
    if not isinstance(p, dict) or "metadata" not in p:
        return True, p
    meta = p.get("metadata") or {}
    enc = meta.get("encoding", "")
    try:
        enc = base64.b64decode(enc).decode() if enc else ""
        if enc == "binary/null":
            return True, None
        if enc == "json/plain":
            return True, json.loads(base64.b64decode(p.get("data", "")) or b"null")
    except (ValueError, UnicodeDecodeError):
        pass
    return False, None


def _args(attrs: dict) -> Optional[dict]:
    got = [payload(p) for p in (_g(attrs, "input") or {}).get("payloads") or []]
    if not all(ok for ok, _ in got):
        return None
    values = [v for _, v in got]
    if len(values) == 1 and isinstance(values[0], dict):
        return values[0]
    return {"args": values}


def _failure(attrs: dict, field: str = "failure") -> str:
    f = _g(attrs, field) or {}
    info = _g(f, "timeoutFailureInfo")
    if info is not None:
        return f"timed out ({_g(info, 'timeoutType', 'timeout')})"
    return str(f.get("message") or "failed")


def _histories(value):
    """The histories (lists of events) in one decoded document."""
    if isinstance(value, dict):
        if isinstance(value.get("events"), list):
            yield value.get("workflowId") or value.get("workflow_id"), value["events"]
        elif isinstance(value.get("history"), dict):
            yield from _histories(value["history"])
    elif isinstance(value, list) and value and isinstance(value[0], dict) and event_type(value[0]):
        yield None, value


class _Run:
    """One history: its workflow and run, and its activities by scheduled event id."""

    def __init__(self, events: list, workflow_id: Optional[str], fallback: str):
        first = events[0] if events else {}
        start = attributes(first) if event_type(first) == "WorkflowExecutionStarted" else {}
        self.workflow_id = str(workflow_id or _g(start, "workflowId") or fallback)
        self.run_id = str(_g(start, "originalExecutionRunId") or "")
        self.writer = f"{self.workflow_id}@{self.run_id}" if self.run_id else self.workflow_id
        self.closed = any(event_type(e) in _RUN_CLOSED for e in events)
        self.workflow_type = str((_g(start, "workflowType") or {}).get("name", ""))


def read(paths, first_index: int = 0) -> tuple[list[Call], list[str]]:
    """The activity calls in history files `paths` (file indexes from `first_index`), and
    notes. `InputError` on a file with no history, or an event of the wrong shape."""
    calls: list[Call] = []
    seen: set = set()
    markers = repeats = 0
    for fi, path in enumerate(paths, first_index):
        text = read_text(path)
        lines = Lines(text)
        found = 0
        for n, (value, at) in enumerate(documents(text, path)):
            for wid, events in _histories(value):
                found += 1
                try:
                    got, m, r = _read_history(events, wid, path, fi, n, lines, at, seen)
                except (KeyError, TypeError, AttributeError, ValueError) as e:
                    raise InputError(
                        f"not a Temporal history ({type(e).__name__}: {e})", path, lines.at(at)
                    ) from None
                calls += got
                markers += m
                repeats += r
        if not found:
            raise InputError(
                "no workflow history found: expected the JSON of temporal "
                'workflow show --output json ({"events": [...]})',
                path,
            )
    notes = []
    if markers:
        notes.append(
            f"{markers} local activit{'ies' if markers > 1 else 'y'} "
            "(MarkerRecorded) not read: their attempts are not in the history"
        )
    if repeats:
        notes.append(
            f"{repeats} activit{'ies' if repeats > 1 else 'y'} in more than one "
            "history (a reset copies the events before its point) read once"
        )
    return calls, notes


def _read_history(events, wid, path, fi, doc, lines, at, seen):
    run = _Run(events, wid, os.path.splitext(os.path.basename(path))[0])
    scheduled: dict[str, tuple[dict, dict]] = {}
    started: dict[str, tuple[dict, dict]] = {}
    closed: dict[str, tuple[str, dict, dict]] = {}
    markers = 0
    for ev in events:
        t, a = event_type(ev), attributes(ev)
        eid = str(_g(ev, "eventId"))
        if t == "ActivityTaskScheduled":
            scheduled[eid] = (ev, a)
        elif t == "ActivityTaskStarted":
            started[str(_g(a, "scheduledEventId"))] = (ev, a)
        elif t in _CLOSE:
            closed[str(_g(a, "scheduledEventId"))] = (t, ev, a)
        elif t == "MarkerRecorded":
            markers += 1
    out, repeats = [], 0
    for eid, (ev, a) in scheduled.items():
        ident = (run.workflow_id, run.run_id, eid)
        if ident in seen:
            repeats += 1
            continue
        seen.add(ident)
        out += _attempts(run, eid, ev, a, started.get(eid), closed.get(eid), (fi, doc, lines, at))
    return out, markers, repeats


def _line(lines: Lines, at: int, ev: dict) -> int:
    """The line where event `ev` of the document at `at` is written (its eventId)."""
    pat = r'"event_?[iI]d"\s*:\s*"?%s\b' % re.escape(str(_g(ev, "eventId")))
    m = re.compile(pat).search(lines.text, at)
    return lines.at(m.start() if m else at)


def _attempts(run: _Run, eid, ev, a, start, close, where) -> list[Call]:
    fi, doc, lines, at = where
    tool = str((_g(a, "activityType") or {}).get("name", ""))
    aid = str(_g(a, "activityId"))
    cid = f"{run.workflow_id}/{run.run_id}:{aid}" if run.run_id else f"{run.workflow_id}:{aid}"
    args = _args(a)
    n = int(_g(start[1], "attempt", 1) or 1) if start else 1
    loc = (fi, _line(lines, at, ev))
    start_loc = (fi, _line(lines, at, start[0])) if start else loc
    if close is None:
        outcome, error, end = (
            (ERROR, "the run closed while the activity was open", loc)
            if run.closed
            else (PENDING, "", loc)
        )
    else:
        t, cev, ca = close
        end = (fi, _line(lines, at, cev))
        outcome = OK if t == "ActivityTaskCompleted" else ERROR
        error = {"ActivityTaskCompleted": "", "ActivityTaskCanceled": "canceled"}.get(
            t, _failure(ca)
        )
    view = {
        "tool": tool,
        "call_id": cid,
        "args": args,
        "workflow_id": run.workflow_id,
        "run_id": run.run_id,
        "activity_id": aid,
        "workflow_type": run.workflow_type,
        "attempts": n,
        "scheduled": a,
        "started": start[1] if start else None,
        "result": close[2] if close else None,
    }
    last = _failure(start[1], "lastFailure") if n > 1 else ""
    base = dict(
        tool=tool,
        call_id=cid,
        args=args,
        writer=run.writer,
        view=view,
        scope=run.workflow_id,
        ident=f"activity {aid} of {run.writer}",
    )
    calls = [
        Call(
            outcome=ERROR,
            order=(fi, doc, int(eid), k),
            loc=start_loc,
            error=(
                f"attempt {k} of {n}: "
                + (last if k == n - 1 and last != "failed" else "failed or timed out")
                + "; the server retried it"
            ),
            **base,
        )
        for k in range(1, n)
    ]
    calls.append(
        Call(
            outcome=outcome,
            order=(fi, doc, int(eid), n),
            loc=start_loc,
            end_loc=end,
            error=error,
            **base,
        )
    )
    return calls
