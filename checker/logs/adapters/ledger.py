"""Provider-side effects (a ledger) and how they join the calls of a trace.

Formats, told apart by content (CSV by the ``.csv`` name):

- **Stripe events** (``GET /v1/events`` output, a JSON array, or one event per line):
  every API request that caused events is one effect (``request.id``, counted once over
  every file), with its ``request.idempotency_key``; events Stripe raised by itself (no
  request) are not. A list page with ``has_more: true`` is part of a longer list: unless a
  last page of that list (``has_more: false``, same ``url``) is given too, the ledger is
  *partial* (`Ledger.partial`), and a report that found nothing is inconclusive.
- **Powertools idempotency records** (one per line, a list, or a DynamoDB scan with
  ``Items`` and type descriptors): ``COMPLETED`` and ``EXPIRED`` records are one effect
  each under their ``id``; an ``INPROGRESS`` one is an outcome not known yet (a note). A
  scan page with ``LastEvaluatedKey`` is partial unless a last page (without one) is given.
- **A plain ledger**, JSON Lines or CSV: ``idempotency_key``, ``tool``, ``args`` (an
  object; in CSV a JSON cell), ``scope``, ``effect_id``, ``kind`` (``apply`` by default, or
  ``compensate``); each line one effect.

`read` gives a `Ledger`; `join` attaches each effect to a call: by idempotency key (the key the call sent: see
`Rules.idempotency_key`; for Powertools also the hash after ``#``), else by canonical intent
(canonicalizer v1 over tool, args and scope; a ledger line without a scope joins the one
scope where a call of that tool and arguments ran). An effect that joins no call is a
possible ``ORPHAN_EFFECT`` (`orphans`), never passed over: it is other work on the account
(leave it out of the ledger) or a request sent around the log without its key (a client
that minted its own), perhaps a second effect of an intent.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from dataclasses import dataclass, field
from typing import Iterator, Optional

from toolcommit.checker.logs import asks
from toolcommit.checker.logs.adapters.calls import Call, Placed, log_args
from toolcommit.checker.logs.adapters.docs import Lines, documents, read_text, shallow
from toolcommit.checker.logs.findings import MAX_PER_PROPERTY, Citation, Finding, short
from toolcommit.model.canon import CanonError, canonical_intent
from toolcommit.model.errors import InputError

POWERTOOLS = ("INPROGRESS", "COMPLETED", "EXPIRED")


@dataclass
class Entry:
    """One provider-side effect (or, for `status` INPROGRESS, a pending one)."""

    source: str  # stripe | powertools | plain
    idempotency_key: Optional[str]
    tool: Optional[str] = None
    args: Optional[dict] = None
    scope: Optional[str] = None
    effect_id: Optional[str] = None
    kind: str = "apply"
    status: str = ""
    file_index: int = 0
    line: int = 0


_INTEGER = re.compile(r"[+-]?[0-9]{1,38}")  # DynamoDB numbers have 38 digits at most


def _number(x) -> object:
    """A DynamoDB ``N`` value (a decimal string, exponent allowed) as an int or a float;
    `ValueError` naming it otherwise."""
    text = str(x).strip()
    if _INTEGER.fullmatch(text):
        return int(text)
    try:
        return float(text)
    except ValueError:
        raise ValueError(f'{{"N": {json.dumps(x)}}} is not a DynamoDB number') from None


def _dynamo(v):
    """Unwrap DynamoDB type descriptors ({"S": "x"} -> "x"); `ValueError` on a number that
    is none."""
    if isinstance(v, dict) and len(v) == 1:
        ((t, x),) = v.items()
        if t in ("S", "N", "BOOL", "NULL"):
            return _number(x) if t == "N" else x
        if t == "M":
            return {k: _dynamo(y) for k, y in x.items()}
        if t == "L":
            return [_dynamo(y) for y in x]
    return v


def _items(value, pages: list):
    """The records in one decoded document: unwrap lists, Stripe lists, scans; each list
    page's (list name, whether more pages follow) goes to `pages`."""
    if isinstance(value, list):
        for v in value:
            yield from _items(v, pages)
    elif isinstance(value, dict):
        if value.get("object") == "list" and isinstance(value.get("data"), list):
            pages.append(
                (f"Stripe list {value.get('url') or ''}".strip(), value.get("has_more") is True)
            )
            yield from _items(value["data"], pages)
        elif isinstance(value.get("Items"), list):
            pages.append(("DynamoDB scan", bool(value.get("LastEvaluatedKey"))))
            yield from _items(value["Items"], pages)
        elif isinstance(value.get("Item"), dict):
            yield value["Item"]
        else:
            yield value


