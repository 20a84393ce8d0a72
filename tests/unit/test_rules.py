"""Every rule fires on its defect, stays quiet without it, and points at the right line."""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal, TypedDict

import pytest
from graphs import draft_loop, fanout, map_reduce, unguarded_loop

from corral import END, Command, Diagnostic, End, Graph, GraphError, Guard, Send
from corral.analysis import RULES


class State(TypedDict):
    score: int
    result: str
    log: Annotated[list[str], operator.add]


def found(g: Graph[Any, Any, Any], code: str | None = None) -> list[tuple[str, tuple[str, ...]]]:
    """Return ``(code, nodes)`` of every finding (of one code when given)."""
    return [(d.code, d.nodes) for d in g.check() if code is None or d.code == code]


def one(g: Graph[Any, Any, Any], code: str) -> Diagnostic:
    hits = [d for d in g.check() if d.code == code]
    assert len(hits) == 1, hits
    return hits[0]


def def_line(func: Any) -> int:
    """Return the line of ``def`` of a decorated function."""
    import inspect

    lines, first = inspect.getsourcelines(func)
    return first + next(i for i, text in enumerate(lines) if text.lstrip().startswith("def "))


def test_every_code_is_registered_once() -> None:
    """Every code of the contract has a rule with its slug and severity."""
    expected = {
        "CR101": "unknown-node",
        "CR102": "no-start",
        "CR103": "dead-node",
        "CR104": "no-way-out",
        "CR105": "cannot-finish",
        "CR106": "duplicate-node",
        "CR107": "mixed-routing",
        "CR108": "node-names",
        "CR109": "unmapped-route",
        "CR110": "edge-and-router",
        "CR111": "sync-timeout",
        "CR112": "graph-as-node",
        "CR201": "unguarded-cycle",
        "CR202": "useless-guard",
        "CR203": "cap-below-bound",
        "CR204": "counter-loop",
        "CR205": "over-budget",
        "CR301": "parallel-write",
        "CR302": "unknown-key",
        "CR303": "update-schema",
        "CR304": "stuck-join",
        "CR401": "untyped-route",
    }
    assert {code: r.slug for code, r in RULES.items()} == expected
    assert [c for c, r in RULES.items() if r.severity == "warning"] == [
        "CR110",
        "CR202",
        "CR203",
        "CR204",
    ]


def test_clean_graphs_have_no_findings() -> None:
    """The guarded draft loop and the map-reduce graph are clean."""
    assert draft_loop.g.check() == []
    assert map_reduce.g.check() == []


# -- CR101 ------------------------------------------------------------------------------


def test_cr101_route_to_unknown_node() -> None:
    """A router target that is not a node is reported at the router, with a suggestion."""
    g = Graph(State)

    @g.node(start=True)
    def critique(state: State) -> dict[str, Any]:
        return {}

    @g.router("critique")
    def after(state: State) -> Literal["revsie"] | End:
        return END

    @g.node(then="critique")
    def revise(state: State) -> dict[str, Any]:
        return {}

    d = one(g, "CR101")
    assert d.nodes == ("critique", "revsie")
    assert d.line == def_line(after)
    assert d.message == (
        "router 'after' routes to 'revsie', which is not a node; fix the name "
        "(did you mean 'revise'?) or register a node named 'revsie'"
    )
    assert found(g, "CR105") == []  # its only problem is the unknown route


def test_cr101_every_kind_of_name() -> None:
    """then=, router source, guard target and otherwise, and wait_for are all checked."""
    g = Graph(State)

    @g.node(start=True, then="nowhere", wait_for=("ghost",))
    def a(state: State) -> dict[str, Any]:
        return {}

    @g.router("missing", guards=[Guard("phantom", max=1), Guard("b", max=1, otherwise="void")])
    def r(state: State) -> Literal["b"]:
        return "b"

    @g.node(then=END)
    def b(state: State) -> dict[str, Any]:
        return {}

    names = sorted(d.nodes[-1] for d in g.check() if d.code == "CR101")
    assert names == ["ghost", "missing", "nowhere", "phantom", "void"]


def test_cr101_quiet_on_known_names() -> None:
    """Routes to nodes and END are fine."""
    assert found(draft_loop.g, "CR101") == []


