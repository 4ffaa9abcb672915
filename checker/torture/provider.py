"""The provider on loopback and the faulty network in front of it (one asyncio process).

Provider (``http://127.0.0.1:<provider_port>``), with the semantics of a named environment
profile (`PROFILES`):

- ``POST /effect`` with headers ``Idempotency-Key`` and ``Fence`` (both optional; an
  ``X-Record-Key`` label is kept in the ledger, never used to deduplicate, and names what
  the request writes where it has no Idempotency-Key: its fence and a status read refer
  to it; ``X-Sent`` is the sender's monotonic clock) and a JSON body ``{"tool", "args", "scope"}``: applies the
  effect (a ledger entry, answer ``{"id": "e<n>"}``) under the profile's rules
  (`toolcommit.checker.torture.profiles`): a higher fence seen (409 ``fenced``), a key in
  flight (409 ``idempotency_key_in_use``, or wait), a known key (its saved response, or
  412 ``already_exists``; other parameters: 400 ``idempotency_error``), a request past the
  delay bound (refused, or never delivered), and the plan's provider faults, which the
  proxy passes in ``X-Fault``: ``slow`` (executes past the caller's timeout, the key in
  flight meanwhile), ``error_before`` (429, nothing saved), ``error_after`` (applied, 500
  saved).
- ``GET /list?key=K&fence=F`` (``/status`` is its old name) and ``GET /search?key=K``:
  the seal (a fencing provider raises the key's highest fence to F first), then the read
  ``{"applied": bool, "id": ...}`` from the permanent ledger (a status read never
  forgets, unlike an idempotency key); the search lags where the profile says so, and a
  ``stale`` fault makes one search miss. A profile without a status read answers 404.
- ``GET /ledger``: every applied effect and the network's fault counts;
  ``GET /flush``: answers once no delayed request is still held or executing.

Proxy (``http://127.0.0.1:<proxy_port>``): the workers' only way to the provider. For the
n-th request of one identity (``apply`` requests by canonical intent, ``status`` reads by
key) the plan says (`Plan.net_action`): pass; ``drop`` (forward it, let it apply, close
the client's connection without an answer: a lost ack); ``delay`` (hold it past the
client's timeout, deliver it later: a request that lands after the caller gave up);
``late`` (the same, past the profile's delay bound); ``dup`` (deliver it twice: an SDK's
retry); or a provider fault (told to the provider in ``X-Fault``). Both listen on
127.0.0.1 only, and answer a request whose Host is not loopback or whose Origin is
foreign (a web page's) with 421 or 403, nothing of it applied or forwarded.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from typing import Optional
from urllib.parse import parse_qs, urlsplit

from toolcommit.checker.torture.plan import PROVIDER_FAULTS
from toolcommit.checker.torture.profiles import PROFILES, Profile, profile_for  # noqa: F401
from toolcommit.gateway.loopback import refused
from toolcommit.model.canon import CanonError, canonical_intent


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
    reason = {
        200: "OK",
        400: "Bad Request",
        403: "Forbidden",
        404: "Not Found",
        409: "Conflict",
        412: "Precondition Failed",
        421: "Misdirected Request",
        429: "Too Many Requests",
        500: "Internal Server Error",
    }.get(status, "X")
    hdrs = "".join(f"{k}: {v}\r\n" for k, v in (extra or {}).items())
    return (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n{hdrs}\r\n"
    ).encode() + body


class Provider:
    """The provider's state and rules (`profiles` says which fact gives which rule); pure
    but for the clock (`clock`, monotonic seconds, shared by every process of the machine:
    a request's ``X-Sent`` stamp is the sender's reading of it)."""

    def __init__(self, profile: Profile, clock=time.monotonic):
        self.profile, self.clock = profile, clock
        self.ledger: list[dict] = []
        self.saved: dict[str, tuple] = {}  # key -> (first use, status, response, params)
        self.applied: dict[str, tuple] = {}  # key -> (first effect id, when applied)
        self.fence: dict[str, int] = {}
        self.executing: dict[str, asyncio.Event] = {}
        self.counts = {
            "apply_requests": 0,
            "fenced_out": 0,
            "replayed": 0,
            "status_reads": 0,
            "in_flight": 0,
            "mismatched": 0,
            "pruned": 0,
            "expired": 0,
            "beyond_bound": 0,
            "errors_before": 0,
            "errors_after": 0,
            "slow": 0,
            "stale": 0,
        }

    def _late(self, headers: dict) -> bool:
        """Whether the request reached us more than the delay bound after its send."""
        sent = headers.get("x-sent")
        try:
            return sent is not None and self.clock() - float(sent) > self.profile.delay_bound
        except ValueError:
            return False

    def _prune(self, key: str, now: float) -> None:
        got = self.saved.get(key)
        if got is not None and now - got[0] >= self.profile.ttl:
            del self.saved[key]
            self.counts["pruned"] += 1

    async def effect(self, headers: dict, body: bytes):
        """(status, doc, extra headers), or None: the request is never delivered (it came
        past an assumed delay bound)."""
        self.counts["apply_requests"] += 1
        try:
            call = json.loads(body)
            tool, args, scope = call["tool"], call["args"], call["scope"]
        except (ValueError, KeyError, TypeError):
            return 400, {"error": "body must be {tool, args, scope}"}, {}
        p, fault = self.profile, headers.get("x-fault", "")
        if self._late(headers):
            if p.deadlines:
                self.counts["expired"] += 1
                return 400, {"error": "RequestExpired"}, {}
            self.counts["beyond_bound"] += 1
            return None
        key = headers.get("idempotency-key") if p.idempotency else None
        obj = _object(headers)
        fence = int(headers["fence"]) if headers.get("fence", "").isdigit() else None
        if p.fences and obj and fence is not None:
            if fence < self.fence.get(obj, 0):
                self.counts["fenced_out"] += 1
                return 409, {"error": "fenced", "seen": self.fence[obj]}, {}
            self.fence[obj] = max(fence, self.fence.get(obj, 0))
        params = json.dumps(call, sort_keys=True, separators=(",", ":"))
        if key is not None:
            while key in self.executing:
                if p.in_flight == "refused":
                    self.counts["in_flight"] += 1
                    return 409, {"error": "idempotency_key_in_use"}, {}
                await self.executing[key].wait()
            if fault == "expire_key" and self.saved.pop(key, None) is not None:
                self.counts["pruned"] += 1  # pruned early: a trace's expire_key
            self._prune(key, self.clock())
            if key in self.saved:
                return self._repeat(key, params)
        if fault == "error_before":
            self.counts["errors_before"] += 1
            return 429, {"error": "rate_limited"}, {}
        return await self._execute(
            key, obj, fence, headers, fault, params, {"tool": tool, "args": args, "scope": scope}
        )

    def _repeat(self, key: str, params: str):
        _, status, resp, first = self.saved[key]
        if params != first:
            self.counts["mismatched"] += 1
            return (
                400,
                {
                    "error": "idempotency_error",
                    "message": "Keys for idempotent requests can only be used with the "
                    "same parameters they were first used with.",
                },
                {},
            )
        self.counts["replayed"] += 1
        if self.profile.repeat == "exists":
            return 412, {"error": "already_exists", "id": self.applied[key][0]}, {}
        return status, resp, {"Idempotent-Replayed": "true"}

    async def _execute(self, key, obj, fence, headers, fault, params, call):
        done = asyncio.Event()
        if key is not None:
            self.executing[key] = done
        try:
            if fault == "slow":  # executes past the caller's timeout, within the bound
                self.counts["slow"] += 1
                sent = float(headers.get("x-sent", self.clock()))
                left = sent + self.profile.delay_bound - self.clock()
                await asyncio.sleep(max(0.0, min(float(headers.get("x-hold", 0)), 0.8 * left)))
            if self.profile.fences and obj and fence is not None and fence < self.fence.get(obj, 0):
                self.counts["fenced_out"] += 1  # a conditional write checks at its commit
                return 409, {"error": "fenced", "seen": self.fence[obj]}, {}
            eid = f"e{len(self.ledger) + 1}"
            entry = {"effect_id": eid, **call, "kind": "apply"}
            if headers.get("x-record-key"):
                entry["key"] = headers["x-record-key"]
            if headers.get("idempotency-key"):
                entry["idempotency_key"] = headers["idempotency-key"]
            if fence is not None:
                entry["fence"] = fence
            self.ledger.append(entry)
            now = self.clock()
            if obj:
                self.applied.setdefault(obj, (eid, now))
            status, resp = 200, {"id": eid}
            if fault == "error_after":
                self.counts["errors_after"] += 1
                status, resp = 500, {"error": "api_error"}
            if key is not None:
                self.saved[key] = (now, status, resp, params)
            return status, resp, {}
        finally:
            if key is not None:
                self.executing.pop(key, None)
            done.set()

    def status(self, path: str, query: dict, headers: dict) -> tuple[int, dict, dict]:
        """``/list`` (consistent) or ``/search`` (lagging where the profile says so): whether
        an effect under ``key`` was applied; a fenced read seals first. ``/status`` is the
        harness profiles' name for the list."""
        self.counts["status_reads"] += 1
        how = "list" if path == "/status" else path.strip("/")
        if how not in self.profile.reads:
            return 404, {"error": f"no status read by {how} at this provider"}, {}
        key = query.get("key", [None])[0]
        if key is None:
            return 400, {"error": "status needs ?key="}, {}
        fence = query.get("fence", [""])[0]
        if self.profile.fences and fence.isdigit():
            self.fence[key] = max(int(fence), self.fence.get(key, 0))
        got = self.applied.get(key)
        if how == "search" and got is not None:
            stale = (
                headers.get("x-fault") == "stale" or self.clock() - got[1] < self.profile.search_lag
            )
            if stale:
                self.counts["stale"] += 1
                got = None
        return 200, {"applied": got is not None, "id": got and got[0]}, {}


