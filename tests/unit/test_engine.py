"""The engine: supersteps, reducers, bounds, routes, errors, context, trace and streams."""

from __future__ import annotations

import copy
import operator
from typing import Annotated, Any, Literal, TypedDict

import pytest

from corral import (
    END,
    Command,
    CompiledGraph,
    Context,
    End,
    Graph,
    GraphError,
    Guard,
    GuardExhaustedError,
    InvalidUpdateError,
    NodeCapError,
    NodeError,
    Overwrite,
    RouteError,
    Send,
    StepLimitError,
)
from corral.runtime import NodeEnd, NodeStart, RouteTaken, RunEnd, SuperstepEnd, TraceRecord

pytestmark = pytest.mark.usefixtures("engine_path")
"""Each test runs three ways: invoke, invoke through the general path, ainvoke."""


class Score(TypedDict):
    score: int
    drafts: Annotated[list[str], operator.add]


def draft_loop(max_steps: int = 50) -> Graph[Score]:
    g = Graph(Score, max_steps=max_steps)

    @g.node(start=True, then="critique")
    def draft(state: Score) -> dict[str, object]:
        return {"drafts": ["v1"]}

    @g.node()
    def critique(state: Score) -> dict[str, object]:
        return {}

    @g.router("critique", guards=[Guard("revise", max=3, otherwise=END)])
    def after_critique(state: Score) -> Literal["revise"] | End:
        return END if state["score"] >= 80 else "revise"

    @g.node(then="critique")
    def revise(state: Score) -> dict[str, object]:
        return {"score": state["score"] + 20, "drafts": ["v+"]}

    return g


class Count(TypedDict):
    n: int


def counter(target: int, max_steps: int = 50) -> Graph[Count]:
    g = Graph(Count, max_steps=max_steps)

    @g.node(start=True)
    def count(state: Count) -> dict[str, object]:
        return {"n": state["n"] + 1}

    @g.router("count", guards=[Guard("count", max=100_000)])
    def again(state: Count) -> Literal["count"] | End:
        return END if state["n"] >= target else "count"

    return g


# ---------------------------------------------------------------- the seed cases


def test_draft_loop_takes_six_runs() -> None:
    """The contract's example runs draft, critique and two revisions: 6 node runs."""
    run = draft_loop().compile().invoke({"score": 40})
    assert run.steps == 6
    assert run.supersteps == 6
    assert run.state == {"score": 80, "drafts": ["v1", "v+", "v+"]}
    assert run.status == "done"
    assert run.guards == {("critique", "revise"): 2}


def test_draft_loop_under_cap_5_stops_with_score_80() -> None:
    """A cap of 5 stops before the 6th run and carries the state already at 80."""
    with pytest.raises(StepLimitError) as caught:
        draft_loop(max_steps=5).compile().invoke({"score": 40})
    err = caught.value
    assert (err.steps, err.max_steps, err.node) == (5, 5, "critique")
    assert err.state["score"] == 80
    assert "max_steps=5" in str(err) and "'critique'" in str(err)


def test_counter_needing_50_runs_finishes_under_cap_50() -> None:
    """A cap of N allows exactly N node runs."""
    run = counter(50).compile().invoke({"n": 0})
    assert run.steps == 50 and run.state["n"] == 50


def test_counter_needing_51_runs_raises_after_50() -> None:
    """The (N+1)th run raises StepLimitError naming the count and the node."""
    with pytest.raises(StepLimitError) as caught:
        counter(51).compile().invoke({"n": 0})
    assert caught.value.steps == 50
    assert caught.value.node == "count"
    assert caught.value.state == {"n": 50}
    assert str(caught.value) == (
        "stopped after 50 steps (max_steps=50) before running 'count'; "
        "raise max_steps or add a guard"
    )


def test_max_steps_overrides() -> None:
    """compile(max_steps=) overrides the graph's cap and invoke(max_steps=) overrides both."""
    g = counter(60)
    assert g.compile(max_steps=60).invoke({"n": 0}).steps == 60
    with pytest.raises(StepLimitError):
        g.compile(max_steps=60).invoke({"n": 0}, max_steps=59)
    assert g.compile().invoke({"n": 0}, max_steps=60).steps == 60


