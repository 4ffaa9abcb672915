// The framework wrappers, each with the real framework and a scripted model, refunding through
// the real Stripe Node SDK to a Stripe-wire fake on 127.0.0.1 that loses its first two answers
// (after the refund applied): the SDK's first send and its own retry; the model then calls
// refund again under a new call id. Without the wrapper: two refunds (the SDK mints a key per
// call). Through it: one (every send carries the intent's key, the guard replays it once the
// SDK gave up), and the model gets that refund both times. With every answer lost, the model
// is told the refund may or may not have happened (InDoubt), both times, and one refund applies.
// The wrapped runs' logs are judged by the Python checker (`validate --design stripe`): CONFORMS.
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { IntentLog, IntentLogError, instrument, uninstrument } from "toolcommit";
import { NAMES, framework } from "../test-support/frameworks.mjs";
import { judged } from "../test-support/judge.mjs";
import { client, refunder, status } from "../test-support/refund.mjs";
import { StripeWire } from "../test-support/stripe-wire.mjs";

const fresh = () => join(mkdtempSync(join(tmpdir(), "tc-wrap-")), "intents.db");

/** Run `fw`'s agent against a fresh fake losing its first answer; `wrapped(raw, stripe)` makes the tool. */
async function lostAck(fw, wrapped) {
  const { raw, run } = await framework(fw);
  const fake = await new StripeWire().start();
  try {
    fake.lose(2);
    const stripe = client(fake.port);
    const told = await run(await wrapped(raw(refunder(stripe)), stripe, fake));
    return { fake, told };
  } finally {
    await fake.stop();
  }
}

for (const fw of NAMES) {
  test(`${fw}: a lost ack and a model retry refund twice without the wrapper, once through it`, async () => {
    const { wrap } = await framework(fw);
    const bare = await lostAck(fw, (raw) => raw);
    assert.equal(bare.fake.refunds.length, 2, "without the wrapper the model's retry is a second refund");

    const db = fresh();
    const log = await IntentLog.sqlite(db, { writer: "agent", provider: "stripe" });
    try {
      const { fake, told } = await lostAck(fw, (raw, stripe, f) => {
        instrument(log, [f.host]);
        return wrap(raw, log, { scope: "request:7", principal: "user:42", status: status(stripe) });
      });
      assert.equal(fake.refunds.length, 1, "through the wrapper: one refund");
      const [rec] = await log.records();
      assert.equal(rec.state, "ACKED");
      assert.deepEqual(fake.posts(), [rec.key, rec.key, rec.key], "the SDK's send and retry, the guard's replay: one key");
      assert.equal(told.length, 2);
      for (const t of told) assert.match(t, new RegExp(fake.refunds[0].id), "the model is told the refund both times");
      const decisions = (await log.events()).filter((e) => e.type === "proposal").map((e) => e.decision);
      assert.deepEqual(decisions, ["accepted", "duplicate"]);
    } finally {
      uninstrument();
      await log.close();
    }
    const verdict = await judged(db); // the Python checker, where its CLI is on PATH
    if (verdict !== null) assert.match(verdict, /^CONFORMS/, verdict);
  });
}

test("a wrapper refuses a tool without principal or status when it is wrapped, before anything is sent", async () => {
  const log = await IntentLog.sqlite(fresh(), { writer: "agent", provider: "stripe" });
  try {
    for (const fw of NAMES) {
      const { raw: make, wrap } = await framework(fw);
      const raw = make(async () => assert.fail("nothing runs"));
      assert.throws(() => wrap(raw, log, { scope: "request:7", status: async () => null }), (e) => e instanceof IntentLogError && /principal=/.test(e.message), fw);
      assert.throws(() => wrap(raw, log, { scope: "request:7", principal: "user:42" }), (e) => e instanceof IntentLogError && /pass status=/.test(e.message), fw);
      assert.throws(() => wrap(raw, log, undefined), (e) => e instanceof IntentLogError && /pass the options/.test(e.message), fw);
      assert.throws(() => wrap(raw, log, { principal: "user:42", status: async () => null }), (e) => e instanceof IntentLogError && /pass scope=/.test(e.message), fw);
      assert.throws(
        () => wrap(raw, log, { scope: "request:7", principal: "user:42", status: async () => null, identity: ["charge", "reason"] }),
        /reason/,
        fw,
      );
    }
    assert.deepEqual(await log.records(), []);
  } finally {
    await log.close();
  }
});

test("each wrapper loads under require() with the exports it has under import", async () => {
  const require = createRequire(import.meta.url);
  for (const [sub, names] of Object.entries({ ai: ["aiTool"], mastra: ["mastraTool"], langgraph: ["langchainTool", "toolNode"], "openai-agents": ["openaiAgentsTool"] })) {
    const esm = await import(`toolcommit/${sub}`);
    const cjs = require(`toolcommit/${sub}`);
    assert.deepEqual(Object.keys(esm).sort(), names, sub);
    assert.deepEqual(Object.keys(cjs).filter((k) => k !== "__esModule").sort(), names, sub);
  }
});

for (const fw of NAMES) {
  test(`${fw}: every answer lost: the model is told the refund may or may not have happened, and nothing is sent twice unkeyed`, async () => {
    const { raw, wrap, run } = await framework(fw);
    const log = await IntentLog.sqlite(fresh(), { writer: "agent", provider: "stripe", wait: 0 });
    const fake = await new StripeWire().start();
    try {
      fake.lose(1000);
      instrument(log, [fake.host]);
      const stripe = client(fake.port);
      const told = await run(wrap(raw(refunder(stripe)), log, { scope: "request:7", principal: "user:42", status: status(stripe) }));
      assert.equal(fake.refunds.length, 1, "one refund, whatever was re-sent under its key");
      const [rec] = await log.records();
      assert.ok(new Set(fake.posts()).size === 1 && fake.posts()[0] === rec.key, "every send under the intent's key");
      assert.equal(told.length, 2);
      for (const t of told) {
        const said = JSON.parse(t);
        assert.equal(said.toolcommit, "InDoubt", t);
        assert.equal(said.happened, "unknown");
        assert.match(said.message, /may or may not have happened/);
      }
    } finally {
      uninstrument();
      await fake.stop();
      await log.close();
    }
  });
}

for (const fw of NAMES) {
  test(`${fw}: the principal taken from the framework's context: two users' equal refunds are two intents`, async () => {
    const { raw, wrap, run, user } = await framework(fw);
    const log = await IntentLog.sqlite(fresh(), { writer: "agent", provider: "stripe" });
    const fake = await new StripeWire().start();
    try {
      instrument(log, [fake.host]);
      const stripe = client(fake.port);
      const tool = wrap(raw(refunder(stripe)), log, { scope: "request:7", principal: user, status: status(stripe) });
      const told = [...(await run(tool, "user:ana")), ...(await run(tool, "user:bo"))];
      assert.equal(fake.refunds.length, 2, "one refund per user: each user's retry met their own record");
      assert.deepEqual(told.map((t) => JSON.parse(t).id), [fake.refunds[0].id, fake.refunds[0].id, fake.refunds[1].id, fake.refunds[1].id]);
      const proposals = (await log.events()).filter((e) => e.type === "proposal");
      assert.deepEqual(proposals.map((e) => [e.principal, e.decision]), [
        ["user:ana", "accepted"],
        ["user:ana", "duplicate"],
        ["user:bo", "accepted"],
        ["user:bo", "duplicate"],
      ]);
    } finally {
      uninstrument();
      await fake.stop();
      await log.close();
    }
  });
}
