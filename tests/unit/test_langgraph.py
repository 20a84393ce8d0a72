"""corral.langgraph: LangGraph graphs read into a spec and checked under LangGraph's semantics."""

from __future__ import annotations

import inspect
import operator
from types import SimpleNamespace
from typing import Any, TypedDict

import pytest
from graphs import langgraph_graphs as lg
from langchain_core.messages import AIMessage
from langgraph.errors import GraphRecursionError
from langgraph.graph import END, START, StateGraph

import corral.langgraph
from corral import Diagnostic
from corral.langgraph import check, spec


def def_line(func: Any) -> int:
    lines, first = inspect.getsourcelines(func)
    return first + next(i for i, text in enumerate(lines) if text.lstrip().startswith("def "))


def codes(found: list[Diagnostic]) -> list[tuple[str, tuple[str, ...]]]:
    return [(d.code, d.nodes) for d in found]


def routes(graph: Any) -> set[tuple[str, str, str]]:
    return {(e.source, e.target, e.kind) for e in spec(graph).edges()}


# -- reading the structure ---------------------------------------------------------------------


def test_fixed_edges_start_and_nodes_with_no_edge_end_the_run() -> None:
    """Fixed edges are then= routes; a node with no way out ends the run, as in LangGraph."""
    builder = StateGraph(lg.State)
    builder.add_node("plan", lg.plan)
    builder.add_node("write", lg.write)
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "write")
    assert routes(builder) == {
        (START, "plan", "start"),
        ("plan", "write", "then"),
        ("write", END, "then"),
    }
    assert check(builder) == []


def test_compiled_graph_reads_its_builder() -> None:
    """A compiled graph gives the same spec as its builder (get_graph() is never used)."""
    builder = lg.mapped(as_list=False)
    assert routes(builder.compile()) == routes(builder)


def test_unknown_router_targets_are_not_read_from_get_graph() -> None:
    """get_graph() draws a router with unknown targets as one edge to END and leaves 'write'
    unreached; the builder's facts give CR401 alone, compiled or not."""
    compiled = lg.untyped().compile()
    drawn = {(e.source, e.target) for e in compiled.get_graph().edges}
    assert ("plan", END) in drawn and ("plan", "write") not in drawn
    assert codes(check(compiled)) == codes(check(lg.untyped())) == [("CR401", ("plan",))]
    assert ("plan", END, "router") not in routes(compiled)


def test_waiting_edges_are_joins() -> None:
    """add_edge([a, b], c) routes both sources to c, which waits for them."""
    read = spec(lg.fan_in())
    assert read.node("merge") is not None
    assert read.node("merge").wait_for == ("left", "right")  # type: ignore[union-attr]
    assert {("left", "merge", "then"), ("right", "merge", "then")} <= routes(lg.fan_in())


def test_path_map_dict_list_and_literal_annotation() -> None:
    """A path_map dict or list gives the router's targets; else its Literal annotation does."""
    assert {("plan", "write", "router"), ("plan", "review", "router")} <= routes(
        lg.mapped(as_list=True)
    )
    assert {("plan", "write", "router"), ("plan", "review", "router")} <= routes(
        lg.mapped(as_list=False)
    )
    assert ("review", "plan", "router") in routes(lg.unbounded())
    assert ("review", END, "router") in routes(lg.unbounded())


def test_conditional_entry_point_starts_its_targets() -> None:
    """add_conditional_edges(START, router) starts the run at one of the router's targets:
    they are routes of a router from START (not start nodes, which would all run at once)."""
    assert {("__start__", "plan", "router"), ("__start__", "write", "router")} <= routes(
        lg.entry_router()
    )
    assert check(lg.entry_router()) == []


def test_command_destinations() -> None:
    """Command[Literal[...]] destinations are routes of the node, as are destinations=."""
    for builder in (lg.commands(typed=True), lg.commands(typed=False, destinations=DESTINATIONS)):
        assert {("decide", "write", "command"), ("decide", END, "command")} <= routes(builder)
        assert check(builder) == []


DESTINATIONS = ("write", END)


