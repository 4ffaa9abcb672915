/**
 * The key on the wire (runtime/wire.py): `instrument(log)` wraps the global `fetch` (undici)
 * and `node:http` / `node:https` (`request`, `get`: the Stripe Node SDK's client), so a write
 * an effect sends carries the intent's idempotency key in the header the provider's profile
 * names (Stripe's Idempotency-Key; a key already there is replaced), and a write to a guarded
 * host is refused before it is sent (`UnkeyedWrite`) when no effect runs, when a status read
 * runs, or when the effect's design sends no key. GET, HEAD, OPTIONS and TRACE pass as they
 * are. `unguarded(fn)` lets a write that is no tool's intent through unchanged.
 *
 * The wire's word beats the tool's: each keyed write is noted and marked answered when a
 * response comes back; an effect whose last keyed write got none is in doubt whatever it
 * returns (the guard takes it as a timeout).
 */
import { AsyncLocalStorage } from "node:async_hooks";
import http from "node:http";
import https from "node:https";
import { syncBuiltinESMExports } from "node:module";
import { type Design, DesignError, loadDesign } from "./design.js";
import { currentTicket, sentWrite } from "./guard.js";
import { IntentLog, IntentLogError } from "./log.js";

export const SAFE = new Set(["GET", "HEAD", "OPTIONS", "TRACE"]);
const PORTS: Record<string, number> = { "http:": 80, "https:": 443 };

/** A write refused before it was sent: it would reach a provider whose design needs the intent's key without one. */
export class UnkeyedWrite extends IntentLogError {
  override name = "UnkeyedWrite";
}

const HOSTS = new Map<string, [string, string]>(); // "host:port" or "host:" -> (design, header)
const OPEN = new AsyncLocalStorage<boolean>();
let patched: (() => void) | null = null;

function hostKey(entry: string): string {
  let u: URL;
  try {
    u = new URL(entry.includes("://") ? entry : `http://${entry}`);
  } catch {
    throw new DesignError(`instrument: host ${JSON.stringify(entry)} names no host (write api.stripe.com, 127.0.0.1:8123 or https://api.stripe.com)`);
  }
  const explicit = entry.includes("://") ? u.port || String(PORTS[u.protocol] ?? "") : u.port;
  return `${u.hostname.toLowerCase().replace(/^\[|\]$/g, "")}:${explicit}`;
}

function guardOf(url: URL): [string, string] | undefined {
  const host = url.hostname.toLowerCase().replace(/^\[|\]$/g, "");
  const port = url.port || String(PORTS[url.protocol] ?? "");
  return HOSTS.get(`${host}:${port}`) ?? HOSTS.get(`${host}:`);
}

function refusal(method: string, url: string, guard: [string, string], why: string, fix: string): UnkeyedWrite {
  return new UnkeyedWrite(
    `${method} ${url} was refused before it was sent: ${why}, and this host is instrumented for design ${guard[0]}, ` +
      `which sends each intent's ${guard[1]}. ${fix}`,
  );
}

/** The [header, key] to set on a request to `url`, undefined to send it as it is; `UnkeyedWrite` where it must not be sent. */
export function stamp(method: string, url: string): [string, string] | undefined {
  method = method.toUpperCase();
  if (SAFE.has(method) || OPEN.getStore() || patched === null) return undefined;
  const t = currentTicket();
  const guard = guardOf(new URL(url));
  if (t !== undefined && (t.purpose === "apply" || t.purpose === "replay")) {
    if (t.keyHeader && t.idempotencyKey) return [t.keyHeader, t.idempotencyKey];
    if (guard === undefined) return undefined;
    throw refusal(method, url, guard, "the running effect's design sends no key", "Open its log with the design of this provider (provider=).");
  }
  if (guard === undefined) return undefined;
  if (t === undefined) {
    throw refusal(
      method,
      url,
      guard,
      "no effect runs, so it carries no intent's key (a retry after a lost answer would apply it twice)",
      "Send it from a function wrapped by effectful (or guard), which stamps the key; a write that is no tool's intent " +
        "goes inside unguarded(() => ...).",
    );
  }
  throw refusal(method, url, guard, `a status read (${t.tool}, intent ${t.key}) must not write`, "Read with a GET (for Stripe, the list of the charge's refunds).");
}

// ----- the clients -----------------------------------------------------------------------------
type Fetch = typeof globalThis.fetch;

function wrapFetch(original: Fetch): Fetch {
  const wrapped = async (input: Parameters<Fetch>[0], init?: Parameters<Fetch>[1]): Promise<Response> => {
    const req = input instanceof Request ? input : undefined;
    const url = req ? req.url : String(input instanceof URL ? input.href : input);
    const method = (init?.method ?? req?.method ?? "GET").toUpperCase();
    const got = stamp(method, url);
    if (got === undefined) return original(input, init);
    const headers = new Headers(init?.headers ?? req?.headers);
    headers.set(got[0], got[1]);
    const w = sentWrite(`${method} ${url}`);
    const res = await original(input, { ...init, headers });
    if (w) w.answered = true;
    return res;
  };
  return wrapped as Fetch;
}

