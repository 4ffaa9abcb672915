/**
 * The intent log: the model proposes, the log decides, one transaction per decision
 * (runtime/log.py, the same tables, lines and decisions). Semantic key from the checker's
 * canonicalizer plus an epoch only the log advances; atomic insert under a uniqueness
 * constraint; compare-and-set dispatch under a lease with a fresh generation (the fence where
 * the design fences); an unknown outcome resolved as the design says (a replay under the
 * same key in the replay window, a sealed status read, a give-up), never by a blind re-send;
 * a restart takes over what the dead incarnation held (`crash`, `restart` lines).
 */
import { hostname } from "node:os";
import { writeSync } from "node:fs";
import { CanonError, canonicalIntent, intentScope, semanticKey } from "./canon.js";
import { type Design, DesignError, REASON, afterRead, fromDoc, loadDesign, readWait, unknownAction, windowOpen } from "./design.js";
import type { ResolvedDesign } from "./design.js";
import { SHIPPED } from "./designs.js";
import * as L from "./lines.js";
import * as R from "./reask.js";
import { COLS, type Decision, type IntentRecord, type Ticket, recordOf } from "./records.js";
import { GAVE_UP, OPEN_SQL, PostgresStore, SqliteStore, type Store, StoreError, type Tx } from "./store.js";

export class IntentLogError extends Error {
  override name = "IntentLogError";
}

/** This writer name was opened by another process: this one must stop. */
export class Superseded extends IntentLogError {
  override name = "Superseded";
}

export interface LogOptions {
  /** This process's name in the log; default the environment's TOOLCOMMIT_WRITER. */
  writer?: string;
  /** The provider's design: a shipped name (ideal, stripe, email, fenced-store), a resolved design file or object. */
  provider: string | ResolvedDesign | Design;
  /** Seconds a record's lease lasts after each write (default 30). */
  lease?: number;
  /** Seconds a call waits for another holder or a deferred read (default: the lease). */
  wait?: number;
  sinks?: L.Sink[];
  exclusiveTools?: Iterable<string>;
  /** Run the settler once a tool is registered (default true). */
  settler?: boolean;
  settleEvery?: number;
}

type Decided<T> = [T, L.Line[]];

export class IntentLog {
  readonly design: Design;
  readonly writer: string;
  readonly lease: number;
  readonly wait: number;
  readonly sinks: L.Sink[];
  readonly exclusiveTools: Set<string>;
  readonly settler: boolean;
  readonly settleEvery: number;
  incarnation = 0;
  crashed = false;
  takenOver: IntentRecord[] = [];
  /** the tools whose records the settler settles and keeps */
  tools = new Set<string>();
  private seq = 0;
  private rules = new Map<string, string>();
  private busy = new Map<string, number>();
  private timers = new Map<string, NodeJS.Timeout>();
  private stopped = false;
  private wake: (() => void) | null = null;

  private constructor(
    readonly store: Store,
    design: Design,
    writer: string,
    opts: LogOptions,
  ) {
    this.design = design;
    this.writer = writer;
    this.lease = positive("lease", opts.lease ?? 30);
    this.wait = opts.wait === undefined ? this.lease : nonNegative("wait", opts.wait);
    this.sinks = [...(opts.sinks ?? [])];
    this.exclusiveTools = new Set(opts.exclusiveTools ?? []);
    this.settler = opts.settler ?? true;
    this.settleEvery = positive("settleEvery", opts.settleEvery ?? 1);
  }

  /** An intent log in the SQLite file `path` (WAL). */
  static async sqlite(path: string, opts: LogOptions & { synchronous?: "FULL" | "NORMAL" }): Promise<IntentLog> {
    const design = loadDesign(opts.provider);
    const writer = writerName(opts.writer);
    return IntentLog.open(new SqliteStore(path, { synchronous: opts.synchronous }), design, writer, opts);
  }

  /** An intent log in a PostgreSQL database (`pg`); `schema` keeps its tables apart. */
  static async postgres(conninfo: string, opts: LogOptions & { schema?: string; adopt?: boolean }): Promise<IntentLog> {
    const design = loadDesign(opts.provider);
    const writer = writerName(opts.writer);
    return IntentLog.open(await PostgresStore.open(conninfo, opts), design, writer, opts);
  }

  private static async open(store: Store, design: Design, writer: string, opts: LogOptions): Promise<IntentLog> {
    let log: IntentLog;
    try {
      log = new IntentLog(store, design, writer, opts);
      await log.openWriter();
    } catch (e) {
      await store.close();
      throw e;
    }
    return log;
  }

  get holds(): boolean {
    return this.design.holds;
  }

  private mine(): [string, number] {
    return [this.writer, this.incarnation];
  }

