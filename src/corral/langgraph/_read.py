"""Read a LangGraph ``StateGraph`` (or a compiled graph's builder) into a :class:`GraphSpec`.

Everything is read by attribute name, because LangGraph's classes moved between modules
across versions (checked on 0.2.76, 0.6.11 and 1.2.24); langgraph itself is never imported.
The builder holds the declared facts: ``nodes`` (name → spec with ``runnable``, the input
schema and ``ends``), ``edges`` (fixed pairs, ``START``/``END`` included), ``waiting_edges``
(joins), ``branches`` (conditional edges: ``path`` and ``ends``), ``channels`` and
``schemas``. ``compiled.get_graph()`` is not used: since 0.6 it is drawn by simulating
declared writes, so a router with unknown targets becomes a single edge to ``END``.

How LangGraph maps onto the spec:

- fixed edges and waiting edges become ``then=`` routes (several fire together, like a
  ``then=`` tuple); the target of a waiting edge ``wait_for``-s its sources;
- a node with no edge, no conditional edge and no ``Command`` ends the run there, as
  LangGraph does, so it is given a route to ``END``;
- a conditional edge is a router whose targets are the ``path_map`` values (or the
  router's ``Literal`` annotation) plus the ``Send`` literals of its source; with neither a
  ``path_map`` nor an annotation its targets are unknown (CR401);
- ``Command`` destinations come from the node's ``ends``; a node whose body builds a
  ``Command`` with no declared destinations has unknown targets (CR401).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import Any

from corral.counters import read_counters
from corral.langgraph._routes import Returns, command_gotos, read_returns
from corral.langgraph._source import (
    SendTargets,
    def_location,
    is_builder,
    is_compiled,
    returns_command,
    send_targets,
)
from corral.spec import (
    END,
    START,
    UNKNOWN_LOCATION,
    GraphSpec,
    KeySpec,
    Location,
    NodeSpec,
    RouterSpec,
    TargetSet,
)
from corral.targets import read_literal_form, read_return_annotation
from corral.writes import infer_command_fanout, infer_writes

__all__ = ["Reading", "builder_of", "read"]


@dataclass(frozen=True)
class Reading:
    """A LangGraph graph read into a spec, with the graphs it contains."""

    spec: GraphSpec
    subgraphs: list[tuple[str, Any]] = field(default_factory=list)
    """``(node name, compiled graph)`` for each node that is itself a compiled graph."""
    funcs: dict[str, Callable[..., Any] | None] = field(default_factory=dict)
    """Each node's function; ``None`` for a subgraph node, or a runnable that wraps none."""
    branches: list[tuple[str, Any]] = field(default_factory=list)
    """``(key, path_map)`` of each router's conditional edge, in the order of ``spec.routers``."""


def builder_of(graph: Any) -> Any:
    """Return the ``StateGraph`` of ``graph`` (itself, or a compiled graph's ``builder``).

    Raises:
        TypeError: ``graph`` is neither.
    """
    if is_compiled(graph):
        graph = graph.builder
    if not is_builder(graph):
        msg = (
            f"{graph!r} is not a LangGraph StateGraph or compiled graph; pass the "
            "StateGraph(...) builder or the result of its .compile()"
        )
        raise TypeError(msg)
    return graph


def user_function(runnable: Any) -> Callable[..., Any] | None:
    """Return the function a LangGraph runnable wraps (``.func``, else ``.afunc``), through
    ``functools.partial`` and decorators that keep ``__wrapped__`` (``functools.wraps``)."""
    func: Any = None
    for attr in ("func", "afunc"):
        found = getattr(runnable, attr, None)
        if callable(found):
            func = found
            break
    else:
        func = runnable if inspect.isfunction(runnable) else None
    for _ in range(8):
        if isinstance(func, functools.partial):
            func = func.func
        elif callable(getattr(func, "__wrapped__", None)):
            func = func.__wrapped__
        else:
            break
    return func if callable(func) else None


_LIBRARIES = frozenset(
    {"langgraph", "langgraph_prebuilt", "langgraph_supervisor", "langgraph_swarm", "langchain"}
)
"""Packages whose files are never shown as a finding's place."""


def _is_langgraph_code(func: Callable[..., Any]) -> bool:
    top = str(getattr(func, "__module__", "")).split(".")[0]
    return top in _LIBRARIES or top.startswith("langchain_")


def _location(func: Any) -> Location | None:
    """Return where ``func``'s ``def`` is in the user's code; ``None`` in LangGraph's own."""
    return None if func is None or _is_langgraph_code(func) else def_location(func)


def _schema_location(schema: Any) -> Location:
    try:
        lines, line = inspect.getsourcelines(schema)
        file = inspect.getsourcefile(schema)
    except (OSError, TypeError, SyntaxError):  # no source, or a class defined in a notebook
        return UNKNOWN_LOCATION
    return Location(file or "<unknown>", line, 1) if lines else UNKNOWN_LOCATION


