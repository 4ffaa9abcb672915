"""A worker process: an agent loop on one runtime, talking to the provider through the proxy.

The agent loop is the same for both runtimes: for each user intent (a `Session`) the
scripted model emits a tool call; on a failure it re-asks with a fresh call id (and maybe a
paraphrase), up to its retry budget; when the runtime reports the intent given up, the user
asks again once. After a restart the model replays its sessions from the start (chat
history), as real agents do.

Runtimes
--------
``library``  `toolcommit.runtime.IntentLog`: the log decides; an unknown outcome is
             reconciled through the log (fence bumped, then status read), never re-sent;
             after its sessions the worker settles every record it holds or can take over.
``chat``     trusts the model's call id as the record key, re-sends on every re-ask with
             no idempotency key and no fence (the ``naive`` preset), keeps its memory in the
             process only, and writes the lines it takes (JSON Lines).

At each hook point (`plan.POINTS`) the worker tells the harness where it is and waits for
the go-ahead, so the harness can kill, pause or cancel at a planned point.
"""
from __future__ import annotations

import http.client
import json
import os
import time
from typing import Optional

from toolcommit.runtime import IntentLog, JsonlSink
from toolcommit.runtime import lines as L
from toolcommit.runtime.store import OPEN_STATES

from toolcommit.checker.torture.plan import Plan, Session, Timing
from toolcommit.checker.torture.profiles import PROFILES, design


class Hook:
    """The worker's side of the harness pipe: report a point, wait for the go-ahead."""

    def __init__(self, to_fd: int, from_fd: int):
        self.to_fd, self.from_fd = to_fd, from_fd

    def __call__(self, point: str, key: str = "") -> None:
        os.write(self.to_fd, f"{point} {key}\n".encode())
        if os.read(self.from_fd, 1) != b"c":      # the harness is gone: stop at once
            os._exit(3)


