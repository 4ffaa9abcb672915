"""Whose an intent is (a mixin of the semantics builder; knob `principal`, property OWN).

Every proposal belongs to a principal (`u1` unless the instance names another). Under
`principal=part` the principal is in every key and in what a re-ask meets (`whose`), so two
principals share no key and no sibling; under `left_out` equal arguments of two principals
may derive one key (`intent_id=conversation`) or meet as siblings (`reask=hold`), and a
call of one may then be answered with a record another's call made. OWN's monitor flag
(`bad.OWN`) is set by such an answer: a duplicate decision, a replay under the key, or a
hold's answer, whose record was made by another principal's call. Where a key serves calls
of several principals, `by.<key>` remembers whose call recorded it; with one principal per
instance nothing here adds a variable (every such instance builds the same System).
"""

from __future__ import annotations

from .expr import FALSE, TRUE, Expr, ite


class Principals:
    """`by.<key>`, and OWN's flag on answers across principals; mixed into the builder."""

    def _recorders(self, k: int) -> set[str]:
        """The principals whose calls may record key k."""
        return {p.principal for p in self.props if k in self._keys_of(p)}

    def declare_by(self) -> None:
        """`by.<key>` (whose call recorded it) for each key calls of several principals
        may record."""
        names = list(self.inst.principals())
        self.by = {
            k: self.var(f"by.{key.name}", len(names), 0, names, "by", (key.name,))
            for k, key in enumerate(self.keys)
            if len(self._recorders(k)) > 1
        }

    def by_update(self, p, k: int) -> dict:
        """p's call records key k: remember whose it is, where that can vary."""
        if k not in self.by:
            return {}
        return {self.by[k].name: self.inst.principals().index(p.principal)}

    def across(self, p, k: int) -> Expr:
        """Key k's record was made by a call of a principal other than p's."""
        if k in self.by:
            return self.by[k] != self.inst.principals().index(p.principal)
        return TRUE if p.principal not in self._recorders(k) else FALSE

    def own_flag(self, p, k: int) -> dict:
        """OWN's flag, set when p's call is answered with key k's record (a duplicate, a
        replay under k, or a hold's answer from k) and that record is another's."""
        cond = self.across(p, k)
        if cond is FALSE:
            return {}
        flag = self.bad["OWN"]
        return {flag.name: 1 if cond is TRUE else ite(cond, 1, flag)}
