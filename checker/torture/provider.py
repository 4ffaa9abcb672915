"""The provider on loopback and the faulty network in front of it (one asyncio process).

Provider (``http://127.0.0.1:<provider_port>``), with the semantics of a named environment
profile (`PROFILES`):

- ``POST /effect`` with headers ``Idempotency-Key`` and ``Fence`` (both optional; an
  ``X-Record-Key`` label is kept in the ledger, never used to deduplicate) and a JSON body
  ``{"tool", "args", "scope"}``: applies the effect (a ledger entry, answer
  ``{"id": "e<n>"}``), unless the profile fences and the key has seen a higher fence (409
  ``{"error": "fenced"}``), or honours idempotency keys and saw this key within its time
  to live (the saved response is replayed, header ``Idempotent-Replayed: true``).
- ``GET /status?key=K&fence=F``: the seal, then the read: a fencing provider raises the
  key's highest fence to F first; the answer ``{"applied": bool, "id": ...}`` comes from the
  permanent ledger (a status read never forgets, unlike an idempotency key).
- ``GET /ledger``: every applied effect and the network's fault counts;
  ``GET /flush``: answers once no delayed request is still held.

Proxy (``http://127.0.0.1:<proxy_port>``): the workers' only way to the provider. For the
n-th request of one identity (``apply`` requests by canonical intent, ``status`` reads by
key) the plan says (`Plan.net_action`): pass; ``drop`` (forward it, let it apply, close
the client's connection without an answer: a lost ack); ``delay`` (hold it past the
client's timeout, deliver it later: a request that lands after the caller gave up); or
``dup`` (deliver it twice: an at-least-once transport). Both listen on 127.0.0.1 only.
"""
from __future__ import annotations

import asyncio
import json
import os
import time
from dataclasses import dataclass
from typing import Optional
from urllib.parse import parse_qs, urlsplit

from toolcommit.model.canon import CanonError, canonical_intent


@dataclass(frozen=True)
class Profile:
    """An environment profile: what the provider promises (the model's assumptions)."""

    name: str
    idempotency: bool   # honours Idempotency-Key: one effect per key, saved response replayed
    ttl: float          # seconds a key and its saved response are kept
    fences: bool        # rejects a request whose fence is below the highest seen for its key
    meaning: str


PROFILES = {
    "fenced": Profile("fenced", True, 5.0, True,
                      "idempotency keys kept 5 s with their saved responses, fence tokens "
                      "checked, a status read by key that seals: the recommended design's "
                      "assumptions"),
    "keyed": Profile("keyed", True, 5.0, False,
                     "idempotency keys kept 5 s with their saved responses and a status read, "
                     "but no fence tokens"),
    "fences-only": Profile("fences-only", False, 0.0, True,
                           "fence tokens checked and a status read that seals, but no "
                           "idempotency keys (a non-idempotent provider with fencing)"),
    "bare": Profile("bare", False, 0.0, False,
                    "no idempotency keys, no fences (a non-idempotent provider); a status "
                    "read by key"),
}


def profile_for(assumptions: dict) -> str:
    """The profile whose promises match a model trace's assumptions
    (``provider_idempotent``, ``provider_fences``: ``yes`` / ``no``)."""
    idem = assumptions.get("provider_idempotent", "yes") == "yes"
    fences = assumptions.get("provider_fences", "yes") == "yes"
    return {(True, True): "fenced", (True, False): "keyed", (False, True): "fences-only",
            (False, False): "bare"}[(idem, fences)]


