"""A worker process: an agent loop on one runtime, talking to the provider through the proxy.

The agent loop is the same for both runtimes: for each user intent (a `Session`) the
scripted model emits a tool call; on a failure it re-asks with a fresh call id (and maybe a
paraphrase), up to its retry budget; when the runtime reports the intent given up, the user
asks again once. After a restart the model replays its sessions from the start (chat
history), as real agents do.

Runtimes
--------
``library``  on a profile of spec/environments.json (``--env``): `toolcommit.runtime.guard`
             with the design the library ships for it (`DesignRuntime`); on the harness's
             own profiles: the intent log driven step by step under the design torture has
             always measured (`LIBRARY_DESIGN`: reconcile, then park on absent).
``park``     that step-by-step driver on any profile, settling its doubt before the model
             hears: the library as it shipped before it followed a provider's design.
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
from dataclasses import replace
from typing import Optional

from toolcommit.checker.torture.plan import Plan, Session, Timing
from toolcommit.checker.torture.profiles import PROFILES, compress, design_source
from toolcommit.runtime import (
    Answered,
    Conflict,
    GaveUp,
    Held,
    InDoubt,
    IntentLog,
    JsonlSink,
    guard,
)
from toolcommit.runtime import lines as L
from toolcommit.runtime.design import load as load_design
from toolcommit.runtime.store import OPEN_STATES

#: who asks, in every session of a run: one user (the run's scopes tell its requests apart)
PRINCIPAL = "torture:user"

# the design torture has measured the library under on the harness's own profiles (and the
# runtime park everywhere): ideal's, with the semantic key sent too (the recommended
# preset), as before issue 18; `torture --env` follows each profile's shipped design
LIBRARY_DESIGN = replace(
    load_design("ideal"),
    source="torture (ideal, keyed)",
    knobs={**load_design("ideal").knobs, "idempotency_key": "semantic_key"},
)


def env_design(env: str):
    """The design the library ships for `env` (``spec/designs/<env>.json``), its timing
    compressed as the fake's is (`profiles.HOUR`)."""
    d = load_design(design_source(env))
    squeeze = {
        k: None if v is None else compress(v)
        for k, v in (
            ("delay_bound", d.delay_bound),
            ("replay_window", d.replay_window),
            ("key_lifetime", d.key_lifetime),
        )
    }
    return d.with_timing(**squeeze)


