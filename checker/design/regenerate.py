"""Search every shipped design again, then rewrite the manifest that judges them.

``python -m toolcommit.checker.design.regenerate``: each ``spec/designs/ENV.json`` is
searched for again and rewritten, as ``toolcommit design --env ENV -o
spec/designs/ENV.json`` would (the email search takes minutes), then ``spec/expected.json``
is written as ``python -m toolcommit.checker.verify.manifest --write`` writes it: one
command after a change to the model, the knobs or the synthesis. It lives here, above the
manifest's writer, because it runs the design search.
"""

from __future__ import annotations

import sys
from importlib import resources

from toolcommit.checker.design.file import document_text
from toolcommit.checker.design.synthesis import synthesize
from toolcommit.checker.engines.verdict import Status
from toolcommit.checker.output import write_atomic
from toolcommit.checker.verify import manifest
from toolcommit.checker.verify.suite import design_names


def regenerate_designs(say=print) -> None:
    """Search every shipped design's environment again and rewrite its file (spec/designs/);
    a search that confirms no design leaves its file as it was and says so."""
    folder = resources.files("toolcommit.spec").joinpath("designs")
    for f in sorted(
        (f for f in folder.iterdir() if f.name.endswith(".json")), key=lambda f: f.name
    ):
        env = f.name[: -len(".json")]
        s = synthesize(env, design_names())
        if s.status is not Status.HOLDS:
            say(f"{f}: no design confirmed in {env} ({s.status.value}); left as it was")
            continue
        write_atomic(str(f), document_text(s))
        say(f"wrote {f} ({s.seconds:.0f}s)")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv:
        print(f"unexpected arguments: {' '.join(argv)} (this command takes none)", file=sys.stderr)
        return 2
    regenerate_designs()
    return manifest.main(["--write"])


if __name__ == "__main__":
    sys.exit(main())
