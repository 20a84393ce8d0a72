"""What ``compile(telemetry=True)`` costs per node run (issue 14).

Run: ``python benchmarks/bench_telemetry.py``. It times ``invoke`` of the 2,000-run counter
loop of ``bench_runtime.py`` (a) with telemetry off, (b) on with no SDK configured (the API's
no-op tracer: what a library user pays before they set up tracing; the run span is not
recorded, so the tracer does not listen and the run keeps the engine's unwatched path),
and (c) on with the OpenTelemetry SDK recording every span into a batch processor whose
exporter drops them (what tracing itself costs, without the network). It prints µs per
node run and the ratio to (a); the sides take turns in each repeat and are timed in thread
CPU time, as in ``bench_runtime.py``, so a loaded machine slows them alike (the SDK's export
thread is not counted). Telemetry off adds nothing to the run loop (the tracer is never
created), so (a) is also the figure ``bench_runtime.py`` (a) reports for the counter loop.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

sys.path.insert(0, os.path.dirname(__file__))

from bench_runtime import RUNS, best, counter_app


def _counter(telemetry: bool) -> object:
    app = counter_app()
    if telemetry:
        from corral.runtime.app import CompiledGraph

        app = CompiledGraph(app.spec, telemetry=True)
    return app


def main() -> None:
    off = _counter(False)
    on = _counter(True)

    def run_off() -> object:
        return off.invoke({"n": 0})  # type: ignore[attr-defined]

    def run_on() -> object:
        return on.invoke({"n": 0})  # type: ignore[attr-defined]

    plain, noop = (t / RUNS for t in best(run_off, run_on))
    from opentelemetry import trace
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class Dropped(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Dropped(), max_queue_size=RUNS * 4))
    trace.set_tracer_provider(provider)
    _, sdk = (t / RUNS for t in best(run_off, run_on, repeats=10))
    print(f"counter loop, {RUNS} node runs, best of several:")
    print(f"  (a) telemetry off          {plain * 1e6:7.2f} µs/node run")
    print(f"  (b) on, no SDK (no-op)     {noop * 1e6:7.2f} µs/node run   {noop / plain:5.2f}x")
    print(f"  (c) on, SDK, spans dropped {sdk * 1e6:7.2f} µs/node run   {sdk / plain:5.2f}x")


if __name__ == "__main__":
    main()
