"""CR201, `corral cycles` and g.bound() name the real cause of an unguarded cycle, and
applying CR201's suggested guard removes its finding."""

from __future__ import annotations

import dataclasses
import io
import re
from contextlib import redirect_stdout
from pathlib import Path
from typing import Literal, TypedDict

from hypothesis import HealthCheck, given, settings
from strategies import graph_specs

from corral import END, End, Graph, Guard
from corral.analysis import analyse
from corral.cli import main
from corral.spec import GraphSpec


class State(TypedDict):
    n: int


FALLBACK_GRAPH = """
from typing import Literal, TypedDict
from corral import END, End, Graph, Guard


class State(TypedDict):
    n: int


g = Graph(State)


@g.node(start=True)
def plan(state: State) -> None: ...


@g.router("plan", guards=[Guard("draft", max=2, otherwise="ask"), Guard("ask", max=2)])
def pick(state: State) -> Literal["draft", "ask"] | End:
    return "draft"


@g.node(then="plan")
def draft(state: State) -> None: ...


@g.node(then="plan")
def ask(state: State) -> None: ...
"""


def test_a_fallback_beside_a_guarded_route_is_named_everywhere(tmp_path: Path) -> None:
    """Guard('draft', otherwise='ask') plus Guard('ask'): plan → ask looks guarded, but the
    fallback to ask counts no guard. CR201, `corral cycles` and the bound all say so (they
    said 'has no guarded route', 'guarded: ask ≤2' and 'a cycle has no guarded route')."""
    path = tmp_path / "fallback.py"
    path.write_text(FALLBACK_GRAPH, encoding="utf-8")
    namespace: dict[str, object] = {}
    exec(compile(FALLBACK_GRAPH, str(path), "exec"), namespace)
    g = namespace["g"]
    assert isinstance(g, Graph)
    note = (
        "plan → ask is where Guard('draft') on 'plan' falls back, and a fallback counts no "
        "guard, not even Guard('ask') on that route"
    )
    [finding] = [d for d in g.check() if d.code == "CR201"]
    assert finding.message == (
        f"cycle plan → ask → plan has no guarded route ({note}), so only max_steps stops it; "
        "add a guard to one of its routes, e.g. Guard('plan', max=3, otherwise=END) on node "
        "'ask' (ask → plan)"
    )
    assert g.bound().reason == f"cycle plan → ask → plan has no guarded route (CR201): {note}"
    [cycle] = [c for c in g.cycles() if c.unguarded]
    assert cycle.nodes == ("plan", "ask") and [s for s, _g in cycle.fallbacks] == ["plan"]
    out = io.StringIO()
    with redirect_stdout(out):
        main(["cycles", str(path)])
    assert (
        "plan → ask → plan      UNGUARDED (CR201): plan → ask is where Guard('draft') falls "
        "back, and a fallback counts no guard; send that otherwise elsewhere or add a Guard "
        "to another route"
    ) in out.getvalue()


def test_a_cycle_a_plain_route_closes_too_is_not_said_to_close_only_through_fallbacks() -> None:
    """loop's router routes to itself and its Guard('work') falls back to itself too: no
    guard can cut the self-loop (the fallback would still loop), and the message names the
    fallback and the plain route instead of saying it closes 'only through otherwise routes'."""
    g = Graph(State)

    @g.node(start=True)
    def loop(state: State) -> None: ...

    @g.router("loop", guards=[Guard("work", max=1, otherwise="loop")])
    def again(state: State) -> Literal["work", "loop"] | End:
        return END

    @g.node(then=END)
    def work(state: State) -> None: ...

    [finding] = [d for d in g.check() if d.code == "CR201"]
    assert finding.message == (
        "cycle loop → loop closes through guards' otherwise routes (loop → loop is where "
        "Guard('work') on 'loop' falls back (as well as a plain route), and a fallback counts "
        "no guard), so no guard can cut it; send those guards' otherwise elsewhere (e.g. END)"
    )


def two_routers(*, guarded: tuple[str, ...] = ()) -> Graph[State]:
    """ask → review → ask where two routers of ask route to review (CR107)."""
    g = Graph(State)

    @g.node(start=True)
    def ask(state: State) -> None: ...

    guards = {name: [Guard("review", max=3, otherwise=END)] for name in guarded}

    @g.router("ask", guards=guards.get("first", []))
    def first(state: State) -> Literal["review"] | End:
        return END

    @g.router("ask", guards=guards.get("second", []))
    def second(state: State) -> Literal["review"] | End:
        return END

    @g.node(then="ask")
    def review(state: State) -> None: ...

    return g


def test_the_suggested_guard_names_every_route_of_the_pair() -> None:
    """Two routers route ask → review: a guard on one leaves the other closing the cycle, so
    the suggestion names both (before, a second CR201 appeared once the first was applied)."""
    [finding] = [d for d in two_routers().check() if d.code == "CR201"]
    assert (
        "e.g. Guard('review', max=3, otherwise=END) on router 'first' (ask → review) and on "
        "router 'second' (ask → review), or on node 'review' (review → ask)"
    ) in finding.message
    assert [d.code for d in two_routers(guarded=("first",)).check() if d.code == "CR201"]
    assert not [d for d in two_routers(guarded=("first", "second")).check() if d.code == "CR201"]


_SUGGESTION = re.compile(r"e\.g\. Guard\('([^']*)', max=3, otherwise=END\) on ([^,;]*)")
_SITE = re.compile(r"(router|node) '([^']*)' \(([^ ]*) → [^)]*\)")


def with_suggestion(spec: GraphSpec, message: str) -> GraphSpec:
    """Return ``spec`` with the guard a CR201 message suggests added where it says."""
    found = _SUGGESTION.search(message)
    assert found is not None, message
    guard = Guard(found[1], max=3, otherwise=END)
    for kind, owner, source in _SITE.findall(found[2]):
        if kind == "router":
            routers = tuple(
                dataclasses.replace(r, guards=(*r.guards, guard))
                if (r.name, r.source) == (owner, source)
                else r
                for r in spec.routers
            )
            spec = dataclasses.replace(spec, routers=routers)
        else:
            nodes = tuple(
                dataclasses.replace(n, guards=(*n.guards, guard)) if n.name == owner else n
                for n in spec.nodes
            )
            spec = dataclasses.replace(spec, nodes=nodes)
    return spec


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(graph_specs())
def test_applying_a_suggested_guard_removes_its_finding(spec: GraphSpec) -> None:
    """Each CR201 finding that suggests a guard is gone once that guard is added; with every
    suggestion applied, only cycles no guard can cut are left."""
    cuts = [d for d in analyse(spec) if d.code == "CR201" and "e.g. Guard(" in d.message]
    fixed = spec
    for finding in cuts:
        after = analyse(with_suggestion(spec, finding.message))
        assert (finding.nodes, finding.message) not in [(d.nodes, d.message) for d in after]
        fixed = with_suggestion(fixed, finding.message)
    left = [d.message for d in analyse(fixed) if d.code == "CR201"]
    assert all("no guard can cut it" in m for m in left), left