class Findings(TypedDict):
    topic: str
    findings: Annotated[list[str], operator.add]


def three_branches(reducer: bool) -> Graph[Any]:
    class Plain(TypedDict):
        topic: str
        findings: list[str]

    g: Graph[Any] = Graph(Findings if reducer else Plain)

    @g.node(start=True, then=("web", "papers", "code"))
    def plan(state: Any) -> dict[str, object]:
        return {}

    @g.node(then="report", writes=("findings",))
    def web(state: Any) -> dict[str, object]:
        return {"findings": ["web"]}

    @g.node(then="report", writes=("findings",))
    def papers(state: Any) -> dict[str, object]:
        return {"findings": ["paper"]}

    @g.node(then="report", writes=("findings",))
    def code(state: Any) -> dict[str, object]:
        return {"findings": ["code"]}

    @g.node(then=END)
    def report(state: Any) -> dict[str, object]:
        return {"topic": f"{len(state['findings'])} findings"}

    return g


def test_three_parallel_branches_keep_all_findings() -> None:
    """Branches of one superstep merge through the reducer, in registration order."""
    run = three_branches(reducer=True).compile().invoke({"topic": "x"})
    assert run.state["findings"] == ["web", "paper", "code"]
    assert run.state["topic"] == "3 findings"
    assert run.supersteps == 3 and run.steps == 5


def test_parallel_write_without_reducer_raises_naming_both_nodes() -> None:
    """Two writes of a key with no reducer in one superstep are an error, never last-wins."""
    g = three_branches(reducer=False)
    assert [d.code for d in g.check() if d.code == "CR301"]
    with pytest.raises(GraphError):
        g.compile()
    app: CompiledGraph[Any] = CompiledGraph(g.spec())
    with pytest.raises(InvalidUpdateError) as caught:
        app.invoke({"topic": "x"})
    assert caught.value.key == "findings"
    assert caught.value.nodes == ("web", "papers")
    assert "'web' and 'papers' both wrote key 'findings'" in str(caught.value)


# ---------------------------------------------------------------- state and updates


class Lists(TypedDict):
    items: Annotated[list[str], operator.add]
    tags: Annotated[set[str], operator.or_]
    total: Annotated[int, operator.add]
    last: str


def one_node(func: Any, schema: Any = Lists) -> CompiledGraph[Any]:
    g: Graph[Any] = Graph(schema)
    g.node(name="only", start=True, then=END)(func)
    return CompiledGraph(g.spec())


def test_reducer_keys_missing_from_input_start_empty() -> None:
    """Reducer keys start as the empty value of their type, so operator.add works at once."""
    seen: dict[str, Any] = {}

    def only(state: Lists) -> dict[str, object]:
        seen.update(state)
        return {"items": ["a"], "tags": {"t"}, "total": 2}

    run = one_node(only).invoke({"last": "x"})
    assert seen == {"items": [], "tags": set(), "total": 0, "last": "x"}
    assert run.state == {"items": ["a"], "tags": {"t"}, "total": 2, "last": "x"}


def test_input_is_merged_through_reducers() -> None:
    """The input's reducer keys go through the reducer from the empty value."""
    run = one_node(lambda s: {"items": ["b"]}).invoke({"items": ["a"]})
    assert run.state["items"] == ["a", "b"]


def test_empty_update_keeps_and_overwrite_clears() -> None:
    """Returning [] through a reducer keeps the list; Overwrite([]) clears it."""
    assert one_node(lambda s: {"items": []}).invoke({"items": ["a"]}).state["items"] == ["a"]
    cleared = one_node(lambda s: {"items": Overwrite([])}).invoke({"items": ["a"]})
    assert cleared.state["items"] == []


def test_none_update_changes_nothing() -> None:
    """A node returning None leaves the state as it was."""
    run = one_node(lambda s: None).invoke({"last": "x"})
    assert run.state["last"] == "x" and run.steps == 1


