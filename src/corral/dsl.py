"""The builder: ``Graph`` and its ``node`` / ``router`` / ``subgraph`` decorators.

Decorating records a function and where it was defined; nothing is resolved or run. Route
annotations are read when the graph is checked (:meth:`Graph.spec`), against the function's
module globals and the locals captured when its decorator ran (see :mod:`corral._registry`).
The protocols the decorators are typed with live in :mod:`corral.signatures`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Concatenate, Generic, Never, overload

from typing_extensions import TypeForm

from corral import _deps, _subgraph, targets
from corral._names import NameTable
from corral._registry import (
    NodeEntry,
    RouterEntry,
    caller_locals,
    caller_location,
    def_location,
    node_spec,
    router_spec,
)
from corral.cost import Budget, Cost, require
from corral.errors import GraphError
from corral.retry import Retry
from corral.schema import read_schema
from corral.signatures import (
    ANY_TYPE,
    InputT,
    NodeDecorator,
    NodeFunction,
    NodesT,
    ParamsT,
    ReturnT,
    RouterDecorator,
    RouterFunction,
    StateT,
    UpdateT,
)
from corral.spec import End, GraphSpec, Guard

if TYPE_CHECKING:
    from corral.analysis.bound import Bound
    from corral.analysis.diagnostic import Diagnostic
    from corral.checkpoint.base import Checkpointer
    from corral.control import AnswerT
    from corral.runtime.app import CompiledGraph
    from corral.runtime.context import DepsT
    from corral.spec import Cycle

__all__ = ["Graph", "NodeDecorator", "NodeFunction", "RouterDecorator", "RouterFunction"]


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
        update_schema: type[UpdateT] | None = None,
        nodes: None = None,
        *,
        name: str | None = None,
        max_steps: int = 50,
        retry: Retry | None = None,
        budget: Budget | None = None,
    ) -> None: ...
    @overload
    def __init__(  # nodes= given: the first overload takes an omitted one
        self,
        state_schema: type[StateT],
        update_schema: type[UpdateT] | None = None,
        nodes: TypeForm[NodesT] = ...,
        *,
        name: str | None = None,
        max_steps: int = 50,
        retry: Retry | None = None,
        budget: Budget | None = None,
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
        budget: Budget | None = None,
    ) -> None:
        _subgraph.check_count(max_steps, "max_steps", "node runs", least=1)
        self.state_schema = state_schema
        self.update_schema = update_schema
        self.nodes_literal = nodes
        self.name = name
        self.max_steps = max_steps
        self.retry = _subgraph.check_retry(retry, "Graph")
        self.budget = require(budget, Budget, "budget")
        self._localns = caller_locals(1)
        """The locals of the function that made the graph: its schemas' annotations may
        name them (as route annotations name the locals their decorators saw)."""
        self._keys = read_schema(state_schema, localns=self._localns)
        self._location = caller_location(1)
        self._nodes: list[NodeEntry] = []
        self._routers: list[RouterEntry] = []
        self._names = NameTable()

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
        guards: Sequence[Guard[NodesT]] = (),
        wait_for: Sequence[NodesT] = (),
        writes: Sequence[str] | None = None,
        ignore: Sequence[str] = (),
        input: None = None,
        retry: Retry | None = None,
        timeout: float | None = None,
        cost: Cost | None = None,
    ) -> NodeDecorator[StateT, UpdateT, NodesT]: ...
    @overload
    def node(
        self,
        name: NodesT | Sequence[Never] | None = None,
        *,
        start: bool = False,
        then: NodesT | End | Sequence[NodesT | End] | None = None,
        max_runs: int | None = None,
        guards: Sequence[Guard[NodesT]] = (),
        wait_for: Sequence[NodesT] = (),
        writes: Sequence[str] | None = None,
        ignore: Sequence[str] = (),
        input: TypeForm[InputT],
        retry: Retry | None = None,
        timeout: float | None = None,
        cost: Cost | None = None,
    ) -> NodeDecorator[InputT, UpdateT, NodesT]: ...
    def node(
        self,
        name: NodesT | Sequence[Never] | None = None,
        *,
        start: bool = False,
        then: NodesT | End | Sequence[NodesT | End] | None = None,
        max_runs: int | None = None,
        guards: Sequence[Guard[NodesT]] = (),
        wait_for: Sequence[NodesT] = (),
        writes: Sequence[str] | None = None,
        ignore: Sequence[str] = (),
        input: TypeForm[Any] | None = None,
        retry: Retry | None = None,
        timeout: float | None = None,
        cost: Cost | None = None,
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
            cost: the most one attempt of the node spends (``Cost``); the graph's cost
                ceiling (``g.bound().cost``) adds it up, and a run that spends more
                raises ``CostExceededError``.
        """
        localns = caller_locals(1)
        if name is not None and not isinstance(name, str):
            msg = f"node name={name!r} is not a str; pass the node's name, or omit it"
            raise GraphError(msg)
        node_name = name
        names = self._names
        routes = (then,) if isinstance(then, str) else then
        then_routes = names.names(tuple(routes)) if routes is not None else None
        if max_runs is not None:
            _subgraph.check_count(max_runs, "max_runs", "runs", least=1)
        node_retry = _subgraph.check_retry(retry, "node")
        timeout_s = _subgraph.check_timeout(timeout)
        require(cost, Cost, "cost")

        def register(
            node_func: NodeFunction[Any, UpdateT, NodesT, ParamsT, ReturnT], /
        ) -> Callable[ParamsT, ReturnT]:
            func: Callable[..., Any] = node_func
            code = getattr(func, "__code__", None)
            own = names.name(node_name if node_name is not None else _subgraph.default_name(func))
            self._nodes.append(
                NodeEntry(
                    func=func,
                    name=own,
                    localns=localns,
                    location=def_location(func) if code is not None else caller_location(1),
                    start=start,
                    then=then_routes,
                    max_runs=max_runs,
                    guards=names.guards(guards, f"node {own!r}"),
                    wait_for=names.names(tuple(wait_for)),
                    writes=tuple(writes) if writes is not None else None,
                    ignore=tuple(ignore),
                    input=input,
                    retry=node_retry,
                    timeout_s=timeout_s,
                    cost=cost,
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
        guards: Sequence[Guard[NodesT]] = (),
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
        _subgraph.check_child(self, child, name, Graph)
        register = self.node(
            name, start=start, then=then, max_runs=max_runs, guards=guards, wait_for=wait_for,
            ignore=ignore,
        )  # fmt: skip
        register(_subgraph.stand_in(name))
        entry = self._nodes[-1]
        self._nodes[-1] = dataclasses.replace(
            entry,
            location=caller_location(1),
            subgraph=_subgraph.SubgraphEntry(child, input, output),
        )

    def router(
        self,
        source: NodesT,
        *,
        guards: Sequence[Guard[NodesT]] = (),
        ignore: Sequence[str] = (),
        max_sends: int | None = None,
    ) -> RouterDecorator[StateT]:
        """Register the decorated function as the conditional way out of ``source``.

        Its targets are read from its return annotation: ``Literal[...]``, ``... | End``,
        ``list[Literal[...]]`` (fan-out) or ``list[Send[Literal[...]]]`` (map-reduce).
        ``max_sends=N`` declares that one call returns at most ``N`` ``Send`` values, which
        lets :meth:`bound` count them; a call that returns more raises ``RouteError``
        (wrapped in ``NodeError``, like any router failure).

        For type checkers the decorator keeps the function's signature and return type
        exactly, and rejects a router whose first parameter does not take the state or that
        does not return routes. The names in its return annotation are checked by its own
        ``return`` statements and by the analyser (CR101), not here: see
        :class:`~corral.signatures.RouterFunction`.
        """
        localns = caller_locals(1)
        if max_sends is not None:
            _subgraph.check_count(max_sends, "max_sends", "Send values", least=0)

        def register(
            router_func: RouterFunction[StateT, ParamsT, ReturnT], /
        ) -> Callable[Concatenate[StateT, ParamsT], ReturnT]:
            func: Callable[..., Any] = router_func
            self._routers.append(
                RouterEntry(
                    func=func,
                    source=self._names.name(source),
                    localns=localns,
                    location=def_location(func),
                    guards=self._names.guards(guards, f"the router of {source!r}"),
                    ignore=tuple(ignore),
                    max_sends=max_sends,
                )
            )
            return router_func

        return register

    def _readers(self, where: str = "") -> Iterator[_deps.Reader]:
        """Yield the nodes and routers that may read ``ctx``, a subgraph's by its path (a
        child runs with its parent's deps)."""
        for node in self._nodes:
            child = node.subgraph.child if node.subgraph is not None else None
            if isinstance(child, Graph):
                yield from child._readers(f"{where}{node.name}/")
            else:
                yield f"node {where + node.name!r}", node.func, node.localns
        for router in self._routers:
            label = f"router {router.func.__name__!r} of {where + router.source!r}"
            yield label, router.func, router.localns

    def spec(self) -> GraphSpec:
        """Return the graph as a :class:`GraphSpec`, reading every route annotation now."""
        names = self._names
        node_names = None
        if self.nodes_literal is not None:
            found = targets.read_literal_form(self.nodes_literal)
            if found is None:
                msg = (
                    f"nodes={self.nodes_literal!r} is not a Literal of node names; "
                    "pass Literal['a', 'b', ...]"
                )
                raise GraphError(msg)
            node_names = names.names(found)
        update_keys = (
            read_schema(self.update_schema, role="update_schema", localns=self._localns)
            if self.update_schema is not None
            else None
        )
        return GraphSpec(
            name=self.name,
            location=self._location,
            keys=self._keys,
            nodes=tuple(node_spec(entry, self._keys, self.retry, names) for entry in self._nodes),
            routers=tuple(router_spec(entry, names) for entry in self._routers),
            max_steps=self.max_steps,
            node_names=node_names,
            update_keys=update_keys,
            budget=self.budget,
        )

    def check(self) -> list[Diagnostic]:
        """Return every finding of the analyser, sorted; never raise for a defect."""
        from corral.analysis import analyse, collector_paused

        with collector_paused():  # reading the spec allocates as much as the rules do
            return analyse(self.spec())

    def cycles(self, limit: int = 1000) -> list[Cycle]:
        """Return at most ``limit`` elementary cycles, unguarded ones first.

        The result has a ``truncated`` attribute that is true when the list was cut.
        """
        from corral.analysis import list_cycles

        return list_cycles(self.spec(), limit=limit)

    def bound(self) -> Bound:
        """Return a sound upper bound on the node runs of one run, per run and per node.

        ``steps`` is ``None`` when nothing bounds a run (an unguarded cycle, a ``Send``
        router without ``max_sends=``); ``reason`` says why. See :class:`~corral.Bound`.
        """
        from corral.analysis.bound import bound_of

        return bound_of(self.spec())

    def compile(
        self,
        *,
        checkpointer: Checkpointer | None = None,
        interrupt_before: Sequence[NodesT] = (),
        interrupt_after: Sequence[NodesT] = (),
        max_steps: int | None = None,
        telemetry: bool = False,
        deps_type: TypeForm[DepsT] = ANY_TYPE,
        answer_type: TypeForm[AnswerT] = ANY_TYPE,
    ) -> CompiledGraph[StateT, UpdateT, DepsT, AnswerT]:
        """Check the graph and return a runnable app.

        ``telemetry=True`` emits OpenTelemetry spans per run and node run through the
        global tracer provider (extra ``corral[otel]``; see ``docs/observability.md``).
        Type checkers hold ``invoke(deps=...)`` to ``deps_type`` and ``Resume(...)`` to
        ``answer_type``; ``compile`` holds ``deps_type`` to each ``ctx: Context[X]``.

        Raises:
            GraphError: an analyser error (all of them are in ``.diagnostics``), interrupts
                without a checkpointer, or a ``Context[X]`` that ``deps_type`` is not.
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
            raise GraphError(msg, diagnostics=tuple(found))
        if (interrupt_before or interrupt_after) and checkpointer is None:
            msg = (
                "interrupt_before/interrupt_after need a checkpointer to pause and resume; "
                "pass compile(checkpointer=MemorySaver()) or SqliteSaver(path)"
            )
            raise GraphError(msg)
        for node in (*interrupt_before, *interrupt_after):
            if _subgraph.find_node(spec, node) is None:  # a child's node by path: "sub/node"
                msg = f"interrupt on unknown node {node!r}; name one of {list(spec.names)}"
                raise GraphError(msg)
        _deps.check_deps(self._readers(), deps_type)
        return CompiledGraph(
            spec,
            checkpointer=checkpointer,
            interrupt_before=tuple(interrupt_before),
            interrupt_after=tuple(interrupt_after),
            max_steps=max_steps,
            telemetry=telemetry,
        )
