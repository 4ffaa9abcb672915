"""One protocol, two languages, one PostgreSQL log: a Python process and a Node process asked
the same intent at once (the same principal, request and arguments) serve it once. The
provider applies every request it gets (no deduplication of its own) and holds its answer
to the first until both processes have proposed, so the two calls overlap for certain."""

from __future__ import annotations

import json
import subprocess
import sys

import psycopg

from tests.ts.fake import Fake
from tests.ts.node import TS, built, node

PY = """
import json, sys, urllib.request
from toolcommit.runtime import IntentLog, guard
dsn, url = sys.argv[1:3]
log = IntentLog.postgres(dsn, "py-1", provider="stripe", lease=5)
def refund(t):
    req = urllib.request.Request(url + "/refund", data=json.dumps(t.args).encode(),
        headers={"Content-Type": "application/json", "Idempotency-Key": t.idempotency_key})
    return json.loads(urllib.request.urlopen(req, timeout=30).read())
got = guard(log, "py-call", "refund", {"charge": "ch_1", "amount": 20}, "request:1", refund,
            status=lambda t: None, principal="user:1")
print(json.dumps(got)); log.close()
"""

JS = """
import { IntentLog, guard } from "./dist/esm/index.js";
const [dsn, url] = process.argv.slice(1);
const log = await IntentLog.postgres(dsn, { writer: "node-1", provider: "stripe", lease: 5 });
const refund = async (t) => (await fetch(url + "/refund", { method: "POST",
  headers: { "Content-Type": "application/json", "Idempotency-Key": t.idempotencyKey },
  body: JSON.stringify(t.args) })).json();
const got = await guard(log, "node-call", "refund", { charge: "ch_1", amount: 20 }, "request:1",
  refund, { principal: "user:1", status: async () => null });
console.log(JSON.stringify(got)); await log.close();
"""


def _proposals(dsn: str) -> int:
    try:
        with psycopg.connect(dsn) as db:
            return db.execute(
                'SELECT count(*) FROM tc_events WHERE line LIKE \'{"type":"proposal"%\' '
                'AND line LIKE \'%"scope":"request:1"%\''
            ).fetchone()[0]
    except psycopg.Error:
        return 0  # the log's tables are not there yet


def test_a_python_and_a_node_process_serve_one_intent_once(pg, tmp_path):
    built()
    with Fake(hold=lambda: _proposals(pg.dsn) < 2) as fake:
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", PY, pg.dsn, fake.url],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            ),
            subprocess.Popen(
                [node(), "--input-type=module", "-e", JS, "--", pg.dsn, fake.url],
                cwd=TS,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            ),
        ]
        outs = [p.communicate(timeout=120) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
    results = [json.loads(out) for out, _ in outs]
    assert len(fake.applied) == 1, fake.applied  # one effect
    assert results == [{"id": "re_1"}, {"id": "re_1"}]  # both callers got its answer
    with psycopg.connect(pg.dsn) as db:
        decisions = sorted(
            json.loads(line)["decision"]
            for (line,) in db.execute("SELECT line FROM tc_events ORDER BY id")
            if json.loads(line)["type"] == "proposal" and json.loads(line)["scope"] == "request:1"
        )
    assert decisions == ["accepted", "duplicate"]
    export = tmp_path / "log.jsonl"
    from tests.incli import cli

    assert cli("export", "--dsn", pg.dsn, "-o", str(export))[0] == 0
    code, out, _ = cli("validate", "--design", "stripe", str(export))
    assert code == 0 and out.startswith("CONFORMS"), out


def test_the_fault_harness_on_node_workers_sharing_a_postgresql_log(pg):
    """`torture --runtime ts --store postgres`: two Node workers on one PostgreSQL log,
    SIGKILLed and restarted; every run CONFORMS."""
    from toolcommit.checker.torture.campaign import render, torture

    built()
    c = torture(3, seed=4, runtime="ts", profile="stripe", store="postgres", dsn=pg.dsn)
    assert c.verdicts()["CONFORMS"] == 3, render(c)
    assert c.total("crashes") > 0


JS_KILLED = """
import { IntentLog, guard } from "./dist/esm/index.js";
const [dsn, url] = process.argv.slice(1);
const log = await IntentLog.postgres(dsn, { writer: "node-2", provider: "stripe", lease: 0.5 });
await guard(log, "node-call", "refund", { charge: "ch_9", amount: 20 }, "request:9", async (t) => {
  await fetch(url + "/refund", { method: "POST", body: JSON.stringify(t.args),
    headers: { "Content-Type": "application/json", "Idempotency-Key": t.idempotencyKey } });
  process.kill(process.pid, "SIGKILL"); // the refund applied, its answer never recorded
}, { principal: "user:1", status: async () => null });
"""


def test_a_node_process_killed_after_its_refund_and_a_python_process_retrying_it_refund_once(pg):
    """The Node process applies the refund and dies before recording its answer; the same
    intent asked of a Python process takes the record over once its lease runs out and
    replays it under the same key, which Stripe answers from the saved response."""
    built()
    py = PY.replace('"request:1"', '"request:9"').replace('"ch_1"', '"ch_9"')
    with Fake(by_key=True) as fake:
        node_run = subprocess.run(
            [node(), "--input-type=module", "-e", JS_KILLED, "--", pg.dsn, fake.url],
            cwd=TS,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert node_run.returncode == -9, node_run.stderr
        done = subprocess.run(
            [sys.executable, "-c", py, pg.dsn, fake.url], capture_output=True, text=True, timeout=60
        )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"id": "re_1"}
    assert len(fake.applied) == 1  # one refund
    assert len(fake.keys) == 2 and fake.keys[0] == fake.keys[1]  # the send and its replay


JS_RECONNECT = """
import { IntentLog, guard } from "./dist/esm/index.js";
const [dsn] = process.argv.slice(1);
const log = await IntentLog.postgres(dsn, { writer: "node-3", provider: "stripe", schema: "reconnect" });
const call = (n) => guard(log, `c${n}`, "refund", { charge: `ch_${n}`, amount: 1 }, "request:r",
  async () => ({ id: `re_${n}` }), { principal: "user:1", status: async () => null });
console.log(JSON.stringify(await call(1)));
process.stdout.write("ready\\n");
await new Promise((r) => process.stdin.once("data", r)); // the test kills the session here
console.log(JSON.stringify(await call(2)));
await log.close();
"""


def test_a_node_process_whose_postgresql_session_was_killed_opens_it_again(pg):
    """The server ends the log's session between two calls (pg_terminate_backend): the next
    call opens a new connection and is decided there, its backend noted for `status`."""
    built()
    p = subprocess.Popen(
        [node(), "--input-type=module", "-e", JS_RECONNECT, "--", pg.dsn],
        cwd=TS,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert json.loads(p.stdout.readline()) == {"id": "re_1"}
    assert p.stdout.readline() == "ready\n"
    with psycopg.connect(pg.dsn, autocommit=True) as db:
        (old,) = db.execute(
            "SELECT backend FROM reconnect.tc_writers WHERE writer = 'node-3'"
        ).fetchone()
        assert db.execute("SELECT pg_terminate_backend(%s)", (old,)).fetchone() == (True,)
    out, err = p.communicate("go\n", timeout=60)
    assert p.returncode == 0, err
    assert json.loads(out) == {"id": "re_2"}
    with psycopg.connect(pg.dsn) as db:
        (new,) = db.execute(
            "SELECT backend FROM reconnect.tc_writers WHERE writer = 'node-3'"
        ).fetchone()
    assert new != old
