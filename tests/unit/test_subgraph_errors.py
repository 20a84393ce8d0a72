"""Run errors raised inside a subgraph's child, at any depth: they name nodes by their path
(``sub/c1``, ``mid/sub/c1``) in their attributes and message, and carry in ``err.state``
the top-level run's state (the one a ``StepLimitError`` at that point carries); with a
checkpointer that state is saved and ``invoke(None, thread_id=...)`` continues from it."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, Literal, TypedDict

import pytest

from corral import (
    END,
    Budget,
    BudgetError,
    Command,
    Context,
    Cost,
    CostExceededError,
    End,
    Graph,
    Guard,
    GuardExhaustedError,
    InvalidUpdateError,
    NodeCapError,
    NodeError,
    NodeTimeoutError,
    RouteError,
    StepLimitError,
    StuckJoinError,
)
from corral.checkpoint import Checkpointer
from corral.errors import CorralError


class Child(TypedDict):
    n: int
    log: Annotated[list[str], operator.add]


class Top(TypedDict):
    n: int
    log: Annotated[list[str], operator.add]
    secret: str


TOP = {"n": 0, "log": [], "secret": "s"}
AFTER_A = {"n": 1, "log": ["a"], "secret": "s"}
"""The top-level state in the superstep of the entry: only ``a`` ran before it."""

KINDS = ["steps", "cap", "guard", "join", "budget", "cost"]


def counted(g: Graph[Any], name: str, ran: list[str], over: list[str], **options: Any) -> None:
    """Register ``name`` on ``g``: it spends one call (two while ``name`` is in ``over``),
    appends to ``log`` and records its run in ``ran``."""

    def node(state: Any, ctx: Context) -> dict[str, Any]:
        ran.append(name)
        calls = 2 if name in over else 1
        if name in over:
            over.remove(name)  # over its declared cost once: continuing finishes
        ctx.spend(calls=calls)
        return {"n": state["n"] + 1, "log": [name]}

    node.__name__ = name
    g.node(name, cost=Cost(calls=1), **options)(node)


def child(kind: str, ran: list[str], over: list[str]) -> Graph[Child]:
    """The child that stops the run with ``kind``'s error (``steps``, ``budget`` and
    ``cost``: before or in ``c2``, after ``c1``)."""
    g = Graph(Child, name="child")
    if kind in ("steps", "budget", "cost"):
        counted(g, "c1", ran, over, start=True, then="c2")
        counted(g, "c2", ran, over, then=END)
    elif kind in ("cap", "guard"):
        guard = Guard("c1", max=5, otherwise=END) if kind == "cap" else Guard("c1", max=2)
        counted(g, "c1", ran, over, start=True, max_runs=2 if kind == "cap" else None)

        @g.router("c1", guards=[guard])
        def again(state: Child) -> Literal["c1"] | End:
            return "c1"

    else:
        counted(g, "c1", ran, over, start=True)

        @g.router("c1")
        def one_branch(state: Child) -> list[Literal["x", "y"]]:
            return ["x"]

        counted(g, "x", ran, over, then="j")
        counted(g, "y", ran, over, then="j")
        counted(g, "j", ran, over, then=END, wait_for=("x", "y"), ignore=["CR304"])
    return g


def parent(kind: str, depth: int, ran: list[str], over: list[str]) -> Graph[Top]:
    """``a`` then the child as ``sub`` (depth 1), or inside ``mid`` after ``m1`` (depth 2);
    a cap of steps that stops the run before the child's ``c2``."""
    inner = child(kind, ran, over)
    if depth == 2:
        mid = Graph(Child, name="mid")
        counted(mid, "m1", ran, over, start=True, then="sub")
        mid.subgraph("sub", inner, then=END)
        inner = mid
    g = Graph(Top, name="top", max_steps=depth + 1 if kind == "steps" else 50)
    counted(g, "a", ran, over, start=True, then="mid" if depth == 2 else "sub")
    g.subgraph("mid" if depth == 2 else "sub", inner, then=END)
    return g


