"""Asks: what one principal asked, across the requests it asked in. I1 across requests,
ANSWER_ACROSS, EFFECT_ARGS.

The per-key pass (`toolcommit.checker.logs.conformance`) groups proposals by the canonical
intent of (tool, args, scope), so the user's re-ask in a new request (another scope) is
another intent there. This pass, over the same lines once that one is done, groups the
accepted proposals by their *ask*: the principal, the tool and the identity arguments with
the scope left out, ``canonical_intent(tool, identity args, intent_scope(principal, ""))``
(the content a ``reask=hold`` design compares), under the rule each proposal line carries
(``principal``; ``identity``, the argument names that make two requests one intent). A line
without them is read as the library of the previous release wrote it: no principal, every
argument, compared `loose`ly (``"2000"`` is 2000, an empty argument an omitted one), so a
re-ask the library of that release split in two by spelling is found too, as possible
only. Pure: events (dicts) in, `Finding`s out; nothing here reads a clock.

- **I1** across requests: two keys of one ask, in two requests (or in one request under
  two spellings of its other arguments), both took effect, and the later was accepted while
  the earlier was not settled as done: in doubt (RECORDED, DISPATCHED, UNKNOWN,
  RECONCILING) or given up (DEAD_LETTER: its request may still land). A request accepted
  once the earlier was ACKED is a new ask (the user asking twice); whether the ACKED outcome
  reached the user is not in the log. Certain when both lines name the principal, one
  writer's seq orders the two and the effects are recorded (or ACKED); possible when the
  lines name no principal (two users' equal requests and one user's re-ask look alike),
  when only two writers' lines could order them, or when an effect is only dispatched.
- **ANSWER_ACROSS**: a ``duplicate`` proposal answered with a record accepted for another
  principal (certain: that principal was told another's outcome, and its own effect was
  never made); on lines that name no principal, with a record of another scope (possible:
  whether the two scopes are one user's the log cannot say).
- **EFFECT_ARGS**: an effect joined to a key (its ``key``, else its ``idempotency_key``)
  whose arguments differ from the key's accepted proposal on the identity arguments both
  name, or whose tool differs (certain).
"""

from __future__ import annotations

import gc
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

from toolcommit.checker.logs.findings import Citation, Finding, short
from toolcommit.model.canon import CanonError, canonical_intent, intent_digest, intent_scope

#: the arguments a trace adapter writes for a call whose arguments were not recorded
UNRECORDED = "toolcommit.unrecorded_args_of"
_DOUBT = ("UNKNOWN", "RECONCILING", "DEAD_LETTER")
TYPES = ("proposal", "transition", "effect")
FIRST, SECOND = ("proposal", "effect"), ("transition",)  # what each reading takes


@dataclass(slots=True)
class Req:
    """An accepted key's request: its first acceptance (by writer and seq)."""

    key: str
    tool: str
    args: dict
    scope: str
    principal: Optional[str]
    identity: Optional[list]
    call_id: str
    writer: str
    seq: int
    where: tuple  # (file, line)


@dataclass(slots=True)
class Outcome:
    """What a key's transitions and effects say: its dispatches, its first ACKED
    (writer, seq, where, from), its first move into doubt (writer, seq, where, state),
    and its applies (writer, where, tool, args, effect id)."""

    dispatches: int = 0
    ack: Optional[tuple] = None
    doubt: Optional[tuple] = None
    applies: list = field(default_factory=list)


_NOTHING = Outcome()  # what a key nothing was logged for says (read only, never fed)


