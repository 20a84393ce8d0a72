"""What nodes and routers return, read: updates, route targets, guard counts.

The core (:mod:`corral.runtime.superstep`) reads each finished task's return value here
(:func:`outcome`: a dict update, ``None``, or a ``Command`` whose update and ``goto`` are
checked against its ``Command[Literal[...]]`` annotation) and, after the barrier, the value
its router returned (:func:`chosen_targets`, checked against the router's annotation). A
``Send`` may name its node by function; it is read as the node's name. A guarded route is
counted when the core takes it; once used up it goes to its guard's ``otherwise`` target, or
the run stops with ``GuardExhaustedError`` (:func:`guard_exhausted`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from corral.control import Command, Send
from corral.errors import GuardExhaustedError, InvalidUpdateError, RouteError
from corral.runtime.run_state import Call, Pause, Result, RunState, Targets, Task
from corral.runtime.tables import Node
from corral.spec import Guard, RouterSpec

__all__ = ["chosen_targets", "guard_exhausted", "named_sends", "outcome", "pauses_before"]


def outcome(rs: RunState, call: Call, out: Any) -> Result:
    """Return the result of ``call``: the update and ``Command`` targets of ``out``, or raise."""
    position, task, step = call
    node, goto = task.node, None
    if out is None or type(out) is dict:
        update = out
    elif isinstance(out, Command):
        given: Any = out.update  # annotated a Mapping; a node may put anything there
        if given is not None and not isinstance(given, Mapping):
            msg = (
                f"node {node.path!r} returned Command(update={_short(given)}), whose "
                f"update is {type(given).__name__}, not a dict; give Command a dict of "
                f"the keys it changes: Command(update={{'key': value}}, goto=...)"
            )
            raise InvalidUpdateError(msg, node=node.path)
        update = None if given is None else dict(given)
        if out.goto is not None:
            goto = chosen_targets(node, None, out.goto, rs.tables.node_names)
    elif isinstance(out, dict):
        update = dict(out)
    else:
        msg = (
            f"node {node.path!r} returned {type(out).__name__} {_short(out)}; return a dict "
            f"of the keys it changes, None for no change, or a Command"
        )
        raise InvalidUpdateError(msg, node=node.path)
    keyset = rs.tables.keyset
    if update is not None and not keyset.issuperset(update):
        bad = next(k for k in update if k not in keyset)
        msg = (
            f"node {node.path!r} wrote key {bad!r}, which is not in the state schema "
            f"(keys: {sorted(keyset)}); add it to the schema or fix the key"
        )
        raise InvalidUpdateError(msg, node=node.path, key=bad if isinstance(bad, str) else None)
    return position, node, update, goto, step


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def chosen_targets(
    node: Node, router: RouterSpec | None, raw: Any, node_names: dict[int, tuple[str, ...]]
) -> Targets:
    """Return the targets ``raw`` names, or raise ``RouteError``: ``raw`` is what ``router``
    (``node``'s) returned or, with ``None``, the ``goto`` of the ``Command`` that ``node``
    returned (``node_names``: the graph's, to read ``Send(function, arg)``). Each must be
    one that its annotation names; a list only where the router's annotation allows several, or
    in a ``goto``. The core reads a plain name among a router's routes itself."""
    allowed = (node.command or ()) if router is None else (router.targets.names or ())
    many = router is None or router.targets.many
    items = tuple(raw) if many and isinstance(raw, (list, tuple)) else (raw,)
    named = [item.node if isinstance(item, Send) else item for item in items]
    wrong = [target for target in named if not (isinstance(target, str) and target in allowed)]
    if not wrong:
        return items
    name = node.path if router is None else node.path.removesuffix(node.name) + router.name
    owner = f"node {name!r}" if router is None else f"router {name!r}"
    renamed = named_sends(raw, node_names, owner, name)
    if renamed is not raw:
        return chosen_targets(node, router, renamed, node_names)
    if router is not None:
        if isinstance(raw, (list, tuple)) and not many:
            why = "a list, but its annotation allows one target; annotate it list[Literal[...]]"
        else:
            why = f"not one of its routes {list(allowed)}"
        msg = (
            f"router {name!r} (after node {node.path!r}) returned {raw!r}, which is "
            f"{why}; return one of them or add it to its return annotation"
        )
    elif node.command is None:
        msg = (
            f"node {name!r} returned Command(goto={raw!r}) but its return "
            f"annotation names no Command targets; annotate it "
            f"-> Command[Literal[...]] or route it with then= or a router"
        )
    else:
        msg = (
            f"node {name!r} returned Command(goto={raw!r}), and {wrong[0]!r} "
            f"is not one of its routes {list(allowed)}; goto one of them or add it "
            f"to its Command[Literal[...]] annotation"
        )
    raise RouteError(msg, router=name, value=raw, allowed=allowed)


def named_sends(value: Any, node_names: dict[int, tuple[str, ...]], owner: str, router: str) -> Any:
    """Return ``value`` with every ``Send(function, arg)`` in it read as ``Send(name, arg)``
    (``value`` itself when it names no function).

    ``owner`` says who returned it (for the message), ``router`` names it on the error.

    Raises:
        RouteError: a ``Send`` names a function that is not a node of this graph, or one
            registered as several nodes.
    """
    if isinstance(value, (list, tuple)):
        named = [named_sends(item, node_names, owner, router) for item in value]
        return value if all(a is b for a, b in zip(named, value, strict=True)) else named
    if not isinstance(value, Send) or not callable(value.node):
        return value
    func = value.node
    names = node_names.get(id(func), ())
    if len(names) == 1:
        return Send(names[0], value.arg)
    label = getattr(func, "__qualname__", None) or repr(func)
    if names:
        why = f"is registered as several nodes {list(names)}; send to one of those names"
    else:
        why = (
            "is not a node of this graph; register it with @g.node(...) or send to the "
            "name of a node"
        )
    msg = f"{owner} returned Send({label}, ...), but the function {label!r} {why}"
    known = sorted(name for group in node_names.values() for name in group)
    raise RouteError(msg, router=router, value=value, allowed=known)


def guard_exhausted(rs: RunState, node: Node, name: str, guard: Guard) -> GuardExhaustedError:
    """Return the error of taking the route ``node`` → ``name`` once more than its guard,
    which has no ``otherwise`` target, allows."""
    target = rs.tables.prefix + name
    msg = (
        f"route {node.path!r} → {target!r} was already taken {guard.max} times "
        f"(Guard max={guard.max}) and its guard has no otherwise target; raise "
        f"max or give it one: Guard({name!r}, max={guard.max}, otherwise=END)"
    )
    return GuardExhaustedError(msg, source=node.path, target=target, max=guard.max, state=rs.values)


def pauses_before(rs: RunState, tasks: Sequence[Task]) -> list[Pause]:
    """Return the ``interrupt_before`` pauses of ``tasks`` (one per node)."""
    pauses: list[Pause] = []
    for index, task in enumerate(tasks):
        name = task.node.name
        if name in rs.pause_before and all(pause.node != name for pause in pauses):
            pauses.append(Pause(index, name, None, "before"))
    return pauses