# -- CR102 / CR103 ----------------------------------------------------------------------


def test_cr102_no_start_reports_once() -> None:
    """Without a start node there is one CR102 at the Graph line and no CR103 flood."""
    g = Graph(State)
    line = def_line_of_graph = _line() - 1  # the Graph(...) line above

    @g.node(then="b")
    def a(state: State) -> dict[str, Any]:
        return {}

    @g.node(then=END)
    def b(state: State) -> dict[str, Any]:
        return {}

    d = one(g, "CR102")
    assert (d.line, d.nodes) == (def_line_of_graph, ())
    assert line == d.line
    assert d.message == (
        "the graph has no start node; pass start=True to the node the run begins with, "
        "e.g. @g.node(start=True) on 'a'"
    )
    assert found(g) == [("CR102", ())]


def _line() -> int:
    import sys

    return sys._getframe(1).f_lineno


def test_cr103_dead_node() -> None:
    """A node no route reaches is reported at its def line."""
    g = Graph(State)

    @g.node(start=True, then=END)
    def a(state: State) -> dict[str, Any]:
        return {}

    @g.node(then=END)
    def summarise(state: State) -> dict[str, Any]:
        return {}

    d = one(g, "CR103")
    assert (d.nodes, d.line) == (("summarise",), def_line(summarise))
    assert d.message == "node 'summarise' is not reachable from the start; route to it or remove it"


def test_cr103_reachable_through_otherwise() -> None:
    """A guard's otherwise target counts as reachable."""
    g = Graph(State)

    @g.node(start=True, then="a", guards=[Guard("a", max=2, otherwise="bail")])
    def a(state: State) -> dict[str, Any]:
        return {}

    @g.node(then=END)
    def bail(state: State) -> dict[str, Any]:
        return {}

    assert found(g) == []


# -- CR104 / CR105 ----------------------------------------------------------------------


def test_cr104_no_way_out_and_no_cr105_upstream() -> None:
    """A node with no way out is CR104; nodes leading only to it get no CR105."""
    g = Graph(State)

    @g.node(start=True, then="b")
    def a(state: State) -> dict[str, Any]:
        return {}

    @g.node()
    def b(state: State) -> dict[str, Any]:
        return {}

    d = one(g, "CR104")
    assert d.nodes == ("b",)
    assert d.message == (
        "node 'b' has no way out; give it then= (a node or END), a router (@g.router('b')) "
        "or a Command[Literal[...]] return annotation"
    )
    assert found(g) == [("CR104", ("b",))]


def test_cr105_loop_whose_exit_raises() -> None:
    """A guarded loop whose guard has no otherwise cannot finish; reported once for the loop."""
    g = Graph(State)

    @g.node(start=True, then="b")
    def a(state: State) -> dict[str, Any]:
        return {}

    @g.node(then="c")
    def b(state: State) -> dict[str, Any]:
        return {}

    @g.node(then="b", guards=[Guard("b", max=3)])
    def c(state: State) -> dict[str, Any]:
        return {}

    assert found(g) == [("CR105", ("b", "c"))]
    assert one(g, "CR105").message == (
        "nodes 'b' and 'c' only route among themselves and never reach END; give one of "
        "them a route to END, or a guard with otherwise=END"
    )


def test_cr105_single_node_message() -> None:
    """A node that only loops to itself names itself."""
    g = Graph(State)

    @g.node(start=True, then="a", guards=[Guard("a", max=3)])
    def a(state: State) -> dict[str, Any]:
        return {}

    assert one(g, "CR105").message == (
        "no path from node 'a' reaches END; route it (or a node after it) to END, "
        "or give its guard otherwise=END"
    )


def test_cr105_quiet_with_otherwise_end() -> None:
    """A loop whose guard falls back to END can finish."""
    assert found(draft_loop.g, "CR105") == []


# -- CR106 / CR107 / CR108 --------------------------------------------------------------


