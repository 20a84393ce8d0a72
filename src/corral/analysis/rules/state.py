"""CR3xx: what nodes write to the state."""

from __future__ import annotations

import re
import typing
from collections import Counter
from collections.abc import Iterator
from typing import Any

from corral.analysis._graph import SpecGraph
from corral.analysis._joins import Exclusive, ForkTwice, RunsAfter, StuckJoin
from corral.analysis._joins import stuck_joins as never_released
from corral.analysis._supersteps import coactive_pairs, partners
from corral.analysis.rules._base import (
    Finding,
    close_match,
    meant_names,
    quote_names,
    rule,
    show_type,
)
from corral.spec import START, NodeSpec


@rule("CR301", "parallel-write")
def parallel_writes(graph: SpecGraph) -> Iterator[Finding]:
    """Report keys without a reducer written by nodes that may run in the same superstep.

    Branches of one fan-out (a `then=` tuple, a list-returning router, several start nodes)
    and several `Send` runs of one node run in the same superstep. If two of them write a key
    with no reducer, the run raises `InvalidUpdateError`; other frameworks silently keep one.

    Fix: give the key a reducer, e.g. `findings: Annotated[list[str], operator.add]`, or
    write distinct keys.
    """
    spec = graph.spec
    plain = {key.name for key in spec.keys if key.reducer is None}
    writes: dict[str, frozenset[str]] = {}
    for node in graph.nodes:
        if node.writes is not None and node.writes & plain:
            writes[node.name] = node.writes & plain
    # Only a key two nodes write, or a key a Send target writes, can conflict; skip the
    # pair computation when there is none.
    writers = Counter(key for keys in writes.values() for key in keys)
    if max(writers.values(), default=0) < 2 and not graph.sent & set(writes):
        return
    involved: dict[str, set[str]] = {}
    repeated: dict[str, set[str]] = {}
    for a, b in coactive_pairs(graph):
        if a not in writes or b not in writes:
            continue
        for key in writes[a] & writes[b]:
            if a == b:
                repeated.setdefault(key, set()).add(a)
            else:
                involved.setdefault(key, set()).update((a, b))
    for key_spec in spec.keys:
        key = key_spec.name
        fix = reducer_fix(key_spec.type)
        if key in involved:
            nodes = graph.sort(involved[key])
            yield Finding(
                f"nodes {quote_names(nodes)} can run in the same superstep and all write {key!r}, "
                f"which has no reducer; {fix}",
                tuple(nodes),
            )
        for name in graph.sort(repeated.get(key, ())):
            yield Finding(
                f"node {name!r} can run several times in one superstep (Send) and writes "
                f"{key!r}, which has no reducer; {fix}",
                (name,),
            )


_REDUCER_BY_TYPE = {
    "list": "operator.add",
    "tuple": "operator.add",
    "int": "operator.add",
    "float": "operator.add",
    "dict": "reducers.merge",
    "set": "reducers.union",
    "frozenset": "reducers.union",
}


def reducer_fix(value_type: Any) -> str:
    """Return the CR301 fix for a key of ``value_type``: a reducer that fits the type.

    >>> reducer_fix(list[str])
    'give the key a reducer (Annotated[list[str], operator.add]) or let one node write it'
    >>> reducer_fix(dict[str, int])
    'give the key a reducer (Annotated[dict[str, int], reducers.merge]) or let one node write it'
    >>> reducer_fix(str).startswith("let one node write it")
    True
    """
    if isinstance(value_type, str):  # a type read statically, as text (``lint --static``)
        shown, head = _static_head(value_type)
    else:
        shown = show_type(value_type)
        origin = typing.get_origin(value_type) or value_type
        is_dict = isinstance(origin, type) and issubclass(origin, dict)
        head = "dict" if is_dict else getattr(origin, "__name__", "")
    reducer = _REDUCER_BY_TYPE.get(head)
    if reducer is None:
        return (
            "let one node write it, or give the key a reducer that says how to combine two "
            f"values (Annotated[{shown}, your_function])"
        )
    return f"give the key a reducer (Annotated[{shown}, {reducer}]) or let one node write it"


