"""Several pauses inside subgraphs: each surfaces by path, and each answer reaches its child."""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal, TypedDict

import pytest

from corral import (
    END,
    Checkpointer,
    Graph,
    MemorySaver,
    Resume,
    Send,
    interrupt,
)
from corral.checkpoint.base import Checkpoint
from corral.errors import ThreadStateError


class State(TypedDict):
    topic: str
    notes: Annotated[list[str], operator.add]


def two_approvals(effects: list[str]) -> Graph[State]:
    """A child whose start fans out to two nodes that each ask a person, in one superstep."""
    child = Graph(State, name="review")

    @child.node(start=True, then=["legal", "style"])
    def check(state: State) -> dict[str, Any]:
        effects.append(f"check {state['topic']}")
        return {"notes": [f"checked {state['topic']}"]}

    @child.node(then=END)
    def legal(state: State) -> dict[str, Any]:
        answer = interrupt(f"legal {state['topic']}?")
        effects.append(f"legal {answer}")
        return {"notes": [f"legal: {answer}"]}

    @child.node(then=END)
    def style(state: State) -> dict[str, Any]:
        answer = interrupt(f"style {state['topic']}?")
        effects.append(f"style {answer}")
        return {"notes": [f"style: {answer}"]}

    return child


def one_child(effects: list[str]) -> Graph[State]:
    g = Graph(State)
    g.subgraph("review", two_approvals(effects), start=True, then=END)
    return g


def test_every_pause_inside_one_child_surfaces_with_its_path_and_id(
    saver: Checkpointer, engine_path: str
) -> None:
    """Both pending interrupts of the child are in run.interrupts, each with its own id."""
    effects: list[str] = []
    app = one_child(effects).compile(checkpointer=saver)
    run = app.invoke({"topic": "t"}, thread_id="T")
    assert run.status == "interrupted"
    assert [(i.node, i.value) for i in run.interrupts] == [
        ("review/legal", "legal t?"),
        ("review/style", "style t?"),
    ]
    ids = [i.id for i in run.interrupts]
    assert len(set(ids)) == 2 and all(i.startswith("review/") for i in ids)
    assert app.get_state("T").interrupts == tuple(run.interrupts)
    run = app.invoke(Resume({ids[0]: "ok", ids[1]: "fine"}), thread_id="T")
    assert run.status == "done"
    assert run.state["notes"] == ["checked t", "legal: ok", "style: fine"]
    assert sorted(effects) == ["check t", "legal ok", "style fine"]  # check never re-ran
    assert run.steps == 3


def test_one_value_for_several_pauses_is_refused_and_answers_may_come_one_at_a_time(
    saver: Checkpointer,
) -> None:
    """Resume(value) needs ids when several pauses wait; answering one leaves the other."""
    effects: list[str] = []
    app = one_child(effects).compile(checkpointer=saver)
    legal, style = app.invoke({"topic": "t"}, thread_id="T").interrupts
    with pytest.raises(ThreadStateError, match="2 pending interrupts"):
        app.invoke(Resume("yes"), thread_id="T")
    run = app.invoke(Resume({style.id: "fine"}), thread_id="T")
    assert run.status == "interrupted" and run.interrupts == [legal]
    run = app.invoke(Resume("ok"), thread_id="T")  # one pause left: one value answers it
    assert run.status == "done"
    assert run.state["notes"] == ["checked t", "legal: ok", "style: fine"]
    assert effects.count("check t") == 1 and effects.count("style fine") == 1


