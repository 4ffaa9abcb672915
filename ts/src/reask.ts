/**
 * A re-ask meets the intent in doubt: the log's side of `reask=hold` (runtime/reask.py).
 * A new call of the same tool, the same identity arguments and the same principal in
 * another scope meets the earlier record: `held` while it is open, `answered` once it
 * settled without its caller hearing it, else inserted as usual.
 */
import { canonicalIntent, intentScope } from "./canon.js";
import type { IntentRecord } from "./records.js";
import { GAVE_UP, OPEN_STATES, type Tx } from "./store.js";

const open = (s: string) => (OPEN_STATES as readonly string[]).includes(s);

/** The digest a reask=hold design compares across scopes: tool, identity args, principal. */
export function content(tool: string, kept: Record<string, unknown>, principal: string | null): string {
  return canonicalIntent(tool, kept, intentScope(principal, "")).digest;
}

export async function remember(tx: Tx, digest: string, key: string, scope: string, told = 0): Promise<void> {
  await tx.run(
    "INSERT INTO tc_asks (key, content, scope, told) SELECT ?, ?, ?, ? WHERE 1 = 1 ON CONFLICT DO NOTHING",
    [key, digest, scope, told],
  );
}

export const TOLD_SQL = "UPDATE tc_asks SET told = 1 WHERE key = ? AND told = 0";

function answers(rec: IntentRecord, settlesByRead: boolean): boolean {
  return rec.state === "ACKED" || (rec.state === "DEAD_LETTER" && !settlesByRead);
}

function gaveUp(own: IntentRecord[]): boolean {
  if (!own.length) return false;
  const latest = own.reduce((a, b) => (b.epoch > a.epoch ? b : a));
  return GAVE_UP.includes(latest.state);
}

/** What a new call of content `digest` in `scope` meets (runtime/reask.py `meet`). */
export async function meet(
  tx: Tx,
  get: (tx: Tx, key: string) => Promise<IntentRecord | undefined>,
  digest: string,
  scope: string,
  settlesByRead: boolean,
  retry: boolean,
): Promise<["held" | "answered", IntentRecord] | undefined> {
  let answer: IntentRecord | undefined;
  let acked: IntentRecord | undefined;
  const own: IntentRecord[] = [];
  const rows = await tx.all("SELECT key, scope, told FROM tc_asks WHERE content = ? ORDER BY key, scope", [digest]);
  for (const [key, where, told] of rows) {
    const rec = await get(tx, String(key));
    if (rec === undefined) continue;
    if (where === scope) {
      if (rec.scope === scope) own.push(rec);
      else if (open(rec.state)) return ["held", rec];
      else if (answers(rec, settlesByRead)) return ["answered", rec];
      continue;
    }
    if (rec.scope !== where) continue;
    if (open(rec.state)) {
      await remember(tx, digest, rec.key, scope);
      return ["held", rec];
    }
    if (rec.state === "ACKED" && acked === undefined) acked = rec;
    if (!Number(told) && answers(rec, settlesByRead) && answer === undefined) answer = rec;
  }
  if (answer === undefined && retry && acked !== undefined && gaveUp(own)) answer = acked;
  if (answer === undefined) return undefined;
  await remember(tx, digest, answer.key, scope, 1);
  return ["answered", answer];
}
