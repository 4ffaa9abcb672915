"""Exit codes of the model-checking commands (`check`, `prove`, `ask`): the CLI maps a
typed verdict to a process status; verdict types carry none.

2 (bad usage or input) and 4 (internal error) are `toolcommit.checker.cli.main`'s.
"""

from __future__ import annotations

from toolcommit.checker.engines.verdict import Status

EXIT = {Status.HOLDS: 0, Status.VIOLATED: 1, Status.UNKNOWN: 3}
