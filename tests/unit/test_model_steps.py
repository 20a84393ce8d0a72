"""Step counts and decisions the reference model once got wrong (issue 27), checked on both
sides.

Each test drives the model and the engine through one sequence the random machine of
``test_model_machine.py`` found, and asserts what API.md (or docs/persistence.md
"Decisions") gives on both, with every run made through each driver in turn (``invoke``,
``ainvoke``, ``stream`` and ``astream``).
"""

from __future__ import annotations

import asyncio

import pytest
from refmodel.behaviour import Triggers, initial_values
from refmodel.build import build
from refmodel.compare import DRIVERS, Driver, drive
from refmodel.interpreter import ModelError
from refmodel.shapes import GraphShape, NodeShape
from refmodel.thread import ModelThread

from corral import (
    END,
    Guard,
    InvalidUpdateError,
    MemorySaver,
    NodeCapError,
    NodeError,
    Resume,
    StuckJoinError,
)


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_dropped_entry_keeps_the_child_runs_counted_at_its_pause(driver: Driver) -> None:
    """``sub``'s child ran ``c0`` and paused in ``c1`` (the pause counted ``c0``); answered,
    ``c1`` fails; ``update_state(as_node="q")`` closes the superstep without the entry.
    ``c0``'s run stays counted (the model dropped it, as if the failure had cut it short)."""
    child = GraphShape(
        (
            NodeShape("c0", "then", ("c1",), start=True, asks=True),
            NodeShape("c1", "then", (END,), asks=True),
        )
    )
    shape = GraphShape(
        (
            NodeShape("p", "then", ("sub",), start=True),
            NodeShape("sub", "sub", ("q",)),
            NodeShape("q", "then", (END,)),
        ),
        child=child,
    )
    model = ModelThread(shape)
    triggers = Triggers()
    app = build(shape, triggers).compile(checkpointer=MemorySaver())

    model.invoke(initial_values(), Triggers())
    drive(app, driver, initial_values(), thread_id="t")
    model.invoke(None, Triggers(), answer="yes")
    drive(app, driver, Resume("yes"), thread_id="t")
    assert model.view.steps == app.get_state("t").steps == 2  # p and c0

    crash = Triggers()
    crash.arm_crash(0)
    assert model.invoke(None, crash, answer="ok").error == "NodeError"
    triggers.arm_crash(0)
    with pytest.raises(NodeError):
        drive(app, driver, Resume("ok"), thread_id="t")

    model.update_state({"log": ["by hand"]}, as_node="q")
    app.update_state("t", {"log": ["by hand"]}, as_node="q")
    assert model.view.steps == app.get_state("t").steps == 3  # p, c0 and q


@pytest.mark.parametrize("driver", DRIVERS)
def test_an_update_that_left_a_join_held_does_not_decide_its_routes_again(
    driver: Driver,
) -> None:
    """``as_node="b1s"`` holds the join ``b1j`` with nothing to run; ``as_node="n0"`` routes
    to ``END`` (still stuck: a continue raises ``StuckJoinError``); ``as_node="b1l"`` then
    releases the join. ``n0``'s router, whose route was taken, is not asked again (it
    would now choose ``b1f``): next is the join alone."""
    shape = GraphShape(
        (
            NodeShape("n0", "router", ("b1f", END), start=True, salt=1),
            NodeShape("b1f", "then", ("b1s", "b1l")),
            NodeShape("b1s", "then", ("b1j",)),
            NodeShape("b1l", "then", ("b1j",)),
            NodeShape("b1j", "then", (END,), wait_for=("b1s", "b1l")),
        )
    )
    model = ModelThread(shape)
    app = build(shape, Triggers()).compile(checkpointer=MemorySaver())
    model.invoke(initial_values(), Triggers())
    drive(app, driver, initial_values(), thread_id="t")
    for node in ("b1s", "n0"):
        model.update_state({"log": [node]}, as_node=node)
        app.update_state("t", {"log": [node]}, as_node=node)
    assert not model.view.next and not app.get_state("t").next  # the join held alone
    assert model.invoke(None, Triggers()).error == "StuckJoinError"
    with pytest.raises(StuckJoinError):
        drive(app, driver, None, thread_id="t")

    model.update_state({"log": ["b1l"]}, as_node="b1l")
    app.update_state("t", {"log": ["b1l"]}, as_node="b1l")
    assert model.view.next == app.get_state("t").next == ("b1j",)
    assert model.invoke(None, Triggers()).status == "done"
    drive(app, driver, None, thread_id="t")
    assert app.get_state("t").status == "done"


