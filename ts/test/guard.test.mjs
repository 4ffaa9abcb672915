// guard and effectful: an unknown outcome resolved as the design says, the settler, the
// re-ask hold, and the words the model hears (the Python library's).
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { Answered, GaveUp, InDoubt, IntentLog, effectful, loadDesign, tell } from "../dist/esm/index.js";

const fresh = () => join(mkdtempSync(join(tmpdir(), "tc-guard-")), "intents.db");

async function until(what, fn, bound = 10) {
  const deadline = Date.now() + bound * 1000;
  for (;;) {
    if (await fn()) return;
    if (Date.now() > deadline) throw new Error(`not within ${bound} s: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test("stripe: a lost answer is replayed under the same key, then read once the delay bound passed, by the settler", async () => {
  const provider = loadDesign("stripe").withTiming({ delayBound: 0.3 });
  const log = await IntentLog.sqlite(fresh(), { writer: "w", provider, settleEvery: 0.05, wait: 0 });
  const sent = [];
  let applied = null;
  let readable = false;
  const refund = effectful(
    log,
    "refund",
    {
      scope: ({ req }) => `request:${req}`,
      principal: "ana",
      identity: ["order", "amount"],
      status: async () => (readable ? applied : null),
    },
    async ({ amount }) => {
      sent.push(amount);
      applied = { id: "re_1", amount };
      throw new Error("the answer was lost");
    },
  );
  const err = await refund({ order: "o1", amount: 20, req: 1 }, { callId: "c1" }).catch((e) => e);
  assert.ok(err instanceof InDoubt, String(err));
  assert.equal(err.happened, "unknown");
  assert.match(err.message, /^The refund may or may not have happened: a request of it may still reach the provider for \d+ s/);
  assert.deepEqual(sent, [20, 20]); // the send and one replay under the same key, never a third
  const key = err.record.key;
  readable = true;
  await until("the settler read it", async () => (await log.record(key)).state === "ACKED");
  assert.deepEqual((await log.record(key)).result, { id: "re_1", amount: 20 });
  // the user asks again in a new request: the outcome it never heard is the answer
  const again = await refund({ order: "o1", amount: 20, req: 2 }, { callId: "c3" }).catch((e) => e);
  assert.ok(again instanceof Answered);
  assert.equal(again.happened, "yes");
  assert.deepEqual(again.result, { id: "re_1", amount: 20 });
  assert.match(again.message, /^The refund was not sent again: an earlier request for the same refund was done \(intent tc1-/);
  assert.deepEqual(Object.keys(tell(again)), ["toolcommit", "happened", "message", "intent", "state", "result"]);
  // the model retries the first request's call: its saved answer
  assert.deepEqual(await refund({ order: "o1", amount: 20.0, req: 1 }, { callId: "c2" }), { id: "re_1", amount: 20 });
  assert.deepEqual(sent, [20, 20]);
  // a replay's missed answer moves nothing (no line): the read settles it from RECONCILING
  const reasons = (await log.events()).filter((e) => e.reason).map((e) => e.reason);
  assert.deepEqual(reasons, ["no answer: Error", "replay under the same key", "status present"]);
  await log.close();
});

test("email: a lost answer is given up visibly, and a re-ask in another request is answered, not sent", async () => {
  const log = await IntentLog.sqlite(fresh(), { writer: "w", provider: "email", settler: false });
  let sent = 0;
  const mail = effectful(log, "send_receipt", { scope: ({ req }) => req, principal: "ana", identity: ["to"] }, async () => {
    sent++;
    throw new Error("timeout");
  });
  const first = await mail({ req: "r1", to: "ana@example.com" }).catch((e) => e);
  assert.ok(first instanceof GaveUp);
  assert.equal(first.happened, "unknown");
  assert.match(first.message, /asking again may do it twice\.$/);
  const second = await mail({ req: "r2", to: "ana@example.com" }).catch((e) => e);
  assert.ok(second instanceof Answered);
  assert.equal(second.happened, "unknown");
  assert.equal(sent, 1);
  const lines = await log.events();
  assert.deepEqual(lines.filter((e) => e.type === "proposal").map((e) => [e.decision, e.identity]), [
    ["accepted", ["to"]],
    ["duplicate", ["to"]],
  ]);
  await log.close();
});

test("a wrapper without principal is refused at wrap time under reask=hold", async () => {
  const log = await IntentLog.sqlite(fresh(), { writer: "w", provider: "email", settler: false });
  assert.throws(() => effectful(log, "send", { scope: "s" }, async () => 1), /pass principal=/);
  await log.close();
});
