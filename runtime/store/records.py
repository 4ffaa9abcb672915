"""The record table (``tc_records``) and its leases: every statement the log runs on a
record. Each function takes the open transaction `tx` and, where a statement reads the
store's clock or locks a row, the `Store` (its ``now_sql``, ``lock_sql``, ``returning``):
the SQL is one text for both engines.

A record's lease is held by ``(owner, owner_inc)`` (a writer name and its incarnation) until
``lease_until`` on the store's clock; `mine` below is that pair for the calling writer.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from toolcommit.model.states import IN_DOUBT, sql_list
from toolcommit.runtime.records import Record, record_of
from toolcommit.runtime.store.base import GATE, Store, Tx, Write
from toolcommit.runtime.store.schema import COLS, GAVE_UP, OPEN_SQL

IN_DOUBT_SQL = sql_list(IN_DOUBT)
Mine = tuple[str, int]  # (writer, incarnation): a lease holder
#: the holder's writer name was opened again since: that incarnation is dead
DEAD = "owner_inc < (SELECT w.incarnation FROM tc_writers w WHERE w.writer = tc_records.owner)"


def lease_sql(store: Store, lease: float) -> str:
    """The expression of a lease `lease` seconds from now, on the store's clock."""
    return f"{store.now_sql} + {lease!r}"


def now(tx: Tx, store: Store) -> float:
    """The store's clock, now (seconds since the epoch)."""
    return float(tx.first(f"SELECT {store.now_sql}")[0])


def get(tx: Tx, store: Store, key: str, lock: bool = False) -> Optional[Record]:
    """The record of `key`; with `lock`, its row stays locked until the commit (so a
    transition line names the state the write really left)."""
    row = tx.one(
        f"SELECT {COLS} FROM tc_records WHERE key = ?" + (store.lock_sql if lock else ""),
        (key,),
    )
    return None if row is None else record_of(row)


def latest(tx: Tx, intent: str) -> Optional[Record]:
    """The record of the intent `intent` at its highest epoch."""
    row = tx.one(
        f"SELECT {COLS} FROM tc_records WHERE intent = ? ORDER BY epoch DESC LIMIT 1",
        (intent,),
    )
    return None if row is None else record_of(row)


def in_slot(tx: Tx, slot: str) -> Optional[Record]:
    """The live record holding an exclusive tool's `slot`."""
    row = tx.one(f"SELECT {COLS} FROM tc_records WHERE slot = ?", (slot,))
    return None if row is None else record_of(row)


def all_records(tx: Tx) -> list[Record]:
    """Every record, by key."""
    return [record_of(x) for x in tx.all(f"SELECT {COLS} FROM tc_records ORDER BY key")]


def held(tx: Tx, mine: Mine, older: bool = False) -> list[Record]:
    """The open records held by `mine`, by key; with `older`, those held by the earlier
    incarnations of its writer name instead (what a restart takes over)."""
    op = "<" if older else "="
    return [
        record_of(x)
        for x in tx.all(
            f"SELECT {COLS} FROM tc_records WHERE owner = ? AND owner_inc {op} ? "
            f"AND state IN {OPEN_SQL} ORDER BY key",
            mine,
        )
    ]


def open_with_dead(tx: Tx) -> list[tuple[Record, bool]]:
    """Every open record, each with whether its holder's incarnation is dead."""
    return [
        (record_of(x[:-1]), bool(x[-1]))
        for x in tx.all(
            f"SELECT {COLS}, CASE WHEN {DEAD} THEN 1 ELSE 0 END FROM tc_records "
            f"WHERE state IN {OPEN_SQL}"
        )
    ]


def count_open(tx: Tx) -> int:
    """How many records are not settled."""
    return int(tx.first(f"SELECT count(*) FROM tc_records WHERE state IN {OPEN_SQL}")[0])


def doubt_counts(tx: Tx) -> dict[str, int]:
    """{tool: its records UNKNOWN or RECONCILING}."""
    return {
        str(t): int(n)
        for t, n in tx.all(
            f"SELECT tool, count(*) FROM tc_records WHERE state IN {IN_DOUBT_SQL} "
            "GROUP BY tool ORDER BY tool"
        )
    }


def live_of_tool(tx: Tx, tool: str) -> int:
    """How many records of `tool` a re-ask may still meet: open, or settled without its
    caller hearing it (``tc_asks.told`` = 0)."""
    return int(
        tx.first(
            f"SELECT count(*) FROM tc_records r WHERE r.tool = ? AND (r.state IN {OPEN_SQL} OR "
            "EXISTS (SELECT 1 FROM tc_asks a WHERE a.key = r.key AND a.scope = r.scope "
            "AND a.told = 0))",
            (tool,),
        )[0]
    )


