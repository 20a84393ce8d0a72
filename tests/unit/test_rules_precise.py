"""Findings that say each thing once: a misspelt name is one finding, fixes fit the key's type."""

from __future__ import annotations

import operator
from pathlib import Path
from typing import Annotated, Literal, TypedDict

import pytest

from corral import END, End, Graph, Guard, reducers
from corral.cli import main


class State(TypedDict):
    n: int
    notes: Annotated[list[str], operator.add]


def codes(g: Graph[State]) -> list[str]:
    return [d.code for d in g.check()]


def joni_graph(then: str) -> Graph[State]:
    """A plan → (a, b) → join → review ⇄ fix graph with one route name as given."""
    g = Graph(State)

    @g.node(start=True, then=("a", "b"))
    def plan(state: State) -> None: ...

    @g.node(then="join")
    def a(state: State) -> None: ...

    @g.node(then=then)
    def b(state: State) -> None: ...

    @g.node(wait_for=("a", "b"), then="review")
    def join(state: State) -> None: ...

    @g.node()
    def review(state: State) -> None: ...

    @g.router("review", guards=[Guard("fix", max=2, otherwise=END)])
    def after_review(state: State) -> Literal["fix"] | End:
        return END

    @g.node(then="review", guards=[Guard("review", max=3, otherwise=END)])
    def fix(state: State) -> None: ...

    return g


def test_a_misspelt_name_is_one_finding() -> None:
    """``then="joni"`` is CR101 alone: nothing it leaves unreachable, no useless guard."""
    assert codes(joni_graph("joni")) == ["CR101"]


def test_the_graph_with_the_name_fixed_is_clean_apart_from_its_own_warnings() -> None:
    """Once the name is fixed, the findings the misspelling held back are judged for real."""
    assert [c for c in codes(joni_graph("join")) if c != "CR202"] == []


def test_dead_nodes_are_reported_when_no_name_is_misspelt() -> None:
    """A node nothing routes to is CR103 when every route name resolves."""
    g = Graph(State)

    @g.node(start=True, then=END)
    def first(state: State) -> None: ...

    @g.node(then=END)
    def orphan(state: State) -> None: ...

    assert [(d.code, d.nodes) for d in g.check()] == [("CR103", ("orphan",))]


class Meta(TypedDict):
    source: str


class Typed(TypedDict):
    items: list[str]
    cost: int
    meta: dict[str, str]
    tags: set[str]
    best: str
    inner: Meta
    maybe: list[str] | None


@pytest.mark.parametrize(
    ("key", "fix"),
    [
        ("items", "give the key a reducer (Annotated[list[str], operator.add])"),
        ("cost", "give the key a reducer (Annotated[int, operator.add])"),
        ("meta", "give the key a reducer (Annotated[dict[str, str], reducers.merge])"),
        ("tags", "give the key a reducer (Annotated[set[str], reducers.union])"),
        ("best", "let one node write it, or give the key a reducer that says how to combine"),
        ("inner", "give the key a reducer (Annotated[Meta, reducers.merge])"),
        ("maybe", "(Annotated[list[str] | None, your_function])"),
    ],
)
def test_the_parallel_write_fix_fits_the_key_type(key: str, fix: str) -> None:
    """CR301 suggests operator.add for lists and numbers, merge for dicts, union for sets."""
    g = Graph(Typed)

    @g.node(start=True, then=("a", "b"))
    def plan(state: Typed) -> None: ...

    @g.node(then=END, writes=(key,))
    def a(state: Typed) -> None: ...

    @g.node(then=END, writes=(key,))
    def b(state: Typed) -> None: ...

    (finding,) = g.check()
    assert finding.code == "CR301"
    assert fix in finding.message, finding.message
    assert reducers.merge and reducers.union  # the names the messages point to exist


def test_a_node_dead_even_once_the_name_is_fixed_is_still_reported() -> None:
    """A typo close to a node's name is read as that node; what stays dead is CR103."""
    g = Graph(State)

    @g.node(start=True, then="finsh")
    def first(state: State) -> None: ...

    @g.node(then=END)
    def finish(state: State) -> None: ...

    @g.node(then=END)
    def orphan(state: State) -> None: ...

    assert [(d.code, d.nodes) for d in g.check()] == [
        ("CR101", ("first", "finsh")),
        ("CR103", ("orphan",)),
    ]


def test_a_name_close_to_nothing_holds_back_every_dead_node() -> None:
    """A route name close to no node may be meant for any node: no CR103 until it is fixed."""
    g = Graph(State)

    @g.node(start=True, then="zzzzzz")
    def first(state: State) -> None: ...

    @g.node(then=END)
    def orphan(state: State) -> None: ...

    assert [d.code for d in g.check()] == ["CR101"]