  private leaseSql(): string {
    return `${this.store.nowSql} + ${this.lease}`;
  }

  // ----- one decision, one transaction -----------------------------------------------------
  private async decide<T>(fn: (tx: Tx) => Promise<Decided<T>>): Promise<T> {
    const [result, out, seq] = await this.store.tx(async (tx) => {
      const [res, bodies] = await fn(tx);
      return [res, ...(await this.stampLines(tx, bodies))] as const;
    });
    this.seq = seq; // once committed: a rolled-back decision's lines never were
    for (const line of out) for (const sink of this.sinks) sink(line);
    return result;
  }

  private async stampLines(tx: Tx, bodies: L.Line[]): Promise<[L.Line[], number]> {
    if (!bodies.length) return [[], this.seq];
    const ts = L.nowRfc3339();
    let seq = this.seq;
    const out = bodies.map((b) => L.stamp(b, this.writer, ++seq, ts));
    const n = await tx.run("UPDATE tc_writers SET seq = ? WHERE writer = ? AND incarnation = ?", [seq, ...this.mine()]);
    if (n !== 1) {
      throw new Superseded(
        `writer '${this.writer}' was opened by another process; this one must stop (one live process per writer name)`,
      );
    }
    for (let i = 0; i < out.length; i += 300) {
      const part = out.slice(i, i + 300);
      await tx.run(
        "INSERT INTO tc_events (writer, seq, line) VALUES " + part.map(() => "(?, ?, ?)").join(", "),
        part.flatMap((ln) => [this.writer, ln.seq, L.dumps(ln)]),
      );
    }
    return [out, seq];
  }

  private async get(tx: Tx, key: string, lock = false): Promise<IntentRecord | undefined> {
    const row = await tx.one(`SELECT ${COLS} FROM tc_records WHERE key = ?` + (lock ? this.store.lockSql : ""), [key]);
    return row === undefined ? undefined : recordOf(row);
  }

  private async now(tx: Tx): Promise<number> {
    return Number((await tx.one(`SELECT ${this.store.nowSql}`))![0]);
  }

  // ----- opening ---------------------------------------------------------------------------
  private async checkDesign(tx: Tx): Promise<void> {
    const d = this.design;
    const doc = JSON.stringify(d.doc);
    if ((await tx.run("INSERT INTO tc_design (id, name, digest, doc) VALUES (1, ?, ?, ?) ON CONFLICT (id) DO NOTHING", [d.name, d.digest, doc])) === 1) {
      const [n] = (await tx.one("SELECT count(*) FROM tc_writers"))!;
      if (Number(n)) {
        const [open] = (await tx.one(`SELECT count(*) FROM tc_records WHERE state IN ${OPEN_SQL}`))!;
        if (Number(open)) {
          throw new DesignError(
            `this intent log stores no design and holds ${open} open record(s): settling them under a design it was ` +
              `not written under sends twice or gives up what happened; settle it with toolcommit recover --adopt-design ${d.name}`,
          );
        }
      }
      return;
    }
    const [name, digest] = (await tx.one("SELECT name, digest FROM tc_design WHERE id = 1"))!;
    if (digest !== d.digest) {
      throw new DesignError(
        `this intent log was created under design ${name} (digest ${digest}) and is opened under ${d.name} ` +
          `(digest ${d.digest}): open it with the design it was written under (provider=${name}, with its timing), or start a new log`,
      );
    }
  }

  private async openWriter(): Promise<void> {
    await this.decide(async (tx) => {
      await this.checkDesign(tx);
      const row = await tx.one("SELECT incarnation, running, seq FROM tc_writers WHERE writer = ?", [this.writer]);
      const bodies: L.Line[] = [];
      if (row === undefined) {
        await tx.run("INSERT INTO tc_writers (writer, incarnation, running, seq) VALUES (?, 1, 1, 0)", [this.writer]);
        this.incarnation = 1;
        this.seq = 0;
      } else {
        this.incarnation = Number(row[0]) + 1;
        this.seq = Number(row[2]);
        this.crashed = Boolean(Number(row[1]));
        if (this.crashed) bodies.push(L.lifecycle("crash"), L.lifecycle("restart"));
        await tx.run("UPDATE tc_writers SET incarnation = ?, running = 1 WHERE writer = ?", [this.incarnation, this.writer]);
        const rows = await tx.all(
          `SELECT ${COLS} FROM tc_records WHERE owner = ? AND owner_inc < ? AND state IN ${OPEN_SQL} ORDER BY key`,
          [this.writer, this.incarnation],
        );
        for (const r of rows.map(recordOf)) {
          const body = await this.takeRow(tx, r, `restart of ${this.writer}`);
          if (body) bodies.push(body);
        }
      }
      if (this.store instanceof PostgresStore) {
        this.store.onReconnect = [
          `UPDATE tc_writers SET backend = ${this.store.backendSql} WHERE writer = ? AND incarnation = ?`,
          [this.writer, this.incarnation],
        ];
      }
      await tx.run(`UPDATE tc_writers SET host = ?, pid = ?, backend = ${this.store.backendSql} WHERE writer = ?`, [
        hostname(),
        process.pid,
        this.writer,
      ]);
      return [undefined, bodies];
    });
  }