def _name(v, field: str) -> Optional[str]:
    """An id or name field as text (a string, or a number written as one); None when
    absent; `ValueError` naming the field for any other value."""
    if v is None or v == "":
        return None
    if isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool)):
        return str(v)
    raise ValueError(f"{field} must be a string, not {json.dumps(v)[:40]}")


def _entry(rec: dict, fi: int, line: int, path: str) -> Optional[Entry]:
    """The effect of one record; `ValueError` (the caller adds file:line) on a field of the
    wrong type."""
    if rec.get("object") == "event":
        req = rec.get("request") or {}
        if not isinstance(req, dict) or not req.get("id"):
            return None  # raised by Stripe itself, not by a request
        data = rec.get("data")
        obj = data.get("object") if isinstance(data, dict) else None
        return Entry(
            "stripe",
            _name(req.get("idempotency_key"), "request.idempotency_key"),
            effect_id=_name(req["id"], "request.id"),
            args=obj if isinstance(obj, dict) else None,
            file_index=fi,
            line=line,
        )
    rec = {k: _dynamo(v) for k, v in rec.items()}
    if rec.get("status") in POWERTOOLS and "id" in rec:
        rid = _name(rec["id"], "id") or ""
        return Entry(
            "powertools", rid, effect_id=rid, status=rec["status"], file_index=fi, line=line
        )
    args = rec.get("args")
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except (ValueError, RecursionError):
            raise ValueError("args is not a JSON object") from None
        if not shallow(args):
            raise ValueError("args nest too deep")
    if args is not None and not isinstance(args, dict):
        raise ValueError("args must be a JSON object")
    kind = rec.get("kind") or "apply"
    if kind not in ("apply", "compensate"):
        raise ValueError(f"kind {json.dumps(kind)[:40]}: use apply or compensate")
    idem, tool = (
        _name(rec.get("idempotency_key"), "idempotency_key"),
        _name(rec.get("tool"), "tool"),
    )
    if not idem and not (tool and args is not None):
        raise ValueError(
            "a ledger line needs an idempotency_key, or a tool and its args "
            "(to join by canonical intent)"
        )
    return Entry(
        "plain",
        idem,
        tool=tool,
        args=args,
        scope=_name(rec.get("scope"), "scope"),
        effect_id=_name(rec.get("effect_id"), "effect_id"),
        kind=kind,
        file_index=fi,
        line=line,
    )


def _csv_rows(text: str):
    for row in csv.DictReader(io.StringIO(text)):
        yield {k: v for k, v in row.items() if k and v not in (None, "")}


def _placed(lines: Lines, records, at: int) -> Iterator[tuple[object, int]]:
    """Each record of one document (starting at offset `at`) with its line: where its id
    is written, else the document's first line. Records come in the order they are
    written, so each search starts where the last id was found: one pass over a document,
    however many records one long line holds (it was a search from the document's start
    per record: quadratic)."""
    cursor = at
    for rec in records:
        rid = rec.get("id") if isinstance(rec, dict) else None
        if isinstance(rid, dict):  # a DynamoDB descriptor
            try:
                rid = _dynamo(rid)
            except ValueError:  # `read` says so, at the document's line
                rid = None
        if not isinstance(rid, str):
            yield rec, lines.at(at)
            continue
        needle = json.dumps(rid)
        found = lines.text.find(needle, cursor)
        if found < 0:  # written with other escapes: the document's line
            yield rec, lines.at(at)
            continue
        cursor = found + len(needle)
        yield rec, lines.at(found)


