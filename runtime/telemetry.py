"""Optional OpenTelemetry: the log's lines on the current span, so one pipeline carries both.

When ``opentelemetry-api`` is importable and the current span is recording, every line the
intent log commits becomes a span event ``toolcommit.<type>`` (``toolcommit.proposal``,
``toolcommit.transition``, ...) whose attributes are the line's fields, JSON-encoded where
they are not scalars (``args``), and the span's own attributes are set to the latest
values:

``toolcommit.key``, ``toolcommit.intent`` (canonical digest, v1), ``toolcommit.epoch``,
``toolcommit.decision`` (proposals), ``toolcommit.state`` (the record's state after the
line), ``toolcommit.fence``, ``toolcommit.call_id``, ``toolcommit.writer``,
``toolcommit.seq``.

Inside a guarded call the current span is the guard's own (`toolcommit.runtime.otel`),
in a recovery pass its ``toolcommit.recover`` or ``toolcommit.settle`` span. Without the
package, or without a recording span, nothing happens (no hard dependency).
``validate --from otel`` reads the events back as the log's lines, so a guarded call is
judged by what the guard decided.
"""

from __future__ import annotations

import json
from typing import Any, Optional, Union

try:  # optional
    from opentelemetry import trace as _trace
except ImportError:  # pragma: no cover - depends on the environment
    _trace = None  # type: ignore[assignment]  # the module, or None without the extra

PREFIX = "toolcommit."


def available() -> bool:
    """True when opentelemetry-api is importable."""
    return _trace is not None


def _scalar(v: Any) -> Union[str, bool, int, float]:
    if isinstance(v, (str, bool, int, float)):
        return v
    return json.dumps(v, separators=(",", ":"), sort_keys=True)


def annotate(line: dict[str, Any], intent: Optional[str] = None) -> None:
    """Put one committed `line` on the current span (see the module docstring)."""
    if _trace is None:
        return
    span = _trace.get_current_span()
    if not span.is_recording():
        return
    span.add_event(
        PREFIX + line["type"], {PREFIX + k: _scalar(v) for k, v in line.items() if v is not None}
    )
    attrs = {
        "writer": line.get("writer"),
        "seq": line.get("seq"),
        "key": line.get("key"),
        "epoch": line.get("epoch"),
        "decision": line.get("decision"),
        "state": line.get("to"),
        "fence": line.get("fence"),
        "call_id": line.get("call_id"),
        "intent": intent,
    }
    span.set_attributes({PREFIX + k: v for k, v in attrs.items() if v is not None})
