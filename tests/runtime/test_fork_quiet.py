"""A fork while a log's threads use its store: the child never inherits a thread's hold
on the database driver (`toolcommit.runtime.forked`). Before, a child forked while a
settler held SQLite's mutex hung at its first SQLite call (the torture harness's workers
under a full test run)."""

from __future__ import annotations

import os
import threading
import time

import pytest

from toolcommit.runtime import IntentLog

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork")


def test_a_fork_waits_for_a_transaction_under_way_in_another_thread(tmp_path):
    """A thread is inside a store transaction (it holds the store's lock) when the main
    thread forks: the fork happens only once it has left, so the child copies no thread
    inside the driver. (Without the hook the fork is immediate: `left` is still unset.)"""
    log = IntentLog.sqlite(str(tmp_path / "i.db"), "w1", provider="stripe", settler=False)
    inside, go, left = threading.Event(), threading.Event(), threading.Event()

    def transaction():
        with log.store.read():
            inside.set()
            go.wait(10)
            time.sleep(0.2)  # the transaction goes on a moment after the fork is asked
            left.set()

    holder = threading.Thread(target=transaction, daemon=True)
    holder.start()
    assert inside.wait(10)
    try:
        go.set()
        pid = os.fork()
        if pid == 0:
            os._exit(0 if left.is_set() else 3)
        forked_after = left.is_set()
        _, status = os.waitpid(pid, 0)
    finally:
        holder.join(10)
        log.close()
    assert forked_after and os.waitstatus_to_exitcode(status) == 0
