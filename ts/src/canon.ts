/**
 * The checker's own canonicalizer, version 1 (model/canon.py): which tool calls are one user
 * intent. The same forms and digests as Python's, byte for byte (tests compare them on
 * generated calls): strings NFC, stripped, inner whitespace runs (Python's `str.split()`
 * whitespace) one space; object names sorted by their escaped JSON text, by code point;
 * an integral number within +-2**53 written as an integer, any other number in Python's
 * `repr` of a float; NaN and infinities refused; nesting deeper than 64 refused.
 */
import { createHash } from "node:crypto";

export const MAX_DEPTH = 64;
const EXACT = 2 ** 53;
const PREFIX = "toolcommit/canon/v1\n";

/** The call has no canonical form (NaN, ambiguous names, nesting too deep, bad type). */
export class CanonError extends Error {
  override name = "CanonError";
}

export interface CanonicalIntent {
  digest: string;
  form: string;
  version: number;
}

class Fail extends Error {
  path: string[] = [];
}

// Python's str.isspace() characters: what str.split() splits on
const WS = "[\\t\\n\\x0b\\x0c\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]+";
const WS_RUN = new RegExp(WS, "g");
const WS_EDGE = new RegExp(`^${WS}|${WS}$`, "g");

/** Rule 1: NFC, strip, collapse inner whitespace runs to one space. */
export function text(s: string): string {
  return s.normalize("NFC").replace(WS_EDGE, "").replace(WS_RUN, " ");
}

/** Python's json `encode_basestring` (ensure_ascii=False): quotes, escapes. */
export function pyString(s: string): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const ch = s[i];
    if (ch === '"') out += '\\"';
    else if (ch === "\\") out += "\\\\";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (ch === "\b") out += "\\b";
    else if (ch === "\f") out += "\\f";
    else if (c < 0x20) out += "\\u" + c.toString(16).padStart(4, "0");
    else out += ch;
  }
  return out + '"';
}

/** Python's `repr` of a finite float: shortest round-trip digits, scientific below 1e-4
 * and from 1e16 on, always with a decimal point or an exponent. */
export function pyFloat(v: number): string {
  if (Object.is(v, -0)) return "-0.0";
  if (v === 0) return "0.0";
  const [mant, expText] = v.toExponential().split("e");
  const exp = Number(expText);
  const neg = mant.startsWith("-");
  const digits = mant.replace("-", "").replace(".", "");
  const sign = neg ? "-" : "";
  if (exp < -4 || exp >= 16) {
    const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    const e = exp < 0 ? `-${String(-exp).padStart(2, "0")}` : `+${String(exp).padStart(2, "0")}`;
    return `${sign}${m}e${e}`;
  }
  if (exp < 0) return `${sign}0.${"0".repeat(-exp - 1)}${digits}`;
  if (digits.length <= exp + 1) return `${sign}${digits}${"0".repeat(exp + 1 - digits.length)}.0`;
  return `${sign}${digits.slice(0, exp + 1)}.${digits.slice(exp + 1)}`;
}

/** Rule 3, as text. */
function num(v: number): string {
  if (!Number.isFinite(v)) throw new Fail("NaN or infinity has no canonical form");
  if (Number.isInteger(v) && v >= -EXACT && v <= EXACT) return String(v === 0 ? 0 : v);
  return pyFloat(v);
}