# ----- insert ---------------------------------------------------------------------------------
def insert_sql(store: Store, lease: float, sent: str, where: str = "1 = 1") -> str:
    """Insert a record (12 parameters: key to slot) where `where` holds, unless its key
    (or slot) has one; ``RETURNING`` it where the store can. `sent`: the first and last
    send (an expression: the store's clock, or ``NULL``)."""
    return (
        f"INSERT INTO tc_records (key, intent, epoch, tool, scope, args, call_id, state, "
        f"fence, owner, owner_inc, lease_until, slot, first_sent, sent_at) SELECT "
        f"?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, {lease_sql(store, lease)}, ?, {sent}, {sent} "
        f"WHERE {where} ON CONFLICT DO NOTHING" + (f" RETURNING {COLS}" if store.returning else "")
    )


def fresh_insert(
    store: Store, lease: float, sent: str, values: tuple[Any, ...], content: Optional[str]
) -> Write:
    """The insert of an intent never seen (no record of `values`' intent, and with `content`
    no call of that content under ``reask=hold``), gated (`GATE`): `values` are the 12 of
    `insert_sql`."""
    fresh = "NOT EXISTS (SELECT 1 FROM tc_records WHERE intent = ?)" + (
        "" if content is None else " AND NOT EXISTS (SELECT 1 FROM tc_asks WHERE content = ?)"
    )
    return (
        insert_sql(store, lease, sent, f"{fresh} AND {GATE}"),
        (*values, values[1]) + (() if content is None else (content,)),
    )


def insert(
    tx: Tx, store: Store, lease: float, values: tuple[Any, ...], sent: str
) -> Optional[Record]:
    """Insert a record unless its key (or slot) has one: the record inserted, or None."""
    if store.returning:  # the row back in the same round trip
        rows = tx.all(insert_sql(store, lease, sent), values)
        return record_of(rows[0]) if rows else None
    if tx.run(insert_sql(store, lease, sent), values) == 1:
        return get(tx, store, values[0])
    return None


# ----- compare-and-set ------------------------------------------------------------------------
def cas_sql(
    store: Store,
    lease: float,
    key: str,
    frm: Sequence[str],
    to: str,
    mine: Optional[Mine],
    *,
    fence: Optional[int] = None,
    bump: bool = False,
    result: Optional[str] = None,
    release: bool = False,
    sent: bool = False,
    first: bool = False,
    flight: Optional[bool] = None,
) -> tuple[str, list[Any]]:
    """The compare-and-set of `key` from a state in `frm` to `to` (an ``UPDATE``, and its
    parameters): only while `mine` holds its lease (None: whoever does) and, with `fence`,
    at that generation. `bump` advances the fence; `result` (JSON text) is saved; a given-up
    state frees the slot; `release` ends the lease, else a holder's write renews it; `sent`
    (`first`) stamps the last (first) send with the store's clock; `flight` sets
    ``in_flight``."""
    sets = ["state = ?"]
    params: list[Any] = [to]
    if bump:
        sets.append("fence = fence + 1")
    if result is not None:
        sets.append("result = ?")
        params.append(result)
    if to in GAVE_UP:
        sets.append("slot = NULL")
    if release:
        sets.append("lease_until = 0")
    elif mine is not None:
        sets.append(f"lease_until = {lease_sql(store, lease)}")
    if sent:
        sets.append(f"sent_at = {store.now_sql}")
    if first:
        sets.append(f"first_sent = {store.now_sql}")
    if flight is not None:
        sets.append(f"in_flight = {int(flight)}")
    where = ["key = ?", f"state IN ({', '.join('?' * len(frm))})"]
    params += [key, *frm]
    if mine is not None:
        where.append("owner = ? AND owner_inc = ?")
        params += list(mine)
    if fence is not None:
        where.append("fence = ?")
        params.append(fence)
    return f"UPDATE tc_records SET {', '.join(sets)} WHERE {' AND '.join(where)}", params


def cas_returning(tx: Tx, update: str, params: Sequence[Any]) -> Optional[Record]:
    """Run the compare-and-set `update` (`cas_sql`) ``RETURNING`` the record after it
    (where `Store.returning`); None: it lost."""
    rows = tx.all(f"{update} RETURNING {COLS}", params)
    return record_of(rows[0]) if rows else None


def returning(update: str) -> str:
    """`update` gated (`GATE`) and ``RETURNING`` the record: a `Store.once` first write."""
    return f"{update} AND {GATE} RETURNING {COLS}"


# ----- leases and takeovers -------------------------------------------------------------------
def takeable_sql(store: Store) -> str:
    """Open records whose holder is gone: its lease expired, or its writer name was opened
    again since (a dead incarnation, this writer's own earlier ones included); never the
    caller's (2 parameters: `mine`)."""
    return (
        f"state IN {OPEN_SQL} AND (lease_until < {store.now_sql} OR {DEAD}) "
        "AND NOT (owner = ? AND owner_inc = ?)"
    )


