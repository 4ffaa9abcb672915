"""toolcommit.runtime: the intent log as a library a runtime imports.

The model proposes; the log decides. `IntentLog` follows the design proven for its provider
(``provider=``: ``ideal``, ``stripe``, ``email``, ``fenced-store`` or a design file) on
embedded SQLite (default) or PostgreSQL (several orchestrators), and it writes the log
contract that ``toolcommit validate`` checks as it goes. `effectful` wraps one effectful
function (sync or async) in the whole protocol; `toolcommit.runtime.frameworks` has the
Pydantic AI and LangGraph wrappers (optional extra ``frameworks``).
"""
if __name__ != "toolcommit.runtime":
    # checker/runtime/ is installed as toolcommit.runtime (pyproject's package-dir); under
    # its other path it would load a second copy whose classes differ from the first
    raise ImportError(f"import toolcommit.runtime, not {__name__} (the same files, one name)")

from toolcommit.runtime.design import Design, DesignError
from toolcommit.runtime.lines import JsonlSink
from toolcommit.runtime.log import (Decision, IntentLog, IntentLogError, Record, Superseded,
                                    Ticket, semantic_key)
from toolcommit.runtime.shims import (Conflict, EffectError, GaveUp, InDoubt, aguard,
                                      current_ticket, effectful, guard, recover_settle, tell)
from toolcommit.runtime.store import PostgresStore, SqliteStore, StoreError

__all__ = ["IntentLog", "Decision", "Ticket", "Record", "IntentLogError", "Superseded",
           "JsonlSink", "SqliteStore", "PostgresStore", "StoreError", "semantic_key",
           "Design", "DesignError", "Conflict", "EffectError", "GaveUp", "InDoubt", "guard",
           "aguard", "effectful", "current_ticket", "recover_settle", "tell"]