class Net:
    """HTTP to the proxy, with the client timeout of `Timing`."""

    def __init__(self, port: int, timing: Timing):
        self.port, self.timing = port, timing

    def _request(self, method: str, path: str, body: Optional[dict], headers: dict):
        """(answer, document): ``ok``; ``in_flight`` (409, another request under the key
        executes); ``fenced`` (409, a newer fence seen); ``exists`` (412, a create-once key
        already used: the effect is there); ``error`` (any other answer); ``lost`` (no
        answer within the timeout)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timing.timeout)
        try:
            data = None if body is None else json.dumps(body).encode()
            conn.request(method, path, body=data,
                         headers={**headers, "X-Sent": repr(time.monotonic())})
            resp = conn.getresponse()
            doc = json.loads(resp.read() or b"{}")
            if resp.status == 200:
                return "ok", doc
            if resp.status == 409:
                return ("in_flight" if doc.get("error") == "idempotency_key_in_use"
                        else "fenced"), doc
            return ("exists" if resp.status == 412 else "error"), doc
        except (OSError, http.client.HTTPException, ValueError):
            return "lost", None                   # timeout, reset, or no answer at all
        finally:
            conn.close()

    def apply(self, record: str, key: Optional[str], fence: Optional[int], tool: str,
              args: dict, scope: str):
        """Ask for an effect; `record` (header X-Record-Key) is the caller's label of the
        request, kept in the ledger and never used by the provider to deduplicate."""
        headers = {"Content-Type": "application/json", "X-Record-Key": record}
        if key is not None:
            headers["Idempotency-Key"] = key
        if fence is not None:
            headers["Fence"] = str(fence)
        return self._request("POST", "/effect", {"tool": tool, "args": args, "scope": scope},
                             headers)

    def status(self, key: str, fence: Optional[int], via: str = "list"):
        """The status read by `via` (``list`` or ``search``), sealing at `fence` if given."""
        seal = "" if fence is None else f"&fence={fence}"
        return self._request("GET", f"/{via}?key={key}{seal}", None, {})


class LibraryRuntime:
    """Tool calls through the intent log, the recommended design as the library shipped it
    before it followed a provider's design: an unknown outcome is sealed and read once,
    and an absent read parks the record (DEAD_LETTER). The runtime ``park`` on any
    profile (which settles its doubt before the model hears an answer, as the library's
    wrappers do), and ``library`` on the harness's own profiles (which answers "in doubt"
    at once and settles on the model's re-ask, as the figures of
    benchmarks/RESULTS-runtime.md were measured)."""

    via = "list"

    def __init__(self, log: IntentLog, net: Net, hook: Hook, timing: Timing,
                 resolve: bool = False):
        self.log, self.net, self.hook, self.timing = log, net, hook, timing
        self.resolve = resolve     # reconcile an unknown outcome before the model hears it

    def _mine(self, r) -> bool:
        return (r.owner, r.owner_inc) == (self.log.writer, self.log.incarnation)

    def call(self, session: Session, call_id: str, args: dict, new_attempt: bool) -> str:
        """done | doubt | gave_up | rejected, as the model hears it."""
        d = self.log.propose(call_id, session.tool, args, session.scope,
                             new_attempt=new_attempt)
        self.hook("proposed", d.key)
        if d.decision == "conflict":
            return "rejected"
        return self.drive(d.key)

    def drive(self, key: str) -> str:
        """Move `key` towards a settled state as far as this worker may, once."""
        while True:
            r = self.log.record(key)
            if r.settled:
                return {"ACKED": "done", "REJECTED_CONFLICT": "rejected"}.get(r.state, "gave_up")
            if not self._mine(r):
                if not any(t.key == key for t in self.log.recover()):
                    time.sleep(self.timing.poll)   # another live worker holds it
                continue
            if r.state == "RECORDED":
                t = self.log.dispatch(key)
                if t is None:
                    continue
                self.hook("dispatched", key)
                status, doc = self.net.apply(t.key, t.idempotency_key, t.fence, t.tool, t.args,
                                             t.scope)
                self.hook("sent", key)
                if status == "ok":
                    self.log.ack(t, doc)
                    return "done"
                self.log.timeout(t, "fenced out" if status == "fenced" else "no answer")
                if self.resolve:
                    continue            # the runtime settles its doubt before answering
                return "doubt"
            t = self.log.reconcile(key)
            if t is None:
                continue
            self.hook("reconciling", key)
            status, doc = self.net.status(t.idempotency_key, t.fence, self.via)
            if status == "error" and str(doc.get("error", "")).startswith("no status read"):
                status, doc = "ok", {"applied": False}   # what a user's status= finds there
            if status != "ok":
                return "doubt"
            self.log.settle(t, bool(doc["applied"]), {"id": doc["id"]} if doc["applied"] else None)

    def finish(self) -> None:
        """Settle every record this worker holds or can take over, until none is open."""
        while True:
            self.log.recover()
            for r in self.log.records(OPEN_STATES):
                if self._mine(r):
                    self.drive(r.key)
            if self.log.unsettled() == 0:
                return
            time.sleep(self.timing.poll)

    def close(self) -> None:
        self.log.close()


class DesignRuntime(LibraryRuntime):
    """Tool calls through the intent log, following the design the checker proves for the
    provider (`profiles.design`: ``spec/designs/<env>.json``), until the library itself
    takes the design (then this class is its call site):

    - ``idempotency_key``, ``fencing``: what goes with each request;
    - ``on_unknown=replay_then_reconcile``: within the replay window of the key's first send
      (known to this process only for what it sent itself), re-send under the same key
      until an answer: 200 or 412 (the effect is there: ACKED), a saved error (500: ends
      the replay); 409 in flight, 429 and a lost answer are no answer;
    - then the status read by ``status_via``, once no request of the key can still arrive:
      the window closed and the delay bound waited out after this process's first sight
      of the key and its last send (a zombie sends only inside its window);
      absent: ``on_absent`` (DEAD_LETTER);
    - a provider without a status read: the record is given up at once, visibly (the model
      hears it may have happened), never re-sent: at-most-once;
    - ``epoch=none``: a user's re-ask is the same key (refused once given up).
    """

    def __init__(self, log: IntentLog, net: Net, hook: Hook, timing: Timing, design,
                 profile):
        super().__init__(log, net, hook, timing, resolve=True)
        self.design, self.profile = design, profile
        self.via = design["status_via"]
        self.first: dict[str, float] = {}       # key -> when this process first sent it
        self.seen: dict[str, float] = {}        # key -> when this process first held it
        self.last: dict[str, float] = {}        # key -> this process's last send

    def call(self, session: Session, call_id: str, args: dict, new_attempt: bool) -> str:
        again = new_attempt and self.design["epoch"] != "none"
        return super().call(session, call_id, args, again)

    def _send(self, t) -> tuple:
        key = t.idempotency_key if self.design["idempotency_key"] != "none" else None
        fence = t.fence if self.design["fencing"] == "on" else None
        now = time.monotonic()
        self.first.setdefault(t.key, now)
        self.seen.setdefault(t.key, now)
        self.last[t.key] = now
        return self.net.apply(t.key, key, fence, t.tool, t.args, t.scope)

    def _in_window(self, key: str) -> bool:
        """Whether this process may still send `key` (an unbounded window: always)."""
        if self.design.window == float("inf"):
            return True
        first = self.first.get(key)
        return first is not None and time.monotonic() < first + self.design.window

    def drive(self, key: str) -> str:
        while True:
            r = self.log.record(key)
            if r.settled:
                return {"ACKED": "done", "REJECTED_CONFLICT": "rejected"}.get(r.state, "gave_up")
            if not self._mine(r):
                if not any(t.key == key for t in self.log.recover()):
                    time.sleep(self.timing.poll)
                continue
            self.seen.setdefault(key, time.monotonic())
            if r.state == "RECORDED":
                t = self.log.dispatch(key)
                if t is None:
                    continue
                self.first.setdefault(key, time.monotonic())
                self.hook("dispatched", key)
                if not self._in_window(key):     # a zombie woken too late sends nothing
                    self.log.timeout(t, "the replay window closed before the send")
                    return "doubt"
                status, doc = self._send(t)
                self.hook("sent", key)
                if status in ("ok", "exists"):
                    self.log.ack(t, {"id": doc.get("id")})
                    return "done"
                self.log.timeout(t, f"{status}: {doc.get('error', 'no answer') if doc else 'no answer'}")
                continue                # the runtime settles its doubt before answering
            t = self.log.reconcile(key)
            if t is None:
                continue
            self.hook("reconciling", key)
            return self._resolve(t)

    def _resolve(self, t) -> str:
        """Replay, then read (see the class docstring): the model's answer."""
        key = t.key
        if not self.profile.reads:
            self.log.dead_letter(key, "no status read at this provider: it may have happened")
            return "gave_up"
        if self.design["on_unknown"] == "replay_then_reconcile" \
                and self.design["idempotency_key"] != "none":
            while self._in_window(key):
                status, doc = self._send(t)
                if status in ("ok", "exists"):
                    return "done" if self.log.settle(t, True, {"id": doc.get("id")}) else "doubt"
                if status == "error" and doc and doc.get("error") == "api_error":
                    break                       # a saved error: an answer, never re-sent
                if status in ("in_flight", "error"):
                    time.sleep(4 * self.timing.poll)
        w = self.design.window
        quiet = max(self.seen[key] + w if w != float("inf") else 0.0,
                    self.last.get(key, 0.0)) + self.profile.delay_bound
        while time.monotonic() < quiet:
            time.sleep(min(self.timing.poll * 4, quiet - time.monotonic() + 1e-3))
        fence = t.fence if self.design["fencing"] == "on" else None
        status, doc = self.net.status(t.idempotency_key, fence, self.via)
        if status != "ok":
            return "doubt"
        present = bool(doc["applied"])
        if not self.log.settle(t, present, {"id": doc["id"]} if present else None):
            return "doubt"
        return "done" if present else "gave_up"


