"""Intents: proposals and effects grouped by canonical intent. CANON, I1, P1, ORPHAN_EFFECT.

An intent is the digest of its call's canonical form (tool, args, scope: canonicalizer v1,
`toolcommit.model.canon`). Proposals name the implementation's key for it; effects are
attributed to intents by their own (tool, args, scope), to keys by ``key`` (else by an
``idempotency_key`` that names a logged key). Counting applies per key (P1) and per intent
(I1), and dispatches when no effect records exist (a possible I1), happens here; P3 and
FENCE between a key's chain and its applies are `toolcommit.checker.logs.chains`'.
"""
from __future__ import annotations

from typing import Optional

from toolcommit.model.canon import CanonError, digest_of_form, fast_form_v1, intent_digest
from toolcommit.model.canon import sorted_dump

from toolcommit.checker.logs.chains import check_effects
from toolcommit.checker.logs.findings import effect_text, form_hint
from toolcommit.checker.logs.store import F_RECORD, Intent, Key, Store
from toolcommit.checker.logs.writers import Writer

_MEMO_MAX = 1 << 14


class EventError(ValueError):
    """An event the core cannot use (its call has no canonical form); the driver adds
    file:line and turns it into an `InputError`."""


def digest(st: Store, ev: dict) -> bytes:
    """The canonical intent of the event's call. A bounded memo keyed by the exact
    sorted serialization of (tool, scope, args) spares the canonicalizer when an intent
    comes back (its effect, a duplicate proposal); on a miss, the canonicalizer's C fast
    path serves calls whose sorted serialization already is their v1 form."""
    tool, args, scope = ev["tool"], ev["args"], ev["scope"]
    dump = sorted_dump(tool, args, scope)
    if dump is not None:
        d = st.memo.get(dump)
        if d is not None:
            return d
        form = fast_form_v1(tool, args, scope, dump)
        if form is not None:
            d = digest_of_form(form)
    if dump is None or form is None:
        try:
            d = intent_digest(tool, args, scope)
        except CanonError as e:
            raise EventError(f"this call has no canonical form ({e}); the checker cannot "
                             "tell which intent it is: fix the writer") from None
    if dump is not None:
        if len(st.memo) >= _MEMO_MAX:
            st.memo.clear()
        st.memo[dump] = d
    return d


# ----- proposals -------------------------------------------------------------------------
def proposal(st: Store, ev: dict, w: Writer, loc: int) -> None:
    """An accepted proposal records its key (RACE / LEGAL if accepted twice) and its intent
    (CANON if another key of this intent was accepted in the same epoch)."""
    d = digest(st, ev)
    if ev["decision"] != "accepted":
        return
    name = ev["key"]
    k = st.key(name)
    k.accepted += 1
    k.flags |= F_RECORD
    epoch = ev.get("epoch")
    if k.accepted == 1:
        k.accept_loc = loc
    else:
        closed = k.chain is None
        st.found.add("LEGAL" if closed else "RACE", name, "certain",
                     ("the key was accepted again after it had settled: a second record "
                      "overwrote the first, so the intent can take effect twice") if closed else
                     ("two proposals were accepted for one key: the log inserted twice "
                      "(check-then-insert without a uniqueness constraint)"),
                     [("proposal", "", "key accepted (first proposal)", k.accept_loc),
                      ("proposal", ev["writer"], f"call {ev['call_id']}: accepted again", loc)])
    if k.digest is None:
        k.digest = d
    ent = st.ent(d)
    if ent is None:
        ent = st.intents[d] = Intent(name, epoch, loc)
        ent.recorded = True
        return
    if not ent.recorded:          # known from effects only, until now
        ent.recorded = True
        ent.key, ent.epoch, ent.loc = name, epoch, loc
        return
    if ent.key == name or (ent.more and any(m[0] == name for m in ent.more)):
        return
    same = [(kn, ep, lc) for kn, ep, lc in [(ent.key, ent.epoch, ent.loc)] + (ent.more or [])
            if ep == epoch]
    if ent.more is None:
        ent.more = []
    ent.more.append((name, epoch, loc))
    if same:
        first = same[0]
        st.found.add("CANON", name, "certain",
                     f"keys {first[0]} and {name} are one canonical intent (canonicalizer v1: "
                     f"{form_hint(ev)}) in the same epoch, yet the log accepted both: the "
                     "implementation's canonicalization is too literal, so one intent can "
                     "take effect twice",
                     [("proposal", "", f"key {first[0]} accepted", first[2]),
                      ("proposal", ev["writer"],
                       f"call {ev['call_id']}: key {name} accepted", loc)])


# ----- effects -------------------------------------------------------------------------------
def effect(st: Store, ev: dict, w: Writer, loc: int) -> None:
    """Count one effect record for its key (P1) and its intent (I1)."""
    name = _count(st, ev, loc)
    if name is not None and st.packing:     # an effect after its key settled:
        k = st.keys.get(name)               # pack the key again
        if type(k) is Key and k.chain is None:
            st.pack(name, k)


