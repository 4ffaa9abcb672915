"""What makes two calls of a downstream tool one request: its declared ``inputSchema``.

The gateway asks the server behind it for its tools (``tools/list``, every page) and builds
each effectful tool's `toolcommit.runtime.identity.Identity` from its ``inputSchema`` and the
operator's identity fields (``--identity TOOL=FIELD,...``; default: every declared
argument). A call's arguments are then normalized before the log sees them: coerced to the
declared types where exact (``"20"`` is ``20`` for a number), an omitted optional argument
equal to its declared default; and only the identity fields make two calls one intent (the
charge and amount, not the free-text note). Without fields named, every argument the call
has counts, declared or not (`keyed`): a schema that declares no property, such as
``{"type": "object"}``, never makes two calls one. Identity fields the schema does not declare are
refused at the tool's first call, and every call of the tool until the operator fixes them
(nothing is sent).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Awaitable, Callable, Mapping, Optional

import anyio
from mcp_types import JSONRPCError, JSONRPCResponse

from toolcommit.runtime.identity import Identity, IdentityError

MAX_PAGES = 100  # tools/list pages read before the list is taken as endless


class SchemaError(Exception):
    """The server's tools could not be read, or do not declare the tool as the operator
    names it: the call is refused, nothing sent."""


async def tool_schemas(send: Callable[[str, dict], Awaitable]) -> dict[str, dict]:
    """tool name -> ``inputSchema``, from every page of the server's ``tools/list``
    (`send(method, params)` returns its JSON-RPC answer, or raises)."""
    schemas: dict[str, dict] = {}
    cursor: Optional[str] = None
    for _ in range(MAX_PAGES):
        try:
            msg = await send("tools/list", {} if cursor is None else {"cursor": cursor})
        except Exception as e:  # noqa: BLE001 - the server died, or did not answer in time
            raise SchemaError(f"the server did not list its tools ({e})") from None
        if isinstance(msg, JSONRPCError):
            raise SchemaError(f"the server answered tools/list with error {msg.error.message}")
        result = msg.result if isinstance(msg, JSONRPCResponse) else None
        tools = result.get("tools") if isinstance(result, dict) else None
        if not isinstance(tools, list):
            raise SchemaError("the server's tools/list answer has no list of tools")
        for tool in tools:
            if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                schema = tool.get("inputSchema")
                schemas[tool["name"]] = schema if isinstance(schema, dict) else {}
        cursor = result.get("nextCursor")
        if not isinstance(cursor, str) or not cursor:
            return schemas
    raise SchemaError(f"the server's tools/list has more than {MAX_PAGES} pages")


@dataclass
class Identities:
    """Each effectful tool's `Identity`, built at its first call from the server's schema.

    Parameters
    ----------
    fields : mapping of str to tuple of str
        The operator's identity fields per tool (``--identity``); a tool it does not name:
        every declared argument.
    """

    fields: Mapping[str, tuple] = field(default_factory=dict)
    _known: dict = field(default_factory=dict)  # tool -> Identity
    _reading: Optional[anyio.Lock] = None  # one tools/list at a time: calls at once share it

    async def of(self, tool: str, send: Callable[[str, dict], Awaitable]) -> Identity:
        """`tool`'s identity (the server's tools read again for a tool not met yet).

        Raises
        ------
        SchemaError
            The server's tools cannot be read, it lists no `tool`, or the operator's
            fields are not its declared arguments.
        """
        if tool in self._known:
            return self._known[tool]
        self._reading = self._reading or anyio.Lock()
        async with self._reading:
            return await self._of(tool, send)

    async def _of(self, tool: str, send: Callable[[str, dict], Awaitable]) -> Identity:
        if tool not in self._known:
            schemas = await tool_schemas(send)
            if tool not in schemas:
                raise SchemaError(f"the server lists no tool {tool} (tools/list)")
            try:
                self._known[tool] = Identity.from_schema(schemas[tool], self.fields.get(tool), tool)
            except IdentityError as e:
                raise SchemaError(f"{e} (--identity {tool}=...)") from None
        return self._known[tool]

    def keyed(self, identity: Identity) -> Optional[Identity]:
        """What the guard keys the tool's calls by: `identity` where the operator named
        its fields, else None (every normalized argument)."""
        return identity if identity.tool in self.fields else None


__all__ = ["Identities", "SchemaError", "tool_schemas"]