def test_unknown_key_raises_naming_node_and_key() -> None:
    """An update with a key outside the schema raises InvalidUpdateError."""
    with pytest.raises(InvalidUpdateError) as caught:
        one_node(lambda s: {"lsat": "typo"}).invoke({})
    assert (caught.value.node, caught.value.key) == ("only", "lsat")
    assert "'only' wrote key 'lsat'" in str(caught.value)


def test_non_dict_update_raises_naming_the_type() -> None:
    """A node returning something that is not a dict, None or Command raises."""
    with pytest.raises(InvalidUpdateError) as caught:
        one_node(lambda s: ["items"]).invoke({})
    assert caught.value.node == "only" and caught.value.key is None
    assert "returned list" in str(caught.value)


def test_unknown_input_key_raises() -> None:
    """The input is checked against the schema too."""
    with pytest.raises(InvalidUpdateError, match="'nope'"):
        one_node(lambda s: None).invoke({"nope": 1})


def test_a_node_cannot_assign_into_its_state() -> None:
    """The state a node gets is read-only; assigning raises inside the node (a NodeError)."""

    def only(state: Lists) -> None:
        state["last"] = "changed"  # type: ignore[misc]

    with pytest.raises(NodeError) as caught:
        one_node(only).invoke({"last": "x"})
    assert isinstance(caught.value.__cause__, TypeError)
    assert "read-only" in str(caught.value.__cause__)


def test_mutating_what_a_node_read_cannot_corrupt_state() -> None:
    """A list read from the state is the node's own copy: in-place mutation changes nothing."""

    class S(TypedDict):
        items: list[str]
        nested: dict[str, list[int]]
        seen: Annotated[list[str], operator.add]

    g = Graph(S)

    @g.node(start=True, then=("mutate", "look"))
    def begin(state: S) -> None:
        return None

    @g.node(then="check", writes=())
    def mutate(state: S) -> None:
        state["items"].append("evil")
        state["nested"]["a"].append(99)
        dict(state)["items"].append("evil too")
        for _, value in state.items():
            if isinstance(value, list):
                value.clear()

    @g.node(then="check")
    def look(state: S) -> dict[str, object]:
        return {"seen": list(state["items"])}

    @g.node(then=END, wait_for=("mutate", "look"))
    def check(state: S) -> dict[str, object]:
        return {"seen": [*state["items"], str(state["nested"])]}

    items = ["a"]
    nested = {"a": [1]}
    run = g.compile().invoke({"items": items, "nested": nested})
    assert run.state["items"] == ["a"] and run.state["nested"] == {"a": [1]}
    assert run.state["seen"] == ["a", "a", "{'a': [1]}"]
    assert items == ["a"] and nested == {"a": [1]}


def test_a_node_does_not_see_sibling_writes() -> None:
    """All nodes of a superstep read the state at its start."""

    class S(TypedDict):
        n: int
        seen: Annotated[list[int], operator.add]

    g = Graph(S)

    @g.node(start=True, then=END)
    def first(state: S) -> dict[str, object]:
        return {"n": 5}

    @g.node(start=True, then=END)
    def second(state: S) -> dict[str, object]:
        return {"seen": [state["n"]]}

    run = g.compile().invoke({"n": 1})
    assert run.state == {"n": 5, "seen": [1]}
    assert run.supersteps == 1


# ---------------------------------------------------------------- errors


def test_node_exception_is_wrapped_in_node_error() -> None:
    """An exception in a node is raised as NodeError naming node and step; original as cause."""

    def only(state: Lists) -> None:
        raise ValueError("tool down")

    with pytest.raises(NodeError) as caught:
        one_node(only).invoke({})
    assert (caught.value.node, caught.value.step) == ("only", 1)
    assert isinstance(caught.value.__cause__, ValueError)
    assert "node 'only' raised ValueError: tool down (step 1)" in str(caught.value)


def test_router_exception_is_a_node_error() -> None:
    """An exception in a router is raised as NodeError too."""
    g = Graph(Count)

    @g.node(start=True)
    def a(state: Count) -> None:
        return None

    @g.router("a")
    def pick(state: Count) -> End:
        raise KeyError("boom")

    with pytest.raises(NodeError, match="router 'pick' of node 'a' raised KeyError"):
        g.compile().invoke({"n": 0})


