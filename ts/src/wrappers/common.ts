/**
 * What the framework wrappers share (runtime/frameworks/common.py): the options every wrapper
 * takes (`scope`, `principal`, `status`, `identity`, `newRequest`), the checks made when a tool
 * is wrapped (no principal where the design holds a re-ask, no status where it reads one, an
 * identity field the tool does not declare), the tool's registration with its log (its settler
 * settles the tool's records in doubt in this process), and one call through `guard`: the
 * arguments normalized by the tool's declared schema, the effect run with them, an outcome
 * that did not take effect through this call handed to the framework's way of telling the model.
 */
import { randomUUID } from "node:crypto";
import { EffectError, guard, register, type Status } from "../guard.js";
import { Identity } from "../identity.js";
import { IntentLog, IntentLogError } from "../log.js";

/** A value, or a function of what the framework knows of the call (`args`, its context). */
export type Hook<T, C> = T | ((args: Record<string, unknown>, ctx: C) => T);

/** The options every wrapper takes; `C` is the framework's context of one call. */
export interface WrapOptions<C> {
  /** The user's request the call belongs to: name it, so two real requests are two intents. */
  scope: Hook<string, C>;
  /** Who asked (a user, tenant, authenticated client): required under reask=hold (every shipped design). */
  principal?: Hook<string, C> | null;
  /** The provider's status read, where the log's design reads one (Stripe's does). */
  status?: Status;
  /** The argument names that make two requests one intent (default: every declared one). */
  identity?: readonly string[] | null;
  /** The user asked again: an intent given up gets a new attempt. */
  newRequest?: (ctx: C) => boolean;
}

function hook<T, C>(h: Hook<T, C> | null | undefined, args: Record<string, unknown>, ctx: C): T | null {
  if (h === null || h === undefined) return null;
  return typeof h === "function" ? (h as (a: Record<string, unknown>, c: C) => T)(args, ctx) : h;
}

/** Refuse misuse when the tool is wrapped, not at its first call: a missing `principal` under
 * reask=hold, a missing `status` where the design reads one, a bad `scope` or `identity`. */
export function checked<C>(log: IntentLog, tool: string, opts: WrapOptions<C>): void {
  if (!(log instanceof IntentLog)) throw new IntentLogError(`tool ${tool}: the first argument must be an open IntentLog`);
  if (opts === null || typeof opts !== "object") throw new IntentLogError(`tool ${tool}: pass the options { scope, principal, status }`);
  if (opts.scope === undefined || opts.scope === "" || (typeof opts.scope !== "string" && typeof opts.scope !== "function")) {
    throw new IntentLogError(`tool ${tool}: pass scope= (a string naming the user's request, or a function of the call returning one)`);
  }
  const p = opts.principal;
  if (p === "") throw new IntentLogError(`tool ${tool}: principal= must name who asked, got an empty string`);
  if (p !== null && p !== undefined && typeof p !== "string" && typeof p !== "function") {
    throw new IntentLogError(`tool ${tool}: principal= is neither a string nor a function of the call returning one`);
  }
  if (p === null || p === undefined) log.checkPrincipal(null, `tool ${tool}`);
  if (opts.status === undefined && log.design.settlesByRead) {
    throw new IntentLogError(
      `tool ${tool}: design ${log.design.name} settles an unknown outcome with a status read ` +
        `(status_via=${log.design.knobs.status_via}): pass status= (a function of the ticket returning the effect's ` +
        "result, or null when the provider shows none)",
    );
  }
}

/** The tool's identity from its declared JSON Schema, its `identity` fields checked against it. */
export function identityOf(tool: string, schema: unknown, fields?: readonly string[] | null): Identity {
  const s = schema !== null && typeof schema === "object" ? (schema as Record<string, unknown>) : {};
  return Identity.fromJsonSchema(tool, s, fields ?? null);
}

/** One wrapped tool: its name, identity and effect as the settler runs it (`run(args)`), under `opts`. */
export interface Wrapped<C> {
  log: IntentLog;
  tool: string;
  ident: Identity;
  opts: WrapOptions<C>;
  /** Performs the effect with the normalized arguments, without a framework's context (the settler's replay). */
  run: (args: Record<string, unknown>) => unknown;
}

/** Register `w`'s tool with its log: the log's settler settles its records in doubt here. */
export function registered<C>(w: Wrapped<C>): void {
  register(w.log, w.tool, (args) => w.run(args), w.opts.status);
}

/**
 * One call of `w` through the log: the arguments normalized by the tool's identity, keyed by
 * (tool, identity arguments, principal, scope); the framework's `callId` is evidence only.
 * `effect(args)` performs it with the arguments the log keeps (and a replay sends). An
 * `EffectError` (Conflict, GaveUp, InDoubt, Held, Answered) goes to `failed`, whose return is
 * the call's (what the model reads); any other error is thrown.
 */
export async function call<C, F>(
  w: Wrapped<C>,
  args: Record<string, unknown>,
  ctx: C,
  callId: string | undefined,
  effect: (args: Record<string, unknown>) => unknown,
  failed: (e: EffectError) => F,
): Promise<unknown> {
  const normalized = w.ident.normalize(args);
  const scope = hook(w.opts.scope, normalized, ctx);
  if (typeof scope !== "string" || scope === "") throw new IntentLogError(`tool ${w.tool}: scope() returned no string`);
  const principal = hook(w.opts.principal, normalized, ctx);
  try {
    return await guard(w.log, callId || randomUUID(), w.tool, normalized, scope, (t) => effect(t.args), {
      status: w.opts.status,
      newRequest: w.opts.newRequest ? Boolean(w.opts.newRequest(ctx)) : false,
      principal,
      identity: w.ident,
    });
  } catch (e) {
    if (e instanceof EffectError) return failed(e);
    throw e;
  }
}
