/**
 * Where the intent log lives (runtime/store.py): the same tables on SQLite (better-sqlite3)
 * and PostgreSQL (pg), so a log written here is read by `toolcommit export`, `status`,
 * `recover` and `validate` unchanged, and a Python process and a Node process share one.
 * SQL is written once with `?` placeholders (PostgreSQL's `$n` made from them). One
 * transaction per decision; this process's transactions on its one connection run one at a
 * time (an async lock). Leases run on the store's clock: `tc_now()` (this process's clock,
 * read once per transaction) on SQLite, the server's on PostgreSQL.
 */
import { closeSync, openSync, statSync, unlinkSync, writeSync } from "node:fs";
import Database from "better-sqlite3";

export const OPEN_STATES = ["RECORDED", "DISPATCHED", "UNKNOWN", "RECONCILING"] as const;
export const OPEN_SQL = "('RECORDED', 'DISPATCHED', 'UNKNOWN', 'RECONCILING')";
export const GAVE_UP = ["DEAD_LETTER", "COMPENSATED", "REJECTED_CONFLICT"];

const TABLES = `
CREATE TABLE IF NOT EXISTS tc_records (
  key TEXT PRIMARY KEY, intent TEXT NOT NULL, epoch INTEGER NOT NULL,
  tool TEXT NOT NULL, scope TEXT NOT NULL, args TEXT NOT NULL, call_id TEXT NOT NULL,
  state TEXT NOT NULL, fence INTEGER NOT NULL DEFAULT 0,
  owner TEXT, owner_inc INTEGER NOT NULL DEFAULT 0, lease_until {real} NOT NULL DEFAULT 0,
  slot TEXT, result TEXT, first_sent {real}, sent_at {real},
  in_flight INTEGER NOT NULL DEFAULT 0);
CREATE UNIQUE INDEX IF NOT EXISTS tc_records_slot ON tc_records (slot);
CREATE INDEX IF NOT EXISTS tc_records_intent ON tc_records (intent, epoch);
CREATE INDEX IF NOT EXISTS tc_records_open ON tc_records (state)
  WHERE state IN ('RECORDED', 'DISPATCHED', 'UNKNOWN', 'RECONCILING');
CREATE TABLE IF NOT EXISTS tc_asks (
  key TEXT NOT NULL, content TEXT NOT NULL, scope TEXT NOT NULL,
  told INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (key, scope));
CREATE INDEX IF NOT EXISTS tc_asks_content ON tc_asks (content);
CREATE TABLE IF NOT EXISTS tc_account (id INTEGER PRIMARY KEY, account TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tc_events (
  id {serial}, writer TEXT NOT NULL, seq {bigint} NOT NULL, line TEXT NOT NULL,
  UNIQUE (writer, seq));
CREATE TABLE IF NOT EXISTS tc_writers (
  writer TEXT PRIMARY KEY, incarnation INTEGER NOT NULL, running INTEGER NOT NULL,
  seq {bigint} NOT NULL, host TEXT, pid INTEGER, backend INTEGER);
CREATE TABLE IF NOT EXISTS tc_design (
  id INTEGER PRIMARY KEY, name TEXT NOT NULL, digest TEXT NOT NULL, doc TEXT);
CREATE TABLE IF NOT EXISTS tc_tools (tool TEXT PRIMARY KEY, rule TEXT NOT NULL)
`;

function statements(real: string, bigint: string, serial: string): string[] {
  return TABLES.replaceAll("{real}", real)
    .replaceAll("{bigint}", bigint)
    .replaceAll("{serial}", serial)
    .split(";")
    .map((s) => s.trim())
    .filter(Boolean);
}

/** The store cannot be opened or used (bad path, server down, driver missing). */
export class StoreError extends Error {
  override name = "StoreError";
}

export type Row = unknown[];

/** One open transaction. */
export interface Tx {
  one(sql: string, params?: unknown[]): Promise<Row | undefined>;
  all(sql: string, params?: unknown[]): Promise<Row[]>;
  /** Run a statement; its row count. */
  run(sql: string, params?: unknown[]): Promise<number>;
}