def expected(kind: str, prefix: str) -> tuple[type[CorralError], dict[str, Any]]:
    """Return the error ``kind`` stops the run with and its facts, nodes named by path."""
    if kind == "steps":
        return StepLimitError, {"node": prefix + "c2"}
    if kind == "cap":
        return NodeCapError, {"node": prefix + "c1", "max_runs": 2}
    if kind == "guard":
        return GuardExhaustedError, {"source": prefix + "c1", "target": prefix + "c1"}
    if kind == "join":
        facts = {"join": prefix + "j", "waiting_for": (prefix + "y",)}
        return StuckJoinError, {**facts, "allowed": (prefix + "x", prefix + "y")}
    return (BudgetError if kind == "budget" else CostExceededError), {"node": prefix + "c2"}


def run(app: Any, how: str, input: Any, **options: Any) -> None:
    """Run ``app`` to its end with ``invoke``, ``ainvoke``, ``stream`` or ``astream``."""
    if how == "invoke":
        app.invoke(input, **options)
    elif how == "ainvoke":
        asyncio.run(app.ainvoke(input, **options))
    elif how == "stream":
        list(app.stream(input, **options))
    else:

        async def drain() -> None:
            async for _ in app.astream(input, **options):
                pass

        asyncio.run(drain())


def budget(kind: str, depth: int) -> dict[str, Any]:
    """The budget that stops the run before the child's ``c2`` (``budget``), else none."""
    return {"budget": Budget(calls=depth + 1)} if kind == "budget" else {}


@pytest.mark.parametrize("how", ["invoke", "ainvoke", "stream", "astream"])
@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize("kind", KINDS)
def test_an_error_inside_a_child_names_the_path_and_carries_the_top_level_state(
    kind: str, depth: int, how: str
) -> None:
    """Each run error raised in a child (or a grandchild) names its nodes by path, in its
    facts and its message, and its ``state`` is the top-level run's."""
    ran: list[str] = []
    over = ["c2"] if kind == "cost" else []
    app = parent(kind, depth, ran, over).compile()
    prefix = "mid/sub/" if depth == 2 else "sub/"
    error, facts = expected(kind, prefix)
    with pytest.raises(error) as caught:
        run(app, how, TOP, **budget(kind, depth))
    assert {name: getattr(caught.value, name) for name in facts} == facts
    for name in facts:
        if isinstance(facts[name], str):
            assert repr(facts[name]) in str(caught.value)
    state: Any = caught.value.state  # type: ignore[attr-defined]
    assert state == AFTER_A


@pytest.mark.parametrize("kind", KINDS)
def test_a_checkpointed_thread_keeps_the_state_and_continues_after_an_error_in_a_child(
    kind: str, saver: Checkpointer
) -> None:
    """The state the error carries is the thread's; continuing the thread goes on from
    where the child stopped: a finished child node never runs again. A cap raises the
    same error again; a larger budget or step cap, or a node that keeps its cost now,
    lets the run finish."""
    ran: list[str] = []
    over = ["c2"] if kind == "cost" else []
    app = parent(kind, 1, ran, over).compile(checkpointer=saver)
    error, facts = expected(kind, "sub/")
    with pytest.raises(error) as caught:
        app.invoke(TOP, thread_id="t", **budget(kind, 1))
    assert caught.value.state == AFTER_A  # type: ignore[attr-defined]
    assert app.get_state("t").values == AFTER_A
    before = list(ran)
    if kind in ("cap", "guard", "join"):
        with pytest.raises(error) as again:
            app.invoke(None, thread_id="t")
        assert again.value.state == AFTER_A  # type: ignore[attr-defined]
        assert {name: getattr(again.value, name) for name in facts} == facts
        assert ran == before  # nothing ran again
        return
    more = {"budget": Budget(calls=10)} if kind == "budget" else {"max_steps": 10}
    finished = app.invoke(None, thread_id="t", **more)
    assert finished.state == {"n": 3, "log": ["a", "c1", "c2"], "secret": "s"}
    assert ran == [*before, "c2"]  # c1 finished before the error: it does not run again


