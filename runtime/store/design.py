"""What the log stores about itself: its design (``tc_design``), the provider account its
tools act on (``tc_account``), each tool's identity rule (``tc_tools``)."""

from __future__ import annotations

from typing import Optional

from toolcommit.runtime.store.base import Tx


def keep_design(tx: Tx, name: str, digest: str, doc: str) -> Optional[tuple[str, str]]:
    """Store the design (`name`, `digest`, its JSON document `doc`) if the log has none:
    None when this stored it, else the (name, digest) it stores (its document filled in
    where a log of an earlier release kept only the name and this digest)."""
    if (
        tx.run(
            "INSERT INTO tc_design (id, name, digest, doc) VALUES (1, ?, ?, ?) "
            "ON CONFLICT (id) DO NOTHING",
            (name, digest, doc),
        )
        == 1
    ):
        return None
    had, had_digest = tx.first("SELECT name, digest FROM tc_design WHERE id = 1")
    if had_digest == digest:  # a log written before logs kept the design itself
        tx.run("UPDATE tc_design SET doc = ? WHERE id = 1 AND doc IS NULL", (doc,))
    return str(had), str(had_digest)


def account(tx: Tx) -> Optional[str]:
    """The provider account the log names; None: none yet."""
    row = tx.one("SELECT account FROM tc_account WHERE id = 1")
    return None if row is None else str(row[0])


def bind_account(tx: Tx, name: str) -> str:
    """Name `name` as the log's account unless it names one; the one it names."""
    tx.run(
        "INSERT INTO tc_account (id, account) VALUES (1, ?) ON CONFLICT (id) DO NOTHING",
        (name,),
    )
    return str(tx.first("SELECT account FROM tc_account WHERE id = 1")[0])


def rule(tx: Tx, tool: str) -> Optional[str]:
    """The identity rule stored for `tool` (JSON text); None: none."""
    row = tx.one("SELECT rule FROM tc_tools WHERE tool = ?", (tool,))
    return None if row is None else str(row[0])


def keep_rule(tx: Tx, tool: str, text: str) -> None:
    """Store `tool`'s first identity rule."""
    tx.run("INSERT INTO tc_tools (tool, rule) VALUES (?, ?) ON CONFLICT DO NOTHING", (tool, text))


def change_rule(tx: Tx, tool: str, text: str) -> None:
    """Replace `tool`'s identity rule."""
    tx.run("UPDATE tc_tools SET rule = ? WHERE tool = ?", (text, tool))
