"""A provider on the loopback that applies every POST it gets (no deduplication of its own),
counting them: what shows that two processes sent one intent once. `hold` (a callable
returning True while the answer must wait) delays each answer, bounded."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Optional


class Fake:
    def __init__(self, hold: Optional[Callable[[], bool]] = None, bound: float = 30.0):
        self.applied: list[dict] = []
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
                with fake._lock:
                    fake.applied.append(body)
                    fake.keys.append(self.headers.get("Idempotency-Key"))
                    n = len(fake.applied)
                deadline = time.monotonic() + fake.bound
                while fake.hold is not None and fake.hold() and time.monotonic() < deadline:
                    time.sleep(0.02)
                data = json.dumps({"id": f"re_{n}"}).encode()
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
