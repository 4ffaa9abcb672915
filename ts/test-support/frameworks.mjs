// The four frameworks, each run offline with the real framework and a scripted model: the model
// calls refund(charge, amount), then calls it again under a new call id (as a model retries
// after a lost answer), then answers. Each entry makes the framework's own tool from a refund
// function (`raw`), wraps it through the intent log (`wrap`) and runs an agent (or graph) with
// it (`run`), which resolves to what the model was told for each of its two calls (as text).
import { generateText, stepCountIs, tool as aiSdkTool } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { Agent as MastraAgent } from "@mastra/core/agent";
import { createTool } from "@mastra/core/tools";
import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { AIMessage } from "@langchain/core/messages";
import { tool as lcTool } from "@langchain/core/tools";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { ToolNode, toolsCondition } from "@langchain/langgraph/prebuilt";
import { Agent as OpenAIAgent, Runner, Usage, tool as oaTool } from "@openai/agents";
import { z } from "zod";
import { aiTool } from "toolcommit/ai";
import { mastraTool } from "toolcommit/mastra";
import { toolNode } from "toolcommit/langgraph";
import { openaiAgentsTool } from "toolcommit/openai-agents";

const ARGS = { charge: "ch_1", amount: 2000 };
const schema = () => z.object({ charge: z.string(), amount: z.number().int() });
const text = (v) => (typeof v === "string" ? v : JSON.stringify(v));

// ----- the Vercel AI SDK: generateText with a MockLanguageModelV3 -----------------------------
const V3_USAGE = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };
const ai = {
  raw: (refund) => aiSdkTool({ description: "Refund a charge", inputSchema: schema(), execute: (input) => refund(input) }),
  wrap: (raw, log, opts) => aiTool(log, "refund", raw, opts),
  async run(refund) {
    const model = new MockLanguageModelV3({
      doGenerate: async ({ prompt }) => {
        const calls = prompt.filter((m) => m.role === "tool").length;
        const content = calls < 2 ? [{ type: "tool-call", toolCallId: `call_${calls}`, toolName: "refund", input: JSON.stringify(ARGS) }] : [{ type: "text", text: "done" }];
        return { content, finishReason: { unified: calls < 2 ? "tool-calls" : "stop", raw: undefined }, usage: V3_USAGE, warnings: [] };
      },
    });
    const out = await generateText({ model, tools: { refund }, stopWhen: stepCountIs(5), prompt: "refund ch_1" });
    return out.steps.flatMap((s) => s.content.filter((c) => c.type === "tool-result" || c.type === "tool-error").map((c) => text(c.output ?? String(c.error))));
  },
};

// ----- Mastra: an Agent with a scripted LanguageModelV2 ---------------------------------------
const mastra = {
  raw: (refund) => createTool({ id: "refund", description: "Refund a charge", inputSchema: schema(), execute: ({ context }) => refund(context) }),
  wrap: (raw, log, opts) => mastraTool(log, raw, opts),
  async run(refund) {
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
    await agent.generate("refund ch_1", { maxSteps: 5 });
    return told;
  },
};

// ----- LangGraph.js: a StateGraph whose tools node is a ToolNode -------------------------------
class Scripted extends BaseChatModel {
  _llmType() {
    return "scripted";
  }
  bindTools() {
    return this;
  }
  async _generate(messages) {
    const calls = messages.filter((m) => m.getType() === "tool").length;
    const message = calls < 2 ? new AIMessage({ content: "", tool_calls: [{ name: "refund", id: `call_${calls}`, args: ARGS, type: "tool_call" }] }) : new AIMessage("done");
    return { generations: [{ message, text: "" }] };
  }
}
const langgraph = {
  raw: (refund) => lcTool(async (input) => JSON.stringify(await refund(input)), { name: "refund", description: "Refund a charge", schema: schema() }),
  wrap: (raw, log, opts) => toolNode(log, [raw], opts),
  async run(refund) {
    const node = refund instanceof ToolNode ? refund : new ToolNode([refund]);
    const model = new Scripted({});
    const graph = new StateGraph(MessagesAnnotation)
      .addNode("agent", async (s) => ({ messages: [await model.invoke(s.messages)] }))
      .addNode("tools", node)
      .addEdge(START, "agent")
      .addConditionalEdges("agent", toolsCondition, ["tools", END])
      .addEdge("tools", "agent")
      .compile();
    const out = await graph.invoke({ messages: [{ role: "user", content: "refund ch_1" }] });
    return out.messages.filter((m) => m.getType() === "tool").map((m) => text(m.content));
  },
};

// ----- the OpenAI Agents JS SDK: an Agent whose model is a scripted Model ----------------------
const OA_OPTIONS = (refund) => ({ name: "refund", description: "Refund a charge", parameters: schema(), execute: (input) => refund(input) });
const openaiAgents = {
  raw: (refund) => OA_OPTIONS(refund),
  wrap: (raw, log, opts) => openaiAgentsTool(log, raw, opts),
  async run(refund) {
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
    await new Runner({ tracingDisabled: true }).run(agent, "refund ch_1");
    return told;
  },
};

export const FRAMEWORKS = { ai, mastra, langgraph, "openai-agents": openaiAgents };
