"""toolcommit.runtime.shims: `effectful` and its errors, by their public name (the module is
`toolcommit.checker.runtime.shims`; these are its objects)."""
from toolcommit.checker.runtime.shims import (Conflict, EffectError, GaveUp, InDoubt,
                                              current_ticket, effectful, guard)

__all__ = ["effectful", "guard", "current_ticket", "EffectError", "Conflict", "GaveUp", "InDoubt"]
