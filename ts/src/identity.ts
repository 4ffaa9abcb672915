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
  type: string;
  nullable: boolean;
  required: boolean;
  default?: unknown;
}

const TYPES: Record<string, string> = {
  integer: "integer",
  number: "number",
  string: "string",
  boolean: "boolean",
  array: "array",
  object: "object",
  null: "null",
};

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
          `${tool}: identity fields ${unknown.join(", ")} are not arguments of the tool (it declares ${Object.keys(args).sort().join(", ")})`,
        );
      }
    }
    this.fields = fields === null ? null : [...fields];
  }

  /** An Identity from a JSON Schema object (`properties`, `required`, `default`s). */
  static fromJsonSchema(tool: string, schema: Record<string, unknown>, fields?: readonly string[] | null): Identity {
    const props = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
    const required = new Set((schema.required ?? []) as string[]);
    const args: Record<string, Arg> = {};
    for (const [name, p] of Object.entries(props)) {
      let types = Array.isArray(p.type) ? (p.type as string[]) : p.type ? [p.type as string] : [];
      for (const alt of (p.anyOf ?? p.oneOf ?? []) as Record<string, unknown>[]) if (typeof alt.type === "string") types.push(alt.type);
      const nullable = types.includes("null");
      types = types.filter((t) => t !== "null");
      const type = types.length === 1 && types[0] in TYPES ? TYPES[types[0]] : "any";
      args[name] = { type, nullable, required: required.has(name), ...("default" in p ? { default: p.default } : {}) };
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
      else if (arg.required) throw new IdentityError(`${this.tool}: argument ${name} is required and missing`);
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

function coerce(tool: string, name: string, arg: Arg, v: unknown): unknown {
  const bad = () => new IdentityError(`${tool}: argument ${name}=${JSON.stringify(v)} is not ${arg.type === "integer" ? "an" : "a"} ${arg.type}, and no exact conversion makes it one`);
  if (v === null) {
    if (arg.nullable || arg.type === "any" || arg.type === "null") return null;
    throw bad();
  }
  switch (arg.type) {
    case "integer":
      if (typeof v === "number" && Number.isInteger(v)) return v;
      if (typeof v === "string" && /^\s*[+-]?\d+\s*$/.test(v) && Number.isSafeInteger(Number(v))) return Number(v);
      throw bad();
    case "number":
      if (typeof v === "number") return v;
      if (typeof v === "string" && v.trim() !== "" && Number.isFinite(Number(v))) return Number(v);
      throw bad();
    case "string":
      if (typeof v === "string") return v;
      throw bad();
    case "boolean":
      if (typeof v === "boolean") return v;
      throw bad();
    case "array":
      if (Array.isArray(v)) return v;
      throw bad();
    case "object":
      if (typeof v === "object" && !Array.isArray(v)) return v;
      throw bad();
    default:
      return v;
  }
}