  private async takeRow(tx: Tx, r: IntentRecord, why: string, expired = false): Promise<L.Line | undefined> {
    const to = r.state === "DISPATCHED" ? "UNKNOWN" : r.state;
    const sent =
      r.state === "RECORDED"
        ? ""
        : `, sent_at = CASE WHEN state = 'DISPATCHED' OR in_flight = 1 THEN ${this.store.nowSql} ELSE sent_at END, in_flight = 0`;
    const n = await tx.run(
      `UPDATE tc_records SET owner = ?, owner_inc = ?, state = ?, lease_until = ${this.leaseSql()}${sent} ` +
        "WHERE key = ? AND state = ? AND owner = ? AND owner_inc = ?" +
        (expired ? ` AND lease_until < ${this.store.nowSql}` : ""),
      [...this.mine(), to, r.key, r.state, r.owner, r.ownerInc],
    );
    if (n !== 1) return undefined;
    this.takenOver.push({ ...r, state: to, owner: this.writer, ownerInc: this.incarnation });
    if (to === r.state) return undefined;
    return L.transition(r.key, r.state, to, r.fence, REASON.takeover + why);
  }

  /** Record the provider account this log's effects act on; refused if it names another. */
  async bindAccount(account: string): Promise<void> {
    if (!account || typeof account !== "string") throw new IntentLogError(`account=${JSON.stringify(account)}: name the provider account (a string)`);
    const stored = await this.decide(async (tx) => {
      await tx.run("INSERT INTO tc_account (id, account) VALUES (1, ?) ON CONFLICT (id) DO NOTHING", [account]);
      return [String((await tx.one("SELECT account FROM tc_account WHERE id = 1"))![0]), []];
    });
    if (stored !== account) {
      throw new IntentLogError(
        `this intent log acts on provider account ${stored}, and a tool names account ${account}: point the tool at ${stored}, or give it a log of its own`,
      );
    }
  }

  // ----- propose ---------------------------------------------------------------------------
  /** Refuse a principal that is not a non-empty string, or none where the design holds a re-ask. */
  checkPrincipal(principal: unknown, what: string): void {
    if ((principal === null || principal === undefined) && !this.holds) return;
    if (principal === null || principal === undefined) {
      throw new IntentLogError(
        `${what}: design ${this.design.name} holds a re-ask while in doubt (reask=hold), so every call names who asked: ` +
          "pass principal= (the user, tenant or authenticated client; a function of the arguments on a wrapper)",
      );
    }
    if (typeof principal !== "string" || !principal) {
      throw new IntentLogError(`${what}: principal= must be a non-empty string naming who asked, got ${JSON.stringify(principal)}`);
    }
  }

