"""toolcommit.runtime.otel: the guard's own OpenTelemetry spans and metrics, by their public
name (the module is `toolcommit.checker.runtime.otel`; these are its objects)."""
from toolcommit.checker.runtime.otel import METRICS, RESOLUTION, available, configure, tracing

__all__ = ["configure", "available", "tracing", "METRICS", "RESOLUTION"]
