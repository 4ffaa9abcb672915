// A process running one framework's agent with its refund tool wrapped through the intent log
// (writer "agent", design stripe) against the Stripe-wire fake on 127.0.0.1:PORT; it prints
// what the model was told as one JSON line. Run: node child.mjs FRAMEWORK DB PORT. The crash
// test SIGKILLs it mid-refund and runs it again (the restart).
import { IntentLog, instrument } from "toolcommit";
import { framework } from "./frameworks.mjs";
import { client, refunder, status } from "./refund.mjs";

const [fw, db, port] = process.argv.slice(2);
const log = await IntentLog.sqlite(db, { writer: "agent", provider: "stripe" });
instrument(log, [`127.0.0.1:${port}`]);
const stripe = client(Number(port));
const { raw, wrap, run } = await framework(fw);
const told = await run(wrap(raw(refunder(stripe)), log, { scope: "request:7", principal: "user:42", status: status(stripe) }));
await log.close();
process.stdout.write(JSON.stringify({ told }) + "\n");