async def read_request(reader: asyncio.StreamReader) -> Optional[tuple[str, str, dict, bytes]]:
    """(method, target, headers with lower-case names, body), or None on a closed stream."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, target, _ = lines[0].split(" ", 2)
    headers = {}
    for ln in lines[1:]:
        if ":" in ln:
            k, v = ln.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return method, target, headers, body


def response(status: int, doc: dict, extra: Optional[dict] = None) -> bytes:
    body = json.dumps(doc, separators=(",", ":")).encode()
    reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 409: "Conflict"}.get(status, "X")
    hdrs = "".join(f"{k}: {v}\r\n" for k, v in (extra or {}).items())
    return (f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n{hdrs}\r\n").encode() + body


class Provider:
    """The provider's state and rules (see the module docstring); pure but for the clock."""

    def __init__(self, profile: Profile):
        self.profile = profile
        self.ledger: list[dict] = []
        self.saved: dict[str, tuple[float, dict]] = {}
        self.applied: dict[str, str] = {}      # idempotency key -> first effect id
        self.fence: dict[str, int] = {}
        self.counts = {"apply_requests": 0, "fenced_out": 0, "replayed": 0, "status_reads": 0}

    def effect(self, headers: dict, body: bytes) -> tuple[int, dict, dict]:
        self.counts["apply_requests"] += 1
        try:
            call = json.loads(body)
            tool, args, scope = call["tool"], call["args"], call["scope"]
        except (ValueError, KeyError, TypeError):
            return 400, {"error": "body must be {tool, args, scope}"}, {}
        key = headers.get("idempotency-key")
        fence = int(headers["fence"]) if headers.get("fence", "").isdigit() else None
        p = self.profile
        if p.fences and key is not None and fence is not None:
            if fence < self.fence.get(key, 0):
                self.counts["fenced_out"] += 1
                return 409, {"error": "fenced", "seen": self.fence[key]}, {}
            self.fence[key] = max(fence, self.fence.get(key, 0))
        now = time.monotonic()
        if p.idempotency and key is not None and key in self.saved:
            t, saved = self.saved[key]
            if now - t < p.ttl:
                self.counts["replayed"] += 1
                return 200, saved, {"Idempotent-Replayed": "true"}
        eid = f"e{len(self.ledger) + 1}"
        entry = {"effect_id": eid, "tool": tool, "args": args, "scope": scope, "kind": "apply"}
        if headers.get("x-record-key"):
            entry["key"] = headers["x-record-key"]
        if key is not None:
            entry["idempotency_key"] = key
            self.applied.setdefault(key, eid)
        if fence is not None:
            entry["fence"] = fence
        self.ledger.append(entry)
        resp = {"id": eid}
        if key is not None:
            self.saved[key] = (now, resp)
        return 200, resp, {}

    def status(self, query: dict) -> tuple[int, dict, dict]:
        self.counts["status_reads"] += 1
        key = query.get("key", [None])[0]
        if key is None:
            return 400, {"error": "status needs ?key="}, {}
        fence = query.get("fence", [""])[0]
        if self.profile.fences and fence.isdigit():
            self.fence[key] = max(int(fence), self.fence.get(key, 0))
        eid = self.applied.get(key)
        return 200, {"applied": eid is not None, "id": eid}, {}


def intent_of(body: bytes) -> str:
    """The canonical intent a request body names (the proxy's identity for ``apply``)."""
    try:
        call = json.loads(body)
        return canonical_intent(call["tool"], call["args"], call["scope"]).digest
    except (ValueError, KeyError, TypeError, CanonError):
        return "?"


