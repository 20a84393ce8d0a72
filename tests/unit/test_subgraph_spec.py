"""Subgraphs, retries and timeouts as the builder records them and the analyser checks them."""

from __future__ import annotations

import operator
import sys
from typing import Annotated, Any, Literal, TypedDict

import pytest

from corral import END, End, Graph, GraphError, Guard, Retry


class Parent(TypedDict):
    topic: str
    notes: Annotated[list[str], operator.add]
    report: str


class Child(TypedDict):
    topic: str
    notes: Annotated[list[str], operator.add]
    query: str


def child_graph(*, broken: bool = False) -> Graph[Child]:
    child = Graph(Child, name="research")

    @child.node(start=True, then="search")
    def plan(state: Child) -> dict[str, Any]:
        return {"query": state["topic"]}

    @child.node(then="plan" if broken else END)
    def search(state: Child) -> dict[str, Any]:
        return {"notes": [state["query"]]}

    return child


def parent_graph(child: Graph[Child]) -> Graph[Parent]:
    g = Graph(Parent)

    @g.node(start=True, then="research")
    def begin(state: Parent) -> None:
        return None

    g.subgraph("research", child, then="write")

    @g.node(then=END)
    def write(state: Parent) -> dict[str, Any]:
        return {"report": " ".join(state["notes"])}

    return g


def test_subgraph_node_spec_holds_the_child_and_what_reaches_the_parent() -> None:
    """The node's write set is the shared keys its child writes (query is the child's own)."""
    g = parent_graph(child_graph())
    node = g.spec().node("research")
    assert node is not None and node.subgraph is not None
    assert node.subgraph.shared == ("topic", "notes")
    assert node.subgraph.graph.names == ("plan", "search")
    assert node.writes == frozenset({"notes"})
    assert node.then == ("write",)
    assert g.check() == []


def test_subgraph_node_points_at_the_call() -> None:
    """A subgraph node's findings point at the line of g.subgraph(...)."""
    g = Graph(Parent)
    line = sys._getframe().f_lineno + 1
    g.subgraph("research", child_graph(), start=True)  # no way out
    (d,) = [d for d in g.check() if d.code == "CR104"]
    assert (d.file, d.line, d.nodes) == (__file__, line, ("research",))


def test_child_findings_keep_their_place_and_name_the_path() -> None:
    """A child's defect is reported at the child's own line, named research/plan."""
    child = child_graph(broken=True)
    found = parent_graph(child).check()
    assert [(d.code, d.nodes) for d in found] == [
        ("CR105", ("research/plan", "research/search")),
        ("CR201", ("research/plan", "research/search")),
    ]
    own = {(d.code, d.line) for d in child.check()}
    assert {(d.code, d.line) for d in found} == own
    assert found[0].message.startswith("in subgraph 'research': nodes 'plan' and 'search'")


def test_child_errors_stop_the_parent_compiling() -> None:
    """compile() checks the child too."""
    with pytest.raises(GraphError) as info:
        parent_graph(child_graph(broken=True)).compile()
    assert {d.code for d in info.value.diagnostics} == {"CR105", "CR201"}


def test_one_child_used_twice_is_reported_once() -> None:
    """The same child under two names: one defect, one finding."""
    child = child_graph(broken=True)
    g = Graph(Parent)
    g.subgraph("a", child, start=True, then="b")
    g.subgraph("b", child, then=END)
    assert [(d.code, d.nodes[0]) for d in g.check()] == [("CR105", "a/plan"), ("CR201", "a/plan")]


def test_nested_children_are_named_by_their_whole_path() -> None:
    """A finding two levels down names outer/inner/node."""
    middle = Graph(Child)
    middle.subgraph("inner", child_graph(broken=True), start=True, then=END)
    g = Graph(Parent)
    g.subgraph("outer", middle, start=True, then=END)
    found = [d for d in g.check() if d.code == "CR201"]
    assert [d.nodes for d in found] == [("outer/inner/plan", "outer/inner/search")]
    assert found[0].message.startswith("in subgraph 'outer/inner': cycle plan → search")


def test_ignore_on_the_subgraph_node_covers_its_child() -> None:
    """ignore= on g.subgraph drops those codes in the child too."""
    g = Graph(Parent)
    g.subgraph("research", child_graph(broken=True), start=True, then=END, ignore=("CR2",))
    assert [d.code for d in g.check()] == ["CR105"]


def test_parallel_write_sees_the_subgraph_write_set() -> None:
    """CR301: a subgraph fanned out beside a node that writes the same plain key."""

    class Plain(TypedDict):
        topic: str
        notes: list[str]

    class PlainChild(TypedDict):
        notes: list[str]

    child = Graph(PlainChild)

    @child.node(start=True, then=END)
    def jot(state: PlainChild) -> dict[str, Any]:
        return {"notes": ["x"]}

    g = Graph(Plain)

    @g.node(start=True, then=("research", "other"))
    def begin(state: Plain) -> None:
        return None

    g.subgraph("research", child, then=END)

    @g.node(then=END)
    def other(state: Plain) -> dict[str, Any]:
        return {"notes": []}

    assert [(d.code, d.nodes) for d in g.check()] == [("CR301", ("research", "other"))]


