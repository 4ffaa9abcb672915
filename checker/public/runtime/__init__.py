"""toolcommit.runtime: the intent log as a library a runtime imports (the public name).

The library lives in `toolcommit.checker.runtime` (the folder `checker/runtime/`); this
package re-exports its names, the same objects, so ``from toolcommit.runtime import
IntentLog`` and ``from toolcommit.checker.runtime import IntentLog`` give one class.
`toolcommit.runtime.shims` has `effectful`, `toolcommit.runtime.frameworks` the Pydantic AI
and LangGraph wrappers (optional extra ``frameworks``), `toolcommit.runtime.wire` the key on
the wire (`instrument`).

>>> import toolcommit.checker.runtime as lib
>>> IntentLog is lib.IntentLog and sorted(__all__) == sorted(lib.__all__)
True
"""
from toolcommit.checker.runtime import *  # noqa: F401,F403 - every public name, one copy
from toolcommit.checker.runtime import __all__ as _names

__all__ = list(_names)
