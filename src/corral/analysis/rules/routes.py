"""CR4xx: route annotations."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from corral.analysis._graph import SpecGraph
from corral.analysis.rules._base import Finding, rule
from corral.spec import RouterSpec


@rule("CR401", "untyped-route")
def untyped_routes(graph: SpecGraph) -> Iterator[Finding]:
    """Report routers and ``Command`` nodes whose annotation names no ``Literal`` targets.

    Routes are read from return annotations, so a router annotated `-> str` (or with none)
    could go anywhere and the graph cannot be checked.

    Fix: annotate the targets: `-> Literal["a", "b"] | End`, `-> list[Literal[...]]` for a
    fan-out, `-> list[Send[Literal["work"]]]` for map-reduce, or `-> Command[Literal[...]]`.
    """
    yield from unreadable_routes(
        graph,
        lambda router: "annotate its return like -> Literal['a', 'b'] | End",
        "-> Command[Literal['a', 'b']]",
    )


def unreadable_routes(
    graph: SpecGraph, router_fix: Callable[[RouterSpec], str], command_fix: str
) -> Iterator[Finding]:
    """Yield the routers and ``Command`` nodes whose targets cannot be read, each finding
    ending with the fix given (a LangGraph graph words it in LangGraph's terms)."""
    for router in graph.spec.routers:
        if router.targets.names is None:
            yield Finding(
                f"router {router.name!r} has no readable targets: {router.targets.problem}; "
                + router_fix(router),
                (router.source,) if graph.is_node(router.source) else (),
                router.location,
                router.ignore,
            )
    for node in graph.nodes:
        if node.command is not None and node.command.names is None:
            yield Finding(
                f"node {node.name!r} has no readable Command targets: {node.command.problem}; "
                f"annotate its return like {command_fix}",
                (node.name,),
                node.location,
            )
