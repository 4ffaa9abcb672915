"""User intents: which proposals serve which user request, which keys the implementation
lets them share, and the effect counts I1, I1net and FULFIL read (a mixin of the semantics
builder).

An instance has one user intent, `i1`, unless it gives the user a second request
(`new_intents` budget): then the fault `new_intent` may fire (the user asks for the same
tool, arguments and scope again: two refunds of 20 on one checkout, for two items) and the
proposals of intent `i2` may be emitted. The log and the provider see keys, not intents:
with `intent_id=conversation` the second request derives the first one's key (the log
refuses it as a duplicate, the provider answers it from the first request's saved
response); with `intent_id=minted` the runtime's per-request id is in the scope, so the
second request gets its own key while the model's retries (same intent) still share one.

Groups. Intents whose proposals share a key form a group (found statically from the derived
keys); an effect on a shared key belongs to no single one of them, so the properties count
per group: the effects on the group's keys against the number of its intents the user has
asked so far (the first request from the start, another once `new_intent` fired). With one
intent there is one group holding every key, asked once, and every expression is exactly the
one-intent one (same System, same state counts).
"""

from __future__ import annotations

from dataclasses import dataclass

from .expr import FALSE, Expr, all_of, any_of, in_, not_, sum_
from .instance import FIRST_INTENT, FIRST_PRINCIPAL
from .values import GAVE_UP, P_DUP, P_RECORDED, UNSETTLED, r


def ite_bool(c: Expr, a: Expr, b: Expr) -> Expr:
    """(c and a) or (not c and b), for boolean expressions."""
    return any_of(all_of(c, a), all_of(not_(c), b))


@dataclass(frozen=True)
class Group:
    """Intents that share keys, their keys (key indices, in key order) and proposals."""

    intents: tuple[str, ...]
    keys: tuple[int, ...]
    proposals: tuple[str, ...]