  /** Atomic insert under the uniqueness constraint: the log decides (runtime/log.py `propose`). */
  async propose(
    callId: string,
    tool: string,
    args: Record<string, unknown>,
    scope: string,
    opts: { newAttempt?: boolean; exclusive?: boolean; dispatch?: boolean; principal?: string | null; identity?: readonly string[] | null } = {},
  ): Promise<Decision> {
    if (typeof args !== "object" || args === null || Array.isArray(args)) throw new IntentLogError(`args must be a JSON object, got ${Array.isArray(args) ? "array" : typeof args}`);
    if (typeof callId !== "string") throw new IntentLogError("call_id must be a string");
    const principal = opts.principal ?? null;
    this.checkPrincipal(principal, `call ${callId} of ${tool}`);
    const fields = opts.identity ?? null;
    const kept = fields === null ? args : Object.fromEntries(fields.filter((k) => k in args).map((k) => [k, args[k]]));
    const where = intentScope(principal, scope);
    let digest: string;
    let argsText: string;
    let same: string | null = null;
    try {
      digest = canonicalIntent(tool, kept, where).digest;
      argsText = L.dumps(args);
      if (this.holds) same = R.content(tool, kept, principal);
    } catch (e) {
      if (e instanceof CanonError || e instanceof TypeError) throw new IntentLogError(`call ${callId}: no canonical form: ${e.message}`);
      throw e;
    }
    const excl = opts.exclusive ?? this.exclusiveTools.has(tool);
    const slot = excl ? `${where}\x1f${tool}` : null;
    const dispatch = Boolean(opts.dispatch);
    const [state, fence] = dispatch ? ["DISPATCHED", 1] : ["RECORDED", 0];
    const sent = dispatch ? this.store.nowSql : "NULL";
    const line = (key: string, decision: string, epoch: number) =>
      L.proposal(callId, tool, args, scope, key, decision, epoch, principal, fields);
    const accepted = (key: string, epoch: number): L.Line[] => {
      const lines = [line(key, "accepted", epoch), L.transition(key, "PROPOSED", "RECORDED", 0, null, callId, epoch)];
      if (dispatch) lines.push(L.transition(key, "RECORDED", "DISPATCHED", fence));
      return lines;
    };
    return this.decide(async (tx): Promise<Decided<Decision>> => {
      if (same !== null) {
        const met = await R.meet(tx, (t, k) => this.get(t, k), same, scope, this.design.settlesByRead, Boolean(opts.newAttempt));
        if (met !== undefined) {
          const [decision, rec] = met;
          return [{ decision, key: rec.key, record: rec }, decision === "held" ? [] : [line(rec.key, "duplicate", rec.epoch)]];
        }
      }
      for (let i = 0; i < 8; i++) {
        const row = await tx.one(`SELECT ${COLS} FROM tc_records WHERE intent = ? ORDER BY epoch DESC LIMIT 1`, [digest]);
        const latest = row === undefined ? undefined : recordOf(row);
        let epoch = latest === undefined ? 0 : latest.epoch;
        if (opts.newAttempt && latest !== undefined && GAVE_UP.includes(latest.state) && this.design.newEpochs) epoch += 1;
        const key = semanticKey(digest, epoch);
        const rows = await tx.all(
          "INSERT INTO tc_records (key, intent, epoch, tool, scope, args, call_id, state, fence, owner, owner_inc, " +
            `lease_until, slot, first_sent, sent_at) SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ${this.leaseSql()}, ?, ${sent}, ${sent} ` +
            `WHERE 1 = 1 ON CONFLICT DO NOTHING RETURNING ${COLS}`,
          [key, digest, epoch, tool, scope, argsText, callId, state, fence, ...this.mine(), slot],
        );
        if (rows.length) {
          const rec = recordOf(rows[0]);
          if (same !== null) await R.remember(tx, same, key, scope);
          return [{ decision: "accepted", key, record: rec, ticket: dispatch ? this.ticketOf(rec, "apply") : undefined }, accepted(key, epoch)];
        }
        let rec = await this.get(tx, key);
        let decision: "duplicate" | "conflict" = "duplicate";
        if (rec === undefined && slot !== null) {
          const r = await tx.one(`SELECT ${COLS} FROM tc_records WHERE slot = ?`, [slot]);
          rec = r === undefined ? undefined : recordOf(r);
          decision = "conflict";
        }
        if (rec !== undefined) {
          return [{ decision, key: decision === "duplicate" ? rec.key : key, record: rec }, [line(key, decision, epoch)]];
        }
      }
      throw new StoreError(`call ${callId}: the insert neither won nor met a record`);
    });
  }

  /** Store `tool`'s identity rule, or check it against the stored one (runtime/log.py `declare`). */
  async declare(tool: string, rule: Record<string, unknown>): Promise<void> {
    const text = L.dumps(rule);
    if (this.rules.get(tool) === text) return;
    await this.decide(async (tx) => {
      const row = await tx.one("SELECT rule FROM tc_tools WHERE tool = ?", [tool]);
      if (row === undefined) {
        await this.refuseLive(tx, tool, "was written before the log stored its rule");
        await tx.run("INSERT INTO tc_tools (tool, rule) VALUES (?, ?) ON CONFLICT DO NOTHING", [tool, text]);
      } else if (row[0] !== text && JSON.stringify(JSON.parse(String(row[0]))) !== text) {
        await this.refuseLive(tx, tool, `rule changed (${row[0]} -> ${text})`);
        await tx.run("UPDATE tc_tools SET rule = ? WHERE tool = ?", [text, tool]);
      }
      return [undefined, []];
    });
    this.rules.set(tool, text);
  }

  private async refuseLive(tx: Tx, tool: string, what: string): Promise<void> {
    const [live] = (await tx.one(
      `SELECT count(*) FROM tc_records r WHERE r.tool = ? AND (r.state IN ${OPEN_SQL} OR ` +
        "EXISTS (SELECT 1 FROM tc_asks a WHERE a.key = r.key AND a.scope = r.scope AND a.told = 0))",
      [tool],
    ))!;
    if (Number(live)) {
      throw new IntentLogError(
        `${tool}: ${live} of its records may still be met by a re-ask (in doubt, or settled without its caller hearing it), ` +
          `and its identity ${what}: the rule would merge or split those intents. Let them settle under the rule they were ` +
          "written with (toolcommit status; recover), or use a new log",
      );
    }
  }

