"""DBOS system database (workflow and step tables) -> `Call`s.

Reads ``workflow_status`` and ``operation_outputs`` from a DBOS system database: a SQLite
file (opened read-only), a ``postgresql://`` URL (schema ``dbos``; needs the ``postgres``
extra), or their rows exported as JSON (``sqlite3 -json DB 'select * from
operation_outputs'``, ``psql``'s ``row_to_json`` lines, ``dbos workflow list`` output, or
``{"workflow_status": [...], "operation_outputs": [...]}``). Each recorded step is one
tool call:

==============  ==========================================================================
tool            ``function_name``
arguments       not recorded (DBOS records a step's output, not its inputs), so each step
                is its own intent
call id         ``WORKFLOW_ID:FUNCTION_ID``: ``DBOS.workflow_id`` and ``DBOS.step_id``, the
                same across recoveries (what a step sends as its idempotency key)
outcome         ``output`` recorded: succeeded; ``error`` recorded: failed (an unknown
                outcome, which DBOS replays on recovery and never runs again)
scope (default) the workflow id
writer          one dispatch of the workflow (``WORKFLOW_ID@N``)
==============  ==========================================================================

DBOS records a step when it ends, so a step its process was running when it died has no
row; recovery runs it again and records that run. ``recovery_attempts`` counts a
workflow's dispatches: n > 1 means n - 1 stopped before the workflow ended. The first
step whose recorded start is at or after the last dispatch (the workflow's
``started_at_epoch_ms``) is the first the recovering dispatch ran, assuming a stopped
dispatch's last step started at least `CLOCK_MS` before its recovery, by clocks that agree
(DBOS on SQLite stamps a dispatch to the second): the stopped dispatch may have been
running it (or stopped between steps), so it may have run twice. The tables cannot say
which, so the step is a suspect (`Call.suspect`: a possible I1 without a ledger, never a
certain finding; the log ``--emit`` writes cannot carry it); ``--ledger`` decides. Steps
before it are the stopped dispatches' (writer ``WORKFLOW_ID@1``, or ``@1-K`` for several).
Step retries within one dispatch (``retries_allowed``) leave one row, the last
attempt's: they are invisible here. Rows of child workflows and of DBOS's own operations
(``DBOS.sleep``, ``DBOS.send``...) are not tool calls and are left out with a note.
Serialized values are decoded only when they are portable JSON (never unpickled). In a
database, a location's line is the row's number in its table, ordered by workflow id and
step id.
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass, field
from typing import Optional

from toolcommit.checker.logs.adapters.calls import ERROR, OK, Call
from toolcommit.checker.logs.adapters.docs import Lines, documents, read_text
from toolcommit.model.errors import InputError, UsageError

CLOCK_MS = 1000
_ALIASES = {"workflow_id": "workflow_uuid", "dequeued_at": "started_at_epoch_ms"}


@dataclass
class Tables:
    """The rows read from one source, with where each came from (file index, line)."""

    workflows: dict = field(default_factory=dict)  # workflow id -> (row, loc)
    steps: list = field(default_factory=list)  # (row, loc)


def _row(rec: dict) -> dict:
    return {_ALIASES.get(k, k): v for k, v in rec.items()}


def _add(t: Tables, rec: dict, loc: tuple, path: str) -> None:
    rec = _row(rec)
    if "function_id" in rec:
        if not rec.get("workflow_uuid"):
            raise InputError(
                "a step row without its workflow_uuid: export the "
                "operation_outputs table itself (sqlite3 -json, psql "
                "row_to_json)",
                path,
                loc[1],
            )
        t.steps.append((rec, loc))
    elif rec.get("workflow_uuid") and "status" in rec:
        t.workflows.setdefault(str(rec["workflow_uuid"]), (rec, loc))


def _from_json(path: str, fi: int, t: Tables) -> None:
    text = read_text(path)
    lines = Lines(text)
    for value, at in documents(text, path):
        groups = value if isinstance(value, list) else [value]
        if isinstance(value, dict) and ("workflow_status" in value or "operation_outputs" in value):
            groups = list(value.get("workflow_status") or []) + list(
                value.get("operation_outputs") or []
            )
        cursor = at  # rows are written in order: each one's id after the last's
        for rec in groups:
            if not isinstance(rec, dict):
                raise InputError("a DBOS row must be a JSON object", path, lines.at(cursor))
            key = rec.get("workflow_uuid") or rec.get("workflow_id")
            found = text.find(json.dumps(key), cursor) if isinstance(key, str) else -1
            cursor = found + 1 if found >= 0 else cursor
            _add(t, rec, (fi, lines.at(found if found >= 0 else cursor)), path)


def _query(conn, table: str, order: str) -> list[dict]:
    cur = conn.cursor()
    cur.execute(f"SELECT * FROM {table} ORDER BY {order}")
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def _from_rows(conn, fi: int, t: Tables, prefix: str, path: str) -> None:
    wf = _query(conn, f"{prefix}workflow_status", "workflow_uuid")
    ops = _query(conn, f"{prefix}operation_outputs", "workflow_uuid, function_id")
    for n, rec in enumerate(wf, 1):
        _add(t, rec, (fi, n), path)
    for n, rec in enumerate(ops, 1):
        _add(t, rec, (fi, n), path)


def _from_sqlite(path: str, fi: int, t: Tables) -> None:
    uri = "file:" + os.path.abspath(path).replace("?", "%3f").replace("#", "%23") + "?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True)
        try:
            _from_rows(conn, fi, t, "", path)
        finally:
            conn.close()
    except sqlite3.Error as e:
        raise InputError(
            f"cannot read the DBOS tables of this SQLite database ({e}); give "
            "the system database DBOS ran with (system_database_url)",
            path,
        ) from None


def _from_postgres(url: str, fi: int, t: Tables) -> None:
    try:
        import psycopg
    except ImportError:
        raise UsageError(
            "reading a PostgreSQL system database needs psycopg: pip install "
            "'toolcommit[postgres]' (or export the tables as JSON)"
        ) from None
    try:
        with psycopg.connect(url) as conn:
            conn.read_only = True  # this reader never writes the user's database
            _from_rows(conn, fi, t, "dbos.", url)
            conn.rollback()
    except psycopg.Error as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise InputError(
            f"cannot read the DBOS tables ({first}); give the system "
            "database URL DBOS ran with (schema dbos)",
            display_name(url),
        ) from None


def display_name(url: str) -> str:
    """A source as reports show it: a database URL without its password."""
    head, sep, tail = url.partition("@")
    if not sep or "://" not in head:
        return url
    scheme, _, cred = head.partition("://")
    return f"{scheme}://{cred.partition(':')[0]}@{tail}"


def tables(paths, first_index: int = 0) -> Tables:
    """The workflow and step rows of every source in `paths`."""
    t = Tables()
    for fi, path in enumerate(paths, first_index):
        if path.startswith(("postgresql://", "postgres://")):
            _from_postgres(path, fi, t)
            continue
        try:
            with open(path, "rb") as f:
                magic = f.read(16)
        except FileNotFoundError:
            raise InputError(
                "no such file; give the DBOS system database (a SQLite file or "
                "a postgresql:// URL) or its tables exported as JSON",
                path,
            ) from None
        except OSError as e:
            raise InputError(f"cannot read this file ({e})", path) from None
        if magic == b"SQLite format 3\x00":
            _from_sqlite(path, fi, t)
        else:
            _from_json(path, fi, t)
    return t


def _portable(value, serialization) -> object:
    if serialization != "portable_json" or not isinstance(value, str):
        return None
    try:
        return json.loads(value)
    except ValueError:
        return None


def _int(v) -> Optional[int]:
    try:
        return None if v is None else int(v)
    except (TypeError, ValueError):
        return None


def read(paths, first_index: int = 0) -> tuple[list[Call], list[str]]:
    """The recorded steps of every workflow in `paths` (file indexes from `first_index`),
    with recovered dispatches placed as described above, and notes. `InputError` on a
    source with no step row."""
    t = tables(paths, first_index)
    if not t.steps:
        raise InputError(
            "no DBOS step rows found (operation_outputs is empty): give the "
            "system database after the workflows ran, or its operation_outputs "
            "rows",
            paths[0] if paths else "",
        )
    by_wf: dict[str, list] = {}
    other = 0
    for rec, loc in t.steps:
        name = str(rec.get("function_name") or "")
        if rec.get("child_workflow_id") or name.startswith("DBOS."):
            other += 1
            continue
        by_wf.setdefault(str(rec["workflow_uuid"]), []).append((rec, loc))
    notes: list[str] = []
    if other:
        notes.append(
            f"{other} row(s) of child workflows or DBOS operations (DBOS.sleep, "
            "DBOS.send...) are not tool calls and were left out"
        )
    calls: list[Call] = []
    for wid in sorted(by_wf):
        steps = sorted(by_wf[wid], key=lambda s: _int(s[0].get("function_id")) or 0)
        wf = t.workflows.get(wid, ({}, None))[0]
        calls += _workflow(wid, wf, steps, notes)
    missing = sorted(set(by_wf) - set(t.workflows))
    if missing:
        notes.append(
            f"{len(missing)} workflow(s) with steps but no workflow_status row "
            f"(their dispatches are unknown): {', '.join(missing[:5])}"
        )
    for wid, (wf, _) in sorted(t.workflows.items()):
        if wf.get("status") == "PENDING":
            notes.append(
                f"workflow {wid} is PENDING: if its executor stopped, the step after "
                "its last recorded one may have run and is not recorded yet"
            )
    return calls, notes


def _recovered(wid: str, wf: dict, steps: list, notes: list) -> Optional[int]:
    """The index in `steps` of the first step the last dispatch ran, when the workflow was
    dispatched more than once, else None; notes say what the tables show of the stops."""
    n = _int(wf.get("recovery_attempts")) or 0
    if n < 2:
        return None
    last = _int(wf.get("started_at_epoch_ms"))
    starts = [_int(r.get("started_at_epoch_ms")) for r, _ in steps]
    if last is None or any(s is None for s in starts):
        notes.append(
            f"workflow {wid} was dispatched {n} times; the tables keep no start "
            "times to tell which step a stopped dispatch was running: judge it "
            "with --ledger"
        )
        return None
    after = [i for i, s in enumerate(starts) if s >= last]
    if not after:
        notes.append(
            f"workflow {wid} was dispatched {n} times; its last dispatch ran no "
            "step (it stopped after its last recorded step)"
        )
        return None
    first = steps[after[0]][0]
    notes.append(
        f"workflow {wid} was dispatched {n} times: step {first['function_id']} "
        f"({first['function_name']}) is the first its last dispatch ran, read from "
        "the recorded start times, assuming a stopped dispatch's last step started "
        f"at least {CLOCK_MS} ms before its recovery"
    )
    return after[0]


def _suspect(wid: str, n: int) -> str:
    earlier = "an earlier dispatch" if n > 2 else "the stopped dispatch"
    return (
        f"workflow {wid} was dispatched {n} times and this is the first step its last "
        f"dispatch ran: {earlier} may have been running it too (DBOS records a step "
        "only when it ends)"
    )


def _workflow(wid: str, wf: dict, steps: list, notes: list) -> list[Call]:
    n = max(_int(wf.get("recovery_attempts")) or 1, 1)
    cut = _recovered(wid, wf, steps, notes)
    before = f"{wid}@{n - 1}" if n == 2 else f"{wid}@1-{n - 1}"
    calls = []
    for i, (rec, loc) in enumerate(steps):
        fid = rec.get("function_id")
        name = str(rec.get("function_name") or "")
        ser = rec.get("serialization")
        view = {
            "tool": name,
            "call_id": f"{wid}:{fid}",
            "args": None,
            "workflow_id": wid,
            "function_id": fid,
            "workflow_name": wf.get("name"),
            "status": wf.get("status"),
            "recovery_attempts": wf.get("recovery_attempts"),
            "inputs": _portable(wf.get("inputs"), wf.get("serialization")),
            "result": _portable(rec.get("output"), ser),
            "step": rec,
            "workflow": wf,
        }
        failed = rec.get("error") is not None
        calls.append(
            Call(
                tool=name,
                call_id=f"{wid}:{fid}",
                args=None,
                view=view,
                scope=wid,
                ident=f"step {fid} of {wid}",
                loc=loc,
                outcome=ERROR if failed else OK,
                writer=before if cut is not None and i < cut else f"{wid}@{n}",
                order=(wid, i),
                error="the step raised (its error is recorded)" if failed else "",
                suspect=_suspect(wid, n) if i == cut else "",
            )
        )
    return calls
