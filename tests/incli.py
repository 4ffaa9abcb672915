"""The command line run in this process with its output captured, for tests that read
what it prints."""

from __future__ import annotations

import contextlib
import io

from toolcommit.checker.cli import main


def cli(*argv: str) -> tuple[int, str, str]:
    """``toolcommit ARGV...`` in process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()