def test_channels_with_and_without_reducers_and_input_schema_keys() -> None:
    """Reducers come from the channels; a node's input schema brings its keys into the state."""
    read = spec(lg.keys())
    log, answer, scratch = read.key("log"), read.key("answer"), read.key("scratch")
    assert log is not None and log.reducer is operator.add
    assert answer is not None and answer.reducer is None
    assert scratch is not None
    assert read.framework == "langgraph"


def test_send_literals_are_read_from_the_router() -> None:
    """Send("node", ...) in the router's source is a Send route; nothing else names it."""
    assert ("plan", "summarise", "send") in routes(lg.sends(computed=False))


def test_findings_point_at_the_users_functions() -> None:
    """A router's finding points at its def line; tools_condition's at the source node."""
    (found,) = check(lg.unbounded())
    assert (found.file, found.line) == (inspect.getsourcefile(lg.plan), def_line(lg.should_revise))
    cr109 = next(d for d in check(lg.react(with_end=False)) if d.code == "CR109")
    assert cr109.line == def_line(lg.agent)


# -- the rules -----------------------------------------------------------------------------------


def test_unbounded_loop_is_cr201_and_langgraph_hits_its_recursion_limit() -> None:
    """The loop CR201 names never ends under LangGraph: GraphRecursionError."""
    found = check(lg.unbounded())
    assert codes(found) == [("CR201", ("plan", "review"))]
    assert found[0].message == (
        "cycle plan → review → plan has no bound, so only recursion_limit stops it "
        "(GraphRecursionError); add a counter to the state that a node on the loop increments "
        "and a route out in router 'should_revise' when it reaches a limit, or port the loop "
        "to corral with a Guard"
    )
    app = lg.unbounded().compile()
    with pytest.raises(GraphRecursionError):
        app.invoke({"answer": "bad"}, {"recursion_limit": 8})


def test_tools_condition_without_end_is_cr109_and_fails_at_run_time() -> None:
    """tools_condition's END has no path_map entry: CR109, and LangGraph fails when it ends."""
    found = check(lg.react(with_end=False))
    assert codes(found) == [("CR109", ("agent",)), ("CR201", ("agent", "tools"))]
    assert found[0].message == (
        "router 'tools_condition' can return '__end__', which its path_map does not map, so "
        "LangGraph raises KeyError when it does; add the value to the path_map of "
        "add_conditional_edges('agent', tools_condition, ...), e.g. {END: END}"
    )
    app = lg.react(with_end=False).compile()
    with pytest.raises(Exception, match="__end__"):
        app.invoke({"messages": [AIMessage("done")]})
    assert codes(check(lg.react(with_end=True))) == [("CR201", ("agent", "tools"))]


def test_cr109_reads_the_literals_a_router_with_no_annotation_returns() -> None:
    """With no Literal annotation, the strings the router returns are the path_map keys."""
    found = check(lg.mapped_unannotated())
    assert codes(found) == [("CR109", ("plan",))]
    assert "router 'unannotated_grade' can return 'maybe'" in found[0].message


def test_cr109_reads_the_routers_literal_as_path_map_keys() -> None:
    """With a path_map, the router's Literal names keys: one the map lacks is CR109."""
    found = check(lg.mapped(as_list=False))
    assert codes(found) == [("CR109", ("plan",))]
    assert "'maybe'" in found[0].message and "{'maybe': <node>}" in found[0].message


def test_a_lambda_router_with_a_path_map_is_read() -> None:
    """A lambda router's returned literals are read too (this raised AttributeError)."""
    builder = StateGraph(lg.State)
    builder.add_node("plan", lg.plan)
    builder.add_edge(START, "plan")
    builder.add_conditional_edges("plan", lambda state: "maybe", {"done": END})
    found = check(builder)
    assert codes(found) == [("CR109", ("plan",))]
    assert "'maybe'" in found[0].message


@pytest.mark.parametrize(
    "node",
    [lg.attempt, lg.attempt_direct, lg.attempt_local, lg.attempt_in_place, lg.attempt_assigned],
)
def test_counter_incremented_in_a_node_on_the_loop_is_cr204(node: Any) -> None:
    """state.get(k, 0) + 1, state[k] + 1, through a local, after state[k] += 1 or after
    state[k] = ... + 1 (returning the state) bounds the loop: a warning."""
    (found,) = check(lg.counted_with(node))
    assert (found.code, found.severity, found.nodes) == ("CR204", "warning", ("attempt",))
    assert found.message == (
        "cycle attempt → attempt is bounded only by the counter 'tries': node 'attempt' "
        "increments it and router 'retry_or_stop' compares it with a bound to leave the loop; "
        "make sure every path through the loop increments it and that the bound is below "
        "recursion_limit, or port the loop to corral with a Guard"
    )
    assert found.line == def_line(lg.retry_or_stop)


