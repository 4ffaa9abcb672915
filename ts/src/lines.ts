/**
 * The log contract as the library writes it (runtime/lines.py): the lines of
 * spec/log.schema.json, field order `type, writer, seq, ts` then the event's fields.
 */
export type Line = Record<string, unknown>;
export type Sink = (line: Line) => void;

/** The wall clock as RFC 3339 UTC with microseconds (`ts`). */
export function nowRfc3339(): string {
  return new Date().toISOString().replace("Z", "000Z");
}

/** One compact JSON line (no newline); NaN and infinities refused as Python's allow_nan=False. */
export function dumps(v: unknown): string {
  return JSON.stringify(v, (_k, x) => {
    if (typeof x === "number" && !Number.isFinite(x)) throw new TypeError("Out of range float values are not JSON compliant");
    return x;
  });
}

export function proposal(
  callId: string,
  tool: string,
  args: Record<string, unknown>,
  scope: string,
  key: string,
  decision: string,
  epoch: number,
  principal?: string | null,
  identity?: readonly string[] | null,
): Line {
  const line: Line = { type: "proposal", call_id: callId, key, decision, tool, args, scope, epoch };
  if (principal !== null && principal !== undefined) line.principal = principal;
  if (identity !== null && identity !== undefined) line.identity = [...identity];
  return line;
}

export function transition(
  key: string,
  frm: string,
  to: string,
  fence = 0,
  reason?: string | null,
  callId?: string,
  epoch?: number,
): Line {
  const ev: Line = { type: "transition", key, from: frm, to };
  if (fence) ev.fence = fence;
  if (epoch !== undefined) ev.epoch = epoch;
  if (callId !== undefined) ev.call_id = callId;
  if (reason) ev.reason = reason;
  return ev;
}

export function lifecycle(kind: "crash" | "restart"): Line {
  return { type: kind };
}

export function stamp(body: Line, writer: string, seq: number, ts: string): Line {
  const line: Line = { type: body.type, writer, seq, ts };
  for (const [k, v] of Object.entries(body)) if (k !== "type") line[k] = v;
  return line;
}
