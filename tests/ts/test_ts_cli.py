"""A Node process's log, read by the Python CLI unchanged: `toolcommit status` names the
record a killed Node process left in doubt, `toolcommit recover` settles it, `toolcommit
export` writes the log and `toolcommit validate --design` judges it."""

from __future__ import annotations

import json
import signal

from tests.incli import cli
from tests.ts.node import run_node


def run_cli(argv: list[str]) -> tuple[int, str]:
    code, out, err = cli(*argv)
    return code, out + err


# a Node process: one refund answered, then a second one killed (SIGKILL) mid-effect
CRASH = """
import { IntentLog, guard } from "./dist/esm/index.js";
const [db, provider] = process.argv.slice(1);
const log = await IntentLog.sqlite(db, { writer: "node-1", provider, lease: 0.2 });
const opts = { principal: "user:1", status: async () => null };
console.log(JSON.stringify(await guard(log, "c1", "refund", { charge: "ch_1", amount: 20 },
  "request:1", async () => ({ id: "re_1" }), opts)));
await guard(log, "c2", "refund", { charge: "ch_2", amount: 30 }, "request:2", async () => {
  process.kill(process.pid, "SIGKILL");
  await new Promise(() => {});
}, opts);
"""


def test_a_node_process_killed_mid_effect_is_read_settled_and_judged(tmp_path):
    db = str(tmp_path / "intents.db")
    done = run_node(CRASH, db, "email")
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert json.loads(done.stdout) == {"id": "re_1"}

    code, out = run_cli(["status", db])
    assert code == 3, out
    words = " ".join(out.split())  # the text is wrapped to the terminal's width
    assert "1 record(s) in doubt" in words and "owner node-1#1 gone" in words

    code, out = run_cli(["recover", db, "--wait", "10"])
    assert code == 0, out
    words = " ".join(out.split())
    assert "1 DEAD_LETTER" in words and "no record of the log is open" in words

    log = str(tmp_path / "log.jsonl")
    assert run_cli(["export", db, "-o", log])[0] == 0
    lines = [json.loads(x) for x in open(log)]
    assert {x["writer"] for x in lines} == {"node-1"} | {
        x["writer"] for x in lines if x["writer"].startswith("toolcommit-recover")
    }
    code, out = run_cli(["validate", "--design", "email", log])
    assert code == 0, out
    assert out.startswith("CONFORMS") and "Design email (at-most-once" in out
    assert "0 departure(s)" in out
