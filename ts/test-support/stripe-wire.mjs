// A Stripe-wire fake on 127.0.0.1 (tests/runtime/stripe_wire.py's rules, in Node): the real
// Stripe Node SDK talks to it. A form-encoded POST /v1/refunds under an Idempotency-Key saves
// its first response once execution began and answers every later request under the key from
// it (Idempotent-Replayed: true); a request under a key whose first still executes gets 409
// idempotency_key_in_use; a key reused with other parameters gets 400. GET /v1/refunds?charge=
// lists a charge's refunds newest first (limit, starting_after, has_more), with their metadata.
// Faults: lose(n) closes the connection instead of the next n answers to a POST (after applying:
// a lost ack); hold() keeps the next POST executing until release() (at most WAIT ms), heldOnce()
// resolves when one is held. It binds 127.0.0.1 only, checks Host and the API key, and stops
// by itself after `lifetime` ms.
import http from "node:http";

export const TOKEN = "sk_test_toolcommit_wire";
const WAIT = 5000;

const error = (status, type, message, code) => [status, { error: { type, message, ...(code ? { code } : {}) } }];

export class StripeWire {
  constructor(lifetime = 60000) {
    this.refunds = [];
    this.seen = []; // [method, path, Idempotency-Key or null]
    this.saved = new Map();
    this.lost = 0;
    this.holding = null;
    this.lifetime = lifetime;
    this.server = http.createServer((req, res) => this.handle(req, res));
  }

  /** Listen on 127.0.0.1 (an ephemeral port); resolves to this. */
  async start() {
    await new Promise((ok) => this.server.listen(0, "127.0.0.1", ok));
    this.port = this.server.address().port;
    this.host = `127.0.0.1:${this.port}`;
    this.timer = setTimeout(() => this.stop(), this.lifetime).unref();
    return this;
  }

  async stop() {
    clearTimeout(this.timer);
    this.release();
    this.server.closeAllConnections?.();
    await new Promise((ok) => this.server.close(() => ok()));
  }

  lose(n = 1) {
    this.lost = n;
  }

  /** Keep the next POST executing until release(); `held` resolves once one is. */
  hold() {
    let held, go;
    const reached = new Promise((ok) => (held = ok));
    const released = new Promise((ok) => (go = ok));
    this.holding = { held, go, reached, released };
    return reached;
  }

  /** Let the held POST (or the next one, if none is held yet) go on. */
  release() {
    (this.inHold ?? this.holding)?.go();
  }

  posts() {
    return this.seen.filter(([m]) => m === "POST").map(([, , k]) => k);
  }

  async create(key, params) {
    const old = key ? this.saved.get(key) : undefined;
    if (old) {
      if (old.params !== params) return [...error(400, "idempotency_error", "Keys for idempotent requests can only be used with the same parameters they were first used with."), false];
      if (old.executing) return [...error(409, "idempotency_error", "There is currently another in-progress request using this Idempotent Key.", "idempotency_key_in_use"), false];
      return [old.status, old.body, true];
    }
    const form = Object.fromEntries(new URLSearchParams(params));
    if (!form.charge) return [...error(400, "invalid_request_error", "Missing required param: charge.", "parameter_missing"), false];
    const entry = { params, executing: true };
    if (key) this.saved.set(key, entry);
    const h = this.holding;
    if (h) {
      this.holding = null;
      this.inHold = h;
      h.held();
      await Promise.race([h.released, new Promise((ok) => setTimeout(ok, WAIT).unref())]);
    }
    const metadata = Object.fromEntries(Object.entries(form).filter(([k]) => k.startsWith("metadata[")).map(([k, v]) => [k.slice(9, -1), v]));
    const refund = { id: `re_${String(this.refunds.length + 1).padStart(6, "0")}`, object: "refund", amount: Number(form.amount ?? 0), charge: form.charge, currency: "usd", metadata, status: "succeeded", created: Math.floor(Date.now() / 1000) };
    this.refunds.push(refund);
    Object.assign(entry, { status: 200, body: refund, executing: false });
    return [200, refund, false];
  }

  list(query) {
    const limit = Number(query.get("limit") ?? 10);
    let rows = [...this.refunds].reverse().filter((r) => !query.has("charge") || r.charge === query.get("charge"));
    const after = query.get("starting_after");
    if (after) {
      const i = rows.findIndex((r) => r.id === after);
      if (i < 0) return error(400, "invalid_request_error", `No such refund: '${after}'`);
      rows = rows.slice(i + 1);
    }
    return [200, { object: "list", url: "/v1/refunds", has_more: rows.length > limit, data: rows.slice(0, limit) }];
  }

  refused(req) {
    if (req.headers.origin !== undefined) return error(403, "invalid_request_error", "no browser origins here");
    if (![`127.0.0.1:${this.port}`, `localhost:${this.port}`].includes(req.headers.host)) return error(400, "invalid_request_error", "wrong Host");
    if (req.headers.authorization !== `Bearer ${TOKEN}`) return error(401, "invalid_request_error", "Invalid API Key provided");
    return undefined;
  }

  handle(req, res) {
    const url = new URL(req.url, "http://127.0.0.1");
    const key = req.headers["idempotency-key"] ?? null;
    this.seen.push([req.method, url.pathname, key]);
    const answer = (status, body, extra = {}) => {
      const data = JSON.stringify(body);
      res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(data), "Request-Id": `req_${this.seen.length}`, ...extra });
      res.end(data);
    };
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", async () => {
      const bad = this.refused(req) ?? (url.pathname === "/v1/refunds" ? undefined : error(404, "invalid_request_error", "Unrecognized URL"));
      if (bad) return answer(...bad);
      if (req.method === "GET") return answer(...this.list(url.searchParams));
      const params = [...new URLSearchParams(body)].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, v]) => `${k}=${v}`).join("&");
      const [status, out, replayed] = await this.create(key, params);
      if (this.lost > 0) {
        this.lost -= 1;
        return req.socket.destroy(); // the ack is lost: no answer, connection closed
      }
      answer(status, out, replayed ? { "Idempotent-Replayed": "true" } : {});
    });
  }
}
