"""Where subgraphs meet the other features: forks run the child afresh (contract 7a), a
used-up guard out of a subgraph node, and the step a child's failure names."""

from __future__ import annotations

import json
import operator
from pathlib import Path
from typing import Annotated, Any, Literal, TypedDict

import pytest

from corral import (
    END,
    Command,
    Graph,
    Guard,
    GuardExhaustedError,
    NodeError,
    Resume,
    Send,
    SqliteSaver,
    interrupt,
)
from corral.checkpoint import Checkpointer
from corral.cli import main


class Research(TypedDict):
    topic: str
    summary: str
    notes: Annotated[list[str], operator.add]


def research(calls: list[str], *, asks: bool = False) -> Graph[Research]:
    """plan -> research (a child that summarises the topic, asking first when ``asks``)."""
    child = Graph(Research, name="research")

    @child.node(start=True, then=END)
    def summarise(state: Research) -> dict[str, Any]:
        answer = interrupt(f"summarise {state['topic']}?") if asks else "yes"
        calls.append(f"{state['topic']}:{answer}")
        return {"summary": f"summary of {state['topic']} ({answer})"}

    g = Graph(Research)

    @g.node(start=True, then="research")
    def plan(state: Research) -> dict[str, Any]:
        return {"notes": [f"plan {state['topic']}"]}

    g.subgraph("research", child, then=END)
    return g


def before_the_entry(app: Any, thread: str) -> str:
    """Return the checkpoint after plan ran, before the subgraph entry."""
    return next(h.checkpoint_id for h in app.history(thread) if h.next == ("research",))


def test_a_fork_before_a_subgraph_runs_the_child_afresh(saver: Checkpointer) -> None:
    """update_state(T, {'topic': ...}, checkpoint_id=C) then invoke(None): the child runs
    on the forked state; its old summary is never reused."""
    calls: list[str] = []
    app = research(calls).compile(checkpointer=saver)
    assert (
        app.invoke({"topic": "tides"}, thread_id="t").state["summary"] == "summary of tides (yes)"
    )
    app.update_state("t", {"topic": "volcanoes"}, checkpoint_id=before_the_entry(app, "t"))
    run = app.invoke(None, thread_id="t")
    assert run.state["summary"] == "summary of volcanoes (yes)"
    assert calls == ["tides:yes", "volcanoes:yes"]


def test_replaying_from_before_a_subgraph_asks_again(saver: Checkpointer) -> None:
    """invoke(None, checkpoint_id=C) before a child that asks: the old answer is not reused;
    the child asks again, and the new answer is the one used."""
    calls: list[str] = []
    app = research(calls, asks=True).compile(checkpointer=saver)
    assert app.invoke({"topic": "tides"}, thread_id="t").status == "interrupted"
    assert app.invoke(Resume("yes"), thread_id="t").status == "done"
    replay = app.invoke(None, thread_id="t", checkpoint_id=before_the_entry(app, "t"))
    assert replay.status == "interrupted" and replay.interrupts[0].node == "research/summarise"
    done = app.invoke(Resume("no"), thread_id="t")
    assert done.state["summary"] == "summary of tides (no)"
    assert calls == ["tides:yes", "tides:no"]


def test_a_fork_of_a_fork_runs_the_child_afresh_each_time(saver: Checkpointer) -> None:
    """Two forks from the same checkpoint each get their own child run."""
    calls: list[str] = []
    app = research(calls).compile(checkpointer=saver)
    app.invoke({"topic": "tides"}, thread_id="t")
    before = before_the_entry(app, "t")
    for topic in ("volcanoes", "glaciers"):
        app.update_state("t", {"topic": topic}, checkpoint_id=before)
        assert app.invoke(None, thread_id="t").state["summary"] == f"summary of {topic} (yes)"
    assert calls == ["tides:yes", "volcanoes:yes", "glaciers:yes"]


def test_a_pause_inside_the_child_still_resumes_after_a_plain_update(
    saver: Checkpointer,
) -> None:
    """An update of the newest checkpoint (not a fork) keeps the child where it paused:
    Resume answers it and the child is not run again from its start."""
    calls: list[str] = []
    app = research(calls, asks=True).compile(checkpointer=saver)
    app.invoke({"topic": "tides"}, thread_id="t")
    app.update_state("t", {"notes": ["edited"]})
    run = app.invoke(Resume("ok"), thread_id="t")
    assert run.state["summary"] == "summary of tides (ok)" and calls == ["tides:ok"]


