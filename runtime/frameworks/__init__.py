"""toolcommit.runtime.frameworks: the guard around the tools of the agent frameworks and
durable runtimes teams use, one module each (the framework itself is imported only when a
wrapper is called; optional extra ``frameworks``):

- `pydantic_ai_tool`, `langgraph_tool_node` (`pydantic_langgraph`),
- `openai_agents_tool` (`openai_agents`), `langchain_tool` (`langchain`, ToolRetryMiddleware
  included), `temporal_activity` (`temporal`), `dbos_step` (`dbos`);
- `crewai_tool` (`crewai`; its own extra ``crewai`` and environment: CrewAI's pins clash
  with the ``frameworks`` and ``gateway`` extras);
- `common`: the sync/async guarded call they share.
"""

from toolcommit.runtime.frameworks.crewai import crewai_tool
from toolcommit.runtime.frameworks.dbos import dbos_step
from toolcommit.runtime.frameworks.langchain import langchain_tool
from toolcommit.runtime.frameworks.openai_agents import openai_agents_tool
from toolcommit.runtime.frameworks.pydantic_langgraph import langgraph_tool_node, pydantic_ai_tool
from toolcommit.runtime.frameworks.temporal import temporal_activity

__all__ = [
    "pydantic_ai_tool",
    "langgraph_tool_node",
    "openai_agents_tool",
    "langchain_tool",
    "temporal_activity",
    "dbos_step",
    "crewai_tool",
]