class Asks:
    """Feed events (`toolcommit.checker.logs.typed` objects, well-formed: the per-key pass
    checked them) with their file and line, then ask for the `findings`."""

    __slots__ = ("files", "reqs", "outs", "dups", "_groups")

    def __init__(self, files: Sequence[str]):
        self.files = list(files)
        self.reqs: dict[str, Req] = {}
        self.outs: dict[str, Outcome] = {}
        self.dups: list[Req] = []
        self._groups: Optional[list] = None

    def feed(self, ev, file_index: int, line: int, kinds=TYPES) -> None:
        """Take one event (a `toolcommit.checker.logs.typed` object) if its type is one of
        `kinds` (the two readings: `judge`)."""
        t = ev.type
        if t not in kinds:
            return
        where = (self.files[file_index] if file_index < len(self.files) else "?", line)
        if t == "proposal":
            self._proposal(ev, where)
        elif t == "transition":
            self._transition(ev, where)
        elif t == "effect" and ev.kind == "apply":
            name = ev.key if ev.key is not None else ev.idempotency_key
            out = self.outs.get(name)
            if out is None:
                out = self.outs[name] = Outcome()
            eid = ev.effect_id
            if eid is None or all(a[4] != eid for a in out.applies):
                out.applies.append((ev.writer, where, ev.tool, ev.args, eid))

    def _proposal(self, ev, where: tuple) -> None:
        decision = ev.decision
        if decision == "conflict":
            return
        identity = ev.identity
        r = Req(
            ev.key,
            ev.tool,
            ev.args,
            ev.scope,
            ev.principal,
            list(identity) if identity is not None else None,
            ev.call_id,
            ev.writer,
            ev.seq,
            where,
        )
        if decision != "accepted":
            self.dups.append(r)
            return
        old = self.reqs.get(r.key)
        if old is None or (r.writer, r.seq) < (old.writer, old.seq):
            self.reqs[r.key] = r

    def _transition(self, ev, where: tuple) -> None:
        out = self.outs.get(ev.key)
        if out is None:
            out = self.outs[ev.key] = Outcome()
        to, at = ev.to, (ev.writer, ev.seq)
        if to == "DISPATCHED":
            out.dispatches += 1
        elif to == "ACKED" and (out.ack is None or at < out.ack[:2]):
            out.ack = (*at, where, ev.from_)
        elif to in _DOUBT and (out.doubt is None or at < out.doubt[:2]):
            out.doubt = (*at, where, to)

    # ----- the judgements ----------------------------------------------------------------
    def findings(self, complete_effects: bool = False) -> list[Finding]:
        """EFFECT_ARGS, I1 across requests and ANSWER_ACROSS, in that order."""
        out = [f for k in sorted(self.reqs) for f in self._effect_args(k)]
        out += self._reasks(complete_effects)
        out += [f for d in self.dups for f in self._answer(d)]
        return out

    def args_of(self, r: Req) -> Optional[dict]:
        """The request's arguments: as proposed, or, where they were not recorded (a
        trace's stand-in), those its key's effect shows; None when neither says."""
        if UNRECORDED not in r.args:
            return r.args
        for a in self.outs.get(r.key, _NOTHING).applies:
            if isinstance(a[3], dict) and UNRECORDED not in a[3]:
                return a[3]
        return None

    def _effect_args(self, key: str) -> list[Finding]:
        r = self.reqs[key]
        if UNRECORDED in r.args:
            return []
        for writer, where, tool, args, _ in self.outs.get(key, _NOTHING).applies:
            if args == r.args and (tool is None or tool == r.tool):
                continue  # the common case: the effect line repeats its call
            what = differs(r, tool, args)
            if what:
                return [
                    Finding(
                        "EFFECT_ARGS",
                        key,
                        "certain",
                        tuple(sorted({r.writer, writer})),
                        tuple(sorted({r.where, where})),
                        (
                            _accepted_step(r),
                            Citation("effect", writer, f"apply {short(args, 50)}", *where),
                        ),
                        f"the provider applied, under key {key}, {what}: the effect joined "
                        "to the intent by its key is not the intent (another request sent "
                        "under its key, or a key reused), so what was asked was not what "
                        "took effect",
                    )
                ]
        return []

    def _ask(self, r: Req) -> Optional[bytes]:
        """The ask digest of a request, or None when its arguments are unknown or have no
        canonical form."""
        args = self.args_of(r)
        if args is None:
            return None
        kept = loose(args) if r.identity is None else {n: args[n] for n in r.identity if n in args}
        try:
            return intent_digest(r.tool, kept, intent_scope(r.principal, ""))
        except CanonError:
            return None

    def groups(self) -> list[list]:
        """The asks whose requests span two canonical intents or more (the per-key pass
        judged each one alone): lists of (request, core digest), in acceptance order."""
        if self._groups is None:
            by_ask: dict[bytes, list] = {}
            for key in sorted(self.reqs):
                r = self.reqs[key]
                ask = self._ask(r)
                if ask is not None:
                    by_ask.setdefault(ask, []).append(r)
            self._groups = []
            for members in by_ask.values():
                if len(members) < 2:
                    continue
                cores = [(r, _core(r, self.args_of(r))) for r in members]
                if len({c for _, c in cores}) > 1:
                    cores.sort(key=lambda m: (m[0].writer, m[0].seq, m[0].key))
                    self._groups.append(cores)
        return self._groups

    def _took(self, keys: list[str], complete_effects: bool) -> dict[str, str]:
        """Which keys of one ask took effect: "certain" or "possible" (absent: no). The
        provider's records decide when any key of the ask has one; else ACKED is an effect
        and a dispatch a possible one (none when the effect lines are the whole ledger)."""
        outs = [self.outs.get(k, _NOTHING) for k in keys]
        if any(o.applies for o in outs):
            return {k: "certain" for k, o in zip(keys, outs) if o.applies}
        took = {k: "certain" for k, o in zip(keys, outs) if o.ack is not None}
        if not complete_effects:
            for k, o in zip(keys, outs):
                if o.dispatches and k not in took:
                    took[k] = "possible"
        return took

    def _settled_before(self, a: Req, b: Req) -> Optional[bool]:
        """Had a settled as done (ACKED) when b was accepted? True, False, or None when the
        log cannot order the two (a's ACKED and b's acceptance are two writers' lines)."""
        ack = self.outs.get(a.key, _NOTHING).ack
        if ack is None:
            return False
        if ack[0] != b.writer:
            return None
        return ack[1] < b.seq

    def _reasks(self, complete_effects: bool) -> list[Finding]:
        out = []
        for members in self.groups():
            f = self._reask(members, complete_effects)
            if f is not None:
                out.append(f)
        return out

    def _reask(self, members: list, complete_effects: bool) -> Optional[Finding]:
        """One I1 finding for an ask whose keys span several canonical intents, if two of
        them took effect as one intent (see the module docstring)."""
        took = self._took([r.key for r, _ in members], complete_effects)
        pairs, why = [], []
        for i, (a, ca) in enumerate(members):
            for b, cb in members[i + 1 :]:
                if ca == cb or a.key not in took or b.key not in took:
                    continue
                same_request = a.scope == b.scope and a.principal == b.principal
                ab, ba = self._settled_before(a, b), self._settled_before(b, a)
                if not same_request and (ab or ba):
                    continue  # the later was asked once the earlier was done: a new ask
                certain = took[a.key] == took[b.key] == "certain"
                if not certain:
                    why.append(
                        f"{b.key if took[b.key] != 'certain' else a.key} was dispatched "
                        "and no effect records say whether it took effect"
                    )
                if not same_request and (ab is None or ba is None):
                    certain = False
                    why.append(
                        f"whether {a.key} or {b.key} had settled as done when the "
                        "other was accepted cannot be told (two writers' lines: clocks "
                        "are not read)"
                    )
                if (a.identity is None or b.identity is None) and self._spelled(a, b):
                    certain = False
                    why.append(
                        "the lines carry no identity rule and the two requests' arguments "
                        'differ only in spelling ("2000" for 2000, an empty argument added): '
                        "one intent if the tool's schema says so (a writer that records "
                        "identity= says)"
                    )
                if a.principal is None or b.principal is None:
                    certain = False
                    why.append(
                        "the lines name no principal: two users' equal requests "
                        "look like one user's re-ask (a writer that records "
                        "principal= tells them apart)"
                    )
                pairs.append((a, b, certain))
        if not pairs:
            return None
        return self._reask_finding(pairs, why)

    def _reask_finding(self, pairs: list, why: list) -> Finding:
        reqs = list({id(r): r for a, b, _ in pairs for r in (a, b)}.values())
        reqs.sort(key=lambda r: (r.writer, r.seq, r.key))
        certain = any(c for _, _, c in pairs)
        steps, writers, where = [], set(), set()
        for r in reqs:
            o = self.outs.get(r.key, _NOTHING)
            steps.append(_accepted_step(r))
            if o.doubt is not None:
                w, _, at, state = o.doubt
                steps.append(Citation("transition", w, f"{r.key} -> {state}", *at))
            for w, at, _, args, _ in o.applies[:2]:
                steps.append(Citation("effect", w, f"apply under {r.key}", *at))
        steps.sort(key=lambda s: (s.file, s.line))  # in log order
        for s in steps:
            writers.add(s.writer)
            where.add((s.file, s.line))
        a, b = pairs[0][0], pairs[0][1]
        who = f"principal {a.principal}" if a.principal else "the caller"
        rule = "identity " + ",".join(a.identity) if a.identity is not None else "every argument"
        text = (
            f"{who} asked {short(a.tool, 30)} {short(self._kept(a), 50)} ({rule}) in "
            f"{len(reqs)} requests ({', '.join(sorted({short(r.scope, 40) for r in reqs}))}); "
            f"{b.key} was accepted while {a.key} was in doubt or given up (not settled as "
            "done), so it was the same ask again: one intent, which took effect more than once"
        )
        if not certain:
            text += "; possibly only: " + "; ".join(dict.fromkeys(why))
        return Finding(
            "I1",
            " + ".join(r.key for r in reqs),
            "certain" if certain else "possible",
            tuple(sorted(w for w in writers if w)),
            tuple(sorted(where)),
            tuple(steps),
            text,
        )

    def _spelled(self, a: Req, b: Req) -> bool:
        """Whether `a` and `b` are one ask only by `loose` spelling, not by their kept
        arguments' canonical forms."""
        try:
            return intent_digest(a.tool, self._kept(a), "") != intent_digest(
                b.tool, self._kept(b), ""
            )
        except CanonError:
            return True

    def _kept(self, r: Req) -> dict:
        args = self.args_of(r) or {}
        return args if r.identity is None else {n: args[n] for n in r.identity if n in args}

    def _answer(self, d: Req) -> list[Finding]:
        r = self.reqs.get(d.key)
        if r is None or (d.principal == r.principal and (d.principal or d.scope == r.scope)):
            return []
        if d.principal is not None and r.principal is not None:
            certainty = "certain"
            text = (
                f"principal {d.principal}'s request was answered with principal "
                f"{r.principal}'s record {r.key}: {d.principal} was told another's outcome, "
                "and its own effect was never made (a lost effect); an answer is never "
                "given across principals"
            )
        else:
            certainty = "possible"
            text = (
                f"the request of scope {short(d.scope, 40)} was answered with the record "
                f"{r.key} of scope {short(r.scope, 40)}, and "
                + (
                    "the lines name no principal"
                    if d.principal is None and r.principal is None
                    else "only one of the two lines names its principal"
                )
                + ": if the scopes are two users', the second was told the first's outcome "
                "and never got its own effect (a lost effect); a writer that records "
                "principal= says whose each request is"
            )
        return [
            Finding(
                "ANSWER_ACROSS",
                f"{r.key} <- {d.call_id}",
                certainty,
                tuple(sorted({r.writer, d.writer})),
                tuple(sorted({r.where, d.where})),
                (
                    _accepted_step(r),
                    Citation(
                        "proposal",
                        d.writer,
                        f"call {d.call_id}{_whose(d)}: {short(d.tool, 20)} "
                        f"{short(d.args, 40)} -> duplicate of {r.key}",
                        *d.where,
                    ),
                ),
                text,
            )
        ]


