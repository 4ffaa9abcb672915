"""LangGraph stream events (and checkpoints) -> `Call`s.

Reads ``astream_events(..., version="v2")`` events dumped one JSON object per line (one
file per process run; `jsonable` is a ``default=`` for ``json.dumps`` that writes messages
and checkpoint tuples as plain JSON). A tool run is an ``on_tool_start`` and its
``on_tool_end`` / ``on_tool_error`` (same ``run_id``):

==============  ==========================================================================
tool            the event's ``name``
arguments       ``data.input`` (a ``ToolCall`` dict gives its ``args`` and ``id``)
call id         ``tool_call_id`` of the ``ToolMessage`` in ``data.output``, or
                ``data.tool_call_id`` of ``on_tool_error``, or ``metadata.tool_call_id``
outcome         ``on_tool_end``: succeeded (failed if the ToolMessage has status error);
                ``on_tool_error``: failed; no end in the file: the process stopped inside
                the call
task            the task id in ``metadata.langgraph_checkpoint_ns`` (``node:task_id``):
                stable across a RetryPolicy retry and a resume from a checkpoint
scope (default) ``metadata.thread_id``, else the root run id
writer          the events file (one process run), named by as much of its path as tells
                it from the other files
==============  ==========================================================================

Order: runs are ordered by their run ids, which langchain-core mints as UUIDv7 (the
millisecond the run started, then a counter that keeps one process's runs in order), so the
order of the files on the command line never changes a finding. Run ids that carry no time
(not UUIDv7) order runs only within their file: a call id whose attempts lie in two such
files is refused (`UsageError`), since nothing in the events says which came first.

A start event without a ``run_id`` is a run of its own (never merged with another, and
said in a note); an end event without one is refused, since it cannot be told which run
it ends. A run exported in two files counts once.

A run that never ended carries no call id in its events; it takes the id of another
attempt of the same task, tool and arguments, else of the one matching tool call the model
emitted in the checkpoints (``--checkpoints``: checkpoint tuples dumped as JSON, one per
line or as a list), else it stays without one.
"""

from __future__ import annotations

import dataclasses
import json
import re
import uuid
from typing import Optional

from toolcommit.checker.logs.adapters.calls import ERROR, OK, OPEN, Call
from toolcommit.checker.logs.adapters.docs import Lines, documents, names, read_text
from toolcommit.model.errors import InputError, UsageError

_REPR_ID = re.compile(r"tool_call_id=['\"]([^'\"]+)['\"]")
_REPR_ERR = re.compile(r"status=['\"]error['\"]")


def jsonable(obj):
    """A ``default=`` for ``json.dumps`` of events and checkpoint tuples: messages (pydantic
    models) as their fields, named tuples and dataclasses as dicts, bytes as hex, anything
    else as its repr."""
    if hasattr(obj, "model_dump"):
        return obj.model_dump()
    if hasattr(obj, "_asdict"):
        return obj._asdict()
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    if isinstance(obj, (bytes, bytearray)):
        return obj.hex()
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    return repr(obj)


def _message_field(out, name: str):
    """A field of a dumped ToolMessage: its own dict, langchain's ``dumpd`` form
    (``kwargs``), or the repr string."""
    if isinstance(out, dict):
        if name in out:
            return out[name]
        if isinstance(out.get("kwargs"), dict):
            return out["kwargs"].get(name)
        return None
    if isinstance(out, str):
        if name == "tool_call_id":
            m = _REPR_ID.search(out)
            return m.group(1) if m else None
        if name == "status":
            return "error" if _REPR_ERR.search(out) else None
    return None


def _task(meta: dict) -> str:
    ns = str(meta.get("langgraph_checkpoint_ns") or meta.get("checkpoint_ns") or "")
    last = ns.split("|")[-1]
    return last.partition(":")[2] or last


def _input(data: dict) -> tuple[Optional[dict], Optional[str]]:
    inp = data.get("input")
    if isinstance(inp, dict) and inp.get("type") == "tool_call" and "args" in inp:
        return inp.get("args"), inp.get("id")
    if inp is None:
        return None, None
    return (inp if isinstance(inp, dict) else {"input": inp}), None


def uuid7(run_id) -> Optional[int]:
    """The run id as a 128-bit integer when it is a UUIDv7 (time first), else None.

    >>> uuid7("01a22d3c-0362-7530-a040-a58ed60a0d3f") > uuid7("01a22d3c-0323-7772-b1ee-214e562f4e7e")
    True
    >>> uuid7("6ebf390f-81b0-4a3d-8883-bcd6dd01091b") is None   # a UUIDv4: no time
    True
    """
    try:
        u = uuid.UUID(str(run_id))
    except ValueError:
        return None
    return u.int if u.version == 7 else None


