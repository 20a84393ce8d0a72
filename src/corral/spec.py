"""The graph spec: frozen data that every layer reads.

The DSL (:mod:`corral.dsl`) turns decorated functions into a :class:`GraphSpec`; the analyser,
the runtime, the renderers and the CLI read it and never import each other. Nothing here runs
a node or imports networkx.

Routes are the edges of the graph. :meth:`GraphSpec.edges` lists every possible route with
its kind and guard, including the ``START`` routes and the ``otherwise`` routes of guards, so
that every consumer sees the same edge set.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING, Any, Final, Generic, Literal

from typing_extensions import TypeVar

from corral.errors import GraphError

if TYPE_CHECKING:
    from corral.cost import Budget, Cost
    from corral.retry import Retry

__all__ = [
    "END",
    "START",
    "CounterFacts",
    "Cycle",
    "Edge",
    "EdgeKind",
    "End",
    "GraphSpec",
    "Guard",
    "KeySpec",
    "Location",
    "NodeSpec",
    "RouterSpec",
    "SubgraphSpec",
    "TargetSet",
]

START: Final = "__start__"
"""The virtual node every start node is routed from."""
END: Final = "__end__"
"""The virtual node a route names to finish the run."""
End = Literal["__end__"]
"""The annotation side of ``END``: ``-> Literal["revise"] | End``."""

_TargetT = TypeVar("_TargetT", bound=str, default=str, covariant=True)


# No __slots__ here (the other spec classes have them): Guard[...](...) sets __orig_class__.
@dataclass(frozen=True)
class Guard(Generic[_TargetT]):
    """A counter on one route: take it at most ``max`` times in a run, then go to ``otherwise``.

    Generic in its node names for type checkers: passed to a graph whose ``nodes=`` are
    given, ``target`` and ``otherwise`` are checked against them.

    >>> Guard("revise", max=3, otherwise=END)
    Guard(target='revise', max=3, otherwise='__end__')
    """

    target: _TargetT
    """The node the guarded route leads to."""
    _: KW_ONLY
    max: int
    """How many times the route may be taken in one run."""
    otherwise: _TargetT | End | None = None
    """Where the run goes once the route is used up; ``None`` raises ``GuardExhaustedError``."""

    def __post_init__(self) -> None:
        if isinstance(self.max, bool) or not isinstance(self.max, int) or self.max < 0:
            msg = (
                f"Guard({self.target!r}) has max={self.max!r}; "
                "give a whole number of times the route may be taken (0 or more)"
            )
            raise GraphError(msg)


@dataclass(frozen=True, slots=True)
class Location:
    """Where something was defined: a file, a 1-based line and a 1-based column."""

    file: str
    line: int
    col: int = 1


UNKNOWN_LOCATION: Final = Location("<unknown>", 0, 0)


@dataclass(frozen=True, slots=True)
class TargetSet:
    """The routes read from one return annotation.

    ``names`` is ``None`` when the annotation could not be read; ``problem`` says why
    (the analyser reports it as CR401).
    """

    names: tuple[str, ...] | None
    """Every node (or ``END``) the annotation allows, in annotation order."""
    many: bool = False
    """True for ``list[...]`` annotations: several targets may be taken at once (fan-out)."""
    sends: tuple[str, ...] = ()
    """The targets reached through ``Send`` (each ``Send`` runs its node once)."""
    problem: str | None = None
    """Why the annotation names no targets, when it does not."""


@dataclass(frozen=True, slots=True)
class KeySpec:
    """One key of the state schema."""

    name: str
    type: Any
    """The declared value type, without ``Annotated`` metadata."""
    reducer: Callable[[Any, Any], Any] | None = None
    """The merge function from ``Annotated[T, reducer]``, or ``None`` (last write wins)."""
    empty: Any = field(default=None, compare=False, hash=False)
    """The value a reducer starts from when the key is missing (``[]`` for a list), or ``None``."""


@dataclass(frozen=True, slots=True)
class CounterFacts:
    """What a node's or router's source says about loop counters (see :mod:`corral.counters`)."""

    increments: frozenset[str] = frozenset()
    """State keys the function returns incremented (``{"n": state["n"] + 1}``)."""
    compares: frozenset[str] = frozenset()
    """State keys the function compares with something (a bound)."""
    bumps: frozenset[str] = frozenset()
    """State keys the function increments in place (``state["n"] += 1``)."""
    advances: frozenset[str] = frozenset()
    """State keys the function returns built from their old value, not incremented: a list
    appended to or consumed, a plan whose steps are filled (``state["queue"][1:]``)."""
    inspects: frozenset[str] = frozenset()
    """State keys the function tests for truth or iterates over, without comparing them
    (``if not state["queue"]``, ``any(not s["done"] for s in state["plan"])``)."""
    iterates: frozenset[str] = frozenset()
    """State keys whose items the function walks (``for step in state["plan"].steps``): a
    router that leaves a loop when no step is left is bounded by the plan."""


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """One registered node."""

    name: str
    func: Callable[..., Any]
    location: Location
    start: bool = False
    then: tuple[str, ...] | None = None
    """Fixed routes from ``then=``; ``None`` when the node has none."""
    command: TargetSet | None = None
    """Targets from a `Command[Literal[...]]` annotation; `None` if not a command node."""
    command_fanout: bool = False
    """True when the node may return a ``Command`` whose ``goto`` names several targets."""
    max_runs: int | None = None
    guards: tuple[Guard, ...] = ()
    """Guards on the node's own routes (``then=`` or ``Command``)."""
    wait_for: tuple[str, ...] = ()
    writes: frozenset[str] | None = None
    """The keys the node may write; ``None`` when they are unknown."""
    takes_ctx: bool = False
    is_async: bool = False
    ignore: tuple[str, ...] = ()
    """Rule code prefixes suppressed for findings on this node."""
    input: Any = None
    """The type of the ``Send`` argument the node runs with (``input=``); ``None`` for the state."""
    retry: Retry | None = None
    """The retry policy of the node (its own ``retry=``, else the graph's); ``None``: no retry."""
    timeout_s: float | None = None
    """Seconds an async node may run before it is cancelled (``timeout=``)."""
    subgraph: SubgraphSpec | None = None
    """The child graph this node runs (``g.subgraph``); ``None`` for a function node."""
    counters: CounterFacts | None = None
    """What the node's source says about loop counters; ``None`` when not read."""
    cost: Cost | None = None
    """The most one attempt of the node spends (``cost=``); ``None`` when undeclared."""
    called: frozenset[str] = frozenset()
    """The names of the functions and methods the node's own body calls (read from its
    source: ``spend``, ``interrupt``); empty when the source cannot be read."""


