"""Cost ceilings: Cost and Budget, g.bound().cost, CR205 and the CLI that shows them."""

from __future__ import annotations

import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal, TypedDict

import pytest

from corral import END, Budget, Cost, End, Graph, GraphError, Guard, Retry, Send, interrupt

ROOT = Path(__file__).resolve().parents[2]


class State(TypedDict):
    n: int


def loop(times: int = 3, budget: Budget | None = None, **critique: Any) -> Graph[State]:
    """draft → (critique → revise) ×times → critique, with declared costs."""
    g = Graph(State, budget=budget)

    @g.node(start=True, then="critique", cost=Cost(calls=1, usd=0.02))
    def draft(state: State) -> None: ...

    @g.node(cost=Cost(calls=1, tokens=100, usd=0.01), **critique)
    def critique(state: State) -> None: ...

    @g.router("critique", guards=[Guard("revise", max=times, otherwise=END)])
    def after(state: State) -> Literal["revise"] | End:
        return END

    @g.node(then="critique")
    def revise(state: State) -> None: ...

    return g


def test_money_is_exact_and_other_fields_are_whole_numbers() -> None:
    """Floats and strings become exact Decimals; 3 x $0.1 is $0.3, not more."""
    assert Cost(usd=0.1).usd == Decimal("0.1")
    assert 3 * Cost(usd=0.1) == Cost(usd="0.3") == Cost(usd=0.3)
    assert (3 * Cost(usd=0.1)).over(Budget(usd=0.3)) == []
    assert Cost(tokens=10).over(Budget(tokens=9, usd=1)) == ["tokens"]
    assert Cost.from_json(Cost(calls=2, usd="0.25").to_json()) == Cost(calls=2, usd="0.25")
    assert Budget.parse("usd=0.5,tokens=100_000") == Budget(tokens=100_000, usd="0.5")


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Cost(usd=-1), "Cost(usd=-1): usd must be an amount of dollars"),
        (lambda: Cost(usd="lots"), "Cost(usd='lots'): usd must be an amount of dollars"),
        (lambda: Cost(tokens=1.5), "Cost(tokens=1.5): tokens must be a whole number"),
        (lambda: Budget(calls=True), "Budget(calls=True): calls must be a whole number"),
        (lambda: Budget.parse("dollars=3"), "budget 'dollars=3': write fields as usd=0.5"),
        (lambda: Graph(State, budget=0.5), "budget=0.5 is not a Budget"),  # type: ignore[call-overload]
    ],
)
def test_bad_amounts_are_graph_errors_naming_the_value(make: Any, message: str) -> None:
    with pytest.raises(GraphError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        make()


def test_the_ceiling_is_the_step_bound_weighted_by_declared_costs() -> None:
    """draft once, critique 4 times, revise (no cost) 3 times."""
    bound = loop().bound()
    assert bound.cost == Cost(calls=5, tokens=400, usd="0.06")
    assert bound.cost_path == "draft → (critique → revise) ×3 → critique"
    assert bound.cost_reason is None
    assert bound.summary == "at most 8 node runs, 5 calls, 400 tokens, $0.06"


def test_retries_count_each_attempt_and_a_pausing_node_one_more_run() -> None:
    assert loop(retry=Retry(attempts=3)).bound().cost == Cost(calls=13, tokens=1200, usd="0.14")
    g = Graph(State)

    @g.node(start=True, then=END, cost=Cost(calls=1, usd=0.5))
    def ask(state: State) -> None:
        interrupt("ok?")

    assert g.bound().cost == Cost(calls=2, usd=1)


def test_a_subgraph_adds_its_childs_ceiling_per_entry() -> None:
    parent = Graph(State)

    @parent.node(start=True)
    def hub(state: State) -> None: ...

    @parent.router("hub", guards=[Guard("child", max=2, otherwise=END)])
    def again(state: State) -> Literal["child"] | End:
        return "child"

    parent.subgraph("child", loop(times=1), then="hub")
    # each entry: draft $0.02 + critique 2 x $0.01
    assert parent.bound().cost == Cost(calls=6, tokens=400, usd="0.08")


def test_research_team_example_ceiling() -> None:
    """The figures docs/cost.md gives for examples/research_team."""
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        from research_team import supervisor
    finally:
        sys.path.remove(str(ROOT / "examples"))
    bound = supervisor.graph.bound()
    assert bound.cost == Cost(calls=15, tokens=48_000, usd="0.27")
    assert supervisor.graph.check() == []


def test_no_ceiling_for_a_spending_node_without_cost_nor_an_unbounded_send() -> None:
    g = loop()

    @g.node(then=END)
    def extra(state: State, ctx: Any) -> None:
        ctx.spend(tokens=5)

    bound = g.bound()
    assert bound.cost is None
    assert bound.cost_reason == (
        "node 'extra' calls ctx.spend but declares no cost; give it @g.node('extra', "
        "cost=Cost(...))"
    )
    fan = Graph(State)

    @fan.node(start=True)
    def split(state: State) -> None: ...

    @fan.router("split")
    def out(state: State) -> list[Send[Literal["work"]]]:
        return []

    @fan.node(then=END, cost=Cost(tokens=1))
    def work(state: State) -> None: ...

    assert fan.bound().cost is None
    assert "max_sends" in (fan.bound().cost_reason or "")


def test_nothing_declared_is_a_zero_ceiling() -> None:
    g = Graph(State)

    @g.node(start=True, then=END)
    def a(state: State) -> None: ...

    assert g.bound().cost == Cost()
    assert g.bound().summary == "at most 1 node run"


def test_cr205_over_the_budget_is_an_error_and_no_ceiling_a_warning() -> None:
    [finding] = loop(budget=Budget(usd="0.05")).check()
    assert (finding.code, finding.severity) == ("CR205", "error")
    assert finding.message == (
        "cost ceiling 5 calls, 400 tokens, $0.06 passes the budget $0.05 (usd): a run can "
        "spend it along draft → (critique → revise) ×3 → critique; lower a guard's max or "
        "max_turns on that path, the cost of 'critique' (1 call, 100 tokens, $0.01 an "
        "attempt, up to 4 runs), or raise the budget"
    )
    assert loop(times=2, budget=Budget(usd="0.05")).check() == []
    g = loop(budget=Budget(tokens=1000))

    @g.node(then=END)
    def extra(state: State, ctx: Any) -> None:
        ctx.spend(tokens=5)

    [finding] = [d for d in g.check() if d.code == "CR205"]
    assert finding.severity == "warning"
    assert finding.message.startswith("budget 1,000 tokens cannot be proved enough: node 'extra'")


def corral(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "corral", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )


def test_cycles_and_draw_show_the_ceiling() -> None:
    path = "examples/research_team/supervisor.py"
    text = corral("cycles", path).stdout
    assert "cost ceiling: 15 calls, 48,000 tokens, $0.27: (supervise → research[" in text
    shown = json.loads(corral("cycles", path, "--format", "json").stdout)
    assert shown["cost"]["ceiling"] == {"calls": 15, "tokens": 48000, "usd": "0.27"}
    assert shown["bound"]["steps"] == 21
    drawn = corral("draw", path).stdout
    assert 'title: "research_team — at most 21 node runs, 15 calls, 48,000 tokens, $0.27"' in drawn


def test_lint_json_carries_the_ceiling_of_a_budgeted_graph(tmp_path: Path) -> None:
    source = (ROOT / "examples" / "research_team" / "supervisor.py").read_text()
    tight = source.replace("budget=Budget(usd=0.50)", "budget=Budget(usd=0.25)")
    team = tmp_path / "research_team"
    team.mkdir()
    for part in ("__init__.py", "researcher.py", "writer.py", "services.py"):
        (team / part).write_text((ROOT / "examples" / "research_team" / part).read_text())
    (team / "supervisor.py").write_text(tight)
    out = subprocess.run(
        [sys.executable, "-m", "corral", "lint", "research_team/supervisor.py", "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    [finding] = json.loads(out.stdout)
    assert (out.returncode, finding["code"]) == (1, "CR205")
    assert finding["facts"] == {
        "ceiling": {"calls": 15, "tokens": 48000, "usd": "0.27"},
        "budget": {"calls": None, "tokens": None, "usd": "0.25"},
        "path": "(supervise → research[(plan → search) ×3]) ×2 → supervise → write[(draft → "
        "approve) ×3]",
        "reason": None,
    }
    assert "the cost of 'write/draft' (1 call, 8,000 tokens, $0.05 an attempt" in finding["message"]
