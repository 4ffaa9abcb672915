"""Intents: proposals and effects grouped by canonical intent. CANON, I1, P1, ORPHAN_EFFECT.

An intent is the digest of its call's canonical form (tool, args, scope: canonicalizer v1,
`toolcommit.model.canon`). Proposals name the implementation's key for it; effects are
attributed to intents by their own (tool, args, scope), to keys by ``key`` (else by
their ``idempotency_key``). Counting applies per key (P1) and per intent
(I1), and dispatches when no effect records exist (a possible I1), happens here; P3 and
FENCE between a key's chain and its applies are `toolcommit.checker.logs.chains`'.
"""

from __future__ import annotations

from toolcommit.checker.logs.chains import acked, chain_steps, check_effects
from toolcommit.checker.logs.findings import effect_text, form_hint
from toolcommit.checker.logs.store import (
    F_CLOSED,
    F_PROPOSED,
    F_RECORD,
    F_TRANSITIONS,
    Intent,
    Key,
    Store,
)
from toolcommit.checker.logs.writers import Writer
from toolcommit.model.canon import (
    CanonError,
    digest_of_form,
    fast_form_v1,
    flat_digest_v1,
    intent_digest,
    sorted_dump,
)

_MEMO_MAX = 1 << 14


class EventError(ValueError):
    """An event the core cannot use (its call has no canonical form); the driver adds
    file:line and turns it into an `InputError`."""

    line = 0  # the line of the event, when a batch was fed (`Conformance.feed_batch`)


def digest(st: Store, ev) -> bytes:
    """The canonical intent of the event's call. A bounded memo keyed by the exact
    sorted serialization of (tool, scope, args) spares the canonicalizer when an intent
    comes back (its effect, a duplicate proposal); on a miss, the canonicalizer's C fast
    path serves calls whose sorted serialization already is their v1 form."""
    tool, args, scope = ev.tool, ev.args, ev.scope
    dump = sorted_dump(tool, args, scope)
    form = None
    if dump is not None:
        d = st.memo.get(dump)
        if d is not None:
            return d
        d = flat_digest_v1(tool, args, scope, dump)
        if d is not None:
            form = dump
        else:
            form = fast_form_v1(tool, args, scope, dump)
            if form is not None:
                d = digest_of_form(form)
    if form is None:
        try:
            d = intent_digest(tool, args, scope)
        except CanonError as e:
            raise EventError(
                f"this call has no canonical form ({e}); the checker cannot "
                "tell which intent it is: fix the writer"
            ) from None
    if dump is not None:
        if len(st.memo) >= _MEMO_MAX:
            st.memo.clear()
        st.memo[dump] = d
    return d


# ----- proposals -------------------------------------------------------------------------
def proposal(st: Store, ev, w: Writer, loc: int) -> None:
    """An accepted proposal records its key and its intent. A second acceptance of a key
    (RACE or LEGAL) and a second key of an intent (CANON) are judged at the end, when every
    line is in, so that the order the lines arrived in does not matter."""
    d = digest(st, ev)
    if ev.decision != "accepted":
        return
    name = ev.key
    keys, intents = st.keys, st.intents
    if name not in keys and d not in intents:  # the common case: a new key, a new intent
        # (mirrored in logs/lane.c: change both)
        k = keys[name] = Key(name)
        k.accepted = 1
        k.flags = F_RECORD | F_PROPOSED
        seq = ev.seq
        k.accept_loc, k.accept_seq, k.digest = loc, seq, d
        ent = intents[d] = Intent(name, ev.epoch, loc, seq)
        ent.recorded = True
        return
    k = st.key(name)
    k.accepted += 1
    k.flags |= F_RECORD
    epoch, seq = ev.epoch, ev.seq
    rank = (w.name, seq)  # acceptances are ordered by writer and seq, never by line
    writer_of = st.found.writer_of
    if k.accepted == 1:
        k.accept_loc, k.accept_seq = loc, seq
    else:
        if k.reaccepts is None:
            k.reaccepts = []
        if rank < (writer_of(k.accept_loc), k.accept_seq):
            k.reaccepts.append((writer_of(k.accept_loc), k.accept_seq, k.accept_loc, ""))
            k.accept_loc, k.accept_seq = loc, seq
        else:
            k.reaccepts.append((w.name, seq, loc, ev.call_id))
    if not k.flags & F_PROPOSED or d < k.digest:
        k.digest = d
        k.flags |= F_PROPOSED
    ent = st.ent(d)
    if ent is None:
        ent = st.intents[d] = Intent(name, epoch, loc, seq)
        ent.recorded = True
        return
    if ent.effect_keys is not None:
        ent.effect_keys.discard(name)
        if not ent.effect_keys:
            ent.effect_keys = None
    if not ent.recorded:  # known from effects only, until now
        ent.recorded = True
        ent.key, ent.epoch, ent.loc, ent.seq = name, epoch, loc, seq
        return
    if (ent.key, ent.epoch) == (name, epoch):
        if rank < (writer_of(ent.loc), ent.seq):
            ent.loc, ent.seq = loc, seq
        return
    for i, m in enumerate(ent.more or ()):
        if (m[0], m[1]) == (name, epoch):
            if rank < (writer_of(m[2]), m[3]):
                ent.more[i] = (name, epoch, loc, seq)
            return
    if ent.more is None:
        ent.more = []
        ent.hint = form_hint(ev)
    ent.more.append((name, epoch, loc, seq))


