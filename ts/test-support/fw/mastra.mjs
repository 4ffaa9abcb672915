// Mastra: an Agent whose model is a scripted LanguageModelV2.
import { Agent as MastraAgent } from "@mastra/core/agent";
import { RuntimeContext } from "@mastra/core/runtime-context";
import { createTool } from "@mastra/core/tools";
import { z } from "zod";
import { mastraTool } from "toolcommit/mastra";

const ARGS = { charge: "ch_1", amount: 2000 };
const schema = () => z.object({ charge: z.string(), amount: z.number().int() });
const text = (v) => (typeof v === "string" ? v : JSON.stringify(v));

const mastra = {
  raw: (refund) => createTool({ id: "refund", description: "Refund a charge", inputSchema: schema(), execute: ({ context }) => refund(context) }),
  wrap: (raw, log, opts) => mastraTool(log, raw, opts),
  // who asked, as the app passes it: the run's RuntimeContext
  user: (args, ctx) => ctx.runtimeContext.get("user"),
  async run(refund, user = "user:42") {
    let told = [];
    const model = {
      specificationVersion: "v2",
      provider: "scripted",
      modelId: "scripted",
      supportedUrls: {},
      async doGenerate({ prompt }) {
        const results = prompt.filter((m) => m.role === "tool").flatMap((m) => m.content.map((c) => c.output));
        told = results.map((o) => text(o.value));
        const content = results.length < 2 ? [{ type: "tool-call", toolCallId: `call_${results.length}`, toolName: "refund", input: JSON.stringify(ARGS) }] : [{ type: "text", text: "done" }];
        return { content, finishReason: results.length < 2 ? "tool-calls" : "stop", usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 }, warnings: [] };
      },
      async doStream() {
        throw new Error("the scripted model does not stream");
      },
    };
    const agent = new MastraAgent({ name: "refunder", instructions: "Refund what the user asks.", model, tools: { refund } });
    const runtimeContext = new RuntimeContext();
    runtimeContext.set("user", user);
    await agent.generate("refund ch_1", { maxSteps: 5, runtimeContext });
    return told;
  },
};

export default mastra;