class ChatRuntime:
    """The chat-style runtime: the model's call id is the key, memory is the process's."""

    def __init__(self, writer: str, path: str, net: Net, hook: Hook):
        self.writer, self.net, self.hook = writer, net, hook
        self.sink = JsonlSink(path)
        self.seq = 0
        self.memory: dict[str, str] = {}

    def _line(self, body: dict) -> None:
        self.seq += 1
        self.sink(L.stamp(body, self.writer, self.seq, L.now_rfc3339()))

    def call(self, session: Session, call_id: str, args: dict, new_attempt: bool) -> str:
        key, tool, scope = call_id, session.tool, session.scope
        if self.memory.get(call_id) == "done":
            self._line(L.proposal(call_id, tool, args, scope, key, "duplicate", 0))
            return "done"
        self._line(L.proposal(call_id, tool, args, scope, key, "accepted", 0))
        self._line(L.transition(key, "PROPOSED", "RECORDED", call_id=call_id))
        self.hook("proposed", key)
        self._line(L.transition(key, "RECORDED", "DISPATCHED", 1))
        self.hook("dispatched", key)
        status, doc = self.net.apply(key, None, None, tool, args, scope)   # no idempotency key
        self.hook("sent", key)
        if status == "ok":
            self._line(L.transition(key, "DISPATCHED", "ACKED", 1))
            self.memory[call_id] = "done"
            return "done"
        self._line(L.transition(key, "DISPATCHED", "UNKNOWN", 1, "no answer"))
        return "doubt"

    def finish(self) -> None:
        """A chat runtime has nothing to settle: what it does not remember is gone."""

    def close(self) -> None:
        self.sink.close()


