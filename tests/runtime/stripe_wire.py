"""A Stripe-wire fake on 127.0.0.1 for the wire tests: the real `stripe` SDK talks to it.

What it keeps of Stripe's API v1 (https://docs.stripe.com/api/idempotent_requests): a
form-encoded ``POST /v1/refunds`` under ``Idempotency-Key`` saves its first response (errors
included) once execution began and answers every later request under the key from it; a
request under a key whose first request still executes gets 409 ``idempotency_key_in_use``
(nothing saved); a key reused with other parameters gets 400 ``idempotency_error``; a
validation error is not saved. ``GET /v1/refunds?charge=`` lists a charge's refunds newest
first with ``limit``, ``starting_after`` and ``has_more``; refunds keep their ``metadata``.

Faults: `lose(n)` closes the connection instead of the next n answers to a POST (after
applying: a lost ack), `fail(n)` answers the next n executed POSTs with a saved 500,
`hold()` keeps the next POST executing until `release()`. It binds 127.0.0.1 only, checks
Host and the API key, refuses a request with an Origin, bounds every wait, and stops by
itself after `lifetime` seconds.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Optional
from urllib.parse import parse_qsl, urlsplit

TOKEN = "sk_test_toolcommit_wire"
WAIT = 5.0  # seconds: the longest a held request waits


@dataclass
class Saved:
    params: list
    status: int = 0
    body: dict = field(default_factory=dict)
    executing: bool = True


def _error(status: int, kind: str, message: str, code: Optional[str] = None) -> tuple:
    err = {"type": kind, "message": message}
    if code:
        err["code"] = code
    return status, {"error": err}


class StripeWire:
    """The fake (module docstring). `refunds` is what it applied (oldest first); `seen`
    every request that reached it as (method, path, Idempotency-Key or None)."""

    def __init__(self, lifetime: float = 60.0):
        self.refunds: list[dict] = []
        self.seen: list[tuple[str, str, Optional[str]]] = []
        self._saved: dict[str, Saved] = {}
        self._lock = threading.Lock()
        self._lose = self._fail = 0
        self._hold = threading.Event()
        self._held = threading.Event()
        self._hold.set()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )
        self._timer = threading.Timer(lifetime, self.stop)
        self._timer.daemon = True

    def __enter__(self) -> "StripeWire":
        self._thread.start()
        self._timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        self._timer.cancel()
        self._hold.set()
        self._server.shutdown()
        self._server.server_close()

    # ----- faults ---------------------------------------------------------------------------
    def lose(self, n: int = 1) -> None:
        self._lose = n

    def fail(self, n: int = 1) -> None:
        self._fail = n

    def hold(self) -> None:
        """Keep the next POST executing (at most `WAIT` s) until `release`."""
        self._held.clear()
        self._hold.clear()

    def wait_held(self) -> bool:
        return self._held.wait(WAIT)

    def release(self) -> None:
        self._hold.set()

    def charge_refunds(self, charge: str) -> list[dict]:
        return [r for r in self.refunds if r["charge"] == charge]

    # ----- the API --------------------------------------------------------------------------
    def create(self, key: Optional[str], params: list) -> tuple[int, dict, bool]:
        """(status, body, replayed) for ``POST /v1/refunds``."""
        with self._lock:
            old = self._saved.get(key) if key else None
            if old is not None:
                if old.params != params:
                    return (
                        *_error(
                            400,
                            "idempotency_error",
                            "Keys for idempotent requests can "
                            "only be used with the same parameters they were first "
                            "used with.",
                        ),
                        False,
                    )
                if old.executing:
                    return (
                        *_error(
                            409,
                            "idempotency_error",
                            "There is currently another "
                            "in-progress request using this Idempotent Key.",
                            "idempotency_key_in_use",
                        ),
                        False,
                    )
                return old.status, old.body, True
            bad = _invalid(dict(params))
            if bad is not None:
                return (*bad, False)
            entry = Saved(params)
            if key:
                self._saved[key] = entry
        if not self._hold.is_set():
            self._held.set()
            self._hold.wait(WAIT)
        with self._lock:
            entry.status, entry.body = self._apply(dict(params))
            entry.executing = False
        return entry.status, entry.body, False

    def _apply(self, form: dict) -> tuple[int, dict]:
        meta = {k[len("metadata[") : -1]: v for k, v in form.items() if k.startswith("metadata[")}
        refund = {
            "id": f"re_{len(self.refunds) + 1:06d}",
            "object": "refund",
            "amount": int(form.get("amount", 0)),
            "charge": form["charge"],
            "currency": "usd",
            "metadata": meta,
            "status": "succeeded",
            "created": int(time.time()),
        }
        self.refunds.append(refund)
        if self._fail > 0:
            self._fail -= 1
            return _error(500, "api_error", "Something went wrong on Stripe's end.")
        return 200, refund

    def take_loss(self) -> bool:
        with self._lock:
            if self._lose > 0:
                self._lose -= 1
                return True
            return False

    def list(self, query: dict) -> tuple[int, dict]:
        """``GET /v1/refunds``: newest first, by charge, paginated."""
        try:
            limit = int(query.get("limit", 10))
        except ValueError:
            return _error(400, "invalid_request_error", "Invalid integer: limit")
        if not 1 <= limit <= 100:
            return _error(400, "invalid_request_error", "limit must be between 1 and 100")
        with self._lock:
            rows = [
                r
                for r in reversed(self.refunds)
                if "charge" not in query or r["charge"] == query["charge"]
            ]
        after = query.get("starting_after")
        if after is not None:
            ids = [r["id"] for r in rows]
            if after not in ids:
                return _error(400, "invalid_request_error", f"No such refund: '{after}'")
            rows = rows[ids.index(after) + 1 :]
        return 200, {
            "object": "list",
            "url": "/v1/refunds",
            "has_more": len(rows) > limit,
            "data": rows[:limit],
        }


def _invalid(form: dict) -> Optional[tuple]:
    if "charge" not in form:
        return _error(
            400, "invalid_request_error", "Missing required param: charge.", "parameter_missing"
        )
    if "amount" in form and not (form["amount"].isdigit() and int(form["amount"]) > 0):
        return _error(400, "invalid_request_error", "Invalid positive integer", "parameter_invalid")
    return None


def _handler(fake: StripeWire):
    class Handler(BaseHTTPRequestHandler):
        timeout = WAIT  # a client that stops sending mid-request is dropped

        def log_message(self, *a) -> None:
            pass

        def _refused(self) -> Optional[tuple]:
            if self.headers.get("Origin") is not None:
                return _error(403, "invalid_request_error", "no browser origins here")
            if self.headers.get("Host") not in (f"127.0.0.1:{fake.port}", f"localhost:{fake.port}"):
                return _error(400, "invalid_request_error", "wrong Host")
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                return _error(401, "invalid_request_error", "Invalid API Key provided")
            return None

        def _answer(self, status: int, body: dict, extra: Optional[dict] = None) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Request-Id", f"req_{len(fake.seen)}")
            for k, v in (extra or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            fake.seen.append(("GET", url.path, self.headers.get("Idempotency-Key")))
            if (bad := self._refused()) is not None:
                return self._answer(*bad)
            if url.path != "/v1/refunds":
                return self._answer(*_error(404, "invalid_request_error", "Unrecognized URL"))
            self._answer(*fake.list(dict(parse_qsl(url.query))))

        def do_POST(self) -> None:
            url, key = urlsplit(self.path), self.headers.get("Idempotency-Key")
            fake.seen.append(("POST", url.path, key))
            length = int(self.headers.get("Content-Length") or 0)
            form = parse_qsl(self.rfile.read(min(length, 1 << 16)).decode())
            if (bad := self._refused()) is not None:
                return self._answer(*bad)
            if url.path != "/v1/refunds":
                return self._answer(*_error(404, "invalid_request_error", "Unrecognized URL"))
            status, body, replayed = fake.create(key, sorted(form))
            if fake.take_loss():
                self.close_connection = True  # the ack is lost: no answer, connection closed
                return
            self._answer(status, body, {"Idempotent-Replayed": "true"} if replayed else None)

    return Handler
