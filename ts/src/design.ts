/**
 * The design the intent log follows (runtime/design.py): a shipped design resolved by the
 * Python library (`designs.ts`, generated and checked against it), or a resolved design
 * document (what a log stores, `tc_design.doc`, with its wire), and the library's decisions
 * as pure functions of it. The digest is Python's, byte for byte, so a log written by one
 * library opens in the other and refuses any other design.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { pyDumpsSorted } from "./canon.js";
import { SHIPPED } from "./designs.js";

/** A design as the Python library resolves it (`Design.doc` plus its digest and wire). */
export interface ResolvedDesign {
  source: string;
  environment: string;
  guarantee: string;
  knobs: Record<string, string>;
  provider: Record<string, string>;
  /** [replay_window, delay_bound, key_lifetime] in seconds; null: unbounded */
  timing: [number | null, number | null, number | null];
  digest?: string;
  key_header: string | null;
  hosts: string[];
}

/** A provider= that names no shipped design, an unreadable design file, or a design the
 * library does not implement. */
export class DesignError extends Error {
  override name = "DesignError";
}

const IMPLEMENTS: Record<string, string[]> = {
  dedupe_by: ["semantic_key"],
  canonicalizer: ["normalizing"],
  insert: ["atomic"],
  idempotency_key: ["semantic_key", "none"],
  fencing: ["on", "off"],
  on_unknown: ["reconcile", "replay_then_reconcile", "dead_letter"],
  on_absent: ["dead_letter", "rerecord"],
  on_restart: ["reload_log"],
  dispatch_guard: ["log_cas"],
  late_replay: ["reject"],
  on_ack: ["record"],
  cancel_api: ["log"],
  lease: ["expiring"],
  epoch: ["per_intent", "none"],
  sdk_retries: ["on", "off"],
  status_via: ["search", "list"],
  reaccept: ["reject"],
  reask: ["proceed", "hold"],
};
const IDENTITY: Record<string, string[]> = {
  identity: ["schema"],
  principal: ["part"],
  told: ["caller"],
};

export class Design {
  readonly source: string;
  readonly environment: string;
  readonly guarantee: string;
  readonly knobs: Readonly<Record<string, string>>;
  readonly provider: Readonly<Record<string, string>>;
  readonly replayWindow: number | null;
  readonly delayBound: number | null;
  readonly keyLifetime: number | null;
  readonly keyHeaderOfWire: string | null;
  readonly hosts: readonly string[];

  constructor(r: ResolvedDesign) {
    this.source = r.source;
    this.environment = r.environment;
    this.guarantee = r.guarantee;
    this.knobs = { ...r.knobs };
    this.provider = { ...r.provider };
    [this.replayWindow, this.delayBound, this.keyLifetime] = r.timing;
    this.keyHeaderOfWire = r.key_header;
    this.hosts = [...r.hosts];
  }

  /** This design with `delayBound`, `replayWindow` or `keyLifetime` (seconds) set. */
  withTiming(t: { replayWindow?: number | null; delayBound?: number | null; keyLifetime?: number | null }): Design {
    const r = this.resolved();
    r.timing = [
      t.replayWindow === undefined ? this.replayWindow : t.replayWindow,
      t.delayBound === undefined ? this.delayBound : t.delayBound,
      t.keyLifetime === undefined ? this.keyLifetime : t.keyLifetime,
    ];
    delete r.digest;
    return new Design(r);
  }

  get name(): string {
    return this.source in SHIPPED ? this.source : this.source.split("/").pop()!;
  }

  /** What the log stores of this design (`tc_design.doc`), as Python's `Design.doc`. */
  get doc(): Omit<ResolvedDesign, "digest" | "key_header" | "hosts"> {
    return {
      source: this.source,
      environment: this.environment,
      guarantee: this.guarantee,
      knobs: { ...this.knobs },
      provider: { ...this.provider },
      timing: [this.replayWindow, this.delayBound, this.keyLifetime],
    };
  }

  resolved(): ResolvedDesign {
    return { ...this.doc, digest: this.digest, key_header: this.keyHeaderOfWire, hosts: [...this.hosts] };
  }

  /** Python's `Design.digest`: sha256 of the sorted compact JSON of what decisions read. */
  get digest(): string {
    const head = pyDumpsSorted({
      environment: this.environment,
      guarantee: this.guarantee,
      knobs: this.knobs,
      provider: this.provider,
    });
    const timing = pyDumpsSorted(this.doc.timing, true);
    const text = head.slice(0, -1) + `,"timing":${timing}}`;
    return createHash("sha256").update(text, "utf8").digest("hex").slice(0, 16);
  }

  get sendsKey(): boolean {
    return this.knobs.idempotency_key === "semantic_key";
  }
  get keyHeader(): string | null {
    return this.sendsKey ? this.keyHeaderOfWire : null;
  }
  get sendsFence(): boolean {
    return this.knobs.fencing === "on";
  }
  get statusRead(): boolean {
    return (this.provider.status_read ?? "yes") === "yes";
  }
  get settlesByRead(): boolean {
    return this.statusRead && this.knobs.on_unknown !== "dead_letter";
  }
  get replays(): boolean {
    return this.knobs.on_unknown === "replay_then_reconcile";
  }
  get newEpochs(): boolean {
    return this.knobs.epoch !== "none";
  }
  get holds(): boolean {
    return this.knobs.reask === "hold";
  }
}