def test_a_join_re_entered_while_what_it_waits_for_cannot_run_again_is_cr304() -> None:
    """join waits for a, but only loops back to itself: the second time it would wait forever."""
    g = Graph(State)

    @g.node(start=True, then="join")
    def a(state: State) -> None: ...

    @g.node(wait_for=("a",))
    def join(state: State) -> None: ...

    @g.router("join", guards=[Guard("again", max=2, otherwise=END)])
    def after(state: State) -> Literal["again"] | End:
        return END

    @g.node(then="join")
    def again(state: State) -> None: ...

    codes_nodes = [(d.code, d.nodes) for d in g.check()]
    assert ("CR304", ("join", "again")) in codes_nodes  # a route from outside the list
    g2 = Graph(State)

    @g2.node(start=True, then="join")
    def first(state: State) -> None: ...

    @g2.node(wait_for=("first",))
    def join2(state: State) -> None: ...

    assert any(d.code == "CR101" for d in g2.check())  # 'join' is not a node of g2


def test_a_join_whose_waited_nodes_loop_with_it_is_quiet() -> None:
    """plan → (a, b) → join → plan (guarded): a and b run again before join is re-entered."""
    g = Graph(State)

    @g.node(start=True, then=("a", "b"))
    def plan(state: State) -> None: ...

    @g.node(then="join")
    def a(state: State) -> None: ...

    @g.node(then="join")
    def b(state: State) -> None: ...

    @g.node(wait_for=("a", "b"))
    def join(state: State) -> None: ...

    @g.router("join", guards=[Guard("plan", max=2, otherwise=END)])
    def after(state: State) -> Literal["plan"] | End:
        return END

    assert [d.code for d in g.check() if d.code == "CR304"] == []


class Tries(TypedDict):
    tries: int
    ok: bool


def _retry_loop(bump_on_cycle: bool) -> Graph[Tries]:
    """attempt → check → attempt, left by a router comparing ``tries`` with a bound."""
    g = Graph(Tries)

    @g.node(start=True, then="attempt")
    def setup(state: Tries) -> dict[str, int]:
        return {"tries": state.get("tries", 0) + 1}

    def attempt(state: Tries) -> dict[str, int]:
        return {"tries": state["tries"] + 1}

    def attempt_again(state: Tries) -> dict[str, bool]:
        return {"ok": False}

    g.node("attempt", then="check")(attempt if bump_on_cycle else attempt_again)

    @g.node()
    def check(state: Tries) -> dict[str, bool]:
        return {"ok": False}

    @g.router("check")
    def retry(state: Tries) -> Literal["attempt"] | End:
        tries = state["tries"]
        return END if state["ok"] or tries >= 3 else "attempt"

    return g


def test_an_unguarded_loop_bounded_by_a_hand_made_counter_says_to_use_a_guard() -> None:
    """CR201 (not CR204) on a corral graph; the message names the counter and both ends."""
    [finding] = [d for d in _retry_loop(bump_on_cycle=True).check() if d.code == "CR201"]
    assert finding.nodes == ("attempt", "check")
    assert finding.message.endswith(
        "; the loop is bounded by hand by the counter 'tries' (node 'attempt' increments it, "
        "router 'retry' compares it with a bound), which corral cannot check: replace the "
        "counter with the Guard"
    )
    assert "CR204" not in {d.code for d in _retry_loop(bump_on_cycle=True).check()}


def test_a_counter_incremented_off_the_cycle_is_no_bound() -> None:
    """Only a node on the cycle counts: setup's increment runs once, so no counter note."""
    [finding] = [d for d in _retry_loop(bump_on_cycle=False).check() if d.code == "CR201"]
    assert "counter" not in finding.message


def review_graph(
    *, source: str = "review", target: str = "fix", guard: str = "fix", waits: str = "b"
) -> Graph[State]:
    """plan → (a, b) → join → review ⇄ fix (guarded), with one name of each kind as given."""
    g = Graph(State)

    @g.node(start=True, then=("a", "b"))
    def plan(state: State) -> None: ...

    @g.node(then="join")
    def a(state: State) -> None: ...

    @g.node(then="join")
    def b(state: State) -> None: ...

    @g.node(wait_for=("a", waits), then="review")
    def join(state: State) -> None: ...

    @g.node()
    def review(state: State) -> None: ...

    def after_review(state: State) -> str:
        return END

    targets = str if target == "str" else Literal[target] | End  # type: ignore[valid-type]
    after_review.__annotations__["return"] = targets
    g.router(source, guards=[Guard(guard, max=2, otherwise=END)])(after_review)

    @g.node(then="review")
    def fix(state: State) -> None: ...

    return g