  // ----- dispatch and its outcomes ---------------------------------------------------------
  private async cas(
    key: string,
    frm: string[],
    to: string,
    o: {
      fence?: number;
      bump?: boolean;
      release?: boolean;
      result?: unknown;
      reason?: string;
      mine?: boolean;
      sent?: boolean;
      first?: boolean;
      flight?: boolean;
      when?: (r: IntentRecord, now: number) => boolean;
      told?: boolean;
    },
  ): Promise<IntentRecord | undefined> {
    const mine = o.mine ?? true;
    const sets = ["state = ?"];
    const params: unknown[] = [to];
    if (o.bump) sets.push("fence = fence + 1");
    if (o.result !== undefined && o.result !== null) {
      sets.push("result = ?");
      params.push(L.dumps(o.result));
    }
    if (GAVE_UP.includes(to)) sets.push("slot = NULL");
    if (o.release) sets.push("lease_until = 0");
    else if (mine) sets.push(`lease_until = ${this.leaseSql()}`);
    if (o.sent) sets.push(`sent_at = ${this.store.nowSql}`);
    if (o.first) sets.push(`first_sent = ${this.store.nowSql}`);
    if (o.flight !== undefined) sets.push(`in_flight = ${o.flight ? 1 : 0}`);
    const where = ["key = ?", `state IN (${frm.map(() => "?").join(", ")})`];
    params.push(key, ...frm);
    if (mine) {
      where.push("owner = ? AND owner_inc = ?");
      params.push(...this.mine());
    }
    if (o.fence !== undefined) {
      where.push("fence = ?");
      params.push(o.fence);
    }
    const update = `UPDATE tc_records SET ${sets.join(", ")} WHERE ${where.join(" AND ")}`;
    return this.decide(async (tx): Promise<Decided<IntentRecord | undefined>> => {
      const before = await this.get(tx, key, true);
      if (before === undefined || (o.when && !o.when(before, await this.now(tx)))) return [undefined, []];
      if ((await tx.run(update, params)) !== 1) return [undefined, []];
      const after = (await this.get(tx, key))!;
      if (o.told) await tx.run(R.TOLD_SQL, [key]);
      const lines = before.state === to ? [] : [L.transition(key, before.state, to, after.fence, o.reason)];
      return [after, lines];
    });
  }

  /** RECORDED -> DISPATCHED with a new fence, if this writer holds the lease. */
  async dispatch(key: string): Promise<Ticket | undefined> {
    const r = await this.cas(key, ["RECORDED"], "DISPATCHED", { bump: true, sent: true, first: true, flight: true });
    return r === undefined ? undefined : this.ticketOf(r, "apply");
  }

  /** The provider answered `ticket`'s request: -> ACKED with `result`; `heard`: the caller gets it now. */
  async ack(ticket: Ticket, result: unknown = null, heard = true): Promise<boolean> {
    const frm = ticket.purpose === "replay" ? "RECONCILING" : "DISPATCHED";
    return this.outcome(async () =>
      Boolean(
        await this.cas(ticket.key, [frm], "ACKED", {
          fence: ticket.generation,
          result,
          release: true,
          flight: false,
          reason: frm === "RECONCILING" ? REASON.replay_answered : undefined,
          told: heard && this.holds,
        }),
      ),
    );
  }

  /** No answer to `ticket`'s request: DISPATCHED -> UNKNOWN (a replay stays RECONCILING). */
  async timeout(ticket: Ticket, reason = "timeout"): Promise<boolean> {
    const frm = ticket.purpose === "replay" ? "RECONCILING" : "DISPATCHED";
    const to = frm === "RECONCILING" ? "RECONCILING" : "UNKNOWN";
    return this.outcome(async () =>
      Boolean(await this.cas(ticket.key, [frm], to, { fence: ticket.generation, reason, sent: true, flight: false })),
    );
  }

  /** A sent request's outcome, tried once more at once on a store fault. */
  private async outcome(write: () => Promise<boolean>): Promise<boolean> {
    try {
      return await write();
    } catch (e) {
      if (!(e instanceof StoreError)) throw e;
    }
    return write();
  }