export interface Store {
  readonly dialect: "sqlite" | "postgres";
  readonly nowSql: string;
  readonly lockSql: string;
  readonly backendSql: string;
  readonly path?: string;
  tx<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  read<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** An async lock: this process's transactions on one connection, one at a time. */
export class Mutex {
  private tail: Promise<void> = Promise.resolve();
  async run<T>(fn: () => Promise<T>): Promise<T> {
    const prev = this.tail;
    let release!: () => void;
    this.tail = new Promise((r) => (release = r));
    await prev;
    try {
      return await fn();
    } finally {
      release();
    }
  }
}

// ----- SQLite ------------------------------------------------------------------------------
interface BetterDb {
  prepare(sql: string): {
    reader: boolean;
    get(...p: unknown[]): unknown;
    all(...p: unknown[]): unknown[];
    run(...p: unknown[]): { changes: number };
    raw(on?: boolean): BetterStmt;
  };
  exec(sql: string): void;
  pragma(p: string, o?: { simple?: boolean }): unknown;
  function(name: string, fn: () => number): void;
  close(): void;
  inTransaction: boolean;
}
type BetterStmt = { get(...p: unknown[]): unknown; all(...p: unknown[]): unknown[]; reader: boolean };


function sqliteValue(v: unknown): unknown {
  return typeof v === "boolean" ? (v ? 1 : 0) : v;
}

/** An embedded SQLite file in WAL mode; every write transaction is BEGIN IMMEDIATE. */
export class SqliteStore implements Store {
  readonly dialect = "sqlite" as const;
  readonly nowSql = "tc_now()";
  readonly lockSql = "";
  readonly backendSql = "NULL";
  readonly path: string;
  private db: BetterDb;
  private lock = new Mutex();
  private at: number | null = null;
  private stmts = new Map<string, ReturnType<BetterDb["prepare"]>>();

  constructor(
    path: string,
    opts: { synchronous?: "FULL" | "NORMAL"; busyTimeout?: number; clock?: () => number; maxSkew?: number } = {},
  ) {
    if (!path || path === ":memory:" || path.startsWith("file::memory:")) {
      throw new StoreError(
        `IntentLog.sqlite: ${JSON.stringify(path)} is no file: the intent log must outlive the process; give a file path`,
      );
    }
    this.path = path;
    const clock = opts.clock ?? (() => Date.now() / 1000);
    try {
      this.db = new Database(path, { timeout: (opts.busyTimeout ?? 30) * 1000 }) as unknown as BetterDb;
      this.db.function("tc_now", () => {
        if (this.at === null) this.at = clock();
        return this.at;
      });
      if (String(this.db.pragma("journal_mode", { simple: true })).toLowerCase() !== "wal") {
        this.db.pragma("journal_mode = WAL");
      }
      this.db.pragma(`synchronous = ${opts.synchronous ?? "FULL"}`);
      this.db.exec("BEGIN IMMEDIATE");
      try {
        for (const s of statements("REAL", "INTEGER", "INTEGER PRIMARY KEY AUTOINCREMENT")) this.db.exec(s);
        this.db.exec("COMMIT");
      } catch (e) {
        this.db.exec("ROLLBACK");
        throw e;
      }
    } catch (e) {
      throw new StoreError(`${path}: cannot open the SQLite intent log: ${(e as Error).message}`);
    }
    const skew = fileSkew(path, clock);
    const max = opts.maxSkew ?? 2;
    if (Math.abs(skew) > max) {
      this.db.close();
      throw new StoreError(
        `${path}: this process's clock runs ${Math.abs(skew).toFixed(1)} s ${skew > 0 ? "ahead of" : "behind"} ` +
          `the file system's clock, and leases in an SQLite log run on each writer's clock (allowed: ${max} s); ` +
          "set the clock right (NTP), then open the log again",
      );
    }
  }

  private stmt(sql: string) {
    let s = this.stmts.get(sql);
    if (s === undefined) {
      s = this.db.prepare(sql);
      if (this.stmts.size > 500) this.stmts.clear();
      this.stmts.set(sql, s);
    }
    return s;
  }

  private txOf(): Tx {
    const p = (params: unknown[] = []) => params.map(sqliteValue);
    return {
      one: async (sql, params) => {
        return this.stmt(sql).raw(true).get(...p(params)) as Row | undefined;
      },
      all: async (sql, params) => this.stmt(sql).raw(true).all(...p(params)) as Row[],
      run: async (sql, params) => this.stmt(sql).run(...p(params)).changes,
    };
  }

  async tx<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    return this.lock.run(async () => {
      this.at = null;
      try {
        this.db.exec("BEGIN IMMEDIATE");
      } catch (e) {
        throw new StoreError(failed(this.path, e));
      }
      try {
        const out = await fn(this.txOf());
        this.db.exec("COMMIT");
        return out;
      } catch (e) {
        if (this.db.inTransaction) this.db.exec("ROLLBACK");
        if (e instanceof Error && (e as { code?: string }).code?.startsWith("SQLITE")) {
          throw new StoreError(failed(this.path, e));
        }
        throw e;
      }
    });
  }

