"""`python -m toolcommit.checker.cli`: the same as the `toolcommit` command."""

import sys

from toolcommit.checker.cli import main

sys.exit(main())
