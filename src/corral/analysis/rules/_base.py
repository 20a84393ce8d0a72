"""The parts every rule shares: the rule table, ``Finding``, wording and shared facts."""

from __future__ import annotations

import difflib
import textwrap
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from corral.analysis.diagnostic import Diagnostic, Severity
from corral.spec import END, START, Edge, GraphSpec, Guard, Location, NodeSpec, RouterSpec

if TYPE_CHECKING:
    from corral.analysis._graph import SpecGraph

__all__ = [
    "RULES",
    "Finding",
    "GuardSite",
    "Rule",
    "close_match",
    "declaration_of",
    "excused_nodes",
    "fix_name",
    "guard_sites",
    "has_no_way_out",
    "has_unreadable_route",
    "join_words",
    "meant_names",
    "quote_names",
    "routes_unresolved",
    "route_owner",
    "rule",
    "show_type",
    "site_ignore",
    "stray_router_owners",
]


@dataclass(frozen=True)
class Finding:
    """One problem a rule found, before it is placed and turned into a ``Diagnostic``."""

    message: str
    nodes: tuple[str, ...] = ()
    """The nodes involved (an unknown name may appear too, for CR101 and CR108)."""
    location: Location | None = None
    """Where to point; ``None`` points at the first registered node, else at the graph."""
    site_ignore: tuple[str, ...] = ()
    """The ``ignore=`` prefixes of the router (or node) the finding is placed at."""
    severity: Severity | None = None
    """The finding's own severity, for a rule that reports errors and warnings; ``None``:
    the rule's."""
    facts: Mapping[str, Any] | None = None
    """What the finding measured (``Diagnostic.facts``)."""


@dataclass(frozen=True)
class Rule:
    """A registered rule: its code, slug, severity and the function that checks it."""

    code: str
    slug: str
    severity: Severity
    check: Callable[[SpecGraph], Iterable[Finding]]

    @property
    def summary(self) -> str:
        """Return the first line of the rule function's docstring."""
        return (self.check.__doc__ or "").strip().splitlines()[0]

    @property
    def docs(self) -> str:
        """Return the rest of the rule function's docstring: why it matters, how to fix it."""
        lines = (self.check.__doc__ or "").strip().splitlines()[1:]
        return textwrap.dedent("\n".join(lines)).strip()

    def place(self, finding: Finding, spec: GraphSpec) -> Diagnostic:
        """Return ``finding`` as this rule's diagnostic, at its location, else at the first
        registered node it names, else at the graph."""
        location = finding.location
        if location is None:
            first = next((spec.node(n) for n in finding.nodes if spec.node(n)), None)
            location = first.location if first is not None else spec.location
        return Diagnostic(
            code=self.code,
            slug=self.slug,
            severity=finding.severity or self.severity,
            message=finding.message,
            nodes=finding.nodes,
            file=location.file,
            line=location.line,
            col=location.col,
            facts=finding.facts,
        )


RULES: dict[str, Rule] = {}
"""Every rule by code, in code order."""

RuleFuncT: TypeAlias = "Callable[[SpecGraph], Iterable[Finding]]"


def rule(code: str, slug: str, severity: Severity = "error") -> Callable[[RuleFuncT], RuleFuncT]:
    """Register the decorated function as the check for ``code``."""

    def register(func: RuleFuncT) -> RuleFuncT:
        if code in RULES:
            msg = f"rule code {code!r} is registered twice"
            raise ValueError(msg)
        RULES[code] = Rule(code, slug, severity, func)
        ordered = sorted(RULES.items())
        RULES.clear()
        RULES.update(ordered)
        return func

    return register


# -- wording ------------------------------------------------------------------------------


def join_words(parts: Iterable[str]) -> str:
    """Return ``a``, ``a and b`` or ``a, b and c``."""
    shown = list(parts)
    if len(shown) <= 1:
        return "".join(shown)
    return ", ".join(shown[:-1]) + " and " + shown[-1]


def quote_names(names: Iterable[str]) -> str:
    """Return ``'a'``, ``'a' and 'b'`` or ``'a', 'b' and 'c'``."""
    return join_words(repr(n) for n in names)


def close_match(name: str, candidates: Iterable[str]) -> str | None:
    matches = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return matches[0] if matches else None


def fix_name(name: str, candidates: Iterable[str], kind: str = "node") -> str:
    match = close_match(name, candidates)
    if match is not None:
        return f"fix the name (did you mean {match!r}?) or register a {kind} named {name!r}"
    return f"fix the name or register a {kind} named {name!r}"