def _object(headers: dict) -> str:
    """What a request writes, which its fence and a status read name: its Idempotency-Key,
    else the record it carries out (X-Record-Key: a conditional write names its item). Only
    an Idempotency-Key deduplicates, and only at an idempotent provider."""
    return headers.get("idempotency-key") or headers.get("x-record-key") or ""


def intent_of(body: bytes) -> str:
    """The canonical intent a request body names (the proxy's identity for ``apply``)."""
    try:
        call = json.loads(body)
        return canonical_intent(call["tool"], call["args"], call["scope"]).digest
    except (ValueError, KeyError, TypeError, CanonError):
        return "?"


class Proxy:
    """The faulty loopback network: decides per request with `plan.net_action`."""

    def __init__(self, plan, upstream_port: int, timing, profile: Optional[Profile] = None):
        self.plan, self.upstream, self.timing = plan, upstream_port, timing
        self.profile = profile
        self.seen: dict[tuple[str, str], int] = {}
        self.counts = {"requests": 0, "drop": 0, "delay": 0, "dup": 0, "late": 0}
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
        if await _refuse(writer, headers):
            return
        path = urlsplit(target)
        if path.path == "/effect":
            ident = ("apply", intent_of(body))
        else:
            ident = ("status", parse_qs(path.query).get("key", ["?"])[0])
        n = self.seen[ident] = self.seen.get(ident, 0) + 1
        action = self.plan.net_action(ident[0], ident[1], n)
        self.counts["requests"] += 1
        if action in PROVIDER_FAULTS:  # the provider's own fault: it is told, per request
            headers = {**headers, "x-fault": action, "x-hold": str(self.timing.hold)}
        raw = (
            f"{method} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + "".join(f"{k}: {v}\r\n" for k, v in headers.items() if k != "host")
            + "\r\n"
        ).encode() + body
        try:
            if action in ("delay", "late"):
                self.counts[action] += 1  # the client times out; the request lands later
                bound = self.profile.delay_bound if self.profile else 0.0
                await self._late(raw, 1.5 * bound if action == "late" else self.timing.hold)
                return
            answer = await self._forward(raw)
            if action in ("dup", "dup_drop"):
                self.counts["dup"] += 1
                await self._forward(raw)
            if action in ("drop", "dup_drop"):
                self.counts["drop"] += 1
                return  # applied, but the ack never arrives
            writer.write(answer)
            await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    async def _late(self, raw: bytes, hold: float) -> None:
        """Hold the request (its client's connection stays open, unanswered) `hold`
        seconds, past the client's timeout, then deliver it; `flush` waits for every held
        request. ``late`` holds it past the profile's delay bound."""
        task = asyncio.current_task()
        self.held.add(task)
        try:
            await asyncio.sleep(hold)
            await self._forward(raw)
        except ConnectionError:
            pass
        finally:
            self.held.discard(task)


