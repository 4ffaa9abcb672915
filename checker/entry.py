"""The `toolcommit` command's entry point: `toolcommit.checker.cli.main`, with a Ctrl-C that
lands while the command line's own modules are still importing (its first few tens of ms)
said in one line, exit 130, as `main` says one that lands later. Kept apart from the `cli`
package so that importing this module imports nothing else of toolcommit."""

from __future__ import annotations

import sys


def main() -> int:
    try:
        from toolcommit.checker.cli import main as cli_main
    except KeyboardInterrupt:
        print("toolcommit: interrupted", file=sys.stderr)
        return 130
    return cli_main()
