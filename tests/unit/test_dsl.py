"""The DSL: decorators register functions unchanged and the spec records what they declared."""

from __future__ import annotations

import inspect
import operator
from typing import Annotated, Any, Literal, TypedDict

import pytest

from corral import END, Command, Context, End, Graph, GraphError, Guard, Send


class State(TypedDict):
    n: int


def test_decorators_return_the_function_unchanged() -> None:
    """@g.node and @g.router hand back the very function they decorate."""
    g = Graph(State)

    def step(state: State) -> dict[str, Any]:
        return {"n": 1}

    def route(state: State) -> End:
        return END

    assert g.node(start=True)(step) is step
    assert g.router("step")(route) is route
    assert step({"n": 0}) == {"n": 1}


def test_node_name_defaults_to_function_name() -> None:
    """A node is named after its function unless name= is given."""
    g = Graph(State)

    @g.node(start=True, then="second")
    def first(state: State) -> dict[str, Any]:
        return {}

    @g.node(name="second", then=END)
    def anything(state: State) -> dict[str, Any]:
        return {}

    assert g.spec().names == ("first", "second")


def test_spec_records_routes_guards_and_location() -> None:
    """The spec holds then=, guards, wait_for, writes and the def line of each function."""
    g = Graph(State)
    guard = Guard("a", max=2, otherwise=END)

    @g.node(start=True, then=("a", "b"), guards=[guard], max_runs=4)
    def root(state: State) -> dict[str, Any]:
        return {"n": 1}

    @g.node(then=END)
    def a(state: State) -> dict[str, Any]:
        return {}

    @g.node(then=END, wait_for=("a",), writes=("n",))
    def b(state: State, ctx: Context) -> dict[str, Any]:
        return {}

    spec = g.spec()
    root_spec, _, b_spec = spec.nodes
    assert root_spec.then == ("a", "b") and root_spec.guards == (guard,)
    assert root_spec.max_runs == 4 and root_spec.start
    assert root_spec.writes == {"n"}
    assert b_spec.wait_for == ("a",) and b_spec.writes == {"n"} and b_spec.takes_ctx
    _lines, first = inspect.getsourcelines(root)
    assert root_spec.location.line == first + 1  # the def line, after the decorator
    assert root_spec.location.file == __file__


def test_command_node_targets_in_spec() -> None:
    """A node annotated Command[Literal[...]] gets its routes from the annotation."""
    g = Graph(State)

    @g.node(start=True)
    def agent(state: State) -> Command[Literal["tool", "__end__"]]:
        return Command(goto=END)

    @g.node(then="agent")
    def tool(state: State) -> dict[str, Any]:
        return {}

    spec = g.spec()
    assert spec.nodes[0].command is not None
    assert spec.nodes[0].command.names == ("tool", END)
    assert [(e.source, e.target, e.kind) for e in spec.edges() if e.kind == "command"] == [
        ("agent", "tool", "command"),
        ("agent", END, "command"),
    ]


def test_annotations_are_read_at_check_time() -> None:
    """A router may name an alias that does not exist yet when it is decorated."""
    g = Graph(State)

    @g.node(start=True)
    def a(state: State) -> dict[str, Any]:
        return {}

    @g.router("a")
    def route(state: State) -> Later:  # noqa: F821 - defined below on purpose
        return END

    assert [d.code for d in g.check()] == ["CR401"]
    globals()["Later"] = End
    try:
        assert g.check() == []
    finally:
        del globals()["Later"]


def test_cycles_lists_guarded_loop() -> None:
    """g.cycles() shows each loop with its guards and says whether it was cut."""
    g = Graph(State)

    @g.node(start=True)
    def a(state: State) -> dict[str, Any]:
        return {}

    @g.router("a", guards=[Guard("a", max=2, otherwise=END)])
    def again(state: State) -> Literal["a"] | End:
        return END

    cycles = g.cycles()
    assert [(c.nodes, c.guards) for c in cycles] == [(("a",), (Guard("a", max=2, otherwise=END),))]
    assert cycles.truncated is False  # type: ignore[attr-defined]
    assert g.cycles(limit=0) == [] and g.cycles(limit=0).truncated  # type: ignore[attr-defined]