def _whose(r: Req) -> str:
    p = f" of {short(r.principal, 30)}" if r.principal is not None else ""
    return f"{p} in {short(r.scope, 40)}"


def _accepted_step(r: Req) -> Citation:
    return Citation(
        "proposal",
        r.writer,
        f"call {r.call_id}{_whose(r)}: {short(r.tool, 20)} {short(r.args, 40)} -> "
        f"accepted as {r.key}",
        *r.where,
    )


def _same(a, b) -> bool:
    """Two argument values, compared by their canonical forms (20 and 20.0 are one)."""
    if type(a) is type(b) and a == b:
        return True
    try:
        return (
            canonical_intent("", {"v": a}, "").digest == canonical_intent("", {"v": b}, "").digest
        )
    except CanonError:
        return a == b


def differs(r: Req, tool: Optional[str], args) -> str:
    """What an effect joined to request `r` by its key carries that `r` did not ask: another
    tool, or another value of an identity argument both name ("" when nothing differs).
    Arguments only one side names are not compared (a provider records more, or less)."""
    if tool is not None and tool.strip() != r.tool.strip():
        return f"tool {short(tool, 30)} where {short(r.tool, 30)} was asked"
    if not isinstance(args, dict) or UNRECORDED in args:
        return ""
    names = r.args if r.identity is None else r.identity
    bad = [n for n in names if n in r.args and n in args and not _same(r.args[n], args[n])]
    if not bad:
        return ""
    return ", ".join(
        f"{n}={short(args[n], 30)} where {short(r.args[n], 30)} was asked" for n in bad
    )