class Loop(TypedDict):
    n: int


def looping_subgraph() -> Graph[Loop]:
    child = Graph(Loop, name="bump")

    @child.node(start=True, then=END)
    def inc(state: Loop) -> dict[str, Any]:
        return {"n": state["n"] + 1}

    g = Graph(Loop)
    g.subgraph(
        "bump", child, start=True, then="bump", guards=[Guard("bump", max=1)], ignore=("CR105",)
    )
    return g


def test_a_used_up_guard_out_of_a_subgraph_node_is_saved_and_named(
    saver: Checkpointer,
) -> None:
    """The second time round, the guard out of the subgraph node is used up: the run stops
    with GuardExhaustedError, and the merged superstep is saved (no SerializationError)."""
    app = looping_subgraph().compile(checkpointer=saver)
    with pytest.raises(GuardExhaustedError) as info:
        app.invoke({"n": 0}, thread_id="t")
    assert (info.value.source, info.value.target) == ("bump", "bump")
    snapshot = app.get_state("t")
    assert snapshot.values["n"] == 2 and snapshot.status == "error"


def test_a_node_error_in_a_child_names_the_step_it_reports(engine_path: str) -> None:
    """A NodeError raised inside a subgraph says the same step in its text as in .step."""
    child = Graph(Loop, name="inner")

    @child.node(start=True, then=END)
    def fail(state: Loop) -> None:
        raise ValueError("boom")

    g = Graph(Loop)

    @g.node(start=True, then="sub")
    def first(state: Loop) -> dict[str, Any]:
        return {"n": 1}

    g.subgraph("sub", child, then=END)
    with pytest.raises(NodeError) as info:
        g.compile().invoke({"n": 0})
    assert info.value.node == "sub/fail" and info.value.step == 2
    assert "(step 2)" in str(info.value) and "(step 1)" not in str(info.value)


class Outer(TypedDict):
    topic: str


class Inner(TypedDict):
    topic: str
    scratch: str


def test_corral_history_lists_child_nodes_whatever_they_wrote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A child node that wrote only a child-only key, or nothing, is still listed in
    `corral history` of the parent, by path, in the superstep that entered the child;
    on a fork's branch, the fork's child is the one listed."""
    child = Graph(Inner, name="inner")

    @child.node(start=True, then="quiet")
    def think(state: Inner) -> dict[str, Any]:
        return {"scratch": "notes"}

    @child.node(then=END)
    def quiet(state: Inner) -> None:
        return None

    g = Graph(Outer)

    @g.node(start=True, then="sub")
    def plan(state: Outer) -> None:
        return None

    g.subgraph("sub", child, then=END)
    db = tmp_path / "h.sqlite"
    with SqliteSaver(db) as sqlite:
        app = g.compile(checkpointer=sqlite)
        app.invoke({"topic": "tides"}, thread_id="t")
        before = next(h for h in app.history("t") if h.next == ("sub",))
        app.update_state("t", {"topic": "seas"}, checkpoint_id=before.checkpoint_id)
        app.invoke(None, thread_id="t")
    capsys.readouterr()
    assert main(["history", "t", "--db", str(db), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    entries = [r["nodes"] for r in rows if "sub" in r["nodes"]]
    assert entries == [["sub", "sub/think", "sub/quiet"]] * 2


class Desk(TypedDict):
    topics: list[str]
    summary: Annotated[list[str], operator.add]


def test_a_fork_before_a_send_fan_out_runs_each_child_afresh(saver: Checkpointer) -> None:
    """Send entries into a subgraph, forked with other topics: every entry runs its child
    on the new argument; none of the old children's results comes back."""
    child = Graph(Desk, name="one")

    @child.node(start=True, then=END)
    def write(state: Desk) -> dict[str, Any]:
        return {"summary": [f"on {state['topics'][0]}"]}

    g = Graph(Desk)

    @g.node(start=True)
    def brief(state: Desk) -> Command[Literal["one"]]:
        return Command(goto=[Send("one", {"topics": [t], "summary": []}) for t in state["topics"]])

    g.subgraph("one", child, then=END)
    app = g.compile(checkpointer=saver)
    first = app.invoke({"topics": ["tides", "seals"], "summary": []}, thread_id="t")
    assert sorted(first.state["summary"]) == ["on seals", "on tides"]
    before = next(h for h in app.history("t") if h.next == ("brief",))
    app.update_state("t", {"topics": ["volcanoes", "glaciers"]}, checkpoint_id=before.checkpoint_id)
    again = app.invoke(None, thread_id="t")
    assert sorted(again.state["summary"]) == ["on glaciers", "on volcanoes"]