def test_router_value_outside_annotation_raises_route_error() -> None:
    """A router returning a value outside its Literal raises RouteError with the facts."""
    g = Graph(Count)

    @g.node(start=True)
    def a(state: Count) -> None:
        return None

    @g.router("a")
    def pick(state: Count) -> Literal["b"] | End:
        return "c"  # type: ignore[return-value]

    @g.node(then=END)
    def b(state: Count) -> None:
        return None

    with pytest.raises(RouteError) as caught:
        g.compile().invoke({"n": 0})
    assert caught.value.router == "pick"
    assert caught.value.value == "c"
    assert caught.value.allowed == ("b", "__end__")


def test_single_target_router_returning_a_list_raises() -> None:
    """A list from a router annotated with one Literal is outside its annotation."""
    g = Graph(Count)

    @g.node(start=True)
    def a(state: Count) -> None:
        return None

    @g.router("a")
    def pick(state: Count) -> End:
        return [END]  # type: ignore[return-value]

    with pytest.raises(RouteError, match="list"):
        g.compile().invoke({"n": 0})


# ---------------------------------------------------------------- guards and caps


def test_guard_sends_run_to_otherwise_once_used_up() -> None:
    """The 4th time a max=3 route is chosen the run goes to otherwise instead."""
    g = Graph(Count)

    @g.node(start=True)
    def work(state: Count) -> dict[str, object]:
        return {"n": state["n"] + 1}

    @g.router("work", guards=[Guard("work", max=3, otherwise="give_up")])
    def again(state: Count) -> Literal["work", "give_up"]:
        return "work"

    @g.node(then=END)
    def give_up(state: Count) -> dict[str, object]:
        return {"n": -state["n"]}

    run = g.compile().invoke({"n": 0})
    assert run.state["n"] == -4
    assert run.guards == {("work", "work"): 3}
    assert [t.node for t in run.trace] == ["work"] * 4 + ["give_up"]


def test_guard_without_otherwise_raises() -> None:
    """A used-up guard with no otherwise raises GuardExhaustedError with the facts."""
    g = Graph(Count)

    @g.node(start=True)
    def work(state: Count) -> dict[str, object]:
        return {"n": state["n"] + 1}

    @g.router("work", guards=[Guard("work", max=2)])
    def again(state: Count) -> Literal["work"] | End:
        return "work"

    with pytest.raises(GuardExhaustedError) as caught:
        g.compile().invoke({"n": 0})
    err = caught.value
    assert (err.source, err.target, err.max) == ("work", "work", 2)
    assert err.state == {"n": 3}


def test_then_route_guard_counts() -> None:
    """A guard on a node's then= route counts that route."""
    g = Graph(Count)

    @g.node(start=True, then="b", guards=[Guard("b", max=1, otherwise=END)])
    def a(state: Count) -> dict[str, object]:
        return {"n": state["n"] + 1}

    @g.node(then="a")
    def b(state: Count) -> None:
        return None

    run = g.compile().invoke({"n": 0})
    assert run.state["n"] == 2 and run.guards == {("a", "b"): 1}


def test_max_runs_raises_node_cap_error() -> None:
    """The (N+1)th run of a node with max_runs=N raises NodeCapError naming it."""
    g = Graph(Count)

    @g.node(start=True, max_runs=2)
    def work(state: Count) -> dict[str, object]:
        return {"n": state["n"] + 1}

    @g.router("work", guards=[Guard("work", max=10)])
    def again(state: Count) -> Literal["work"] | End:
        return "work"

    with pytest.raises(NodeCapError) as caught:
        g.compile().invoke({"n": 0})
    assert caught.value.node == "work" and caught.value.max_runs == 2
    assert caught.value.state == {"n": 2}


def test_cap_is_checked_inside_a_superstep() -> None:
    """With room for 2 more runs, a 3-way fan-out runs two branches and stops at the third."""
    with pytest.raises(StepLimitError) as caught:
        three_branches(reducer=True).compile().invoke({"topic": "x"}, max_steps=3)
    assert caught.value.node == "code" and caught.value.steps == 3
    assert caught.value.state["findings"] == []


