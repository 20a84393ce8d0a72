"""What a run spends: ctx.spend, run.spent kept with the thread, CostExceededError, BudgetError."""

from __future__ import annotations

import asyncio
import contextlib
import json
import operator
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Literal, TypedDict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from unit.test_bound import guarded_graphs

from corral import (
    END,
    Budget,
    BudgetError,
    Checkpointer,
    CompiledGraph,
    Context,
    CorralError,
    Cost,
    CostExceededError,
    End,
    Graph,
    Guard,
    MemorySaver,
    Resume,
    Retry,
    interrupt,
)
from corral.analysis.bound import bound_of


class State(TypedDict):
    n: int
    log: Annotated[list[str], operator.add]


WORK = Cost(calls=1, usd="0.02")


def looping(times: int = 5, cost: Cost | None = WORK, budget: Budget | None = None) -> Graph[State]:
    """work runs 1 + times times, each spending one call and $0.02 ($0.01 the first time)."""
    g = Graph(State, budget=budget)

    @g.node(start=True, cost=cost)
    def work(state: State, ctx: Context) -> dict[str, object]:
        ctx.spend(calls=1, usd="0.02" if state["n"] else "0.01")
        return {"n": state["n"] + 1}

    @g.router("work", guards=[Guard("work", max=times, otherwise=END)])
    def again(state: State) -> Literal["work"] | End:
        return "work"

    return g


def test_spend_is_kept_with_the_thread_over_resumes_and_restarts_with_new_input(
    saver: Checkpointer,
) -> None:
    """BudgetError stops the run before the node that could pass the budget; the thread
    goes on with a larger one, counting what it spent before; new input counts afresh."""
    app = looping().compile(checkpointer=saver)
    with pytest.raises(BudgetError) as caught:
        app.invoke({"n": 0, "log": []}, thread_id="t", budget=Budget(usd="0.05"))
    error = caught.value
    assert (error.node, error.spent, error.cost) == (
        "work",
        Cost(3, usd="0.05"),
        Cost(1, usd="0.02"),
    )
    assert str(error).startswith(
        "stopped before 'work': the run has spent 3 calls, $0.05 and 'work' may spend "
        "1 call, $0.02, which would pass the budget $0.05 (usd); continue with a larger one"
    )
    assert app.get_state("t").spent == Cost(calls=3, usd="0.05")
    run = app.invoke(None, thread_id="t", budget=Budget(usd=1))
    assert (run.status, run.steps, run.spent) == ("done", 6, Cost(calls=6, usd="0.11"))
    assert app.get_state("t").spent == run.spent
    again = app.invoke({"n": 0, "log": []}, thread_id="t")
    assert again.spent == Cost(calls=6, usd="0.11")  # a new count, not 0.22


def test_a_fork_starts_from_the_spend_at_its_checkpoint(saver: Checkpointer) -> None:
    app = looping(times=2).compile(checkpointer=saver)
    app.invoke({"n": 0, "log": []}, thread_id="t")
    second = next(s for s in app.history("t") if s.steps == 2)
    assert second.spent == Cost(calls=2, usd="0.03")
    run = app.invoke(None, thread_id="t", checkpoint_id=second.checkpoint_id)
    assert run.spent == Cost(calls=3, usd="0.05")


def test_a_pause_and_its_resume_count_in_one_run() -> None:
    g = Graph(State)

    @g.node(start=True, then=END, cost=Cost(calls=1, tokens=10))
    def ask(state: State, ctx: Context) -> dict[str, object]:
        ctx.spend(calls=1, tokens=10)  # spent again when it runs again on resume
        return {"log": [str(interrupt("ok?"))]}

    assert g.bound().cost == Cost(calls=2, tokens=20)
    app = g.compile(checkpointer=MemorySaver())
    assert app.invoke({"n": 0, "log": []}, thread_id="p").spent == Cost(calls=1, tokens=10)
    assert app.invoke(Resume("yes"), thread_id="p").spent == Cost(calls=2, tokens=20)


def test_spending_past_the_declared_cost_is_raised_as_itself_and_not_retried() -> None:
    attempts: list[int] = []
    g = Graph(State)

    @g.node(start=True, then=END, cost=Cost(tokens=100), retry=Retry(attempts=3, backoff=0))
    def greedy(state: State, ctx: Context) -> None:
        attempts.append(1)
        ctx.spend(tokens=150)
        ctx.spend(tokens=200)  # 350 > 3 attempts x 100

    with pytest.raises(CostExceededError) as caught:
        g.compile().invoke({"n": 0, "log": []})
    assert len(attempts) == 1
    error = caught.value
    assert (error.node, error.declared, error.spent) == (
        "greedy",
        Cost(tokens=300),
        Cost(tokens=350),
    )
    assert str(error) == (
        "node 'greedy' spent 350 tokens in one run, more than its declared cost 300 tokens "
        "(tokens); the graph's cost ceiling relies on it: declare what one attempt can spend "
        "with @g.node('greedy', cost=Cost(...)), or spend less"
    )


def test_a_graph_that_declares_no_cost_only_records_what_it_spends() -> None:
    run = looping(cost=None).compile().invoke({"n": 0, "log": []})
    assert run.spent == Cost(calls=6, usd="0.11")
    g = looping(cost=None, budget=Budget(usd=1))
    assert [d.severity for d in g.check()] == ["warning"]  # CR205: no ceiling
    with pytest.raises(CostExceededError) as caught:
        g.compile().invoke({"n": 0, "log": []})
    assert str(caught.value).startswith(
        "node 'work' spent 1 call, $0.01 in one run, more than no declared cost (usd)"
    )