# ------------------------------------------- a finished entry beside a pause or an update


class Log(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    seen: int


def beside(calls: list[str]) -> Graph[Log]:
    """n0 fans out to s1 (reads the log), sub (a child of one node) and ask (a question)."""
    child = Graph(Log, name="child")

    @child.node(start=True, then=END)
    def c0(state: Log) -> dict[str, Any]:
        calls.append("sub/c0")
        return {"log": ["sub/c0"]}

    g = Graph(Log)
    g.node("n0", start=True, then=("s1", "sub", "ask"))(lambda state: {"log": ["n0"]})

    @g.node(then=END)
    def s1(state: Log) -> dict[str, Any]:
        calls.append("s1")
        return {"seen": len(state["log"])}

    g.subgraph("sub", child, then=END)

    @g.node(then=END)
    def ask(state: Log) -> dict[str, Any]:
        return {"log": [f"ask={interrupt('go?')}"]}

    return g


def test_a_pause_counts_a_finished_entry_once(saver: Checkpointer) -> None:
    """At the pause the entry's child run is counted (n0, s1, sub/c0); resumed, the entry
    reads its child's writes back without counting or running it again."""
    calls: list[str] = []
    app = beside(calls).compile(checkpointer=saver)
    assert app.invoke({"log": []}, thread_id="t").steps == app.get_state("t").steps == 3
    run = app.invoke(Resume("yes"), thread_id="t")
    assert (run.steps, calls) == (4, ["s1", "sub/c0"])
    assert run.state["log"] == ["n0", "sub/c0", "ask=yes"]


def test_a_plain_update_runs_the_finished_nodes_again_and_keeps_the_child(
    saver: Checkpointer,
) -> None:
    """update_state without as_node at the pause: s1 runs again on the new state (its runs
    stay counted); the child is a thread of its own, which the update does not fork, so
    its writes are read back; Resume still answers ask."""
    calls: list[str] = []
    app = beside(calls).compile(checkpointer=saver)
    app.invoke({"log": []}, thread_id="t")
    app.update_state("t", {"log": ["edit"]})
    assert app.get_state("t").steps == 3
    run = app.invoke(Resume("yes"), thread_id="t")
    assert calls == ["s1", "sub/c0", "s1"] and run.steps == 5
    assert run.state == {"log": ["n0", "edit", "sub/c0", "ask=yes"], "seen": 2}


def test_a_resumed_child_counts_a_finished_grandchild_once(saver: Checkpointer) -> None:
    """The pause is inside the child, beside a finished entry of its own: p, sub/start and
    sub/inner/g0 are counted at the pause, sub/ask once it is answered."""
    grandchild = Graph(Log, name="inner")
    grandchild.node("g0", start=True, then=END)(lambda state: {"log": ["g0"]})
    child = Graph(Log, name="sub")
    child.node("start", start=True, then=("ask", "inner"))(lambda state: {"log": ["start"]})
    child.node("ask", then=END)(lambda state: {"log": [f"ask={interrupt('go?')}"]})
    child.subgraph("inner", grandchild, then=END)
    g = Graph(Log)
    g.node("p", start=True, then="sub")(lambda state: {"log": ["p"]})
    g.subgraph("sub", child, then=END)
    app = g.compile(checkpointer=saver)
    assert app.invoke({"log": []}, thread_id="t").steps == 3
    run = app.invoke(Resume("yes"), thread_id="t")
    assert run.steps == app.get_state("t").steps == 4
    assert run.state["log"] == ["p", "start", "ask=yes", "g0"]


def test_as_node_at_the_pause_runs_a_finished_entry_afresh(saver: Checkpointer) -> None:
    """as_node closes the superstep with s1's finished update; the finished entry waits
    with the unfinished tasks and its child runs afresh next (both runs counted)."""
    calls: list[str] = []
    app = beside(calls).compile(checkpointer=saver)
    app.invoke({"log": []}, thread_id="t")
    app.update_state("t", {"log": ["ask by hand"]}, as_node="ask")
    snapshot = app.get_state("t")
    assert (snapshot.next, snapshot.steps) == (("sub",), 4)
    run = app.invoke(None, thread_id="t")
    assert (run.steps, calls) == (5, ["s1", "sub/c0", "sub/c0"])
    assert run.state == {"log": ["n0", "ask by hand", "sub/c0"], "seen": 1}
