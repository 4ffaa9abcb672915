"""toolcommit.runtime: the intent log as a library a runtime imports (the folder
`runtime/`). It depends on `toolcommit.model` and `toolcommit.spec` only: importing it and
opening a log loads no engine, design search, z3 or networkx.

The model proposes; the log decides. `IntentLog` follows the design proven for its provider
(``provider=``: ``ideal``, ``stripe``, ``email``, ``fenced-store`` or a design file) on
embedded SQLite (default) or PostgreSQL (several orchestrators), and it writes the log
contract that ``toolcommit validate`` checks as it goes. `effectful` wraps one effectful
function (sync or async) in the whole protocol; `toolcommit.runtime.frameworks` has the
Pydantic AI and LangGraph wrappers (optional extra ``frameworks``). `instrument(log)` once at
start-up stamps the running effect's idempotency key on every write the HTTP client
libraries send (`toolcommit.runtime.wire`).
"""

from toolcommit.runtime.design import Design, DesignError
from toolcommit.runtime.identity import Identity, IdentityError
from toolcommit.runtime.lines import JsonlSink
from toolcommit.runtime.log import (
    Decision,
    IntentLog,
    IntentLogError,
    Record,
    Superseded,
    Ticket,
    semantic_key,
)
from toolcommit.runtime.shims import (
    Answered,
    Conflict,
    EffectError,
    GaveUp,
    Held,
    InDoubt,
    aguard,
    current_ticket,
    effectful,
    guard,
    recover_settle,
    tell,
)
from toolcommit.runtime.store import PostgresStore, SqliteStore, StoreError
from toolcommit.runtime.wire import UnkeyedWrite, instrument, unguarded, uninstrument

__all__ = [
    "IntentLog",
    "Decision",
    "Ticket",
    "Record",
    "IntentLogError",
    "Identity",
    "IdentityError",
    "Superseded",
    "JsonlSink",
    "SqliteStore",
    "PostgresStore",
    "StoreError",
    "semantic_key",
    "Design",
    "DesignError",
    "Conflict",
    "EffectError",
    "GaveUp",
    "InDoubt",
    "Held",
    "Answered",
    "guard",
    "aguard",
    "effectful",
    "current_ticket",
    "recover_settle",
    "tell",
    "instrument",
    "uninstrument",
    "unguarded",
    "UnkeyedWrite",
]
