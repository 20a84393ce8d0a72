"""A subgraph node is a node like any other: joins, pauses by path, nesting, shared children."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest

from corral import END, Graph, GraphError, MemorySaver, Resume, interrupt


class State(TypedDict):
    topic: str
    notes: Annotated[list[str], operator.add]


def writer(effects: list[str], *, asks: bool = False) -> Graph[State]:
    """draft -> publish; publish asks a person when ``asks``."""
    child = Graph(State, name="writer")

    @child.node(start=True, then="publish")
    def draft(state: State) -> dict[str, Any]:
        effects.append("draft")
        return {"notes": ["drafted"]}

    @child.node(then=END)
    def publish(state: State) -> dict[str, Any]:
        answer = interrupt("publish?") if asks else "auto"
        effects.append(f"publish {answer}")
        return {"notes": [f"published {answer}"]}

    return child


def team(child: Graph[State]) -> Graph[State]:
    g = Graph(State)

    @g.node(start=True, then="write")
    def plan(state: State) -> dict[str, Any]:
        return {"notes": ["planned"]}

    g.subgraph("write", child, then=END)
    return g


def test_interrupt_before_names_a_child_node_by_path(engine_path: str) -> None:
    """compile(interrupt_before=["write/publish"]) pauses inside the child, before publish."""
    effects: list[str] = []
    app = team(writer(effects)).compile(
        checkpointer=MemorySaver(), interrupt_before=["write/publish"]
    )
    run = app.invoke({"topic": "t"}, thread_id="T")
    assert run.status == "interrupted"
    [pause] = run.interrupts
    assert (pause.node, pause.when) == ("write/publish", "before")
    assert app.get_state("T", subgraphs=True).subgraphs["write"].next == ("publish",)
    assert effects == ["draft"]
    run = app.invoke(None, thread_id="T")
    assert run.status == "done" and effects == ["draft", "publish auto"]
    assert run.state["notes"] == ["planned", "drafted", "published auto"] and run.steps == 3


def test_interrupt_before_a_childs_start_node_and_after_one_of_its_nodes() -> None:
    """A pause before the child's first node and one after its draft, resumed with Resume."""
    effects: list[str] = []
    app = team(writer(effects)).compile(
        checkpointer=MemorySaver(),
        interrupt_before=["write/draft"],
        interrupt_after=["write/draft"],
    )
    run = app.invoke({"topic": "t"}, thread_id="T")
    assert [(i.node, i.when) for i in run.interrupts] == [("write/draft", "before")]
    assert effects == []
    run = app.invoke(Resume("go"), thread_id="T")
    assert [(i.node, i.when) for i in run.interrupts] == [("write/draft", "after")]
    assert effects == ["draft"]
    run = app.invoke(None, thread_id="T")
    assert run.status == "done" and effects == ["draft", "publish auto"]


def test_interrupt_on_an_unknown_child_path_is_refused() -> None:
    with pytest.raises(GraphError, match="unknown node 'write/nope'"):
        team(writer([])).compile(checkpointer=MemorySaver(), interrupt_before=["write/nope"])
    with pytest.raises(GraphError, match="unknown node 'plan/draft'"):
        team(writer([])).compile(checkpointer=MemorySaver(), interrupt_before=["plan/draft"])


def test_interrupt_before_the_subgraph_node_itself_pauses_before_the_entry() -> None:
    effects: list[str] = []
    app = team(writer(effects)).compile(checkpointer=MemorySaver(), interrupt_before=["write"])
    run = app.invoke({"topic": "t"}, thread_id="T")
    assert [(i.node, i.when) for i in run.interrupts] == [("write", "before")] and effects == []
    assert app.invoke(None, thread_id="T").state["notes"][-1] == "published auto"


def test_a_join_waits_for_a_subgraph_node_and_a_subgraph_node_can_wait() -> None:
    """wait_for names a subgraph node, and a subgraph node waits for two branches."""
    effects: list[str] = []
    g = Graph(State)

    @g.node(start=True, then=["write", "fact_check"])
    def plan(state: State) -> dict[str, Any]:
        return {"notes": ["planned"]}

    g.subgraph("write", writer(effects), then="merge")

    @g.node(then="merge")
    def fact_check(state: State) -> dict[str, Any]:
        return {"notes": ["checked"]}

    @g.node(wait_for=["write", "fact_check"], then="again")
    def merge(state: State) -> dict[str, Any]:
        return {"notes": [f"merged {len(state['notes'])}"]}

    g.subgraph("again", writer(effects), wait_for=["merge"], then=END)
    run = g.compile().invoke({"topic": "t"})
    assert run.state["notes"] == [
        "planned", "drafted", "published auto", "checked", "merged 4",
        "drafted", "published auto",
    ]  # fmt: skip
    assert run.steps == 1 + 2 + 1 + 1 + 2


def test_one_child_in_two_parents_and_three_levels_deep() -> None:
    """The same child Graph serves two parents; three levels count and pause by full path."""
    effects: list[str] = []
    leaf = writer(effects, asks=True)
    first, second = team(leaf), team(leaf)
    middle = Graph(State, name="middle")
    middle.subgraph("inner", leaf, start=True, then=END)
    outer = Graph(State, name="outer")
    outer.subgraph("middle", middle, start=True, then=END)
    top = Graph(State)
    top.subgraph("outer", outer, start=True, then=END)
    for app in (
        first.compile(checkpointer=MemorySaver()),
        second.compile(checkpointer=MemorySaver()),
    ):
        [pause] = app.invoke({"topic": "t"}, thread_id="T").interrupts
        assert pause.node == "write/publish"
        assert app.invoke(Resume("ok"), thread_id="T").state["notes"][-1] == "published ok"
    app = top.compile(checkpointer=MemorySaver())
    [pause] = app.invoke({"topic": "t"}, thread_id="T").interrupts
    assert pause.node == "outer/middle/inner/publish"
    paused = app.get_state("T", subgraphs=True).subgraphs
    assert sorted(paused) == ["outer", "outer/middle", "outer/middle/inner"]
    run = app.invoke(Resume("deep"), thread_id="T")
    assert run.state["notes"] == ["drafted", "published deep"] and run.steps == 2
    assert [r.node for r in run.trace] == ["outer/middle/inner/publish"]
