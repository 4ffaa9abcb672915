"""toolcommit.runtime.frameworks: the Pydantic AI and LangGraph wrappers, by their public name
(the module is `toolcommit.checker.runtime.frameworks`; these are its objects)."""
from toolcommit.checker.runtime.frameworks import langgraph_tool_node, pydantic_ai_tool

__all__ = ["pydantic_ai_tool", "langgraph_tool_node"]
