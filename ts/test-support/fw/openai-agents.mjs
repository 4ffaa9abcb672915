// The OpenAI Agents JS SDK: an Agent whose model is a scripted Model.
import { Agent as OpenAIAgent, Runner, Usage, tool as oaTool } from "@openai/agents";
import { z } from "zod";
import { openaiAgentsTool } from "toolcommit/openai-agents";

const ARGS = { charge: "ch_1", amount: 2000 };
const schema = () => z.object({ charge: z.string(), amount: z.number().int() });
const text = (v) => (typeof v === "string" ? v : JSON.stringify(v));

const OA_OPTIONS = (refund) => ({ name: "refund", description: "Refund a charge", parameters: schema(), execute: (input) => refund(input) });
const openaiAgents = {
  raw: (refund) => OA_OPTIONS(refund),
  wrap: (raw, log, opts) => openaiAgentsTool(log, raw, opts),
  // who asked, as the app passes it: the run context
  user: (args, runContext) => runContext.context.user,
  async run(refund, user = "user:42") {
    const made = typeof refund.invoke === "function" ? refund : oaTool(refund);
    let told = [];
    const model = {
      async getResponse({ input }) {
        const items = Array.isArray(input) ? input : [];
        told = items.filter((i) => i.type === "function_call_result").map((i) => text(i.output?.text ?? i.output));
        const calls = items.filter((i) => i.type === "function_call").length;
        const output =
          calls < 2
            ? [{ type: "function_call", callId: `call_${calls}`, name: "refund", arguments: JSON.stringify(ARGS), status: "completed" }]
            : [{ type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: "done" }] }];
        return { usage: new Usage(), output };
      },
      async *getStreamedResponse() {
        throw new Error("the scripted model does not stream");
      },
    };
    const agent = new OpenAIAgent({ name: "refunder", model, tools: [made] });
    await new Runner({ tracingDisabled: true }).run(agent, "refund ch_1", { context: { user } });
    return told;
  },
};

export default openaiAgents;