def _keys(builder: Any) -> tuple[KeySpec, ...]:
    channels: dict[str, Any] = dict(getattr(builder, "channels", None) or {})
    for schema_channels in (getattr(builder, "schemas", None) or {}).values():
        for name, channel in dict(schema_channels).items():
            channels.setdefault(name, channel)
    for name in getattr(builder, "managed", None) or {}:
        channels.setdefault(name, None)
    for schema in _input_schemas(builder):
        for name in _schema_keys(schema):
            channels.setdefault(name, None)
    keys: list[KeySpec] = []
    for name, channel in channels.items():
        if name.startswith("__"):
            continue
        reducer = getattr(channel, "operator", None)
        keys.append(
            KeySpec(name, getattr(channel, "typ", Any), reducer if callable(reducer) else None)
        )
    return tuple(keys)


def _input_schemas(builder: Any) -> Iterable[Any]:
    """Yield the input schemas of nodes and routers: their keys are state keys too."""
    for node_spec in dict(builder.nodes).values():
        yield input_schema(node_spec)
    for branches in dict(getattr(builder, "branches", None) or {}).values():
        for branch in dict(branches).values():
            yield getattr(branch, "input_schema", None)


def _schema_keys(schema: Any) -> tuple[str, ...]:
    if not isinstance(schema, type):
        return ()
    try:
        return tuple(typing.get_type_hints(schema))
    except Exception:
        return tuple(getattr(schema, "__annotations__", {}))


def _names(ends: Any) -> tuple[str, ...]:
    if not ends:
        return ()
    values = ends.keys() if isinstance(ends, dict) else ends
    return tuple(dict.fromkeys(str(v) for v in values))


def _annotation(func: Callable[..., Any]) -> tuple[str, ...] | None:
    try:
        annotation = read_return_annotation(func, None)
    except Exception:
        return None
    return read_literal_form(annotation) if annotation is not None else None


def _router(source: str, key: str, branch: Any, fallback: Location) -> RouterSpec:
    func = user_function(getattr(branch, "path", None))
    name = getattr(func, "__name__", "<lambda>")
    name = key if name == "<lambda>" else name
    location = _location(func) or fallback
    ends = getattr(branch, "ends", None)
    sends = send_targets(func) if func is not None else SendTargets()
    sent = sends.names
    unmapped: tuple[str, ...] = ()
    annotated = False
    returns = read_returns(func) if func is not None else Returns(None)
    # what the body returns, else the Literal annotation
    values = returns.values if returns.values is not None or func is None else _annotation(func)
    falls = returns.none and not (ends is not None and None in ends)
    known: tuple[str, ...] | None = None
    if ends is not None:
        ends = dict(ends)
        literal = _annotation(func) if func is not None else None
        annotated = literal is not None and list(ends.items()) == [(n, n) for n in literal]
        if values is not None and all(isinstance(k, str) for k in ends):
            unmapped = tuple(v for v in values if v not in ends)
            # An entry no return produces is not a route (LangGraph never takes it).
            ends = {k: v for k, v in ends.items() if k in values} or ends
        known = _names(ends.values())
    elif not sends.computed and (values is not None or sent):
        known = values or ()
    if known is not None:
        targets = TargetSet(tuple(dict.fromkeys((*known, *sent))), many=bool(sent), sends=sent)
    elif sends.computed:
        problem = "it sends to a node named at run time (Send(<expression>, ...))"
        targets = TargetSet(None, problem=problem)
    else:
        problem = "it has no path_map, no Literal return annotation, and returns a value read "
        targets = TargetSet(None, problem=problem + "at run time")
    return RouterSpec(
        source,
        name,
        func or (lambda state: None),
        location,
        targets,
        unmapped=unmapped,
        annotated=annotated,
        falls_off=falls and func is not None and not _is_langgraph_code(func),
        counters=read_counters(func) if func is not None else None,
    )


def _per_source(routers: list[RouterSpec], maps: list[Any]) -> list[RouterSpec]:
    """Judge a router shared by several sources per source.

    Each source's ``path_map`` then maps the values that source can produce: a value one
    map lacks but another source's map has is one this source does not produce (the
    debate router that never sends a speaker back to itself), so it is not CR109.
    """
    shared: dict[Any, list[int]] = {}
    for index, router in enumerate(routers):
        code = getattr(getattr(router.func, "__func__", router.func), "__code__", None)
        if code is not None and maps[index] is not None:
            shared.setdefault(code, []).append(index)
    kept = list(routers)
    for indexes in shared.values():
        if len({routers[i].source for i in indexes}) < 2:
            continue
        mapped = {k for i in indexes for k in maps[i]}
        for i in indexes:
            unmapped = tuple(v for v in routers[i].unmapped if v not in mapped)
            kept[i] = dataclasses.replace(routers[i], unmapped=unmapped)
    return kept


def _command(func: Callable[..., Any] | None, ends: Any) -> TargetSet | None:
    names = _names(ends)
    if names:
        gotos = command_gotos(func) if func is not None else None
        if gotos is not None:
            # The gotos are the routes LangGraph takes; a declared destination no
            # Command(goto=...) names is not one (destinations only draw the graph).
            names = gotos
        return TargetSet(names)
    if func is not None and returns_command(func):
        return TargetSet(
            None,
            problem="it returns Command but declares no destinations (no Command[Literal[...]] "
            "return annotation and no destinations= in add_node)",
        )
    return None