def _cid(v) -> Optional[str]:
    """A tool call id: a string (a number is written as one), None when absent;
    `ValueError` for any other value (the caller adds file:line)."""
    if v is None or v == "":
        return None
    if isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool)):
        return str(v)
    raise ValueError(f"a tool_call_id must be a string, not {type(v).__name__}")


class _Run:
    def __init__(self, ev: dict, fi: int, line: int, writer: str, rid: str):
        data = ev.get("data") or {}
        self.rid, self.time = rid, uuid7(rid) if rid else None
        self.args, cid = _input(data)
        meta = ev.get("metadata") or {}
        if not isinstance(meta, dict):
            raise TypeError("metadata must be an object")
        self.call_id = _cid(cid) or _cid(meta.get("tool_call_id"))
        self.ev, self.meta, self.fi, self.line, self.writer = ev, meta, fi, line, writer
        self.outcome, self.error, self.end_line, self.result = OPEN, "", 0, None

    def end(self, ev: dict, line: int) -> None:
        data = ev.get("data") or {}
        self.end_line = line
        if ev["event"] == "on_tool_error":
            self.outcome = ERROR
            self.error = _error_text(data.get("error"))
            self.call_id = _cid(data.get("tool_call_id")) or self.call_id
        else:
            out = data.get("output")
            self.result = out
            self.call_id = _cid(_message_field(out, "tool_call_id")) or self.call_id
            failed = _message_field(out, "status") == "error"
            self.outcome = ERROR if failed else OK
            self.error = "the tool returned an error message" if failed else ""
        if self.args is None:
            self.args, _ = _input(data)


def _error_text(err) -> str:
    if isinstance(err, dict):
        return str(err.get("type") or err.get("message") or err)
    text = str(err or "on_tool_error")
    return text.split("(", 1)[0] if re.match(r"^[A-Za-z_][\w.]*\(", text) else text


def _runs(path: str, fi: int, writer: str, notes: list) -> dict[str, _Run]:
    """The tool runs of one events file by run id (a start without one gets an id of its
    own, with a note)."""
    text = read_text(path)
    lines = Lines(text)
    runs: dict[str, _Run] = {}
    unnamed = 0
    for value, at in documents(text, path):
        if not isinstance(value, dict) or not str(value.get("event", "")).startswith("on_tool_"):
            continue
        line = lines.at(at)
        kind, rid = value["event"], str(value.get("run_id") or "")
        try:
            if kind == "on_tool_start":
                if not rid:
                    unnamed += 1
                    runs[f"{path}:{line}"] = _Run(value, fi, line, writer, "")
                elif rid not in runs:
                    runs[rid] = _Run(value, fi, line, writer, rid)
            elif kind in ("on_tool_end", "on_tool_error"):
                if not rid:
                    raise InputError(
                        f"{kind} without a run_id: which run it ends cannot be "
                        "told; dump the events whole (every event has its "
                        "run_id)",
                        path,
                        line,
                    )
                run = runs.get(rid)
                if run is None:
                    raise InputError(
                        f"{kind} for run {rid} that never started in this file; "
                        "dump every event of the stream, starts included",
                        path,
                        line,
                    )
                run.end(value, line)
        except (ValueError, TypeError, AttributeError, KeyError) as e:
            raise InputError(
                f"not a LangGraph stream event ({type(e).__name__}: {e})", path, line
            ) from None
    if unnamed:
        notes.append(
            f"{writer}: {unnamed} on_tool_start event(s) without a run_id, each read "
            "as a run of its own (never merged with another)"
        )
    return runs


def _in_order(files: list[tuple[str, dict]]) -> list[_Run]:
    """The runs of every file, a run exported twice once, each with its `order`: its UUIDv7
    run id when every run has one, else its file and line (see the module docstring).
    Files are taken by their first run's time, then by name, so that which copy of a run
    exported twice is kept does not depend on the command line either."""

    def first(item):
        times = [r.time for r in item[1].values() if r.time is not None]
        return (min(times) if times else 1 << 128, item[0])

    runs: list[_Run] = []
    seen: set = set()
    for _, got in sorted(files, key=first):
        runs += [r for rid, r in got.items() if rid not in seen]
        seen.update(got)
    timed = all(r.time is not None for r in runs)
    for r in runs:
        r.order = (r.time,) if timed else (r.fi, r.line)
    return runs


def _refuse_untimed(runs: list[_Run]) -> None:
    """A call id with attempts in two files whose runs carry no time: its order is unknown."""
    if all(r.time is not None for r in runs):
        return
    files: dict[str, set] = {}
    for r in runs:
        if r.call_id:
            files.setdefault(r.call_id, set()).add(r.writer)
    for cid, where in files.items():
        if len(where) > 1:
            raise UsageError(
                f"call id {cid} runs in {' and '.join(sorted(where))}, whose run "
                "ids carry no time (not UUIDv7), so the events cannot say which "
                "attempt came first; dump the events with the run ids "
                "langchain-core mints (UUIDv7), or check one file at a time"
            )