@dataclass
class Ledger:
    """The effects read from ledger files, and why the ledger is partial (one reason per
    list given only in part: empty when every list is whole)."""

    entries: list
    partial: list = field(default_factory=list)


def read(paths, first_index: int = 0) -> Ledger:
    """The effects in ledger files `paths` (file indexes from `first_index`), one per API
    request (Stripe, over every file) or record; `InputError` on an unusable line."""
    out: list[Entry] = []
    pages: list = []
    seen_requests: set = set()
    for fi, path in enumerate(paths, first_index):
        text = read_text(path)
        here: list = []
        if path.endswith(".csv"):
            recs = [(r, n) for n, r in enumerate(_csv_rows(text), 2)]
        else:
            lines = Lines(text)
            recs = [
                placed
                for v, at in documents(text, path)
                for placed in _placed(lines, _items(v, here), at)
            ]
        pages += [(name, more, path) for name, more in here]
        for rec, line in recs:
            if not isinstance(rec, dict):
                raise InputError("a ledger record must be a JSON object", path, line)
            try:
                e = _entry(rec, fi, line, path)
            except ValueError as err:
                raise InputError(str(err), path, line) from None
            if e is None or (e.source == "stripe" and e.effect_id in seen_requests):
                continue
            seen_requests.add(e.effect_id)
            out.append(e)
    return Ledger(out, _partial(pages))


def _partial(pages) -> list[str]:
    """Why the ledger is partial: each list of which a page says more follow, and no last
    page was given."""
    last = {name for name, more, _ in pages if not more}
    out = []
    for name in dict.fromkeys(name for name, more, _ in pages if more):
        if name not in last:
            files = sorted({p for n, more, p in pages if n == name and more})
            flag = "LastEvaluatedKey" if name == "DynamoDB scan" else "has_more: true"
            out.append(
                f"{', '.join(files)} is a page of a longer {name} ({flag}) and its "
                "last page is not given: effects on the other pages are not counted; "
                "give every page (--ledger once per page)"
            )
    return out


def _digest(tool, args, scope) -> Optional[str]:
    try:
        return canonical_intent(tool, args, scope).digest
    except CanonError:
        return None


@dataclass
class Joined:
    """The effect events that joined calls, notes on what did not, the findings on the
    effects that joined no call with how many more were not listed (`orphans`), and what
    keeps a run from conforming however clean (`missing`: each a sentence)."""

    effects: list
    notes: list
    orphans: tuple = ((), 0)
    missing: list = field(default_factory=list)
    mismatched: list = field(default_factory=list)  # EFFECT_ARGS findings (`mismatch`)


