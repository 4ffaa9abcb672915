// The key on the wire: fetch, node:http and the Stripe Node SDK through a loopback fake of
// Stripe's refunds (saved responses per Idempotency-Key, an ack it can drop).
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import Stripe from "stripe";
import { IntentLog, UnkeyedWrite, currentTicket, effectful, instrument, unguarded, uninstrument } from "../dist/esm/index.js";

/** Stripe's refunds on 127.0.0.1: a POST applies once per key (its response saved and
 * replayed for the key), a POST without a key applies every time; `drop` loses the next ack. */
class FakeStripe {
  refunds = [];
  keys = [];
  saved = new Map();
  drop = 0;
  server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      const url = new URL(req.url, "http://x");
      if (req.method === "GET") {
        const data = this.refunds.filter((r) => r.charge === url.searchParams.get("charge"));
        return this.reply(res, { object: "list", data });
      }
      const key = req.headers["idempotency-key"] ?? null;
      this.keys.push(key);
      let out = key === null ? undefined : this.saved.get(key);
      if (out === undefined) {
        const form = new URLSearchParams(body);
        out = { id: `re_${this.refunds.length + 1}`, object: "refund", charge: form.get("charge"), amount: Number(form.get("amount")) };
        this.refunds.push(out);
        if (key !== null) this.saved.set(key, out);
      }
      if (this.drop > 0) {
        this.drop--;
        return req.socket.destroy(); // applied, and the answer lost
      }
      this.reply(res, out);
    });
  });
  reply(res, doc) {
    const data = JSON.stringify(doc);
    res.writeHead(200, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(data), "Request-Id": "req_1" });
    res.end(data);
  }
}

let fake;
let base;
before(async () => {
  fake = new FakeStripe();
  await new Promise((r) => fake.server.listen(0, "127.0.0.1", r));
  base = `127.0.0.1:${fake.server.address().port}`;
});
after(() => {
  uninstrument();
  fake.server.closeAllConnections();
  fake.server.close();
});

const fresh = () => join(mkdtempSync(join(tmpdir(), "tc-wire-")), "intents.db");
const stripeClient = () =>
  new Stripe("sk_test_fake", { host: "127.0.0.1", port: fake.server.address().port, protocol: "http", maxNetworkRetries: 0 });

test("fetch: a write in an effect carries the intent's key; outside one it is refused unsent", async () => {
  const log = await IntentLog.sqlite(fresh(), { writer: "w", provider: "stripe", settler: false });
  instrument(log, [base]);
  const refund = effectful(
    log,
    "refund_fetch",
    { scope: "request:1", principal: "user:1", status: async () => null },
    async ({ charge, amount }) => (await fetch(`http://${base}/v1/refunds`, { method: "POST", body: `charge=${charge}&amount=${amount}` })).json(),
  );
  const before = fake.keys.length;
  const got = await refund({ charge: "ch_f", amount: 5 });
  assert.equal(got.charge, "ch_f");
  const rec = (await log.records())[0];
  assert.deepEqual(fake.keys.slice(before), [rec.key]);
  await assert.rejects(fetch(`http://${base}/v1/refunds`, { method: "POST", body: "charge=ch_x" }), (e) => e instanceof UnkeyedWrite && /no effect runs/.test(e.message));
  assert.equal(fake.keys.length, before + 1); // nothing reached the provider
  assert.equal((await fetch(`http://${base}/v1/refunds?charge=ch_f`)).status, 200); // a read passes
  const set = await unguarded(() => fetch(`http://${base}/v1/refunds`, { method: "POST", body: "charge=ch_setup&amount=1" }));
  assert.equal(set.status, 200);
  assert.equal(fake.keys.at(-1), null); // unguarded: sent as it is
  await log.close();
  uninstrument();
});

test("node:http: a write in an effect is stamped, replacing a key already there", async () => {
  const log = await IntentLog.sqlite(fresh(), { writer: "w", provider: "stripe", settler: false });
  instrument(log, [base]);
  const post = effectful(log, "refund_http", { scope: "request:2", principal: "user:1", status: async () => null }, () =>
    new Promise((resolve, reject) => {
      const [host, port] = base.split(":");
      const req = http.request({ host, port, method: "POST", path: "/v1/refunds", headers: { "Idempotency-Key": "minted-by-the-sdk" } }, (res) => {
        let d = "";
        res.on("data", (c) => (d += c));
        res.on("end", () => resolve(JSON.parse(d)));
      });
      req.on("error", reject);
      req.end("charge=ch_h&amount=7");
    }),
  );
  await post({ charge: "ch_h", amount: 7 });
  assert.equal(fake.keys.at(-1), (await log.records())[0].key);
  await log.close();
  uninstrument();
});

test("the Stripe SDK: a lost ack and the model's retry refund once with the wrapper, twice without", async () => {
  const stripe = stripeClient();
  // without the wrapper: the ack is lost; the SDK re-sends the request by itself (with no
  // key: maxNetworkRetries is 0), and the model would ask again if it still failed
  const n0 = fake.refunds.length;
  fake.drop = 1;
  try {
    await stripe.refunds.create({ charge: "ch_bare", amount: 20 });
  } catch {
    await stripe.refunds.create({ charge: "ch_bare", amount: 20 }); // the model's retry
  }
  assert.equal(fake.refunds.length - n0, 2); // refunded twice

  const log = await IntentLog.sqlite(fresh(), { writer: "w", provider: "stripe", settler: false });
  instrument(log, [base]);
  const refund = effectful(
    log,
    "refund",
    {
      scope: "request:9",
      principal: "user:1",
      status: async (t) => (await unguarded(() => stripe.refunds.list({ charge: t.args.charge }))).data[0] ?? null,
    },
    async ({ charge, amount }) => {
      assert.ok(currentTicket().idempotencyKey.startsWith("tc1-"));
      return stripe.refunds.create({ charge, amount });
    },
  );
  const n1 = fake.refunds.length;
  fake.drop = 2; // the send and the SDK's own re-send both lose their answer
  const first = await refund({ charge: "ch_guarded", amount: 20 }, { callId: "call_1" });
  const retry = await refund({ charge: "ch_guarded", amount: 20 }, { callId: "call_2" });
  assert.equal(fake.refunds.length - n1, 1); // one refund
  assert.equal(first.id, retry.id);
  const key = (await log.records())[0].key;
  assert.deepEqual(fake.keys.slice(-3), [key, key, key]); // the sends and the log's replay: one key
  const lines = (await log.events()).map((e) => `${e.type} ${e.to ?? e.decision}${e.reason ? ` (${e.reason})` : ""}`);
  assert.ok(lines.includes("transition RECONCILING (replay under the same key)"), lines.join("\n"));
  assert.ok(lines.includes("proposal duplicate"));
  await log.close();
  uninstrument();
});
