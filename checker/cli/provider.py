"""`toolcommit provider new FILE`: a provider file from a few questions, then its design.

The questions (`toolcommit.checker.design.provider_new.QUESTIONS`) are answered by flags, or
else one line each on stdin: asked with a prompt (and asked again after a bad answer) when
stdin is a terminal, read silently in order when it is not (a bad or missing answer there is
refused). The file is checked by the one reader (`toolcommit.model.provider_file`) before it
is written, written atomically (a temporary file beside it, then a rename), and never over
an existing file without --force. Then the design command for it is printed, or run
(--run-design). Exit codes: 0 written (with --run-design: design's own code), 2 bad usage or input.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from toolcommit.checker.design.provider_new import QUESTIONS, asked, document, parse
from toolcommit.model import provider_file
from toolcommit.model.errors import OutputError, UsageError

TRIES = 3  # how often a terminal user is asked again after a bad answer


def add_parser(sub):
    p = sub.add_parser(
        "provider",
        help="describe the API your tools call in a provider file (provider new)",
        description="Provider files: what the API a tool calls promises (docs/provider-file.md).",
    )
    acts = p.add_subparsers(dest="action", metavar="ACTION", parser_class=type(p))
    acts.required = True
    n = acts.add_parser(
        "new",
        help="ask the questions that decide a design, write the provider file, then design",
        description="Ask the few questions that decide a design (flags answer them; else one "
        "line each on stdin), write FILE (checked, atomically, never over a file without "
        "--force) and print the `toolcommit design` command for it (or run it: --run-design).",
    )
    n.add_argument("file", metavar="FILE", help="the provider file to write (.json)")
    for q in QUESTIONS:
        n.add_argument(q.flag, dest=q.id, metavar="ANSWER", help=q.prompt)
    n.add_argument("--force", action="store_true", help="replace FILE if it exists")
    n.add_argument(
        "--run-design",
        action="store_true",
        help="run `toolcommit design --env FILE` on the file once written (minutes)",
    )
    return p


def run(args) -> int:
    path = Path(args.file)
    if not args.file.strip() or path.is_dir():
        raise UsageError(f"provider new: give the provider file's name, not {args.file!r}")
    if path.exists() and not args.force:
        raise UsageError(f"{path}: exists; give --force to replace it, or another FILE")
    answers = gather(args, sys.stdin, sys.stderr, default_name(path))
    text = json.dumps(document(answers), indent=2, ensure_ascii=False) + "\n"
    provider_file.from_text(text, str(path))  # the one reader: what it refuses is not written
    write_new(path, text, args.force)
    print(f"wrote {path}", file=sys.stderr)
    command = f"toolcommit design --env {path}"
    if not args.run_design:
        print(f"next: {command}")
        return 0
    print(f"running: {command}", file=sys.stderr)
    from toolcommit.checker.cli import main

    return main(["design", "--env", str(path), "--explain", "none"])


def default_name(path: Path) -> str | None:
    """The provider's name a FILE suggests (its stem, lower case), if it is a valid one."""
    stem = path.stem.lower()
    return stem if provider_file.NAME.match(stem) else None


def gather(args, stdin, err, name: str | None) -> dict:
    """Every answer asked (a flag's, else a line of `stdin`), by question id. The flags are
    read first: a bad one is refused before any question is asked."""
    flagged: dict = {}
    for q in QUESTIONS:
        if getattr(args, q.id) is not None:
            try:
                flagged[q.id] = parse(q, getattr(args, q.id))
            except ValueError as e:
                raise UsageError(f"{q.flag}: {e}") from None
    interactive = stdin.isatty()
    answers: dict = {}
    for q in QUESTIONS:
        if not asked(q, answers):
            if q.id in flagged:
                raise UsageError(
                    f"{q.flag}: the provider takes no idempotency key (--key-header none): "
                    f"leave {q.flag} out"
                )
            continue
        if q.id in flagged:
            answers[q.id] = flagged[q.id]
            continue
        answers[q.id] = ask(q, stdin, err, interactive, name if q.id == "name" else None)
    return answers


def ask(q, stdin, err, interactive: bool, default: str | None):
    """One answer from `stdin`: prompted and asked again up to TRIES times on a terminal;
    read once otherwise. UsageError (one line, naming the flag) when none is usable."""
    for attempt in range(TRIES if interactive else 1):
        if interactive:
            err.write(f"{q.prompt}{f' [{default}]' if default else ''} ")
            err.flush()
        line = stdin.readline()
        if not line:
            raise UsageError(
                f"{q.flag}: no answer (input ended); answer on stdin, or give {q.flag}"
            )
        text = line.strip() or default or ""
        try:
            return parse(q, text)
        except ValueError as e:
            if attempt + 1 < (TRIES if interactive else 1):
                err.write(f"{q.flag}: {e}; asked again\n")
                continue
            raise UsageError(f"{q.flag}: {e}") from None


def write_new(path: Path, text: str, force: bool) -> None:
    """`text` at `path`, atomically: a temporary file beside it, flushed, then renamed over
    it (`force`) or linked to it, which fails if a file appeared there meanwhile."""
    parent = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(dir=parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as e:
        raise OutputError(f"{path}: cannot write here: {e.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        if force:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)
    except FileExistsError:
        raise UsageError(f"{path}: exists; give --force to replace it, or another FILE") from None
    except OSError as e:
        raise OutputError(f"{path}: cannot write: {e.strerror}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
