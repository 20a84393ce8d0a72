"""The builder: ``Graph`` and its ``node`` / ``router`` decorators.

Decorating records a function and where it was defined; nothing is resolved or run. Route
annotations are read when the graph is checked (:meth:`Graph.spec`), against the function's
module globals and the locals captured when its decorator ran.
"""

from __future__ import annotations

import dataclasses
import inspect
import linecache
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Concatenate, Generic, Never, Protocol, TypeAlias, overload

from typing_extensions import ParamSpec, TypeForm, TypeVar

from corral import _subgraph, targets
from corral.control import Command, Send
from corral.errors import GraphError
from corral.retry import Retry
from corral.schema import read_schema
from corral.spec import End, GraphSpec, Guard, Location, NodeSpec, RouterSpec
from corral.writes import infer_writes

if TYPE_CHECKING:
    from corral.analysis.diagnostic import Diagnostic
    from corral.checkpoint.base import Checkpointer
    from corral.runtime.app import CompiledGraph
    from corral.spec import Cycle

__all__ = ["Graph", "NodeDecorator", "NodeFunction", "RouterDecorator", "RouterFunction"]

StateT = TypeVar("StateT")
UpdateT = TypeVar("UpdateT", default=Mapping[str, Any])
NodesT = TypeVar("NodesT", bound=str, default=str)
ParamsT = ParamSpec("ParamsT")
ReturnT = TypeVar("ReturnT")
InputT = TypeVar("InputT")
StateT_contra = TypeVar("StateT_contra", contravariant=True)
StateT_co = TypeVar("StateT_co", covariant=True)
UpdateT_contra = TypeVar("UpdateT_contra", contravariant=True)
NodesT_contra = TypeVar("NodesT_contra", bound=str, contravariant=True)
UpdateT_co = TypeVar("UpdateT_co", covariant=True)
NodesT_co = TypeVar("NodesT_co", bound=str, covariant=True)
ReturnT_co = TypeVar("ReturnT_co", covariant=True)

NodeResult: TypeAlias = UpdateT_co | Command[NodesT_co | End] | None
"""What a node may return: an update, ``None`` or a ``Command`` naming nodes (or ``END``)."""
Route: TypeAlias = NodesT_co | End | Send[NodesT_co] | Sequence[NodesT_co | End | Send[NodesT_co]]
"""What a router may return: a node name, ``END``, a ``Send``, or a list of them (fan-out)."""


class NodeFunction(Protocol[StateT_contra, UpdateT_co, NodesT_co, ParamsT, ReturnT_co]):
    """A function that fits as a node taking ``StateT``, on a graph with ``UpdateT``, ``NodesT``.

    Only type checkers read this. Its two ``__call__`` overloads are an intersection (a
    function must fit both), not a dispatch: the first captures the function's exact
    signature and return type (``ParamsT``, ``ReturnT``) so the decorator can hand it back
    unchanged; the second says what the graph needs: a first parameter that takes
    ``StateT`` (the graph's state, or the ``input=`` type of a node a ``Send`` runs), and a
    return that is an update, ``None`` or a ``Command`` naming nodes of the graph, or an
    awaitable of one (``async def``).

    The second overload's ``*args: Any, **kwargs: Any`` stand for "any further parameters"
    (a ``ctx``), so only the first parameter and the return are checked there. mypy picks
    the overloads it infers ``ParamsT`` from with a pre-check, and a function whose first
    parameter is positional-only (``state: State, /``) passes that pre-check for the second
    overload alone, which leaves ``ParamsT`` unsolved: mypy then rejects the node. Write the
    state parameter without ``/`` (pyright accepts both). Capturing the first parameter as
    ``Any`` apart from the rest, as :class:`RouterFunction` does, would avoid that but give
    the decorated node the state's type and no name for its first parameter; a node (unlike
    a router) is often called by hand, in tests, so its exact signature is kept instead.
    """

    @overload
    def __call__(self, *args: ParamsT.args, **kwargs: ParamsT.kwargs) -> ReturnT_co: ...
    @overload
    def __call__(
        self, state: StateT_contra, /, *args: Any, **kwargs: Any
    ) -> NodeResult[UpdateT_co, NodesT_co] | Awaitable[NodeResult[UpdateT_co, NodesT_co]]: ...


