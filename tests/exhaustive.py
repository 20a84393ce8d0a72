"""Every run of a small graph, by the real runtime: the brute force the analyser is judged by.

A graph is described by a :class:`Shape` (nodes with their way out, guards, joins, caps,
writes) and built with the DSL. Its routers do not decide: each asks a :class:`Script` for
the index of the choice to make, so :func:`every_run` can replay the runtime depth first
over every sequence of choices (routers are called in a fixed order within a superstep).
What a run does is what ``invoke`` does: guards, caps, joins, ``Send`` and merging are the
engine's own, nothing is modelled here.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from itertools import combinations
from typing import Annotated, Any, Literal, TypedDict

from hypothesis import strategies as st

from corral import END, CorralError, Graph, Guard, Send
from corral.errors import StepLimitError
from corral.runtime.app import CompiledGraph

__all__ = [
    "Outcome",
    "Script",
    "Shape",
    "Way",
    "build",
    "every_run",
    "forward_shapes",
    "shapes",
]


class Ran(TypedDict):
    ran: Annotated[list[str], operator.add]
    x: int


@dataclass(frozen=True)
class Way:
    """One node's way out and what else it declares."""

    kind: Literal["then", "router", "many", "send"]
    targets: tuple[str, ...]
    guards: tuple[Guard, ...] = ()
    wait_for: tuple[str, ...] = ()
    max_runs: int | None = None
    start: bool = False
    writes_x: bool = False
    max_sends: int = 2


@dataclass(frozen=True)
class Shape:
    """A graph: its nodes by name, in registration order."""

    ways: tuple[tuple[str, Way], ...]
    max_steps: int = 60


class Script:
    """The choices the routers of one run make, by call order; records how many they had."""

    def __init__(self, choices: list[int]) -> None:
        self.choices = choices
        self.options: list[int] = []

    def pick(self, count: int) -> int:
        index = len(self.options)
        self.options.append(count)
        return self.choices[index] if index < len(self.choices) else 0


def _node(name: str, writes_x: bool) -> Any:
    def run(state: Ran) -> dict[str, Any]:
        return {"ran": [name], "x": 1} if writes_x else {"ran": [name]}

    return run


def _options(way: Way) -> list[Any]:
    """Return every value the router of ``way`` may return."""
    if way.kind == "router":
        return list(way.targets)
    if way.kind == "many":
        return [
            list(chosen)
            for size in range(1, len(way.targets) + 1)
            for chosen in combinations(way.targets, size)
        ]
    return [
        [Send(target, None) for _ in range(count)]
        for target in way.targets
        for count in range(1, way.max_sends + 1)
    ]


def _router(way: Way) -> Any:
    options = _options(way)
    literal: Any = Literal
    inner = literal[way.targets]
    send: Any = Send
    listed: Any = list
    annotation = {"router": inner, "many": listed[inner], "send": listed[send[inner]]}[way.kind]

    def route(state: Ran, ctx: Any) -> Any:
        return options[ctx.deps.pick(len(options))]

    route.__annotations__ = {"state": Ran, "ctx": Any, "return": annotation}
    return route


def build(shape: Shape) -> Graph[Ran]:
    """Return the graph ``shape`` describes."""
    g = Graph(Ran, max_steps=shape.max_steps)
    for name, way in shape.ways:
        writes = ("ran", "x") if way.writes_x else ("ran",)
        common: dict[str, Any] = {
            "start": way.start,
            "wait_for": way.wait_for,
            "max_runs": way.max_runs,
            "writes": writes,
        }
        if way.kind == "then":
            g.node(name, then=way.targets, guards=list(way.guards), **common)(
                _node(name, way.writes_x)
            )
        else:
            g.node(name, **common)(_node(name, way.writes_x))
            max_sends = way.max_sends if way.kind == "send" else None
            g.router(name, guards=list(way.guards), max_sends=max_sends)(_router(way))
    return g


@dataclass
class Outcome:
    """What one run did: its node runs, or the error it raised."""

    ran: list[str] = field(default_factory=list)
    error: CorralError | None = None


