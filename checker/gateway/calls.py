"""An effectful `tools/call` through the intent log: at most one effect per intent.

Each call is proposed to the library's `IntentLog` under the canonical intent of (tool,
arguments, scope) and driven by its `guard`, one home for the protocol: the first call of
an intent is dispatched to the downstream server, with the intent's key and the ticket's
fence in the request's ``_meta`` (``toolcommit/idempotency_key``, ``toolcommit/fence``) for
a server that can use them; its answer is recorded, and a later call of the same intent,
under any request id or session, gets the recorded answer back without reaching the
server. The log follows the design proven for a provider with no status read and no
idempotency key it must honour (email's, `toolcommit.checker.cli.gateway.PROVIDER`):
at-most-once with a visible give-up. A call whose server died before answering is given
up at once (``DEAD_LETTER``): the call, and every later one of the intent, gets a tool
error saying the effect may have happened. The design keeps no epochs (``epoch=none``): a
re-ask of the same intent is refused for good; a new user request is a new scope.

Calls of one intent run one at a time (a lock per canonical intent): a retry that arrives
while its first call is in flight waits for that call's answer instead of meeting a
record the log would read as in doubt.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Awaitable, Callable, Optional

import anyio
import anyio.from_thread
import anyio.to_thread
from mcp_types import JSONRPCError, JSONRPCResponse

from toolcommit.model.canon import CanonError, canonical_intent
from toolcommit.model.errors import UsageError
from toolcommit.checker.runtime import IntentLog, IntentLogError
from toolcommit.checker.runtime.shims import GaveUp, InDoubt, guard
from toolcommit.checker.logs.adapters.rules import Rules

META_KEY, META_FENCE = "toolcommit/idempotency_key", "toolcommit/fence"


def tool_error(text: str) -> dict:
    """A `CallToolResult` that is a tool error (what the model reads)."""
    return {"content": [{"type": "text", "text": text}], "isError": True}


@dataclass
class Effectful:
    """The effectful tools of one gateway and how their calls reach the log.

    Parameters
    ----------
    log : IntentLog
        The library's log (one writer: this gateway process).
    tools : frozenset of str
        The tools whose calls change the world.
    scope : str or None
        A `--scope` rule (`Rules.scope`): a path into the call's view (``args.order``,
        ``client.name``, ``meta.user``, ``session``) or ``MODULE:FUNCTION``; None: the MCP
        session (``mcp-session:ID``).
    """

    log: IntentLog
    tools: frozenset
    scope: Optional[str] = None
    _locks: dict = field(default_factory=dict)    # intent digest -> [lock, calls using it]

    def __post_init__(self):
        self._scope_of = Rules(scope=self.scope).scope_of()

    def wants(self, method: str, params: Optional[dict]) -> bool:
        return method == "tools/call" and isinstance(params, dict) \
            and params.get("name") in self.tools

    def view(self, params: dict, request_id, session: str, client: Optional[dict]) -> dict:
        """What a `--scope` rule reads: tool, call_id, args, session, client (the
        ``clientInfo`` of ``initialize``), meta (the request's ``_meta``)."""
        return {"tool": params.get("name"), "call_id": f"{session}:{request_id}",
                "args": params.get("arguments") or {}, "session": session,
                "client": client or {}, "meta": params.get("_meta") or {}}

    async def call(self, params: dict, request_id, session: str, client: Optional[dict],
                   send: Callable[[str, dict], Awaitable]) -> dict:
        """The `CallToolResult` (a dict) for one effectful call; `send(method, params)`
        asks the downstream server and returns its JSON-RPC answer (or raises)."""
        view = self.view(params, request_id, session, client)
        tool, args = view["tool"], view["args"]
        if not isinstance(args, dict):
            return tool_error(f"toolcommit gateway: the arguments of {tool} are not a JSON "
                              "object; nothing was sent")
        try:
            scope = self._scope_of(view, f"mcp-session:{session}")
            digest = canonical_intent(tool, args, scope).digest
        except (UsageError, CanonError) as e:
            return tool_error(f"toolcommit gateway: {e}; nothing was sent")
        entry = self._locks.setdefault(digest, [anyio.Lock(), 0])   # [lock, calls using it]
        entry[1] += 1
        try:
            async with entry[0]:
                return await anyio.to_thread.run_sync(
                    self._guarded, params, view["call_id"], tool, args, scope, send)
        finally:     # the last call of an intent drops its lock: the table holds live ones
            entry[1] -= 1
            if entry[1] == 0:
                del self._locks[digest]

    def _guarded(self, params, call_id, tool, args, scope, send) -> dict:
        """In a worker thread: the library's guard, the downstream call run on the loop."""
        meta = dict(params.get("_meta") or {})

        sent = []

        def execute(ticket):
            sent.append(ticket)
            down = {**params, "_meta": {**meta, META_KEY: ticket.idempotency_key or ticket.key,
                                        META_FENCE: ticket.fence}}
            return anyio.from_thread.run(send, "tools/call", down)

        try:
            return answer_of(guard(self.log, call_id, tool, args, scope, execute,
                                   saved=answer_of))
        except InDoubt as e:
            return tool_error(in_doubt(tool, e))
        except GaveUp as e:     # email's design gives up at once on the call it sent
            return tool_error(in_doubt(tool, e) if sent else given_up(tool, e))
        except IntentLogError as e:
            return tool_error(f"toolcommit gateway: {e}; nothing was sent")


def answer_of(msg) -> dict:
    """What the log records of the server's answer: the `CallToolResult`, or a tool error
    carrying the server's JSON-RPC error (either is an answer: the same for a retry)."""
    if isinstance(msg, JSONRPCResponse):
        return msg.result
    if isinstance(msg, JSONRPCError):
        return tool_error(f"the server answered error {msg.error.code}: {msg.error.message}")
    return msg


def in_doubt(tool: str, e) -> str:
    """What the client is told of a call this gateway sent and got no answer to."""
    return (f"toolcommit gateway: the {tool} call may have taken effect: the server did not "
            f"answer (it exited or failed), and MCP has no status read to ask it. It will not "
            f"be sent again for this intent (record {e.record.key if e.record else '?'}); "
            "check the provider before asking again.")


def given_up(tool: str, e: GaveUp) -> str:
    state = e.record.state if e.record else "given up"
    return (f"toolcommit gateway: this {tool} call was not sent: an earlier call of the same "
            f"intent ended in doubt ({state}, record {e.record.key if e.record else '?'}), and "
            "its effect may have happened. It is never sent twice: check the provider; a new "
            "request of the user's is a new session (or a new value of the --scope rule).")