def test_counter_compared_by_a_command_node_on_the_loop_is_cr204() -> None:
    """A node returning Command can choose the way out: its comparison bounds the loop."""
    (found,) = check(lg.command_counted())
    assert (found.code, found.nodes) == ("CR204", ("check", "work"))
    assert "node 'work' increments it and node 'check' compares it" in found.message
    assert found.line == def_line(lg.check_or_stop)


def test_counter_bumped_in_a_router_stays_cr201_and_says_it_is_discarded() -> None:
    """A router's state["k"] += 1 is thrown away by LangGraph: CR201, saying so."""
    (found,) = check(lg.router_counter())
    assert found.code == "CR201"
    assert found.message.endswith(
        "; router 'bump_in_router' increments 'tries' itself, but LangGraph discards a "
        "router's changes to the state, so the count never grows: return "
        "{'tries': state['tries'] + 1} from a node on the loop instead"
    )


def test_counter_no_node_writes_stays_cr201() -> None:
    """A bound on a key no node writes never ends the loop."""
    (found,) = check(lg.unwritten_counter())
    assert found.code == "CR201"
    assert found.message.endswith(
        "; router 'bound_on_unwritten' compares 'n' with a bound, but no node writes 'n', so "
        "it never changes"
    )


def test_counter_incremented_off_the_loop_stays_cr201() -> None:
    """Only a node on the cycle counts its turns."""
    builder = StateGraph(lg.State)
    builder.add_node("setup", lg.attempt)
    builder.add_node("loop", lg.plan)
    builder.add_edge(START, "setup")
    builder.add_edge("setup", "loop")
    builder.add_conditional_edges("loop", lg.retry_or_stop, {"attempt": "loop", END: END})
    assert codes(check(builder)) == [("CR201", ("loop",))]


def test_unknown_target_and_dead_nodes() -> None:
    """CR101 for an edge to an unknown node, CR103 for nodes nothing reaches even once the
    name is fixed ('write', which the typo strands, is not reported: one mistake, one finding)."""
    found = check(lg.broken_edges())
    assert codes(found) == [
        ("CR101", ("plan", "wirte")),
        ("CR103", ("orphan",)),
    ]
    assert "did you mean 'write'?" in found[0].message


def test_a_path_map_value_or_command_destination_that_is_no_node_is_cr101() -> None:
    """A path_map value and a destinations= name are routes: a typo in either is CR101."""
    mapped = StateGraph(lg.State)
    mapped.add_node("plan", lg.plan)
    mapped.add_node("review", lg.review)
    mapped.add_edge(START, "plan")
    mapped.add_conditional_edges("plan", lg.should_write, {"write": "wirte", "review": "review"})
    mapped.add_edge("review", END)
    assert codes(check(mapped)) == [("CR101", ("plan", "wirte"))]
    assert codes(check(lg.commands(typed=False, destinations=("wirte", END)))) == [
        ("CR101", ("decide", "wirte"))
    ]


def test_router_with_no_annotation_or_path_map_is_cr401() -> None:
    """A router LangGraph cannot map (and corral cannot read) is CR401, worded for LangGraph."""
    found = check(lg.untyped())
    assert codes(found) == [("CR401", ("plan",))]
    assert found[0].message == (
        "router 'opaque' has no readable targets: it has no path_map, no Literal return "
        "annotation, and returns a value read at run time; pass a path_map to "
        "add_conditional_edges('plan', opaque, ...) or annotate "
        "its return like -> Literal['a', '__end__']"
    )


def test_command_without_destinations_is_cr401() -> None:
    """A node returning Command with no declared destinations has unknown routes."""
    assert codes(check(lg.commands(typed=False))) == [("CR401", ("decide",))]


def test_computed_send_target_is_cr401() -> None:
    """Send(<expression>, ...) names its node at run time."""
    found = check(lg.sends(computed=True))
    assert codes(found) == [("CR401", ("plan",))]
    assert "Send(<expression>, ...)" in found[0].message