def test_cr106_duplicate_node() -> None:
    """The second registration of a name is reported at its def line."""
    g = Graph(State)

    @g.node(start=True, then=END)
    def a(state: State) -> dict[str, Any]:
        return {}

    @g.node(name="a", then=END)
    def a_again(state: State) -> dict[str, Any]:
        return {}

    d = one(g, "CR106")
    assert (d.nodes, d.line) == (("a",), def_line(a_again))
    assert d.message == (
        "node 'a' is registered more than once; give each a distinct name with @g.node(name=...)"
    )


def test_cr107_mixed_routing() -> None:
    """then= plus a router is two ways out."""
    g = Graph(State)

    @g.node(start=True, then=END)
    def a(state: State) -> dict[str, Any]:
        return {}

    @g.router("a")
    def pick(state: State) -> End:
        return END

    d = one(g, "CR107")
    assert d.nodes == ("a",)
    assert d.message == "node 'a' has 2 ways out (then= and router 'pick'); keep exactly one"


def test_cr107_quiet_on_a_router_alone() -> None:
    """A node whose only way out is its router is fine."""
    assert found(draft_loop.g, "CR107") == []


def test_cr108_node_names_both_directions() -> None:
    """The nodes= Literal and the registered nodes are compared both ways."""
    g = Graph(State, None, Literal["a", "b"])  # type: ignore[call-overload]
    graph_line = _line() - 1

    @g.node(start=True, then=END)
    def a(state: State) -> dict[str, Any]:
        return {}

    @g.node(name="c", then=END)
    def c(state: State) -> dict[str, Any]:
        return {}

    hits = [d for d in g.check() if d.code == "CR108"]
    assert [(d.nodes, d.line) for d in hits] == [(("b",), graph_line), (("c",), graph_line)]
    assert [d.message for d in hits] == [
        "the nodes= Literal names 'b', but no node 'b' is registered; register it or remove "
        "it from the Literal",
        "node 'c' is not in the nodes= Literal; add 'c' to it",
    ]


def test_cr108_quiet_when_names_agree() -> None:
    """Matching names are fine."""
    g = Graph(State, None, Literal["a"])

    @g.node(start=True, then=END)
    def a(state: State) -> dict[str, Any]:
        return {}

    assert found(g) == []


# -- CR201 / CR202 ----------------------------------------------------------------------


def _loop(guards: list[Guard]) -> tuple[Graph[Any, Any, Any], Any]:
    g = Graph(State)

    @g.node(start=True, then="critique")
    def draft(state: State) -> dict[str, Any]:
        return {}

    @g.node()
    def critique(state: State) -> dict[str, Any]:
        return {}

    @g.router("critique", guards=guards)
    def after_critique(state: State) -> Literal["revise"] | End:
        return END

    @g.node(then="critique")
    def revise(state: State) -> dict[str, Any]:
        return {}

    return g, after_critique


def test_cr201_unguarded_cycle_at_router() -> None:
    """An unguarded loop is reported at the router whose route a guard would cut."""
    g, router = _loop([])
    d = one(g, "CR201")
    assert (d.nodes, d.line) == (("critique", "revise"), def_line(router))
    assert d.message == (
        "cycle critique → revise → critique has no guarded route, so only max_steps stops it; "
        "add a guard to one of its routes, e.g. Guard('revise', max=3, otherwise=END) on router "
        "'after_critique' (critique → revise), or on node 'revise' (revise → critique)"
    )
    assert found(g) == [("CR201", ("critique", "revise"))]


def test_cr201_quiet_when_guarded() -> None:
    """A guard on one route of the cycle cuts it."""
    g, _ = _loop([Guard("revise", max=3, otherwise=END)])
    assert found(g) == []


def test_cr201_cycle_through_otherwise_needs_its_own_guard() -> None:
    """An otherwise route is unguarded: a cycle closing through it is reported."""
    g = Graph(State)

    @g.node(start=True, then="b")
    def a(state: State) -> dict[str, Any]:
        return {}

    @g.node()
    def b(state: State) -> dict[str, Any]:
        return {}

    @g.router("b", guards=[Guard("c", max=2, otherwise="a")])
    def route_b(state: State) -> Literal["c"] | End:
        return "c"

    @g.node(then=END)
    def c(state: State) -> dict[str, Any]:
        return {}

    d = one(g, "CR201")
    assert d.nodes == ("a", "b")
    assert "on node 'a' (a → b)" in d.message