  /** UNKNOWN -> RECONCILING as the design resolves it: a `replay` ticket in the window, else `status`. */
  async reconcile(key: string): Promise<Ticket | undefined> {
    if (unknownAction(this.design, true) === "park") return undefined;
    let r = await this.cas(key, ["UNKNOWN"], "RECONCILING", {
      bump: true,
      sent: true,
      flight: true,
      when: (rec, now) => unknownAction(this.design, windowOpen(this.design, rec.firstSent, now)) === "replay",
      reason: REASON.replay,
    });
    if (r !== undefined) return this.ticketOf(r, "replay");
    r = await this.cas(key, ["UNKNOWN"], "RECONCILING", { bump: true, reason: REASON.seal });
    if (r === undefined) {
      r = await this.record(key);
      if (r === undefined || r.state !== "RECONCILING" || r.owner !== this.writer || r.ownerInc !== this.incarnation) return undefined;
    }
    return this.ticketOf(r, "status");
  }

  /** Seconds before the design lets a status read of `key` settle it (0: now). */
  async readWait(key: string): Promise<number> {
    const [r, now] = await this.store.read(async (tx) => [await this.get(tx, key), await this.now(tx)] as const);
    return r === undefined ? 0 : readWait(this.design, r.sentAt, now);
  }

  /** RECONCILING at the ticket's generation -> ACKED (present) or DEAD_LETTER (absent, once trusted). */
  async settle(ticket: Ticket, present: boolean, result: unknown = null): Promise<boolean> {
    const to = afterRead(this.design, present);
    if (to === "ACKED") {
      return Boolean(await this.cas(ticket.key, ["RECONCILING"], "ACKED", { fence: ticket.generation, result, release: true, reason: REASON.present }));
    }
    if (to !== "DEAD_LETTER") throw new IntentLogError(`design ${this.design.source}: a status read leads to ${to}, which the log contract has no edge to`);
    return Boolean(
      await this.cas(ticket.key, ["RECONCILING"], "DEAD_LETTER", {
        fence: ticket.generation,
        release: true,
        reason: this.design.statusRead ? REASON.absent : REASON.no_read,
        when: (r, now) => readWait(this.design, r.sentAt, now) <= 0,
      }),
    );
  }

  /** UNKNOWN or RECONCILING -> DEAD_LETTER. */
  async deadLetter(key: string, reason = "parked for a human"): Promise<boolean> {
    return Boolean(await this.cas(key, ["UNKNOWN", "RECONCILING"], "DEAD_LETTER", { release: true, reason }));
  }

  /** The user cancels before dispatch: RECORDED -> REJECTED_CONFLICT, whoever holds the lease. */
  async cancel(key: string, reason = "cancelled"): Promise<boolean> {
    return Boolean(await this.cas(key, ["RECORDED"], "REJECTED_CONFLICT", { release: true, reason, mine: false }));
  }

  ticketOf(r: IntentRecord, purpose: Ticket["purpose"]): Ticket {
    const d = this.design;
    return {
      key: r.key,
      idempotencyKey: d.sendsKey ? r.key : null,
      fence: d.sendsFence ? r.fence : null,
      purpose,
      tool: r.tool,
      args: r.args,
      scope: r.scope,
      epoch: r.epoch,
      generation: r.fence,
      via: d.knobs.status_via,
      sdkRetries: d.knobs.sdk_retries === "on",
      keyHeader: d.keyHeader,
    };
  }

  async ticket(key: string, purpose: Ticket["purpose"] = "status"): Promise<Ticket | undefined> {
    const r = await this.record(key);
    return r === undefined ? undefined : this.ticketOf(r, purpose);
  }

  // ----- recovery --------------------------------------------------------------------------
  private static DEAD = "owner_inc < (SELECT w.incarnation FROM tc_writers w WHERE w.writer = tc_records.owner)";

  private takeableSql(): string {
    return `state IN ${OPEN_SQL} AND (lease_until < ${this.store.nowSql} OR ${IntentLog.DEAD}) AND NOT (owner = ? AND owner_inc = ?)`;
  }

  /** Take over up to `limit` open records whose holder is gone; the records this incarnation must settle. */
  async recover(limit = 100, tools?: Iterable<string>): Promise<IntentRecord[]> {
    const only = tools === undefined ? undefined : [...tools].sort();
    const keys = await this.store.read(async (tx) =>
      (
        await tx.all(
          `SELECT key FROM tc_records WHERE ${this.takeableSql()}` +
            (only === undefined ? "" : only.length ? ` AND tool IN (${only.map(() => "?").join(", ")})` : " AND 1 = 0") +
            " ORDER BY key LIMIT ?",
          [...this.mine(), ...(only ?? []), limit],
        )
      ).map((r) => String(r[0])),
    );
    for (const key of keys) await this.take(key);
    const taken = new Set(this.takenOver.map((r) => r.key));
    return (await this.idle()).filter((r) => taken.has(r.key));
  }

