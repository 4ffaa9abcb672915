"""The torture worker on the TypeScript library (`--runtime ts`): the forked child execs
``node ts/scripts/torture-worker.mjs`` with the run's configuration, so the harness kills,
pauses and restarts a real Node process at the same hook points, and the worker speaks the
same pipe protocol (`worker.Hook`) and the same HTTP to the proxy (`worker.Net`) as the
Python one. The worker follows the design the library ships for the profile, its timing
compressed as the fake's is (`worker.env_design`), handed over resolved (the TypeScript
package reads no design files of its own at run time)."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

from toolcommit.checker.torture.plan import Plan

#: the package's folder: ts/ beside the Python packages in the source tree
TS = Path(__file__).resolve().parents[2] / "ts"
SCRIPT = TS / "scripts" / "torture-worker.mjs"


class NoNode(RuntimeError):
    """No Node, or the TypeScript package is not installed and built: what to run."""


def check() -> None:
    """`NoNode` naming the fix where a Node worker cannot start."""
    if shutil.which("node") is None:
        raise NoNode("--runtime ts needs node (Node 20 or later) on PATH")
    if not (TS / "dist" / "esm" / "index.js").is_file():
        raise NoNode(
            f"--runtime ts needs the TypeScript package built: cd {TS} && npm ci && npm run build"
        )


def resolved(design) -> dict:
    """What the Node worker's `IntentLog` takes as `provider`: `design` resolved."""
    return {
        **design.doc,
        "key_header": design.key_header,
        "hosts": list(design.wire.hosts) if design.wire is not None else [],
    }


def plan_json(plan: Plan) -> dict:
    """The part of `plan` a worker reads: its workers, sessions, assignment and timing."""
    return {
        "workers": list(plan.workers),
        "sessions": [dataclasses.asdict(s) for s in plan.sessions],
        "assign": [list(a) for a in plan.assign],
        "timing": dataclasses.asdict(plan.timing),
    }


def exec_worker(conf: dict, plan: Plan, name: str, inc: int, to_fd: int, from_fd: int) -> None:
    """Replace this (forked) process with the Node worker; never returns."""
    from toolcommit.checker.torture.profiles import PROFILES
    from toolcommit.checker.torture.worker import env_design

    for fd in (to_fd, from_fd):
        os.set_inheritable(fd, True)
    arg = {
        "conf": {
            **{k: conf[k] for k in ("store", "dsn", "schema", "db", "lease", "proxy_port")},
            "design": resolved(env_design(PROFILES[conf["profile"]].env)),
        },
        "plan": plan_json(plan),
        "name": name,
        "inc": inc,
        "toFd": to_fd,
        "fromFd": from_fd,
    }
    node = shutil.which("node") or "node"
    os.execv(node, [node, str(SCRIPT), json.dumps(arg)])