@pytest.mark.parametrize(
    ("names", "unknown"),
    [
        ({"source": "reviw"}, ("reviw",)),  # not also CR104 for 'review'
        ({"source": "zzzzzz"}, ("zzzzzz",)),
        ({"target": "fxi"}, ("review", "fxi")),  # not also CR202 for Guard('fix')
        ({"target": "zzzzzz"}, ("review", "zzzzzz")),
        ({"guard": "fxi"}, ("review", "fxi")),  # not also CR201 for review → fix
        ({"guard": "zzzzzz"}, ("review", "zzzzzz")),
        ({"waits": "bb"}, ("join", "bb")),  # not also CR304 for b → join
        ({"waits": "zzzzzz"}, ("join", "zzzzzz")),
        ({"target": "str"}, ("review",)),  # CR401: not also CR202 for the guard, CR103 for fix
    ],
)
def test_every_kind_of_misspelt_name_is_one_finding(
    names: dict[str, str], unknown: tuple[str, ...]
) -> None:
    """A misspelt router source, route, guard target or wait_for is CR101 and nothing else."""
    assert [(d.code, d.nodes) for d in review_graph().check()] == []
    code = "CR401" if names.get("target") == "str" else "CR101"
    assert [(d.code, d.nodes) for d in review_graph(**names).check()] == [(code, unknown)]


def test_what_a_misspelt_guard_does_not_excuse_is_still_reported() -> None:
    """Guard('fxi') is read as Guard('fix'): a cycle it would not cut is still CR201."""
    g = Graph(State)

    @g.node(start=True, then="review")
    def draft(state: State) -> None: ...

    @g.node()
    def review(state: State) -> None: ...

    @g.router("review", guards=[Guard("fxi", max=2, otherwise=END)])
    def after(state: State) -> Literal["fix", "review"] | End:
        return END

    @g.node(then="review")
    def fix(state: State) -> None: ...

    assert [(d.code, d.nodes) for d in g.check()] == [
        ("CR101", ("review", "fxi")),
        ("CR201", ("review",)),
    ]


_TYPED_MODULE = """
from typing import TypedDict

from corral import END, Graph


class Meta(TypedDict):
    source: str


class Typed(TypedDict):
    items: list[str]
    meta: dict[str, str]
    inner: Meta
    maybe: list[str] | None
    best: str


g = Graph(Typed)


@g.node(start=True, then=("a", "b"))
def plan(state: Typed) -> None: ...


@g.node(then=END, writes=("items", "meta", "inner", "maybe", "best"))
def a(state: Typed) -> None: ...


@g.node(then=END, writes=("items", "meta", "inner", "maybe", "best"))
def b(state: Typed) -> None: ...
"""


def test_the_parallel_write_fix_is_the_same_when_read_statically(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """corral lint --static suggests what corral lint does (a TypedDict key, an Optional)."""
    module = tmp_path / "typed.py"
    module.write_text(_TYPED_MODULE)
    imported = main(["lint", str(module)]), capsys.readouterr().out
    static = main(["lint", "--static", str(module)]), capsys.readouterr().out
    assert static == imported
    assert "(Annotated[Meta, reducers.merge])" in imported[1]
    assert "(Annotated[list[str] | None, your_function])" in imported[1]


def test_a_misspelt_name_in_the_nodes_literal_is_one_finding() -> None:
    """Literal['draft', 'critque'] with node 'critique': one CR108, not one per direction."""
    g = Graph(State, nodes=Literal["draft", "critque", "gone"])

    @g.node(start=True, then="critique")  # type: ignore[arg-type]
    def draft(state: State) -> None: ...

    @g.node(then=END)
    def critique(state: State) -> None: ...

    @g.node(then=END)
    def extra(state: State) -> None: ...

    assert sorted((d.nodes, d.message) for d in g.check() if d.code == "CR108") == [
        (
            ("critque",),
            "the nodes= Literal names 'critque', which is no node, and leaves out node "
            "'critique'; fix the name in the Literal (did you mean 'critique'?)",
        ),
        (("extra",), "node 'extra' is not in the nodes= Literal; add 'extra' to it"),
        (
            ("gone",),
            "the nodes= Literal names 'gone', but no node 'gone' is registered; register it "
            "or remove it from the Literal",
        ),
    ]
