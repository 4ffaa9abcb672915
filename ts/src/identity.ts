/**
 * Identity from the tool's schema (runtime/identity.py): an `Identity` built from a JSON
 * Schema (an MCP tool's inputSchema, a framework tool's schema) with optional `fields` (the
 * argument names that make two requests the same; default every declared argument).
 * `normalize(args)` coerces values to the declared types where exact ("2000" -> 2000 for an
 * integer; never lossy) and fills omitted optional arguments with their defaults; `rule()` is
 * the JSON rule the log stores (`tc_tools`), the same text as Python's for the same schema.
 */
export class IdentityError extends Error {
  override name = "IdentityError";
}

interface Arg {
  /** the JSON type, or null where the schema names none (or several): not coerced */
  type: string | null;
  nullable: boolean;
  required: boolean;
  default?: unknown;
}

const JSON_TYPES = ["integer", "number", "string", "boolean", "array", "object"];

/** [JSON type, nullable] of a property's schema (runtime/identity.py `_json_type`). */
function jsonType(sub: Record<string, unknown>): [string | null, boolean] {
  const t = sub.type;
  if (typeof t === "string") return [JSON_TYPES.includes(t) ? t : null, t === "null"];
  if (Array.isArray(t)) {
    const kinds = t.filter((k) => k !== "null");
    return [kinds.length === 1 && JSON_TYPES.includes(kinds[0]) ? kinds[0] : null, t.includes("null")];
  }
  for (const key of ["anyOf", "oneOf"]) {
    const alts = sub[key];
    if (Array.isArray(alts)) {
      const got = alts.filter((a) => a && typeof a === "object").map((a) => jsonType(a as Record<string, unknown>));
      const one = new Set(got.map(([k]) => k).filter((k) => k !== null));
      const nullable = alts.some((a) => a && typeof a === "object" && (a as Record<string, unknown>).type === "null");
      return [one.size === 1 ? [...one][0] : null, nullable];
    }
  }
  return [null, false];
}

export class Identity {
  readonly args: Record<string, Arg>;
  readonly fields: readonly string[] | null;

  private constructor(
    readonly tool: string,
    args: Record<string, Arg>,
    fields: readonly string[] | null,
  ) {
    this.args = args;
    if (fields !== null) {
      const unknown = fields.filter((f) => !(f in args));
      if (unknown.length) {
        throw new IdentityError(
          `${tool}: identity= names ${unknown.join(", ")}, which the tool does not declare ` +
            `(its arguments: ${Object.keys(args).sort().join(", ") || "none"})`,
        );
      }
      if (new Set(fields).size !== fields.length) throw new IdentityError(`${tool}: identity= names an argument twice: ${fields.join(", ")}`);
    }
    this.fields = fields === null ? null : [...fields];
  }

  /** An Identity from a JSON Schema object (`properties`, `required`, `default`s). */
  static fromJsonSchema(tool: string, schema: Record<string, unknown>, fields?: readonly string[] | null): Identity {
    const props = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
    if (typeof props !== "object" || Array.isArray(props)) throw new IdentityError(`${tool}: the schema's properties is not an object`);
    const required = new Set((schema.required ?? []) as string[]);
    const args: Record<string, Arg> = {};
    for (const [name, sub] of Object.entries(props)) {
      const [type, nullable] = jsonType(sub && typeof sub === "object" ? sub : {});
      const has = sub && typeof sub === "object" && "default" in sub;
      args[name] = { type, nullable: nullable || (has && sub.default === null), required: !has && required.has(name), ...(has ? { default: sub.default } : {}) };
    }
    return new Identity(tool, args, fields ?? null);
  }

  /** The identity fields as a proposal line carries them; null: every argument. */
  get names(): string[] | null {
    return this.fields === null ? null : [...this.fields];
  }

  normalize(args: Record<string, unknown>): Record<string, unknown> {
    const out: Record<string, unknown> = { ...args };
    for (const [name, arg] of Object.entries(this.args)) {
      if (name in out && out[name] !== undefined) out[name] = coerce(this.tool, name, arg, out[name]);
      else if ("default" in arg) out[name] = structuredClone(arg.default);
      else if (!arg.required) continue; // optional with no default: omitted stays omitted
      else throw new IdentityError(`${this.tool}: argument ${name} is required and missing`);
    }
    return out;
  }

  identityArgs(normalized: Record<string, unknown>): Record<string, unknown> {
    if (this.fields === null) return { ...normalized };
    return Object.fromEntries(this.fields.filter((k) => k in normalized).map((k) => [k, normalized[k]]));
  }

  /** The JSON rule the log stores for the tool. */
  rule(): Record<string, unknown> {
    const args: Record<string, unknown> = {};
    for (const n of Object.keys(this.args).sort()) {
      const a = this.args[n];
      args[n] = { type: a.type, ...(a.nullable ? { nullable: true } : {}), ...("default" in a ? { default: a.default } : {}) };
    }
    return { identity: this.names, args };
  }
}

const HINT: Record<string, string> = {
  integer: "pass a whole number",
  number: "pass a number",
  string: "pass a string",
  boolean: "pass true or false",
  array: "pass a list",
  object: "pass an object",
};
const NO = Symbol("no exact coercion");

/** A finite decimal's text from a string of one number (no spaces inside), else null. */
function decimal(v: unknown): string | null {
  if (typeof v !== "string" || !v.trim() || /[ _]/.test(v.trim())) return null;
  const t = v.trim();
  return /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(t) ? t : null;
}

const EXACT: Record<string, (v: unknown) => unknown> = {
  integer: (v) => {
    if (typeof v === "number") return Number.isInteger(v) ? v : NO;
    const d = decimal(v);
    if (d === null) return NO;
    const n = Number(d);
    return Number.isInteger(n) && Number.isSafeInteger(n) ? n : NO;
  },
  number: (v) => {
    if (typeof v === "number") return v;
    const d = decimal(v);
    if (d === null) return NO;
    const n = Number(d);
    return Number.isFinite(n) ? n : NO;
  },
  string: (v) => (typeof v === "string" ? v : typeof v === "number" && Number.isInteger(v) ? String(v) : NO),
  boolean: (v) => (typeof v === "boolean" ? v : v === "true" ? true : v === "false" ? false : NO),
  array: (v) => (Array.isArray(v) ? v : NO),
  object: (v) => (v !== null && typeof v === "object" && !Array.isArray(v) ? v : NO),
};

/** `v` as `arg`'s type where exact (runtime/identity.py `_coerce`); IdentityError where not. */
function coerce(tool: string, name: string, arg: Arg, v: unknown): unknown {
  if (v === null || arg.type === null) return v;
  const got = EXACT[arg.type](v);
  if (got === NO) {
    throw new IdentityError(`${tool}: argument ${name} is declared ${arg.type}, and ${JSON.stringify(v)} is not one exactly: ${HINT[arg.type]}`);
  }
  return got;
}
