/** The values the intent log hands out (runtime/records.py): Record, Decision, Ticket. */
import { OPEN_STATES, type Row } from "./store.js";

export interface IntentRecord {
  key: string;
  intent: string;
  epoch: number;
  tool: string;
  scope: string;
  args: Record<string, unknown>;
  callId: string;
  state: string;
  fence: number;
  owner: string | null;
  ownerInc: number;
  leaseUntil: number;
  result: unknown;
  firstSent: number | null;
  sentAt: number | null;
}

export function settled(r: IntentRecord): boolean {
  return !(OPEN_STATES as readonly string[]).includes(r.state);
}

/** What the log decided about one proposal: accepted, duplicate, conflict, or under
 * reask=hold held / answered; `ticket`: what to send when accepted and dispatched at once. */
export interface Decision {
  decision: "accepted" | "duplicate" | "conflict" | "held" | "answered";
  key: string;
  record: IntentRecord;
  ticket?: Ticket;
}

/** What to send with one request (runtime/records.py `Ticket`). */
export interface Ticket {
  key: string;
  idempotencyKey: string | null;
  fence: number | null;
  purpose: "apply" | "replay" | "status";
  tool: string;
  args: Record<string, unknown>;
  scope: string;
  epoch: number;
  generation: number;
  via: string;
  sdkRetries: boolean;
  keyHeader: string | null;
}

export const COLS =
  "key, intent, epoch, tool, scope, args, call_id, state, fence, owner, owner_inc, " +
  "lease_until, slot, result, first_sent, sent_at";

const num = (v: unknown): number => Number(v);
const opt = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

export function recordOf(row: Row): IntentRecord {
  const [key, intent, epoch, tool, scope, args, callId, state, fence, owner, ownerInc, lease, , result, first, sent] = row;
  return {
    key: String(key),
    intent: String(intent),
    epoch: num(epoch),
    tool: String(tool),
    scope: String(scope),
    args: JSON.parse(String(args)) as Record<string, unknown>,
    callId: String(callId),
    state: String(state),
    fence: num(fence),
    owner: owner === null ? null : String(owner),
    ownerInc: num(ownerInc),
    leaseUntil: num(lease),
    result: result === null || result === undefined ? null : JSON.parse(String(result)),
    firstSent: opt(first),
    sentAt: opt(sent),
  };
}