# ---------------------------------------------------------------- Send, Command, fan-out


class Docs(TypedDict):
    docs: list[str]
    summaries: Annotated[list[str], operator.add]


def test_send_runs_each_argument_once_in_order() -> None:
    """Each Send is its own node run with the Send's argument as its input."""
    g = Graph(Docs)

    @g.node(start=True)
    def split(state: Docs) -> None:
        return None

    @g.router("split")
    def fan(state: Docs) -> list[Send[Literal["work"]]]:
        return [Send("work", doc) for doc in state["docs"]]

    @g.node(then="reduce")
    def work(doc: str) -> dict[str, object]:
        return {"summaries": [doc.upper()]}

    @g.node(then=END)
    def reduce(state: Docs) -> None:
        return None

    run = g.compile().invoke({"docs": ["a", "b", "c"]})
    assert run.state["summaries"] == ["A", "B", "C"]
    assert [t.node for t in run.trace] == ["split", "work", "work", "work", "reduce"]
    assert run.supersteps == 3


def test_send_runs_conflict_on_plain_keys() -> None:
    """Several Send runs of one node writing a key without a reducer conflict."""

    class S(TypedDict):
        docs: list[str]
        last: str

    g = Graph(S)

    @g.node(start=True)
    def split(state: S) -> None:
        return None

    @g.router("split")
    def fan(state: S) -> list[Send[Literal["work"]]]:
        return [Send("work", d) for d in state["docs"]]

    @g.node(then=END)
    def work(doc: str) -> dict[str, object]:
        return {"last": doc}

    with pytest.raises(InvalidUpdateError) as caught:
        CompiledGraph(g.spec()).invoke({"docs": ["a", "b"]})
    assert caught.value.nodes == ("work", "work")


def test_command_updates_and_routes() -> None:
    """A Command node updates the state and chooses the next node in one return."""
    g = Graph(Count)

    @g.node(start=True)
    def decide(state: Count) -> Command[Literal["big", "small"]]:
        return Command(update={"n": state["n"] * 10}, goto="big" if state["n"] > 1 else "small")

    @g.node(then=END)
    def big(state: Count) -> dict[str, object]:
        return {"n": state["n"] + 1}

    @g.node(then=END)
    def small(state: Count) -> None:
        return None

    app = g.compile()
    assert app.invoke({"n": 2}).state["n"] == 21
    run = app.invoke({"n": 1})
    assert run.state["n"] == 10 and [t.node for t in run.trace] == ["decide", "small"]


def test_command_goto_outside_annotation_raises() -> None:
    """A Command goto is checked against the node's Command[Literal[...]] annotation."""
    g = Graph(Count)

    @g.node(start=True)
    def decide(state: Count) -> Command[Literal["big"]]:
        return Command(goto="huge")  # type: ignore[arg-type]

    @g.node(then=END)
    def big(state: Count) -> None:
        return None

    with pytest.raises(RouteError) as caught:
        g.compile().invoke({"n": 0})
    assert (caught.value.router, caught.value.value, caught.value.allowed) == (
        "decide",
        "huge",
        ("big",),
    )


def test_list_router_fans_out_and_dedups() -> None:
    """A router returning a list runs every target once, next superstep."""

    class S(TypedDict):
        hits: Annotated[list[str], operator.add]

    g = Graph(S)

    @g.node(start=True)
    def start(state: S) -> None:
        return None

    @g.router("start")
    def pick(state: S) -> list[Literal["x", "y"]]:
        return ["y", "x", "y"]

    @g.node(then=END)
    def x(state: S) -> dict[str, object]:
        return {"hits": ["x"]}

    @g.node(then=END)
    def y(state: S) -> dict[str, object]:
        return {"hits": ["y"]}

    run = g.compile().invoke({})
    assert run.state["hits"] == ["x", "y"] and run.steps == 3