def _count(st: Store, ev: dict, loc: int) -> Optional[str]:
    d = digest(st, ev)
    name = ev.get("key")
    if name is None:
        idem = ev.get("idempotency_key")
        if idem is not None and idem in st.keys:
            name = idem
    apply = ev["kind"] == "apply"
    fence = ev.get("fence")
    ent = st.ent(d)
    if ent is None:
        ent = st.intents[d] = Intent(name or "", ev.get("epoch"), loc)
    if name is not None:
        k = st.key(name)
        if k.digest is None:
            k.digest = d
        if not apply:
            k.compensates += 1
        else:
            eid = ev.get("effect_id")
            if eid is not None and k.apply_id is not None and hash(eid) == k.apply_id:
                return name                       # the same effect, exported twice
            k.applies += 1
            if k.applies == 1:
                k.apply_loc = loc
                k.apply_id = hash(eid) if eid is not None else None
            else:
                st.found.add("P1", name, "certain",
                             f"the provider applied {k.applies} effects for the one key "
                             f"{name}: effects grouped by semantic key must number at most one",
                             [("effect", "", "apply", k.apply_loc),
                              ("effect", ev["writer"], effect_text(ev), loc)], update=True)
            if fence is not None and (k.min_apply_fence is None or fence < k.min_apply_fence):
                k.min_apply_fence, k.min_apply_loc = fence, loc
            if k.chain is None:
                check_effects(st, name, k, loc)
    if not apply:
        ent.compensates += 1
        return name
    ent.applies += 1
    if ent.apply_locs is None:
        ent.apply_locs = [loc]
    elif len(ent.apply_locs) < 8:
        ent.apply_locs.append(loc)
    if ent.applies >= 2:
        st.found.add("I1", _intent_id(st, ent), "certain",
                     f"the provider applied {ent.applies} effects for one canonical intent "
                     f"({form_hint(ev)}); an intent may take effect at most once, "
                     "compensated or not",
                     [("effect", "", "apply", x) for x in ent.apply_locs[:-1]]
                     + [("effect", ev["writer"], effect_text(ev), loc)],
                     label=_label(ent, name), update=True)
    return name


# ----- the end of the log -------------------------------------------------------------------
def finish(st: Store) -> None:
    """ORPHAN_EFFECT for effects no record accounts for; I1 from ACKED or dispatch counts
    where the provider left no effect records."""
    for name, k in st.keys.items():
        if type(k) is bytes:      # packed: closed by a transition, so recorded
            continue
        if (k.applies or k.compensates) and not k.flags & F_RECORD:
            ent = st.ent(k.digest) if k.digest is not None else None
            if ent is None or not ent.recorded:
                _orphan(st, name, k.apply_loc or k.last_loc)
    for ent in st.intents.values():
        if type(ent) is str:      # packed with its one key: recorded, and at most one
            continue              # dispatch unless an effect record decides
        if ent.applies and not ent.recorded and not ent.key:
            _orphan(st, f"(no key) intent first applied at "
                        f"{':'.join(map(str, st.found.where(ent.apply_locs[0])))}",
                    ent.apply_locs[0])
        if ent.applies or ent.compensates:
            continue                        # the provider's records decide
        label, iid = _label(ent, None), _intent_id(st, ent)
        if ent.acked >= 2:
            st.found.add("I1", iid, "certain",
                         f"{ent.acked} keys of one canonical intent were acknowledged by the "
                         "provider (ACKED): one intent took effect more than once",
                         [("transition", "", "dispatched", x) for x in ent.dispatch_locs or ()],
                         label=label)
        elif ent.dispatches >= 2:
            st.found.add("I1", iid, "possible",
                         f"one canonical intent was dispatched {ent.dispatches} times and no "
                         "effect records say how many took effect: possibly more than one",
                         [("transition", "", "dispatched", x) for x in ent.dispatch_locs or ()],
                         label=label)
    for name, k in st.keys.items():
        if type(k) is not bytes and k.digest is None and k.dispatches >= 2 \
                and not k.applies:
            st.found.add("I1", name, "possible",
                         f"the key was dispatched {k.dispatches} times and no effect records "
                         "say how many took effect: possibly more than one",
                         [("transition", "", "dispatched", k.dispatch_loc)])


def _orphan(st: Store, name: str, loc: int) -> None:
    st.found.add("ORPHAN_EFFECT", name, "certain",
                 "the provider applied an effect that no proposal or transition in the log "
                 "accounts for: something reached the provider around the intent log",
                 [("effect", "", "apply", loc)])


def _intent_id(st: Store, ent: Intent) -> str:
    return ent.key or "(no key) intent at %s:%d" % st.found.where(ent.loc)


def _label(ent: Intent, name: Optional[str]) -> str:
    keys = [ent.key] + [m[0] for m in ent.more or ()]
    keys = [k for k in keys if k]
    if name and name not in keys:
        keys.append(name)
    return " + ".join(keys) if keys else "(no key)"
