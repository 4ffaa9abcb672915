"""toolcommit.runtime.design: the design the intent log follows, by its public name (the
module is `toolcommit.checker.runtime.design`; these are its objects)."""
from toolcommit.checker.runtime.design import (SHIPPED, Design, DesignError, after_read,
                                               after_replay, load, may_read, unknown_action)

__all__ = ["SHIPPED", "Design", "DesignError", "load", "unknown_action", "may_read",
           "after_read", "after_replay"]
