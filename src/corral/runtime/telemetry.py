"""OpenTelemetry spans for runs of an app compiled with ``compile(telemetry=True)``.

The engine already describes a run as events (:mod:`corral.runtime.events`); this module
listens to them, through the run's listener hook, and turns them into spans on the global
tracer provider: one ``corral.run`` span per run, one ``corral.node`` child span per node
run, span events for each route taken and each guard used up. A run that raises ends its
open spans with status ERROR and the exception recorded. It runs no loop of its own: the
invariant is that every span it opens is ended, by the event that closes it or by
:meth:`RunTracer.fail`. When telemetry is off nothing here is imported or called, so a run
pays nothing for it.

``opentelemetry-api`` is imported only when a traced app runs (extra ``corral[otel]``);
without an SDK installed and configured, the API's no-op tracer makes every call free.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TypeVar

from corral.runtime.events import Event, NodeEnd, NodeStart, Paused, RouteTaken, RunEnd

__all__ = ["RunTracer", "watch", "watch_async"]

T = TypeVar("T")

_LAST_RUN: dict[str, Any] = {}
"""The span context of the last traced run per thread, to link a resumed run to it."""


class RunTracer:
    """The spans of one run: listens to its events and ends every span it opens."""

    def __init__(self, graph: str | None, thread_id: str | None) -> None:
        try:
            from opentelemetry import trace
        except ImportError as exc:  # pragma: no cover - the otel extra is in dev
            msg = "compile(telemetry=True) needs opentelemetry-api: pip install 'corral[otel]'"
            raise ImportError(msg) from exc
        self._trace = trace
        self._tracer = trace.get_tracer("corral")
        links = []
        previous = _LAST_RUN.get(thread_id or "")
        if previous is not None:
            links.append(trace.Link(previous, {"corral.link": "continues"}))
        self.run = self._tracer.start_span(
            "corral.run", attributes={"corral.graph": graph or ""}, links=links
        )
        self._context = trace.set_span_in_context(self.run)
        self._nodes: dict[tuple[int, str], Any] = {}
        self.thread_id = thread_id

    def started(self, thread_id: str | None) -> None:
        """Record the run's thread (known once the run has started)."""
        self.thread_id = thread_id
        if thread_id is not None:
            self.run.set_attribute("corral.thread_id", thread_id)

    def chain(self, other: Callable[[Event], None] | None) -> Callable[[Event], None]:
        """Return a listener that feeds this tracer and then ``other``."""
        if other is None:
            return self
        listener = other

        def both(event: Event) -> None:
            self(event)
            listener(event)

        return both

    def __call__(self, event: Event) -> None:
        """Turn one event into span work."""
        if isinstance(event, NodeStart):
            span = self._tracer.start_span(
                "corral.node",
                context=self._context,
                attributes={
                    "corral.node": event.node,
                    "corral.step": event.step,
                    "corral.superstep": event.superstep,
                    "corral.send": event.send,
                },
            )
            self._nodes[(event.step, event.node)] = span
        elif isinstance(event, NodeEnd):
            span = self._nodes.pop((event.step, event.node), None)
            if span is not None:
                keys = sorted(event.update) if event.update else []
                span.set_attribute("corral.attempts", 1)
                span.set_attribute("corral.keys_written", keys)
                span.end()
        elif isinstance(event, RouteTaken):
            self._route(event)
        elif isinstance(event, Paused):
            ids = [str(i.id) for i in event.interrupts]
            self.run.add_event("corral.paused", {"corral.interrupt_ids": ids})
        elif isinstance(event, RunEnd):
            self.run.set_attribute("corral.steps", event.steps)
            self.run.set_attribute("corral.status", event.status)
            self._finish()

    def _route(self, event: RouteTaken) -> None:
        attributes: dict[str, Any] = {
            "corral.source": event.source,
            "corral.target": event.target,
            "corral.via": event.via,
        }
        if event.guard is not None:
            attributes["corral.guard.count"], attributes["corral.guard.max"] = event.guard
        self.run.add_event("corral.route", attributes)
        if event.via == "otherwise":
            self.run.add_event("corral.guard_used_up", attributes)

    def fail(self, exc: BaseException) -> None:
        """End every open span with status ERROR and ``exc`` recorded."""
        error = self._trace.Status(self._trace.StatusCode.ERROR, f"{type(exc).__name__}: {exc}")
        for span in self._nodes.values():
            span.record_exception(exc)
            span.set_status(error)
            span.end()
        self._nodes.clear()
        if self.run.is_recording():
            self.run.record_exception(exc)
            self.run.set_status(error)
            self.run.set_attribute("corral.status", "error")
            self._finish()

    def _finish(self) -> None:
        if self.thread_id is not None:
            _LAST_RUN[self.thread_id] = self.run.get_span_context()
        self.run.end()


def watch(steps: Iterator[T], tracer: RunTracer) -> Iterator[T]:
    """Yield from a run's driver; an exception ends the tracer's spans with ERROR first."""
    try:
        yield from steps
    except BaseException as exc:
        tracer.fail(exc)
        raise


async def watch_async(steps: AsyncIterator[T], tracer: RunTracer) -> AsyncIterator[T]:
    """Like :func:`watch`, for the async driver."""
    try:
        async for item in steps:
            yield item
    except BaseException as exc:
        tracer.fail(exc)
        raise