def failing_child(kind: str) -> Graph[Child]:
    """A child whose node ``c1`` returns what its graph cannot take (``update``), whose
    router or ``Command`` picks a target it does not name (``router``, ``goto``), or that
    runs past its ``timeout=`` (``timeout``)."""
    g = Graph(Child, name="child")
    if kind == "update":

        @g.node(start=True, then=END)
        def c1(state: Child) -> Any:
            return 5

    elif kind == "router":

        @g.node(start=True)
        def c1(state: Child) -> dict[str, Any]:
            return {}

        @g.router("c1")
        def pick(state: Child) -> Literal["c2"] | End:
            return "nowhere"  # type: ignore[return-value]

        g.node("c2", then=END)(lambda state: {})
    elif kind == "goto":

        @g.node(start=True)
        def c1(state: Child) -> Command[Literal["c2"]]:
            return Command(goto="nowhere")  # type: ignore[arg-type]

        g.node("c2", then=END)(lambda state: {})
    else:

        @g.node(start=True, then=END, timeout=0.01)
        async def c1(state: Child) -> dict[str, Any]:
            await asyncio.Event().wait()  # never set: only the timeout ends it
            return {}

    return g


@pytest.mark.parametrize("how", ["invoke", "ainvoke", "stream", "astream"])
@pytest.mark.parametrize("kind", ["update", "router", "goto", "timeout"])
def test_an_invalid_update_route_or_timeout_inside_a_grandchild_names_the_path(
    kind: str, how: str
) -> None:
    """InvalidUpdateError, RouteError (a router's, a Command's) and a NodeTimeoutError
    name the node (and the router) by path; the router's own routes stay the names it
    returns."""
    mid = Graph(Child, name="mid")
    mid.subgraph("sub", failing_child(kind), start=True, then=END)
    g = Graph(Top, name="top")
    g.subgraph("mid", mid, start=True, then=END)
    app = g.compile()
    if kind == "timeout" and how in ("invoke", "stream"):
        how = "a" + how  # an async node with a timeout runs under the async driver
    expected: dict[str, type[CorralError]] = {
        "update": InvalidUpdateError,
        "router": RouteError,
        "goto": RouteError,
        "timeout": NodeError,
    }
    with pytest.raises(expected[kind]) as caught:
        run(app, how, TOP)
    error: Any = caught.value
    if kind == "update":
        assert (error.node, error.nodes) == ("mid/sub/c1", ("mid/sub/c1",))
        assert "node 'mid/sub/c1' returned int 5" in str(error)
    elif kind == "router":
        assert (error.router, error.value, error.allowed) == (
            "mid/sub/pick",
            "nowhere",
            ("c2", END),
        )
        assert "router 'mid/sub/pick' (after node 'mid/sub/c1')" in str(error)
    elif kind == "goto":
        assert (error.router, error.allowed) == ("mid/sub/c1", ("c2",))
        assert "node 'mid/sub/c1' returned Command(goto='nowhere')" in str(error)
    else:
        assert isinstance(error.__cause__, NodeTimeoutError)
        assert (error.node, error.__cause__.node) == ("mid/sub/c1", "mid/sub/c1")
        assert "node 'mid/sub/c1' ran longer than its timeout=0.01 s" in str(error)


def refuse_99(current: int, update: int) -> int:
    """A reducer that refuses the value 99."""
    if update == 99:
        raise ValueError("99 is refused")
    return update


class Plain(TypedDict):
    n: int


class Refusing(TypedDict):
    n: Annotated[int, refuse_99]


MERGES = ["reducer", "conflict", "parent", "output"]


def merge_failure(kind: str, depth: int, ran: list[str]) -> Graph[Plain]:
    """A graph whose merge fails inside its child ``sub`` (inside ``mid`` at depth 2): the
    child's reducer refuses ``c1``'s update (``reducer``), the child's ``x`` and ``y`` both
    write ``n``, which has no reducer (``conflict``), or the graph that entered the child
    refuses, through its own reducer, the child's write (``parent``) or ``output=``'s
    (``output``)."""

    def writer(name: str, value: int) -> Any:
        def node(state: Any) -> dict[str, Any]:
            ran.append(name)
            update = {"n": value}
            return update  # writes the analyser cannot see: CR301 stays quiet

        return node

    inner = Graph(Refusing if kind == "reducer" else Plain, name="child")
    if kind == "conflict":
        inner.node("c1", start=True, then=("x", "y"))(writer("c1", 1))
        inner.node("x", then=END)(writer("x", 2))
        inner.node("y", then=END)(writer("y", 3))
    else:
        inner.node("c1", start=True, then=END)(writer("c1", 99))
    above: Any = Refusing if kind in ("parent", "output") else Plain
    output = {"output": lambda state: {"n": 99}} if kind == "output" else {}
    if depth == 2:
        mid = Graph(above, name="mid")
        mid.subgraph("sub", inner, start=True, then=END, **output)
        inner, above, output = mid, Plain, {}
    g = Graph(above, name="top")
    g.node("a", start=True, then="mid" if depth == 2 else "sub")(writer("a", 5))
    g.subgraph("mid" if depth == 2 else "sub", inner, then=END, **output)
    return g


