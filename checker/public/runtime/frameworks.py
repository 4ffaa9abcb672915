"""toolcommit.runtime.frameworks: the framework wrappers, by their public name (the modules
are `toolcommit.checker.runtime.frameworks` and its siblings ``frameworks_*``: Pydantic AI,
LangGraph, the OpenAI Agents SDK, LangChain tools, Temporal activities, DBOS steps)."""
from toolcommit.checker.runtime.frameworks import langgraph_tool_node, pydantic_ai_tool
from toolcommit.checker.runtime.frameworks_dbos import dbos_step
from toolcommit.checker.runtime.frameworks_langchain import langchain_tool
from toolcommit.checker.runtime.frameworks_openai_agents import openai_agents_tool
from toolcommit.checker.runtime.frameworks_temporal import temporal_activity

__all__ = ["pydantic_ai_tool", "langgraph_tool_node", "openai_agents_tool", "langchain_tool",
           "temporal_activity", "dbos_step"]
