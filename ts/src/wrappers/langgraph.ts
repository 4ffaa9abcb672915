/**
 * LangGraph.js: a `ToolNode` whose tools' calls go through the intent log (`guard`), and the
 * LangChain tool it is made of (`langchainTool`), the inner tool run inside the guard with the
 * arguments the log keeps.
 *
 * The call id (the `ToolCall`'s `id`) is evidence only: the log keys a call by its canonical
 * intent, so the model's retry under a new id after a lost answer, and a node re-run when a
 * graph resumes from its checkpoint, meet the first record and the provider sees one effect. A
 * call that did not take effect through this call ends as an error `ToolMessage`
 * (`status: "error"`) whose content is `tell`'s JSON: plain words saying whether the effect may
 * have happened.
 *
 * Limitations: `responseFormat: "content_and_artifact"` tools are refused (the log keeps one result).
 */
import { ToolMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import { DynamicStructuredTool, type StructuredToolInterface } from "@langchain/core/tools";
import { toJsonSchema } from "@langchain/core/utils/json_schema";
import { ToolNode } from "@langchain/langgraph/prebuilt";
import { tell, type EffectError } from "../guard.js";
import { IntentLogError } from "../log.js";
import { call, checked, identityOf, registered, type WrapOptions, type Wrapped } from "./common.js";

type Ctx = RunnableConfig | undefined;

/** A LangChain tool with `inner`'s name, description and schema whose calls run `inner` through
 * `log`. `scope` and `principal` may be functions of `(args, config)`, `config` the run's
 * `RunnableConfig` (`config.configurable.thread_id`). */
export function langchainTool(log: Wrapped<Ctx>["log"], inner: StructuredToolInterface, opts: WrapOptions<Ctx>): DynamicStructuredTool {
  const name = inner?.name;
  if (typeof name !== "string" || name === "") throw new IntentLogError("langchainTool: pass a LangChain tool (it has no name)");
  if ((inner as { responseFormat?: string }).responseFormat === "content_and_artifact") {
    throw new IntentLogError(`tool ${name}: responseFormat "content_and_artifact" is not supported; return the content only`);
  }
  checked(log, name, opts);
  const w: Wrapped<Ctx> = {
    log,
    tool: name,
    ident: identityOf(name, toJsonSchema(inner.schema as Parameters<typeof toJsonSchema>[0]), opts.identity),
    opts,
    run: (args) => inner.invoke(args),
  };
  registered(w);
  // the inner tool's own implementation, its input already parsed by the same schema
  const own = inner as unknown as { _call: (a: unknown, rm: unknown, c: unknown) => Promise<unknown> };
  return new DynamicStructuredTool({
    name,
    description: inner.description,
    schema: inner.schema,
    returnDirect: inner.returnDirect,
    func: async (input: Record<string, unknown>, runManager?: unknown, config?: RunnableConfig) => {
      const id = (config as { toolCall?: { id?: string } } | undefined)?.toolCall?.id;
      const failed = (e: EffectError) => {
        const content = JSON.stringify(tell(e));
        return id ? new ToolMessage({ content, tool_call_id: id, name, status: "error" }) : content;
      };
      return call(w, input, config, id, (args) => own._call(args, runManager, config), failed);
    },
  });
}

/** A LangGraph `ToolNode` of `tools`, each through `log` (`langchainTool`) under `opts`;
 * `fields` go to the `ToolNode` (`name`, `tags`, `handleToolErrors`). */
export function toolNode(
  log: Wrapped<Ctx>["log"],
  tools: StructuredToolInterface[],
  opts: WrapOptions<Ctx>,
  fields?: ConstructorParameters<typeof ToolNode>[1],
): ToolNode {
  return new ToolNode(
    tools.map((t) => langchainTool(log, t, opts)),
    fields,
  );
}