def test_cr201_self_loop_via_command() -> None:
    """A Command node that can route to itself is a cycle."""
    g = Graph(State)

    @g.node(start=True)
    def agent(state: State) -> Command[Literal["agent", "__end__"]]:
        return Command(goto=END)

    d = one(g, "CR201")
    assert d.nodes == ("agent",)
    assert d.message.startswith("cycle agent → agent has no guarded route")


def test_cr202_guard_on_route_the_router_cannot_take() -> None:
    """A guard naming a node its router never routes to is a warning."""
    g, router = _loop([Guard("revise", max=3, otherwise=END), Guard("draft", max=1)])
    d = one(g, "CR202")
    assert (d.severity, d.nodes, d.line) == ("warning", ("critique", "draft"), def_line(router))
    assert d.message == (
        "Guard('draft') on router 'after_critique' never counts: router 'after_critique' cannot "
        "route to 'draft' (it routes to 'revise' and '__end__'); guard one of its routes or "
        "remove it"
    )
    g.compile()  # warnings do not stop compilation


def test_cr202_guard_on_no_cycle() -> None:
    """A guard on a route that is on no cycle is a warning."""
    g = Graph(State)

    @g.node(start=True, then="b", guards=[Guard("b", max=2)])
    def a(state: State) -> dict[str, Any]:
        return {}

    @g.node(then=END)
    def b(state: State) -> dict[str, Any]:
        return {}

    d = one(g, "CR202")
    assert d.nodes == ("a", "b")
    assert d.message == (
        "Guard('b') on node 'a' guards the route a → b, which is on no cycle; remove it "
        "(only cycles need guards; max_runs= caps a node)"
    )


def test_cr202_quiet_on_cycle_guard() -> None:
    """The guard of the draft loop is on the loop."""
    assert found(draft_loop.g, "CR202") == []


# -- CR301 / CR302 / CR303 --------------------------------------------------------------


def test_cr301_three_branches_write_a_plain_list() -> None:
    """The classic bug: three parallel branches write a key with no reducer."""
    d = one(fanout.g, "CR301")
    assert d.nodes == ("search_web", "search_papers", "search_code")
    assert d.message == (
        "nodes 'search_web', 'search_papers' and 'search_code' can run in the same superstep "
        "and all write 'results', which has no reducer; give the key a reducer "
        "(Annotated[list[str], operator.add]) or let one node write it"
    )


def test_cr301_quiet_with_reducer_and_after_join() -> None:
    """A reducer key ('notes') and a key written after the join ('topic') are fine."""
    assert [d.message for d in fanout.g.check() if "'notes'" in d.message] == []
    assert [d.message for d in fanout.g.check() if "'topic'" in d.message] == []


def test_cr301_sends_conflict_with_themselves() -> None:
    """Several Send runs of one node writing a plain key conflict."""
    g = Graph(State)

    @g.node(start=True)
    def split(state: State) -> dict[str, Any]:
        return {}

    @g.router("split")
    def fan(state: State) -> list[Send[Literal["work"]]]:
        return []

    @g.node(then=END)
    def work(arg: Any) -> dict[str, Any]:
        return {"result": "x"}

    assert found(g) == [("CR301", ("work",))]
    assert one(g, "CR301").message.startswith(
        "node 'work' can run several times in one superstep (Send) and writes 'result'"
    )


def test_cr301_branches_of_different_lengths() -> None:
    """A short branch's successor runs alongside a long branch."""
    g = Graph(State)

    @g.node(start=True, then=("b", "c"))
    def a(state: State) -> dict[str, Any]:
        return {}

    @g.node(then="d")
    def b(state: State) -> dict[str, Any]:
        return {}

    @g.node(then="e")
    def c(state: State) -> dict[str, Any]:
        return {}

    @g.node(then=END)
    def d(state: State) -> dict[str, Any]:
        return {"result": "d"}

    @g.node(then=END)
    def e(state: State) -> dict[str, Any]:
        return {"result": "e"}

    assert found(g) == [("CR301", ("d", "e"))]