type RequestFn = typeof http.request;

function requestUrl(proto: string, args: unknown[]): { url: string; method: string } {
  let base: URL | undefined;
  let opts: Record<string, unknown> = {};
  if (typeof args[0] === "string" || args[0] instanceof URL) {
    base = new URL(String(args[0] instanceof URL ? args[0].href : args[0]));
    if (args[1] && typeof args[1] === "object") opts = args[1] as Record<string, unknown>;
  } else if (args[0] && typeof args[0] === "object") {
    opts = args[0] as Record<string, unknown>;
  }
  const protocol = (opts.protocol as string) ?? base?.protocol ?? proto;
  const host = (opts.hostname as string) ?? ((opts.host as string) || undefined)?.split(":")[0] ?? base?.hostname ?? "localhost";
  const port = opts.port ?? base?.port ?? "";
  const path = (opts.path as string) ?? (base ? base.pathname + base.search : "/");
  const h = host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
  return { url: `${protocol}//${h}${port ? `:${port}` : ""}${path}`, method: String(opts.method ?? "GET").toUpperCase() };
}

function wrapRequest(original: RequestFn, proto: string, get: boolean): RequestFn {
  const wrapped = function (this: unknown, ...args: unknown[]) {
    const { url, method } = requestUrl(proto, args);
    const got = stamp(get ? "GET" : method, url);
    const req = (original as (...a: unknown[]) => http.ClientRequest).apply(this, args);
    if (got !== undefined) {
      req.setHeader(got[0], got[1]);
      const w = sentWrite(`${method} ${url}`);
      if (w) req.once("response", () => (w.answered = true));
    }
    return req;
  };
  return wrapped as unknown as RequestFn;
}

/** Wrap fetch and node:http(s) (once) and guard `provider`'s hosts (default: the profile's). */
export function instrument(provider?: IntentLog | Design | string, hosts?: Iterable<string>): string[] {
  const entries = entriesOf(provider, hosts);
  for (const [where, guard] of entries) {
    const had = HOSTS.get(where);
    if (had && (had[0] !== guard[0] || had[1] !== guard[1])) {
      throw new DesignError(`instrument: host ${where.split(":")[0]} is guarded for design ${had[0]} already; uninstrument() first`);
    }
  }
  if (patched === null) {
    const httpMod = http;
    const httpsMod = https;
    const originals = {
      fetch: globalThis.fetch,
      httpRequest: httpMod.request,
      httpGet: httpMod.get,
      httpsRequest: httpsMod.request,
      httpsGet: httpsMod.get,
    };
    globalThis.fetch = wrapFetch(originals.fetch);
    httpMod.request = wrapRequest(originals.httpRequest, "http:", false);
    httpMod.get = wrapRequest(originals.httpGet, "http:", true) as typeof http.get;
    httpsMod.request = wrapRequest(originals.httpsRequest, "https:", false);
    httpsMod.get = wrapRequest(originals.httpsGet, "https:", true) as typeof https.get;
    syncBuiltinESMExports();
    patched = () => {
      globalThis.fetch = originals.fetch;
      httpMod.request = originals.httpRequest;
      httpMod.get = originals.httpGet;
      httpsMod.request = originals.httpsRequest;
      httpsMod.get = originals.httpsGet;
      syncBuiltinESMExports();
    };
  }
  for (const [k, v] of entries) HOSTS.set(k, v);
  return ["fetch", "http", "https"];
}

function entriesOf(provider: IntentLog | Design | string | undefined, hosts?: Iterable<string>): Map<string, [string, string]> {
  const out = new Map<string, [string, string]>();
  if (provider === undefined) {
    if (hosts) throw new DesignError("instrument: hosts= needs the provider whose hosts they are");
    return out;
  }
  const d = provider instanceof IntentLog ? provider.design : loadDesign(provider);
  if (d.keyHeader === null) {
    if (hosts) {
      throw new DesignError(
        `instrument: design ${d.source} sends no idempotency key in a header (its profile names none), so there is nothing to stamp on its hosts: drop hosts=`,
      );
    }
    return out;
  }
  for (const h of hosts ?? d.hosts) out.set(hostKey(h), [d.source, d.keyHeader]);
  return out;
}

/** Take every wrapper back and forget the guarded hosts. */
export function uninstrument(): void {
  patched?.();
  patched = null;
  HOSTS.clear();
}

/** Run `fn` with its writes sent as they are: no key stamped, none refused. */
export function unguarded<T>(fn: () => T): T {
  return OPEN.run(true, fn);
}