# ----- effects -------------------------------------------------------------------------------
def effect(st: Store, ev, w: Writer, loc: int) -> None:
    """Count one effect record for its key (P1) and its intent (I1, judged at the end).

    The key is the effect's ``key``, else its ``idempotency_key``: a provider that logs
    only its idempotency key names the key that way (if no proposal or transition names
    it, the effect is an orphan unless its intent was recorded under another key)."""
    d = digest(st, ev)
    name = ev.key
    if name is None:
        name = ev.idempotency_key
    apply = ev.kind == "apply"
    k = st.keys.get(name)
    ent = st.intents.get(d)
    if (
        apply
        and type(k) is Key
        and type(ent) is Intent
        and not k.applies
        and not k.flags & F_CLOSED
        and k.flags & F_PROPOSED
        and ent.recorded
        and ent.key == name
        and not ent.applies
        and ent.apply_locs is None
    ):
        # the common case: the first apply of an open key, for the intent it proposed
        # (what `_count_apply` and the general path below would do, with nothing to judge;
        # mirrored in logs/lane.c: change both)
        eid = ev.effect_id
        k.applies = 1
        k.apply_loc = loc
        k.apply_id = hash(eid) if eid is not None else None
        fence = ev.fence
        if fence is not None and (k.min_apply_fence is None or fence < k.min_apply_fence):
            k.min_apply_fence, k.min_apply_loc = fence, loc
        ent.applies = 1
        ent.apply_locs = [loc]
        return
    ent = st.ent(d)
    if ent is None:
        ent = st.intents[d] = Intent("", ev.epoch, loc)
    k = st.key(name)
    if k.digest is None or (not k.flags & F_PROPOSED and d < k.digest):
        k.digest = d
    if not ent.recorded or (
        name != ent.key and not (ent.more and any(m[0] == name for m in ent.more))
    ):
        if ent.effect_keys is None:
            ent.effect_keys = set()
        ent.effect_keys.add(name)
    if not apply:
        k.compensates += 1
        ent.compensates += 1
    elif not _count_apply(st, ev, name, k, loc):
        return  # the same effect, exported twice
    else:
        ent.applies += 1
        if ent.applies == 2 and not ent.hint:
            ent.hint = form_hint(ev)
        if ent.apply_locs is None:
            ent.apply_locs = [loc]
        elif len(ent.apply_locs) < 8:
            ent.apply_locs.append(loc)
    if k.flags & F_CLOSED and st.packing:  # an effect after its key settled:
        st.pack(name, k)  # pack the key again


def _count_apply(st: Store, ev, name: str, k: Key, loc: int) -> bool:
    """Count an apply for key `k` (P1 from the second); False if it repeats the key's
    first apply's ``effect_id`` (one effect, exported twice)."""
    eid = ev.effect_id
    if eid is not None and k.apply_id is not None and hash(eid) == k.apply_id:
        return False
    k.applies += 1
    if k.applies == 1:
        k.apply_loc = loc
        k.apply_id = hash(eid) if eid is not None else None
    else:
        st.found.add(
            "P1",
            name,
            "certain",
            f"the provider applied {k.applies} effects for the one key "
            f"{name}: effects grouped by semantic key must number at most one",
            [("effect", "", "apply", k.apply_loc), ("effect", ev.writer, effect_text(ev), loc)],
            update=True,
        )
    fence = ev.fence
    if fence is not None and (k.min_apply_fence is None or fence < k.min_apply_fence):
        k.min_apply_fence, k.min_apply_loc = fence, loc
    if k.flags & F_CLOSED:
        check_effects(st, name, k, loc)
    return True


