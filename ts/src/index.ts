/**
 * toolcommit for TypeScript: the intent log of toolcommit.runtime on the same tables and
 * lines, so `toolcommit export`, `validate`, `status` and `recover` read a Node process's log
 * unchanged, and Python and Node processes share one log. The model proposes; the log decides.
 */
export { CanonError, canonicalIntent, intentScope, semanticKey, type CanonicalIntent } from "./canon.js";
export { Design, DesignError, loadDesign, type ResolvedDesign } from "./design.js";
export { SHIPPED } from "./designs.js";
export {
  Answered,
  Conflict,
  EffectError,
  GaveUp,
  Held,
  InDoubt,
  currentTicket,
  effectful,
  guard,
  recoverSettle,
  register,
  tell,
  type CallOptions,
  type EffectfulOptions,
  type Execute,
  type GuardOptions,
  type Principal,
  type Status,
} from "./guard.js";
export { Identity, IdentityError } from "./identity.js";
export { IntentLog, IntentLogError, Superseded, type LogOptions } from "./log.js";
export type { Line, Sink } from "./lines.js";
export type { Decision, IntentRecord, Ticket } from "./records.js";
export { PostgresStore, SqliteStore, StoreError, type Store } from "./store.js";
export { UnkeyedWrite, instrument, stamp, unguarded, uninstrument } from "./wire.js";