/** `replay`, `seal` or `park` for an UNKNOWN record. */
export function unknownAction(d: Design, windowOpen: boolean): "replay" | "seal" | "park" {
  const policy = d.knobs.on_unknown;
  if (policy === "dead_letter") return "park";
  if (policy === "replay_then_reconcile" && windowOpen) return "replay";
  return "seal";
}

export function mayRead(d: Design, arrivalsOver: boolean): boolean {
  if (d.replays && d.delayBound !== null) return arrivalsOver;
  return true;
}

export function windowOpen(d: Design, firstSent: number | null, now: number): boolean {
  const w = d.replayWindow;
  return firstSent !== null && (w === null || now < firstSent + w);
}

export function readWait(d: Design, sentAt: number | null, now: number): number {
  const bound = d.delayBound;
  const left = bound === null || sentAt === null ? 0 : sentAt + bound - now;
  return mayRead(d, left <= 0) ? 0 : left;
}

export function afterRead(d: Design, present: boolean): string {
  if (!d.statusRead) return "DEAD_LETTER";
  if (present) return "ACKED";
  return d.knobs.on_absent === "rerecord" ? "RECORDED" : "DEAD_LETTER";
}

/** The `Design` of `provider`: a shipped design's name, a resolved design file's path (JSON
 * of `ResolvedDesign`: `python ts/scripts/designs.py` shows the shape), a `ResolvedDesign`
 * or a `Design`; refused (`DesignError`) where the library does not implement it. */
export function loadDesign(provider: string | ResolvedDesign | Design | null | undefined): Design {
  if (provider instanceof Design) return check(provider);
  if (provider === null || provider === undefined) {
    throw new DesignError(
      "the intent log needs provider=: the provider it talks to decides the design; one of " +
        `${Object.keys(SHIPPED).sort().join(", ")}, or the path of a resolved design file`,
    );
  }
  if (typeof provider === "object") return check(new Design(provider));
  if (provider in SHIPPED) return check(new Design(SHIPPED[provider]));
  let doc: ResolvedDesign;
  try {
    doc = JSON.parse(readFileSync(provider, "utf8")) as ResolvedDesign;
  } catch (e) {
    throw new DesignError(
      `provider=${JSON.stringify(provider)} is neither a shipped design (${Object.keys(SHIPPED).sort().join(", ")}) ` +
        `nor a readable resolved design file (${(e as Error).message})`,
    );
  }
  if (!doc || typeof doc !== "object" || !doc.knobs || !Array.isArray(doc.timing)) {
    throw new DesignError(
      `${provider}: not a resolved design (source, environment, guarantee, knobs, provider, timing, key_header, hosts); ` +
        "a design file from `toolcommit design -o FILE` is resolved by the Python library: " +
        "python -c 'import json,sys; from toolcommit.runtime import design as D; d=D.load(sys.argv[1]); " +
        'print(json.dumps({**d.doc, "key_header": d.key_header, "hosts": list(d.wire.hosts) if d.wire else []}))\' FILE',
    );
  }
  return check(new Design(doc));
}

function check(d: Design): Design {
  const named = Object.fromEntries(Object.entries(IDENTITY).filter(([k]) => k in d.knobs));
  for (const [knob, options] of Object.entries({ ...IMPLEMENTS, ...named })) {
    if (!options.includes(d.knobs[knob])) {
      throw new DesignError(
        `${d.source}: ${knob}=${d.knobs[knob]} is a design the library does not implement ` +
          `(it implements ${knob}=${options.join(" or ")})`,
      );
    }
  }
  if (d.knobs.on_absent === "rerecord" && d.statusRead) {
    throw new DesignError(
      `${d.source}: on_absent=rerecord needs an edge RECONCILING -> RECORDED the log contract does not have; ` +
        "the library implements dead_letter",
    );
  }
  return d;
}

/** The design a log stores (`tc_design.doc`), checked against the digest beside it. */
export function fromDoc(doc: ResolvedDesign, digest: string, wire: ResolvedDesign | undefined): Design {
  const d = new Design({ ...doc, key_header: wire?.key_header ?? null, hosts: wire?.hosts ?? [] });
  if (d.digest !== digest) {
    throw new DesignError(
      `the design the log stores (digest ${d.digest}) is not the one it names (digest ${digest}): its design row was altered`,
    );
  }
  return d;
}

/** The reasons the library writes on a transition (spec/log-design.json). */
export const REASON = {
  replay: "replay under the same key",
  replay_answered: "replay answered",
  seal: "sealed for a status read",
  present: "status present",
  absent: "status absent",
  no_read: "no status read: given up, the effect may have happened",
  park: "the design parks unknown outcomes",
  takeover: "takeover: ",
  takeover_restart: "takeover: restart of ",
  takeover_lease: "takeover: lease of ",
} as const;