def test_cr301_quiet_for_sequential_writers_and_unknown_writes() -> None:
    """Nodes that never run together, or whose writes are unknown, are not reported."""
    g = Graph(State)

    @g.node(start=True, then="b")
    def a(state: State) -> dict[str, Any]:
        return {"result": "a"}

    @g.node(then=END)
    def b(state: State) -> dict[str, Any]:
        return {"result": "b"}

    assert found(g) == []

    g2 = Graph(State)

    @g2.node(start=True, then=("x", "y"))
    def root(state: State) -> dict[str, Any]:
        return {}

    @g2.node(then=END)
    def x(state: State) -> dict[str, Any]:
        update = {"result": "x"}
        return update

    @g2.node(then=END)
    def y(state: State) -> dict[str, Any]:
        return {"result": "y"}

    assert found(g2) == []


def test_cr301_declared_writes() -> None:
    """writes= is used when given, also for functions whose source is opaque."""
    g = Graph(State)

    @g.node(start=True, then=("x", "y"))
    def root(state: State) -> dict[str, Any]:
        return {}

    @g.node(then=END, writes=("result",))
    def x(state: State) -> dict[str, Any]:
        return dict(state)

    @g.node(then=END, writes=["result"])
    def y(state: State) -> dict[str, Any]:
        return dict(state)

    assert found(g) == [("CR301", ("x", "y"))]


def test_cr302_unknown_key() -> None:
    """A literal key not in the state is reported at the node, with a suggestion."""
    g = Graph(State)

    @g.node(start=True, then=END)
    def a(state: State) -> dict[str, Any]:
        return {"scroe": 1}

    d = one(g, "CR302")
    assert (d.nodes, d.line) == (("a",), def_line(a))
    assert d.message == (
        "node 'a' writes 'scroe', which is not a key of the state schema; fix the name "
        "(did you mean 'score'?) or add it to the state"
    )


def test_cr302_quiet_on_known_keys() -> None:
    """Known keys are fine."""
    assert found(fanout.g, "CR302") == []


def test_cr303_update_schema() -> None:
    """Missing, extra and differently typed keys of update_schema are reported."""

    class Update(TypedDict, total=False):
        score: str
        log: list[str]
        extra: int

    g = Graph(State, Update)

    @g.node(start=True, then=END)
    def a(state: State) -> Update:
        return {}

    assert sorted(d.message for d in g.check() if d.code == "CR303") == [
        "update_schema has no key 'result', which state_schema has; add it to update_schema",
        "update_schema key 'extra' is not in state_schema; remove it or add it to the state",
        "update_schema key 'score' has type str, but state_schema says int; make the types "
        "the same",
    ]


def test_cr303_quiet_when_schemas_agree() -> None:
    """An update schema with the same keys and types is fine."""

    class Update(TypedDict, total=False):
        score: int
        result: str
        log: Annotated[list[str], operator.add]

    g = Graph(State, Update)

    @g.node(start=True, then=END)
    def a(state: State) -> Update:
        return {}

    assert found(g) == []


# -- CR401 ------------------------------------------------------------------------------


def test_cr401_untyped_router() -> None:
    """A router without Literal targets is reported; nothing is reported dead behind it."""
    g = Graph(State)

    @g.node(start=True)
    def a(state: State) -> dict[str, Any]:
        return {}

    @g.router("a")
    def route(state: State) -> str:
        return "b"

    @g.node(then=END)
    def b(state: State) -> dict[str, Any]:
        return {}

    d = one(g, "CR401")
    assert (d.nodes, d.line) == (("a",), def_line(route))
    assert d.message == (
        "router 'route' has no readable targets: its return annotation has str, which names "
        "no Literal targets; annotate its return like -> Literal['a', 'b'] | End"
    )
    assert found(g) == [("CR401", ("a",))]


def test_cr401_quiet_on_literal() -> None:
    """Literal annotations are readable."""
    assert found(map_reduce.g, "CR401") == []


# -- suppression and compile ------------------------------------------------------------