@dataclass(frozen=True, slots=True)
class SubgraphSpec:
    """A child graph that runs as one node of its parent (registered with ``g.subgraph``)."""

    graph: GraphSpec
    """The child's own spec."""
    shared: tuple[str, ...]
    """The keys both state schemas have, in the parent's order."""
    input: Callable[[Any], Any] | None = None
    """Maps the parent's state (or a ``Send`` argument) to the child's input; ``None``: the
    shared keys."""
    output: Callable[[Any], Any] | None = None
    """Maps the child's final state to one parent update; ``None``: the child's writes to
    shared keys are applied one by one."""


@dataclass(frozen=True, slots=True)
class RouterSpec:
    """One registered router: the conditional way out of ``source``."""

    source: str
    name: str
    """The router function's name (used in messages)."""
    func: Callable[..., Any]
    location: Location
    targets: TargetSet
    guards: tuple[Guard, ...] = ()
    takes_ctx: bool = False
    is_async: bool = False
    ignore: tuple[str, ...] = ()
    max_sends: int | None = None
    """The most ``Send`` values one call may return (``max_sends=``); ``None`` when undeclared."""
    unmapped: tuple[str, ...] = ()
    """Values the router can return that its LangGraph ``path_map`` does not map (CR109)."""
    annotated: bool = False
    """True when LangGraph maps the router's value through its ``Literal`` return
    annotation (it has no ``path_map``): a value the annotation lacks is CR109 too."""
    falls_off: bool = False
    """True when some path through the router's body ends without returning a value, so
    LangGraph gets ``None`` (CR109)."""
    counters: CounterFacts | None = None
    """What the router's source says about loop counters; ``None`` when not read."""


EdgeKind = Literal["start", "then", "router", "command", "send", "otherwise"]


@dataclass(frozen=True, slots=True)
class Edge:
    """One possible route from ``source`` to ``target``."""

    source: str
    target: str
    kind: EdgeKind
    guard: Guard | None = None
    """The guard that counts this route, if any."""
    many: bool = False
    """True when the route belongs to a fan-out (taken together with its siblings)."""
    location: Location = UNKNOWN_LOCATION
    """Where the route is declared: the router, or the node for ``then=`` and ``Command``."""
    owner: str = ""
    """Who declares the route: a router's function name, or the source node's name."""


