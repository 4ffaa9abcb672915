"""Fresh Python processes started together, for the tests of concurrent proposers (fresh,
not forked from the test's worker, whose other tests' threads a fork would copy)."""

from __future__ import annotations

import subprocess
import sys


def decisions(script: str, argvs: list[list[str]]) -> list[str]:
    """Run `script` (``python -c``) once per argument list, all at once; the first letter of
    what each printed (its decision), sorted. Each must exit 0 within 120 s."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for argv in argvs
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in outs]
    return sorted(out.strip()[:1] for out, _ in outs)