# mypy infers the variance of a protocol from its overloads as if they were a dispatch, and
# asks for a covariant state; in this intersection the state is a parameter (contravariant).
class RouterFunction(Protocol[StateT_contra, NodesT_co, ParamsT, ReturnT_co]):  # type: ignore[misc]
    """A function that fits as a router of a graph with state ``StateT`` and node names ``NodesT``.

    Only type checkers read this; like :class:`NodeFunction` its overloads are an
    intersection. The first captures the parameters after the state (``ParamsT``) and the
    return type (``ReturnT``); the second checks that the first parameter takes the state
    and that the return is a :data:`Route` of the graph's nodes, or an awaitable of one
    (``async def``).

    The state parameter is captured as ``Any``, not as a type variable of its own: mypy
    chooses the overloads it infers from with a pre-check that unsolved type variables fail,
    so a router whose only parameter is positional-only would match the second overload
    alone and leave the captured types unsolved. The decorated router's first parameter is
    typed as the graph's state.
    """

    @overload
    def __call__(
        self, state: Any, /, *args: ParamsT.args, **kwargs: ParamsT.kwargs
    ) -> ReturnT_co: ...
    @overload
    def __call__(  # type: ignore[overload-cannot-match]
        self, state: StateT_contra, /, *args: ParamsT.args, **kwargs: ParamsT.kwargs
    ) -> Route[NodesT_co] | Awaitable[Route[NodesT_co]]: ...


class NodeDecorator(Protocol[StateT_co, UpdateT_contra, NodesT_contra]):
    """What ``Graph.node(...)`` returns: registers a :class:`NodeFunction`, returns it unchanged.

    ``StateT_co`` is what the node's first parameter must take: the graph's state, or the
    ``input=`` type for a node that a ``Send`` runs.
    """

    def __call__(
        self, func: NodeFunction[StateT_co, UpdateT_contra, NodesT_contra, ParamsT, ReturnT], /
    ) -> Callable[ParamsT, ReturnT]: ...


class RouterDecorator(Protocol[StateT, NodesT_contra]):
    """What ``Graph.router(...)`` returns: registers a :class:`RouterFunction`, returns it."""

    def __call__(
        self, func: RouterFunction[StateT, NodesT_contra, ParamsT, ReturnT], /
    ) -> Callable[Concatenate[StateT, ParamsT], ReturnT]: ...


@dataclass(frozen=True)
class _NodeEntry:
    func: Callable[..., Any]
    name: str
    localns: Mapping[str, Any] | None
    location: Location
    start: bool
    then: tuple[str, ...] | None
    max_runs: int | None
    guards: tuple[Guard, ...]
    wait_for: tuple[str, ...]
    writes: tuple[str, ...] | None
    ignore: tuple[str, ...]
    input: Any = None
    retry: Retry | None = None
    timeout_s: float | None = None
    subgraph: _subgraph.SubgraphEntry | None = None


@dataclass(frozen=True)
class _RouterEntry:
    func: Callable[..., Any]
    source: str
    localns: Mapping[str, Any] | None
    location: Location
    guards: tuple[Guard, ...]
    ignore: tuple[str, ...]


