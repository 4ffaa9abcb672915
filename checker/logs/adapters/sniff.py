"""Which trace source a file looks like, for the hint when it is read as an intent log.

Examples
--------
>>> looks_like_value({"object": "trace.span", "span_data": {"type": "function"}})
'openai-agents'
>>> looks_like_value({"event": "on_tool_start", "run_id": "r1"})
'langgraph'
>>> looks_like_value({"type": "proposal"}) is None
True
"""

from __future__ import annotations

import json
from typing import Optional

_HEAD = 1 << 16


def looks_like_value(v) -> Optional[str]:
    """The source whose export one decoded JSON value looks like, or None."""
    while isinstance(v, list) and v:
        v = v[0]
    if not isinstance(v, dict):
        return None
    if v.get("object") in ("trace", "trace.span") or (
        isinstance(v.get("data"), list)
        and v["data"]
        and looks_like_value(v["data"][0]) == "openai-agents"
    ):
        return "openai-agents"
    if "resourceSpans" in v or "resource_spans" in v or ("context" in v and "name" in v):
        return "otel"
    if str(v.get("event", "")).startswith("on_"):
        return "langgraph"
    if (
        isinstance(v.get("events"), list)
        and v["events"]
        and isinstance(v["events"][0], dict)
        and ("eventType" in v["events"][0] or "event_type" in v["events"][0])
    ):
        return "temporal"
    if (
        "workflow_status" in v
        or "operation_outputs" in v
        or ("function_id" in v and ("workflow_uuid" in v or "function_name" in v))
    ):
        return "dbos"
    return None


def looks_like(path: str) -> Optional[str]:
    """The source whose export the file at `path` looks like (by its first bytes), or
    None: never raises."""
    try:
        with open(path, "rb") as f:
            head = f.read(_HEAD)
    except OSError:
        return None
    if head.startswith(b"SQLite format 3\x00"):
        return _sqlite_source(path)
    text = head.decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
    try:
        value, _ = json.JSONDecoder().raw_decode(text)
    except (ValueError, RecursionError):  # json's decoder recurses on deep nesting
        try:
            value = json.loads(text.split("\n", 1)[0])
        except (ValueError, RecursionError):  # a document longer than the head: its keys
            return next((src for needle, src in _KEYS if needle in text[:4096]), None)
    return looks_like_value(value)


INTENT_LOG_DB = "intent-log-db"  # toolcommit's own SQLite log: `toolcommit export` it


def _sqlite_source(path: str) -> Optional[str]:
    """``INTENT_LOG_DB`` for the library's own SQLite log, ``dbos`` for a DBOS system
    database, else None; the file is opened read-only and never changed."""
    import os
    import sqlite3
    from pathlib import Path

    try:
        # immutable where no writer has it open: then nothing is left beside it
        live = any(os.path.exists(path + x) for x in ("-wal", "-shm"))
        uri = Path(path).resolve().as_uri() + ("?mode=ro" if live else "?mode=ro&immutable=1")
        with sqlite3.connect(uri, uri=True, timeout=1.0) as db:
            names = {
                r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
    except (sqlite3.Error, OSError, ValueError):
        return None
    finally:
        if "db" in locals():
            db.close()
    if "tc_writers" in names:
        return INTENT_LOG_DB
    if "workflow_status" in names or "operation_outputs" in names:
        return "dbos"
    return None


_KEYS = (
    ('"resourceSpans"', "otel"),
    ('"resource_spans"', "otel"),
    ('"object": "trace', "openai-agents"),
    ('"eventType"', "temporal"),
    ('"event": "on_', "langgraph"),
    ('"operation_outputs"', "dbos"),
)
