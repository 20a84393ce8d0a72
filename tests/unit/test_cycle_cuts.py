"""The routes CR201 asks to guard cut every unguarded cycle, and are as few as can be."""

from __future__ import annotations

from itertools import combinations
from typing import Literal, TypedDict

from hypothesis import given, settings
from hypothesis import strategies as st

from corral import END, End, Graph, Guard
from corral.analysis._cuts import EXACT_LIMIT, cut_group, strongly_connected

Pair = tuple[str, str]


def acyclic(nodes: list[str], pairs: list[Pair]) -> bool:
    succ: dict[str, list[str]] = {}
    for a, b in pairs:
        if a == b:
            return False
        succ.setdefault(a, []).append(b)
    return all(len(c) == 1 for c in strongly_connected(nodes, succ))


@st.composite
def groups(draw: st.DrawFn) -> tuple[list[str], list[Pair]]:
    size = draw(st.integers(1, 6))
    nodes = [f"n{i}" for i in range(size)]
    pairs = draw(
        st.lists(
            st.tuples(st.sampled_from(nodes), st.sampled_from(nodes)), unique=True, max_size=14
        )
    )
    return nodes, pairs


@settings(max_examples=60, deadline=None)
@given(groups())
def test_the_chosen_routes_cut_every_cycle_and_each_is_needed(
    group: tuple[list[str], list[Pair]],
) -> None:
    """Without the chosen routes no cycle is left; without any one of them, one is."""
    nodes, pairs = group
    cuts, stuck = cut_group(nodes, pairs, lambda p: True, lambda p: p)
    assert stuck == []
    chosen = {c.pair for c in cuts}
    assert acyclic(nodes, [p for p in pairs if p not in chosen])
    for cut in cuts:
        assert not acyclic(nodes, [p for p in pairs if p not in chosen - {cut.pair}])
        cycle = cut.cycle
        steps = {(cycle[i], cycle[(i + 1) % len(cycle)]) for i in range(len(cycle))}
        assert cut.pair in steps and steps <= set(pairs)
        assert not (steps - {cut.pair}) & chosen  # a cycle only this route cuts
    if len(pairs) <= EXACT_LIMIT:
        fewest = next(
            k
            for k in range(len(pairs) + 1)
            if any(
                acyclic(nodes, [p for p in pairs if p not in combo])
                for combo in combinations(pairs, k)
            )
        )
        assert len(chosen) == fewest


class State(TypedDict):
    n: int


def test_a_self_loop_inside_a_larger_loop_is_its_own_finding() -> None:
    """validate → validate inside plan → validate → plan: two findings, one per route."""
    g = Graph(State)

    @g.node(start=True, then="validate")
    def plan(state: State) -> None: ...

    @g.node()
    def validate(state: State) -> None: ...

    @g.router("validate")
    def after(state: State) -> Literal["validate", "plan"] | End:
        return END

    assert [(d.code, d.nodes) for d in g.check()] == [
        ("CR201", ("plan", "validate")),
        ("CR201", ("validate",)),
    ]


def test_the_suggested_route_closes_the_loop_rather_than_leaving_the_happy_path() -> None:
    """review → approve → revise → review: guard approve → revise, not review → approve."""
    g = Graph(State)

    @g.node(start=True, then="review")
    def draft(state: State) -> None: ...

    @g.node()
    def review(state: State) -> None: ...

    @g.router("review", guards=[Guard("revise", max=2, otherwise="approve")])
    def after_review(state: State) -> Literal["revise", "approve"]:
        return "approve"

    @g.node()
    def approve(state: State) -> None: ...

    @g.router("approve")
    def after_approval(state: State) -> Literal["revise"] | End:
        return END

    @g.node(then="review")
    def revise(state: State) -> None: ...

    (finding,) = g.check()
    assert finding.code == "CR201"
    assert "e.g. Guard('revise', max=3, otherwise=END) on router 'after_approval'" in (
        finding.message
    )
