"""A provider on the loopback that applies every POST it gets (no deduplication of its own;
with `by_key`, Stripe's: one effect and its saved answer per Idempotency-Key), counting
them: what shows that two processes sent one intent once. `hold` (a callable
returning True while the answer must wait) delays each answer, bounded."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Optional


class Fake:
    def __init__(
        self, hold: Optional[Callable[[], bool]] = None, bound: float = 30.0, by_key: bool = False
    ):
        self.applied: list[dict] = []
        self.saved: dict[str, bytes] = {}  # by_key: Stripe's saved response per key
        self.keys: list[Optional[str]] = []
        self.hold, self.bound = hold, bound
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # quiet
                pass

            def do_POST(self):
                body = json.loads(
                    self.rfile.read(int(self.headers["Content-Length"] or 0)) or b"{}"
                )
                key = self.headers.get("Idempotency-Key")
                with fake._lock:
                    fake.keys.append(key)
                    if by_key and key in fake.saved:
                        return self._send(fake.saved[key])
                    fake.applied.append(body)
                    n = len(fake.applied)
                    data = json.dumps({"id": f"re_{n}"}).encode()
                    if by_key and key is not None:
                        fake.saved[key] = data
                deadline = time.monotonic() + fake.bound
                while fake.hold is not None and fake.hold() and time.monotonic() < deadline:
                    time.sleep(0.02)
                self._send(data)

            def _send(self, data: bytes) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "Fake":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
