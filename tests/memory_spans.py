"""One in-memory span exporter for the whole test process, on the global tracer provider.

OpenTelemetry lets the global provider be set once per process, so every test module that
reads spans shares this exporter; :func:`memory_spans` empties it for the test.
"""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

_EXPORTER = InMemorySpanExporter()


def memory_spans() -> InMemorySpanExporter:
    """Return the process's exporter, emptied, set on the global provider on first use."""
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        trace.set_tracer_provider(provider)
    _EXPORTER.clear()
    return _EXPORTER
