"""`toolcommit.gateway.Gateway` embedded in an app of one's own: docs/gateway.md's
Starlette app, run as written under uvicorn, serves the page's HTTP client (one client's
two connections, one refund) beside a route of its own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from .gw import LIMIT
from .test_gateway import Quickstart, free_port, page_blocks

pytest.importorskip("mcp")
httpx = pytest.importorskip("httpx")


def test_the_docs_starlette_app_embeds_the_gateway(tmp_path):
    q = Quickstart(tmp_path)
    blocks = page_blocks()
    i = next(i for i, (lang, b) in enumerate(blocks) if "Starlette(" in b)
    assert len(blocks[i][1].strip().splitlines()) <= 30  # an app of about 20 lines
    port = str(free_port())
    (tmp_path / "app.py").write_text(blocks[i][1])
    (serve,) = blocks[i + 1][1].replace("8808", port).strip().splitlines()
    h = next(j for j, (lang, b) in enumerate(blocks) if "--http 8808" in b)
    setup = blocks[h][1].strip().splitlines()[0]
    client = blocks[h + 1][1].replace("8808", port)
    assert q.run(["sh", "-c", setup]).returncode == 0
    proc = subprocess.Popen(
        ["sh", "-c", f"exec {serve}"],
        cwd=tmp_path,
        env=q.env,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        for line in proc.stderr:  # uvicorn's log: up when it says so
            if "Uvicorn running on" in line:
                break
        else:
            pytest.fail("uvicorn did not start")
        health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=LIMIT).text
        runs = [q.run([sys.executable, "-c", client]) for _ in range(2)]
        proc.send_signal(signal.SIGTERM)  # uvicorn shuts down, then dies of the signal
        assert proc.wait(timeout=LIMIT) in (0, -signal.SIGTERM)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        proc.stderr.close()
    assert health == "ok"
    assert [r.stdout.strip() for r in runs] == ["False", "True"], [r.stderr for r in runs]
    assert len(q.applied()) == 1