def test_parallel_writes_to_a_plain_channel() -> None:
    """Two branches of a fan-out writing a key with no reducer: CR301 (not for the reducer key)."""
    assert codes(check(lg.fan_in())) == [("CR301", ("left", "right"))]
    assert codes(check(lg.sends(computed=False))) == [("CR301", ("summarise",))]


def test_unknown_key_but_not_a_key_from_an_input_schema() -> None:
    """CR302 for a typo; a key of a node's input schema is a state key."""
    found = check(lg.keys())
    assert codes(found) == [("CR302", ("typo",))]
    assert "did you mean 'answer'?" in found[0].message


def test_no_cr104_or_cr107_under_langgraph() -> None:
    """A node with no edge ends the run; a node with an edge and a router takes both, which
    is CR110 (a warning), not CR107."""
    builder = StateGraph(lg.State)
    builder.add_node("plan", lg.plan)
    builder.add_node("write", lg.write)
    builder.add_node("review", lg.review)
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "write")
    builder.add_conditional_edges("plan", lg.should_write, ["write", "review"])
    assert [(d.code, d.severity, d.nodes) for d in check(builder)] == [
        ("CR110", "warning", ("plan", "write"))
    ]


def test_subgraph_node_and_graphs_run_by_hand_are_checked() -> None:
    """A compiled graph as a node, or invoked inside a node's body, is checked too."""
    expected = [("CR105", ("inner_loop",)), ("CR201", ("inner_loop",))]
    assert codes(check(lg.nested())) == expected
    assert check(lg.nested())[1].message.startswith("in subgraph 'research': cycle")
    for node in (lg.run_research, lg.run_many):
        found = check(lg.nested(by_hand=node))
        assert codes(found) == expected
        assert found[0].message.startswith(
            "in graph 'research' run by node 'research': no path from node 'inner_loop'"
        )
        assert found[0].line == def_line(lg.inner_loop)


def test_not_a_langgraph_graph() -> None:
    """Anything else is a TypeError that says what to pass."""
    with pytest.raises(TypeError, match="not a LangGraph StateGraph or compiled graph"):
        spec(object())
    assert not corral.langgraph.is_langgraph(object())
    assert corral.langgraph.is_langgraph(lg.research)
    assert corral.langgraph.is_langgraph(lg.unbounded())


def test_corral_graphs_never_get_cr109_or_cr204() -> None:
    """The LangGraph-only rules find nothing on a corral graph; its counter loop stays CR201."""
    from typing import Literal

    from corral import End, Graph

    class State(TypedDict):
        tries: int

    g = Graph(State)

    @g.node(start=True)
    def attempt(state: State) -> dict[str, int]:
        return {"tries": state["tries"] + 1}

    @g.router("attempt")
    def again(state: State) -> Literal["attempt"] | End:
        return "__end__" if state["tries"] >= 3 else "attempt"

    assert [d.code for d in g.check()] == ["CR201"]


# -- the version switch: LangGraph 0.2's attribute names ------------------------------------------


class StateGraph02:
    """A stand-in for a 0.2 builder: ``schema`` for ``state_schema``, node ``input``."""

    def __init__(self, real: Any) -> None:
        self.schema = real.state_schema
        self.nodes = {
            name: SimpleNamespace(runnable=node.runnable, input=node.input_schema, ends=node.ends)
            for name, node in real.nodes.items()
        }
        self.edges = set(real.edges)
        self.waiting_edges = set(real.waiting_edges)
        self.branches = {
            source: {
                name: SimpleNamespace(path=branch.path, ends=branch.ends, then=None)
                for name, branch in branches.items()
            }
            for source, branches in real.branches.items()
        }
        self.channels = dict(real.channels)
        self.schemas = dict(real.schemas)
        self.managed: dict[str, Any] = {}


StateGraph02.__name__ = "StateGraph"  # LangGraph's graphs are recognised by class name


class Pregel:
    """A stand-in for a 0.2 compiled graph (``CompiledStateGraph`` is a ``Pregel``)."""

    def __init__(self, builder: Any) -> None:
        self.builder = builder


