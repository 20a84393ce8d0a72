"""Random graph shapes: a graph described as plain data, for the model and the engine alike.

A shape is a sequence of *blocks*, each entered through its first node (its head):

- a plain node whose way out is ``then=`` (one target or a fan-out), a router (one
  target, or a list), or a ``Command``; it may loop back to an earlier head through a
  guarded route;
- a fork and join: ``fork`` fans out to a short and a long branch, and the join waits for
  both with ``wait_for=``;
- a ``Send`` router and the worker it runs once per ``Send``;
- a subgraph node running the shape's child graph.

Every route goes to a head (or ``END``), so no join is entered from outside its block.
Nodes may ask a person (``interrupt()``), fail a few attempts under a ``Retry`` and be
capped by ``max_runs``. What each node does is in :mod:`refmodel.behaviour`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from hypothesis import strategies as st

from corral import END, Guard

KNOWN_DEFECTS: frozenset[str] = frozenset()
"""Known engine defects (issue 27) that the random machine steers around.

Each has an explicit failing test in ``tests/unit/test_model_known_defects.py``; delete an
entry when its fix merges, and the machine will exercise that combination again.
"""

KINDS = ("then", "router", "many", "command", "send", "worker", "sub")


@dataclass(frozen=True)
class NodeShape:
    """One node: how it leaves (``kind`` and ``targets``) and what it does."""

    name: str
    kind: str
    """``then``, ``router`` (one target), ``many`` (a list router), ``command``, ``send``
    (its router sends to ``targets[0]``), ``worker`` (run by ``Send``) or ``sub``."""
    targets: tuple[str, ...]
    start: bool = False
    guards: tuple[Guard[str], ...] = ()
    wait_for: tuple[str, ...] = ()
    max_runs: int | None = None
    writes_last: bool = False
    """Writes the key ``last`` (no reducer): only where no sibling can write it too,
    unless ``conflict`` is set on the shape."""
    asks: bool = False
    """Calls ``interrupt()`` every run."""
    fails: int = 0
    """The first ``fails`` attempts of each run raise ``ConnectionError`` (retried)."""
    salt: int = 0
    """Mixed into the route choice, so two routers choose differently."""
    max_sends: int = 0


@dataclass(frozen=True)
class GraphShape:
    """A whole graph: nodes in registration order, caps, pauses and its child graph."""

    nodes: tuple[NodeShape, ...]
    max_steps: int = 50
    interrupt_before: tuple[str, ...] = ()
    child: GraphShape | None = None
    conflict: bool = False
    """Two parallel branches write ``last`` (CR301 ignored): the runtime must refuse it."""
    extra: dict[str, object] = field(default_factory=dict, compare=False)

    def node(self, name: str) -> NodeShape:
        """Return the node called ``name``."""
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(name)

    @property
    def subgraph_nodes(self) -> tuple[str, ...]:
        """Names of the nodes that run the child graph."""
        return tuple(n.name for n in self.nodes if n.kind == "sub")

    @property
    def joins(self) -> dict[str, tuple[str, ...]]:
        """Each join and the nodes it waits for."""
        return {n.name: n.wait_for for n in self.nodes if n.wait_for}


def with_guard(shape: GraphShape, source: str, guard: Guard[str]) -> GraphShape:
    """Return ``shape`` with one more guard on ``source``'s routes (CR201's fix)."""
    nodes = tuple(
        replace(n, guards=(*n.guards, guard)) if n.name == source else n for n in shape.nodes
    )
    return replace(shape, nodes=nodes)


# ---------------------------------------------------------------- drawing shapes


@st.composite
def _loop_back(draw: st.DrawFn, heads: list[str], later: list[str]) -> tuple[str, Guard[str]]:
    """A guarded route back to an earlier head; its fallback goes forward (or ``END``)."""
    target = draw(st.sampled_from(heads))
    otherwise = draw(st.sampled_from([None, *later]))
    return target, Guard(target, max=draw(st.integers(0, 2)), otherwise=otherwise)


@st.composite
def _plain(
    draw: st.DrawFn, name: str, heads: list[str], later: list[str], guard_backs: bool
) -> list[NodeShape]:
    """One plain node: ``then``, a router, a list router or a ``Command``."""
    kind = draw(st.sampled_from(["then", "then", "router", "router", "many", "command"]))
    extra = draw(st.lists(st.sampled_from(later), max_size=2, unique=True))
    forward = list(dict.fromkeys([later[0], *extra]))
    guards: tuple[Guard[str], ...] = ()
    back: list[str] = []
    if kind != "many" and draw(st.integers(0, 2)) > 0:
        target, guard = draw(_loop_back([*heads, name], later))
        if kind == "then":
            # the only way on once the guard is used up: keep the rest reachable
            guard = Guard(target, max=guard.max, otherwise=later[0])
        back = [target]
        guards = (guard,) if guard_backs else ()
    if kind == "then":
        # one route back (taken until its guard is used up), a fan-out, or one route on
        targets = back or (forward if draw(st.booleans()) else forward[:1])
    elif kind == "many":
        targets = [t for t in forward if t != END] or [later[0]]
    elif kind == "command":
        # a Command without goto ends its branch, so END is never a goto target
        targets = [t for t in [*forward, *back] if t != END]
        if not targets:
            kind, targets = "then", forward[:1]
    else:
        targets = [*forward, *(t for t in back if t not in forward)]
    if kind == "many" and targets == [END]:
        kind = "then"
    return [
        NodeShape(
            name,
            kind,
            tuple(dict.fromkeys(targets)),
            guards=tuple(g for g in guards if g.target in targets),
            asks=draw(st.integers(0, 5)) == 0,
            fails=draw(st.sampled_from([0, 0, 0, 1, 2])),
            salt=draw(st.integers(0, 6)),
            max_runs=draw(st.sampled_from([None, None, None, 2, 3])),
        )
    ]


@st.composite
def _fork_join(draw: st.DrawFn, base: str, later: list[str], conflict: bool) -> list[NodeShape]:
    """``fork`` → (short, long1 [→ long2]) → join, the join waiting for both branches."""
    fork, short, long1, long2, join = (f"{base}{s}" for s in ("f", "s", "l", "m", "j"))
    two = draw(st.booleans())
    long_end = long2 if two else long1
    # a list router as the fork may take one branch only: such a run raises
    # StuckJoinError, and check() says so (CR304)
    chosen = draw(st.integers(0, 3)) == 0
    nodes = [
        NodeShape(fork, "many" if chosen else "then", (short, long1), salt=draw(st.integers(0, 6))),
        NodeShape(short, "then", (join,), writes_last=conflict, asks=draw(st.integers(0, 5)) == 0),
        NodeShape(long1, "then", (long2 if two else join,), writes_last=conflict),
    ]
    if two:
        nodes.append(NodeShape(long2, "then", (join,), fails=draw(st.sampled_from([0, 1]))))
    nodes.append(NodeShape(join, "then", (later[0],), wait_for=(short, long_end)))
    return nodes


@st.composite
def _send(draw: st.DrawFn, base: str, later: list[str]) -> list[NodeShape]:
    """A ``Send`` router and its worker."""
    sender, worker = f"{base}s", f"{base}w"
    return [
        NodeShape(
            sender,
            "send",
            (worker,),
            max_sends=draw(st.integers(1, 3)),
            salt=draw(st.integers(0, 6)),
        ),
        NodeShape(worker, "worker", (later[0],), asks=draw(st.integers(0, 6)) == 0),
    ]


@st.composite
def child_shapes(draw: st.DrawFn) -> GraphShape:
    """A small child graph: a chain ``c0 → c1 ...`` with a guarded loop and a question."""
    count = draw(st.integers(1, 3))
    names = [f"c{i}" for i in range(count)]
    nodes: list[NodeShape] = []
    for index, name in enumerate(names):
        later = [*names[index + 1 :], END]
        if draw(st.booleans()):
            back = draw(st.sampled_from(names[: index + 1]))
            guard = Guard(back, max=draw(st.integers(1, 2)), otherwise=later[0])
            node = NodeShape(name, "router", (later[0], back), guards=(guard,))
        else:
            node = NodeShape(name, "then", (later[0],))
        nodes.append(
            replace(
                node,
                start=index == 0,
                salt=draw(st.integers(0, 6)),
                asks=draw(st.integers(0, 4)) == 0,
                fails=draw(st.sampled_from([0, 0, 1])),
            )
        )
    return GraphShape(tuple(nodes))


@st.composite
def graph_shapes(draw: st.DrawFn, *, max_blocks: int = 5, guard_backs: bool = True) -> GraphShape:
    """Draw a graph shape; with ``guard_backs=False`` loops may lack their guard (CR201)."""
    kinds = draw(
        st.lists(
            st.sampled_from(["plain", "plain", "plain", "join", "send", "sub"]),
            min_size=1,
            max_size=max_blocks,
        )
    )
    heads = [_head(i, k) for i, k in enumerate(kinds)]
    conflict = "join" in kinds and draw(st.integers(0, 5)) == 0
    nodes: list[NodeShape] = []
    for index, kind in enumerate(kinds):
        later = [*heads[index + 1 :], END]
        base = f"b{index}"
        if kind == "plain":
            nodes += draw(_plain(heads[index], heads[:index], later, guard_backs))
        elif kind == "join":
            nodes += draw(_fork_join(base, later, conflict))
        elif kind == "send":
            nodes += draw(_send(base, later))
        else:
            nodes.append(NodeShape(heads[index], "sub", (later[0],)))
    nodes[0] = replace(nodes[0], start=True)
    if not _has_parallel(nodes):
        nodes = [
            replace(n, writes_last=draw(st.booleans())) if n.kind != "worker" else n for n in nodes
        ]
    names = [n.name for n in nodes]
    pause = draw(st.lists(st.sampled_from(names), max_size=1))
    return GraphShape(
        tuple(nodes),
        max_steps=draw(st.sampled_from([50, 50, 8, 12])),
        interrupt_before=tuple(pause),
        child=draw(child_shapes()) if "sub" in kinds else None,
        conflict=conflict,
    )


def _head(index: int, kind: str) -> str:
    return {"plain": f"n{index}", "join": f"b{index}f", "send": f"b{index}s"}.get(
        kind, f"sub{index}"
    )


def _has_parallel(nodes: list[NodeShape]) -> bool:
    """Whether two nodes that write ``last`` could ever share a superstep."""
    return any(
        n.kind in ("many", "send", "command") or (n.kind == "then" and len(n.targets) > 1)
        for n in nodes
    )


def describe(shape: GraphShape) -> str:
    """A short text of a shape, one node a line, for failure reports."""
    lines = [f"max_steps={shape.max_steps} interrupt_before={list(shape.interrupt_before)}"]
    for n in shape.nodes:
        bits = [f"{n.name}: {n.kind} -> {list(n.targets)}"]
        bits += [f"guard {g.target} max={g.max} otherwise={g.otherwise}" for g in n.guards]
        extras = {
            "start": n.start,
            "wait_for": n.wait_for,
            "max_runs": n.max_runs,
            "last": n.writes_last,
            "asks": n.asks,
            "fails": n.fails,
            "salt": n.salt,
            "max_sends": n.max_sends,
        }
        bits += [f"{k}={v}" for k, v in extras.items() if v]
        lines.append("  " + ", ".join(bits))
    if shape.child is not None:
        lines.append("child: " + describe(shape.child).replace("\n", "\n  | "))
    return "\n".join(lines)