class Hook:
    """The worker's side of the harness pipe: report a point, wait for the go-ahead."""

    def __init__(self, to_fd: int, from_fd: int):
        self.to_fd, self.from_fd = to_fd, from_fd

    def __call__(self, point: str, key: str = "") -> None:
        os.write(self.to_fd, f"{point} {key}\n".encode())
        if os.read(self.from_fd, 1) != b"c":  # the harness is gone: stop at once
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
            conn.request(
                method, path, body=data, headers={**headers, "X-Sent": repr(time.monotonic())}
            )
            resp = conn.getresponse()
            doc = json.loads(resp.read() or b"{}")
            if resp.status == 200:
                return "ok", doc
            if resp.status == 409:
                return (
                    "in_flight" if doc.get("error") == "idempotency_key_in_use" else "fenced"
                ), doc
            return ("exists" if resp.status == 412 else "error"), doc
        except (OSError, http.client.HTTPException, ValueError):
            return "lost", None  # timeout, reset, or no answer at all
        finally:
            conn.close()

    def apply(
        self,
        record: str,
        key: Optional[str],
        fence: Optional[int],
        tool: str,
        args: dict,
        scope: str,
    ):
        """Ask for an effect; `record` (header X-Record-Key) is the caller's label of the
        request, kept in the ledger and never used by the provider to deduplicate."""
        headers = {"Content-Type": "application/json", "X-Record-Key": record}
        if key is not None:
            headers["Idempotency-Key"] = key
        if fence is not None:
            headers["Fence"] = str(fence)
        return self._request(
            "POST", "/effect", {"tool": tool, "args": args, "scope": scope}, headers
        )

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

    def __init__(self, log: IntentLog, net: Net, hook: Hook, timing: Timing, resolve: bool = False):
        self.log, self.net, self.hook, self.timing = log, net, hook, timing
        self.resolve = resolve  # reconcile an unknown outcome before the model hears it

    def _mine(self, r) -> bool:
        return (r.owner, r.owner_inc) == (self.log.writer, self.log.incarnation)

    def call(self, session: Session, call_id: str, args: dict, new_attempt: bool) -> str:
        """done | doubt | gave_up | rejected | held | answered, as the model hears it
        (`OUTCOMES`)."""
        d = self.log.propose(
            call_id,
            session.tool,
            args,
            session.scope,
            new_attempt=new_attempt,
            principal=PRINCIPAL,
        )
        if d.decision == "held":  # reask=hold: another scope's record, not ours to drive
            return "held"
        self.hook("proposed", d.key)
        if d.decision in ("conflict", "answered"):
            return {"conflict": "rejected"}.get(d.decision, d.decision)
        return self.drive(d.key)

    def drive(self, key: str) -> str:
        """Move `key` towards a settled state as far as this worker may, once."""
        while True:
            r = self.log.record(key)
            if r.settled:
                return {"ACKED": "done", "REJECTED_CONFLICT": "rejected"}.get(r.state, "gave_up")
            if not self._mine(r):
                if not any(t.key == key for t in self.log.recover()):
                    time.sleep(self.timing.poll)  # another live worker holds it
                continue
            if r.state == "RECORDED":
                t = self.log.dispatch(key)
                if t is None:
                    continue
                self.hook("dispatched", key)
                status, doc = self.net.apply(
                    t.key, t.idempotency_key, t.fence, t.tool, t.args, t.scope
                )
                self.hook("sent", key)
                if status == "ok":
                    self.log.ack(t, doc)
                    return "done"
                self.log.timeout(t, "fenced out" if status == "fenced" else "no answer")
                if self.resolve:
                    continue  # the runtime settles its doubt before answering
                return "doubt"
            t = self.log.reconcile(key)
            if t is None:
                continue
            self.hook("reconciling", key)
            status, doc = self.net.status(t.idempotency_key, t.fence, self.via)
            if status == "error" and str(doc.get("error", "")).startswith("no status read"):
                status, doc = "ok", {"applied": False}  # what a user's status= finds there
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


class NoAnswer(Exception):
    """The provider's answer was not one (lost, 409 in flight, an error): in doubt."""