def run_session(rt, session: Session, tag: str) -> None:
    """The scripted model and user for one intent (see the module docstring). A script
    entry is (call id or None, form index, always): the model re-asks after a failure, and
    after a success emits only calls marked `always` (a racing duplicate)."""
    script = list(session.calls) or [(None, i % len(session.forms), False)
                                      for i in range(session.retries + 1)]
    new_attempt, asked_again = False, False
    for i, (call_id, form, _always) in enumerate(script):
        out = rt.call(session, call_id or f"{tag}.a{i}", session.forms[form], new_attempt)
        new_attempt = False
        more = i + 1 < len(script) and script[i + 1][2]
        if out in ("done", "rejected") and not more:
            return
        if out == "gave_up":
            if asked_again:
                return
            asked_again = new_attempt = True


def open_runtime(conf: dict, plan: Plan, name: str, inc: int, hook: Hook):
    """The runtime a worker runs on, from the harness's configuration."""
    net = Net(conf["proxy_port"], plan.timing)
    if conf["runtime"] == "chat":
        return ChatRuntime(f"{name}.{inc}", os.path.join(conf["dir"], f"chat-{name}.{inc}.jsonl"),
                           net, hook)
    if conf["store"] == "postgres":
        log = IntentLog.postgres(conf["dsn"], name, schema=conf["schema"], lease=conf["lease"])
    else:
        log = IntentLog.sqlite(conf["db"], name, synchronous="NORMAL", lease=conf["lease"])
    profile = PROFILES[conf["profile"]]
    if conf["runtime"] == "library" and profile.env:
        return DesignRuntime(log, net, hook, plan.timing, design(profile.env), profile)
    return LibraryRuntime(log, net, hook, plan.timing, resolve=conf["runtime"] == "park")


def worker_main(conf: dict, plan: Plan, name: str, inc: int, to_fd: int, from_fd: int) -> int:
    """One worker incarnation: its sessions, then its share of settling. Returns 0."""
    hook = Hook(to_fd, from_fd)
    rt = open_runtime(conf, plan, name, inc, hook)
    for si in plan.assign[plan.workers.index(name)]:
        run_session(rt, plan.sessions[si], f"{name}.{inc}.s{si}")
    rt.finish()
    rt.close()
    return 0