  async read<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    return this.lock.run(async () => {
      this.at = null;
      this.db.exec("BEGIN");
      try {
        return await fn(this.txOf());
      } finally {
        if (this.db.inTransaction) this.db.exec("COMMIT");
      }
    });
  }

  async close(): Promise<void> {
    await this.lock.run(async () => this.db.close());
  }
}

function failed(path: string, e: unknown): string {
  const msg = (e as Error).message;
  return (
    `${path}: the SQLite intent log could not write (${msg}); the transaction was rolled back, ` +
    "so this decision was not written: " +
    (msg.toLowerCase().includes("full") ? "free some space, then retry" : "check the file and the disk")
  );
}

/** Seconds `clock` runs ahead of the file system's clock: the modification time the kernel
 * stamps on a file written beside the log (`DB.clock-PID`, removed at once), against the
 * interval `clock` read around the write (runtime/store.py `file_skew` touches the log
 * itself with no time given, which Node cannot: its utimes always passes a time). */
export function fileSkew(path: string, clock: () => number): number {
  const probe = `${path}.clock-${process.pid}`;
  const before = clock();
  const fd = openSync(probe, "w");
  try {
    writeSync(fd, "t");
  } finally {
    closeSync(fd);
  }
  const stamped = statSync(probe).mtimeMs / 1000;
  const after = clock();
  unlinkSync(probe);
  if (stamped < before - 0.01) return before - stamped; // mtime's granularity: a tick
  if (stamped > after + 0.01) return after - stamped;
  return 0;
}

// ----- PostgreSQL --------------------------------------------------------------------------
interface PgClient {
  query(q: string | { text: string; values?: unknown[]; rowMode?: "array" }): Promise<{ rows: Row[]; rowCount: number | null }>;
  connect(): Promise<void>;
  end(): Promise<void>;
  on(ev: string, fn: (e: Error) => void): void;
}

function pgSql(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}

/** The name PostgreSQL gives `schema` (unquoted: folded to lower case). */
export function pgSchema(schema: string | undefined): string {
  if (!schema) return "public";
  if (!/^[A-Za-z0-9_]+$/.test(schema)) throw new StoreError(`schema ${JSON.stringify(schema)}: use letters, digits and _`);
  return schema.toLowerCase();
}

/** A PostgreSQL database through node-postgres (`pg`). */
export class PostgresStore implements Store {
  readonly dialect = "postgres" as const;
  readonly nowSql = "extract(epoch from clock_timestamp())";
  readonly lockSql = " FOR UPDATE";
  readonly backendSql = "pg_backend_pid()";
  private lock = new Mutex();
  private lost = false;
  private shut = false;
  /** run on each new connection after a lost one (the log keeps its writer's backend true) */
  onReconnect: [string, unknown[]] | null = null;

  private constructor(
    private client: PgClient,
    readonly schema: string | undefined,
    private readonly connect: () => PgClient,
  ) {
    this.watch(client);
  }

  private watch(client: PgClient): void {
    const gone = () => {
      if (client === this.client) this.lost = true;
    };
    client.on("error", gone);
    client.on("end", gone);
  }

  /** A new connection where the last was lost (the server restarted, the session killed):
   * up to three attempts at the next use; a statement that failed with it is never re-run. */
  private async connected(): Promise<void> {
    if (!this.lost) return;
    if (this.shut) throw new StoreError("the PostgreSQL intent log was closed: open it again");
    let last = "";
    for (let attempt = 0; attempt < 3; attempt++) {
      if (attempt) await new Promise((r) => setTimeout(r, 50 * 4 ** attempt));
      const client = this.connect();
      client.on("error", () => undefined);
      try {
        await client.connect();
        if (this.schema) await client.query(`SET search_path TO ${this.schema}`);
        if (this.onReconnect) await client.query({ text: pgSql(this.onReconnect[0]), values: this.onReconnect[1] });
      } catch (e) {
        last = String((e as Error).message).split(/\s+/).join(" ");
        await client.end().catch(() => undefined);
        continue;
      }
      this.client = client;
      this.lost = false;
      this.watch(client);
      return;
    }
    throw new StoreError(
      `the PostgreSQL intent log lost its connection and could not open it again (3 attempts; the last: ${last}): ` +
        "check the server; the log tries again at its next use",
    );
  }