_SPELLS = frozenset("0123456789-in")  # how str() of an int or float starts ("inf", "nan")


def loose(args: dict) -> dict:
    """A request's arguments as a log without an identity rule might mean them: a string
    that spells a number exactly is that number, and an empty value ("", None, [], {}) is
    an omitted argument. Only for grouping possible re-asks (a finding it alone makes is
    "possible"): the tool's schema, which such a log does not carry, is what decides."""
    out = {}
    for name, value in args.items():
        if value is None or (isinstance(value, (str, list, dict)) and len(value) == 0):
            continue
        out[name] = _number(value) if isinstance(value, str) else value
    return out


def _number(text: str):
    """`text` as the int or float it spells exactly (the same text back), else `text`."""
    if not text or text[0] not in _SPELLS:  # no int's or float's str() starts so
        return text
    for kind in (int, float):
        try:
            n = kind(text)
        except ValueError:
            continue
        if str(n) == text:
            return n
    return text


def keys_of(f: Finding) -> list[str]:
    """The keys a finding of this pass names (``A + B``, ``KEY <- CALL``)."""
    return [k for k in f.key.split(" <- ")[0].split(" + ")]


def _core(r: Req, args: Optional[dict]) -> Optional[bytes]:
    """The canonical intent the per-key pass gave the request (tool, args, scope)."""
    try:
        return intent_digest(r.tool, args if args is not None else r.args, r.scope)
    except CanonError:
        return None


