"""The graph fingerprint ignores the order routes are listed in, and threads saved with the
fingerprint that did not still resume (issue 27: a resume in a second process was refused
as "different nodes or routes" when that process had evaluated ``Command[Literal["x",
"y"]]`` before the graph's ``Command[Literal["y", "x"]]``).

``tests/fixtures/sqlite/route_order_v1.sqlite`` is a thread of
``tests/graphs/route_order_graph.py`` paused at ``ask``, written by corral at commit
10436bb (the fingerprint in listed order), with::

    from graphs.route_order_graph import g
    app = g.compile(checkpointer=SqliteSaver("route_order_v1.sqlite"))
    app.invoke({"choice": "", "path": []}, thread_id="t")
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any, Literal, TypedDict

import pytest
from graphs.route_order_graph import g
from hypothesis import given, settings
from hypothesis import strategies as st

from corral import END, Command, End, Graph, Resume, SqliteSaver, interrupt
from corral.errors import CheckpointError
from corral.fingerprint import fingerprint, legacy_fingerprint
from corral.spec import GraphSpec

TESTS = Path(__file__).resolve().parents[1]
FIXTURE = TESTS / "fixtures" / "sqlite" / "route_order_v1.sqlite"
WRITTEN_BY_10436BB = "c7de31c7d841ed18"

SCRIPT = """
import json, sys
from graphs.route_order_graph import g
from corral import Resume, SqliteSaver
saver = SqliteSaver(sys.argv[1])
app = g.compile(checkpointer=saver)
value = {"choice": "", "path": []} if sys.argv[2] == "start" else Resume(sys.argv[2])
run = app.invoke(value, thread_id="t")
print(json.dumps({"status": run.status, "path": run.state["path"]}))
saver.close()
"""


def in_process(db: Path, answer: str, **env: str) -> dict[str, Any]:
    """Run ``route_order_graph`` on ``db`` in a new Python process; return what it printed."""
    paths = os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(db), answer],
        env={**os.environ, "PYTHONPATH": paths, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_a_process_that_lists_the_routes_in_another_order_resumes_the_thread(
    tmp_path: Path,
) -> None:
    """The writer reads ``pick``'s targets as ("y", "x"), the resuming process (which met
    ``Command[Literal["x", "y"]]`` first) as ("x", "y"): the same graph, so it resumes."""
    db = tmp_path / "t.sqlite"
    assert in_process(db, "start") == {"status": "interrupted", "path": []}
    resumed = in_process(db, "y", CORRAL_LITERAL_FIRST="xy")
    assert resumed == {"status": "done", "path": ["ask", "y"]}


def test_a_thread_saved_with_the_listed_order_fingerprint_resumes_and_is_rewritten(
    tmp_path: Path,
) -> None:
    """A thread written by corral at 10436bb is accepted; the run's new checkpoints
    record the order-free fingerprint."""
    db = tmp_path / "old.sqlite"
    shutil.copyfile(FIXTURE, db)
    saver = SqliteSaver(db)
    try:
        old = [c.meta["fingerprint"] for c in saver.checkpoints("t")]
        assert old == [WRITTEN_BY_10436BB] * 2
        assert legacy_fingerprint(g.spec()) == WRITTEN_BY_10436BB != fingerprint(g.spec())
        app = g.compile(checkpointer=saver)
        run = app.invoke(Resume("x"), thread_id="t")
        assert (run.status, run.state["path"]) == ("done", ["ask", "x"])
        new = [c.meta["fingerprint"] for c in saver.checkpoints("t")][2:]
        assert new and set(new) == {fingerprint(g.spec())}
    finally:
        saver.close()


class Choice(TypedDict):
    choice: str
    path: Annotated[list[str], lambda a, b: a + b]


def other_routes() -> Graph[Choice]:
    """``route_order_graph`` with one more target for ``pick``: another graph."""
    h = Graph(Choice, name="route_order")

    @h.node(start=True, then="pick")
    def ask(state: Choice) -> dict[str, object]:
        return {"choice": str(interrupt("x or y?")), "path": ["ask"]}

    @h.node()
    def pick(state: Choice) -> Command[Literal["y", "x", "z"]]:
        return Command(goto="x")

    for name in ("x", "y", "z"):
        h.node(name, then=END)(lambda state: {"path": [state["choice"]]})
    return h


def test_a_thread_saved_with_the_listed_order_fingerprint_is_refused_by_another_graph(
    tmp_path: Path,
) -> None:
    db = tmp_path / "old.sqlite"
    shutil.copyfile(FIXTURE, db)
    with SqliteSaver(db) as saver:
        app = other_routes().compile(checkpointer=saver)
        with pytest.raises(CheckpointError, match="different nodes or routes"):
            app.invoke(Resume("x"), thread_id="t")


def _permuted(spec: GraphSpec, data: st.DataObject) -> GraphSpec:
    """``spec`` with every route's targets listed in an order ``data`` draws."""

    def shuffle(names: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(data.draw(st.permutations(names)))

    nodes = []
    for ns in spec.nodes:
        command = ns.command
        if command is not None and command.names is not None:
            command = dataclasses.replace(command, names=shuffle(command.names))
        then = shuffle(ns.then) if ns.then is not None else None
        nodes.append(dataclasses.replace(ns, then=then, command=command))
    routers = [
        dataclasses.replace(
            r,
            targets=dataclasses.replace(
                r.targets,
                names=shuffle(r.targets.names) if r.targets.names is not None else None,
                sends=shuffle(r.targets.sends),
            ),
        )
        for r in spec.routers
    ]
    return dataclasses.replace(spec, nodes=tuple(nodes), routers=tuple(routers))


def fan_graph() -> GraphSpec:
    """Fan-out ``then=``, a join, a router with several targets and one sending to two."""
    from corral import Send

    class S(TypedDict):
        items: Annotated[list[int], lambda a, b: a + b]

    f = Graph(S)
    f.node("start", start=True, then=["a", "b", "c"])(lambda s: {})
    f.node("a", then="join")(lambda s: {})
    f.node("b", then="join")(lambda s: {})
    f.node("c", then="join")(lambda s: {})
    f.node("join", wait_for=("a", "b", "c"))(lambda s: {})
    f.node("spread")(lambda s: {})
    for name in ("one", "two"):
        f.node(name, then=END, input=int)(lambda n: {"items": [n]})

    @f.router("join")
    def choose(state: S) -> list[Literal["spread", "one", "two"]] | End:
        return ["spread"] if not state["items"] else END

    @f.router("spread", max_sends=2)
    def send(state: S) -> list[Send[Literal["two", "one"]]]:
        return [Send("one", 1), Send("two", 2)]

    return f.spec()


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_the_fingerprint_does_not_depend_on_the_order_routes_are_listed_in(
    data: st.DataObject,
) -> None:
    for spec in (fan_graph(), g.spec()):
        assert fingerprint(_permuted(spec, data)) == fingerprint(spec)


def test_the_fingerprint_tells_other_routes_apart() -> None:
    """The spec the property permutes reads every kind of route, and a target more or
    less is another graph."""
    spec = fan_graph()
    assert [r.targets.names or r.targets.sends for r in spec.routers] == [
        ("spread", "one", "two", "__end__"),
        ("two", "one"),
    ]
    first = spec.routers[0]
    fewer = dataclasses.replace(first.targets, names=("spread", "one"))
    changed = dataclasses.replace(spec, routers=(dataclasses.replace(first, targets=fewer),))
    assert fingerprint(changed) != fingerprint(spec)