def every_run(g: Graph[Ran], limit: int = 400) -> tuple[list[Outcome], bool]:
    """Return the outcome of every run of ``g`` (at most ``limit``) and whether that is all.

    The graph runs whatever the analyser says of it, so a finding can be checked against
    what its runs do.

    A run that ends with an error (the step cap included) is kept too: its outcome holds
    the error and the node runs the error's state shows.
    """
    app: CompiledGraph[Ran, Any] = CompiledGraph(
        g.spec()
    )  # not g.compile(): graphs the analyser refuses run too
    outcomes: list[Outcome] = []
    choices: list[int] = []
    while True:
        script = Script(choices)
        outcome = Outcome()
        try:
            run = app.invoke({"ran": [], "x": 0}, deps=script)
            outcome.ran = list(run.state["ran"])
        except StepLimitError as exc:
            outcome.error = exc
            outcome.ran = list(exc.state["ran"]) if exc.state else []
        except CorralError as exc:
            outcome.error = exc
            state = getattr(exc, "state", None)
            outcome.ran = list(state["ran"]) if state else []
        outcomes.append(outcome)
        made = [*choices, *[0] * (len(script.options) - len(choices))][: len(script.options)]
        while made and made[-1] + 1 >= script.options[len(made) - 1]:
            made.pop()
        if not made:
            return outcomes, True
        if len(outcomes) >= limit:
            return outcomes, False
        made[-1] += 1
        choices = made


@st.composite
def shapes(
    draw: st.DrawFn,
    *,
    max_nodes: int = 5,
    kinds: tuple[str, ...] = ("then", "router", "many"),
    joins: bool = True,
    sends: bool = False,
) -> Shape:
    """Draw a small graph: routers, fan-outs, guards with otherwise, joins, caps, writes."""
    count = draw(st.integers(2, max_nodes))
    names = [f"n{i}" for i in range(count)]
    targets = [*names, END]
    ways: list[tuple[str, Way]] = []
    for i, name in enumerate(names):
        kind = draw(st.sampled_from([*kinds, *(["send"] if sends else [])]))
        pool = names if kind == "send" else targets
        outs = tuple(draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3, unique=True)))
        if kind == "then" and len(outs) > 1 and END in outs:
            outs = tuple(t for t in outs if t != END)
        guards: list[Guard] = []
        for target in outs:
            if target != END and draw(st.integers(0, 2)) == 0:
                otherwise = draw(st.sampled_from([None, END, END, *names]))
                guards.append(Guard(target, max=draw(st.integers(0, 2)), otherwise=otherwise))
        wait_for: tuple[str, ...] = ()
        if joins and i > 0 and draw(st.integers(0, 3)) == 0:
            wait_for = tuple(
                draw(st.lists(st.sampled_from(names), min_size=1, max_size=2, unique=True))
            )
        ways.append(
            (
                name,
                Way(
                    kind,  # type: ignore[arg-type]
                    outs,
                    tuple(guards),
                    wait_for,
                    draw(st.sampled_from([None, None, None, 1, 2])),
                    start=i == 0 or draw(st.integers(0, 6)) == 0,
                    writes_x=draw(st.integers(0, 2)) == 0,
                ),
            )
        )
    return Shape(tuple(ways))


@st.composite
def forward_shapes(draw: st.DrawFn, *, max_nodes: int = 6, sends: bool = False) -> Shape:
    """Draw a graph most of whose routes lead forward (so most pass the analyser's
    structural rules): routes to later nodes or ``END``, back routes guarded with
    ``otherwise=END``, several joins, fan-outs and (optionally) ``Send``."""
    count = draw(st.integers(3, max_nodes))
    names = [f"n{i}" for i in range(count)]
    ways: list[tuple[str, Way]] = []
    for i, name in enumerate(names):
        kinds = ["then", "router", "many", *(["send"] if sends and i + 1 < count else [])]
        kind = draw(st.sampled_from(kinds))
        later = names[i + 1 :]
        pool = later if kind == "send" else [*later, END]
        outs = list(draw(st.lists(st.sampled_from(pool), min_size=1, max_size=2, unique=True)))
        guards: list[Guard] = []
        if kind != "send" and draw(st.integers(0, 3)) == 0:
            back = draw(st.sampled_from(names[: i + 1]))
            outs.append(back)
            guards.append(Guard(back, max=draw(st.integers(1, 2)), otherwise=END))
        if kind == "then" and len(outs) > 1 and END in outs:
            outs.remove(END)
        wait_for: tuple[str, ...] = ()
        if i > 0 and draw(st.integers(0, 2)) == 0:
            wait_for = tuple(
                draw(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True))
            )
        ways.append(
            (
                name,
                Way(
                    kind,  # type: ignore[arg-type]
                    tuple(outs),
                    tuple(guards),
                    wait_for,
                    start=i == 0 or draw(st.integers(0, 8)) == 0,
                    writes_x=draw(st.integers(0, 2)) == 0,
                ),
            )
        )
    return Shape(tuple(ways))
