// The Vercel AI SDK: generateText with a MockLanguageModelV3 (ai/test) as the scripted model.
import { generateText, stepCountIs, tool as aiSdkTool } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { z } from "zod";
import { aiTool } from "toolcommit/ai";

const ARGS = { charge: "ch_1", amount: 2000 };
const schema = () => z.object({ charge: z.string(), amount: z.number().int() });
const text = (v) => (typeof v === "string" ? v : JSON.stringify(v));

const V3_USAGE = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };
const ai = {
  raw: (refund) => aiSdkTool({ description: "Refund a charge", inputSchema: schema(), execute: (input) => refund(input) }),
  wrap: (raw, log, opts) => aiTool(log, "refund", raw, opts),
  // who asked, as the app passes it: the call options' experimental_context
  user: (args, options) => options.experimental_context.user,
  async run(refund, user = "user:42") {
    const model = new MockLanguageModelV3({
      doGenerate: async ({ prompt }) => {
        const calls = prompt.filter((m) => m.role === "tool").length;
        const content = calls < 2 ? [{ type: "tool-call", toolCallId: `call_${calls}`, toolName: "refund", input: JSON.stringify(ARGS) }] : [{ type: "text", text: "done" }];
        return { content, finishReason: { unified: calls < 2 ? "tool-calls" : "stop", raw: undefined }, usage: V3_USAGE, warnings: [] };
      },
    });
    const out = await generateText({ model, tools: { refund }, stopWhen: stepCountIs(5), prompt: "refund ch_1", experimental_context: { user } });
    return out.steps.flatMap((s) => s.content.filter((c) => c.type === "tool-result" || c.type === "tool-error").map((c) => text(c.output ?? String(c.error))));
  },
};

export default ai;
