"""The HTTP face holds under abuse, measured on the gateway process itself: a 100 MiB body
(in a session, or sessionless; by its length, or sent chunked without one) is 413 and the
gateway's peak memory stays flat; 1,100 half-sent requests against a gateway whose
descriptor limit is lowered to 256 leave a legitimate client served and stderr small."""

from __future__ import annotations

import contextlib
import resource
import signal
import socket
import threading
import time
from urllib.parse import urlsplit

import pytest

from .gw import LIMIT
from .test_http import INIT, post, session

httpx = pytest.importorskip("httpx")

MIB = 1024 * 1024
SENT = 100 * MIB


def peak_rss(pid: int) -> int:
    """The process's peak resident memory in bytes (VmHWM, Linux)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def send_body(url: str, headers: dict, chunked: bool) -> bytes:
    """POST 100 MiB to `url` over a raw socket (with a Content-Length, or chunked without
    one) while a thread reads the answer; the answer's status line and headers."""
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=LIMIT)
    head = [f"POST {parts.path} HTTP/1.1", f"Host: {parts.netloc}"]
    head += [f"{k}: {v}" for k, v in headers.items()]
    head += ["Content-Type: application/json", "Accept: application/json, text/event-stream"]
    head.append("Transfer-Encoding: chunked" if chunked else f"Content-Length: {SENT}")
    got = bytearray()
    done = threading.Event()

    def read():
        with contextlib.suppress(OSError):
            while b"\r\n\r\n" not in got:
                data = sock.recv(65536)
                if not data:
                    break
                got.extend(data)
        done.set()

    reader = threading.Thread(target=read)
    reader.start()
    try:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        chunk = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"x":"' + b"a" * MIB
        with contextlib.suppress(OSError):
            for _ in range(SENT // len(chunk)):
                if done.is_set():
                    break
                sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk)
        reader.join(LIMIT)
    finally:
        sock.close()
    return bytes(got)


@pytest.mark.parametrize("chunked", [False, True])
def test_a_100_mib_body_is_413_in_a_session_and_sessionless_and_memory_stays_flat(
    gateway_env, chunked
):
    e = gateway_env
    with e.http() as (url, proc):
        sid = session(url)
        before = peak_rss(proc.pid)
        in_session = send_body(url, sid, chunked)
        sessionless = send_body(url, {"MCP-Protocol-Version": "2026-07-28"}, chunked)
        grown = peak_rss(proc.pid) - before
        after = post(url, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, **sid)
    assert in_session.startswith(b"HTTP/1.1 413"), in_session[:200]
    assert sessionless.startswith(b"HTTP/1.1 413"), sessionless[:200]
    assert grown < 32 * MIB, f"the gateway's peak memory grew {grown / MIB:.0f} MiB"
    assert after.status_code == 200  # the session goes on
    assert e.applied() == []


def lowered(limit: int):
    def preexec():
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))

    return preexec


@pytest.fixture
def many_descriptors():
    """This test process may hold 2,000 sockets (its soft limit raised, then restored)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 2048:
        pytest.skip(f"the descriptor limit is {hard}: this test opens 1,100 sockets")
    resource.setrlimit(resource.RLIMIT_NOFILE, (2048, hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_1100_half_sent_requests_leave_a_legitimate_client_served_and_stderr_small(
    gateway_env, many_descriptors
):
    e = gateway_env
    with e.http(preexec_fn=lowered(256)) as (url, proc):
        parts = urlsplit(url)
        slow = []
        try:
            for _ in range(1100):
                s = socket.socket()
                s.setblocking(False)
                with contextlib.suppress(BlockingIOError):
                    s.connect((parts.hostname, parts.port))
                slow.append(s)
            for s in slow:  # half a request: headers that never end
                with contextlib.suppress(OSError):
                    s.send(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            deadline, served = time.monotonic() + LIMIT, None
            while served is None:
                assert time.monotonic() < deadline, "the legitimate client was never served"
                with contextlib.suppress(httpx.HTTPError):
                    r = post(url, INIT)
                    if r.status_code == 200:
                        served = r
        finally:
            for s in slow:
                s.close()
        alive = proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        err = proc.stderr.read()  # to its end: the gateway stopped
    assert alive and served.headers["mcp-session-id"]
    assert len(err) < 4096, err[:2000]


def test_descriptors_running_out_is_said_in_one_line_not_a_traceback_per_retry():
    """asyncio retries a failing accept once a second, each with a traceback (403 MB in
    2.5 minutes); the gateway's handler says it once a minute, in one line."""
    import io

    from toolcommit.gateway.listener import quiet_accept

    err = io.StringIO()
    handler = quiet_accept(err)
    context = {
        "message": "socket.accept() out of system resource",
        "exception": OSError(24, "Too many open files"),
    }
    for _ in range(150):
        handler(None, context)
    (line,) = err.getvalue().splitlines()
    assert line.startswith("toolcommit gateway: cannot accept connections: Too many open files")