def _static_head(text: str) -> tuple[str, str]:
    """Return how to show a type mypy printed as ``text``, and its head as at run time.

    A ``TypedDict`` prints as ``TypedDict(module.Name, {...})``: shown as ``Name``, a dict.
    A union (``list[str] | None``, ``Union[...]``) has no head, as at run time.

    >>> _static_head("TypedDict(app.Meta, {'a': str})")
    ('Meta', 'dict')
    >>> _static_head("list[str] | None")
    ('list[str] | None', '')
    """
    typed_dict = re.match(r"TypedDict\((?:[\w.]+\.)?(\w+),", text)
    if typed_dict is not None:
        return typed_dict[1], "dict"
    depth = 0
    for i, char in enumerate(text):
        depth += (char == "[") - (char == "]")
        if depth == 0 and text.startswith(" | ", i):
            return text, ""
    head = text.split("[", 1)[0].rsplit(".", 1)[-1]
    return text, "" if head in ("Union", "Optional") else head


@rule("CR302", "unknown-key")
def unknown_keys(graph: SpecGraph) -> Iterator[Finding]:
    """Report nodes that write keys the state schema does not have.

    A node returns (or declares with `writes=`) a key the state `TypedDict` does not have;
    the run would raise `InvalidUpdateError`.

    Fix: add the key to the state schema, or correct its spelling.
    """
    spec = graph.spec
    keys = [k.name for k in spec.keys]
    for spec_node in graph.nodes:
        if spec_node.writes is None:
            continue
        unknown = sorted(spec_node.writes - set(keys))
        if not unknown:
            continue
        hints = [m for name in unknown if (m := close_match(name, keys)) is not None]
        hint = f" (did you mean {quote_names(hints)}?)" if hints else ""
        noun = "a key" if len(unknown) == 1 else "keys"
        which = "which is not" if len(unknown) == 1 else "which are not"
        yield Finding(
            f"node {spec_node.name!r} writes {quote_names(unknown)}, {which} {noun} of the state "
            f"schema; fix the name{hint} or add it to the state",
            (spec_node.name,),
        )


@rule("CR303", "update-schema")
def update_schema(graph: SpecGraph) -> Iterator[Finding]:
    """Report keys or value types where ``update_schema`` and ``state_schema`` differ.

    The `update_schema` passed to `Graph` must have the same keys and value types as the
    state schema (all optional).

    Fix: make the two `TypedDict`s agree.
    """
    spec = graph.spec
    if spec.update_keys is None:
        return
    update = {k.name: k for k in spec.update_keys}
    state = {k.name: k for k in spec.keys}
    for name, key in state.items():
        if name not in update:
            yield Finding(
                f"update_schema has no key {name!r}, which state_schema has; add it to "
                "update_schema",
                (),
                spec.location,
            )
        elif update[name].type != key.type:
            yield Finding(
                f"update_schema key {name!r} has type {show_type(update[name].type)}, but "
                f"state_schema says {show_type(key.type)}; make the types the same",
                (),
                spec.location,
            )
    for name in update:
        if name not in state:
            yield Finding(
                f"update_schema key {name!r} is not in state_schema; remove it or add it to "
                "the state",
                (),
                spec.location,
            )


@rule("CR304", "stuck-join")
def stuck_joins(graph: SpecGraph) -> Iterator[Finding]:
    """Report ``wait_for`` joins where a run would wait forever and end silently.

    A join runs once every node in its `wait_for` has run since its own last run. A route
    into it from a node outside that list reads as if that node fed the join, but its
    arrival never counts (the join runs, or waits forever, on the listed nodes alone); a
    join that a route re-enters waits for nodes that may never run again after it (at run
    time a run that ends with a join still waiting raises `StuckJoinError`).

    Fix: list every node that routes to the join in its `wait_for` (or route those nodes
    to one of the listed ones), and make sure every listed node can run again after the
    join before a route comes back to it.
    """
    joins = [node for node in graph.nodes if node.wait_for]
    if not joins:
        return  # no join: the routes are not indexed for nothing
    incoming: dict[str, list[str]] = {}
    for edge in graph.edges:
        incoming.setdefault(edge.target, []).append(edge.source)
    spec_nodes = {node.name: node for node in joins}
    checked: list[tuple[NodeSpec, list[str]]] = []
    for node in joins:
        waits = meant_names(graph, node.wait_for)
        if waits is None:
            continue  # no join, or a misspelt name CR101 reports that may be meant for any node
        listed = quote_names(node.wait_for)
        outsiders = False
        for source in dict.fromkeys(incoming.get(node.name, ())):
            if source in waits or source == START:
                continue  # a start join's first run waits for nothing
            outsiders = True
            yield Finding(
                f"node {source!r} routes to the join {node.name!r}, which waits for {listed}: "
                f"its arrival never counts toward the join, which runs once those have run "
                f"whether {source!r} ran or not, or waits for them forever (StuckJoinError); "
                f"add {source!r} to wait_for, or route it to one of the nodes the join waits "
                "for",
                (node.name, source),
                node.location,
                node.ignore,
            )
        if not outsiders:  # else reported above
            checked.append((node, waits))
    for stuck in never_released(graph, checked, lambda: partners(coactive_pairs(graph))):
        node = spec_nodes[stuck.join]
        message, nodes = _stuck_words(stuck)
        yield Finding(message, nodes, node.location, node.ignore)


