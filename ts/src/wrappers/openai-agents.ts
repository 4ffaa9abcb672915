/**
 * The OpenAI Agents JS SDK: a function tool (`tool()`) whose calls go through the intent log
 * (`guard`), its `execute` awaited inside the guard with the arguments the log keeps.
 *
 * The model's call id (`details.toolCall.callId`) is evidence only: the log keys a call by its
 * canonical intent, so the model's retry under a new id after a lost answer, and a tool call
 * run again when a run resumes after an approval, meet the first record and the provider sees
 * one effect. A call that did not take effect through this call returns `tell`'s object to the
 * model (the SDK shows it as the tool's output): plain words saying whether the effect may have
 * happened; the SDK's `errorFunction` never sees an unknown outcome as an error.
 *
 * Limitations: a `timeoutMs` that passes while the guard runs stops the SDK's wait, not the
 * guard, whose outcome then counts as heard though the model never got it (no `hearing()` yet).
 */
import { tool, type FunctionTool, type RunContext, type ToolOptions } from "@openai/agents";
import { tell } from "../guard.js";
import { IntentLogError } from "../log.js";
import { call, checked, identityOf, registered, type WrapOptions, type Wrapped } from "./common.js";

type Ctx = RunContext<any> | undefined;
type Options = ToolOptions<any, any, any>;

/** A `FunctionTool` made by the SDK's `tool(options)` whose `execute` runs through `log` under
 * `options.name`. `scope` and `principal` may be functions of `(args, runContext)` (your own
 * context is `runContext.context`). */
export function openaiAgentsTool(log: Wrapped<Ctx>["log"], options: Options, opts: WrapOptions<Ctx>): FunctionTool<any, any, any> {
  const name = options?.name;
  if (typeof name !== "string" || name === "") throw new IntentLogError("openaiAgentsTool: pass tool()'s options with a name");
  const execute = options.execute as (input: unknown, ctx?: Ctx, details?: unknown) => unknown;
  if (typeof execute !== "function") throw new IntentLogError(`tool ${name}: it has no execute, so there is no effect to guard`);
  checked(log, name, opts);
  let w: Wrapped<Ctx>;
  const made = tool({
    ...options,
    execute: (input: any, ctx?: Ctx, about?: any) =>
      call(w, input as Record<string, unknown>, ctx, about?.toolCall?.callId, (args) => execute(args, ctx, about), tell),
  } as Options);
  w = {
    log,
    tool: name,
    ident: identityOf(name, made.parameters, opts.identity),
    opts,
    run: (args) => execute(args, undefined, undefined),
  };
  registered(w);
  return made;
}