def test_wait_for_joins_branches_of_different_lengths() -> None:
    """A join runs once, after the longer branch, having seen both branches' writes."""

    class S(TypedDict):
        log: Annotated[list[str], operator.add]

    g = Graph(S)

    @g.node(start=True, then=("short", "long1"))
    def fork(state: S) -> dict[str, object]:
        return {"log": ["fork"]}

    @g.node(then="join")
    def short(state: S) -> dict[str, object]:
        return {"log": ["short"]}

    @g.node(then="long2")
    def long1(state: S) -> dict[str, object]:
        return {"log": ["long1"]}

    @g.node(then="join")
    def long2(state: S) -> dict[str, object]:
        return {"log": ["long2"]}

    @g.node(then=END, wait_for=("short", "long2"))
    def join(state: S) -> dict[str, object]:
        return {"log": [f"join saw {len(state['log'])}"]}

    run = g.compile().invoke({})
    assert run.state["log"] == ["fork", "short", "long1", "long2", "join saw 4"]
    assert [t.node for t in run.trace].count("join") == 1


# ---------------------------------------------------------------- context, trace, streams


def test_context_carries_deps_step_runs_and_guards() -> None:
    """A node taking (state, ctx) sees deps, its step, the thread, run and guard counts."""
    seen: list[tuple[Any, ...]] = []

    class Fake:
        def search(self, q: str) -> str:
            return f"fake:{q}"

    g = Graph(Count)

    @g.node(start=True)
    def work(state: Count, ctx: Context[Fake]) -> dict[str, object]:
        seen.append(
            (ctx.deps.search("q"), ctx.step, ctx.thread_id, ctx.runs("work"), dict(ctx.guards))
        )
        return {"n": state["n"] + 1}

    @g.router("work", guards=[Guard("work", max=1, otherwise=END)])
    def again(state: Count, ctx: Context[Fake]) -> Literal["work"] | End:
        assert ctx.node == "work"
        return "work"

    g.compile().invoke({"n": 0}, deps=Fake(), thread_id="t1")
    assert seen == [
        ("fake:q", 1, "t1", 0, {("work", "work"): 0}),
        ("fake:q", 2, "t1", 1, {("work", "work"): 1}),
    ]


def test_trace_has_one_record_per_node_run() -> None:
    """run.trace holds step, node, update and seconds of every node run."""
    run = draft_loop().compile().invoke({"score": 60})
    assert [(t.step, t.node) for t in run.trace] == [
        (1, "draft"),
        (2, "critique"),
        (3, "revise"),
        (4, "critique"),
    ]
    assert isinstance(run.trace[0], TraceRecord)
    assert run.trace[2].update == {"score": 80, "drafts": ["v+"]}
    assert all(t.seconds >= 0 for t in run.trace)


def test_stream_updates_values_and_events() -> None:
    """The three stream modes yield node updates, states per superstep and typed events."""
    app = draft_loop().compile()
    updates = list(app.stream({"score": 60}))
    assert updates == [
        ("draft", {"drafts": ["v1"]}),
        ("critique", {}),
        ("revise", {"score": 80, "drafts": ["v+"]}),
        ("critique", {}),
    ]
    values = list(app.stream({"score": 60}, mode="values"))
    assert len(values) == 4 and values[-1] == {"score": 80, "drafts": ["v1", "v+"]}
    events = list(app.stream({"score": 60}, mode="events"))
    kinds = [type(e).__name__ for e in events[:4]]
    assert kinds == ["NodeStart", "NodeEnd", "RouteTaken", "SuperstepEnd"]
    assert events[0] == NodeStart(1, "draft", 1)
    routes = [e for e in events if isinstance(e, RouteTaken)]
    assert routes[1] == RouteTaken("critique", "revise", "router", (1, 3))
    assert isinstance(events[-1], RunEnd) and events[-1].status == "done"
    ends = [e for e in events if isinstance(e, SuperstepEnd)]
    assert [e.next for e in ends] == [("critique",), ("revise",), ("critique",), ()]