  static async open(conninfo: string, opts: { schema?: string; adopt?: boolean } = {}): Promise<PostgresStore> {
    let pg: { Client: new (o: object) => PgClient };
    try {
      const mod = (await import("pg")) as unknown as { default?: typeof pg } & typeof pg;
      pg = mod.default ?? mod;
    } catch {
      throw new StoreError("PostgreSQL needs pg: npm install pg");
    }
    const connect = () => new pg.Client(pgConfig(conninfo));
    const client = connect();
    client.on("error", () => undefined); // a lost connection: `watch` marks it, the next use reopens
    const schema = opts.schema ? pgSchema(opts.schema) : undefined;
    try {
      await client.connect();
      const store = new PostgresStore(client, schema, connect);
      await store.tx(async (tx) => {
        await tx.one("SELECT pg_advisory_xact_lock(7277261)");
        if (schema) {
          await tx.run(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
          await tx.run(`SET search_path TO ${schema}`);
        }
        const names = (
          await tx.all(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY table_name",
          )
        ).map((r) => String(r[0]));
        if (names.length && !names.includes("tc_writers") && !opts.adopt) {
          throw new StoreError(
            `schema ${schema ?? "public"} holds another application's tables (${names.slice(0, 5).join(", ")}) ` +
              "and no intent log; give a schema of its own (schema=...), or pass adopt: true",
          );
        }
        for (const s of statements("DOUBLE PRECISION", "BIGINT", "BIGSERIAL PRIMARY KEY")) await tx.run(s);
      });
      if (schema) await client.query(`SET search_path TO ${schema}`);
      return store;
    } catch (e) {
      await client.end().catch(() => undefined);
      if (e instanceof StoreError) throw e;
      throw new StoreError(
        `cannot open the PostgreSQL intent log: ${(e as Error).message.split(/\s+/).join(" ")}; check the connection string`,
      );
    }
  }

  private txOf(): Tx {
    const q = (sql: string, params: unknown[] = []) =>
      this.client.query({ text: pgSql(sql), values: params.map((v) => (typeof v === "boolean" ? Number(v) : v)), rowMode: "array" });
    return {
      one: async (sql, params) => (await q(sql, params)).rows[0],
      all: async (sql, params) => (await q(sql, params)).rows,
      run: async (sql, params) => (await q(sql, params)).rowCount ?? 0,
    };
  }

  async tx<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    return this.lock.run(async () => {
      try {
        await this.connected();
        try {
          await this.client.query("BEGIN");
        } catch (e) {
          // the session ended before this transaction began (its notice not yet seen):
          // nothing of it was sent, so it begins again on a new connection
          if ((e as { severity?: string }).severity !== "FATAL" && !(e instanceof Error && isPgLost(e))) throw e;
          this.lost = true;
          await this.client.end().catch(() => undefined);
          await this.connected();
          await this.client.query("BEGIN");
        }
      } catch (e) {
        if (e instanceof StoreError) throw e;
        throw new StoreError(pgFailed(e));
      }
      try {
        const out = await fn(this.txOf());
        await this.client.query("COMMIT");
        return out;
      } catch (e) {
        await this.client.query("ROLLBACK").catch(() => undefined);
        // the server's refusal or a lost connection is the store's fault, in one line; the
        // log's own refusals (a design, a superseded writer) pass as they are
        if ((e as { severity?: string }).severity !== undefined || (e instanceof Error && isPgLost(e))) {
          throw new StoreError(pgFailed(e));
        }
        throw e;
      }
    });
  }

  read<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    return this.tx(fn);
  }

  async close(): Promise<void> {
    this.shut = true;
    await this.lock.run(() => this.client.end().catch(() => undefined));
  }
}

function isPgLost(e: Error): boolean {
  return /terminat|ECONN|Connection|not queryable/i.test(e.message);
}

function pgFailed(e: unknown): string {
  return (
    `the PostgreSQL intent log could not write (${String((e as Error).message).split(/\s+/).join(" ")}); ` +
    "the transaction was rolled back, so this decision was not written: check the server, then retry"
  );
}

/** pg's client options from a libpq keyword string (host=... port=... dbname=...) or a URI. */
export function pgConfig(conninfo: string): object {
  if (/^postgres(ql)?:\/\//.test(conninfo)) return { connectionString: conninfo };
  const out: Record<string, string | number> = {};
  for (const m of conninfo.matchAll(/(\w+)\s*=\s*('(?:[^'\\]|\\.)*'|\S+)/g)) {
    const v = m[2].startsWith("'") ? m[2].slice(1, -1).replace(/\\(.)/g, "$1") : m[2];
    const k = m[1] === "dbname" ? "database" : m[1];
    out[k] = k === "port" ? Number(v) : v;
  }
  return out;
}
