"""What ``Graph``'s decorators record, and how a record becomes a spec.

Decorating records a function and where it was defined (:class:`NodeEntry`,
:class:`RouterEntry`); nothing is resolved or run. When the graph is checked, a record
becomes a :class:`~corral.spec.NodeSpec` or :class:`~corral.spec.RouterSpec`: route
annotations are read (:mod:`corral.targets`) and the keys a node writes are inferred from its
source (:mod:`corral.writes`), as are its loop counters (:mod:`corral.counters`), so
every layer after the DSL reads facts from the spec and none of them parses user code.
"""

from __future__ import annotations

import functools
import inspect
import linecache
import sys
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from corral import _subgraph, targets
from corral._names import NameTable
from corral.control import Send
from corral.cost import Cost
from corral.counters import read_counters
from corral.errors import RouteError
from corral.retry import Retry
from corral.spec import Guard, KeySpec, Location, NodeSpec, RouterSpec
from corral.writes import called_names, infer_command_fanout, infer_writes

__all__ = [
    "NodeEntry",
    "RouterEntry",
    "caller_locals",
    "caller_location",
    "def_location",
    "limit_sends",
    "node_spec",
    "router_spec",
]


@dataclass(frozen=True, kw_only=True)
class _Entry:
    """What a decorator recorded about one function, for nodes and routers alike."""

    func: Callable[..., Any]
    localns: Mapping[str, Any] | None
    """The locals of the frame that called the decorator, for resolving annotations."""
    location: Location
    guards: tuple[Guard, ...]
    ignore: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class NodeEntry(_Entry):
    """What ``@g.node(...)`` recorded about one function."""

    name: str
    start: bool
    then: tuple[str, ...] | None
    max_runs: int | None
    wait_for: tuple[str, ...]
    writes: tuple[str, ...] | None
    input: Any = None
    retry: Retry | None = None
    timeout_s: float | None = None
    subgraph: _subgraph.SubgraphEntry | None = None
    cost: Cost | None = None


@dataclass(frozen=True, kw_only=True)
class RouterEntry(_Entry):
    """What ``@g.router(...)`` recorded about one function."""

    source: str
    max_sends: int | None = None


def node_spec(
    entry: NodeEntry, keys: tuple[KeySpec, ...], retry: Retry | None, names: NameTable | None = None
) -> NodeSpec:
    """Return the spec of a recorded node, reading its annotation and inferring its writes.

    ``keys`` are the graph's state keys (a subgraph node shares some with its child),
    ``retry`` the graph's default retry policy and ``names`` the graph's node names (the
    names its annotation routes to are mapped to them).
    """
    declared = NodeSpec(
        name=entry.name,
        func=entry.func,
        location=entry.location,
        start=entry.start,
        then=entry.then,
        max_runs=entry.max_runs,
        guards=entry.guards,
        wait_for=entry.wait_for,
        ignore=entry.ignore,
    )
    if entry.subgraph is not None:
        sub = _subgraph.read_child(entry.subgraph, entry.name, keys)
        is_async = _subgraph.is_async(sub.graph)
        return replace(declared, writes=_subgraph.writes_of(sub), is_async=is_async, subgraph=sub)
    command = targets.read_command_targets(entry.func, entry.localns, table=names)
    return replace(
        declared,
        command=command,
        command_fanout=command is not None and infer_command_fanout(entry.func),
        writes=infer_writes(entry.func) if entry.writes is None else frozenset(entry.writes),
        takes_ctx=takes_ctx(entry.func),
        is_async=inspect.iscoroutinefunction(entry.func),
        input=entry.input,
        retry=entry.retry if entry.retry is not None else retry,
        timeout_s=entry.timeout_s,
        counters=read_counters(entry.func),
        cost=entry.cost,
        called=called_names(entry.func),
    )


def router_spec(entry: RouterEntry, names: NameTable | None = None) -> RouterSpec:
    """Return the spec of a recorded router, reading its return annotation.

    The names it routes to are mapped to the graph's node names (``names``), when given.
    """
    limit = entry.max_sends
    return RouterSpec(
        source=entry.source,
        name=entry.func.__name__,
        func=entry.func if limit is None else limit_sends(entry.func, limit),
        location=entry.location,
        targets=targets.read_router_targets(entry.func, entry.localns, table=names),
        guards=entry.guards,
        takes_ctx=takes_ctx(entry.func),
        is_async=inspect.iscoroutinefunction(entry.func),
        ignore=entry.ignore,
        max_sends=entry.max_sends,
        counters=read_counters(entry.func),
    )


def limit_sends(func: Callable[..., Any], limit: int) -> Callable[..., Any]:
    """Return ``func`` checked to return at most ``limit`` ``Send`` values per call.

    The spec holds the checked function, so every engine path enforces ``max_sends=``, the
    width ``g.bound()`` relies on; the function the user decorated is left as it was.
    """
    name = getattr(func, "__name__", repr(func))

    def check(result: Any) -> Any:
        if isinstance(result, (list, tuple)):
            sends = sum(1 for item in result if isinstance(item, Send))
            if sends > limit:
                msg = (
                    f"router {name!r} returned {sends} Send values, more than its "
                    f"max_sends={limit}; raise max_sends or send fewer"
                )
                raise RouteError(msg, router=name, value=result, allowed=())
        return result

    if inspect.iscoroutinefunction(func):

        async def limited_async(*args: Any, **kwargs: Any) -> Any:
            return check(await func(*args, **kwargs))

        return functools.wraps(func)(limited_async)

    def limited(*args: Any, **kwargs: Any) -> Any:
        return check(func(*args, **kwargs))

    return functools.wraps(func)(limited)


def takes_ctx(func: Callable[..., Any]) -> bool:
    """Return whether ``func`` takes a second positional parameter (the context).

    A plain function (no ``__wrapped__``, ``__signature__`` or bound ``self``) is read from
    its code object, which is what ``inspect.signature`` would read, at a fraction of the
    cost on graphs of thousands of nodes; anything else goes through ``inspect``.
    """
    code = getattr(func, "__code__", None)
    if (
        isinstance(func, types.FunctionType)
        and isinstance(code, types.CodeType)
        and not hasattr(func, "__wrapped__")
        and not hasattr(func, "__signature__")
    ):
        return code.co_argcount >= 2 or bool(code.co_flags & inspect.CO_VARARGS)
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [
        p
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
    ]
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in positional)


def caller_locals(depth: int) -> Mapping[str, Any] | None:
    """Capture the locals of the frame that called the decorator factory.

    At module level the frame's locals are its globals, already reachable from the
    function, so nothing is captured.
    """
    frame = sys._getframe(depth + 1)
    if frame.f_locals is frame.f_globals:
        return None
    return dict(frame.f_locals)


def caller_location(depth: int) -> Location:
    frame = sys._getframe(depth + 1)
    return Location(frame.f_code.co_filename, frame.f_lineno, 1)


def def_location(func: Callable[..., Any]) -> Location:
    """Return the location of the ``def`` line (decorators come before it)."""
    code = getattr(func, "__code__", None)
    if code is None:
        return Location(getattr(func, "__module__", "<unknown>") or "<unknown>", 0, 0)
    filename = code.co_filename
    line = code.co_firstlineno
    for offset in range(0, 200):
        text = linecache.getline(filename, line + offset)
        if not text:
            break
        stripped = text.lstrip()
        if stripped.startswith(("def ", "async def ")):
            return Location(filename, line + offset, len(text) - len(stripped) + 1)
    return Location(filename, line, 1)