def merge_facts(kind: str, prefix: str) -> dict[str, Any]:
    """Return the facts of the ``InvalidUpdateError`` of ``kind``, nodes named by path."""
    if kind == "conflict":
        return {"node": prefix + "y", "nodes": (prefix + "x", prefix + "y"), "key": "n"}
    if kind == "output":  # the subgraph node's own write
        return {"node": prefix[:-1], "nodes": (prefix[:-1],), "key": "n"}
    return {"node": prefix + "c1", "nodes": (prefix + "c1",), "key": "n"}


@pytest.mark.parametrize("how", ["invoke", "ainvoke", "stream", "astream"])
@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize("kind", MERGES)
def test_a_failed_merge_inside_a_child_names_the_nodes_by_path(
    kind: str, depth: int, how: str
) -> None:
    """A reducer that raises, a parallel write without a reducer, and a write the graph that
    entered the child refuses name the nodes by path, in the facts and the message."""
    app = merge_failure(kind, depth, []).compile()
    with pytest.raises(InvalidUpdateError) as caught:
        run(app, how, {"n": 0})
    facts = merge_facts(kind, "mid/sub/" if depth == 2 else "sub/")
    assert {name: getattr(caught.value, name) for name in facts} == facts
    for node in facts["nodes"]:
        assert repr(node) in str(caught.value)
    if kind == "conflict":  # the superstep is the child's own: the message says whose
        subgraph = "mid/sub" if depth == 2 else "sub"
        assert f"in superstep 2 of subgraph {subgraph!r}" in str(caught.value)


@pytest.mark.parametrize("kind", MERGES)
def test_a_checkpointed_thread_keeps_its_state_after_a_failed_merge_in_a_child(
    kind: str, saver: Checkpointer
) -> None:
    """The thread keeps the state before the failed superstep; continuing it fails the same
    way again (the reducer still refuses) and runs no finished node a second time."""
    ran: list[str] = []
    app = merge_failure(kind, 1, ran).compile(checkpointer=saver)
    with pytest.raises(InvalidUpdateError):
        app.invoke({"n": 0}, thread_id="t")
    assert app.get_state("t").values == {"n": 5}
    before = list(ran)
    with pytest.raises(InvalidUpdateError) as again:
        app.invoke(None, thread_id="t")
    facts = merge_facts(kind, "sub/")
    assert {name: getattr(again.value, name) for name in facts} == facts
    assert ran == before
    assert app.get_state("t").values == {"n": 5}


@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize("returned", [{"zz": 1}, {"n": 99}], ids=["unknown key", "refused"])
def test_an_input_mapping_the_child_cannot_take_names_the_subgraph(
    returned: dict[str, Any], depth: int
) -> None:
    """What ``input=`` returns is the child's input: a key the child lacks, or a value its
    reducer refuses, is an ``InvalidUpdateError`` naming ``input=`` and the subgraph by its
    path (not "the input", which the caller gave correctly)."""
    inner = Graph(Refusing, name="child")
    inner.node("c1", start=True, then=END)(lambda state: {"n": 1})
    outer: Any = Graph(Plain, name="mid")
    outer.subgraph("sub", inner, start=True, then=END, input=lambda state: returned)
    if depth == 2:
        top = Graph(Plain, name="top")
        top.subgraph("mid", outer, start=True, then=END)
        outer = top
    with pytest.raises(InvalidUpdateError) as caught:
        outer.compile().invoke({"n": 0})
    path = "mid/sub" if depth == 2 else "sub"
    assert (caught.value.node, caught.value.key) == (path, next(iter(returned)))
    assert f"input= of subgraph {path!r}" in str(caught.value)
