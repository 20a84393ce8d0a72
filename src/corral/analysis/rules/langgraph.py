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
from dataclasses import replace

from corral.analysis._graph import SpecGraph
from corral.analysis.rules._base import RULES, Finding, Rule, quote_names, rule
from corral.analysis.rules._loops import CounterLoop, counter_loop
from corral.analysis.rules.routes import unreadable_routes
from corral.spec import END, START, RouterSpec

__all__ = [
    "APPLIES",
    "CounterLoop",
    "counter_loop",
    "counter_loops",
    "langgraph_rules",
    "unmapped_routes",
]

APPLIES = (
    "CR101",
    "CR103",
    "CR105",
    "CR109",
    "CR110",
    "CR201",
    "CR204",
    "CR301",
    "CR302",
    "CR401",
)
"""The codes that hold under LangGraph's semantics (not CR104: LangGraph ends a run at a node
with no edges; not CR107: a node's fixed edges, conditional edges and ``Command`` all fire)."""

_PORT = "or port the loop to corral with a Guard"


def _source_text(source: str) -> str:
    return "START" if source == START else repr(source)


@rule("CR109", "unmapped-route")
def unmapped_routes(graph: SpecGraph) -> Iterator[Finding]:
    """(LangGraph) A router can return a value its path_map does not map, or no value.

    A LangGraph router's return value is looked up in the `path_map` of its
    `add_conditional_edges` (or in its `Literal` return annotation, which LangGraph turns
    into one); a value the map lacks raises `KeyError` at run time. The values are read
    from the router's returns (`tools_condition` returns `"tools"` or `END`), else from its
    annotation. A router shared by several sources is judged per source: a value another
    source's `path_map` maps is one this source does not produce. A router whose body can
    end without a `return` (an `if`/`elif` chain with no `else`, an unexpected model
    answer) hands LangGraph `None`: `KeyError: None`, or `ValueError` without a map.

    Fix: add the missing value to the `path_map`, e.g. `{"tools": "tools", END: END}`;
    end the router with a `return` for every other case.
    """
    for router in graph.spec.routers:
        nodes = (router.source,) if graph.is_node(router.source) else ()
        call = f"add_conditional_edges({_source_text(router.source)}, {router.name}, ...)"
        if router.unmapped:
            missing = router.unmapped
            example = ", ".join("END: END" if v == END else f"{v!r}: <node>" for v in missing)
            noun = "value" if len(missing) == 1 else "values"
            if router.annotated:
                fix = (
                    f"add the {noun} to its Literal return annotation (LangGraph maps the "
                    "router's value through it)"
                )
                what = "its Literal return annotation does not list"
            else:
                fix = f"add the {noun} to the path_map of {call}, e.g. {{{example}}}"
                what = "its path_map does not map"
            yield Finding(
                f"router {router.name!r} can return {quote_names(missing)}, which {what}, "
                f"so LangGraph raises KeyError when it does; {fix}",
                nodes,
                router.location,
            )
        if router.falls_off:
            yield Finding(
                f"router {router.name!r} can end without returning a value, so LangGraph "
                f"gets None and raises (KeyError: None with a path_map, else ValueError "
                f"'Branch did not return a valid destination'); end it with a return for "
                f"the remaining case, e.g. `return END`",
                nodes,
                router.location,
            )


@rule("CR110", "edge-and-router", "warning")
def edge_and_router(graph: SpecGraph) -> Iterator[Finding]:
    """(LangGraph) A node has both a fixed edge and a conditional edge: both run.

    LangGraph does not choose between `add_edge("a", "b")` and
    `add_conditional_edges("a", route)`: after `a`, `b` runs *and* whatever `route`
    returns, in the same superstep, even when `route` returns `END`. A fan-out meant that
    way is rare; usually the fixed edge is left over from before the router.

    Fix: remove `add_edge("a", "b")` and let the router return `"b"` (add it to its
    `path_map`), or give the fixed edge to a node the router leads to.
    """
    spec = graph.spec
    if spec.framework != "langgraph":
        return
    for node in spec.nodes:
        fixed = tuple(t for t in node.then or () if t != END)
        routers = spec.routers_of(node.name)
        if not fixed or not routers:
            continue
        router = routers[0]
        edge = ", ".join(f"add_edge({node.name!r}, {t!r})" for t in fixed)
        yield Finding(
            f"node {node.name!r} has a fixed edge ({edge}) and a conditional edge (router "
            f"{router.name!r}): LangGraph runs both, so {quote_names(fixed)} runs even when "
            f"{router.name!r} routes elsewhere or to END; remove the fixed edge and let the "
            f"router return {fixed[0]!r} when it should run",
            (node.name, *fixed),
            node.location,
        )


def _cycles(graph: SpecGraph) -> list[tuple[Finding, CounterLoop | None]]:
    """Return each cycle CR201's rule reports, with what chooses its way out (read once
    per graph: CR201 and CR204 split them)."""
    return [(f, counter_loop(graph, f.nodes)) for f in RULES["CR201"].check(graph)]


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
    for finding, loop in graph.shared(_cycles):
        if loop is None or loop.key is None:
            continue
        if loop.counted:
            message = (
                f"cycle {_shown(finding.nodes)} is bounded only by the counter {loop.key!r}: "
                f"node {loop.counter_node!r} increments it and {loop.chooser} compares it "
                "with a bound to leave the loop; make sure every path through the loop "
                "increments it and that the bound is below recursion_limit, "
            )
        elif loop.counter_node is None:
            message = (
                f"cycle {_shown(finding.nodes)} is bounded only by the plan in {loop.key!r}: "
                f"{loop.chooser} walks its steps to leave the loop when none is left; make "
                "sure every pass fills a step and that the plan is shorter than "
                "recursion_limit allows, "
            )
        else:
            message = (
                f"cycle {_shown(finding.nodes)} is bounded only by the state key "
                f"{loop.key!r}: node {loop.counter_node!r} moves it one way on every pass (a "
                f"count through a reducer, a list appended to or consumed, a plan filled) and "
                f"{loop.chooser} tests it to leave the loop; make sure every pass moves it "
                "toward the way out and that the loop ends below recursion_limit, "
            )
        yield Finding(message + _PORT, finding.nodes, finding.location)


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
    for finding, loop in graph.shared(_cycles):
        if loop is None or loop.key is None:  # else CR204
            yield Finding(_cycle_message(finding.nodes, loop), finding.nodes, finding.location)


def _langgraph_dead(graph: SpecGraph) -> Iterator[Finding]:
    # A node reached only through a value the router's map lacks is that CR109, not a CR103.
    stranded = {v for r in graph.spec.routers for v in r.unmapped}
    return (f for f in RULES["CR103"].check(graph) if not set(f.nodes) <= stranded)


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
    def router_fix(router: RouterSpec) -> str:
        return (
            f"pass a path_map to add_conditional_edges({_source_text(router.source)}, "
            f"{router.name}, ...) or annotate its return like -> Literal['a', '__end__']"
        )

    return unreadable_routes(graph, router_fix, "-> Command[Literal['a', '__end__']]")


_REWORDED = {
    "CR103": _langgraph_dead,
    "CR105": _langgraph_stuck,
    "CR201": _langgraph_cycles,
    "CR401": _langgraph_untyped,
}


def langgraph_rules() -> dict[str, Rule]:
    """Return the rules that hold under LangGraph's semantics (:data:`APPLIES`), with CR103,
    CR105, CR201 and CR401 checked and worded in LangGraph's terms."""
    return {
        code: replace(RULES[code], check=_REWORDED.get(code, RULES[code].check)) for code in APPLIES
    }
