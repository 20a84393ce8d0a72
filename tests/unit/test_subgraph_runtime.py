"""Subgraphs at run time: state in and out, counting, pauses and checkpoints in one thread."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, Literal, TypedDict

import pytest

from corral import (
    END,
    End,
    Graph,
    Guard,
    MemorySaver,
    NodeCapError,
    NodeError,
    Resume,
    Send,
    StepLimitError,
    interrupt,
)


class Parent(TypedDict):
    topic: str
    notes: Annotated[list[str], operator.add]
    report: str


class Child(TypedDict):
    topic: str
    notes: Annotated[list[str], operator.add]
    query: str


def researcher(
    *, rounds: int = 2, max_steps: int = 50, seen: list[str] | None = None
) -> Graph[Child]:
    """A child that appends one note per round, in a loop guarded to ``rounds`` rounds."""
    child = Graph(Child, name="research", max_steps=max_steps)

    @child.node(start=True, then="search")
    def plan(state: Child) -> dict[str, Any]:
        if seen is not None:
            seen.append(f"plan sees {state['notes']}")
        return {"query": f"{state['topic']}#{len(state['notes'])}"}

    @child.node()
    def search(state: Child) -> dict[str, Any]:
        return {"notes": [state["query"]]}

    @child.router("search", guards=[Guard("plan", max=rounds - 1, otherwise=END)])
    def again(state: Child) -> Literal["plan"]:
        return "plan"

    return child


def team(child: Graph[Child], **options: Any) -> Graph[Parent]:
    g = Graph(Parent, max_steps=options.pop("max_steps", 50))

    @g.node(start=True, then="research")
    def begin(state: Parent) -> dict[str, Any]:
        return {"notes": ["brief"]}

    g.subgraph("research", child, then="write", **options)

    @g.node(then=END)
    def write(state: Parent) -> dict[str, Any]:
        return {"report": " | ".join(state["notes"])}

    return g


def test_child_writes_are_applied_once_in_order_through_the_parent_reducer() -> None:
    """The child starts from the parent's list; each of its appends lands once, in order."""
    seen: list[str] = []
    run = team(researcher(seen=seen)).compile().invoke({"topic": "tides"})
    assert run.state["notes"] == ["brief", "tides#1", "tides#2"]
    assert run.state["report"] == "brief | tides#1 | tides#2"
    assert seen == ["plan sees ['brief']", "plan sees ['brief', 'tides#1']"]
    assert "query" not in run.state  # the child's own key stays in the child


def test_every_node_run_anywhere_counts_and_the_subgraph_node_does_not() -> None:
    """begin + 2x(plan, search) + write = 6 steps; the trace names child runs by path."""
    run = team(researcher()).compile().invoke({"topic": "t"})
    assert run.steps == 6
    assert [(r.step, r.node) for r in run.trace] == [
        (1, "begin"),
        (2, "research/plan"),
        (3, "research/search"),
        (4, "research/plan"),
        (5, "research/search"),
        (6, "write"),
    ]


def test_updates_stream_names_child_node_runs_by_path() -> None:
    """stream(mode="updates") yields each child node run as ("research/search", update)."""
    nodes = [node for node, _ in team(researcher()).compile().stream({"topic": "t"})]
    assert nodes == [
        "begin",
        "research/plan",
        "research/search",
        "research/plan",
        "research/search",
        "write",
    ]


def test_top_level_max_steps_counts_child_runs() -> None:
    """A cap of 4 stops inside the child, naming the path of the node about to run."""
    with pytest.raises(StepLimitError) as info:
        team(researcher(), max_steps=4).compile().invoke({"topic": "t"})
    assert (info.value.steps, info.value.max_steps, info.value.node) == (4, 4, "research/search")
    assert "before running 'research/search'" in str(info.value)


def test_the_childs_own_max_steps_caps_each_entry() -> None:
    """The child's max_steps=3 stops its 4th node run; the message names the child's cap."""
    with pytest.raises(StepLimitError) as info:
        team(researcher(rounds=5, max_steps=3)).compile().invoke({"topic": "t"})
    assert (info.value.max_steps, info.value.node) == (3, "research/search")
    assert "subgraph 'research' stopped after 3 steps (its max_steps=3)" in str(info.value)


def test_child_guards_count_per_entry_and_max_runs_caps_entries() -> None:
    """Each entry is a fresh child run (its guard starts at 0); max_runs=2 allows 2 entries."""
    g = Graph(Parent)
    g.subgraph("research", researcher(rounds=2), start=True, max_runs=2)

    @g.router("research", guards=[Guard("research", max=5, otherwise=END)])
    def more(state: Parent) -> Literal["research"] | End:
        return "research"

    with pytest.raises(NodeCapError) as info:
        g.compile().invoke({"topic": "t"})
    assert (info.value.node, info.value.max_runs) == ("research", 2)
    assert info.value.state["notes"] == ["t#0", "t#1", "t#2", "t#3"]