  /** The open records this incarnation must settle that no call of this process drives. */
  async inDoubt(): Promise<IntentRecord[]> {
    const taken = new Set(this.takenOver.map((r) => r.key));
    return (await this.idle()).filter((r) => taken.has(r.key) || r.state === "UNKNOWN" || r.state === "RECONCILING");
  }

  private async idle(): Promise<IntentRecord[]> {
    const rows = await this.store.read((tx) =>
      tx.all(`SELECT ${COLS} FROM tc_records WHERE owner = ? AND owner_inc = ? AND state IN ${OPEN_SQL} ORDER BY key`, this.mine()),
    );
    return rows.map(recordOf).filter((r) => !this.busy.has(r.key));
  }

  /** Take over `key` if its holder is gone; the record now held, or undefined. */
  async take(key: string): Promise<IntentRecord | undefined> {
    const got = await this.decide(async (tx): Promise<Decided<IntentRecord | undefined>> => {
      const cur = await this.get(tx, key, true);
      if (cur === undefined || (await tx.one(`SELECT key FROM tc_records WHERE key = ? AND ${this.takeableSql()}`, [key, ...this.mine()])) === undefined) {
        return [undefined, []];
      }
      const dead = (await tx.one(`SELECT key FROM tc_records WHERE key = ? AND ${IntentLog.DEAD}`, [key])) !== undefined;
      const why = dead ? `${cur.owner}#${cur.ownerInc} is dead` : `lease of ${cur.owner}#${cur.ownerInc} expired`;
      const body = await this.takeRow(tx, cur, why, !dead);
      return [await this.get(tx, key), body ? [body] : []];
    });
    return got !== undefined && got.owner === this.writer && got.ownerInc === this.incarnation ? got : undefined;
  }

  /** Seconds until the design lets this writer settle something open; undefined: nothing. */
  async due(): Promise<number | undefined> {
    const doubt = new Set((await this.inDoubt()).map((r) => r.key));
    const [now, rows] = await this.store.read(async (tx) => [
      await this.now(tx),
      await tx.all(`SELECT ${COLS}, CASE WHEN ${IntentLog.DEAD} THEN 1 ELSE 0 END FROM tc_records WHERE state IN ${OPEN_SQL}`),
    ] as const);
    const waits: number[] = [];
    for (const row of rows) {
      const r = recordOf(row.slice(0, -1));
      if (r.owner !== this.writer || r.ownerInc !== this.incarnation) waits.push(Number(row[row.length - 1]) ? 0 : Math.max(0, r.leaseUntil - now));
      else if (doubt.has(r.key)) waits.push(r.state === "RECONCILING" ? readWait(this.design, r.sentAt, now) : 0);
    }
    return waits.length ? Math.min(...waits) : undefined;
  }

  /** Seconds until `key`'s lease expires (0 if it has). */
  async leaseLeft(key: string): Promise<number> {
    const row = await this.store.read((tx) => tx.one(`SELECT lease_until - ${this.store.nowSql} FROM tc_records WHERE key = ?`, [key]));
    return row === undefined ? 0 : Math.max(0, Number(row[0]));
  }

  // ----- background: the heartbeat and the settler -----------------------------------------
  /** While a call drives `key`: the heartbeat renews its lease and the settler leaves it. */
  async driving<T>(key: string, fn: () => Promise<T>): Promise<T> {
    this.busy.set(key, (this.busy.get(key) ?? 0) + 1);
    this.startBeat();
    try {
      return await fn();
    } finally {
      const n = this.busy.get(key)! - 1;
      if (n) this.busy.set(key, n);
      else this.busy.delete(key);
      this.wake?.();
    }
  }

  private startBeat(): void {
    if (this.timers.has("heartbeat") || this.stopped) return;
    const t = setInterval(() => void this.beat().catch(() => undefined), (this.lease / 3) * 1000);
    t.unref();
    this.timers.set("heartbeat", t);
  }

  private async beat(): Promise<void> {
    if (this.stopped) return;
    const which: string[] = [];
    const params: string[] = [];
    const settling = this.timers.has("settler");
    for (const [col, values] of [
      ["key", [...this.busy.keys()].sort()],
      ["tool", settling ? [...this.tools].sort() : []],
    ] as const) {
      if (values.length) {
        which.push(`${col} IN (${values.map(() => "?").join(", ")})`);
        params.push(...values);
      }
    }
    if (which.length) await this.renewWhere(which.join(" OR "), params);
  }

