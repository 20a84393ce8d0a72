"""``corral draw``'s renderers: every kind of route drawn in Mermaid and DOT."""

from __future__ import annotations

from typing import Literal, TypedDict

from corral import END, Command, End, Graph, Guard, Send
from corral.render import render_dot, render_mermaid


class State(TypedDict):
    docs: list[str]
    n: int


def every_route() -> Graph[State]:
    """A graph with a fan-out router, a Send route, a Command node and guard kinds."""
    g = Graph(State, name='all "routes"')

    @g.node(start=True)
    def plan(state: State) -> dict[str, object]:
        return {}

    @g.router("plan")
    def pick(state: State) -> list[Literal["search", "split"]]:
        return ["search", "split"]

    @g.node(max_runs=4)
    def search(state: State) -> Command[Literal["plan", "end"]]:
        return Command(goto="end")

    @g.node()
    def split(state: State) -> dict[str, object]:
        return {}

    @g.router("split", guards=[Guard("work", max=5)])
    def fan(state: State) -> list[Send[Literal["work"]]]:
        return [Send("work", doc) for doc in state["docs"]]

    @g.node(then="end")
    def work(state: State) -> dict[str, object]:
        return {}

    @g.node(name="end", then=END)
    def finish(state: State) -> dict[str, object]:
        return {}

    return g


def test_mermaid_draws_every_kind_of_route() -> None:
    """Fan-out, Send, Command and a guard with no ``otherwise`` each have their own look."""
    g = every_route()
    text = render_mermaid(g.spec())
    assert text.splitlines()[:4] == ["---", 'title: "all \\"routes\\""', "---", "flowchart TD"]
    assert '    search["search (max 4 runs)"]' in text
    # "end" is a Mermaid keyword, so that node gets an id of its own
    assert '    n5["end"]' in text
    assert '    plan -.->|"fan-out"| search\n    plan -.->|"fan-out"| split\n' in text
    assert '    split -.->|"Send ≤5 then error"| work' in text
    assert "    search -.-> plan\n    search -.-> n5\n" in text
    assert "    work --> n5\n    n5 --> __end__" in text


def test_dot_draws_the_same_routes_with_quoted_names() -> None:
    """DOT output quotes every name and escapes quotes in the title."""
    text = render_dot(every_route().spec())
    assert text.startswith('digraph "all \\"routes\\"" {\n')
    assert '    "split" -> "work" [style=dashed, label="Send ≤5 then error"];' in text
    assert '    "plan" -> "search" [style=dashed, label="fan-out"];' in text
    assert '    "work" -> "end";' in text
    assert text.endswith("\n}")


def test_unknown_targets_and_joins_are_visible() -> None:
    """A route to a missing node draws the node as unknown; a join is noted."""
    g = Graph(State)

    @g.node(start=True, then=("a", "b"))
    def fork(state: State) -> dict[str, object]:
        return {}

    @g.node(then="join")
    def a(state: State) -> dict[str, object]:
        return {}

    @g.node(then="jion")
    def b(state: State) -> dict[str, object]:
        return {}

    @g.node(then=END, wait_for=("a", "b"))
    def join(state: State) -> dict[str, object]:
        return {}

    text = render_mermaid(g.spec())
    assert '    jion["jion (unknown)"]' in text
    assert "    fork ==> a\n    fork ==> b\n" in text
    assert "    %% join waits for a, b" in text
    assert "    // join waits for a, b" in render_dot(g.spec())


def test_node_guards_and_otherwise_routes() -> None:
    """A guard on a ``then=`` route shows its bound; its fallback route is dotted in DOT."""
    g = Graph(State)

    @g.node(start=True, then="retry", guards=[Guard("retry", max=2, otherwise="give_up")])
    def call(state: State) -> dict[str, object]:
        return {}

    @g.router("retry")
    def again(state: State) -> Literal["call"] | End:
        return "call"

    @g.node(then=END)
    def retry(state: State) -> dict[str, object]:
        return {}

    @g.node(then=END)
    def give_up(state: State) -> dict[str, object]:
        return {}

    dot = render_dot(g.spec())
    assert '    "call" -> "retry" [label="≤2"];' in dot
    assert '    "call" -> "give_up" [style=dotted, label="retry used up"];' in dot


def _loop(name: str | None, guarded: bool) -> Graph[State]:
    g = Graph(State, name=name)

    @g.node(start=True, then="review")
    def draft(state: State) -> dict[str, object]:
        return {}

    @g.node()
    def review(state: State) -> dict[str, object]:
        return {}

    guards = [Guard("draft", max=2, otherwise=END)] if guarded else []

    @g.router("review", guards=guards)
    def again(state: State) -> Literal["draft"] | End:
        return END

    return g


def test_the_title_carries_the_bound() -> None:
    """``bound=`` (``g.bound().summary``) follows the name in Mermaid's title and DOT's label."""
    g = _loop("review_loop", guarded=True)
    shown = g.bound().summary
    assert shown == "at most 6 node runs"
    mermaid = render_mermaid(g.spec(), bound=shown)
    assert mermaid.splitlines()[:3] == ["---", 'title: "review_loop — at most 6 node runs"', "---"]
    dot = render_dot(g.spec(), bound=shown).splitlines()
    assert dot[:3] == [
        'digraph "review_loop" {',
        '    label="review_loop — at most 6 node runs";',
        "    labelloc=t;",
    ]
    unnamed = _loop(None, guarded=False)
    reason = unnamed.bound().summary
    assert reason == "unbounded: a cycle has no guarded route (CR201)"
    assert render_mermaid(unnamed.spec(), bound=reason).splitlines()[1] == (
        'title: "unbounded: a cycle has no guarded route (CR201)"'
    )
    assert render_mermaid(unnamed.spec()).startswith("flowchart TD\n")  # no name, no bound