def test_stream_values_are_the_callers_own_copies() -> None:
    """A state stream(mode="values") yields is a deep copy: changing it, its lists or the
    messages in them changes neither a later yield nor the run's result."""

    class Chat(TypedDict):
        messages: Annotated[list[dict[str, Any]], operator.add]

    g: Graph[Chat, Any] = Graph(Chat)

    @g.node(start=True)
    def say(state: Chat) -> dict[str, object]:
        return {"messages": [{"role": "ai", "text": f"m{len(state['messages'])}", "n": [1]}]}

    @g.router("say", guards=[Guard("say", max=2, otherwise=END)])
    def again(state: Chat) -> Literal["say"] | End:
        return "say"

    app = g.compile()
    seen = []
    for values in app.stream({"messages": []}, mode="values"):
        seen.append(copy.deepcopy(values))
        values["messages"][0]["text"] = "changed"
        values["messages"][0]["n"].append(2)
        values["messages"].append({"role": "x"})
    assert [len(v["messages"]) for v in seen] == [1, 2, 3]
    assert all(v["messages"][0] == {"role": "ai", "text": "m0", "n": [1]} for v in seen)
    assert app.invoke({"messages": []}).state == seen[-1]


def test_on_event_gets_the_events_in_order_as_they_happen() -> None:
    """invoke(on_event=) receives the same records as stream(mode="events")."""
    app = draft_loop().compile()
    got: list[Any] = []
    app.invoke({"score": 60}, on_event=got.append)
    streamed = list(app.stream({"score": 60}, mode="events"))

    def strip(e: Any) -> Any:
        return (e.node, e.update) if isinstance(e, NodeEnd) else e

    assert [strip(e) for e in got] == [strip(e) for e in streamed]
    assert sum(isinstance(e, NodeEnd) for e in got) == 4


def test_on_event_sees_node_start_before_the_node_runs() -> None:
    """NodeStart reaches the callback before the node's own code runs."""
    order: list[str] = []
    g = Graph(Count)

    @g.node(start=True, then=END)
    def only(state: Count) -> None:
        order.append("ran")

    g.compile().invoke(
        {"n": 0},
        on_event=lambda e: order.append(type(e).__name__) if isinstance(e, NodeStart) else None,
    )
    assert order == ["NodeStart", "ran"]


def test_several_start_nodes_fan_out() -> None:
    """Several start nodes run in the first superstep."""

    class S(TypedDict):
        log: Annotated[list[str], operator.add]

    g = Graph(S)

    @g.node(start=True, then=END)
    def a(state: S) -> dict[str, object]:
        return {"log": ["a"]}

    @g.node(start=True, then=END)
    def b(state: S) -> dict[str, object]:
        return {"log": ["b"]}

    run = g.compile().invoke({})
    assert run.state["log"] == ["a", "b"] and run.supersteps == 1


def test_a_node_cannot_assign_into_a_flat_state() -> None:
    """A state of plain values is read-only to a node too."""

    def only(state: Count) -> None:
        state["n"] = 5  # type: ignore[misc]

    g = Graph(Count)
    g.node(name="only", start=True, then=END)(only)
    with pytest.raises(NodeError) as caught:
        g.compile().invoke({"n": 1})
    assert isinstance(caught.value.__cause__, TypeError)


def test_a_node_may_return_the_values_it_read_and_changed() -> None:
    """Reading a list, changing the copy and returning it as an update works as expected."""

    class S(TypedDict):
        items: list[str]

    g = Graph(S)

    @g.node(start=True, then=END)
    def add(state: S) -> dict[str, object]:
        items = state["items"]
        items.append("b")
        return {"items": items}

    assert g.compile().invoke({"items": ["a"]}).state["items"] == ["a", "b"]


def test_a_router_mutating_what_it_read_changes_nothing_for_the_next_node() -> None:
    """A router gets its own copy too: the next node sees the state, not the router's edits."""

    class S(TypedDict):
        items: list[str]
        seen: Annotated[list[str], operator.add]

    g = Graph(S)

    @g.node(start=True)
    def first(state: S) -> None:
        return None

    @g.router("first")
    def pick(state: S) -> Literal["second"]:
        state["items"].append("router edit")
        return "second"

    @g.node(then=END)
    def second(state: S) -> dict[str, object]:
        return {"seen": list(state["items"])}

    run = g.compile().invoke({"items": ["a"]})
    assert run.state["seen"] == ["a"] and run.state["items"] == ["a"]
