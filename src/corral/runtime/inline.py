"""The inline path: supersteps of a run that nobody watches, without the planning.

A loop (one node at a time, a router back to it) is the most common shape of an agent, and a
run with no event receiver and no checkpointer has nothing to report between its supersteps.
For such a run :func:`run_inline` takes the supersteps whose tasks all run nodes that may run
inline (:attr:`Node.inline`: no ``max_runs``, ``ctx``, retry or subgraph) and does for each
exactly what the general path does, with less bookkeeping (a lone subgraph entry too: its
child runs, its writes merge and its routes are taken here, see
:meth:`~corral.runtime.child_graph.ChildGraph.run_inline`):

- the step cap is checked before the superstep (the general path raises it: ``run_inline``
  returns instead, and the driver's :class:`~corral.runtime.superstep.Superstep` raises);
- a return value that is a dict of known keys (or ``None``) is counted and traced here, any
  other by the core's :func:`~corral.runtime.superstep.accept`;
- a one-node superstep's update is merged by ``apply_writes`` unless every key it writes has
  no reducer and every value is immutable (then a dict copy with the update is the merge).
  On a flat state (every value immutable) the merged state is itself the read-only view the
  next reader gets, and when its reference count shows that no node or router kept it, the
  next such update is written into it in place: nobody who could see the change holds it;
- a route that leads to one plain task on its own (:attr:`Node.alone`, guard not used up) is
  taken here, and so are fixed ``then=`` targets with no guard (:attr:`Node.then_tasks`,
  :attr:`Node.then_nodes`); any other route is taken by the core's ``take_routes`` /
  ``next_tasks``;
- a superstep of several tasks (a fan-out, ``Send`` arguments included) calls them in task
  order on one view they share until one reads a mutable value from it, and merges at the
  barrier with the core's :func:`~corral.runtime.superstep.merge`; one whose barrier may
  pause (``interrupt_before``/``after``) or that follows a held join is left to the driver.

Invariant: when ``run_inline`` returns (or raises), ``RunState`` is what the general path
would have made of the same supersteps, so the driver's loop goes on from there; the
equivalence is tested three ways (tests/unit/test_equivalence.py) and its speed is measured
by benchmarks/bench_runtime.py.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from corral.errors import CorralError, InterruptWithoutCheckpointerError
from corral.runtime.routing import leave_targets, next_tasks, take_routes
from corral.runtime.run_state import Call, RunState, Targets, TaskResult
from corral.runtime.state import IMMUTABLE, FlatView, apply_writes, is_flat, view_of
from corral.runtime.subgraphs import take_entry
from corral.runtime.superstep import accept, merge, node_error, router_error
from corral.runtime.tables import NO_ARG, AloneRoute, Node, Router, Task

__all__ = ["run_inline"]

_IMMUTABLE = IMMUTABLE
_all_immutable = IMMUTABLE.issuperset
_new = tuple.__new__
"""Build a record (a NamedTuple) without its Python-level ``__new__``: half the time."""


def run_inline(rs: RunState) -> None:
    """Run the one-node supersteps of ``rs`` that may run inline, until one may not."""
    if rs.done or rs.reroute is not None or rs.held:
        return
    try:
        _run(rs)
    finally:
        if type(rs.values) is not dict:  # the last merge's view is the state: hand back a dict
            rs.values = dict(rs.values)


def _run(rs: RunState) -> None:
    while True:
        if _inline_task(rs.tasks) is not None:  # (after a subgraph entry, often not)
            _run_ones(rs)
        if not rs.tasks or not (_fan_out(rs) or _enter(rs)):  # (a child's run ends often)
            return


def _run_ones(rs: RunState) -> None:
    """Run one-node supersteps until the next one is not one the inline path may run."""
    last_write = rs.tables.last_write
    runs = rs.runs
    guards = rs.guards
    trace = rs.trace.append
    max_steps = rs.max_steps
    unlogged = rs.log is None  # a subgraph's child run reads its writes back from the log
    # ``view`` is what the next reader (the router, then the next node) gets. A view nobody
    # has read a mutable value from holds nothing anyone could have changed, so they may
    # share it. After a merge of plain immutable values into a flat state, the new view *is*
    # the new state; when the next merge finds that nobody but this loop holds it (its
    # reference count is what it was when it was made), the update is written into it in
    # place: no reader kept it, so no reader can see it change.
    node = _inline_task(rs.tasks)
    view = view_of(rs.values, rs.flat, rs.notes) if node is not None else None
    alone = 0  # the reference count of ``view`` while only this loop and ``rs.values`` hold it
    flat = rs.flat and unlogged  # whether a dict of plain replacements keeps the state flat
    # Plain runs count their steps and supersteps here; ``rs`` gets them (``ran`` of each)
    # before any helper reads it, and when the loop ends.
    steps = rs.steps
    ran = 0
    last = None  # the node whose parts below were read (a loop runs one node many times)
    try:
        while node is not None:
            if node is not last:
                last = node
                func, name, router, routes = node.func, node.name, node.inline_router, node.alone
            step = steps + 1
            if step > max_steps:
                return
            try:
                out = func(view)
            except Exception as exc:
                _failed(node, step, exc)
            # A dict of plain replacements by immutable values keeps the state flat. (The
            # loop checks a small update faster than C-level set operations.)
            plain = flat and type(out) is dict
            for key in out if plain else ():
                if key not in last_write or type(out[key]) not in _IMMUTABLE:
                    plain = False
                    break
            if not plain:
                rs.steps, rs.supersteps, ran = steps, rs.supersteps + ran, 0
                node, view = _step(rs, node, step, out, view)  # type: ignore[arg-type]
                steps = rs.steps
                flat = rs.flat and unlogged
                continue
            # Accepted and merged as the core would: a run of plain replacements. The state
            # stays flat, so ``view`` (the merged state) is what the router and next node read.
            steps = step
            ran += 1
            runs[name] = runs.get(name, 0) + 1
            trace((step, name, out, 0.0))
            if view is rs.values and _refcount(view) == alone:
                _dict_update(view, out)
            else:
                view = rs.values = _replaced(rs.values, out)
                alone = _refcount(view)
            if router is None:
                rs.steps, rs.supersteps, ran = steps, rs.supersteps + ran, 0
                node, view = _leave_with(rs, node, None, view)
                continue
            try:
                raw = router.func(view)
            except Exception as exc:
                raise router_error(router.name, name, step, exc) from exc
            route = routes.get(raw) if type(raw) is str else None
            if route is None:
                rs.steps, rs.supersteps, ran = steps, rs.supersteps + ran, 0
                node = _inline_task(_leave(rs, node, None, raw))
                continue
            following, key, most, after = route
            if key is not None:
                count = guards[key]
                if count >= most:  # used up: the core takes its otherwise (or raises)
                    rs.steps, rs.supersteps, ran = steps, rs.supersteps + ran, 0
                    node = _inline_task(_leave(rs, node, None, raw))
                    continue
                guards[key] = count + 1
            rs.tasks = following
            node = after
    finally:
        if ran:
            rs.steps, rs.supersteps = steps, rs.supersteps + ran


def _fan_out(rs: RunState) -> bool:
    """Run a superstep of several tasks as the general path would; return ``False`` (and
    run nothing) when one of them may not run inline or the step cap is in reach."""
    tasks = rs.tasks
    if len(tasks) < 2 or rs.held or rs.steps + len(tasks) > rs.max_steps:
        return False
    if rs.pause_before or rs.pause_after:  # the barrier may pause: the general path's job
        return False
    for node, _ in tasks:
        if not node.inline:
            return False
    view: FlatView | None = None
    results: list[TaskResult] = []
    keyset = rs.tables.keyset
    runs = rs.runs
    trace = rs.trace.append
    for position, (node, arg) in enumerate(tasks):
        step = rs.steps + 1
        if arg is not NO_ARG:
            state = arg
        elif view is None:
            state = view = view_of(rs.values, rs.flat, rs.notes)
        else:
            state = view
        try:
            out = node.func(state)
        except Exception as exc:
            _failed(node, step, exc)
        if view is not None and not rs.flat and view._owned is not None:  # type: ignore[attr-defined]
            view = None
        if out is None or (type(out) is dict and keyset.issuperset(out)):
            rs.steps = step  # accepted as the core would: counted and traced
            runs[node.name] = runs.get(node.name, 0) + 1
            trace((step, node.name, out, 0.0))
            results.append(_new(TaskResult, (position, node, out, None)))
        else:
            results.append(accept(rs, _new(Call, (position, node, arg, step)), out, 0.0))
    merge(rs, results, rs.supersteps + 1)
    _take_all(rs, results)
    return not rs.held


def _enter(rs: RunState) -> bool:
    """Run a superstep whose one task is a subgraph entry as the general path would;
    return ``False`` (and run nothing) when it is not one the inline path may run."""
    tasks = rs.tasks
    if len(tasks) != 1 or rs.held or rs.steps >= rs.max_steps:
        return False
    node, arg = tasks[0]
    child = node.child
    if child is None or arg is not NO_ARG or node.max_runs or node.retry:
        return False
    try:
        out = child.run_inline(rs)
    except CorralError:
        raise  # the child said what failed, by path
    except Exception as exc:  # input= failed
        _failed(node, rs.steps + 1, exc)
    take_entry(rs, node, out)
    rs.supersteps += 1
    router = node.inline_router
    if router is None:
        _leave_with(rs, node, None, None)
        return True
    try:  # what _leave_with does for a router that may take a route alone
        raw = router.func(view_of(rs.values, rs.flat, rs.notes))
    except Exception as exc:
        raise router_error(router.name, node.name, rs.steps, exc) from exc
    route = node.alone.get(raw) if type(raw) is str else None
    if route is None or not _count_alone(rs, route):
        _leave(rs, node, None, raw)
    return True


def _take_all(rs: RunState, results: list[TaskResult]) -> None:
    """Take the routes of a superstep's results in task order and set the next tasks, as
    :class:`~corral.runtime.routing.Routing` does when no one listens and nothing is saved."""
    plain: list[Node] = []
    sends: list[Task] = []
    view: FlatView | None = None
    held = rs.held
    for _, node, _, goto in results:
        then_nodes = node.then_nodes
        if then_nodes is not None:  # unguarded then= routes, taken as routing.take_then does
            for target in then_nodes:
                if target.wait_for:
                    if target.name not in held:
                        held.append(target.name)
                elif target not in plain:
                    plain.append(target)
            continue
        raw = None
        if node.router is not None:
            if view is None:
                view = view_of(rs.values, rs.flat, rs.notes)
            raw = _route(rs, node, node.router, view)
            view = _kept(rs, view)
        targets, via = leave_targets(node, goto, raw)
        take_routes(rs, node, targets, via, plain, sends)
    rs.tasks = next_tasks(rs, plain, sends)


def _failed(node: Node, step: int, exc: Exception) -> NoReturn:
    """Raise what a node run raised, as the general path does (``NodeError``)."""
    if isinstance(exc, InterruptWithoutCheckpointerError):
        raise exc
    raise node_error(node.name, step, exc) from exc


def _step(
    rs: RunState, node: Node, step: int, out: Any, view: FlatView
) -> tuple[Node | None, FlatView | None]:
    """Accept, merge and route a node run whose outcome is not plain replacements (the
    state is not flat, ``None``, a ``Command``, ...); return the next node to run inline
    and the view it reads (``None`` with no next node)."""
    goto: Targets | None = None
    kept: FlatView | None
    if out is None or (type(out) is dict and rs.tables.keyset.issuperset(out)):
        rs.steps = step  # accepted as the core would: counted and traced
        name = node.name
        rs.runs[name] = rs.runs.get(name, 0) + 1
        rs.trace.append((step, name, out, 0.0))
        kept = _merge(rs, node, out, view)
    else:
        goto, kept = _accept(rs, node, step, out, view)
    rs.supersteps += 1
    router = node.inline_router
    if router is None:
        if node.then_tasks is not None and not (rs.held or node.wait_for or node.joins):
            rs.tasks = node.then_tasks  # what _leave_with does for fixed then= targets
            return _next_with(rs, node.then_tasks, kept)
        return _leave_with(rs, node, goto, kept)
    if kept is None:
        kept = view_of(rs.values, rs.flat, rs.notes)
    try:
        raw = router.func(kept)
    except Exception as exc:
        raise router_error(router.name, node.name, step, exc) from exc
    if not rs.flat and kept._owned is not None:  # type: ignore[attr-defined]
        kept = None
    route = node.alone.get(raw) if type(raw) is str else None
    if route is not None and _count_alone(rs, route):
        following = route.node
    else:
        following = _inline_task(_leave(rs, node, None, raw))
    if following is not None and kept is None:
        kept = view_of(rs.values, rs.flat, rs.notes)
    return following, kept


def _count_alone(rs: RunState, route: AloneRoute) -> bool:
    """Take ``route`` if its guard is not used up (counting it); return whether it was."""
    key = route.guard
    if key is not None:
        count = rs.guards[key]
        if count >= route.max:
            return False
        rs.guards[key] = count + 1
    rs.tasks = route.tasks
    return True


def _inline_task(tasks: Sequence[Task]) -> Node | None:
    """Return the node of ``tasks`` if they are one task the inline path may run."""
    if len(tasks) != 1:
        return None
    node, arg = tasks[0]
    return node if arg is NO_ARG and node.inline else None


_dict_update = dict.update
_numbers = itertools.count()


def _fresh_number(_: object) -> int:
    """Return a number never returned before (for an interpreter without reference counts)."""
    return next(_numbers)


_refcount: Callable[[object], int] = getattr(sys, "getrefcount", _fresh_number)
"""How many references hold an object; where the interpreter cannot tell, a new number at
every call, so an update is never written in place."""


def _replaced(values: dict[str, Any], update: dict[str, Any]) -> FlatView:
    """Return a new flat view of ``values`` with the plain replacements of ``update``."""
    view = FlatView(values)
    _dict_update(view, update)
    return view


def _accept(
    rs: RunState, node: Node, step: int, out: Any, view: FlatView
) -> tuple[Targets | None, FlatView | None]:
    """Accept and merge any other outcome through the core; return its targets and the view
    the next reader may share (``None``: a new one)."""
    _, _, update, goto = accept(rs, _new(Call, (0, node, NO_ARG, step)), out, 0.0)
    return goto, _merge(rs, node, update, view)


def _kept(rs: RunState, view: FlatView) -> FlatView | None:
    """Return ``view`` if the next reader may share it (nothing mutable was read from it)."""
    return view if rs.flat or view._owned is None else None  # type: ignore[attr-defined]


def _leave_with(
    rs: RunState, node: Node, goto: Targets | None, view: FlatView | None
) -> tuple[Node | None, FlatView | None]:
    """Note a join's run (or an arrival at one), call the router of ``node`` if it has one,
    then take its routes (the general way); return the next node to run inline, if any."""
    if node.wait_for:  # what note_joins notes of one node run
        rs.arrived[node.name] = set()
    for join in node.joins:
        waited = rs.arrived.get(join)
        if waited is None:
            rs.arrived[join] = {node.name}
        else:
            waited.add(node.name)
    raw = None
    if node.router is not None:
        if view is None:
            view = view_of(rs.values, rs.flat, rs.notes)
        raw = _route(rs, node, node.router, view)
        view = view if rs.flat or view._owned is None else None  # type: ignore[attr-defined]
    return _next_with(rs, _leave(rs, node, goto, raw), view)


def _next_with(
    rs: RunState, tasks: Sequence[Task], view: FlatView | None
) -> tuple[Node | None, FlatView | None]:
    """Return the node of ``tasks`` if the inline path may run it next (one task, no
    ``Send`` argument, :attr:`Node.inline`), and its view (a new one if ``view`` is None)."""
    if len(tasks) != 1:
        return None, None
    node, arg = tasks[0]
    if arg is not NO_ARG or not node.inline:
        return None, None
    return node, view if view is not None else view_of(rs.values, rs.flat, rs.notes)


def _merge(
    rs: RunState, node: Node, update: dict[str, Any] | None, view: FlatView
) -> FlatView | None:
    """Merge ``update``; return the view the next reader may share (``None``: a new one)."""
    if not update:  # nothing changed: the view stays if nothing mutable was read from it
        return view if rs.flat or view._owned is None else None  # type: ignore[attr-defined]
    if rs.log is not None:
        rs.log.append((node.name, update))
    tables = rs.tables
    if tables.last_write.issuperset(update) and _all_immutable(map(type, update.values())):
        # Plain replacements by immutable values: what apply_writes does, without its loop.
        values = dict(rs.values)
        values.update(update)
        rs.values = values
    else:
        rs.values = apply_writes(
            rs.values,
            [(node.name, update)],
            tables.reducers,
            tables.empties,
            superstep=rs.supersteps + 1,
            notes=rs.notes,
        )
        rs.flat = is_flat(rs.values)
    return None


def _route(rs: RunState, node: Node, router: Router, view: FlatView) -> Any:
    try:
        if router.takes_ctx:
            return router.func(view, rs.context(node.name, rs.steps))
        return router.func(view)
    except Exception as exc:
        raise router_error(router.name, node.name, rs.steps, exc) from exc


def _leave(rs: RunState, node: Node, goto: Targets | None, raw: Any) -> Sequence[Task]:
    """Take the routes of ``node``; return the next tasks (also set on ``rs``)."""
    if node.then_tasks is not None and not rs.held:
        rs.tasks = node.then_tasks
        return rs.tasks
    target = raw if node.then is None and node.router is not None else _single(node, goto)
    alone = node.alone.get(target) if type(target) is str else None
    if alone is not None:
        key = alone.guard
        if key is None:
            rs.tasks = alone.tasks
            return rs.tasks
        count = rs.guards[key]
        if count < alone.max:
            rs.guards[key] = count + 1
            rs.tasks = alone.tasks
            return rs.tasks
    targets, via = leave_targets(node, goto, raw)
    plain: list[Node] = []
    sends: list[Task] = []
    take_routes(rs, node, targets, via, plain, sends)
    rs.tasks = next_tasks(rs, plain, sends)
    return rs.tasks if not rs.held else []


def _single(node: Node, goto: Targets | None) -> Any:
    """Return the one target a ``then`` or ``Command`` way out names, if it names one."""
    targets = node.then if node.then is not None else goto
    if targets is not None and len(targets) == 1:
        return targets[0]
    return None