def join(
    entries: list[Entry], calls: list[Call], names: list[str], source: str = "trace"
) -> Joined:
    """Attach each effect to a call (see the module docstring); `names` are display names
    by file index, unique among the run's files (a ledger's writer is ``ledger:NAME``);
    `source` names what the calls came from in the notes, which explain each effect left
    out (`why_unjoined`), each also a finding (`orphans`). Pure.

    An effect joined by canonical intent names the key of its intent's calls when they all
    share one (then a second effect is also a second effect for that key: P1); when the
    intent's calls have several keys it is the intent's alone, under its ledger line."""
    by_key: dict[str, Call] = {}
    keys_of: dict[str, set] = {}
    by_tool_args: dict[str, set] = {}
    for c in calls:
        for k in (c.idempotency_key, c.call_id):
            if k:
                by_key.setdefault(k, c)
        if c.args is not None:
            d = _digest(c.tool, c.args, c.scope)
            if d:
                keys_of.setdefault(d, set()).add(c.key)
            d0 = _digest(c.tool, c.args, "")
            if d0:
                by_tool_args.setdefault(d0, set()).add(c.scope)
    effects, notes, unjoined, pending, mismatched = [], [], [], [], []
    seq: dict[str, int] = {}
    for e in entries:
        if e.status == "INPROGRESS":
            pending.append(e.idempotency_key)
            continue
        ev = _joined(e, by_key, keys_of, by_tool_args, names)
        if ev is None:
            unjoined.append(e)
            continue
        c = by_key.get(ev.get("key") or "")
        if c is not None and len(mismatched) < MAX_PER_PROPERTY:
            mismatched += mismatch(e, c, names)
        seq[ev["writer"]] = ev["seq"] = seq.get(ev["writer"], 0) + 1
        effects.append(Placed(ev, e.file_index, e.line))
    if unjoined:
        notes.append(
            f"{len(unjoined)} ledger effect(s) join no call of this {source} (by "
            "idempotency key or canonical intent), each a possible ORPHAN_EFFECT:"
        )
        notes += [
            f"  {os.path.basename(names[e.file_index])}:{e.line}: "
            f"{why_unjoined(e, calls, source != 'log')}"
            for e in unjoined[:_EXPLAINED]
        ]
        if len(unjoined) > _EXPLAINED:
            notes.append(f"  ... and {len(unjoined) - _EXPLAINED} more")
    if pending:
        notes.append(
            f"{len(pending)} idempotency record(s) still INPROGRESS (outcome not "
            f"known): {', '.join(map(str, pending[:5]))}"
        )
    return Joined(effects, notes, orphans(unjoined, calls, names, source), [], mismatched)


def mismatch(e: Entry, c: Call, names: list[str]) -> list[Finding]:
    """EFFECT_ARGS when plain ledger entry `e`, joined to call `c` by its key, names another
    tool or other identity arguments than the call recorded ([] otherwise). A Stripe object
    is in the provider's terms (cents, its own reason) and is not compared. Pure."""
    if e.source != "plain" or c.args is None or e.idempotency_key is None:
        return []
    req = asks.Req(c.key, c.tool, c.args, c.scope or "", None, None, c.call_id, c.writer, 0, ())
    what = asks.differs(req, e.tool, e.args)
    if not what:
        return []
    name = names[e.file_index]
    call_where = (names[c.loc[0]], c.loc[1]) if c.loc else None
    steps = [Citation("effect", "ledger:" + name, f"apply {short(e.args, 50)}", name, e.line)]
    if call_where is not None:
        steps.insert(
            0,
            Citation("proposal", c.writer, f"{c.ident}: {c.tool} {short(c.args, 50)}", *call_where),
        )
    return [
        Finding(
            "EFFECT_ARGS",
            c.key,
            "certain",
            tuple(sorted({c.writer, "ledger:" + name} - {""})),
            tuple(sorted({(s.file, s.line) for s in steps})),
            tuple(steps),
            f"the provider applied, under key {c.key}, {what}: the effect joined to the call "
            "by its key is not the call (another request sent under its key, or a key "
            "reused), so what was asked was not what took effect",
        )
    ]


_EXPLAINED = 5


def orphans(
    unjoined: list[Entry], calls: list[Call], names: list[str], source: str = "trace"
) -> tuple[list[Finding], int]:
    """A possible ORPHAN_EFFECT for each effect that joined none of `calls` (at most
    `MAX_PER_PROPERTY` listed), and how many more were counted, not listed. Pure."""
    out = []
    for e in unjoined[:MAX_PER_PROPERTY]:
        name = names[e.file_index]
        writer = "ledger:" + name
        out.append(
            Finding(
                "ORPHAN_EFFECT",
                e.idempotency_key or f"{name}:{e.line}",
                "possible",
                (writer,),
                ((name, e.line),),
                (Citation("effect", writer, "apply", name, e.line),),
                f"no call of this {source} accounts for it "
                f"({why_unjoined(e, calls, source != 'log')}): it is other work on the account "
                "(leave that out of the ledger), or a request sent around the log without its "
                "key (a client that minted its own idempotency key), perhaps a second effect of "
                "an intent",
            )
        )
    return out, max(0, len(unjoined) - MAX_PER_PROPERTY)


