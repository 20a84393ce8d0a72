"""What corral reads from LangGraph code as real projects write it (API.md section 16, wave 3).

Routers without ``path_map`` or annotation, routes no return produces, loops bounded by the
state (counters inside dicts, lists, plans), shared routers, routers that return ``None``,
a fixed edge beside a conditional one (CR110), and where findings point.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest
from graphs import langgraph_patterns as lp
from langchain_core.messages import AIMessage
from langgraph.errors import GraphRecursionError
from langgraph.graph import END, START, StateGraph

from corral import Diagnostic
from corral.langgraph import check, spec


def codes(found: list[Diagnostic]) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(d.code, d.severity, d.nodes) for d in found]


def routes(graph: Any) -> set[tuple[str, str]]:
    return {(e.source, e.target) for e in spec(graph).edges() if e.kind == "router"}


def test_a_router_without_path_map_or_annotation_is_read_from_its_returns() -> None:
    """String constants, END and module constants are its targets: its loops are CR201,
    not CR401 (which hid them)."""
    found = check(lp.unannotated_router())
    assert codes(found) == [
        ("CR201", "error", ("supervisor", "CoderAgent")),
        ("CR201", "error", ("supervisor", "DocAgent")),
    ]
    assert routes(lp.unannotated_router()) == {
        ("supervisor", "CoderAgent"),
        ("supervisor", "DocAgent"),
        ("supervisor", END),
    }


def test_a_local_typed_with_a_literal_names_the_targets() -> None:
    assert routes(lp.typed_local_router()) == {("write", "write"), ("write", END)}


def test_a_path_map_entry_no_return_produces_is_not_a_route() -> None:
    """The 'loop' entry maps a value grade never returns: no cycle retrieve → retrieve."""
    assert check(lp.unused_entry()) == []
    assert ("retrieve", "retrieve") not in routes(lp.unused_entry())


def test_a_count_inside_a_dict_valued_key_bounds_the_loop() -> None:
    """state["debate"]["count"] compared; a node returns it incremented inside a dict built
    in a local: CR204. The shared router is judged per speaker: no CR109."""
    (found,) = check(lp.debate())
    assert (found.code, found.severity, found.nodes) == ("CR204", "warning", ("Bull", "Bear"))
    assert "counter 'debate'" in found.message


@pytest.mark.parametrize(
    ("node", "router", "key"),
    [
        (lp.take_note, lp.enough_notes, "notes"),
        (lp.consume, lp.more_left, "queue"),
        (lp.fill_step, lp.steps_left, "plan"),
    ],
)
def test_a_list_appended_or_consumed_or_a_plan_filled_bounds_the_loop(
    node: Any, router: Any, key: str
) -> None:
    (found,) = check(lp.loop_of(node, router))
    assert (found.code, found.severity) == ("CR204", "warning")
    assert f"bounded only by the state key {key!r}" in found.message


def test_a_counter_compared_in_a_lambda_router_is_cr204() -> None:
    (found,) = check(lp.lambda_counted())
    assert (found.code, found.severity) == ("CR204", "warning")
    lines = Path(lp.__file__).read_text().splitlines()
    assert lines[found.line - 1].strip().startswith("lambda state: END if state[")


def test_a_router_that_can_end_without_a_return_is_cr109() -> None:
    found = [d for d in check(lp.open_ended()) if d.code == "CR109"]
    assert [d.message.split(",")[0] for d in found] == [
        "router 'verdict' can end without returning a value"
    ]


def test_it_really_fails_under_langgraph() -> None:
    """The claim holds: LangGraph raises when verdict falls off its end."""
    graph = lp.open_ended().compile()
    with pytest.raises(KeyError):
        graph.invoke({"messages": [], "next": "maybe"})


def test_a_value_outside_the_literal_annotation_is_cr109() -> None:
    found = check(lp.outside_annotation())
    assert codes(found) == [("CR109", "error", ("write",))]
    assert "'review', which its Literal return annotation does not list" in found[0].message
    with pytest.raises(KeyError):
        lp.outside_annotation().compile().invoke({"messages": [], "n": 0})


def test_a_fixed_edge_beside_a_conditional_edge_is_cr110_and_both_run() -> None:
    builder = StateGraph(lp.State)
    builder.add_node("write", lp.stub)
    builder.add_node("publish", lp.stub)
    builder.add_edge(START, "write")
    builder.add_edge("write", "publish")
    builder.add_conditional_edges("write", lambda state: END)
    (found,) = check(builder)
    assert codes([found]) == [("CR110", "warning", ("write", "publish"))]
    assert "LangGraph runs both" in found.message
    ran = [name for step in builder.compile().stream({"messages": []}) for name in step]
    assert ran == ["write", "publish"]  # the router said END; publish ran anyway


def test_a_decorated_node_points_at_the_users_def() -> None:
    found = check(lp.decorated_loop())
    source = Path(lp.__file__).read_text().splitlines()
    for d in found:
        assert d.file == lp.__file__
        assert source[d.line - 1].startswith("def looping")


def test_a_prebuilt_agent_as_a_subgraph_points_at_the_users_node() -> None:
    """create_react_agent's schema and nodes are LangGraph's: the finding points at the
    parent's node that runs it, never into LangGraph's files."""
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
    builder = StateGraph(lp.State)
    builder.add_node("research", agent)
    builder.add_edge(START, "research")
    builder.add_edge("research", END)
    found = check(builder)
    assert [d.code for d in found] == ["CR201"]
    assert [d.file for d in found] == [lp.__file__]


def test_the_unbounded_loop_it_reports_hits_the_recursion_limit() -> None:
    """The CR201 on the unannotated supervisor is real: stub agents keep it going."""
    graph = lp.unannotated_router().compile()
    with pytest.raises(GraphRecursionError):
        graph.invoke({"messages": ["write code"]}, {"recursion_limit": 10})
