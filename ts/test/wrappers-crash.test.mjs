// Each framework wrapper under a real crash: a node process running the agent is SIGKILLed
// while its refund is at the provider (the Stripe-wire fake holds the request, then applies it:
// the answer never reaches anyone), and the same agent is run again in a new process under the
// same writer name (the restart). The restart's guard finds the dead incarnation's record, replays
// the refund under the intent's key and gets the saved answer: one refund, and the model is told it.
// The log, exported, is judged by the Python checker (`validate --design stripe`): CONFORMS.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { IntentLog } from "toolcommit";
import { NAMES } from "../test-support/frameworks.mjs";
import { judged } from "../test-support/judge.mjs";
import { StripeWire } from "../test-support/stripe-wire.mjs";

const CHILD = fileURLToPath(new URL("../test-support/child.mjs", import.meta.url));
const BOUND = 60_000; // ms: the longest any step may take before the test fails loudly

function start(fw, db, port) {
  const p = spawn(process.execPath, [CHILD, fw, db, String(port)], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  p.stdout.on("data", (c) => (out += c));
  p.stderr.on("data", (c) => (err += c));
  const exited = new Promise((ok) => p.on("exit", (code, signal) => ok({ code, signal, out, err })));
  return { p, exited };
}

function bounded(promise, what) {
  let timer;
  const late = new Promise((_, no) => (timer = setTimeout(() => no(new Error(`${what}: not within ${BOUND} ms`)), BOUND)));
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

for (const fw of NAMES) {
  test(`${fw}: killed mid-refund and restarted, one refund`, async () => {
    const db = join(mkdtempSync(join(tmpdir(), "tc-crash-")), "intents.db");
    const fake = await new StripeWire().start();
    try {
      const held = fake.hold();
      const first = start(fw, db, fake.port);
      const gone = await bounded(Promise.race([held.then(() => null), first.exited]), "the refund reaching the provider");
      assert.equal(gone, null, `the first process ended before its refund was sent: ${gone?.err}`);
      first.p.kill("SIGKILL");
      assert.equal((await bounded(first.exited, "the kill")).signal, "SIGKILL");
      fake.release(); // the held refund applies; its answer goes to a dead socket
      await bounded(
        (async () => {
          while (fake.refunds.length === 0) await new Promise((ok) => setImmediate(ok));
        })(),
        "the held refund applying",
      );

      const again = await bounded(start(fw, db, fake.port).exited, "the restarted run");
      assert.equal(again.code, 0, again.err);
      const { told } = JSON.parse(again.out);
      assert.equal(fake.refunds.length, 1, "one refund across the crash");
      assert.equal(told.length, 2);
      for (const t of told) assert.match(t, new RegExp(fake.refunds[0].id), "the model is told the refund");

      const log = await IntentLog.sqlite(db, { writer: "checker", provider: "stripe", settler: false });
      try {
        const [rec] = await log.records();
        assert.equal(rec.state, "ACKED");
        assert.deepEqual(new Set(fake.posts()), new Set([rec.key]), "every send under the intent's key");
        const types = (await log.events()).map((e) => e.type);
        assert.ok(types.includes("crash") && types.includes("restart"), types.join(" "));
      } finally {
        await log.close();
      }
      const verdict = await judged(db);
      if (verdict !== null) assert.match(verdict, /^CONFORMS/, verdict);
    } finally {
      await fake.stop();
    }
  });
}
