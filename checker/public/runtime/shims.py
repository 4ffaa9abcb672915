"""toolcommit.runtime.shims: `effectful` and its errors, by their public name (the module is
`toolcommit.checker.runtime.shims`; these are its objects)."""
from toolcommit.checker.runtime.shims import (Answered, Conflict, EffectError, GaveUp, Held,
                                              InDoubt, aguard,
                                              current_ticket, effectful, guard, recover_settle,
                                              register, tell)

__all__ = ["effectful", "guard", "aguard", "current_ticket", "EffectError", "Conflict",
           "GaveUp", "InDoubt", "Held", "Answered", "recover_settle", "register", "tell"]