@pytest.mark.parametrize("entry_first", [False, True], ids=["entry_last", "entry_first"])
@pytest.mark.parametrize("driver", ["invoke", "ainvoke"])
def test_a_sibling_at_its_max_runs_takes_no_step_from_an_entry(
    driver: str, entry_first: bool
) -> None:
    """``x`` (max_runs=1) ran and leads to itself, ``y`` and the entry ``sub``: the plan
    refuses ``x``, which never starts and so takes no step. At max_steps=3 ``y`` and the
    child's ``c0`` both run, then ``x``'s NodeCapError is the error, on both sides, wherever
    the entry stands in the superstep."""
    child = GraphShape((NodeShape("c0", "then", (END,), start=True),))
    entry = NodeShape("sub", "sub", (END,))
    x = NodeShape(
        "x", "then", ("x", "y", "sub"), start=True, max_runs=1, guards=(Guard("x", max=1),)
    )
    nodes = (entry, x, NodeShape("y", "then", (END,)))
    shape = GraphShape(nodes if entry_first else (x, nodes[2], entry), child=child)
    model = ModelThread(shape)
    app = build(shape, Triggers()).compile(checkpointer=MemorySaver())
    assert model.invoke(initial_values(), Triggers(), max_steps=3).error == "NodeCapError"
    with pytest.raises(NodeCapError):
        if driver == "invoke":
            app.invoke(initial_values(), thread_id="t", max_steps=3)
        else:
            asyncio.run(app.ainvoke(initial_values(), thread_id="t", max_steps=3))
    assert model.view.steps == app.get_state("t").steps == 3  # x, y and sub/c0


@pytest.mark.parametrize("driver", DRIVERS)
def test_an_as_node_update_refused_at_the_barrier_leaves_the_paused_task_to_ask_again(
    driver: Driver,
) -> None:
    """``s`` pauses while ``l1`` and ``l2`` finish, both writing ``last`` (no reducer);
    ``update_state(as_node="n0")`` closes the superstep, and the barrier refuses it
    (``InvalidUpdateError``, recorded). ``s`` waits like any task that had not run: its
    question is no longer pending (persistence.md: "a paused ``interrupt()`` included: it
    asks again"), and continuing asks it again (the model had kept it pending)."""
    shape = GraphShape(
        (
            NodeShape("n0", "then", ("s", "l1", "l2"), start=True),
            NodeShape("s", "then", (END,), asks=True),
            NodeShape("l1", "then", (END,), writes_last=True),
            NodeShape("l2", "then", (END,), writes_last=True),
        ),
        conflict=True,
    )
    model = ModelThread(shape)
    app = build(shape, Triggers()).compile(checkpointer=MemorySaver())
    model.invoke(initial_values(), Triggers())
    drive(app, driver, initial_values(), thread_id="t")

    with pytest.raises(ModelError):
        model.update_state({"log": ["by hand"]}, as_node="n0")
    with pytest.raises(InvalidUpdateError):
        app.update_state("t", {"log": ["by hand"]}, as_node="n0")
    assert model.view.interrupts == list(app.get_state("t").interrupts) == []
    assert model.view.status == app.get_state("t").status == "error"

    assert model.invoke(None, Triggers()).status == "interrupted"
    drive(app, driver, None, thread_id="t")
    asked = [(i.node, i.value) for i in app.get_state("t").interrupts]
    assert model.view.interrupts == asked == [("s", "s?")]
