"""CR4xx: route annotations."""

from __future__ import annotations

from collections.abc import Iterator

from corral.analysis._graph import SpecGraph
from corral.analysis.rules._base import Finding, rule


@rule("CR401", "untyped-route")
def untyped_routes(graph: SpecGraph) -> Iterator[Finding]:
    """Report routers and ``Command`` nodes whose annotation names no ``Literal`` targets.

    Routes are read from return annotations, so a router annotated `-> str` (or with none)
    could go anywhere and the graph cannot be checked.

    Fix: annotate the targets: `-> Literal["a", "b"] | End`, `-> list[Literal[...]]` for a
    fan-out, `-> list[Send[Literal["work"]]]` for map-reduce, or `-> Command[Literal[...]]`.
    """
    spec = graph.spec
    for router in spec.routers:
        if router.targets.names is None:
            yield Finding(
                f"router {router.name!r} has no readable targets: {router.targets.problem}; "
                "annotate its return like -> Literal['a', 'b'] | End",
                (router.source,) if graph.is_node(router.source) else (),
                router.location,
                router.ignore,
            )
    for node in graph.nodes:
        if node.command is not None and node.command.names is None:
            yield Finding(
                f"node {node.name!r} has no readable Command targets: {node.command.problem}; "
                "annotate its return like -> Command[Literal['a', 'b']]",
                (node.name,),
            )