def _listed(values, n: int = 3) -> str:
    values = sorted(map(str, values))
    more = f" and {len(values) - n} more" if len(values) > n else ""
    return ", ".join(values[:n]) + more


def why_unjoined(e: Entry, calls: list[Call], flags: bool = True) -> str:
    """Why ledger entry `e` joins none of `calls`, and what would join it (`flags`: the
    calls came from a trace, whose --scope and --idempotency-key rules can change). Pure."""
    sent = {k for c in calls for k in (c.idempotency_key, c.call_id) if k}
    if e.idempotency_key and not (e.tool and e.args is not None):
        hint = (
            f"the calls sent {_listed(sent)}"
            if sent
            else "no call carries a key (the source records none)"
        )
        fix = "; --idempotency-key PATH names where a call's key is" if flags else ""
        return (
            f"its idempotency key {e.idempotency_key} is no call's idempotency key or "
            f"call id ({hint}){fix}"
        )
    if not e.tool or e.args is None:
        return "it names no idempotency key, tool or arguments to join by"
    same_tool = [c for c in calls if c.tool == e.tool]
    if not same_tool:
        return (
            f"no effectful call of tool {e.tool} (calls of: "
            f"{_listed({c.tool for c in calls}) or 'none'})"
        )
    d0 = _digest(e.tool, e.args, "")
    scopes = {
        c.scope for c in same_tool if c.args is not None and _digest(c.tool, c.args, "") == d0
    }
    if not scopes:
        if all(c.args is None for c in same_tool):
            return f"the calls of {e.tool} did not record their arguments"
        return f"no call of {e.tool} has these arguments in canonical form"
    if e.scope is None:
        return (
            f"calls of {e.tool} with these arguments ran in several scopes "
            f"({_listed(scopes)}); give the ledger a scope column"
        )
    fix = "give --scope a rule that yields the ledger's scope, or " if flags else ""
    return (
        f"its scope {e.scope!r} is not the scope of the calls of {e.tool} with these "
        f"arguments ({_listed(scopes)}): {fix}leave scope out of the ledger"
    )


def _joined(e: Entry, by_key, keys_of, by_tool_args, names) -> Optional[dict]:
    """The effect event of one ledger entry, or None when it joins no call."""
    c = by_key.get(e.idempotency_key or "")
    if c is None and e.source == "powertools" and "#" in (e.idempotency_key or ""):
        c = by_key.get(e.idempotency_key.rsplit("#", 1)[1])
    name = names[e.file_index]
    ev = {"type": "effect", "writer": "ledger:" + name, "kind": e.kind}
    if c is not None:
        ev.update(key=c.key, tool=c.tool, args=log_args(c), scope=c.scope)
        if (
            c.args is None
            and e.source == "plain"
            and e.args is not None
            and e.tool in (None, c.tool)
        ):
            ev["args"] = e.args  # what the ledger shows the call asked, where it recorded none
    elif e.tool and e.args is not None:
        scope = e.scope
        if scope is None:
            scopes = by_tool_args.get(_digest(e.tool, e.args, "") or "", set())
            scope = next(iter(scopes)) if len(scopes) == 1 else None
        keys = keys_of.get(_digest(e.tool, e.args, scope) or "") if scope is not None else None
        if not keys:
            return None
        ev.update(tool=e.tool, args=e.args, scope=scope)
        if len(keys) == 1:
            ev["key"] = next(iter(keys))
    else:
        return None
    ev["idempotency_key"] = e.idempotency_key or ev.get("key") or f"{name}:{e.line}"
    if e.effect_id:
        ev["effect_id"] = str(e.effect_id)
    return ev
