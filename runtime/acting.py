"""One actor per record in a process: of the calls and the settler that drive one record of
a log at once (`toolcommit.runtime.shims`), one acts on it (replays, reads its status, gives
it up) and the others wait for its outcome, so a retry arriving while the settler replays a
record it took over after a restart is answered with the outcome the settler records, never
told InDoubt for a refund the replay is about to find applied.

An actor is any object (a driver's token); `act` claims the record for it, `done` releases
it. Claims live only in this process (another process is kept out by the record's lease).
"""

from __future__ import annotations

import threading
import weakref

from toolcommit.runtime.log import IntentLog

_LOCK = threading.Lock()
#: each log's records under way: key -> the actor acting on it
_ACTING: weakref.WeakKeyDictionary[IntentLog, dict[str, object]] = weakref.WeakKeyDictionary()


def act(log: IntentLog, key: str, actor: object) -> bool:
    """Claim `key` of `log` for `actor`: True if no other actor of this process acts on it
    (it is then `actor`'s until `done`), False if one does (wait for its outcome)."""
    with _LOCK:
        held = _ACTING.setdefault(log, {}).setdefault(key, actor)
    return held is actor


def done(log: IntentLog, key: str, actor: object) -> None:
    """Release `key` of `log` if `actor` holds it (a no-op otherwise)."""
    with _LOCK:
        under = _ACTING.get(log)
        if under is not None and under.get(key) is actor:
            del under[key]
