/**
 * One effectful call through the whole protocol (runtime/shims.py): propose (the log
 * decides) and, when accepted, dispatch in the same commit; run the effect under its ticket;
 * ack only with its result; resolve an unknown outcome as the design says, never by a blind
 * re-send. A duplicate of an acknowledged intent gets the saved result back. The words to
 * the model are the Python library's, sentence for sentence.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";
import { REASON, unknownAction } from "./design.js";
import { type Identity } from "./identity.js";
import { IntentLog, IntentLogError } from "./log.js";
import type { Decision, IntentRecord, Ticket } from "./records.js";
import { GAVE_UP, OPEN_STATES } from "./store.js";

const POLL = 0.05;

/** The call did not take effect through this call site; `happened`: "no" or "unknown" (or "yes" for Answered). */
export class EffectError extends IntentLogError {
  override name = "EffectError";
  happened: "no" | "unknown" | "yes" = "unknown";
  constructor(
    message: string,
    readonly record?: IntentRecord,
    happened?: "no" | "unknown" | "yes",
  ) {
    super(message);
    if (happened !== undefined) this.happened = happened;
  }
  /** What the model is told (a sentence it can pass on to the user). */
  tell(): string {
    return this.message;
  }
}
export class Conflict extends EffectError {
  override name = "Conflict";
  override happened: "no" | "unknown" | "yes" = "no";
}
export class GaveUp extends EffectError {
  override name = "GaveUp";
}
export class InDoubt extends EffectError {
  override name = "InDoubt";
}
export class Held extends InDoubt {
  override name = "Held";
}
export class Answered extends EffectError {
  override name = "Answered";
  constructor(
    message: string,
    record?: IntentRecord,
    happened?: "no" | "unknown" | "yes",
    readonly result: unknown = null,
  ) {
    super(message, record, happened);
  }
}

/** What a framework wrapper returns to the model for `e`: plain words first. */
export function tell(e: EffectError): Record<string, unknown> {
  const rec = e.record;
  const out: Record<string, unknown> = {
    toolcommit: e.name,
    happened: e.happened,
    message: e.message,
    intent: rec ? rec.key : null,
    state: rec ? rec.state : null,
  };
  if (e instanceof Answered && e.result !== null && e.result !== undefined) out.result = e.result;
  return out;
}

// ----- the running effect: its ticket and the writes the wire saw ----------------------
interface Running {
  ticket: Ticket;
  writes: { what: string; answered: boolean }[];
}
const RUNNING = new AsyncLocalStorage<Running | undefined>();

/** The ticket of the effect (or status read) running now, inside a guard; else undefined. */
export function currentTicket(): Ticket | undefined {
  return RUNNING.getStore()?.ticket;
}

/** Note a keyed write the running effect sends (the wire calls it); mark it answered later. */
export function sentWrite(what: string): { what: string; answered: boolean } | undefined {
  const r = RUNNING.getStore();
  if (r === undefined) return undefined;
  const w = { what, answered: false };
  r.writes.push(w);
  return w;
}

/** Run `fn` outside any effect (for the wire's own `unguarded`). */
export function outsideEffect<T>(fn: () => T): T {
  return RUNNING.run(undefined, fn);
}

class NoAnswer extends Error {
  override name = "NoAnswer";
}

// ----- what the model is told -------------------------------------------------------------
function gaveUp(log: IntentLog, rec: IntentRecord): GaveUp {
  if (rec.state === "REJECTED_CONFLICT") {
    return new GaveUp(`The ${rec.tool} was not done: it was cancelled before it was sent (intent ${rec.key}).`, rec, "no");
  }
  if (rec.state === "COMPENSATED") {
    return new GaveUp(
      `The ${rec.tool} was reversed or never took effect (intent ${rec.key}): do not tell the user it was done.`,
      rec,
      "no",
    );
  }
  if (log.design.settlesByRead) {
    return new GaveUp(
      `The ${rec.tool} did not happen: the provider shows no effect, and no request of it can still arrive ` +
        `(intent ${rec.key}). Tell the user it was not done; they may ask again.`,
      rec,
      "no",
    );
  }
  return new GaveUp(
    `The ${rec.tool} may or may not have happened: its answer was lost and the provider cannot be asked ` +
      `(intent ${rec.key}). Do not tell the user it was done; tell them it may have happened, and that asking again may do it twice.`,
    rec,
    "unknown",
  );
}