def test_every_way_to_run_takes_a_budget() -> None:
    """invoke, ainvoke, stream and astream all stop before the node that would pass it."""
    app = looping().compile()
    budget = Budget(usd="0.05")
    start = {"n": 0, "log": []}

    async def consume() -> None:
        async for _ in app.astream(start, budget=budget):
            pass

    runs = [
        lambda: app.invoke(start, budget=budget),
        lambda: asyncio.run(app.ainvoke(start, budget=budget)),
        lambda: list(app.stream(start, budget=budget)),
        lambda: asyncio.run(consume()),
    ]
    for run in runs:
        with pytest.raises(BudgetError) as caught:
            run()
        assert caught.value.spent == Cost(3, usd="0.05")


def test_siblings_of_a_superstep_count_together_against_the_budget() -> None:
    g = Graph(State)

    @g.node(start=True, then=("a", "b"))
    def split(state: State) -> None: ...

    @g.node(then=END, cost=Cost(usd="0.3"))
    def a(state: State) -> None: ...

    @g.node(then=END, cost=Cost(usd="0.3"))
    def b(state: State) -> None: ...

    with pytest.raises(BudgetError) as caught:
        g.compile().invoke({"n": 0, "log": []}, budget=Budget(usd="0.5"))
    assert caught.value.node == "b"


def test_a_subgraph_spends_into_its_parents_run_and_budget() -> None:
    parent = Graph(State)

    @parent.node(start=True)
    def hub(state: State) -> None: ...

    @parent.router("hub", guards=[Guard("child", max=2, otherwise=END)])
    def again(state: State) -> Literal["child"] | End:
        return "child"

    parent.subgraph("child", looping(times=1), then="hub")
    app = parent.compile(checkpointer=MemorySaver())
    run = app.invoke({"n": 0, "log": []}, thread_id="s")
    # first entry: $0.01 + $0.02; the second starts from n == 2: $0.02 + $0.02
    assert run.spent == Cost(calls=4, usd="0.07")
    with pytest.raises(BudgetError) as caught:
        app.invoke({"n": 0, "log": []}, thread_id="s2", budget=Budget(usd="0.04"))
    assert caught.value.spent == Cost(calls=2, usd="0.03")


AGENT = """
from typing import Literal, TypedDict
from corral import END, Context, Cost, End, Graph, Guard

class S(TypedDict):
    n: int

g = Graph(S)

@g.node(start=True, cost=Cost(calls=1, usd="0.02"))
def work(state: S, ctx: Context) -> dict[str, object]:
    ctx.spend(calls=1, usd="0.02")
    return {"n": state["n"] + 1}

@g.router("work", guards=[Guard("work", max=3, otherwise=END)])
def again(state: S) -> Literal["work"] | End:
    return "work"
"""


def test_corral_run_budget_and_what_threads_and_show_print(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(AGENT)

    def corral(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "corral", *args]
        return subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, check=False)

    stopped = corral(
        "run", "agent.py", "--input", '{"n": 0}', "--thread", "t", "--budget", "usd=0.05"
    )
    assert stopped.returncode == 1
    assert "continue with:\n  corral run agent.py --thread t --budget usd=0.10" in stopped.stderr
    done = corral("run", "agent.py", "--thread", "t", "--budget", "usd=0.10")
    assert done.returncode == 0
    assert "done: 4 steps, spent 4 calls, $0.08 on thread t" in done.stderr
    listed = corral("threads").stdout.splitlines()
    assert listed[0].split()[:4] == ["THREAD", "STATUS", "STEPS", "SPENT"]
    assert "4 calls, $0.08" in listed[1]
    assert "spent: 4 calls, $0.08" in corral("show", "t").stdout
    shown = json.loads(corral("show", "t", "--format", "json").stdout)
    assert shown["spent"] == {"calls": 4, "tokens": 0, "usd": "0.08"}
    zero = corral("run", "agent.py", "--input", '{"n": 0}', "--thread", "z", "--budget", "calls=0")
    assert "--thread z --budget calls=1" in zero.stderr  # twice 0 would stop it again
    bad = corral("run", "agent.py", "--budget", "dollars=1")
    assert bad.returncode == 2 and "write fields as usd=0.5" in bad.stderr


def spender(tokens: int) -> Any:
    def node(state: Any, ctx: Context) -> None:
        ctx.spend(tokens=tokens)

    return node


@settings(max_examples=200, deadline=None)
@given(
    guarded_graphs(),
    st.lists(st.tuples(st.integers(0, 4), st.booleans()), min_size=5, max_size=5),
    st.integers(0, 12),
)
def test_a_run_keeping_its_declarations_stays_within_the_ceiling_and_its_budget(
    g: Graph[Any], amounts: list[tuple[int, bool]], budget: int
) -> None:
    """Random graphs whose nodes spend at most what they declare: whatever stops the run
    (END, a cap, the budget), the thread has spent no more than the static ceiling and no
    more than the budget."""
    if any(d.code in ("CR201", "CR105") for d in g.check()):
        return
    spec = g.spec()
    nodes = [
        replace(
            n,
            func=spender(most if all_of_it else most // 2),
            takes_ctx=True,
            cost=Cost(tokens=most),
        )
        for n, (most, all_of_it) in zip(spec.nodes, amounts, strict=False)
    ]
    spec = replace(spec, nodes=tuple(nodes))
    ceiling = bound_of(spec).cost
    assert ceiling is not None
    app: CompiledGraph[Any] = CompiledGraph(spec, checkpointer=MemorySaver())
    with contextlib.suppress(CorralError):
        app.invoke({"n": 0}, thread_id="t", budget=Budget(tokens=budget))
    spent = app.get_state("t").spent.tokens
    assert spent <= ceiling.tokens and spent <= budget