def test_ignore_on_node_and_router() -> None:
    """ignore= on the router (or all nodes involved) drops a finding, by code prefix."""
    g = Graph(State)

    @g.node(start=True, then="critique")
    def draft(state: State) -> dict[str, Any]:
        return {}

    @g.node()
    def critique(state: State) -> dict[str, Any]:
        return {}

    @g.router("critique", ignore=["CR2"])
    def after_critique(state: State) -> Literal["revise"] | End:
        return END

    @g.node(then="critique")
    def revise(state: State) -> dict[str, Any]:
        return {}

    @g.node(then=END, ignore=["CR103"])
    def spare(state: State) -> dict[str, Any]:
        return {}

    @g.node(then=END, ignore=["CR2"])
    def unused(state: State) -> dict[str, Any]:
        return {}

    assert found(g) == [("CR103", ("unused",))]


def test_compile_raises_with_every_error() -> None:
    """compile() raises GraphError carrying every finding."""
    g, _ = _loop([])
    with pytest.raises(GraphError) as err:
        g.compile()
    assert [d.code for d in err.value.diagnostics] == ["CR201"]
    assert "CR201" in str(err.value)


def test_findings_are_sorted_and_stable() -> None:
    """check() returns findings sorted by place, the same every time."""
    first = fanout.g.check()
    assert first == fanout.g.check()
    assert first == sorted(first, key=lambda d: d.sort_key)


def test_every_rule_has_a_docs_section() -> None:
    """docs/rules.md has a section per code with its slug and severity (its examples run)."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "rules.md").read_text()
    for code, registered in RULES.items():
        assert f"## {code} {registered.slug} ({registered.severity})" in text


def test_cr101_otherwise_names_its_guard() -> None:
    """An unknown otherwise target names the guard it belongs to."""
    g = Graph(State)

    @g.node(start=True)
    def a(state: State) -> dict[str, Any]:
        return {}

    @g.router("a", guards=[Guard("a", max=2, otherwise="void")])
    def again(state: State) -> Literal["a"] | End:
        return END

    d = one(g, "CR101")
    assert d.line == def_line(again)
    assert d.message == (
        "Guard('a') on router 'again' falls back to 'void', which is not a node; "
        "fix the name or register a node named 'void'"
    )


def test_cr202_node_guard_on_a_router_route() -> None:
    """A guard given to a node whose routes come from its router points at the router."""
    g = Graph(State)

    @g.node(start=True, guards=[Guard("a", max=2, otherwise=END)])
    def a(state: State) -> dict[str, Any]:
        return {}

    @g.router("a", guards=[Guard("a", max=2, otherwise=END)])
    def again(state: State) -> Literal["a"] | End:
        return END

    assert [d.message for d in g.check()] == [
        "Guard('a') on node 'a' never counts: a node's guards apply to its then= and Command "
        "routes; move it to @g.router('a', guards=[...]) on 'again'"
    ]


def test_same_defect_declared_twice_is_reported_once() -> None:
    """Two guards falling back to the same unknown node give one finding."""
    g = Graph(State)

    @g.node(start=True)
    def a(state: State) -> dict[str, Any]:
        return {}

    @g.router(
        "a",
        guards=[Guard("a", max=2, otherwise="void"), Guard("b", max=2, otherwise="void")],
    )
    def again(state: State) -> Literal["a", "b"] | End:
        return END

    @g.node(then="a")
    def b(state: State) -> dict[str, Any]:
        return {}

    assert found(g) == [("CR101", ("a", "void"))]


def test_cr202_two_guards_on_one_route() -> None:
    """A second guard on a route that already has one is a warning."""
    g, router = _loop(
        [Guard("revise", max=3, otherwise=END), Guard("revise", max=5, otherwise=END)]
    )
    d = one(g, "CR202")
    assert (d.nodes, d.line) == (("critique", "revise"), def_line(router))
    assert d.message == (
        "router 'after_critique' has more than one guard on its route to 'revise'; keep one"
    )


def test_unguarded_loop_module_points_at_its_router() -> None:
    """The shared unguarded-loop graph has exactly one finding, at its router's def line."""
    [d] = unguarded_loop.g.check()
    assert (d.code, d.nodes, d.line) == (
        "CR201",
        ("critique", "revise"),
        def_line(unguarded_loop.after_critique),
    )
    assert d.file == unguarded_loop.__file__