class Intents:
    """Intent flags, the `new_intent` action and the per-group effect counts; mixed into the
    builder (uses its variables)."""

    def declare_intents(self) -> None:
        """One flag per later intent (the user has asked it), where the instance has both a
        later intent and a `new_intents` budget."""
        later = self.inst.intents()[1:]
        self.asked = (
            {i: self.var(f"asked.{i}", 2, family="asked", index=(i,)) for i in later}
            if self.has("new_intents")
            else {}
        )

    def asked_from_start(self, i: str) -> bool:
        """The first request's intent, and an intent of another principal (who asks at any
        time, in a request of their own), are asked from the start."""
        return i == FIRST_INTENT or any(
            p.intent == i and p.principal != FIRST_PRINCIPAL for p in self.props
        )

    def several_intents(self) -> bool:
        return len(self.inst.intents()) > 1

    def intent_trigger(self, p) -> Expr:
        """`after_new_intent`: the user asked the proposal's intent (never for the first)."""
        if p.intent == FIRST_INTENT:
            raise ValueError(
                f"proposal {p.name}: the first intent is asked from the start; "
                "after_new_intent needs another intent"
            )
        flag = self.asked.get(p.intent)
        return flag == 1 if flag is not None else FALSE

    def new_intent(self) -> None:
        for i, flag in self.asked.items():
            self.act(
                "new_intent",
                {"intent": i},
                all_of(flag == 0, self.budget["new_intents"] > 0),
                {flag.name: 1, **self.spend("new_intents")},
                fault=True,
            )

    # ----- groups -------------------------------------------------------------------
    def groups(self) -> tuple[Group, ...]:
        """Intents joined when a key serves proposals of both (union-find over keys);
        computed once per builder (the keys are derived before any action is built)."""
        if getattr(self, "_groups", None) is None:
            self._groups = self._find_groups()
        return self._groups

    def _find_groups(self) -> tuple[Group, ...]:
        root = {i: i for i in self.inst.intents()}

        def find(i):
            while root[i] != i:
                i = root[i]
            return i

        owner: dict[int, str] = {}
        for p in self.props:
            for k in self._keys_of(p):
                if k in owner:
                    a, b = find(owner[k]), find(p.intent)
                    if a != b:
                        root[b] = a
                else:
                    owner[k] = p.intent
        out = []
        for head in dict.fromkeys(find(i) for i in self.inst.intents()):
            ints = tuple(i for i in self.inst.intents() if find(i) == head)
            keys = tuple(
                k for k in range(len(self.keys)) if find(owner.get(k, FIRST_INTENT)) == head
            )
            props = tuple(p.name for p in self.props if p.intent in ints)
            out.append(Group(ints, keys, props))
        return tuple(out)

    def _keys_of(self, p) -> list[int]:
        """p's key, and the next-epoch keys a late replay (`next_key`) or the human gate's
        new attempt (`next_of`) derives from it: they serve p's intent too."""
        k = self.key_of[p.name]
        return (
            [k]
            + ([self.next_key[p.name]] if p.name in self.next_key else [])
            + ([self.next_of[k]] if k in self.next_of else [])
        )

    def asked_count(self, g: Group):
        """How many of the group's intents have been asked so far: the int 1 for the first
        intent alone, else those asked from the start plus an expression over the flags."""
        if g.intents == (FIRST_INTENT,):
            return 1
        flags = [self.asked[i] for i in g.intents if i in self.asked]
        first = sum(1 for i in g.intents if self.asked_from_start(i))
        if not flags:
            return first
        return sum_(flags) + first if first else sum_(flags)

    def group_of(self, k: int) -> Group:
        """The group holding key k."""
        return next(g for g in self.groups() if k in g.keys)

    def cancelled_in(self, g: Group) -> Expr:
        """The user cancelled a record of the group's intents (under any of its keys)."""
        return any_of(*[self.cancelled[k] == 1 for k in g.keys if self.cancelled[k] is not None])

    def intent_cancelled(self, k: int) -> Expr:
        """P3's reading: the intent key k serves was cancelled, under k or another key of
        its group (a revised or re-proposed call's key included)."""
        return self.cancelled_in(self.group_of(k))

    def _sums(self, g: Group) -> tuple[Expr, Expr]:
        total = sum_([self.applied[k] for k in g.keys])
        comp = sum_([self.comp[k] for k in g.keys if self.comp[k] is not None])
        return total, comp

    # ----- what the properties read -------------------------------------------------
    def effects_bounded(self, net: bool) -> Expr:
        """I1 (gross) or I1net: per group, effects (net of compensation) at most the number
        of its intents asked so far."""
        out = []
        for g in self.groups():
            total, comp = self._sums(g)
            n = self.asked_count(g)
            out.append(total <= comp + n if net else total <= n)
        return all_of(*out)

    def each_applied_once(self) -> Expr:
        """Per group, exactly one effect per intent asked so far (the happy outcome)."""
        out = []
        for g in self.groups():
            total, _ = self._sums(g)
            out.append(total == self.asked_count(g))
        return all_of(*out)

    def fulfilled(self) -> Expr:
        """FULFIL's end-state predicate, per group: each intent asked is applied exactly
        once (net), or given up visibly: a record of the group parked DEAD_LETTER,
        COMPENSATED or cancelled, none left unsettled, no re-ask of the user after a give-up
        refused as a duplicate of the parked record, and (with several intents in the group)
        no intent swallowed: refused as a duplicate with none of its proposals recorded.
        A re-ask whose key is a new attempt the human gate may approve is not refused: it is
        folded into that attempt, and once that attempt is parked the log would give the
        re-ask the epoch after it, which the instance's fixed epochs cannot show."""
        return all_of(*[self._group_fulfilled(g) for g in self.groups()])

    def _group_fulfilled(self, g: Group) -> Expr:
        total, comp = self._sums(g)
        n = self.asked_count(g)
        visible, stuck = self._visible(g), self._stuck(g)
        props = [p for p in self.props if p.name in g.proposals]
        approved = set(self.next_of.values())  # the human gate's new attempts
        refused = any_of(
            *[
                self.prop[p.name] == P_DUP
                for p in props
                if p.trigger == "after_give_up" and self.key_of[p.name] not in approved
            ]
        )
        cancel = self.cancelled_in(g)
        if isinstance(n, int) and n == 1:  # the first intent alone: as with one intent
            short, swallowed, exact = total == comp, FALSE, total == comp + 1
        else:
            short, swallowed, exact = total < comp + n, self._swallowed(g), total == comp + n
        if cancel is not FALSE:  # a cancelled intent: no effect (the cancel is its give-up)
            exact = all_of(not_(cancel), exact)
            short = ite_bool(cancel, total == comp, short)
        return any_of(exact, all_of(short, visible, not_(stuck), not_(refused), not_(swallowed)))

    def _visible(self, g: Group) -> Expr:
        """A record of the group parked, or a call of it answered by a hold (`reask`)."""
        return any_of(
            *[in_(self.rec[k], r(*GAVE_UP)) for k in g.keys],
            self.answered_in([p for p in self.props if p.name in g.proposals]),
        )

    def _stuck(self, g: Group) -> Expr:
        return any_of(*[in_(self.rec[k], r(*UNSETTLED)) for k in g.keys])

    def visible(self) -> Expr:
        """VISIBLE's end-state predicate, per group: no record left unsettled, and each
        intent asked applied, or the group given up visibly (a parked record)."""
        out = []
        for g in self.groups():
            total, comp = self._sums(g)
            out.append(
                all_of(
                    not_(self._stuck(g)),
                    any_of(total >= comp + self.asked_count(g), self._visible(g)),
                )
            )
        return all_of(*out)

    def applied_at_least_once(self) -> Expr:
        """ALO's end-state predicate, per group: effects at least the intents asked, unless
        the user cancelled."""
        out = []
        for g in self.groups():
            total, _ = self._sums(g)
            cancel = self.cancelled_in(g)
            out.append(any_of(total >= self.asked_count(g), cancel))
        return all_of(*out)

    def _swallowed(self, g: Group) -> Expr:
        """Some intent of the group refused as a duplicate with none of its calls recorded,
        not by a hold's answer (which tells the user the earlier outcome: see `_visible`)."""
        out = []
        for i in g.intents:
            mine = [p for p in self.props if p.intent == i]
            out.append(
                all_of(
                    any_of(*[self.prop[p.name] == P_DUP for p in mine]),
                    not_(self.answered_in(mine)),
                    *[self.prop[p.name] != P_RECORDED for p in mine],
                )
            )
        return any_of(*out)
