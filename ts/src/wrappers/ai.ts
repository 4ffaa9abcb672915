/**
 * The Vercel AI SDK: a `tool()` whose calls go through the intent log (`guard`), the tool's
 * own `execute` awaited inside the guard with the arguments the log keeps.
 *
 * The model's call id (`toolCallId`) is evidence only: the log keys a call by its canonical
 * intent, so the model's retry under a new id after a lost answer meets the first record and
 * the provider sees one effect. A call that did not take effect through this call returns
 * `tell`'s object to the model (its tool result): plain words saying whether the effect may
 * have happened.
 *
 * Limitations: a tool without `execute` (one the client runs) and a streaming tool (an
 * `execute` returning an async iterable: its effect would run after the ack) are refused. A run
 * aborted while the guard runs stops the SDK's wait, not the guard, whose outcome then counts as
 * heard though the model never got it (no `hearing()` yet).
 */
import { asSchema, type Tool, type ToolExecutionOptions } from "ai";
import { IntentLogError } from "../log.js";
import { tell } from "../guard.js";
import { call, checked, identityOf, registered, type WrapOptions, type Wrapped } from "./common.js";

/** A copy of `tool` (made by the AI SDK's `tool()`) whose `execute` runs through `log` as `name`.
 * `scope` and `principal` may be functions of `(args, options)`, `options` the SDK's
 * `ToolExecutionOptions` (`toolCallId`, `messages`, `experimental_context`). */
export function aiTool<T extends Tool<any, any>>(log: Wrapped<ToolExecutionOptions>["log"], name: string, tool: T, opts: WrapOptions<ToolExecutionOptions>): T {
  if (typeof name !== "string" || name === "") throw new IntentLogError("aiTool: pass the tool's name (its key in tools: {...})");
  const execute = tool.execute;
  if (typeof execute !== "function") {
    throw new IntentLogError(`tool ${name}: it has no execute (the client runs it), so there is no effect to guard`);
  }
  if (execute.constructor.name === "AsyncGeneratorFunction") {
    throw new IntentLogError(`tool ${name}: a streaming execute is not supported (its effect would run after the ack)`);
  }
  checked(log, name, opts);
  const w: Wrapped<ToolExecutionOptions> = {
    log,
    tool: name,
    ident: identityOf(name, asSchema(tool.inputSchema).jsonSchema, opts.identity),
    opts,
    run: (args) => effect(args, { toolCallId: `settle-${name}`, messages: [] }),
  };
  const effect = async (args: Record<string, unknown>, options: ToolExecutionOptions) => {
    const out = await execute(args, options);
    if (out !== null && typeof out === "object" && Symbol.asyncIterator in out) {
      throw new IntentLogError(`tool ${name}: a streaming execute is not supported (its effect would run after the ack)`);
    }
    return out;
  };
  registered(w);
  const guarded = (input: Record<string, unknown>, options: ToolExecutionOptions) =>
    call(w, input, options, options.toolCallId, (args) => effect(args, options), tell);
  return { ...tool, execute: guarded } as T;
}