def _same(a, b) -> bool:
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def emitted_calls(path: str) -> list[dict]:
    """The tool calls (``id``, ``name``, ``args``) the model emitted, read from dumped
    checkpoints (any ``tool_calls`` list inside them), first occurrence of each id."""
    seen: dict[str, dict] = {}

    def walk(v, depth=0):
        if depth > 40:
            return
        if isinstance(v, dict):
            tcs = v.get("tool_calls")
            if isinstance(tcs, list):
                for tc in tcs:
                    if (
                        isinstance(tc, dict)
                        and isinstance(tc.get("id"), str)
                        and tc["id"]
                        and tc["id"] not in seen
                    ):  # other ids match nothing
                        seen[tc["id"]] = tc
            for x in v.values():
                walk(x, depth + 1)
        elif isinstance(v, list):
            for x in v:
                walk(x, depth + 1)

    text = read_text(path)
    for value, _ in documents(text, path):
        walk(value)
    return list(seen.values())


def _fill_ids(runs: list[_Run], emitted: list[dict], notes: list[str]) -> None:
    """Give runs without a call id the id of their task's other attempts, else of the one
    emitted call of the same tool and arguments."""
    for r in runs:
        if r.call_id:
            continue
        task = _task(r.meta)
        twin = [
            o.call_id
            for o in runs
            if o.call_id
            and task
            and _task(o.meta) == task
            and o.ev.get("name") == r.ev.get("name")
            and _same(o.args, r.args)
        ]
        if not twin:
            twin = [
                e["id"]
                for e in emitted
                if e.get("name") == r.ev.get("name") and _same(e.get("args"), r.args)
            ]
        if len(set(twin)) == 1:
            r.call_id = twin[0]
            notes.append(
                f"{r.ev.get('name')} run {r.ev.get('run_id')} never ended; its call "
                f"id {twin[0]} comes from its task's other attempt or the checkpoint"
            )


def read(
    paths, first_index: int = 0, checkpoints=(), writers: Optional[list] = None
) -> tuple[list[Call], list[str]]:
    """The tool calls in event files `paths` (file indexes from `first_index`; `writers`
    names each file's writer, `names(paths)` by default), and notes. `InputError` on a file
    with no LangGraph event; `UsageError` when the order of a call's attempts cannot be
    told (see the module docstring)."""
    writers = list(writers or names(paths))
    notes: list[str] = []
    files = []
    for i, (fi, path) in enumerate(enumerate(paths, first_index)):
        got = _runs(path, fi, writers[i], notes)
        if not got:
            text = read_text(path)
            if not any(isinstance(v, dict) and "event" in v for v, _ in documents(text, path)):
                raise InputError(
                    "no LangGraph stream events found: expected one "
                    "astream_events(version='v2') event per line",
                    path,
                )
        files.append((writers[i], got))
    runs = _in_order(files)
    emitted = [tc for cp in checkpoints for tc in emitted_calls(cp)]
    _fill_ids(runs, emitted, notes)
    _refuse_untimed(runs)
    started = {r.call_id for r in runs}
    unstarted = sorted({e["id"] for e in emitted} - started)
    if unstarted:
        notes.append(
            f"the checkpoints hold {len(unstarted)} tool call(s) the model emitted "
            f"that no event shows starting: {', '.join(unstarted[:5])}"
        )
    return [_call(r) for r in runs], notes


def _call(r: _Run) -> Call:
    meta, ev = r.meta, r.ev
    parents = ev.get("parent_ids")
    parents = [str(x) for x in parents] if isinstance(parents, list) else []
    ident = f"run {r.rid}" if r.rid else f"run at {r.writer}:{r.line}"
    root = parents[0] if parents else (r.rid or ident)
    view = {
        "tool": ev.get("name", ""),
        "call_id": r.call_id,
        "args": r.args,
        "result": r.result,
        "metadata": meta,
        "tags": ev.get("tags") or [],
        "run_id": ev.get("run_id"),
        "parent_ids": parents,
        "task": _task(meta),
    }
    scope = meta.get("thread_id") or f"run:{root}"
    return Call(
        tool=str(ev.get("name", "")),
        call_id=r.call_id,
        args=r.args,
        outcome=r.outcome,
        writer=r.writer,
        order=r.order,
        loc=(r.fi, r.line),
        end_loc=(r.fi, r.end_line) if r.end_line else (0, 0),
        error=r.error,
        ident=ident,
        view=view,
        scope=str(scope),
    )