  private async renewWhere(which: string, params: unknown[]): Promise<number> {
    return this.store.tx((tx) =>
      tx.run(
        `UPDATE tc_records SET lease_until = ${this.leaseSql()} WHERE owner = ? AND owner_inc = ? AND state IN ${OPEN_SQL} AND (${which})`,
        [...this.mine(), ...params],
      ),
    );
  }

  /** Extend this writer's lease on `key`. */
  async renew(key: string): Promise<boolean> {
    return (await this.renewWhere("key = ?", [key])) === 1;
  }

  /** Run `step(log)` (one settle pass; returns seconds to the next) until `close`, if the settler is on. */
  settleWith(step: (log: IntentLog) => Promise<number>): boolean {
    if (!this.settler || this.stopped || this.timers.has("settler")) return this.settler;
    const loop = async (): Promise<void> => {
      if (this.stopped) return;
      let pause = this.settleEvery;
      try {
        pause = await step(this);
      } catch {
        // a pass that failed (a store fault) is retried at the next
      }
      if (this.stopped) return;
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.max(1, Math.min(pause, this.settleEvery) * 1000));
        t.unref();
        this.timers.set("settler", t);
        this.wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
      this.wake = null;
      void loop();
    };
    const first = setTimeout(() => void loop(), 0);
    first.unref();
    this.timers.set("settler", first);
    this.startBeat();
    return true;
  }

  get closing(): boolean {
    return this.stopped;
  }

  // ----- reading ---------------------------------------------------------------------------
  /** Note that `key`'s outcome reached a caller that asked (reask=hold). */
  async heard(key: string): Promise<void> {
    if (!this.holds) return;
    await this.decide(async (tx) => {
      await tx.run(R.TOLD_SQL, [key]);
      return [undefined, []];
    });
  }

  async record(key: string): Promise<IntentRecord | undefined> {
    return this.store.read((tx) => this.get(tx, key));
  }

  async records(states?: Iterable<string>): Promise<IntentRecord[]> {
    const rows = (await this.store.read((tx) => tx.all(`SELECT ${COLS} FROM tc_records ORDER BY key`))).map(recordOf);
    if (states === undefined) return rows;
    const want = new Set(states);
    return rows.filter((r) => want.has(r.state));
  }

  async unsettled(): Promise<number> {
    return Number((await this.store.read((tx) => tx.one(`SELECT count(*) FROM tc_records WHERE state IN ${OPEN_SQL}`)))![0]);
  }

  /** Every stored line (JSON text), in the order written. */
  async lines(): Promise<string[]> {
    return (await this.store.read((tx) => tx.all("SELECT line FROM tc_events ORDER BY id"))).map((r) => String(r[0]));
  }

  async events(): Promise<L.Line[]> {
    return (await this.lines()).map((t) => JSON.parse(t) as L.Line);
  }

  /** Write the whole log as JSON Lines to the file descriptor `fd`; the count. */
  async export(fd: number): Promise<number> {
    const lines = await this.lines();
    for (const t of lines) writeSync(fd, t + "\n");
    return lines.length;
  }

  /** A clean shutdown: release this writer's leases (but a record a call still drives) and mark it stopped. */
  async close(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const t of this.timers.values()) {
      clearInterval(t);
      clearTimeout(t);
    }
    this.wake?.();
    const busy = [...this.busy.keys()].sort();
    try {
      await this.store.tx(async (tx) => {
        await tx.run(
          `UPDATE tc_records SET lease_until = 0 WHERE owner = ? AND owner_inc = ? AND state IN ${OPEN_SQL}` +
            (busy.length ? ` AND key NOT IN (${busy.map(() => "?").join(", ")})` : ""),
          [...this.mine(), ...busy],
        );
        await tx.run("UPDATE tc_writers SET running = 0 WHERE writer = ? AND incarnation = ?", this.mine());
      });
    } catch (e) {
      if (!(e instanceof StoreError)) throw e;
    } finally {
      await this.store.close();
    }
  }
}

function writerName(writer: string | undefined): string {
  const w = writer ?? process.env.TOOLCOMMIT_WRITER;
  if (!w || typeof w !== "string") {
    throw new IntentLogError(
      "writer must be a non-empty string (or set TOOLCOMMIT_WRITER to a name that survives a restart, such as the pod's name)",
    );
  }
  return w;
}

function positive(what: string, v: number): number {
  if (typeof v !== "number" || !Number.isFinite(v) || v <= 0) throw new IntentLogError(`${what}=${v}: give seconds above 0`);
  return v;
}

function nonNegative(what: string, v: number): number {
  if (typeof v !== "number" || !Number.isFinite(v) || v < 0) throw new IntentLogError(`${what}=${v}: give seconds, 0 or more`);
  return v;
}

export { fromDoc, SHIPPED };