class Proxy:
    """The faulty loopback network: decides per request with `plan.net_action`."""

    def __init__(self, plan, upstream_port: int, timing):
        self.plan, self.upstream, self.timing = plan, upstream_port, timing
        self.seen: dict[tuple[str, str], int] = {}
        self.counts = {"requests": 0, "drop": 0, "delay": 0, "dup": 0}
        self.held: set[asyncio.Task] = set()

    async def _forward(self, raw: bytes) -> bytes:
        r, w = await asyncio.open_connection("127.0.0.1", self.upstream)
        try:
            w.write(raw)
            await w.drain()
            return await r.read()
        finally:
            w.close()

    async def handle(self, reader, writer) -> None:
        try:
            req = await read_request(reader)
        except (asyncio.IncompleteReadError, ValueError, ConnectionError):
            writer.close()
            return
        method, target, headers, body = req
        path = urlsplit(target)
        if path.path == "/effect":
            ident = ("apply", intent_of(body))
        else:
            ident = ("status", parse_qs(path.query).get("key", ["?"])[0])
        n = self.seen[ident] = self.seen.get(ident, 0) + 1
        action = self.plan.net_action(ident[0], ident[1], n)
        self.counts["requests"] += 1
        raw = (f"{method} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
               + "".join(f"{k}: {v}\r\n" for k, v in headers.items() if k != "host")
               + "\r\n").encode() + body
        try:
            if action == "delay":
                self.counts["delay"] += 1
                await self._late(raw)         # the client times out; the request lands later
                return
            answer = await self._forward(raw)
            if action == "dup":
                self.counts["dup"] += 1
                await self._forward(raw)
            if action == "drop":
                self.counts["drop"] += 1
                return                        # applied, but the ack never arrives
            writer.write(answer)
            await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    async def _late(self, raw: bytes) -> None:
        """Hold the request (its client's connection stays open, unanswered) past the
        client's timeout, then deliver it; `flush` waits for every held request."""
        task = asyncio.current_task()
        self.held.add(task)
        try:
            await asyncio.sleep(self.timing.hold)
            await self._forward(raw)
        except ConnectionError:
            pass
        finally:
            self.held.discard(task)


async def _serve(profile: Profile, plan, timing, ready_fd: int, control_fd: int) -> None:
    provider = Provider(profile)
    stop = asyncio.Event()
    proxy: Proxy

    async def on_provider(reader, writer):
        try:
            method, target, headers, body = await read_request(reader)
        except (asyncio.IncompleteReadError, ValueError, ConnectionError):
            writer.close()
            return
        url = urlsplit(target)
        if url.path == "/effect" and method == "POST":
            status, doc, extra = provider.effect(headers, body)
        elif url.path == "/status":
            status, doc, extra = provider.status(parse_qs(url.query))
        elif url.path == "/ledger":
            status, doc, extra = 200, {"effects": provider.ledger, "provider": provider.counts,
                                       "network": proxy.counts}, {}
        elif url.path == "/flush":
            while proxy.held:
                await asyncio.sleep(proxy.timing.poll)
            status, doc, extra = 200, {"held": 0}, {}
        else:
            status, doc, extra = 404, {"error": "no such path"}, {}
        try:
            writer.write(response(status, doc, extra))
            await writer.drain()
        except ConnectionError:
            pass
        writer.close()

    tasks: set = set()

    def spawn(handler):
        """A connection callback running `handler` as a task of ours, so that at the end
        every one is cancelled and awaited here (a callback that returns a coroutine has
        asyncio log each cancelled one as an error)."""
        def on_connect(reader, writer):
            t = asyncio.ensure_future(handler(reader, writer))
            tasks.add(t)
            t.add_done_callback(tasks.discard)
        return on_connect

    srv = await asyncio.start_server(spawn(on_provider), "127.0.0.1", 0)
    proxy = Proxy(plan, srv.sockets[0].getsockname()[1], timing)
    psrv = await asyncio.start_server(spawn(proxy.handle), "127.0.0.1", 0)
    ports = f"{srv.sockets[0].getsockname()[1]} {psrv.sockets[0].getsockname()[1]}\n"
    os.write(ready_fd, ports.encode())
    os.close(ready_fd)
    loop = asyncio.get_running_loop()
    loop.add_reader(control_fd, stop.set)     # the harness closed its end (or died): stop
    await stop.wait()
    srv.close()
    psrv.close()
    pending = list(tasks)
    for t in pending:
        t.cancel()
    await asyncio.gather(*pending, return_exceptions=True)


def serve(profile: Profile, plan, timing, ready_fd: int, control_fd: int) -> None:
    """Run the provider and the proxy until `control_fd` reaches end of file; write
    ``"<provider_port> <proxy_port>\\n"`` to `ready_fd` once both listen."""
    asyncio.run(_serve(profile, plan, timing, ready_fd, control_fd))