def _stuck_words(stuck: StuckJoin) -> tuple[str, tuple[str, ...]]:
    """Return the message and the nodes of a join held forever (see ``analysis._joins``)."""
    join = stuck.join
    held = f"a run that routes to {join!r} waits there forever (StuckJoinError)"
    if isinstance(stuck, RunsAfter):
        if stuck.waited == join:
            return (
                f"the join {join!r} waits for itself, which cannot run before it does: {held}; "
                f"drop {join!r} from its own wait_for",
                (join,),
            )
        return (
            f"the join {join!r} waits for {stuck.waited!r}, which can only run after it (no "
            f"route from the start reaches {stuck.waited!r} without passing through "
            f"{join!r}): {held}; drop {stuck.waited!r} from wait_for, or route to it before "
            "the join",
            (join, stuck.waited),
        )
    if isinstance(stuck, Exclusive):
        first, second = stuck.first, stuck.second
        if stuck.chooser is not None:
            return (
                f"the join {join!r} waits for {first!r} and {second!r}, which run both before "
                f"it only when {stuck.chooser!r} takes both branches, and it may take one (it "
                f"chooses its routes at run time): then {held}; let {stuck.chooser!r} always "
                f"route to both (then=({first!r}, {second!r})), or drop wait_for so the node "
                "runs after each branch taken",
                (join, first, second),
            )
        return (
            f"the join {join!r} waits for {first!r} and {second!r}, but no run runs both "
            "before it (neither leads to the other and no fan-out leads to both, e.g. two "
            f"routes of one router): {held}; without wait_for the node runs after whichever "
            f"ran, or run both with a fan-out, e.g. then=({first!r}, {second!r})",
            (join, first, second),
        )
    if isinstance(stuck, ForkTwice):
        return _fork_twice_words(stuck, held)
    entry, waited = stuck.entry, stuck.waited
    nodes = tuple(dict.fromkeys((join, entry, waited)))
    again = f"the join then waits for {waited!r} again, which cannot run after it: {held}"
    if stuck.how == "back":
        return (
            f"the join {join!r} can run again after a route re-enters it (from {entry!r}), "
            f"but {waited!r}, which it waits for, cannot run after it: the second time "
            f"{held}; route back through {waited!r} or drop it from wait_for",
            (join, waited),
        )
    if stuck.how == "loop":
        return (
            f"node {entry!r} routes to the join {join!r} and can run again without it (it is "
            "on a loop that avoids the join), so the join may be released while "
            f"{entry!r} still loops, then entered again by it; {again}; route the loop's way "
            f"out through a node that runs once and wait for that node instead of {entry!r}",
            nodes,
        )
    return (
        f"node {entry!r} routes to the join {join!r} and can run again in the superstep the "
        f"join runs in (a route reaches it a superstep after its first run), so it enters "
        f"the join again after the join ran; {again}; route to {entry!r} from one place "
        "only, or wait for a node that runs once after it",
        nodes,
    )


def _fork_twice_words(stuck: ForkTwice, held: str) -> tuple[str, tuple[str, ...]]:
    join, fork, early, late = stuck.join, stuck.fork, stuck.early, stuck.late

    def later(count: int) -> str:
        return f"{count} superstep{'s' if count > 1 else ''} later"

    how = (
        f"it is on a loop of {stuck.gap} route{'s' if stuck.gap > 1 else ''}"
        if stuck.again == fork
        else f"{stuck.again!r} may run beside it and reaches it {later(stuck.gap)}"
    )
    return (
        f"the join {join!r} waits for {early!r} and {late!r}, and {fork!r} reaches {late!r} "
        f"{later(stuck.spread)} than {early!r}; {fork!r} may run again {later(stuck.gap)} "
        f"({how}): the join runs once both first arrived, {early!r}'s second run arrives "
        f"before it and {late!r}'s after it, holding it again for {early!r}, which does not "
        f"run again, so {held}; route to {fork!r} from one place only, or make the ways "
        f"from {fork!r} to {early!r} and {late!r} equally long",
        tuple(dict.fromkeys((join, fork, early, late, stuck.again))),
    )
