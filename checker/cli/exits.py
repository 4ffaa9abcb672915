"""Exit codes of the model-checking commands (`check`, `prove`, `ask`, `design`): the CLI
maps a typed verdict to a process status; verdict types carry none.

`ask` and `design` answer a question rather than judge one claim: 0 an answer that holds
was found (a cell of the grid; a design), 1 none holds (every judged cell, every design
searched, violated), 3 undecided (a limit left the grid, or the search, open), 2 usage.
`ASK_DESIGN_CODES` is that table, as `--help` prints it.

2 (bad usage or input) and 4 (internal error) are `toolcommit.checker.cli.main`'s.
"""

from __future__ import annotations

from toolcommit.checker.engines.verdict import Status

EXIT = {Status.HOLDS: 0, Status.VIOLATED: 1, Status.UNKNOWN: 3}

ASK_DESIGN_CODES = (
    "exit codes: 0 an answer that holds was found, 1 none holds, 2 bad usage or input, "
    "3 undecided (a limit left the grid or the search open)"
)


def answer_exit(cells) -> int:
    """`ask`'s exit code from its grid's cell statuses (None: a cell not judged): 3 if a
    cell is unknown (the grid is not whole: undecided), else 0 if a cell holds, else 1."""
    statuses = set(cells)
    if Status.UNKNOWN in statuses:
        return 3
    return 0 if Status.HOLDS in statuses else 1