@pytest.mark.parametrize(
    "make", [lg.unbounded, lg.fan_in, lg.keys, lg.entry_router, lambda: lg.react(with_end=False)]
)
def test_old_attribute_names_read_the_same(make: Any) -> None:
    """A 0.2-style builder (and its compiled graph) gives the same spec and findings."""
    real = make()
    old = StateGraph02(real)
    assert routes(old) == routes(real) == routes(Pregel(old))
    assert spec(old).keys == spec(real).keys
    assert spec(old).location == spec(real).location != spec(object_graph()).location
    assert check(old) == check(real) == check(Pregel(old))


def object_graph() -> Any:
    """A builder whose schema has no source file: its spec has no location."""
    return StateGraph(TypedDict("Bare", {"n": int}))


def test_a_key_only_an_old_node_input_schema_brings_is_a_state_key() -> None:
    """0.2's node ``input`` schema is read even where ``schemas`` and ``channels`` lack it."""
    old = StateGraph02(lg.keys())
    old.schemas = {lg.State: old.schemas[lg.State]}
    del old.channels["scratch"]
    assert spec(old).key("scratch") is not None
    assert codes(check(old)) == [("CR302", ("typo",))]


def test_branch_then_of_langgraph_02() -> None:
    """0.2's add_conditional_edges(..., then=) routes each target on to ``then``."""
    real = StateGraph(lg.State)
    for name, func in (("plan", lg.plan), ("write", lg.write), ("review", lg.review)):
        real.add_node(name, func)
    real.add_node("final", lg.merge)
    real.add_edge(START, "plan")
    real.add_conditional_edges("plan", lg.should_write, ["write", "review"])
    real.add_edge("final", END)
    old = StateGraph02(real)
    for branch in old.branches["plan"].values():
        branch.then = "final"
    assert {("write", "final", "then"), ("review", "final", "then")} <= routes(old)
    assert ("write", END, "then") in routes(real)
    assert check(old) == []


# -- port ----------------------------------------------------------------------------------------


def ported(builder: Any) -> Any:
    """Return the corral Graph of the module ``port`` writes for ``builder``."""
    text = corral.langgraph.port(builder, module="graphs.langgraph_graphs", name="graph")
    namespace: dict[str, Any] = {}
    exec(compile(text, "<port>", "exec"), namespace)
    return namespace["g"]


def test_port_puts_a_guard_where_cr201_cuts_and_the_port_checks_clean() -> None:
    """The unbounded loop's port has a Guard placeholder on the router CR201 names."""
    text = corral.langgraph.port(lg.unbounded(), module="graphs.langgraph_graphs", name="graph")
    assert "from graphs.langgraph_graphs import State, plan, review" in text
    assert "@g.router('review', guards=[Guard('plan', max=3, otherwise=END)])" in text
    assert "def should_revise(state: State) -> Literal['plan'] | End:" in text
    g = ported(lg.unbounded())
    assert g.check() == []
    run = g.compile().invoke({"answer": "bad", "n": 0, "tries": 0, "docs": [], "log": []})
    assert run.steps == 8  # plan, review, then three more rounds until the guard ends it


@pytest.mark.parametrize("make", [lg.fan_in, lambda: lg.mapped(as_list=False), lg.counted])
def test_ported_graphs_have_the_same_routes(make: Any) -> None:
    """Fixed routes, joins and path_map routers keep their routes in the port."""
    g = ported(make())
    corral_routes = {(e.source, e.target) for e in g.spec().edges() if e.kind != "otherwise"}
    assert corral_routes == {(s, t) for s, t, _ in routes(make())}
    in_langgraph = {d.code for d in check(make()) if d.code not in ("CR109", "CR201", "CR204")}
    assert {d.code for d in g.check()} == in_langgraph  # the loop is guarded; CR301 stays


def test_langgraphs_prebuilt_react_agent_is_read() -> None:
    """create_react_agent's graph (Send to tools, a path_map) reads; its loop is CR201."""
    import warnings

    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.tools import tool
    from langgraph.prebuilt import create_react_agent

    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    class Model(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **options: Any) -> Any:
            return self

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        agent = create_react_agent(Model(messages=iter([AIMessage("hi")])), [add])
    assert codes(check(agent)) == [("CR201", ("agent", "tools"))]
    assert ("agent", "tools", "send") in routes(agent)
