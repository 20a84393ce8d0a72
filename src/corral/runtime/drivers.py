"""The drivers: they call nodes and routers (and await them), and hand the results to the core.

Every decision lives in :mod:`corral.runtime.superstep`; a driver is the loop around the
run's :class:`~corral.runtime.superstep.Core` (:func:`run_sync` is that loop, drawn in
docs/architecture.md): plan a superstep, call its tasks, hand back each outcome, close the
barrier, call each result's router and hand its answer back, finish the superstep.

Both drivers are generators that yield (nothing) at each point where a caller may look at
the events emitted so far (a stream picks them as they are emitted): before a node starts
and after a superstep's checkpoint, never between a node's end and its superstep's
checkpoint, so a consumer that leaves a stream there has seen only what the thread kept (a
finished task of a superstep of several is recorded at once). **Every node run goes
through one call site per driver**: :func:`call_node_sync` and :func:`call_node_async`
(routers: :func:`route_sync` and :func:`route_async`). That is where a retry loop wraps the
call, where an async timeout wraps the await, and where per-attempt events can be emitted.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from functools import partial
from time import perf_counter
from typing import Any

from corral.errors import CorralError, InterruptWithoutCheckpointerError
from corral.runtime.attempts import call_async, call_sync
from corral.runtime.interrupts import Answers, UnansweredInterrupt, answers_given
from corral.runtime.run_state import Call, Result, RunState
from corral.runtime.superstep import Core, end_run, node_error
from corral.runtime.tables import NO_ARG

__all__ = [
    "call_node_async",
    "call_node_sync",
    "route_async",
    "route_sync",
    "run_async",
    "run_sync",
]


# --------------------------------------------------------------------------- call sites


def call_node_sync(rs: RunState, call: Call) -> Any:
    """Run one node; return what it returned.

    Raises what the node raised (``UnansweredInterrupt`` for an unanswered
    ``interrupt()``). With a checkpointer, ``interrupt()`` inside the node returns the
    answers given so far.
    """
    position, task, step = call
    node = task.node
    answers = rs.answers.get(position, []) if rs.checkpoints is not None else None
    if node.child is not None:  # see corral.runtime.child_graph
        return node.child.run_sync(rs, call, answers)
    state = rs.view() if task.arg is NO_ARG else task.arg
    token = answers_given.set(Answers(answers)) if answers is not None else None
    try:
        if node.retry is not None:
            return call_sync(rs, call, _caller(rs, call, state))
        if node.takes_ctx:
            return node.func(state, rs.context(node.name, step))
        return node.func(state)
    finally:
        if token is not None:
            answers_given.reset(token)


async def call_node_async(rs: RunState, call: Call) -> Any:
    """Run one node (awaiting it if async) like :func:`call_node_sync`."""
    position, task, _ = call
    node = task.node
    answers = rs.answers.get(position, []) if rs.checkpoints is not None else None
    if node.child is not None:
        return await node.child.run_async(rs, call, answers)
    state = rs.view() if task.arg is NO_ARG else task.arg
    if answers is not None:
        answers_given.set(Answers(answers))  # each gathered task runs in its own context copy
    return await call_async(rs, call, _caller(rs, call, state))


def _caller(rs: RunState, call: Call, state: Any) -> Callable[[], Any]:
    """Return a call of ``call``'s node on ``state`` from its start, the way a retry makes
    it again."""
    _, task, step = call
    node = task.node
    if not node.takes_ctx:
        return partial(node.func, state)
    return partial(node.func, state, rs.context(node.name, step))


# --------------------------------------------------------------------------- sync


def run_sync(rs: RunState) -> Iterator[None]:
    """Run ``rs`` to its end or next pause, yielding at each point where a caller may look at
    the events emitted so far; the calls of a superstep run one at a time."""
    watched = rs.emit is not None
    core = Core(rs)
    yield
    if core.results:  # a resumed run's merged tasks whose routes are still to take
        route_sync(rs, core)
    while core.plan():
        for call in core.calls:
            if watched:
                core.started(call)
                yield
            start = perf_counter() if watched else 0.0
            try:
                out = call_node_sync(rs, call)
            except UnansweredInterrupt as pause:
                core.paused(call, pause)
                continue
            except InterruptWithoutCheckpointerError:
                raise
            except Exception as exc:
                core.failed(call, exc)
                break
            if not core.finished(call, out, perf_counter() - start if watched else 0.0):
                break
        if not core.close():
            break
        route_sync(rs, core)
        if watched:
            yield
    end_run(rs)


def _call_router(rs: RunState, result: Result) -> Any:
    """Return what the router of ``result``'s node answers on the merged state (an awaitable
    for an async router; ``None`` with no router); a failure is raised as ``NodeError``."""
    _, node, _, _, _ = result
    router = node.router
    if router is None:
        return None
    try:
        if router.takes_ctx:
            return router.func(rs.view(), rs.context(node.name, _step(rs, result)))
        return router.func(rs.view())
    except Exception as exc:
        raise node_error(node.path, _step(rs, result), exc, router=router.name) from exc


def _step(rs: RunState, result: Result) -> int:
    """Return the step a router's ``ctx`` and error name: its node run's (a result saved
    by a corral that kept no number: the run's count of node runs)."""
    _, _, _, _, step = result
    return step or rs.steps


def route_sync(rs: RunState, core: Core) -> None:
    """Take the routes of a closed superstep, then finish it: the call site of the routers
    (each on the merged state; a router's failure is raised as ``NodeError``)."""
    try:
        for result in core.results:
            core.take(result, _call_router(rs, result))
    except BaseException as error:  # a Ctrl-C in a router too
        core.routes_failed(error)
        raise
    core.finish()


async def route_async(rs: RunState, core: Core) -> None:
    """Take the routes of a closed superstep like :func:`route_sync`, awaiting its routers."""
    try:
        for result in core.results:
            _, node, *_ = result
            raw = _call_router(rs, result)
            if node.router is not None and node.router.is_async:
                try:
                    raw = await raw
                except Exception as exc:
                    step = _step(rs, result)
                    raise node_error(node.path, step, exc, router=node.router.name) from exc
            core.take(result, raw)
    except BaseException as error:  # a Ctrl-C, or the stream's consumer left, in a router too
        core.routes_failed(error)
        raise
    core.finish()


# --------------------------------------------------------------------------- async


async def run_async(rs: RunState) -> AsyncIterator[None]:
    """Run ``rs`` like :func:`run_sync`, running the tasks of a superstep concurrently."""
    core = Core(rs)
    yield
    if core.results:  # a resumed run's merged tasks whose routes are still to take
        await route_async(rs, core)
    while core.plan():
        for call in core.calls:
            core.started(call)
        yield
        outcomes = await asyncio.gather(*(_task_async(core, call) for call in core.calls))
        for hand_back in outcomes:
            hand_back()
        if not core.close():
            break
        await route_async(rs, core)
        yield
    end_run(rs)


async def _task_async(core: Core, call: Call) -> Callable[[], object]:
    """Run one call; return the hand-back of its outcome to the core (made in task order
    once every call of the superstep ended): its result, pause or failure, or an error
    that stops the run at once.

    A task that finished well is recorded at once (when the superstep records its tasks), so
    a crash while its siblings still run does not run it again.
    """
    watched = core.rs.emit is not None
    start = perf_counter() if watched else 0.0
    try:
        out = await call_node_async(core.rs, call)
    except UnansweredInterrupt as pause:
        return partial(core.paused, call, pause)
    except InterruptWithoutCheckpointerError as exc:
        return partial(_raise, exc)
    except Exception as exc:
        return partial(core.failed, call, exc)
    try:
        recorded = core.record_early(call, out)
    except CorralError as exc:
        return partial(_raise, exc)
    seconds = perf_counter() - start if watched else 0.0
    return partial(core.finished, call, out, seconds, recorded)


def _raise(exc: Exception) -> None:
    raise exc
