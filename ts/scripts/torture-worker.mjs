// The torture harness's worker on the TypeScript library (checker/torture/worker.py's
// DesignRuntime and agent loop, in Node): `toolcommit torture --runtime ts`. The harness
// forks, keeps two pipes open and execs this script with one JSON argument: the run's
// configuration (store, design, proxy port), the plan's sessions and timing, the worker's
// name, incarnation and pipe descriptors. At each hook point the worker reports where it is
// and blocks until the harness's go-ahead, so the harness can kill, pause or cancel there.
import { readSync, writeSync } from "node:fs";
import http from "node:http";
import { Answered, Conflict, GaveUp, Held, InDoubt, IntentLog, guard } from "../dist/esm/index.js";
import { pyFloat } from "../dist/esm/canon.js";

const PRINCIPAL = "torture:user"; // one user: the run's scopes tell its requests apart
const FINAL = new Set(["done", "rejected", "answered"]);
const OPEN = ["RECORDED", "DISPATCHED", "UNKNOWN", "RECONCILING"];

const arg = JSON.parse(process.argv[2]);
const { conf, plan, name, inc, toFd, fromFd } = arg;
const timing = plan.timing;

function hook(point, key = "") {
  writeSync(toFd, `${point} ${key}\n`);
  const buf = Buffer.alloc(1);
  let n = 0;
  try {
    n = readSync(fromFd, buf, 0, 1, null);
  } catch {
    n = 0;
  }
  if (n !== 1 || buf[0] !== 0x63) process.exit(3); // the harness is gone: stop at once
}

class NoAnswer extends Error {
  name = "NoAnswer";
}

/** HTTP to the proxy with the client timeout: [answer, document] as worker.py's Net. */
function request(method, path, body, headers) {
  return new Promise((resolve) => {
    const data = body === null ? undefined : Buffer.from(JSON.stringify(body));
    const sent = pyFloat(Number(process.hrtime.bigint()) / 1e9); // CLOCK_MONOTONIC, as Python's
    const req = http.request(
      { host: "127.0.0.1", port: conf.proxy_port, method, path, headers: { ...headers, "X-Sent": sent, ...(data ? { "Content-Length": data.length } : {}) } },
      (res) => {
        const chunks = [];
        res.on("data", (c) => chunks.push(c));
        res.on("end", () => {
          clearTimeout(timer);
          let doc;
          try {
            const text = Buffer.concat(chunks).toString() || "{}";
            doc = JSON.parse(text);
          } catch {
            return resolve(["lost", null]);
          }
          if (res.statusCode === 200) return resolve(["ok", doc]);
          if (res.statusCode === 409) return resolve([doc.error === "idempotency_key_in_use" ? "in_flight" : "fenced", doc]);
          resolve([res.statusCode === 412 ? "exists" : "error", doc]);
        });
        res.on("error", () => resolve(["lost", null]));
      },
    );
    const timer = setTimeout(() => {
      req.destroy();
      resolve(["lost", null]);
    }, timing.timeout * 1000);
    req.on("error", () => {
      clearTimeout(timer);
      resolve(["lost", null]);
    });
    req.end(data);
  });
}

function apply(record, key, fence, tool, args, scope) {
  const headers = { "Content-Type": "application/json", "X-Record-Key": record };
  if (key !== null) headers["Idempotency-Key"] = key;
  if (fence !== null) headers.Fence = String(fence);
  return request("POST", "/effect", { tool, args, scope }, headers);
}

function status(key, fence, via) {
  const seal = fence === null ? "" : `&fence=${fence}`;
  return request("GET", `/${via}?key=${key}${seal}`, null, {});
}

const provider = conf.design;
const log =
  conf.store === "postgres"
    ? await IntentLog.postgres(conf.dsn, { writer: name, schema: conf.schema, lease: conf.lease, provider })
    : await IntentLog.sqlite(conf.db, { writer: name, synchronous: "NORMAL", lease: conf.lease, provider });
const first = new Map();

async function execute(t) {
  const point = t.purpose === "apply" ? "dispatched" : "reconciling";
  if (!first.has(t.key)) first.set(t.key, performance.now() / 1000);
  hook(point, t.key);
  const w = log.design.replayWindow;
  if (w !== null && performance.now() / 1000 > first.get(t.key) + w) throw new NoAnswer("the replay window closed before the send");
  const [answer, doc] = await apply(t.key, t.idempotencyKey, t.fence, t.tool, t.args, t.scope);
  hook("sent", t.key);
  if (answer === "ok" || answer === "exists") return { id: doc.id ?? null };
  throw new NoAnswer(`${answer}: ${(doc ?? {}).error ?? "no answer"}`);
}

async function readStatus(t) {
  const [answer, doc] = await status(t.idempotencyKey ?? t.key, t.fence, t.via);
  if (answer !== "ok") throw new NoAnswer(`status read: ${answer}`);
  return doc.applied ? { id: doc.id } : null;
}

async function call(callId, tool, args, scope, newAttempt) {
  try {
    await guard(log, callId, tool, args, scope, execute, {
      status: readStatus,
      newRequest: newAttempt,
      onProposed: (d) => hook("proposed", d.key),
      principal: PRINCIPAL,
    });
  } catch (e) {
    if (e instanceof GaveUp) return "gave_up";
    if (e instanceof Held) return "held";
    if (e instanceof InDoubt) return "doubt";
    if (e instanceof Answered) return "answered";
    if (e instanceof Conflict) return "rejected";
    throw e;
  }
  return "done";
}

async function runSession(session, tag) {
  const script = session.calls.length
    ? session.calls
    : Array.from({ length: session.retries + 1 }, (_, i) => [null, i % session.forms.length, false]);
  let newAttempt = false;
  let askedAgain = false;
  for (let i = 0; i < script.length; i++) {
    const [callId, form] = script[i];
    const out = await call(callId ?? `${tag}.a${i}`, session.tool, session.forms[form], session.scope, newAttempt);
    newAttempt = false;
    const more = i + 1 < script.length && script[i + 1][2];
    if (FINAL.has(out) && !more) return;
    if (out === "gave_up") {
      if (askedAgain) return;
      askedAgain = newAttempt = true;
    }
  }
}

for (const si of plan.assign[plan.workers.indexOf(name)]) await runSession(plan.sessions[si], `${name}.${inc}.s${si}`);
// settle every record this worker holds or can take over, until none is open
for (;;) {
  await log.recover();
  for (const r of await log.records(OPEN)) {
    if (r.owner === log.writer && r.ownerInc === log.incarnation) await call(r.callId, r.tool, r.args, r.scope, false);
  }
  if ((await log.unsettled()) === 0) break;
  await new Promise((res) => setTimeout(res, timing.poll * 1000));
}
await log.close();
process.exit(0);
