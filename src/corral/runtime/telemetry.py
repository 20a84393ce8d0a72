"""OpenTelemetry spans for runs of an app compiled with ``compile(telemetry=True)``.

The engine already describes a run as events (:mod:`corral.runtime.events`); this module
listens to them, through the run's listener hook, and turns them into spans on the global
tracer provider: one ``corral.run`` span per run, one ``corral.node`` child span per node
run, span events for each route taken, each guard used up and each failed attempt of a
retried node. A subgraph entry is a ``corral.subgraph`` span; its child's node runs and
routes (whose events arrive named by path, ``research/plan``, with the entry they come from,
``NodeStart.entry``) nest under it, also when several entries run side by side (a ``Send``
fan-out under ``ainvoke``). It runs no loop of its own:
the invariant is that every span it opens is ended, by the event that closes it, by the
superstep's barrier (a subgraph entry, a paused node), or by :meth:`RunTracer.fail`. When
telemetry is off nothing here is called, so a run pays nothing for it.

A run that continues a thread links to the run that wrote the checkpoint it starts from (as
the run loads it): each traced run stores its span's W3C ``traceparent`` in the meta of the
checkpoints it writes, so the link works across processes and through every saver.

``opentelemetry-api`` is imported only when a traced app runs (extra ``corral[otel]``);
without an SDK installed and configured, the API's no-op tracer makes every call free.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from corral.checkpoint.base import Checkpoint
from corral.cost import Cost
from corral.runtime import events
from corral.spec import GraphSpec

__all__ = ["RunTracer", "subgraph_paths"]

TRACEPARENT = "traceparent"
"""The checkpoint meta key that holds the W3C trace context of the run that wrote it."""


def subgraph_paths(spec: GraphSpec, prefix: str = "") -> dict[str, str]:
    """Return the name of the child graph of every subgraph node, by path (nested too)."""
    found: dict[str, str] = {}
    for node in spec.nodes:
        if node.subgraph is not None:
            path = prefix + node.name
            found[path] = node.subgraph.graph.name or node.name
            found.update(subgraph_paths(node.subgraph.graph, path + "/"))
    return found


@dataclass(slots=True)
class _Open:
    """A span that is still open, with what its end needs to know."""

    span: Any
    path: str
    entry: tuple[int, ...]
    """The subgraph entry the node run is inside (``()`` at the top level)."""
    attempts: int = 1
    """The attempt running now (a ``NodeRetry`` counts the one that failed)."""
    last: int = 0
    """For a subgraph entry: when its last node run inside ended (ns since the epoch)."""


class RunTracer:
    """The spans of one run: listens to its events and ends every span it opens."""

    def __init__(self, spec: GraphSpec) -> None:
        try:
            from opentelemetry import trace
            from opentelemetry.trace.propagation import tracecontext
        except ImportError as exc:  # pragma: no cover - the otel extra is in dev
            msg = "compile(telemetry=True) needs opentelemetry-api: pip install 'corral[otel]'"
            raise ImportError(msg) from exc
        self._trace = trace
        self._tracer = trace.get_tracer("corral")
        self._w3c = tracecontext.TraceContextTextMapPropagator()
        self._graph = spec.name or ""
        self.run: Any = None
        """The run's span, from :meth:`begin` on."""
        self._subgraphs = subgraph_paths(spec)
        self._nodes: dict[tuple[int, str], _Open] = {}
        """Open node spans by ``(step, path)``: every node run, a child's too, has a step
        number of its own in the run (see :mod:`corral.runtime.child_steps`)."""
        self._entries: dict[tuple[int, ...], _Open] = {}
        """Open subgraph entry spans by entry (``NodeStart.entry``)."""

    def begin(self, thread_id: str | None, last: Checkpoint | None) -> dict[str, Any] | None:
        """Start the run span, linked to the run that wrote ``last`` (the checkpoint the run
        starts from) when that run was traced; return what the run stores in each
        checkpoint's meta: its span's trace context (``None`` for the API's no-op span)."""
        trace, links = self._trace, []
        parent = last.meta.get(TRACEPARENT) if last is not None else None
        if last is not None and isinstance(parent, str):
            context = self._w3c.extract({TRACEPARENT: parent})
            previous = trace.get_current_span(context).get_span_context()
            if previous.is_valid:
                link = {"corral.link": "continues", "corral.checkpoint_id": last.checkpoint_id}
                links.append(trace.Link(previous, link))
        attributes = {"corral.graph": self._graph}
        if thread_id is not None:
            attributes["corral.thread_id"] = thread_id
        self.run = self._tracer.start_span("corral.run", attributes=attributes, links=links)
        self._context = trace.set_span_in_context(self.run)
        carrier: dict[str, Any] = {}
        self._w3c.inject(carrier, self._context)
        return carrier or None

    def __call__(self, event: events.Event) -> None:
        """Turn one event into span work (the other kinds of event need none)."""
        handle = _HANDLERS.get(type(event))
        if handle is not None:
            handle(self, event)

    def _ended(self, event: events.RunEnd) -> None:
        self.run.set_attributes({"corral.steps": event.steps, "corral.status": event.status})
        _set_spent(self.run, event.spent)
        self._close({})  # a run ends at a barrier: nothing should be open by now
        self.run.end()

    def _start(self, event: events.NodeStart) -> None:
        path = event.node
        attributes: dict[str, Any] = {
            "corral.node": path,
            "corral.superstep": event.superstep,
            "corral.send": event.send,
        }
        opens = path in self._subgraphs
        # A subgraph node's NodeStart names the entry it opens; any other, the one it is in.
        entry = event.entry
        inside = entry[:-1] if opens else entry
        context = self._context
        if inside:  # inside a subgraph: under its entry's span
            attributes["corral.subgraph"] = path.rpartition("/")[0]
            outer = self._entries.get(inside)
            if outer is not None:
                context = self._trace.set_span_in_context(outer.span)
        if opens:
            attributes["corral.graph"] = self._subgraphs[path]
            span = self._tracer.start_span("corral.subgraph", context, attributes=attributes)
            self._entries[entry] = _Open(span, path, inside)
            return
        attributes["corral.step"] = event.step
        span = self._tracer.start_span("corral.node", context, attributes=attributes)
        self._nodes[(event.step, path)] = _Open(span, path, entry)

    def _end(self, event: events.NodeEnd) -> None:
        node = self._nodes.pop((event.step, event.node), None)
        if node is None:
            return
        span = node.span
        keys = sorted(event.update) if event.update else []
        span.set_attributes({"corral.attempts": node.attempts, "corral.keys_written": keys})
        _set_spent(span, event.spent)
        span.end()
        now = time.time_ns()
        for depth in range(len(node.entry), 0, -1):  # the entries it ran inside end no sooner
            outer = self._entries.get(node.entry[:depth])
            if outer is not None:
                outer.last = now

    def _retry(self, event: events.NodeRetry) -> None:
        node = self._nodes.get((event.step, event.node))
        if node is None:
            return
        node.attempts = event.attempt + 1
        node.span.add_event(
            "corral.retry",
            {
                "corral.attempt": event.attempt,
                "corral.error": event.error,
                "corral.delay_s": event.delay_s,
            },
        )

    def _barrier(self, error: Any = None) -> None:
        """End the subgraph entries: every task of the superstep has finished by now."""
        for entry in self._entries.values():
            if error is not None:
                entry.span.set_status(error)
            entry.span.end(end_time=entry.last or None)  # None: now
        self._entries.clear()

    def _close(self, asking: dict[str, list[str]], exc: BaseException | None = None) -> None:
        """End every open span under the run, in the order the node runs started: with the
        interrupt id each paused node run is ``asking`` for, or with ``exc`` as an error."""
        error = None if exc is None else self._error(exc)
        for node in self._nodes.values():
            if asking.get(node.path):
                node.span.set_attribute("corral.interrupt_id", asking[node.path].pop(0))
            node.span.set_attribute("corral.attempts", node.attempts)
            if exc is not None:
                node.span.record_exception(exc)
                node.span.set_status(error)
            node.span.end()
        self._nodes.clear()
        self._barrier(error)

    def _paused(self, event: events.Paused) -> None:
        """End the spans of the node runs that stopped at ``interrupt()`` (or before or after)."""
        ids = [str(i.id) for i in event.interrupts]
        self.run.add_event("corral.paused", {"corral.interrupt_ids": ids})
        asking: dict[str, list[str]] = {}
        for pending in event.interrupts:  # in task order, as the node runs started
            asking.setdefault(pending.node, []).append(str(pending.id))
        self._close(asking)

    def _route(self, event: events.RouteTaken) -> None:
        """Add the route to the span of the run, or of the subgraph entry it was taken in."""
        if event.entry:
            outer = self._entries.get(event.entry)
            span = self.run if outer is None else outer.span
        else:
            self._barrier()  # the run's routing starts after the barrier
            span = self.run
        attributes: dict[str, Any] = {
            "corral.source": event.source,
            "corral.target": event.target,
            "corral.via": event.via,
        }
        if event.guard is not None:
            attributes["corral.guard.count"], attributes["corral.guard.max"] = event.guard
        span.add_event("corral.route", attributes)
        if event.via == "otherwise":
            span.add_event("corral.guard_used_up", attributes)

    def fail(self, exc: BaseException) -> None:
        """End every open span with status ERROR and ``exc`` recorded."""
        if self.run is None:  # the run was refused before it started: its span says why
            self.begin(None, None)
        self._close({}, exc)
        if self.run.is_recording():
            self.run.record_exception(exc)
            self.run.set_status(self._error(exc))
            self.run.set_attribute("corral.status", "error")
            self.run.end()

    def _error(self, exc: BaseException) -> Any:
        return self._trace.Status(self._trace.StatusCode.ERROR, f"{type(exc).__name__}: {exc}")


_HANDLERS: dict[type, Callable[[RunTracer, Any], None]] = {
    events.NodeStart: RunTracer._start,
    events.NodeEnd: RunTracer._end,
    events.RouteTaken: RunTracer._route,
    events.SuperstepEnd: lambda tracer, _: tracer._barrier(),
    events.NodeRetry: RunTracer._retry,
    events.Paused: RunTracer._paused,
    events.RunEnd: RunTracer._ended,
}
"""What each kind of event does to the spans (the other kinds need nothing)."""


def _set_spent(span: Any, spent: Cost) -> None:
    """Put what a run or node run spent on its span (OpenTelemetry takes no Decimal)."""
    if spent:
        span.set_attributes(
            {"corral.spent.tokens": spent.tokens, "corral.spent.usd": float(spent.usd)}
        )
