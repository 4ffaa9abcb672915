"""The asks (``tc_asks``): under a design that holds a re-ask (``reask=hold``), which record
a call's content met in which scope, and whether its caller was told the outcome
(`toolcommit.runtime.reask` decides; this module only stores)."""

from __future__ import annotations

from toolcommit.runtime.store.base import GATE, Tx, Write, gated


def asked(tx: Tx, content: str) -> list[tuple[str, str, int]]:
    """(key, scope, told) of every ask of the content digest `content`, by key and scope."""
    return [
        (str(k), str(s), int(t))
        for k, s, t in tx.all(
            "SELECT key, scope, told FROM tc_asks WHERE content = ? ORDER BY key, scope",
            (content,),
        )
    ]


def remember_sql(digest: str, key: str, scope: str, told: int = 0) -> Write:
    """Note that content `digest` met record `key` in `scope` (`told`: its outcome given),
    unless noted; with its `GATE`."""
    return (
        "INSERT INTO tc_asks (key, content, scope, told) SELECT ?, ?, ?, ? "
        f"WHERE {GATE} ON CONFLICT DO NOTHING",
        (key, digest, scope, told),
    )


def remember(tx: Tx, digest: str, key: str, scope: str, told: int = 0) -> None:
    """`remember_sql`, run in `tx`."""
    sql, params = remember_sql(digest, key, scope, told)
    tx.run(gated(sql), params)


def told_sql(key: str) -> Write:
    """The statement (its `GATE` open) noting that a caller that asked heard `key`'s
    outcome (its result, or the answer a re-ask met): every row of `key`."""
    return (f"UPDATE tc_asks SET told = 1 WHERE key = ? AND told = 0 AND {GATE}", (key,))