def test_a_send_fan_out_to_a_subgraph_pauses_every_entry(
    saver: Checkpointer, engine_path: str
) -> None:
    """Two entries of one subgraph node, two pauses each: all four surface and resume."""
    effects: list[str] = []
    g = Graph(State)

    @g.node(start=True)
    def split(state: State) -> None:
        return None

    @g.router("split")
    def fan(state: State) -> list[Send[Literal["review"]]]:
        return [Send("review", {"topic": t, "notes": []}) for t in ("a", "b")]

    g.subgraph("review", two_approvals(effects), then=END)
    app = g.compile(checkpointer=saver)
    run = app.invoke({"topic": "t"}, thread_id="T")
    assert [i.value for i in run.interrupts] == ["legal a?", "style a?", "legal b?", "style b?"]
    assert len({i.id for i in run.interrupts}) == 4
    paused = app.get_state("T", subgraphs=True).subgraphs
    assert sorted(paused) == ["review[0]", "review[1]"]
    assert paused["review[1]"].values["notes"] == ["checked b"]
    answers = {i.id: i.value.split()[0] + "-" + i.value.split()[1][0] for i in run.interrupts}
    run = app.invoke(Resume(answers), thread_id="T")
    assert run.status == "done"
    assert run.state["notes"] == [
        "checked a", "legal: legal-a", "style: style-a",
        "checked b", "legal: legal-b", "style: style-b",
    ]  # fmt: skip
    assert sorted(e for e in effects if e.startswith("check")) == ["check a", "check b"]
    assert run.steps == 1 + 2 * 3


def test_two_subgraph_nodes_pausing_in_one_superstep(saver: Checkpointer) -> None:
    """Two subgraph nodes of one superstep both pause; one Resume answers both children."""
    effects: list[str] = []
    child = Graph(State, name="ask")

    @child.node(start=True, then=END)
    def approve(state: State) -> dict[str, Any]:
        return {"notes": [f"approved {interrupt('ok?')}"]}

    g = Graph(State)

    @g.node(start=True, then=["first", "second"])
    def begin(state: State) -> dict[str, Any]:
        effects.append("begin")
        return {"notes": ["begin"]}

    g.subgraph("first", child, then=END)
    g.subgraph("second", child, then=END)
    app = g.compile(checkpointer=saver)
    run = app.invoke({"topic": "t"}, thread_id="T")
    assert [i.node for i in run.interrupts] == ["first/approve", "second/approve"]
    first, second = run.interrupts
    run = app.invoke(Resume({first.id: "1", second.id: "2"}), thread_id="T")
    assert run.state["notes"] == ["begin", "approved 1", "approved 2"]
    assert effects == ["begin"] and run.steps == 3


def test_pauses_three_levels_deep_resume_inside_the_innermost_child(saver: Checkpointer) -> None:
    """A pause in a grandchild's fan-out names both paths; the answers reach it."""
    effects: list[str] = []
    middle = Graph(State, name="middle")
    middle.subgraph("review", two_approvals(effects), start=True, then=END)
    g = Graph(State)
    g.subgraph("outer", middle, start=True, then=END)
    app = g.compile(checkpointer=saver)
    run = app.invoke({"topic": "t"}, thread_id="T")
    assert [i.node for i in run.interrupts] == ["outer/review/legal", "outer/review/style"]
    snapshot = app.get_state("T", subgraphs=True)
    assert sorted(snapshot.subgraphs) == ["outer", "outer/review"]
    run = app.invoke(Resume({i.id: "yes" for i in run.interrupts}), thread_id="T")
    assert run.state["notes"] == ["checked t", "legal: yes", "style: yes"]
    assert effects.count("check t") == 1 and run.steps == 3


class _ChildIdlessSaver(MemorySaver):
    """A MemorySaver whose children's stored pauses lost their ``id`` (a meta edited by hand
    or written by another tool); the parent's keep theirs."""

    def chain(self, thread_id: str, checkpoint_id: str | None = None) -> list[Checkpoint]:
        found = super().chain(thread_id, checkpoint_id)
        if "/" in thread_id:  # a child's thread: parent/path@entry
            for checkpoint in found:
                pauses = checkpoint.meta.get("interrupts", [])
                checkpoint.meta["interrupts"] = [
                    {k: v for k, v in p.items() if k != "id"} for p in pauses
                ]
        return found


def test_a_childs_pause_saved_without_an_id_is_answered_by_the_engines_id() -> None:
    """The child's pending pauses are read with the ids the engine gives them (not 'None'),
    so the parent's answers reach them and the child finishes."""
    effects: list[str] = []
    app = one_child(effects).compile(checkpointer=_ChildIdlessSaver())
    run = app.invoke({"topic": "t"}, thread_id="T")
    legal, style = run.interrupts
    run = app.invoke(Resume({legal.id: "ok", style.id: "fine"}), thread_id="T")
    assert run.status == "done"
    assert run.state["notes"] == ["checked t", "legal: ok", "style: fine"]
