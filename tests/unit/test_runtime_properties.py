"""Properties of the runtime, checked on generated cases with hypothesis."""

from __future__ import annotations

import asyncio
import operator
from collections import Counter
from typing import Annotated, Any, Literal, TypedDict

from hypothesis import given, settings
from hypothesis import strategies as st

from corral import (
    END,
    End,
    Graph,
    Guard,
    MemorySaver,
    Resume,
    StepLimitError,
    interrupt,
)
from corral.runtime import RouteTaken

FAST = settings(max_examples=40, deadline=None)


class Count(TypedDict):
    n: int


@FAST
@given(target=st.integers(1, 60), cap=st.integers(1, 60))
def test_step_count_never_exceeds_the_cap(target: int, cap: int) -> None:
    """A cap of N allows exactly N node runs: the run ends within it or stops at N."""
    calls: list[int] = []
    g = Graph(Count, max_steps=cap)

    @g.node(start=True)
    def count(state: Count) -> dict[str, object]:
        calls.append(state["n"])
        return {"n": state["n"] + 1}

    @g.router("count", guards=[Guard("count", max=1000)])
    def again(state: Count) -> Literal["count"] | End:
        return END if state["n"] >= target else "count"

    try:
        run = g.compile().invoke({"n": 0})
    except StepLimitError as err:
        assert target > cap
        assert err.steps == cap == len(calls)
        assert err.state == {"n": cap}
    else:
        assert target <= cap
        assert run.steps == target == len(calls)


@FAST
@given(limit=st.integers(0, 8))
def test_a_guarded_route_is_never_taken_more_than_max(limit: int) -> None:
    """Whatever the router asks for, the guarded route is taken at most max times."""
    g = Graph(Count)

    @g.node(start=True)
    def work(state: Count) -> dict[str, object]:
        return {"n": state["n"] + 1}

    @g.router("work", guards=[Guard("work", max=limit, otherwise=END)])
    def again(state: Count) -> Literal["work"] | End:
        return "work"

    events: list[Any] = []
    run = g.compile().invoke({"n": 0}, on_event=events.append)
    assert run.guards[("work", "work")] == limit
    assert run.steps == limit + 1
    counts = [e.guard[0] for e in events if isinstance(e, RouteTaken) and e.guard]
    assert all(c <= limit for c in counts)


class Branches(TypedDict):
    log: Annotated[list[str], operator.add]
    total: Annotated[int, operator.add]


@settings(max_examples=15, deadline=None)
@given(delays=st.lists(st.integers(0, 3), min_size=1, max_size=5))
def test_merging_is_independent_of_scheduling(delays: list[int]) -> None:
    """Async branches finishing in any order merge to the same state as a sync run."""

    def make(name: str, delay: int, use_async: bool) -> Any:
        if use_async:

            async def branch(state: Branches) -> Any:
                await asyncio.sleep(delay / 1000)
                return {"log": [name], "total": len(state["log"]) + 1}

            return branch

        def plain(state: Branches) -> Any:
            return {"log": [name], "total": len(state["log"]) + 1}

        return plain

    def build(use_async: bool) -> Graph[Branches]:
        g = Graph(Branches)
        for index, delay in enumerate(delays):
            name = f"b{index}"
            g.node(name=name, start=True, then=END)(make(name, delay, use_async))
        return g

    expected = build(False).compile().invoke({}).state
    got = asyncio.run(build(True).compile().ainvoke({}))
    assert got.state == expected
    assert expected["log"] == [f"b{i}" for i in range(len(delays))]


class Loop(TypedDict):
    n: int
    log: Annotated[list[str], operator.add]


def loop_with_fanout(calls: Counter[str]) -> Graph[Loop]:
    """start → (left, right) → join → start ... three laps, then END."""
    g = Graph(Loop)

    @g.node(start=True, then=("left", "right"))
    def begin(state: Loop) -> dict[str, object]:
        calls[f"begin{state['n']}"] += 1
        return {"log": [f"begin{state['n']}"]}

    @g.node(then="join")
    def left(state: Loop) -> dict[str, object]:
        calls[f"left{state['n']}"] += 1
        return {"log": [f"left{state['n']}"]}

    @g.node(then="join")
    def right(state: Loop) -> dict[str, object]:
        calls[f"right{state['n']}"] += 1
        return {"log": [f"right{state['n']}"]}

    @g.node(wait_for=("left", "right"))
    def join(state: Loop) -> dict[str, object]:
        calls[f"join{state['n']}"] += 1
        return {"n": state["n"] + 1}

    @g.router("join", guards=[Guard("begin", max=2, otherwise=END)])
    def lap(state: Loop) -> Literal["begin"] | End:
        return "begin"

    return g


@settings(max_examples=25, deadline=None)
@given(stops=st.lists(st.integers(1, 12), min_size=1, max_size=4))
def test_a_run_resumed_from_any_stop_ends_like_an_uninterrupted_one(stops: list[int]) -> None:
    """Stopping at any step (caps) and resuming gives the same state; no node runs twice."""
    plain_calls: Counter[str] = Counter()
    expected = loop_with_fanout(plain_calls).compile().invoke({"n": 0})
    calls: Counter[str] = Counter()
    app = loop_with_fanout(calls).compile(checkpointer=MemorySaver())
    run = None
    first = True
    for cap in [*sorted(stops), 100]:
        try:
            run = app.invoke({"n": 0} if first else None, thread_id="t", max_steps=cap)
        except StepLimitError:
            pass
        first = False
        if run is not None:
            break
    assert run is not None
    assert run.state == expected.state
    assert run.steps == expected.steps
    assert calls == plain_calls and max(calls.values()) == 1


@settings(max_examples=20, deadline=None)
@given(asks=st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=4))
def test_interrupt_answers_come_back_in_order(asks: list[str]) -> None:
    """A node asking k questions gets the k answers in order, over k resumes."""

    class Q(TypedDict):
        answers: list[str]

    g = Graph(Q)

    @g.node(start=True, then=END)
    def ask(state: Q) -> dict[str, object]:
        return {"answers": [interrupt(question) for question in asks]}

    app = g.compile(checkpointer=MemorySaver())
    run = app.invoke({}, thread_id="t")
    seen = []
    while run.status == "interrupted":
        seen.append(run.interrupts[0].value)
        run = app.invoke(Resume(run.interrupts[0].value.upper()), thread_id="t")
    assert seen == asks
    assert run.state["answers"] == [a.upper() for a in asks]


# ---------------------------------------------------------------- copies of what nodes read

_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5))
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.text(max_size=3), inner, max_size=4),
        st.lists(st.dictionaries(st.text(max_size=3), inner, max_size=3), max_size=4),
        st.tuples(inner, inner),
    ),
    max_leaves=20,
)


def _mutables(value: Any, seen: list[Any]) -> list[Any]:
    """Return every list and dict inside ``value`` (the objects a node could change)."""
    if isinstance(value, (list, dict)):
        seen.append(value)
    items = value.values() if isinstance(value, dict) else value
    if isinstance(value, (list, dict, tuple)):
        for item in items:
            _mutables(item, seen)
    return seen


@FAST
@given(value=_values)
def test_a_copy_of_a_read_value_shares_no_mutable_part(value: Any) -> None:
    """copy_value (what a node gets when it reads a key) equals the value and shares no
    list or dict with it, whatever the shape: flat lists, lists of flat dicts, nesting."""
    from corral.runtime.state import copy_value

    copied = copy_value(value)
    assert copied == value
    assert type(copied) is type(value)
    originals = {id(x) for x in _mutables(value, [])}
    assert not originals & {id(x) for x in _mutables(copied, [])}
