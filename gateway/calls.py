"""An effectful `tools/call` through the intent log: at most one effect per intent.

Each call is proposed to the library's `IntentLog` under the canonical intent of
(principal, tool, arguments, scope) and driven by its `guard`, one home for the protocol:
the first call of an intent is dispatched to the downstream server, with the intent's key
and the ticket's fence in the request's ``_meta`` (``toolcommit/idempotency_key``,
``toolcommit/fence``) for a server that can use them; its answer is recorded, and a later
call of the same intent (the same principal's), under any request id, session or gateway
process, gets the recorded answer back without reaching the server, marked
``"toolcommit/replayed": true`` in the result's ``_meta``.

What one intent is does not depend on the transport: the call's principal (who asked:
`principal`, from a client's token, the operator's ``--principal`` or else the session), the
tool and its identity fields, read from the arguments normalized by the tool's declared
``inputSchema`` (`schemas`: ``"20"`` is ``20`` for a number, an omitted optional argument
its default; every declared argument unless the operator names fields) (scope ``mcp``); the client may name its intent in the
request's ``_meta`` (``toolcommit/intent``: a second, distinct refund of the same amount is a
new name), which is echoed back in the result's ``_meta``; the operator may state a
`--scope` rule, within which a client's name still counts. A scope divides one principal's
intents; two principals' calls are never one intent, whatever the scope.

The log follows the design proven for a provider with no status read and no idempotency key
it must honour (email's, `PROVIDER`): at-most-once with a
visible give-up. A call the server did not answer (it died, or did not answer within the
call limit) is given up at once (``DEAD_LETTER``): the call, and every later one of the
intent, gets a tool error saying the effect may have happened; it is never sent again.
While a call runs the library's heartbeat (the guard's) renews its lease, so a sweeper
(``toolcommit recover``) never takes a live call. A gateway whose writer name another process opened (`Superseded`) writes
nothing more: the calls it sent are reported as in doubt, new ones are refused.

Calls of one intent run one at a time (a lock per canonical intent): a retry that arrives
while its first call is in flight waits for that call's answer instead of meeting a
record the log would read as in doubt.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Awaitable, Callable, Optional

import anyio
import anyio.from_thread
import anyio.to_thread
from mcp_types import CallToolResult, JSONRPCError, JSONRPCResponse

from toolcommit.gateway.downstream import DownstreamGone
from toolcommit.gateway.principal import Principals
from toolcommit.gateway.schemas import Identities, SchemaError
from toolcommit.model.canon import CanonError, canonical_intent, intent_scope
from toolcommit.model.errors import UsageError
from toolcommit.model.views import scope_rule
from toolcommit.runtime import Answered, GaveUp, InDoubt, IntentLog, Superseded, guard
from toolcommit.runtime.caller import Hearing
from toolcommit.runtime.identity import IdentityError

# MCP has no status read and no idempotency key a server must honour: the design proven for
# such a provider is email's (spec/designs/email.json), at-most-once with a visible give-up
PROVIDER = "email"
META_KEY, META_FENCE = "toolcommit/idempotency_key", "toolcommit/fence"
META_INTENT, META_REPLAYED = "toolcommit/intent", "toolcommit/replayed"
META_ANSWERED = "toolcommit/answered"  # why a re-ask got an earlier request's answer
DEFAULT_SCOPE = "mcp"  # an intent is the tool and its canonical arguments
MAX_INTENT_NAME = 200


def tool_error(text: str) -> dict:
    """A `CallToolResult` that is a tool error (what the model reads)."""
    return {"content": [{"type": "text", "text": text}], "isError": True}


def malformed(params) -> Optional[str]:
    """Why a ``tools/call``'s params cannot be an effectful call (None: well formed)."""
    if not isinstance(params, dict):
        return "params must be an object"
    if not isinstance(params.get("name"), str):
        return "params.name must be a string"
    if not isinstance(params.get("arguments", {}), dict):
        return "params.arguments must be an object"
    meta = params.get("_meta", {})
    if not isinstance(meta, dict):
        return "params._meta must be an object"
    name = meta.get(META_INTENT)
    if name is not None and not (isinstance(name, str) and 0 < len(name) <= MAX_INTENT_NAME):
        return (
            f"params._meta[{META_INTENT!r}] must be a string of 1 to {MAX_INTENT_NAME} characters"
        )
    return None


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
        A `--scope` rule (`toolcommit.model.views.scope_rule`): a path into the call's view (``args.order``,
        ``meta.user``, ``session``) or ``MODULE:FUNCTION``; None: ``mcp`` (one intent per
        principal, tool and canonical arguments).
    call_timeout : float
        Seconds a downstream call may take; then it is in doubt (see the module docstring).
    principals : Principals
        The operator's principal rule (`principal`): whose each call is.
    identities : Identities
        Each tool's identity from the server's ``inputSchema`` and the operator's fields
        (`schemas`): how a call's arguments are normalized and which make it one intent.
    """

    log: IntentLog
    tools: frozenset
    scope: Optional[str] = None
    call_timeout: float = 60.0
    principals: Principals = Principals()
    identities: Identities = field(default_factory=Identities)
    superseded: Optional[str] = None
    _locks: dict = field(default_factory=dict)  # intent digest -> [lock, calls using it]

    def __post_init__(self):
        self._scope_of = scope_rule(self.scope)
        self._threads = anyio.CapacityLimiter(256)  # guards in flight, apart from I/O's

    def wants(self, method: str, params) -> bool:
        return (
            method == "tools/call"
            and isinstance(params, dict)
            and isinstance(params.get("name"), str)
            and params["name"] in self.tools
        )

    def view(self, params: dict, request_id, session: str, client: Optional[dict]) -> dict:
        """What a `--scope` rule reads: tool, call_id, args, session, client (the
        ``clientInfo`` of ``initialize``), meta (the request's ``_meta``), and principal
        (added by `call`)."""
        return {
            "tool": params.get("name"),
            "call_id": f"{session}:{request_id}",
            "args": params.get("arguments") or {},
            "session": session,
            "client": client or {},
            "meta": params.get("_meta") or {},
        }

    def intent_scope(self, view: dict) -> str:
        """The scope of the call's intent: the `--scope` rule's value (default ``mcp``),
        with the client's intent name, if it gave one."""
        base = self._scope_of(view, DEFAULT_SCOPE)
        name = view["meta"].get(META_INTENT)
        return base if name is None else f"{base}|intent:{name}"

    async def call(
        self,
        params: dict,
        request_id,
        session: str,
        client: Optional[dict],
        send: Callable[[str, dict], Awaitable],
        holder: Optional[str] = None,
        ready: Optional[Callable[[], Awaitable]] = None,
    ) -> dict:
        """The `CallToolResult` (a dict) for one well-formed effectful call (`malformed`
        is None) in a session opened with the client token named `holder` (None: none);
        `send(method, params)` asks the downstream server and returns its JSON-RPC answer
        (or raises); `ready()` starts the server if it is not running and raises if it
        cannot: then the call is not sent, and nothing is proposed (no record holds its
        intent)."""
        view = self.view(params, request_id, session, client)
        tool, args = view["tool"], view["args"]
        if self.superseded:
            return tool_error(self.superseded + "; this call was not sent")
        try:
            view["principal"] = principal = self.principals.of(view, holder)
            schema = await self.identities.of(tool, send)
            view["args"] = args = schema.normalize(args)
            scope = self.intent_scope(view)
            identity = self.identities.keyed(schema)
            same = args if identity is None else identity.identity_args(args)
            digest = canonical_intent(tool, same, intent_scope(principal, scope)).digest
            if ready is not None:
                await ready()  # a server that dies or hangs at its start: nothing proposed
        except (UsageError, CanonError, SchemaError, IdentityError) as e:
            return tool_error(f"toolcommit gateway: {e}; nothing was sent")
        except DownstreamGone as e:  # the server could not start, or hung in its handshake
            return tool_error(
                f"toolcommit gateway: the {tool} call was not sent: the server is not "
                f"running ({e}); nothing of it reached the server, and asking again may send it"
            )
        entry = self._locks.setdefault(digest, [anyio.Lock(), 0])  # [lock, calls using it]
        entry[1] += 1
        try:
            async with entry[0]:
                return await anyio.to_thread.run_sync(
                    self._guarded,
                    {**params, "arguments": args},
                    view["call_id"],
                    (principal, tool, args, scope, identity),
                    send,
                    limiter=self._threads,
                )
        finally:  # the last call of an intent drops its lock: the table holds live ones
            entry[1] -= 1
            if entry[1] == 0:
                del self._locks[digest]

    async def heard(self, hearing: Hearing) -> None:
        """The outcomes `hearing` collected reached the client (its answer was written):
        noted as heard (`IntentLog.heard`), in a worker thread. A client that cancelled or
        left never gets here, so a re-ask of its intent meets an outcome it did not hear."""
        try:
            await anyio.to_thread.run_sync(hearing.heard, self.log, limiter=self._threads)
        except Exception as e:  # noqa: BLE001 - the answer is out; a re-ask is held instead
            print(f"toolcommit gateway: could not note the answer as heard: {e}", file=sys.stderr)

    def _guarded(self, params, call_id, call: tuple, send) -> dict:
        """In a worker thread: the library's guard, the downstream call run on the loop.
        `params` carry the normalized arguments; `call` is (principal, tool, normalized
        arguments, scope, the `Identity` the guard keys by or None: every argument)."""
        principal, tool, args, scope, identity = call
        meta = dict(params.get("_meta") or {})
        sent, failed, proposed = [], [], []

        def execute(ticket):
            sent.append(ticket)
            down = {
                **params,
                "_meta": {
                    **meta,
                    META_KEY: ticket.idempotency_key or ticket.key,
                    META_FENCE: ticket.fence,
                },
            }
            try:
                return anyio.from_thread.run(send, "tools/call", down)
            except Exception as e:
                failed.append(e)
                raise

        try:
            result = answer_of(
                guard(
                    self.log,
                    call_id,
                    tool,
                    args,
                    scope,
                    execute,
                    saved=answer_of,
                    on_proposed=proposed.append,
                    principal=principal,
                    identity=identity,
                )
            )
            key = proposed[0].key if proposed else None
            return with_meta(result, meta.get(META_INTENT), key, replayed=not sent)
        except Superseded as e:
            self.superseded = (
                f"toolcommit gateway: another process opened this gateway's "
                f"log under its writer name ({e})"
            )
            print(self.superseded, file=sys.stderr, flush=True)
            if sent:
                return tool_error(
                    in_doubt(
                        tool,
                        sent[0].key,
                        "this gateway was superseded before it could record the server's answer",
                    )
                )
            return tool_error(self.superseded + "; this call was not sent")
        except Answered as e:  # a re-ask met an outcome its client never heard
            if e.happened == "yes" and isinstance(e.result, dict):
                key = e.record.key if e.record else None
                answered = with_meta(e.result, meta.get(META_INTENT), key, replayed=True)
                answered["_meta"][META_ANSWERED] = str(e)
                return answered
            return tool_error(f"toolcommit gateway: {e}")
        except (InDoubt, GaveUp) as e:
            if sent:  # email's design gives up at once on the call it sent
                return tool_error(in_doubt(tool, sent[0].key, why_unanswered(failed)))
            if isinstance(e, InDoubt):
                return tool_error(
                    in_doubt(tool, e.record.key if e.record else "?", "another writer holds it")
                )
            return tool_error(given_up(tool, e))
        except Exception as e:  # noqa: BLE001 - the log's (StoreError) or the guard's
            if sent:
                return tool_error(in_doubt(tool, sent[0].key, f"the log failed: {e}"))
            return tool_error(f"toolcommit gateway: {e}; nothing was sent")


def answer_of(msg) -> dict:
    """What the log records of the server's answer: the `CallToolResult`, or a tool error
    carrying the server's JSON-RPC error (either is an answer: the same for a retry)."""
    if isinstance(msg, JSONRPCResponse):
        try:
            CallToolResult.model_validate(msg.result)
        except ValueError as e:  # recorded as said: a retry is told the same, never re-sent
            lines = str(e).splitlines()
            why = "; ".join(x.strip() for x in lines[1:3]) or lines[0]
            return tool_error(
                f"toolcommit gateway: the server answered with an invalid tools/call result "
                f"({why}); the call may have taken effect"
            )
        return msg.result
    if isinstance(msg, JSONRPCError):
        return tool_error(f"the server answered error {msg.error.code}: {msg.error.message}")
    return msg


def with_meta(result, intent: Optional[str], key: Optional[str], replayed: bool) -> dict:
    """`result` with the gateway's ``_meta``: the intent's record key, whether this is the
    recorded answer of an earlier call, and the client's intent name (echoed)."""
    if not isinstance(result, dict):
        return result
    meta = dict(result.get("_meta") or {})
    meta.update({"toolcommit/key": key, META_REPLAYED: replayed})
    if intent is not None:
        meta[META_INTENT] = intent
    return {**result, "_meta": meta}


def why_unanswered(failed: list) -> str:
    if not failed:
        return "the server did not answer"
    e = failed[-1]
    return str(e) if str(e) else type(e).__name__


def in_doubt(tool: str, key: str, why: str) -> str:
    """What the client is told of a call this gateway sent and got no answer to."""
    return (
        f"toolcommit gateway: the {tool} call may have taken effect: {why}, and MCP has "
        f"no status read to ask the server. It will not be sent again for this intent "
        f"(record {key}); check the provider before asking again."
    )


def given_up(tool: str, e: GaveUp) -> str:
    state = e.record.state if e.record else "given up"
    return (
        f"toolcommit gateway: this {tool} call was not sent: an earlier call of the same "
        f"intent ended in doubt ({state}, record {e.record.key if e.record else '?'}), and "
        "its effect may have happened. It is never sent twice: check the provider; to ask "
        f"for a new, distinct {tool}, name a new intent in the request's "
        f"_meta[{META_INTENT!r}]."
    )


__all__ = ["Effectful", "malformed", "tool_error", "META_INTENT", "META_REPLAYED"]
