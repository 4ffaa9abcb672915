/**
 * Mastra: a tool made by `createTool` whose calls go through the intent log (`guard`), the
 * tool's own `execute` awaited inside the guard with the arguments the log keeps.
 *
 * The model's call id (`toolCallId`) is evidence only: the log keys a call by its canonical
 * intent, so the model's retry under a new id after a lost answer, and a second resume of a
 * suspended run calling the tool again, meet the first record and the provider sees one
 * effect. A call that did not take effect through this call returns `tell`'s object to the
 * model (its tool result): plain words saying whether the effect may have happened.
 *
 * Written against Mastra 0.24 (the last line that runs on Node 20), whose `execute` takes
 * `({ context, runtimeContext, threadId, resourceId, ... }, { toolCallId, ... })`.
 */
import { createTool } from "@mastra/core/tools";
import type { ToolExecutionContext } from "@mastra/core/tools";
import { zodToJsonSchema } from "@mastra/core/utils/zod-to-json";
import { tell } from "../guard.js";
import { IntentLogError } from "../log.js";
import { call, checked, identityOf, registered, type WrapOptions, type Wrapped } from "./common.js";

type Ctx = ToolExecutionContext<any>;
type AnyTool = { id: string; inputSchema?: any; execute?: (context: any, options?: any) => Promise<any> };

/** A copy of `tool` (made by `createTool`) whose `execute` runs through `log` under the tool's
 * `id`. `scope` and `principal` may be functions of `(args, ctx)`, `ctx` the tool's execution
 * context (`runtimeContext`, `threadId`, `resourceId`, `runId`). */
export function mastraTool<T extends AnyTool>(log: Wrapped<Ctx>["log"], tool: T, opts: WrapOptions<Ctx>): T {
  const name = tool?.id;
  if (typeof name !== "string" || name === "") throw new IntentLogError("mastraTool: pass a tool made by createTool (it has no id)");
  const execute = tool.execute;
  if (typeof execute !== "function") throw new IntentLogError(`tool ${name}: it has no execute, so there is no effect to guard`);
  if (tool.inputSchema === undefined) throw new IntentLogError(`tool ${name}: it declares no inputSchema, so its arguments have no identity`);
  checked(log, name, opts);
  const w: Wrapped<Ctx> = {
    log,
    tool: name,
    ident: identityOf(name, zodToJsonSchema(tool.inputSchema), opts.identity),
    opts,
    run: (args) => execute.call(tool, { context: args }, undefined),
  };
  registered(w);
  const guarded = (ctx: Ctx, options?: any) =>
    call(w, (ctx.context ?? {}) as Record<string, unknown>, ctx, options?.toolCallId, (args) => execute.call(tool, { ...ctx, context: args }, options), tell);
  return createTool({ ...(tool as any), execute: guarded }) as unknown as T;
}
