// The tool's effect as an author writes it: a refund through the real Stripe Node SDK (which
// sends no key of the intent's: the wire stamps it inside an effect), and the provider's status
// read (the charge's refunds, found by the intent's key in their metadata).
import Stripe from "stripe";
import { currentTicket } from "toolcommit";
import { TOKEN } from "./stripe-wire.mjs";

/** A Stripe client for the fake on 127.0.0.1:`port`: it retries a request once, under a key it
 * mints per call (so a retry by the model, a new call, mints another). With maxNetworkRetries: 0
 * it still re-sends once after a reset connection, and then with no key at all. */
export function client(port) {
  return new Stripe(TOKEN, { host: "127.0.0.1", port, protocol: "http", maxNetworkRetries: 1, telemetry: false });
}

/** refund({charge, amount}) -> {id, amount}: one POST /v1/refunds. */
export function refunder(stripe) {
  return async ({ charge, amount }) => {
    const metadata = { toolcommit: currentTicket()?.key ?? "" };
    const r = await stripe.refunds.create({ charge, amount, metadata });
    return { id: r.id, amount: r.amount };
  };
}

/** The status read: the charge's refund made for this intent, or null. */
export function status(stripe) {
  return async (t) => {
    for await (const r of stripe.refunds.list({ charge: t.args.charge, limit: 100 })) {
      if (r.metadata?.toolcommit === t.key) return { id: r.id, amount: r.amount };
    }
    return null;
  };
}
