"""The gateway's stdio transport: one session on this process's stdin and stdout.

The client's lines are read by a daemon thread with raw reads, so the gateway ends when the
client closes stdin or a signal arrives, whatever the reading thread is blocked on; a line
that is no JSON-RPC message reaches the session as `Unreadable` (answered with an error).
"""

from __future__ import annotations

import os
import sys
import threading
from contextlib import asynccontextmanager

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import mcp_types as types
from mcp.shared.message import SessionMessage

from toolcommit.gateway.calls import Effectful
from toolcommit.gateway.proxy import Unreadable, serve_session


def _lines(fd: int):
    """The lines read from `fd` (raw reads: no buffered object a daemon thread could hold
    locked when the interpreter exits), each without its line end; ends at EOF."""
    rest = b""
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        *whole, rest = (rest + chunk).split(b"\n")
        yield from whole
    if rest:
        yield rest


@asynccontextmanager
async def stdio_streams(stdin_fd: int = 0, stdout=None):
    """(read, write) streams on this process's stdin and stdout: `read` yields a
    SessionMessage per line, or the exception of a line that did not parse, and ends at
    EOF; `write` takes SessionMessages. The reader is a daemon thread: it never holds the
    process open."""
    stdout = stdout or sys.__stdout__.buffer
    in_send, in_recv = anyio.create_memory_object_stream(16)
    out_send, out_recv = anyio.create_memory_object_stream(16)
    token = anyio.lowlevel.current_token()

    def reader():
        try:
            for raw in _lines(stdin_fd):
                line = raw.decode("utf-8", "replace").strip()
                if not line:
                    continue
                try:
                    item = SessionMessage(
                        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                    )
                except Exception as e:  # noqa: BLE001 - answered as an error
                    item = Unreadable(line, e)
                anyio.from_thread.run(in_send.send, item, token=token)
        except Exception:  # noqa: BLE001 - the loop is gone or closed
            pass
        finally:
            try:
                anyio.from_thread.run_sync(in_send.close, token=token)
            except Exception:  # noqa: BLE001 - the loop is gone
                pass

    def put(data: bytes) -> None:
        stdout.write(data)
        stdout.flush()

    async def writer():
        async with out_recv:
            async for msg in out_recv:
                data = msg.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                try:
                    await anyio.to_thread.run_sync(
                        put, data.encode("utf-8"), abandon_on_cancel=True
                    )
                except (BrokenPipeError, ValueError, OSError):
                    return  # the client is gone

    threading.Thread(target=reader, name="toolcommit-gateway-stdin", daemon=True).start()
    async with anyio.create_task_group() as tg:
        tg.start_soon(writer)
        try:
            yield in_recv, out_send
        finally:
            tg.cancel_scope.cancel()


async def serve_stdio(effectful: Effectful, command: list[str]) -> None:
    """One session on this process's stdin and stdout, until the client closes stdin."""
    async with stdio_streams() as (read, write):
        await serve_session(read, write, effectful, command, errlog=sys.stderr)
