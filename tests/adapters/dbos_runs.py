"""DBOS runs, offline, on a SQLite system database: a refund workflow, and a real crash.

The workflow reads the order (a step with no effect), then refunds it: a step that writes
what it applies to a plain ledger, keyed by the idempotency key it sends (DBOS's
``WORKFLOW_ID:STEP_ID``, the same across recoveries). Each phase is its own process. In
the crash run the first process is killed by SIGKILL inside the refund step, after the
refund applied and before DBOS recorded the step's output; the second launches DBOS,
which recovers the workflow and runs the step again. Needs the ``frameworks`` extra.

``python dbos_runs.py PHASE URL LEDGER [LOG]`` runs one phase (URL: the system database, SQLite or
PostgreSQL): ``clean`` (the workflow to its
end), ``crash`` (killed inside the refund) or ``recover`` (launch and wait for the
recovered workflow). With LOG (an intent log's SQLite file) the refund step is guarded by
``toolcommit.runtime`` (`guarded_runs.guarded_step`): it sends the log's key, and the
provider applies a key once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

WORKFLOW_ID = "refund-o-7"


from dbos import DBOS, SetWorkflowID  # noqa: E402

LEDGER = ""  # where the refund step writes (set by `phase`)
CRASH = False  # whether the refund step kills its process after the effect
GUARDED = None  # the guarded refund, when the phase is given an intent log


@DBOS.step()
def check_order(order: str) -> str:
    return "paid"


@DBOS.step()
def refund(order: str, amount: float) -> str:
    if GUARDED is not None:
        return GUARDED(order, amount, call_id=f"{DBOS.workflow_id}:{DBOS.step_id}")
    key = f"{DBOS.workflow_id}:{DBOS.step_id}"
    with open(LEDGER, "a") as f:
        f.write(json.dumps({"idempotency_key": key, "pid": os.getpid()}) + "\n")
        f.flush()
        os.fsync(f.fileno())
    if CRASH:
        os.kill(os.getpid(), signal.SIGKILL)  # after the effect, before the output
    return f"refunded {amount}"


@DBOS.workflow()
def refund_flow(order: str, amount: float) -> str:
    check_order(order)
    return refund(order, amount)


def phase(name: str, url: str, ledger: str, log: str = "") -> None:
    global LEDGER, CRASH, GUARDED
    LEDGER, CRASH = ledger, name == "crash"
    if log:
        from guarded_runs import guarded_step

        GUARDED = guarded_step(log, ledger, CRASH)
    DBOS(config={"name": "refunds", "system_database_url": url})
    DBOS.launch()  # recovers this executor's pending workflows
    try:
        if name == "recover":
            DBOS.retrieve_workflow(WORKFLOW_ID).get_result()
        else:
            with SetWorkflowID(WORKFLOW_ID):
                refund_flow("o-7", 20.0)
    finally:
        DBOS.destroy()


def _phase(name: str, url: str, ledger: str, log: str = "") -> int:
    return subprocess.run(
        [sys.executable, os.path.abspath(__file__), name, url, ledger] + ([log] if log else []),
        capture_output=True,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
    ).returncode


def run(db: str, ledger: str, crash: bool, log: str = "") -> None:
    """Run the workflow in a fresh process, on a fresh system database `db` (a SQLite
    file, or a SQLAlchemy ``postgresql+psycopg://`` URL); with `crash` it is killed inside
    the refund step, and a second process recovers it; with `log`, the refund step is
    guarded by that intent log. The ledger's lines are numbered as effects
    (``effect_id``) once both are done."""
    url = db if "://" in db else f"sqlite:///{db}"
    if not crash:
        assert _phase("clean", url, ledger, log) == 0
    else:
        assert _phase("crash", url, ledger, log) == -signal.SIGKILL
        # the assumption the adapter states: a stopped dispatch's last step started at
        # least a second before its recovery (DBOS on SQLite stamps it to the second)
        time.sleep(1.1)
        assert _phase("recover", url, ledger, log) == 0
    with open(ledger) as f:
        rows = [json.loads(line) for line in f]
    with open(ledger, "w") as f:
        for n, r in enumerate(rows, 1):
            f.write(
                json.dumps({"idempotency_key": r["idempotency_key"], "effect_id": f"re_{n}"}) + "\n"
            )


def export_json(db: str, path: str) -> None:
    """The system database's two tables as JSON rows (what ``sqlite3 -json`` prints)."""
    import sqlite3

    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        data = {
            t: [dict(r) for r in conn.execute(f"SELECT * FROM {t} ORDER BY rowid")]
            for t in ("workflow_status", "operation_outputs")
        }
    finally:
        conn.close()
    with open(path, "w") as f:
        f.write(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    phase(*sys.argv[1:])