class Graph(Generic[StateT, UpdateT, NodesT]):
    """A graph under construction: a state schema, nodes and the routes between them.

    >>> from typing import Literal, TypedDict
    >>> class State(TypedDict):
    ...     n: int
    >>> g = Graph(State)
    >>> @g.node(start=True, then="__end__")
    ... def bump(state: State) -> dict[str, object]:
    ...     return {"n": state["n"] + 1}
    >>> g.check()
    []
    """

    # No self-types on the overloads: a type variable an overload does not bind takes its
    # default (``Mapping[str, Any]``, ``str``), or the type an annotation asks for, so that
    # ``g: Graph[State, StateUpdate, Nodes] = Graph(State, StateUpdate)`` works too.
    @overload
    def __init__(
        self,
        state_schema: type[StateT],
        update_schema: None = None,
        nodes: None = None,
        *,
        name: str | None = None,
        max_steps: int = 50,
        retry: Retry | None = None,
    ) -> None: ...
    @overload
    def __init__(
        self,
        state_schema: type[StateT],
        update_schema: type[UpdateT],
        nodes: None = None,
        *,
        name: str | None = None,
        max_steps: int = 50,
        retry: Retry | None = None,
    ) -> None: ...
    @overload
    def __init__(
        self,
        state_schema: type[StateT],
        update_schema: type[UpdateT] | None = None,
        *,
        nodes: TypeForm[NodesT],
        name: str | None = None,
        max_steps: int = 50,
        retry: Retry | None = None,
    ) -> None: ...
    @overload
    def __init__(
        self,
        state_schema: type[StateT],
        update_schema: type[UpdateT] | None,
        nodes: TypeForm[NodesT],
        *,
        name: str | None = None,
        max_steps: int = 50,
        retry: Retry | None = None,
    ) -> None: ...
    def __init__(
        self,
        state_schema: type[StateT],
        update_schema: type[UpdateT] | None = None,
        nodes: TypeForm[NodesT] | None = None,
        *,
        name: str | None = None,
        max_steps: int = 50,
        retry: Retry | None = None,
    ) -> None:
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            msg = f"max_steps={max_steps!r} must be a whole number of node runs, 1 or more"
            raise GraphError(msg)
        self.state_schema = state_schema
        self.update_schema = update_schema
        self.nodes_literal = nodes
        self.name = name
        self.max_steps = max_steps
        self.retry = _subgraph.check_retry(retry, "Graph")
        self._keys = read_schema(state_schema)
        self._location = _caller_location(1)
        self._nodes: list[_NodeEntry] = []
        self._routers: list[_RouterEntry] = []

    def __repr__(self) -> str:
        label = f" {self.name!r}" if self.name else ""
        return f"<Graph{label} state={self.state_schema.__qualname__} nodes={len(self._nodes)}>"

    # Two overloads so that mypy checks a node's first parameter against the state, or
    # against the ``input=`` type of a node that a ``Send`` runs. ``Sequence[Never]`` in the
    # first one's ``name`` accepts no name a user would write (the implementation rejects
    # anything but a str); it is there because when no overload matches, mypy explains the
    # failure with an overload whose parameters "look like" the arguments, and without it a
    # typo such as ``name="drfat"`` would get "no overload variant matches argument type
    # str" instead of an ``arg-type`` error naming the literal and the graph's names.
    @overload
    def node(
        self,
        name: NodesT | Sequence[Never] | None = None,
        *,
        start: bool = False,
        then: NodesT | End | Sequence[NodesT | End] | None = None,
        max_runs: int | None = None,
        guards: Sequence[Guard] = (),
        wait_for: Sequence[NodesT] = (),
        writes: Sequence[str] | None = None,
        ignore: Sequence[str] = (),
        input: None = None,
        retry: Retry | None = None,
        timeout: float | None = None,
    ) -> NodeDecorator[StateT, UpdateT, NodesT]: ...
    @overload
    def node(
        self,
        name: NodesT | Sequence[Never] | None = None,
        *,
        start: bool = False,
        then: NodesT | End | Sequence[NodesT | End] | None = None,
        max_runs: int | None = None,
        guards: Sequence[Guard] = (),
        wait_for: Sequence[NodesT] = (),
        writes: Sequence[str] | None = None,
        ignore: Sequence[str] = (),
        input: TypeForm[InputT],
        retry: Retry | None = None,
        timeout: float | None = None,
    ) -> NodeDecorator[InputT, UpdateT, NodesT]: ...
    def node(
        self,
        name: NodesT | Sequence[Never] | None = None,
        *,
        start: bool = False,
        then: NodesT | End | Sequence[NodesT | End] | None = None,
        max_runs: int | None = None,
        guards: Sequence[Guard] = (),
        wait_for: Sequence[NodesT] = (),
        writes: Sequence[str] | None = None,
        ignore: Sequence[str] = (),
        input: TypeForm[Any] | None = None,
        retry: Retry | None = None,
        timeout: float | None = None,
    ) -> NodeDecorator[Any, UpdateT, NodesT]:
        """Register the decorated function as a node; return it unchanged.

        For type checkers the decorator keeps the function's signature and return type
        exactly, and rejects a function that does not fit the graph: its first parameter must
        take the state (or the ``input=`` type), and its return must be an update
        (``UpdateT``), ``None`` or a ``Command`` naming nodes of the graph, or an awaitable of
        one of these for an ``async def``.

        >>> from typing import TypedDict
        >>> from corral import Send
        >>> class Doc(TypedDict):
        ...     text: str
        >>> class Docs(TypedDict):
        ...     docs: list[str]
        >>> g = Graph(Docs)
        >>> @g.node(input=Doc, then="__end__")
        ... def summarise(doc: Doc) -> None:
        ...     return None
        >>> g.spec().node("summarise").input is Doc
        True

        Args:
            name: the node's name; the function's name when omitted.
            start: route from ``START`` to this node.
            then: fixed route(s) out: a node name, ``END`` or a tuple of names (fan-out).
            max_runs: the most times this node may run in one run.
            guards: guards on this node's ``then=`` or ``Command`` routes.
            wait_for: nodes that must all have run since this node last ran (a join).
            writes: the state keys the node writes, when inference cannot see them.
            ignore: rule codes (or prefixes) not to report for this node.
            input: the type of the argument a ``Send`` runs this node with, when it is not
                run with the state (LangGraph's ``input_schema``); mypy then checks the
                node's first parameter against it. Recorded as :attr:`NodeSpec.input`.
            retry: run the node again on a transient error (the graph's ``retry=`` if omitted).
            timeout: seconds an async node may run before it is cancelled.
        """
        localns = _caller_locals(1)
        if name is not None and not isinstance(name, str):
            msg = f"node name={name!r} is not a str; pass the node's name, or omit it"
            raise GraphError(msg)
        node_name = name
        if isinstance(then, str):
            then_routes: tuple[str, ...] | None = (then,)
        elif then is None:
            then_routes = None
        else:
            then_routes = tuple(then)
        if max_runs is not None and (
            isinstance(max_runs, bool) or not isinstance(max_runs, int) or max_runs < 1
        ):
            msg = f"max_runs={max_runs!r} must be a whole number of runs, 1 or more"
            raise GraphError(msg)
        node_retry = _subgraph.check_retry(retry, "node")
        timeout_s = _subgraph.check_timeout(timeout)

        def register(
            node_func: NodeFunction[Any, UpdateT, NodesT, ParamsT, ReturnT], /
        ) -> Callable[ParamsT, ReturnT]:
            func: Callable[..., Any] = node_func
            code = getattr(func, "__code__", None)
            self._nodes.append(
                _NodeEntry(
                    func=func,
                    name=node_name if node_name is not None else _subgraph.default_name(func),
                    localns=localns,
                    location=_def_location(func) if code is not None else _caller_location(1),
                    start=start,
                    then=then_routes,
                    max_runs=max_runs,
                    guards=tuple(guards),
                    wait_for=tuple(wait_for),
                    writes=tuple(writes) if writes is not None else None,
                    ignore=tuple(ignore),
                    input=input,
                    retry=node_retry,
                    timeout_s=timeout_s,
                )
            )
            return node_func

        return register

    def subgraph(
        self,
        name: NodesT,
        child: Graph[Any, Any, Any],
        *,
        start: bool = False,
        then: NodesT | End | Sequence[NodesT | End] | None = None,
        guards: Sequence[Guard] = (),
        wait_for: Sequence[NodesT] = (),
        max_runs: int | None = None,
        input: Callable[[StateT], Mapping[str, Any]] | None = None,
        output: Callable[[Any], UpdateT] | None = None,
        ignore: Sequence[str] = (),
    ) -> None:
        """Register ``child`` (a ``Graph``, not compiled) to run as the node ``name``.

        The child gets the parent's values of the keys both schemas share (or ``input(state)``)
        and runs to its end; its nodes' writes to shared keys are then applied to the parent
        in order, through the parent's reducers (or ``output(child_state)`` is applied once).

        >>> from typing import TypedDict
        >>> class State(TypedDict):
        ...     n: int
        >>> child = Graph(State)
        >>> @child.node(start=True, then="__end__")
        ... def bump(state: State) -> dict[str, int]:
        ...     return {"n": state["n"] + 1}
        >>> g = Graph(State)
        >>> g.subgraph("inner", child, start=True, then="__end__")
        >>> g.spec().node("inner").writes
        frozenset({'n'})
        """
        _subgraph.check_child(self, child, name)
        register = self.node(
            name, start=start, then=then, max_runs=max_runs, guards=guards, wait_for=wait_for,
            ignore=ignore,
        )  # fmt: skip
        register(_subgraph.stand_in(name))
        entry = self._nodes[-1]
        self._nodes[-1] = dataclasses.replace(
            entry,
            location=_caller_location(1),
            subgraph=_subgraph.SubgraphEntry(child, input, output),
        )

    def router(
        self, source: NodesT, *, guards: Sequence[Guard] = (), ignore: Sequence[str] = ()
    ) -> RouterDecorator[StateT, NodesT]:
        """Register the decorated function as the conditional way out of ``source``.

        Its targets are read from its return annotation: ``Literal[...]``, ``... | End``,
        ``list[Literal[...]]`` (fan-out) or ``list[Send[Literal[...]]]`` (map-reduce).

        For type checkers the decorator keeps the function's signature and return type
        exactly, and rejects a router whose first parameter does not take the state or whose
        return names a node the graph's ``nodes=`` ``Literal`` does not list.
        """
        localns = _caller_locals(1)

        def register(
            router_func: RouterFunction[StateT, NodesT, ParamsT, ReturnT], /
        ) -> Callable[Concatenate[StateT, ParamsT], ReturnT]:
            func: Callable[..., Any] = router_func
            self._routers.append(
                _RouterEntry(
                    func=func,
                    source=source,
                    localns=localns,
                    location=_def_location(func),
                    guards=tuple(guards),
                    ignore=tuple(ignore),
                )
            )
            return router_func

        return register

    def spec(self) -> GraphSpec:
        """Return the graph as a :class:`GraphSpec`, reading every route annotation now."""
        nodes = tuple(self._node_spec(entry) for entry in self._nodes)
        routers = tuple(
            RouterSpec(
                source=entry.source,
                name=entry.func.__name__,
                func=entry.func,
                location=entry.location,
                targets=targets.read_router_targets(entry.func, entry.localns),
                guards=entry.guards,
                takes_ctx=_takes_ctx(entry.func),
                is_async=inspect.iscoroutinefunction(entry.func),
                ignore=entry.ignore,
            )
            for entry in self._routers
        )
        node_names = _literal_names(self.nodes_literal) if self.nodes_literal is not None else None
        update_keys = (
            read_schema(self.update_schema, role="update_schema")
            if self.update_schema is not None
            else None
        )
        return GraphSpec(
            name=self.name,
            location=self._location,
            keys=self._keys,
            nodes=nodes,
            routers=routers,
            max_steps=self.max_steps,
            node_names=node_names,
            update_keys=update_keys,
        )

    def _node_spec(self, entry: _NodeEntry) -> NodeSpec:
        if entry.subgraph is not None:
            return _subgraph.node_spec(entry, self._keys)
        if entry.writes is not None:
            writes: frozenset[str] | None = frozenset(entry.writes)
        else:
            writes = infer_writes(entry.func)
        return NodeSpec(
            name=entry.name,
            func=entry.func,
            location=entry.location,
            start=entry.start,
            then=entry.then,
            command=targets.read_command_targets(entry.func, entry.localns),
            max_runs=entry.max_runs,
            guards=entry.guards,
            wait_for=entry.wait_for,
            writes=writes,
            writes_declared=entry.writes is not None,
            takes_ctx=_takes_ctx(entry.func),
            is_async=inspect.iscoroutinefunction(entry.func),
            ignore=entry.ignore,
            input=entry.input,
            retry=entry.retry if entry.retry is not None else self.retry,
            timeout_s=entry.timeout_s,
        )

    def check(self) -> list[Diagnostic]:
        """Return every finding of the analyser, sorted; never raise for a defect."""
        from corral.analysis import analyse

        return analyse(self.spec())

    def cycles(self, limit: int = 1000) -> list[Cycle]:
        """Return at most ``limit`` elementary cycles, unguarded ones first.

        The result has a ``truncated`` attribute that is true when the list was cut.
        """
        from corral.analysis import list_cycles

        return list_cycles(self.spec(), limit=limit)

    def compile(
        self,
        *,
        checkpointer: Checkpointer | None = None,
        interrupt_before: Sequence[NodesT] = (),
        interrupt_after: Sequence[NodesT] = (),
        max_steps: int | None = None,
    ) -> CompiledGraph[StateT]:
        """Check the graph and return a runnable app.

        Raises:
            GraphError: the analyser found an error (all of them are in ``.diagnostics``),
                or interrupts were asked for without a checkpointer.
        """
        from corral.analysis import analyse
        from corral.runtime.app import CompiledGraph

        spec = self.spec()
        found = analyse(spec)
        errors = [d for d in found if d.severity == "error"]
        if errors:
            label = f"graph {self.name!r}" if self.name else "the graph"
            lines = "\n".join(f"  {d.file}:{d.line}:{d.col}: {d.code} {d.message}" for d in errors)
            msg = f"{label} has {len(errors)} error(s); fix them to compile:\n{lines}"
            raise GraphError(msg, diagnostics=found)
        if (interrupt_before or interrupt_after) and checkpointer is None:
            msg = (
                "interrupt_before/interrupt_after need a checkpointer to pause and resume; "
                "pass compile(checkpointer=MemorySaver()) or SqliteSaver(path)"
            )
            raise GraphError(msg)
        for node in (*interrupt_before, *interrupt_after):
            if spec.node(node) is None:
                msg = f"interrupt on unknown node {node!r}; name one of {list(spec.names)}"
                raise GraphError(msg)
        return CompiledGraph(
            spec,
            checkpointer=checkpointer,
            interrupt_before=tuple(interrupt_before),
            interrupt_after=tuple(interrupt_after),
            max_steps=max_steps,
        )


def _literal_names(form: Any) -> tuple[str, ...]:
    names = targets.read_literal_form(form)
    if names is None:
        msg = f"nodes={form!r} is not a Literal of node names; pass Literal['a', 'b', ...]"
        raise GraphError(msg)
    return names


def _takes_ctx(func: Callable[..., Any]) -> bool:
    """Return whether ``func`` takes a second positional parameter (the context)."""
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


def _caller_locals(depth: int) -> Mapping[str, Any] | None:
    """Capture the locals of the frame that called the decorator factory.

    At module level the frame's locals are its globals, already reachable from the
    function, so nothing is captured.
    """
    frame = sys._getframe(depth + 1)
    if frame.f_locals is frame.f_globals:
        return None
    return dict(frame.f_locals)


def _caller_location(depth: int) -> Location:
    frame = sys._getframe(depth + 1)
    return Location(frame.f_code.co_filename, frame.f_lineno, 1)


def _def_location(func: Callable[..., Any]) -> Location:
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