def judge(files: Sequence[str], read: Callable, complete_effects: bool = False) -> list[Finding]:
    """The findings of this pass. ``read(types)`` yields ``(typed event, file index, line)``
    for (at least) the events of `types`; it is called once for the proposals and effects,
    and once more for the transitions only when two canonical intents share an ask."""
    collecting = gc.isenabled()
    gc.disable()  # many small objects, no cycles: collection would only cost time
    try:
        a = Asks(files)
        for ev, fi, line in read(FIRST):
            a.feed(ev, fi, line, FIRST)
        if a.groups():
            for ev, fi, line in read(SECOND):
                a.feed(ev, fi, line, SECOND)
        return a.findings(complete_effects)
    finally:
        if collecting:
            gc.enable()


def listed(events: Sequence[tuple]) -> Callable:
    """`judge`'s ``read`` over ``(typed event, file index, line)`` already in memory."""

    def read(types):
        return (e for e in events if e[0].type in types)

    return read


class Collector:
    """Keeps the proposals and effects of the per-key pass's batches (the reader's typed
    events: nothing is decoded twice), for `judge`'s first reading, up to `limit` of them;
    past it, `events` is None and the logs are read again instead (memory stays bounded)."""

    __slots__ = ("events", "limit")

    def __init__(self, limit: int = 1 << 18):
        self.events: Optional[list] = []
        self.limit = limit

    def __call__(self, numbers, events, file_index: int) -> None:
        kept = self.events
        if kept is None:
            return
        kept.extend((e, file_index, n) for n, e in zip(numbers, events) if e.type in FIRST)
        if len(kept) > self.limit:
            self.events = None