class DesignRuntime:
    """Tool calls through `toolcommit.runtime.guard`: the library itself, following the
    design it ships for the provider (`env_design`); the harness only performs the
    requests it asks for (``execute`` a dispatch or a replay, ``status`` a read) and
    reports its hook points around them. The model hears done, in doubt (InDoubt), held
    (Held), answered (Answered), given up (GaveUp) or rejected (Conflict).

    A send the harness held (a zombie pause at ``dispatched``) goes out only while the
    design's replay window of its first send is open, as a client must check (no fence
    stops it at a provider without fences)."""

    def __init__(self, log: IntentLog, net: Net, hook: Hook, timing: Timing, profile):
        self.log, self.net, self.hook, self.timing, self.profile = log, net, hook, timing, profile
        self.first: dict[str, float] = {}

    def call(self, session: Session, call_id: str, args: dict, new_attempt: bool) -> str:
        # epoch=none (email): the log itself keeps the re-ask on the given-up key (refused)
        return self._guard(call_id, session.tool, args, session.scope, new_attempt)

    def _guard(self, call_id, tool, args, scope, new_attempt) -> str:
        try:
            guard(
                self.log,
                call_id,
                tool,
                args,
                scope,
                self._execute,
                self._status,
                new_request=new_attempt,
                on_proposed=lambda d: self.hook("proposed", d.key),
                principal=PRINCIPAL,
            )
        except GaveUp:
            return "gave_up"
        except Held:
            return "held"
        except InDoubt:
            return "doubt"
        except Answered:
            return "answered"
        except Conflict:
            return "rejected"
        return "done"

    def _execute(self, t):
        point = "dispatched" if t.purpose == "apply" else "reconciling"
        self.first.setdefault(t.key, time.monotonic())
        self.hook(point, t.key)
        w = self.log.design.replay_window
        if w is not None and time.monotonic() > self.first[t.key] + w:
            raise NoAnswer("the replay window closed before the send")
        status, doc = self.net.apply(t.key, t.idempotency_key, t.fence, t.tool, t.args, t.scope)
        self.hook("sent", t.key)
        if status in ("ok", "exists"):
            return {"id": doc.get("id")}
        raise NoAnswer(f"{status}: {(doc or {}).get('error', 'no answer')}")

    def _status(self, t):
        status, doc = self.net.status(t.idempotency_key or t.key, t.fence, t.via)
        if status != "ok":
            raise NoAnswer(f"status read: {status}")
        return {"id": doc["id"]} if doc["applied"] else None

    def finish(self) -> None:
        """Settle every record this worker holds or can take over, until none is open."""
        while True:
            self.log.recover()
            for r in self.log.records(OPEN_STATES):
                if (r.owner, r.owner_inc) == (self.log.writer, self.log.incarnation):
                    self._guard(r.call_id, r.tool, r.args, r.scope, False)
            if self.log.unsettled() == 0:
                return
            time.sleep(self.timing.poll)

    def close(self) -> None:
        self.log.close()


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
        status, doc = self.net.apply(key, None, None, tool, args, scope)  # no idempotency key
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


# what a runtime's `call` tells the model: ``done``; ``doubt`` (may have happened, the log
# settles it); ``gave_up``; ``rejected`` (a conflict); under ``reask=hold``, ``held`` (an
# earlier request of the same tool and arguments in another scope is unsettled: nothing
# sent) and ``answered`` (that earlier request's outcome is the answer: nothing sent)
OUTCOMES = ("done", "doubt", "gave_up", "rejected", "held", "answered")
# the outcomes that end a session: the user heard what became of the request
FINAL = ("done", "rejected", "answered")


def run_session(rt, session: Session, tag: str) -> None:
    """The scripted model and user for one intent (see the module docstring). A script
    entry is (call id or None, form index, always): the model re-asks after a failure, and
    after a success emits only calls marked `always` (a racing duplicate)."""
    script = list(session.calls) or [
        (None, i % len(session.forms), False) for i in range(session.retries + 1)
    ]
    new_attempt, asked_again = False, False
    for i, (call_id, form, _always) in enumerate(script):
        out = rt.call(session, call_id or f"{tag}.a{i}", session.forms[form], new_attempt)
        new_attempt = False
        more = i + 1 < len(script) and script[i + 1][2]
        if out in FINAL and not more:
            return
        if out == "gave_up":
            if asked_again:
                return
            asked_again = new_attempt = True


def open_runtime(conf: dict, plan: Plan, name: str, inc: int, hook: Hook):
    """The runtime a worker runs on, from the harness's configuration."""
    net = Net(conf["proxy_port"], plan.timing)
    if conf["runtime"] == "chat":
        return ChatRuntime(
            f"{name}.{inc}", os.path.join(conf["dir"], f"chat-{name}.{inc}.jsonl"), net, hook
        )
    profile = PROFILES[conf["profile"]]
    env = conf["runtime"] == "library" and profile.env
    provider = env_design(profile.env) if env else LIBRARY_DESIGN
    if conf["store"] == "postgres":
        log = IntentLog.postgres(
            conf["dsn"], name, schema=conf["schema"], lease=conf["lease"], provider=provider
        )
    else:
        log = IntentLog.sqlite(
            conf["db"], name, synchronous="NORMAL", lease=conf["lease"], provider=provider
        )
    if env:
        return DesignRuntime(log, net, hook, plan.timing, profile)
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