def show_type(tp: Any) -> str:
    if isinstance(tp, type) and not getattr(tp, "__args__", None):
        return tp.__qualname__
    return repr(tp).replace("typing.", "").replace("typing_extensions.", "")


def declaration_of(edge: Edge, graph: SpecGraph) -> NodeSpec | RouterSpec | None:
    """Return the router or node whose declaration holds ``edge``."""
    if edge.kind in ("router", "send", "otherwise"):
        for router in graph.spec.routers_of(edge.source):
            if router.name == edge.owner and router.location == edge.location:
                return router
        if edge.kind != "otherwise":
            return None
    return graph.spec.node(edge.source)


def route_owner(edge: Edge, graph: SpecGraph) -> str:
    if isinstance(declaration_of(edge, graph), RouterSpec):
        return f"router {edge.owner!r}"
    return f"node {edge.owner!r}"


def site_ignore(edge: Edge, graph: SpecGraph) -> tuple[str, ...]:
    declarer = declaration_of(edge, graph)
    return declarer.ignore if declarer is not None else ()


# -- facts shared by rules ----------------------------------------------------------------


def has_no_way_out(graph: SpecGraph, node: NodeSpec) -> bool:
    return not node.then and node.command is None and not graph.spec.routers_of(node.name)


def has_unreadable_route(graph: SpecGraph, node: NodeSpec) -> bool:
    if node.command is not None and node.command.names is None:
        return True
    return any(r.targets.names is None for r in graph.spec.routers_of(node.name))


def routes_unresolved(graph: SpecGraph) -> bool:
    """Return whether some route cannot be read, or names a node too far from any name.

    An annotation that names no targets (CR401), or a name that is no node and close to
    none (CR101), may be meant to lead anywhere, so what it leaves unreachable (CR103) or
    off every cycle (CR202) is not reported until it is fixed: one mistake, one finding. A
    misspelt name close to a node's is read as that node instead (``repaired=True``).
    """
    if graph.repairs is None:
        return True
    spec = graph.spec
    if any(r.targets.names is None for r in spec.routers):
        return True
    return any(n.command is not None and n.command.names is None for n in spec.nodes)


def meant_names(graph: SpecGraph, names: Iterable[str]) -> list[str] | None:
    """Return ``names`` with each misspelt one read as the node (or ``END``) it is closest to.

    ``None`` when a name is close to none: it may be meant for any node, so what it would
    change is not judged until CR101's finding is fixed (one mistake, one finding).
    """
    meant = [n if graph.is_node(n) or n == END else graph.closest(n) for n in names]
    return [n for n in meant if n is not None] if None not in meant else None


def stray_router_owners(graph: SpecGraph) -> set[str] | None:
    """Return the nodes the routers registered for a misspelt source are meant for.

    ``None`` when such a source is close to no node name (it may be meant for any node).
    """
    stray = [r.source for r in graph.spec.routers if not graph.is_node(r.source)]
    owners = {graph.closest(source, end=False) for source in stray if source != START}
    return {n for n in owners if n is not None} if None not in owners else None


def excused_nodes(graph: SpecGraph) -> set[str]:
    """Return the nodes whose way out is already reported (CR101, CR104, CR401)."""
    excused = {e.source for e in graph.unknown_targets if graph.is_node(e.source)}
    for node in graph.nodes:
        if has_no_way_out(graph, node) or has_unreadable_route(graph, node):
            excused.add(node.name)
    return excused


@dataclass(frozen=True)
class GuardSite:
    """A node or router that declares guards, with what its guards may count."""

    who: str
    """``node 'a'`` or ``router 'after_a'``, for messages."""
    source: str
    guards: tuple[Guard, ...]
    location: Location
    declared: tuple[str, ...] | None
    """The targets its own routes can take; ``None`` when its annotation is unreadable."""
    ignore: tuple[str, ...]
    is_node: bool


def guard_sites(graph: SpecGraph) -> Iterator[GuardSite]:
    """Yield every node and router that declares guards."""
    for node in graph.nodes:
        if node.guards:
            declared: tuple[str, ...] | None = node.then or ()
            if node.command is not None:
                names = node.command.names
                declared = None if names is None else (*(node.then or ()), *names)
            yield GuardSite(
                f"node {node.name!r}",
                node.name,
                node.guards,
                node.location,
                declared,
                node.ignore,
                is_node=True,
            )
    for router in graph.spec.routers:
        if router.guards:
            yield GuardSite(
                f"router {router.name!r}",
                router.source,
                router.guards,
                router.location,
                router.targets.names,
                router.ignore,
                is_node=False,
            )
