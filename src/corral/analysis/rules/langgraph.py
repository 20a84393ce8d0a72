"""LangGraph graphs: CR109, CR204, and the findings that LangGraph's semantics word differently.

LangGraph has no guards: a cycle ends only when a router (or a node returning ``Command``)
chooses to leave it, and otherwise the run stops at ``recursion_limit`` with
``GraphRecursionError``. So every cycle is reported (CR201) unless its way out is chosen
by a counter that a node on the cycle increments (CR204, a warning: the bound is hand-made,
so check it). Which cycles need a cut stays the decision of CR201's rule; this module only
says it in LangGraph's terms, from the counter facts the reader stored on the spec
(:class:`~corral.spec.CounterFacts`; nothing is parsed here).

CR109 and CR204 find nothing on a corral graph: its routers have no ``path_map``, and its
counter loops stay CR201, where a ``Guard`` is the fix.
"""

from __future__ import annotations

from collections.abc import Iterator

from corral.analysis._graph import SpecGraph
from corral.analysis.diagnostic import Diagnostic
from corral.analysis.rules._base import RULES, Finding, quote_names, rule
from corral.analysis.rules._loops import CounterLoop, counter_loop
from corral.spec import END, START, GraphSpec, Location

__all__ = [
    "APPLIES",
    "REWORDED",
    "CounterLoop",
    "counter_loop",
    "counter_loops",
    "langgraph_findings",
    "unmapped_routes",
]

APPLIES = ("CR101", "CR103", "CR105", "CR109", "CR201", "CR204", "CR301", "CR302", "CR401")
"""The codes that hold under LangGraph's semantics (not CR104: LangGraph ends a run at a node
with no edges; not CR107: a node's fixed edges, conditional edges and ``Command`` all fire)."""

REWORDED = ("CR105", "CR201", "CR401")
"""The codes whose LangGraph findings :func:`langgraph_findings` words in LangGraph's terms."""

_PORT = "or port the loop to corral with a Guard"


def _source_text(source: str) -> str:
    return "START" if source == START else repr(source)


@rule("CR109", "unmapped-route")
def unmapped_routes(graph: SpecGraph) -> Iterator[Finding]:
    """(LangGraph) A router can return a value its path_map does not map.

    A LangGraph router's return value is looked up in the `path_map` of its
    `add_conditional_edges`; a value the map lacks raises `KeyError` at run time. The values
    are read from the router's `Literal` annotation or the literals it returns
    (`tools_condition` returns `"tools"` or `END`).

    Fix: add the missing value to the `path_map`, e.g. `{"tools": "tools", END: END}`.
    """
    for router in graph.spec.routers:
        if not router.unmapped:
            continue
        missing = router.unmapped
        example = ", ".join("END: END" if v == END else f"{v!r}: <node>" for v in missing)
        noun = "value" if len(missing) == 1 else "values"
        yield Finding(
            f"router {router.name!r} can return {quote_names(missing)}, which its path_map "
            f"does not map, so LangGraph raises KeyError when it does; add the {noun} to the "
            f"path_map of add_conditional_edges({_source_text(router.source)}, "
            f"{router.name}, ...), e.g. {{{example}}}",
            (router.source,) if graph.is_node(router.source) else (),
            router.location,
        )


def _cycles(graph: SpecGraph) -> Iterator[tuple[Finding, CounterLoop | None]]:
    """Yield each cycle CR201's rule reports, with what chooses its way out."""
    for finding in RULES["CR201"].check(graph):
        yield finding, counter_loop(graph, finding.nodes)


def _shown(nodes: tuple[str, ...]) -> str:
    return " → ".join((*nodes, nodes[0]))


@rule("CR204", "counter-loop", "warning")
def counter_loops(graph: SpecGraph) -> Iterator[Finding]:
    """(LangGraph) A cycle is bounded only by a hand-made counter in the state.

    The cycle's way out is chosen by comparing a state key with a bound, and a node on the
    cycle returns that key incremented. LangGraph has no guards, so this is how loops are
    bounded by hand; it works only if every path through the loop increments the key and
    the bound is below `recursion_limit`. On corral graphs the same pattern is CR201.

    Fix: check the counter, or port the loop to corral with a `Guard`.
    """
    if graph.spec.framework != "langgraph":
        return
    for finding, loop in _cycles(graph):
        if loop is None or loop.key is None:
            continue
        yield Finding(
            f"cycle {_shown(finding.nodes)} is bounded only by the counter {loop.key!r}: node "
            f"{loop.counter_node!r} increments it and {loop.chooser} compares it with a bound "
            "to leave the loop; make sure every path through the loop increments it and "
            f"that the bound is below recursion_limit, {_PORT}",
            finding.nodes,
            finding.location,
        )