def _fixed_routes(builder: Any) -> tuple[dict[str, list[str]], dict[str, list[str]], set[str]]:
    then: dict[str, list[str]] = {}
    wait_for: dict[str, list[str]] = {}
    starts: set[str] = set()

    def add(source: str, target: str) -> None:
        if source == START:
            starts.add(target)
        elif target not in then.setdefault(source, []):
            then[source].append(target)

    for source, target in sorted(getattr(builder, "edges", None) or ()):
        add(source, target)
    for sources, target in sorted(getattr(builder, "waiting_edges", None) or ()):
        for source in sources:
            add(source, target)
            if source not in wait_for.setdefault(target, []):
                wait_for[target].append(source)
    return then, wait_for, starts


def read(graph: Any, name: str | None = None, where: Location | None = None) -> Reading:
    """Return the spec of a LangGraph ``StateGraph`` or compiled graph.

    ``where`` is the place to show for what has none in the user's code (a graph LangGraph
    built, like ``create_react_agent``'s: its schema and nodes are LangGraph's own).
    """
    builder = builder_of(graph)
    schema = getattr(builder, "state_schema", None) or getattr(builder, "schema", None)
    graph_location = _schema_location(schema) if schema is not None else UNKNOWN_LOCATION
    if where is not None and (schema is None or _is_langgraph_code(schema)):
        graph_location = where
    then, wait_for, starts = _fixed_routes(builder)
    node_specs: dict[str, Any] = dict(builder.nodes)
    funcs: dict[str, Callable[..., Any] | None] = {}
    subgraphs: list[tuple[str, Any]] = []
    locations: dict[str, Location] = {}
    for node_name, node_spec in node_specs.items():
        runnable = getattr(node_spec, "runnable", None)
        if is_compiled(runnable):
            subgraphs.append((node_name, runnable))
            funcs[node_name] = None
            locations[node_name] = _first_location(runnable, graph_location)
        else:
            funcs[node_name] = user_function(runnable)
            locations[node_name] = _location(funcs[node_name]) or graph_location
    routers: list[RouterSpec] = []
    branch_keys: list[tuple[str, Any]] = []
    for source, branches in dict(getattr(builder, "branches", None) or {}).items():
        fallback = locations.get(source, graph_location)
        for key, branch in dict(branches).items():
            router = _router(source, key, branch, fallback)
            routers.append(router)
            branch_keys.append((key, getattr(branch, "ends", None)))
            after: str | None = getattr(branch, "then", None)  # 0.2: then= of the branch
            for target in router.targets.names or () if after else ():
                if after and target != END and after not in then.setdefault(target, []):
                    then[target].append(after)
            if source == START and router.targets.many:
                # A fan-out from START starts its targets together; a router from START
                # starts one of them (its route from START says which may).
                starts.update(router.targets.names or ())
    routers = _per_source(routers, [ends for _, ends in branch_keys])
    routed = {r.source for r in routers}
    nodes = [
        _node(n, s, funcs[n], locations[n], then, wait_for, starts, routed)
        for n, s in node_specs.items()
    ]
    return Reading(
        GraphSpec(
            name or getattr(graph, "name", None),
            graph_location,
            _keys(builder),
            tuple(nodes),
            tuple(routers),
            max_steps=25,
            framework="langgraph",
        ),
        subgraphs,
        funcs,
        branch_keys,
    )


def _node(
    name: str,
    node_spec: Any,
    func: Callable[..., Any] | None,
    location: Location,
    then: dict[str, list[str]],
    wait_for: dict[str, list[str]],
    starts: set[str],
    routed: Collection[str],
) -> NodeSpec:
    command = _command(func, getattr(node_spec, "ends", None))
    fixed: tuple[str, ...] | None = tuple(then[name]) if name in then else None
    if fixed is None and command is None and name not in routed:
        fixed = (END,)  # LangGraph ends the run at a node with no way out
    return NodeSpec(
        name,
        func or getattr(node_spec, "runnable", None) or (lambda state: None),
        location,
        start=name in starts,
        then=fixed,
        command=command,
        command_fanout=command is not None and func is not None and infer_command_fanout(func),
        wait_for=tuple(wait_for.get(name, ())),
        writes=infer_writes(func) if func is not None else None,
        is_async=inspect.iscoroutinefunction(func),
        counters=read_counters(func) if func is not None else None,
    )


def _first_location(compiled: Any, fallback: Location) -> Location:
    """Return where a subgraph's first node function is (a subgraph node has no function)."""
    nodes = dict(getattr(compiled.builder, "nodes", None) or {}).values()
    found = (_location(user_function(getattr(n, "runnable", None))) for n in nodes)
    return next((place for place in found if place is not None), fallback)


def input_schema(node_spec: Any) -> Any:
    """Return a node's input schema (``input_schema`` since 0.3, ``input`` in 0.2)."""
    found = getattr(node_spec, "input_schema", None)
    return found if found is not None else getattr(node_spec, "input", None)