/** Python's repr of a JSON value, as the Python library's message shows a saved result. */
export function pyRepr(v: unknown): string {
  if (v === null || v === undefined) return "None";
  if (v === true) return "True";
  if (v === false) return "False";
  if (typeof v === "number") return Number.isInteger(v) ? String(v) : String(v);
  if (typeof v === "string") return v.includes("'") && !v.includes('"') ? `"${v}"` : `'${v.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;
  if (Array.isArray(v)) return "[" + v.map(pyRepr).join(", ") + "]";
  return "{" + Object.entries(v as Record<string, unknown>).map(([k, x]) => `${pyRepr(k)}: ${pyRepr(x)}`).join(", ") + "}";
}

function met(d: Decision, tool: string): EffectError {
  const rec = d.record;
  if (d.decision === "held") {
    return new Held(
      `The ${tool} was not sent: an earlier request for the same ${tool} (intent ${rec.key}) may or may not have ` +
        "happened and is still being settled. Do not tell the user it was done, and do not send it again: " +
        "asking again later gets that request's outcome.",
      rec,
      "unknown",
    );
  }
  if (rec.state === "ACKED") {
    return new Answered(
      `The ${tool} was not sent again: an earlier request for the same ${tool} was done (intent ${rec.key}; ` +
        `its answer: ${pyRepr(rec.result)}), but its outcome never reached the user: they were told it may or may not ` +
        "have happened, or nothing, when its call gave up waiting. Tell the user it was done; if they want another, they may ask again.",
      rec,
      "yes",
      rec.result,
    );
  }
  return new Answered(
    `The ${tool} was not sent: an earlier request for the same ${tool} (intent ${rec.key}) was given up and may ` +
      "have happened; sending again may do it twice. Tell the user; if they still want it, they may ask again.",
    rec,
    "unknown",
  );
}

function inDoubt(rec: IntentRecord, why: string): InDoubt {
  return new InDoubt(
    `The ${rec.tool} may or may not have happened: ${why} (intent ${rec.key}). Do not tell the user it was done, ` +
      "and do not retry it: the intent log settles it.",
    rec,
    "unknown",
  );
}

// ----- the core -----------------------------------------------------------------------------
const sleep = (s: number) => new Promise<void>((r) => setTimeout(r, s * 1000));
const isMine = (log: IntentLog, r: IntentRecord) => r.owner === log.writer && r.ownerInc === log.incarnation;
const ACTING = new WeakMap<IntentLog, Map<string, object>>();

function act(log: IntentLog, key: string, me: object): boolean {
  let m = ACTING.get(log);
  if (m === undefined) ACTING.set(log, (m = new Map()));
  if (!m.has(key)) m.set(key, me);
  return m.get(key) === me;
}
function done(log: IntentLog, key: string, me: object): void {
  const m = ACTING.get(log);
  if (m?.get(key) === me) m.delete(key);
}

export type Execute = (t: Ticket) => unknown;
export type Status = ((t: Ticket) => unknown) | undefined;
type Reply = [true, unknown] | [false, unknown];

/** Run `fn(ticket)` as the running effect: its reply, or no answer where its last keyed write got none. */
async function perform(
  fn: ((t: Ticket) => unknown) | undefined,
  t: Ticket,
  stopped?: (why: string) => Promise<unknown>,
): Promise<Reply> {
  const running: Running = { ticket: t, writes: [] };
  try {
    if (fn === undefined) throw new TypeError("no status read given");
    const value = await RUNNING.run(running, async () => await fn(t));
    const last = running.writes[running.writes.length - 1];
    if (last !== undefined && !last.answered) return [false, new NoAnswer(`${last.what} got no answer`)];
    return [true, value];
  } catch (e) {
    if (e instanceof IntentLogError && stopped !== undefined) {
      // a keyless write refused by the wire: the effect was stopped, say which
      await stopped(`the effect was stopped: ${e.name}: ${e.message}`.slice(0, 200));
      throw e;
    }
    return [false, e];
  }
}

interface Asked {
  told: boolean;
}

async function send(log: IntentLog, t: Ticket, execute: Execute, saved: (r: unknown) => unknown, asked?: Asked): Promise<[unknown] | undefined> {
  const [ok, value] = await perform(execute, t, (why) => log.timeout(t, why));
  if (ok) {
    if (await log.ack(t, jsonResult(saved(value)), asked !== undefined)) {
      if (asked) asked.told = true;
      return [value];
    }
    const rec = await log.record(t.key);
    return rec?.state === "ACKED" ? [value] : undefined;
  }
  const why = value instanceof NoAnswer ? `: ${value.message}` : "";
  const name = value instanceof Error ? value.name : typeof value;
  await log.timeout(t, `no answer: ${name}${why}`.slice(0, 200));
  return undefined;
}

function jsonResult(v: unknown): unknown {
  try {
    JSON.stringify(v);
    return v === undefined ? null : v;
  } catch {
    return { repr: String(v) };
  }
}

async function readStatus(log: IntentLog, rec: IntentRecord, deadline: number, status: Status, saved: (r: unknown) => unknown): Promise<void> {
  const t = (await log.ticket(rec.key))!;
  if (!log.design.statusRead) {
    await log.settle(t, false);
    return;
  }
  const wait = await log.readWait(rec.key);
  if (wait > 0) {
    if (Date.now() / 1000 + wait > deadline) {
      throw inDoubt(rec, `a request of it may still reach the provider for ${Math.round(wait)} s, and only then does a status read tell`);
    }
    await sleep(wait);
    return;
  }
  const [ok, value] = await perform(status, t);
  if (!ok) throw inDoubt(rec, `the status read failed (${value instanceof Error ? value.name : typeof value})`);
  statusContract(rec, value);
  const present = value !== null && value !== undefined;
  await log.settle(t, present, present ? jsonResult(saved(value)) : null);
}

function statusContract(rec: IntentRecord, value: unknown): void {
  const empty =
    typeof value === "boolean" ||
    value === "" ||
    (Array.isArray(value) && value.length === 0) ||
    (value !== null && typeof value === "object" && !Array.isArray(value) && Object.keys(value).length === 0);
  if (empty) {
    throw new IntentLogError(
      `The ${rec.tool} may or may not have happened (intent ${rec.key}): its status read returned ${pyRepr(value)}, but status ` +
        "must return the effect's result when the provider shows it and None when it does not (a (found, result) tuple, a bool " +
        "or an empty container is not the contract: return None for none found). The record stays in doubt until a status " +
        "read that keeps the contract settles it: fix the status function.",
    );
  }
}

/** Drive `key`'s record to a settled state (runtime/shims.py `_steps`); the effect's result. */
async function steps(
  log: IntentLog,
  key: string,
  execute: Execute,
  status: Status,
  saved: (r: unknown) => unknown,
  opts: { wait?: number; ticket?: Ticket; asked?: Asked },
): Promise<unknown> {
  const me = {};
  return log.driving(key, async () => {
    try {
      if (opts.ticket !== undefined) {
        act(log, key, me);
        const got = await send(log, opts.ticket, execute, saved, opts.asked);
        if (got !== undefined) return got[0];
      }
      return await driveKey(log, key, execute, status, saved, opts.wait ?? log.wait, opts.asked, me);
    } finally {
      done(log, key, me);
    }
  });
}

async function driveKey(
  log: IntentLog,
  key: string,
  execute: Execute,
  status: Status,
  saved: (r: unknown) => unknown,
  wait: number,
  asked: Asked | undefined,
  me: object,
): Promise<unknown> {
  const deadline = Date.now() / 1000 + wait;
  for (;;) {
    const rec = (await log.record(key))!;
    if (rec.state === "ACKED") return rec.result;
    if (GAVE_UP.includes(rec.state)) throw gaveUp(log, rec);
    if (isMine(log, rec) && !act(log, key, me)) {
      if (Date.now() / 1000 + POLL > deadline) throw inDoubt(rec, `this process is settling it now (${rec.state})`);
      await sleep(POLL);
      continue;
    }
    if (!isMine(log, rec) || rec.state === "DISPATCHED") {
      const left = isMine(log, rec) ? POLL : await log.leaseLeft(key);
      if (left <= 0 && (await log.take(key)) !== undefined) continue;
      if (Date.now() / 1000 + Math.min(left, POLL) > deadline) {
        throw inDoubt(rec, `writer ${rec.owner} holds it (${rec.state}) and its lease has ${left.toFixed(1)} s left`);
      }
      await sleep(Math.min(Math.max(left, 0.001), POLL));
      continue;
    }
    if (rec.state === "RECORDED") {
      const t = await log.dispatch(key);
      if (t !== undefined) {
        const got = await send(log, t, execute, saved, asked);
        if (got !== undefined) return got[0];
      }
      continue;
    }
    if (rec.state === "UNKNOWN") {
      if (unknownAction(log.design, true) === "park") {
        await log.deadLetter(key, REASON.park);
        continue;
      }
      const t = await log.reconcile(key);
      if (t !== undefined && t.purpose === "replay") {
        const got = await send(log, t, execute, saved, asked);
        if (got !== undefined) return got[0];
      }
      continue;
    }
    await readStatus(log, rec, deadline, status, saved); // RECONCILING, ours
  }
}

// ----- the API ------------------------------------------------------------------------------
export interface GuardOptions {
  status?: Status;
  newRequest?: boolean;
  saved?: (r: unknown) => unknown;
  onProposed?: (d: Decision) => void;
  /** Who asked: required under a design with reask=hold (every shipped one). */
  principal?: string | null;
  /** What makes two calls one intent: an `Identity`, or the argument names (default: all). */
  identity?: Identity | readonly string[] | null;
}

function needsStatus(log: IntentLog, status: Status): void {
  if (status === undefined && log.design.settlesByRead) {
    throw new IntentLogError(
      `design ${log.design.name} settles an unknown outcome with a status read (status_via=${log.design.knobs.status_via}): ` +
        "pass status= (a function of the ticket returning the effect's result, or null when the provider shows none)",
    );
  }
}

/** Run one effectful call through the log; the effect's result (or the saved one). */
export async function guard(
  log: IntentLog,
  callId: string,
  tool: string,
  args: Record<string, unknown>,
  scope: string,
  execute: Execute,
  opts: GuardOptions = {},
): Promise<unknown> {
  needsStatus(log, opts.status);
  const saved = opts.saved ?? ((r: unknown) => r);
  log.checkPrincipal(opts.principal, `call ${callId} of ${tool}`);
  let fields: readonly string[] | null = null;
  if (opts.identity && !Array.isArray(opts.identity) && typeof (opts.identity as Identity).normalize === "function") {
    const ident = opts.identity as Identity;
    await log.declare(tool, ident.rule());
    args = ident.normalize(args);
    fields = ident.names;
  } else if (opts.identity) {
    fields = [...(opts.identity as readonly string[])];
  }
  const propose = async (): Promise<Decision> => {
    const d = await log.propose(callId, tool, args, scope, {
      newAttempt: opts.newRequest,
      dispatch: true,
      principal: opts.principal ?? null,
      identity: fields,
    });
    if (d.decision === "held") return d;
    opts.onProposed?.(d);
    if (d.decision === "conflict") {
      throw new Conflict(`The ${tool} was not done: scope ${scope} already holds another ${tool} (${d.record.key}).`, d.record);
    }
    if (d.decision === "answered") throw met(d, tool);
    return d;
  };
  const deadline = Date.now() / 1000 + log.wait;
  const asked: Asked = { told: false };
  let d: Decision;
  try {
    d = await propose();
    while (d.decision === "held") {
      if (Date.now() / 1000 + POLL > deadline) throw met(d, d.record.tool);
      await sleep(POLL);
      d = await propose();
    }
  } catch (e) {
    if (e instanceof Answered && e.record) await log.heard(e.record.key);
    throw e;
  }
  const got = await steps(log, d.key, execute, opts.status, saved, { ticket: d.ticket, asked });
  if (!asked.told) await log.heard(d.key);
  return got;
}

// ----- tools the settler settles --------------------------------------------------------------
interface Tool {
  run: (args: Record<string, unknown>) => unknown;
  status: Status;
}
const TOOLS = new WeakMap<IntentLog, Map<string, Tool>>();

/** Let the settler (and `recoverSettle`) settle `log`'s records of `tool`. */
export function register(log: IntentLog, tool: string, run: Tool["run"], status?: Status): void {
  let m = TOOLS.get(log);
  if (m === undefined) TOOLS.set(log, (m = new Map()));
  m.set(tool, { run, status });
  if (!log.tools.has(tool)) {
    log.tools.add(tool);
    log.settleWith(settlePass);
  }
}

/** One pass that never waits: take over the records of gone holders and settle every record
 * in doubt this writer holds, with its registered tool; {key: state after}. */
export async function recoverSettle(log: IntentLog, limit = 100, tools?: Set<string>): Promise<Record<string, string>> {
  await log.recover(limit, tools);
  const out: Record<string, string> = {};
  for (const rec of await log.inDoubt()) {
    if (log.closing) break;
    if (tools !== undefined && !tools.has(rec.tool)) continue;
    const tool = TOOLS.get(log)?.get(rec.tool);
    const needs = tool === undefined && (log.design.statusRead || rec.state === "RECORDED");
    if (needs || (rec.state === "RECONCILING" && (await log.readWait(rec.key)) > 0)) {
      out[rec.key] = rec.state;
      continue;
    }
    try {
      await steps(log, rec.key, (t) => tool!.run(t.args), tool?.status, (r) => r, { wait: 0 });
    } catch (e) {
      if (!(e instanceof EffectError)) throw e;
    }
    out[rec.key] = (await log.record(rec.key))?.state ?? rec.state;
  }
  return out;
}

async function settlePass(log: IntentLog): Promise<number> {
  await recoverSettle(log, 1000, new Set(log.tools));
  const due = await log.due();
  return due === undefined || due <= 0 ? log.settleEvery : Math.min(due, log.settleEvery);
}

export type Principal = string | ((args: Record<string, unknown>) => string) | null | undefined;

export interface EffectfulOptions {
  /** The user's request the call belongs to: a string or a function of the arguments. */
  scope: string | ((args: Record<string, unknown>) => string);
  /** Who asked: a string or a function of the arguments; required under reask=hold. */
  principal?: Principal;
  identity?: Identity | readonly string[] | null;
  status?: Status;
  account?: string;
}

/** Per-call options of a wrapped function. */
export interface CallOptions {
  callId?: string;
  newRequest?: boolean;
}

/** Wrap `fn(args)` (sync or async), which performs one effect, in the whole protocol. */
export function effectful<A extends Record<string, unknown>, R>(
  log: IntentLog,
  tool: string,
  options: EffectfulOptions,
  fn: (args: A) => R | Promise<R>,
): (args: A, call?: CallOptions) => Promise<R> {
  if (typeof fn !== "function") throw new IntentLogError(`tool ${tool}: effectful wraps a function of the arguments`);
  const { principal } = options;
  if (principal !== null && principal !== undefined && typeof principal !== "string" && typeof principal !== "function") {
    throw new IntentLogError(`tool ${tool}: principal=${JSON.stringify(principal)} is neither a string nor a function of the call's arguments returning one`);
  }
  if (principal === "") throw new IntentLogError(`tool ${tool}: principal= must name who asked, got an empty string`);
  if (principal === null || principal === undefined) log.checkPrincipal(null, `tool ${tool}`);
  needsStatus(log, options.status);
  if (Array.isArray(options.identity) && options.identity.some((n) => typeof n !== "string")) {
    throw new IntentLogError(`${tool}: identity fields must be argument names, got ${JSON.stringify(options.identity)}`);
  }
  register(log, tool, (args) => fn(args as A), options.status);
  let bound: Promise<void> | undefined;
  return async (args: A, call: CallOptions = {}): Promise<R> => {
    if (options.account !== undefined) await (bound ??= log.bindAccount(options.account));
    const scope = typeof options.scope === "function" ? options.scope(args) : options.scope;
    const who = typeof principal === "function" ? principal(args) : principal;
    return (await guard(log, call.callId ?? randomUUID(), tool, args, scope, (t) => fn(t.args as A), {
      status: options.status,
      newRequest: call.newRequest,
      principal: who ?? null,
      identity: options.identity,
    })) as R;
  };
}

export { NoAnswer, OPEN_STATES };