def _cycle_message(nodes: tuple[str, ...], loop: CounterLoop | None) -> str:
    where = "a conditional edge out of it" if loop is None else f"a route out in {loop.chooser}"
    notes = ""
    if loop is not None:
        for key in loop.discarded:
            notes += (
                f"; {loop.chooser} increments {key!r} itself, but LangGraph discards a "
                f"router's changes to the state, so the count never grows: return "
                f"{{{key!r}: state[{key!r}] + 1}} from a node on the loop instead"
            )
        for key in loop.unwritten:
            notes += (
                f"; {loop.chooser} compares {key!r} with a bound, but no node writes "
                f"{key!r}, so it never changes"
            )
    return (
        f"cycle {_shown(nodes)} has no bound, so only recursion_limit stops it "
        f"(GraphRecursionError); add a counter to the state that a node on the loop "
        f"increments and {where} when it reaches a limit, {_PORT}{notes}"
    )


def _langgraph_cycles(graph: SpecGraph) -> Iterator[Finding]:
    for finding, loop in _cycles(graph):
        if loop is None or loop.key is None:  # else CR204
            yield Finding(_cycle_message(finding.nodes, loop), finding.nodes, finding.location)


def _langgraph_stuck(graph: SpecGraph) -> Iterator[Finding]:
    # A router whose path_map lacks END is CR109; the nodes it strands are that same defect.
    blamed = {r.source for r in graph.spec.routers if END in r.unmapped}
    for finding in RULES["CR105"].check(graph):
        if blamed & set(finding.nodes):
            continue
        if len(finding.nodes) == 1:
            message = (
                f"no path from node {finding.nodes[0]!r} reaches END; add an edge or a "
                "conditional edge to END from it (or from a node after it)"
            )
        else:
            message = (
                f"nodes {quote_names(finding.nodes)} only route among themselves and never "
                "reach END; give one of them an edge or a conditional edge to END"
            )
        yield Finding(message, finding.nodes, finding.location)


def _langgraph_untyped(graph: SpecGraph) -> Iterator[Finding]:
    spec = graph.spec
    for router in spec.routers:
        if router.targets.names is None:
            yield Finding(
                f"router {router.name!r} has no readable targets: {router.targets.problem}; "
                f"pass a path_map to add_conditional_edges({_source_text(router.source)}, "
                f"{router.name}, ...) or annotate its return like -> Literal['a', '__end__']",
                (router.source,) if graph.is_node(router.source) else (),
                router.location,
            )
    for node in spec.nodes:
        if node.command is not None and node.command.names is None:
            yield Finding(
                f"node {node.name!r} has no readable Command targets: {node.command.problem}; "
                "annotate its return like -> Command[Literal['a', '__end__']]",
                (node.name,),
                node.location,
            )


def _place(code: str, finding: Finding, spec: GraphSpec) -> Diagnostic:
    location: Location | None = finding.location
    if location is None:
        first = next((spec.node(n) for n in finding.nodes if spec.node(n)), None)
        location = first.location if first is not None else spec.location
    registered = RULES[code]
    return Diagnostic(
        code=code,
        slug=registered.slug,
        severity=registered.severity,
        message=finding.message,
        nodes=finding.nodes,
        file=location.file,
        line=location.line,
        col=location.col,
    )


def langgraph_findings(spec: GraphSpec) -> list[Diagnostic]:
    """Return the findings of the :data:`REWORDED` codes in LangGraph's terms."""
    graph = SpecGraph(spec)
    found = [_place("CR105", f, spec) for f in _langgraph_stuck(graph)]
    found += [_place("CR201", f, spec) for f in _langgraph_cycles(graph)]
    found += [_place("CR401", f, spec) for f in _langgraph_untyped(graph)]
    return found