def takeable(
    tx: Tx, store: Store, mine: Mine, limit: int, tools: Optional[Sequence[str]] = None
) -> list[str]:
    """The keys of up to `limit` records `mine` may take over (`takeable_sql`), by key;
    with `tools`, only records of those tools."""
    return [
        x[0]
        for x in tx.all(
            f"SELECT key FROM tc_records WHERE {takeable_sql(store)}"
            + (
                ""
                if tools is None
                else f" AND tool IN ({', '.join('?' * len(tools))})"
                if tools
                else " AND 1 = 0"
            )
            + " ORDER BY key LIMIT ?",
            (*mine, *(tools or ()), int(limit)),
        )
    ]


def may_take(tx: Tx, store: Store, key: str, mine: Mine) -> Optional[bool]:
    """Whether `mine` may take `key` over (`takeable_sql`): None if not, else whether its
    holder's incarnation is dead (True) or only its lease expired (False)."""
    if (
        tx.one(f"SELECT key FROM tc_records WHERE key = ? AND {takeable_sql(store)}", (key, *mine))
        is None
    ):
        return None
    return tx.one(f"SELECT key FROM tc_records WHERE key = ? AND {DEAD}", (key,)) is not None


def take(tx: Tx, store: Store, lease: float, r: Record, to: str, mine: Mine, expired: bool) -> bool:
    """Compare-and-set the lease of `r` (as read) to `mine`, its state to `to`, only while
    its lease is still expired if `expired`; a record past RECORDED has its last send
    stamped now where its holder may have been sending (DISPATCHED, or ``in_flight``).
    Whether it won."""
    sent = (
        ""
        if r.state == "RECORDED"
        else f", sent_at = CASE WHEN state = 'DISPATCHED' OR in_flight = 1 THEN "
        f"{store.now_sql} ELSE sent_at END, in_flight = 0"
    )
    n = tx.run(
        f"UPDATE tc_records SET owner = ?, owner_inc = ?, state = ?, "
        f"lease_until = {lease_sql(store, lease)}{sent} WHERE key = ? AND state = ? "
        f"AND owner = ? AND owner_inc = ?"
        + (f" AND lease_until < {store.now_sql}" if expired else ""),
        (*mine, to, r.key, r.state, r.owner, r.owner_inc),
    )
    return n == 1


def renew(
    tx: Tx,
    store: Store,
    lease: float,
    mine: Mine,
    which: str,
    params: Sequence[str],
    skip: Sequence[str] = (),
) -> int:
    """Renew `mine`'s leases on its open records `which` (an SQL condition on `params`)
    selects, but none of the keys `skip`; how many."""
    but = f" AND key NOT IN ({', '.join('?' * len(skip))})" if skip else ""
    return tx.run(
        f"UPDATE tc_records SET lease_until = {lease_sql(store, lease)} WHERE "
        f"owner = ? AND owner_inc = ? AND state IN {OPEN_SQL} AND ({which}){but}",
        (*mine, *params, *skip),
    )


def release(tx: Tx, mine: Mine, key: Optional[str] = None, keep: Sequence[str] = ()) -> int:
    """Release `mine`'s leases on its open records (only `key`'s, if given), but not those
    of the keys `keep`; how many."""
    one = "" if key is None else "key = ? AND "
    but = f" AND key NOT IN ({', '.join('?' * len(keep))})" if keep else ""
    return tx.run(
        f"UPDATE tc_records SET lease_until = 0 WHERE {one}owner = ? "
        f"AND owner_inc = ? AND state IN {OPEN_SQL}{but}",
        (*(() if key is None else (key,)), *mine, *keep),
    )


def lease_left(tx: Tx, store: Store, key: str) -> float:
    """Seconds until `key`'s lease expires (store clock; 0 if it has, or no such key)."""
    row = tx.one(f"SELECT lease_until - {store.now_sql} FROM tc_records WHERE key = ?", (key,))
    return 0.0 if row is None else max(0.0, float(row[0]))


def expire_leases(store: Store, writer: Optional[str] = None) -> int:
    """Expire the leases of `writer`'s unsettled records (every writer's if None) at once:
    an operator's action, and the fault harness's. Writes no line (no process logs a lease
    lapsing). Returns how many leases it expired."""
    with store.tx() as tx:
        if writer is None:
            return tx.run(f"UPDATE tc_records SET lease_until = 0 WHERE state IN {OPEN_SQL}")
        return tx.run(
            f"UPDATE tc_records SET lease_until = 0 WHERE state IN {OPEN_SQL} AND owner = ?",
            (writer,),
        )
