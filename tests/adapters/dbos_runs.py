"""DBOS runs, offline, on a SQLite system database: a refund workflow, and a real crash.

The workflow reads the order (a step with no effect), then refunds it: a step that writes
what it applies to a plain ledger, keyed by the idempotency key it sends (DBOS's
``WORKFLOW_ID:STEP_ID``, the same across recoveries). Each phase is its own process. In
the crash run the first process is killed by SIGKILL inside the refund step, after the
refund applied and before DBOS recorded the step's output; the second launches DBOS,
which recovers the workflow and runs the step again. Needs the ``frameworks`` extra.

In the reissue run the refund step swallows the provider's silence (it returns an error
text, the common agent-tool pattern) and the workflow, as an agent's model would, calls
the tool again: a new step, so a new key, each time; the provider applied all three,
and the ledger records each refund's tool and arguments, which DBOS does not.

``python dbos_runs.py PHASE URL LEDGER [LOG]`` runs one phase (URL: the system database, SQLite or
PostgreSQL): ``clean`` (the workflow to its
end), ``crash`` (killed inside the refund), ``recover`` (launch and wait for the
recovered workflow) or ``reissue`` (the refund answered twice with an error and asked again). With LOG (an intent log's SQLite file) the refund step is guarded by
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
REISSUE = False  # whether the refund step swallows the provider's silence (twice)
SILENT = 2  # in the reissue run, the provider's answers that are lost
GUARDED = None  # the guarded refund, when the phase is given an intent log


@DBOS.step()
def check_order(order: str) -> str:
    return "paid"


@DBOS.step()
def refund(order: str, amount: float) -> str:
    if GUARDED is not None:
        return GUARDED(order, amount, call_id=f"{DBOS.workflow_id}:{DBOS.step_id}")
    key = f"{DBOS.workflow_id}:{DBOS.step_id}"
    line = {"idempotency_key": key, "pid": os.getpid()}
    if REISSUE:  # what the provider records of the request
        line.update(tool="refund", args={"order": order, "amount": amount})
    with open(LEDGER, "a") as f:
        f.write(json.dumps(line) + "\n")
        f.flush()
        os.fsync(f.fileno())
    if CRASH:
        os.kill(os.getpid(), signal.SIGKILL)  # after the effect, before the output
    if REISSUE:
        with open(LEDGER) as f:
            if sum(1 for _ in f) <= SILENT:  # the answer was lost: the tool says it failed
                return "error: the provider did not answer"
    return f"refunded {amount}"


@DBOS.workflow()
def refund_flow(order: str, amount: float) -> str:
    check_order(order)
    answer = refund(order, amount)
    while REISSUE and answer.startswith("error"):  # the model asks the tool again
        answer = refund(order, amount)
    return answer


def phase(name: str, url: str, ledger: str, log: str = "") -> None:
    global LEDGER, CRASH, GUARDED, REISSUE
    LEDGER, CRASH, REISSUE = ledger, name == "crash", name == "reissue"
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


def run(db: str, ledger: str, crash: bool, log: str = "", reissue: bool = False) -> None:
    """Run the workflow in a fresh process, on a fresh system database `db` (a SQLite
    file, or a SQLAlchemy ``postgresql+psycopg://`` URL); with `crash` it is killed inside
    the refund step, and a second process recovers it; with `log`, the refund step is
    guarded by that intent log; with `reissue`, the reissue run. The ledger's lines are
    numbered as effects (``effect_id``) once both are done."""
    url = db if "://" in db else f"sqlite:///{db}"
    if reissue:
        assert _phase("reissue", url, ledger, log) == 0
    elif not crash:
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
            kept = {k: r[k] for k in ("idempotency_key", "tool", "args") if k in r}
            f.write(json.dumps({**kept, "effect_id": f"re_{n}"}) + "\n")


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
