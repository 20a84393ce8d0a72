"""Turn a :class:`~refmodel.shapes.GraphShape` into a real ``corral.Graph``.

Every node does what :mod:`refmodel.behaviour` says, consulting the app's own
:class:`~refmodel.behaviour.Triggers` first; routers and ``Command`` nodes get ``Literal``
annotations naming exactly the shape's targets.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypedDict

from corral import END, Command, End, Graph, Retry, Send, interrupt, reducers
from refmodel import behaviour as act
from refmodel.shapes import GraphShape, NodeShape


class State(TypedDict, total=False):
    """The state of every generated graph."""

    log: Annotated[list[str], operator.add]
    last: str
    msgs: Annotated[list[dict[str, str]], reducers.add_messages]


class ChildState(TypedDict, total=False):
    """The state of every generated child graph: ``log`` is shared with the parent."""

    log: Annotated[list[str], operator.add]
    note: str


RETRY = Retry(attempts=3, backoff=0.0, jitter=False)


def _literal(targets: tuple[str, ...]) -> Any:
    """``Literal[...]`` of the node targets, ``| End`` when ``END`` is one."""
    names = tuple(t for t in targets if t != END)
    if not names:
        return End
    lit: Any = Literal.__getitem__(names)  # Literal["a", "b"] from a tuple
    return lit | End if END in targets else lit


def _node_func(node: NodeShape, path: str, tr: act.Triggers, child: bool) -> Callable[..., Any]:
    if node.kind == "worker":

        def worker(arg: int) -> dict[str, Any]:
            tr.enter(path, node.fails)
            answer = interrupt(act.payload(path, arg)) if node.asks else None
            return act.node_update(node, path, None, arg, answer, child=child)

        return worker

    def run(state: dict[str, Any]) -> Any:
        tr.enter(path, node.fails)
        answer = interrupt(act.payload(path, None)) if node.asks else None
        update = act.node_update(node, path, len(state["log"]), None, answer, child=child)
        if node.kind != "command":
            return update
        goto = act.command_goto(node, state)
        return Command(update=update) if goto is None else Command(update=update, goto=goto)

    if node.kind == "command":
        run.__annotations__["return"] = Command[_literal(node.targets)]  # type: ignore[misc]
    return run


def _router_func(node: NodeShape) -> Callable[..., Any]:
    def choose(state: dict[str, Any]) -> Any:
        if node.kind == "router":
            return act.route_choice(node, state)
        if node.kind == "many":
            return act.many_choice(node, state)
        return [Send(node.targets[0], arg) for arg in act.send_args(node, state)]

    if node.kind == "router":
        choose.__annotations__["return"] = _literal(node.targets)
    elif node.kind == "many":
        choose.__annotations__["return"] = list[_literal(node.targets)]  # type: ignore[misc]
    else:
        choose.__annotations__["return"] = list[Send[_literal(node.targets)]]  # type: ignore[misc]
    choose.__name__ = f"route_{node.name}"
    return choose


def _writes(node: NodeShape, child: bool) -> tuple[str, ...]:
    if child:
        return ("log", "note")
    return ("log", "msgs", "last") if node.writes_last else ("log", "msgs")


def build(shape: GraphShape, triggers: act.Triggers, prefix: str = "") -> Graph[Any]:
    """A ``Graph`` that runs ``shape`` (nodes consult ``triggers``); children recursively."""
    child = bool(prefix)
    g: Graph[Any] = Graph(
        ChildState if child else State,  # type: ignore[arg-type]
        name=f"{prefix}generated",
        max_steps=shape.max_steps,
        retry=RETRY,
    )
    for node in shape.nodes:
        path = prefix + node.name
        own_way = node.kind in ("then", "worker", "sub")
        then = node.targets if own_way else None
        guards = node.guards if node.kind in ("then", "command", "sub", "worker") else ()
        if node.kind == "sub":
            assert shape.child is not None
            g.subgraph(
                node.name,
                build(shape.child, triggers, f"{path}/"),
                start=node.start,
                then=then,
                guards=guards,
            )
            continue
        ignore = ("CR301",) if shape.conflict and node.writes_last else ()
        g.node(
            node.name,
            start=node.start,
            then=then,
            guards=guards,
            wait_for=node.wait_for,
            max_runs=node.max_runs,
            writes=_writes(node, child),
            input=int if node.kind == "worker" else None,  # type: ignore[arg-type]
            ignore=ignore,
        )(_node_func(node, path, triggers, child))
        if node.kind in ("router", "many", "send"):
            g.router(
                node.name,
                guards=node.guards,
                max_sends=node.max_sends if node.kind == "send" else None,
            )(_router_func(node))
    return g