def test_input_and_output_map_different_schemas() -> None:
    """input= builds the child's input; output= turns the child's final state into one update."""

    class Writer(TypedDict):
        subject: str
        text: str

    writer = Graph(Writer)

    @writer.node(start=True, then=END)
    def draft(state: Writer) -> dict[str, Any]:
        return {"text": f"on {state['subject']}"}

    g = Graph(Parent)
    g.subgraph(
        "write",
        writer,
        start=True,
        then=END,
        input=lambda state: {"subject": state["topic"], "text": ""},
        output=lambda final: {"report": final["text"].upper(), "notes": ["written"]},
    )
    run = g.compile().invoke({"topic": "tides", "notes": ["a"]})
    assert run.state == {"topic": "tides", "notes": ["a", "written"], "report": "ON TIDES"}


def test_nested_subgraphs_and_one_child_used_twice() -> None:
    """A subgraph inside a subgraph; the same child under two names runs twice, fresh."""
    middle = Graph(Child)
    middle.subgraph("inner", researcher(rounds=1), start=True, then=END)
    g = Graph(Parent)
    g.subgraph("first", middle, start=True, then="second")
    g.subgraph("second", middle, then=END)
    run = g.compile().invoke({"topic": "t"})
    assert run.state["notes"] == ["t#0", "t#1"]
    assert [r.node for r in run.trace] == [
        "first/inner/plan",
        "first/inner/search",
        "second/inner/plan",
        "second/inner/search",
    ]


def test_send_runs_the_child_once_per_argument() -> None:
    """A Send to a subgraph node hands the child the Send's argument as its input."""
    g = Graph(Parent)

    @g.node(start=True)
    def split(state: Parent) -> None:
        return None

    @g.router("split")
    def fan(state: Parent) -> list[Send[Literal["research"]]]:
        return [Send("research", {"topic": t, "notes": []}) for t in ("a", "b")]

    g.subgraph("research", researcher(rounds=1), then=END)
    run = g.compile().invoke({"topic": "t"})
    assert run.state["notes"] == ["a#0", "b#0"]


def test_a_child_error_names_the_path() -> None:
    """An exception in a child node is a NodeError naming research/search."""
    child = Graph(Child)

    @child.node(start=True, then=END)
    def search(state: Child) -> None:
        raise ValueError("no results")

    with pytest.raises(NodeError) as info:
        team(child).compile().invoke({"topic": "t"})
    assert info.value.node == "research/search"
    assert isinstance(info.value.__cause__, ValueError)


def review_graph(effects: list[str]) -> Graph[Parent]:
    child = Graph(Child, name="review")

    @child.node(start=True, then="approve")
    def check(state: Child) -> dict[str, Any]:
        effects.append("check")
        return {"notes": ["checked"]}

    @child.node(then=END)
    def approve(state: Child) -> dict[str, Any]:
        answer = interrupt({"ask": "publish?"})
        effects.append(f"approve {answer}")
        return {"notes": [f"approved: {answer}"]}

    g = Graph(Parent)

    @g.node(start=True, then="review")
    def begin(state: Parent) -> dict[str, Any]:
        effects.append("begin")
        return {"notes": ["draft"]}

    g.subgraph("review", child, then=END)
    return g


def test_interrupt_inside_the_child_pauses_the_parent_with_the_path() -> None:
    """The pause names review/approve; Resume answers it; finished child nodes never re-run."""
    effects: list[str] = []
    app = review_graph(effects).compile(checkpointer=MemorySaver())
    run = app.invoke({"topic": "t"}, thread_id="T")
    assert run.status == "interrupted"
    [pending] = run.interrupts
    assert pending.node == "review/approve" and pending.id.startswith("review/")
    assert pending.value == {"ask": "publish?"}
    assert run.steps == 2  # begin and review/check: every node run so far, the child's too
    assert [(t.step, t.node) for t in run.trace] == [(1, "begin"), (2, "review/check")]
    snapshot = app.get_state("T", subgraphs=True)
    assert snapshot.interrupts == (pending,)
    child = snapshot.subgraphs["review"]
    assert child.values["notes"] == ["draft", "checked"] and child.next == ("approve",)
    run = app.invoke(Resume("yes"), thread_id="T")
    assert run.status == "done"
    assert run.state["notes"] == ["draft", "checked", "approved: yes"]
    assert effects == ["begin", "check", "approve yes"]
    assert run.steps == 3
    assert [(t.step, t.node) for t in run.trace] == [(3, "review/approve")]
    assert app.get_state("T", subgraphs=True).subgraphs == {}


def test_resume_by_interrupt_id() -> None:
    """Resume({id: value}) answers a pause inside the child."""
    app = review_graph([]).compile(checkpointer=MemorySaver())
    [pending] = app.invoke({"topic": "t"}, thread_id="T").interrupts
    run = app.invoke(Resume({pending.id: "ok"}), thread_id="T")
    assert run.state["notes"][-1] == "approved: ok"


def test_async_children_run_under_ainvoke() -> None:
    """An async child node runs inside an async parent run."""
    child = Graph(Child)

    @child.node(start=True, then=END)
    async def search(state: Child) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"notes": ["async"]}

    run = asyncio.run(team(child).compile().ainvoke({"topic": "t"}))
    assert run.state["notes"] == ["brief", "async"]
    assert team(child).compile().invoke({"topic": "t"}).state == run.state