# ----- the end of the log -------------------------------------------------------------------
def finish(st: Store) -> None:
    """The judgements that need every line: NO_PROPOSAL, ORPHAN_EFFECT, CANON, I1 (from
    applies, else from ACKED or dispatch counts)."""
    found = st.found
    dispatches: dict[bytes, list] = {}  # digest -> [dispatches, acked, dispatch locs]
    # packed keys are skipped: closed by a transition, so recorded; their intent has this
    # one key
    for name, k in st.objects(st.keys, bytes):
        if k.flags & F_TRANSITIONS and not k.accepted:
            found.add(
                "NO_PROPOSAL",
                name,
                "possible",
                "the key has transitions but no accepted proposal: its proposal line "
                "was lost (or never written), so its intent is unknown and the log "
                "cannot show that it took effect at most once",
                chain_steps(k)[:1] or [("note", "", "no proposal", k.last_loc)],
            )
        if (k.applies or k.compensates) and not k.flags & F_RECORD:
            ent = st.ent(k.digest) if k.digest is not None else None
            if ent is None or not ent.recorded:
                _orphan(st, name, k.apply_loc or k.last_loc)
        if k.digest is not None and (k.dispatches or acked(k)):
            n = dispatches.setdefault(k.digest, [0, 0, []])
            n[0] += k.dispatches
            n[1] += acked(k)
            if k.dispatch_loc and len(n[2]) < 8:
                n[2].append(k.dispatch_loc)
    # packed intents are skipped: with their one key, at most one apply or dispatch unless
    # an effect record decides
    for d, ent in st.objects(st.intents, str):
        ordered = _ordered(st, ent)
        label = " + ".join(ordered) if ordered else "(no key)"
        if ent.more:
            _canon(st, ent)
        if ent.applies >= 2:
            found.add(
                "I1",
                label,
                "certain",
                f"the provider applied {ent.applies} effects for one canonical intent "
                f"({ent.hint or 'one call'}); an intent may take effect at most once, "
                "compensated or not",
                [("effect", "", "apply", x) for x in ent.apply_locs],
            )
        if ent.applies or ent.compensates:
            continue  # the provider's records decide
        n, a, locs = dispatches.get(d, (0, 0, ()))
        if a >= 2:
            found.add(
                "I1",
                label,
                "certain",
                f"{a} keys of one canonical intent were acknowledged by the "
                "provider (ACKED): one intent took effect more than once",
                [("transition", "", "dispatched", x) for x in locs],
            )
        elif n >= 2 and not st.complete_effects:
            found.add(
                "I1",
                label,
                "possible",
                f"one canonical intent was dispatched {n} times and no "
                "effect records say how many took effect: possibly more than one",
                [("transition", "", "dispatched", x) for x in locs],
            )
    for name, k in st.objects(st.keys, bytes):
        if k.digest is None and k.dispatches >= 2 and not k.applies and not st.complete_effects:
            found.add(
                "I1",
                name,
                "possible",
                f"the key was dispatched {k.dispatches} times and no effect records "
                "say how many took effect: possibly more than one",
                [("transition", "", "dispatched", k.dispatch_loc)],
            )


def _ordered(st: Store, ent: Intent) -> list[str]:
    """The intent's keys in an order independent of how lines interleave: accepted keys
    by (writer, seq) of their first acceptance, then keys only its effects name, by name."""
    accepted = sorted(ent.keys(), key=lambda m: (st.found.writer_of(m[2]), m[3], m[0]))
    names = list(dict.fromkeys(m[0] for m in accepted))
    return names + sorted(set(ent.effect_keys or ()) - set(names))


def _canon(st: Store, ent: Intent) -> None:
    """CANON: keys of one canonical intent accepted in the same epoch."""
    by_epoch: dict = {}
    for m in sorted(ent.keys(), key=lambda m: (st.found.writer_of(m[2]), m[3], m[0])):
        by_epoch.setdefault(m[1], []).append(m)
    for group in by_epoch.values():
        first = group[0]
        for name, _, loc, _ in group[1:]:
            if name == first[0]:
                continue
            st.found.add(
                "CANON",
                name,
                "certain",
                f"keys {first[0]} and {name} are one canonical intent (canonicalizer "
                f"v1: {ent.hint}) in the same epoch, yet the log accepted both: the "
                "implementation's canonicalization is too literal, so one intent can "
                "take effect twice",
                [
                    ("proposal", "", f"key {first[0]} accepted", first[2]),
                    ("proposal", "", f"key {name} accepted", loc),
                ],
            )


def _orphan(st: Store, name: str, loc: int) -> None:
    st.found.add(
        "ORPHAN_EFFECT",
        name,
        "certain",
        "the provider applied an effect that no proposal or transition in the log "
        "accounts for: something reached the provider around the intent log",
        [("effect", "", "apply", loc)],
    )