@dataclass(frozen=True, slots=True)
class Cycle:
    """One elementary cycle: its nodes in route order and the guards on its routes."""

    nodes: tuple[str, ...]
    guards: tuple[Guard, ...] = ()
    unguarded: bool = False
    """True when every step of the cycle has a route no guard counts (CR201), though
    ``guards`` may name guards on some of its routes."""
    fallbacks: tuple[tuple[str, Guard], ...] = ()
    """``(source, guard)`` for each guard whose ``otherwise`` route is a step of the cycle:
    falling back counts no guard, so such a step is unguarded even beside a guarded route."""

    def __str__(self) -> str:
        return " → ".join((*self.nodes, self.nodes[0]))


@dataclass(frozen=True, slots=True)
class GraphSpec:
    """Everything declared about one graph, with routes already read from annotations."""

    name: str | None
    location: Location
    """Where the ``Graph`` was created."""
    keys: tuple[KeySpec, ...]
    nodes: tuple[NodeSpec, ...]
    """Every registered node in registration order (duplicates included: CR106)."""
    routers: tuple[RouterSpec, ...] = ()
    max_steps: int = 50
    node_names: tuple[str, ...] | None = None
    """The names from the ``nodes=`` ``Literal``, when given."""
    update_keys: tuple[KeySpec, ...] | None = None
    """The keys of ``update_schema``, when given."""
    framework: Literal["corral", "langgraph"] = "corral"
    """Whose semantics run the graph: corral's, or LangGraph's (read by ``corral.langgraph``)."""
    budget: Budget | None = None
    """The most one run may spend (``Graph(..., budget=)``)."""
    _by_name: dict[str, NodeSpec] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    _routers_by_source: dict[str, tuple[RouterSpec, ...]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        for node in self.nodes:
            self._by_name.setdefault(node.name, node)
        grouped: dict[str, list[RouterSpec]] = {}
        for router in self.routers:
            grouped.setdefault(router.source, []).append(router)
        self._routers_by_source.update((k, tuple(v)) for k, v in grouped.items())

    def node(self, name: str) -> NodeSpec | None:
        """Return the first node registered as ``name``, or ``None``."""
        return self._by_name.get(name)

    @property
    def names(self) -> tuple[str, ...]:
        """Return the distinct node names in registration order."""
        return tuple(self._by_name)

    def key(self, name: str) -> KeySpec | None:
        """Return the state key called ``name``, or ``None``."""
        return next((key for key in self.keys if key.name == name), None)

    def routers_of(self, source: str) -> tuple[RouterSpec, ...]:
        """Return every router registered for ``source``, in registration order."""
        return self._routers_by_source.get(source, ())

    def edges(self) -> Iterator[Edge]:
        """Yield every possible route, ``START`` and ``otherwise`` routes included.

        Routes to names that are not nodes are yielded too (the analyser reports them).
        """
        for node in self._by_name.values():  # the first node registered as each name
            if node.start:
                yield Edge(START, node.name, "start", location=node.location, owner=node.name)
            fixed = node.then or ()
            owned: list[tuple[str, EdgeKind, bool]] = [(t, "then", len(fixed) > 1) for t in fixed]
            if node.command is not None:
                owned += [(t, "command", False) for t in node.command.names or ()]
            guards = {g.target: g for g in node.guards}
            for target, kind, many in owned:
                guard = guards.get(target)
                yield Edge(node.name, target, kind, guard, many, node.location, node.name)
            yield from _otherwise_edges(node.name, node.guards, node.location, node.name)
        for router in self.routers:
            guards = {g.target: g for g in router.guards}
            read = router.targets
            for target in read.names or ():
                via: EdgeKind = "send" if target in read.sends else "router"
                guard = guards.get(target)
                yield Edge(
                    router.source, target, via, guard, read.many, router.location, router.name
                )
            yield from _otherwise_edges(router.source, router.guards, router.location, router.name)


def _otherwise_edges(
    source: str, guards: tuple[Guard, ...], location: Location, owner: str
) -> Iterator[Edge]:
    for guard in guards:
        if guard.otherwise is not None:
            yield Edge(source, guard.otherwise, "otherwise", None, False, location, owner)
