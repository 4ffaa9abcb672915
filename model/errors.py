"""One exception tree, named after meanings.

Every error the user can cause is a `ToolcommitError`; the CLI prints its message on one
line and exits 2. An `InternalError` is a bug in toolcommit (for example, two engines that
disagree) and is never shown as a verification result. A `ResourceError` (and Python's
`MemoryError`) is a run the machine could not finish: exit 5, never a verdict.
"""


class ToolcommitError(Exception):
    """Base of every error toolcommit raises on purpose."""


class UsageError(ToolcommitError):
    """Bad names or options on the command line or in a config: says what is valid."""


class InputError(ToolcommitError):
    """Unusable input file: says what is wrong and where (file:line)."""

    def __init__(self, message: str, path: str = "", line: int = 0):
        where = f"{path}:{line}: " if path and line else f"{path}: " if path else ""
        super().__init__(where + message)
        self.path, self.line = path, line


class InternalError(ToolcommitError):
    """A bug in toolcommit, such as a counterexample that does not replay."""


class ResourceError(ToolcommitError):
    """The run could not finish for want of a resource (memory, a cluster worker that was
    lost): says which and what to do. Nothing was judged."""


class OutputError(ToolcommitError):
    """Output that cannot be written (a file, a folder or stdout): says which path, why, and
    what to do. Nothing partial is left where the output was meant to go."""

    def __init__(self, path: str, reason: str, hint: str):
        super().__init__(f"cannot write {path}: {reason}; {hint}")
        self.path, self.reason, self.hint = path, reason, hint
