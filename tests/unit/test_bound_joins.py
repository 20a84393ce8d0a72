"""g.bound() stays above real runs on fan-outs and wait_for joins inside a guarded loop."""

from __future__ import annotations

import operator
from collections import Counter
from typing import Annotated, Literal, TypedDict

import pytest

from corral import END, End, Graph, Guard


class Ran(TypedDict):
    ran: Annotated[list[str], operator.add]


def fan_loop(*, join: bool, long_branch: bool, laps: int) -> Graph[Ran]:
    """plan → (a, b) → join → plan, guarded; ``a`` goes through ``c`` on the long branch."""
    g = Graph(Ran, max_steps=1000)

    def record(name: str) -> dict[str, list[str]]:
        return {"ran": [name]}

    g.node("plan", start=True, then=("a", "b"))(lambda state: record("plan"))
    g.node("a", then="c" if long_branch else "join")(lambda state: record("a"))
    if long_branch:
        g.node("c", then="join")(lambda state: record("c"))
    g.node("b", then="join")(lambda state: record("b"))
    waits = ("c" if long_branch else "a", "b") if join else ()
    g.node("join", wait_for=waits)(lambda state: record("join"))

    @g.router("join", guards=[Guard("plan", max=laps, otherwise=END)])
    def again(state: Ran) -> Literal["plan"] | End:
        return "plan"  # always loop: the longest run the guard allows

    return g


@pytest.mark.parametrize("join", [True, False])
@pytest.mark.parametrize("long_branch", [False, True])
@pytest.mark.parametrize("laps", [0, 2])
def test_the_bound_is_never_below_a_run_with_fan_out_and_joins(
    join: bool, long_branch: bool, laps: int
) -> None:
    """Steps and every node's runs: the bound is at least what a real run takes."""
    g = fan_loop(join=join, long_branch=long_branch, laps=laps)
    assert [d.code for d in g.check() if d.severity == "error"] == []
    bound = g.bound()
    ran = Counter(g.compile().invoke({"ran": []}).state["ran"])
    assert bound.steps is not None and bound.steps >= sum(ran.values())
    for node, count in ran.items():
        most = bound.per_node[node]
        assert most is not None and most >= count, (node, most, count)


def test_a_join_loop_bound_is_the_run_it_allows() -> None:
    """plan → (a, b) → join (waits for both) → plan twice more: 3 laps of 4 node runs."""
    g = fan_loop(join=True, long_branch=False, laps=2)
    assert g.bound().steps == 12
    assert len(g.compile().invoke({"ran": []}).state["ran"]) == 12