function cmpCodePoints(a: string, b: string): number {
  const x = Array.from(a);
  const y = Array.from(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i].codePointAt(0)! - y[i].codePointAt(0)!;
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

function form(v: unknown, depth: number): string {
  if (v === null) return "null";
  if (typeof v === "string") return pyString(text(v));
  if (typeof v === "boolean") return v ? "true" : "false";
  if (typeof v === "number") return num(v);
  if (typeof v === "bigint") {
    if (v >= -BigInt(EXACT) && v <= BigInt(EXACT)) return v.toString();
    const f = Number(v);
    if (!Number.isFinite(f)) {
      throw new Fail("an integer beyond the float range (about 1.8e308) has no canonical form");
    }
    return num(f);
  }
  if (Array.isArray(v)) {
    if (depth >= MAX_DEPTH) throw new Fail(`nested deeper than ${MAX_DEPTH} levels`);
    return (
      "[" +
      v
        .map((x, i) => {
          try {
            return form(x, depth + 1);
          } catch (e) {
            if (e instanceof Fail) e.path.push(`[${i}]`);
            throw e;
          }
        })
        .join(",") +
      "]"
    );
  }
  if (typeof v === "object" && Object.getPrototypeOf(v) !== null && !isPlain(v)) {
    throw new Fail(`a ${(v as object).constructor?.name ?? "value"} is not a JSON value`);
  }
  if (typeof v === "object") {
    if (depth >= MAX_DEPTH) throw new Fail(`nested deeper than ${MAX_DEPTH} levels`);
    const items: [string, string][] = [];
    for (const [name, value] of Object.entries(v as Record<string, unknown>)) {
      if (value === undefined) continue; // JSON has no undefined: an omitted argument
      let t: string;
      try {
        t = form(value, depth + 1);
      } catch (e) {
        if (e instanceof Fail) e.path.push("." + name);
        throw e;
      }
      items.push([pyString(text(name)), t]);
    }
    items.sort((a, b) => cmpCodePoints(a[0], b[0]) || cmpCodePoints(a[1], b[1]));
    for (let i = 1; i < items.length; i++) {
      if (items[i][0] === items[i - 1][0]) throw new Fail(`two names normalize to ${items[i][0]}`);
    }
    return "{" + items.map(([n, x]) => `${n}:${x}`).join(",") + "}";
  }
  throw new Fail(`a ${typeof v} is not a JSON value`);
}

function isPlain(v: object): boolean {
  const p = Object.getPrototypeOf(v);
  return p === Object.prototype || p === null;
}

/** The canonical intent of one tool call (canonicalizer v1): equal digests mean one intent. */
export function canonicalIntent(tool: string, args: unknown, scope: string): CanonicalIntent {
  if (typeof tool !== "string" || typeof scope !== "string") {
    throw new CanonError("tool and scope must be strings");
  }
  let f: string;
  try {
    f = form(args, 0);
  } catch (e) {
    if (e instanceof Fail) throw new CanonError("args" + e.path.reverse().join("") + ": " + e.message);
    throw e;
  }
  const full = `[${pyString(text(tool))},${pyString(text(scope))},${f}]`;
  const digest = createHash("sha256").update(PREFIX + full, "utf8").digest("hex");
  return { digest, form: full, version: 1 };
}

/** The scope a key is derived from: `scope` itself, or `[principal, scope]` as compact JSON
 * when the call names its principal (two principals are never one intent). */
export function intentScope(principal: string | null | undefined, scope: string): string {
  if (principal === null || principal === undefined) return scope;
  return `[${pyString(principal)},${pyString(scope)}]`;
}

/** The record key (also the idempotency key sent to the provider). */
export function semanticKey(digest: string, epoch: number): string {
  return `tc1-${digest.slice(0, 32)}-e${epoch}`;
}

/** Python's `json.dumps(v, sort_keys=True, separators=(",", ":"))` (ensure_ascii on), with
 * every number in `floats` paths written as a Python float: what a design's digest covers. */
export function pyDumpsSorted(v: unknown, float = false): string {
  if (v === null || v === undefined) return "null";
  if (typeof v === "string") return asciiString(v);
  if (typeof v === "boolean") return v ? "true" : "false";
  if (typeof v === "number") return float || !Number.isInteger(v) ? pyFloat(v) : String(v);
  if (Array.isArray(v)) return "[" + v.map((x) => pyDumpsSorted(x, float)).join(",") + "]";
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o).sort(cmpCodePoints);
  return "{" + keys.map((k) => `${asciiString(k)}:${pyDumpsSorted(o[k], float)}`).join(",") + "}";
}

function asciiString(s: string): string {
  return pyString(s).replace(/[\u0080-\uffff]/g, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
}