async def _refuse(writer, headers: dict) -> bool:
    """Answer and close a request from outside the run (a foreign Host or Origin: a web
    page's, `toolcommit.gateway.loopback`); True if it was one. Nothing of it is applied,
    counted or forwarded."""
    foreign = refused(headers.get("host", ""), headers.get("origin", ""))
    if foreign is None:
        return False
    try:
        writer.write(response(foreign[0], {"error": foreign[1]}))
        await writer.drain()
    except ConnectionError:
        pass
    writer.close()
    return True


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
        if await _refuse(writer, headers):
            return
        url = urlsplit(target)
        if url.path == "/effect" and method == "POST":
            answer = await provider.effect(headers, body)
            if answer is None:  # never delivered: no answer, nothing applied
                writer.close()
                return
            status, doc, extra = answer
        elif url.path in ("/status", "/list", "/search"):
            status, doc, extra = provider.status(url.path, parse_qs(url.query), headers)
        elif url.path == "/ledger":
            status, doc, extra = (
                200,
                {"effects": provider.ledger, "provider": provider.counts, "network": proxy.counts},
                {},
            )
        elif url.path == "/flush":
            while proxy.held or provider.executing:
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
    proxy = Proxy(plan, srv.sockets[0].getsockname()[1], timing, profile)
    psrv = await asyncio.start_server(spawn(proxy.handle), "127.0.0.1", 0)
    ports = f"{srv.sockets[0].getsockname()[1]} {psrv.sockets[0].getsockname()[1]}\n"
    os.write(ready_fd, ports.encode())
    os.close(ready_fd)
    loop = asyncio.get_running_loop()
    loop.add_reader(control_fd, stop.set)  # the harness closed its end (or died): stop
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
