"""``compile(deps_type=T)`` is held to every node's and router's ``ctx: Context[X]``."""

from __future__ import annotations

from typing import Any, Protocol, TypedDict

import pytest

from corral import END, Context, End, Graph
from corral.errors import GraphError


class Count(TypedDict):
    n: int


class Tools:
    def score(self, n: int) -> int:
        return n + 1


class FakeTools(Tools):
    pass


class Other:
    def score(self, n: int) -> int:
        return n


class Scores(Protocol):
    limit: int

    def score(self, n: int) -> int: ...


class Scorer:
    limit = 3

    def score(self, n: int) -> int:
        return n * 2


class NoLimit:
    def score(self, n: int) -> int:
        return n


def graph_reading(deps: Any) -> Graph[Count]:
    g = Graph(Count)

    @g.node(start=True, then=END)
    def bump(state: Count, ctx: Context[deps]) -> Count:
        return {"n": ctx.deps.score(state["n"])}

    return g


@pytest.mark.parametrize(
    ("reads", "given"),
    [
        (Tools, Tools),
        (Tools, FakeTools),
        (Scores, Scorer),
        (Any, Other),
        (Tools, object),
        (Tools, Tools | None),
    ],
)
def test_a_deps_type_the_nodes_can_read_compiles(reads: Any, given: Any) -> None:
    app = graph_reading(reads).compile(deps_type=given)
    assert app.invoke({"n": 1}, deps=FakeTools() if reads is Tools else Scorer()).state["n"] > 1


def test_a_class_the_node_reads_that_deps_type_does_not_subclass_is_refused() -> None:
    with pytest.raises(GraphError) as caught:
        graph_reading(Tools).compile(deps_type=Other)
    assert str(caught.value).startswith(
        "node 'bump' reads ctx: Context[Tools], but compile(deps_type=Other) is not a "
        "subclass of Tools; pass the deps type the nodes read, or annotate"
    )


def test_a_protocol_member_deps_type_lacks_is_named() -> None:
    with pytest.raises(GraphError, match=r"deps_type=NoLimit\) lacks limit of the Protocol"):
        graph_reading(Scores).compile(deps_type=NoLimit)


def test_a_router_and_a_subgraph_node_are_held_to_it_too() -> None:
    g = Graph(Count)

    @g.node(start=True)
    def first(state: Count) -> None:
        return None

    @g.router("first")
    def route(state: Count, ctx: Context[Tools]) -> End:
        return END

    with pytest.raises(GraphError, match=r"router 'route' of 'first' reads ctx: Context\[Tools\]"):
        g.compile(deps_type=Other)

    parent = Graph(Count)
    parent.subgraph("child", graph_reading(Tools), start=True, then=END)
    with pytest.raises(GraphError, match=r"node 'child/bump' reads ctx: Context\[Tools\]"):
        parent.compile(deps_type=Other)
    parent.compile(deps_type=FakeTools)


def test_an_annotation_that_does_not_resolve_is_left_to_the_type_checker() -> None:
    g = Graph(Count)

    @g.node(start=True, then=END)
    def bump(state: Count, ctx: Context[Missing]) -> None:  # type: ignore[name-defined]  # noqa: F821
        return None

    g.compile(deps_type=Other)
