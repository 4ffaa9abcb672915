"""An export of a live log, on either store: the process keeps deciding meanwhile."""

from __future__ import annotations

import json
import threading

SCOPE = "user:42:checkout:7"
BOUND = 20.0  # seconds a blocked thread is given before the test calls it blocked


def export_leaves_the_log_live(log) -> None:
    """With an export open mid-read (`log.lines`, one line read), another thread of the
    process renews its lease and decides a new call; the export goes on to show the log
    as it was when it began, and a later export shows the new call too."""
    d = log.propose("t1", "refund", {"amount": 20}, SCOPE, principal="user:1")
    log.dispatch(d.key)
    before = log.events()
    pages = log.lines(batch=1)
    first = next(pages)
    done: list = []
    t = threading.Thread(
        target=lambda: done.append(
            (
                log.renew_held(),
                log.propose("t2", "refund", {"amount": 30}, SCOPE, principal="user:1").accepted,
            )
        )
    )
    t.start()
    t.join(BOUND)
    blocked = t.is_alive()
    rest = list(pages)  # ends the export: a thread it held up can finish now
    t.join()
    assert not blocked, "the export held up the process's lease renewal and decisions"
    assert done == [(1, True)]
    assert [json.loads(x) for x in (first, *rest)] == before
    assert len(log.events()) > len(before)