def test_output_mapping_writes_its_keys() -> None:
    """With output=, the node writes output's keys; an unknown one is CR302."""
    g = Graph(Parent)
    g.subgraph(
        "research",
        child_graph(),
        start=True,
        then=END,
        input=lambda state: {"topic": state["topic"]},
        output=lambda child: {"reprot": child["notes"][-1]},
    )
    node = g.spec().node("research")
    assert node is not None and node.writes == frozenset({"reprot"})
    assert [(d.code, d.nodes) for d in g.check()] == [("CR302", ("research",))]


def test_a_graph_cannot_contain_itself() -> None:
    """g.subgraph(name, g) and a loop through children are GraphErrors."""
    g = Graph(Parent)
    with pytest.raises(GraphError, match="cannot contain itself"):
        g.subgraph("me", g)
    a, b = Graph(Parent), Graph(Parent)
    a.subgraph("b", b, start=True, then=END)
    b.subgraph("a", a, start=True, then=END)
    with pytest.raises(GraphError, match="contains a graph that contains it"):
        a.spec()


def test_subgraph_needs_a_graph() -> None:
    """A compiled app passed to g.subgraph says to pass its Graph."""
    g = Graph(Parent)
    with pytest.raises(GraphError, match="pass the Graph it was compiled from"):
        g.subgraph("research", child_graph().compile())  # type: ignore[arg-type]


@pytest.mark.parametrize("compiled", [True, False])
def test_a_graph_registered_as_a_plain_node_is_cr112(compiled: bool) -> None:
    """g.node(...)(child.compile()) passes no check: CR112 points to g.subgraph."""
    child = child_graph()
    g = Graph(Parent)
    g.node("research", start=True, then=END)(child.compile() if compiled else child)  # type: ignore[arg-type, type-var]
    (d,) = g.check()
    kind = "compiled graph" if compiled else "Graph"
    assert (d.code, d.nodes, d.file) == ("CR112", ("research",), __file__)
    assert d.message == (
        f"node 'research' is a {kind}, which cannot be called as a node function; register "
        "the child Graph with g.subgraph('research', child, then=...) (pass the Graph, not "
        "g.compile())"
    )


def test_a_compiled_graph_without_a_name_gets_the_graph_name() -> None:
    """g.node()(app) with no name= is named after the graph, and still reported."""
    g = Graph(Parent)
    g.node(start=True, then=END)(child_graph().compile())  # type: ignore[arg-type, type-var]
    assert [(d.code, d.nodes) for d in g.check()] == [("CR112", ("research",))]


def test_retry_and_timeout_are_recorded_and_default_from_the_graph() -> None:
    """A node's retry= wins over the graph's; timeout= is kept as timeout_s."""
    g = Graph(Parent, retry=Retry(attempts=2))

    @g.node(start=True, then="b", retry=Retry(attempts=5), timeout=2)
    async def a(state: Parent) -> None:
        return None

    @g.node(then=END)
    def b(state: Parent) -> None:
        return None

    spec = g.spec()
    a_spec, b_spec = spec.node("a"), spec.node("b")
    assert a_spec is not None and b_spec is not None
    assert (a_spec.retry, a_spec.timeout_s) == (Retry(attempts=5), 2.0)
    assert (b_spec.retry, b_spec.timeout_s) == (Retry(attempts=2), None)
    assert g.check() == []


def test_timeout_on_a_sync_node_is_a_compile_error_that_says_why() -> None:
    """CR111: a thread cannot be stopped safely; make the node async."""
    g = Graph(Parent)

    @g.node(start=True, then=END, timeout=1.5)
    def fetch(state: Parent) -> None:
        return None

    with pytest.raises(GraphError) as info:
        g.compile()
    (d,) = info.value.diagnostics
    assert d.code == "CR111" and d.nodes == ("fetch",)
    assert d.message == (
        "node 'fetch' has timeout=1.5 but is a sync function: a thread cannot be stopped "
        "safely, so corral cannot cancel it; make it an async def (and await its I/O), or "
        "drop timeout= and give the client it calls a timeout of its own"
    )


@pytest.mark.parametrize("timeout", [0, -1, float("inf"), "3", True])
def test_bad_timeouts_are_graph_errors(timeout: Any) -> None:
    """timeout= must be a positive finite number of seconds."""
    g = Graph(Parent)
    with pytest.raises(GraphError, match="timeout="):
        g.node(timeout=timeout)


def test_retry_must_be_a_retry() -> None:
    """retry=3 says to pass a Retry."""
    with pytest.raises(GraphError, match=r"retry=3 is not a Retry"):
        Graph(Parent, retry=3)  # type: ignore[arg-type]
    with pytest.raises(GraphError, match=r"retry=3 is not a Retry"):
        Graph(Parent).node(retry=3)  # type: ignore[arg-type]


def test_guards_and_routers_work_on_a_subgraph_node() -> None:
    """A subgraph node in a loop is guarded like any node."""
    g = Graph(Parent)
    g.subgraph("research", child_graph(), start=True)

    @g.router("research", guards=[Guard("research", max=2, otherwise=END)])
    def again(state: Parent) -> Literal["research"] | End:
        return "research"

    assert g.check() == []
