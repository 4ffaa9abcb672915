// LangGraph.js: a StateGraph whose model node runs a scripted chat model and whose tools node is a ToolNode.
import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { AIMessage } from "@langchain/core/messages";
import { tool as lcTool } from "@langchain/core/tools";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { ToolNode, toolsCondition } from "@langchain/langgraph/prebuilt";
import { z } from "zod";
import { toolNode } from "toolcommit/langgraph";

const ARGS = { charge: "ch_1", amount: 2000 };
const schema = () => z.object({ charge: z.string(), amount: z.number().int() });
const text = (v) => (typeof v === "string" ? v : JSON.stringify(v));

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
  // who asked, as the app passes it: the run config's configurable
  user: (args, config) => config.configurable.user,
  async run(refund, user = "user:42") {
    const node = refund instanceof ToolNode ? refund : new ToolNode([refund]);
    const model = new Scripted({});
    const graph = new StateGraph(MessagesAnnotation)
      .addNode("agent", async (s) => ({ messages: [await model.invoke(s.messages)] }))
      .addNode("tools", node)
      .addEdge(START, "agent")
      .addConditionalEdges("agent", toolsCondition, ["tools", END])
      .addEdge("tools", "agent")
      .compile();
    const out = await graph.invoke({ messages: [{ role: "user", content: "refund ch_1" }] }, { configurable: { user } });
    return out.messages.filter((m) => m.getType() === "tool").map((m) => text(m.content));
  },
};

export default langgraph;