class Page(TypedDict):
    url: str


def test_input_type_lands_on_the_spec_and_the_send_argument_reaches_the_node() -> None:
    """input= is recorded on NodeSpec.input (None for state nodes); the node gets the arg."""

    class Crawl(TypedDict):
        urls: list[str]
        n: Annotated[int, operator.add]

    g = Graph(Crawl)

    @g.node(start=True)
    def plan(state: Crawl) -> None:
        return None

    @g.router("plan")
    def fan_out(state: Crawl) -> list[Send[Literal["fetch"]]]:
        return [Send("fetch", Page(url=u)) for u in state["urls"]]

    @g.node(then=END, input=Page)
    def fetch(page: Page) -> dict[str, Any]:
        assert set(page) == {"url"}, "a Send node is run with the Send's argument"
        return {"n": len(page["url"])}

    spec = g.spec()
    assert spec.node("fetch") is not None and spec.node("fetch").input is Page
    assert spec.node("plan") is not None and spec.node("plan").input is None
    assert g.check() == []
    run = g.compile().invoke({"urls": ["ab"], "n": 0})
    assert run.state["n"] == 2


def test_node_name_must_be_a_string() -> None:
    """A name that is not a str is refused when the decorator is built, naming the value."""
    import pytest

    from corral import GraphError

    g = Graph(State)
    with pytest.raises(GraphError, match=r"name=\[\] is not a str"):
        g.node(name=[])  # type: ignore[call-overload]


def test_every_occurrence_of_a_node_name_in_the_spec_is_one_object() -> None:
    """Names built apart (f-strings) are one str object per name throughout the spec.

    The analyser's and engine's lookups then succeed on identity; on graphs of thousands of
    generated nodes, comparing equal but distinct strings made check() grow faster than
    the graph (issue 15).
    """
    g = Graph(State)

    def name(i: int) -> str:
        return f"step{i}"  # a new object at every call

    def route(state: State) -> Any:
        return END

    route.__annotations__ = {"return": Literal[name(0), name(1), END]}  # type: ignore[valid-type]
    g.node(name(0), start=True, then=name(1), wait_for=[name(1)])(lambda state: {})
    g.node(name(1), guards=[Guard(name(0), max=2, otherwise=name(1))])(lambda state: {})
    g.router(name(1), guards=[Guard(name(0), max=3, otherwise=END)])(route)

    spec = g.spec()
    first, second = (node.name for node in spec.nodes)
    assert first == "step0" and second == "step1"
    node0, node1 = spec.nodes
    router = spec.routers[0]
    assert node0.then is not None and node0.then[0] is second
    assert node0.wait_for[0] is second
    assert node1.guards[0].target is first and node1.guards[0].otherwise is second
    assert router.source is second and router.guards[0].target is first
    assert router.targets.names is not None
    assert router.targets.names[0] is first and router.targets.names[1] is second
    names = {"step0": first, "step1": second, END: END}
    for edge in spec.edges():
        assert edge.target is names[edge.target], edge
    assert node1.guards[0] == Guard("step0", max=2, otherwise="step1")  # equal, as given


def test_a_guard_that_is_not_a_guard_is_a_graph_error_at_registration() -> None:
    """guards= holding anything but Guard values names the value and how to write one."""
    g = Graph(State)
    with pytest.raises(GraphError, match=r"node 'a' has guards=\['a'\], and 'a' is not a Guard"):
        g.node("a", start=True, guards=["a"])(lambda state: {})  # type: ignore[list-item]
    with pytest.raises(GraphError, match=r"the router of 'a' .* \('a', 2\) is not a Guard"):
        g.router("a", guards=[("a", 2)])(lambda state: END)  # type: ignore[list-item]
