// The intent log on SQLite: decisions, lines and restarts, as the Python library's.
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { IntentLog, IntentLogError, canonicalIntent, intentScope, semanticKey } from "../dist/esm/index.js";

const fresh = () => join(mkdtempSync(join(tmpdir(), "tc-ts-")), "intents.db");

test("a duplicate of one intent, another principal's is another; no principal is refused", async () => {
  const log = await IntentLog.sqlite(fresh(), { writer: "w1", provider: "stripe" });
  const d = await log.propose("t1", "refund", { amount: 20 }, "request:7", { principal: "user:42" });
  assert.equal(d.decision, "accepted");
  assert.equal(d.key, semanticKey(canonicalIntent("refund", { amount: 20 }, intentScope("user:42", "request:7")).digest, 0));
  const dup = await log.propose("t2", "refund", { amount: 20.0 }, "request:7", { principal: "user:42" });
  assert.equal(dup.decision, "duplicate");
  const other = await log.propose("t3", "refund", { amount: 20 }, "request:7", { principal: "user:9" });
  assert.equal(other.decision, "accepted");
  await assert.rejects(
    log.propose("t4", "refund", { amount: 20 }, "request:7"),
    (e) => e instanceof IntentLogError && e.message.includes("pass principal="),
  );
  const t = await log.dispatch(d.key);
  assert.equal(t.idempotencyKey, d.key);
  assert.equal(t.fence, null);
  assert.equal(t.via, "list");
  assert.equal(t.keyHeader, "Idempotency-Key");
  assert.equal(await log.ack(t, { id: "re_1" }), true);
  assert.equal((await log.record(d.key)).state, "ACKED");
  const seen = (await log.events()).map((e) => `${e.type} ${e.to ?? e.decision}`);
  assert.deepEqual(seen, [
    "proposal accepted",
    "transition RECORDED",
    "proposal duplicate",
    "proposal accepted",
    "transition RECORDED",
    "transition DISPATCHED",
    "transition ACKED",
  ]);
  await log.close();
});

test("a restart after a crash takes over the dispatched record as UNKNOWN", async () => {
  const path = fresh();
  const a = await IntentLog.sqlite(path, { writer: "w1", provider: "stripe" });
  const d = await a.propose("t1", "refund", { amount: 5 }, "r1", { principal: "u", dispatch: true });
  assert.equal(d.ticket.purpose, "apply");
  // no close: the process "died" (its writer row still says running)
  const b = await IntentLog.sqlite(path, { writer: "w1", provider: "stripe" });
  assert.equal(b.crashed, true);
  assert.equal(b.incarnation, 2);
  const rec = await b.record(d.key);
  assert.equal(rec.state, "UNKNOWN");
  const types = (await b.events()).map((e) => e.type);
  assert.deepEqual(types.slice(-3), ["crash", "restart", "transition"]);
  await b.close();
});

test("a log refuses another design", async () => {
  const path = fresh();
  const a = await IntentLog.sqlite(path, { writer: "w1", provider: "stripe" });
  await a.close();
  await assert.rejects(IntentLog.sqlite(path, { writer: "w1", provider: "email" }), /created under design stripe/);
});
