"""Write a corral module skeleton for a LangGraph graph (``corral port``).

The skeleton imports the original node functions and state schema, registers each node with
its fixed routes, re-declares each router as a corral router whose return annotation is the
``Literal`` of its targets (mapping its value through the ``path_map`` when it has one), and
puts a ``Guard`` placeholder on each route where CR201 would cut a cycle. It is a starting
point, not a finished port: what corral cannot know is left as a ``TODO`` comment.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from corral.langgraph._read import builder_of, read
from corral.spec import END, START, GraphSpec, Guard, Location, RouterSpec

__all__ = ["port"]

_GUARD_MAX = 3


def _home(obj: Any, module: str) -> str:
    home = str(getattr(obj, "__module__", "") or module)
    # A script, or a file the CLI loaded under a private name: import it by its own name.
    return module if home == "__main__" or home.startswith("_corral_") else home


def _guards(spec: GraphSpec) -> dict[tuple[str, str], tuple[Guard, str]]:
    """Return ``{(owner kind + name, source): (guard, cycle text)}`` for each route to cut."""
    from corral.analysis._graph import SpecGraph
    from corral.analysis.rules import RULES

    found: dict[tuple[str, str], tuple[Guard, str]] = {}
    for finding in RULES["CR201"].check(SpecGraph(spec)):
        cycle = finding.nodes
        shown = " → ".join((*cycle, cycle[0]))
        owner = _owner(spec, cycle, finding.location)
        if owner is None:
            continue
        kind, source = owner
        target = cycle[(cycle.index(source) + 1) % len(cycle)]
        found[(kind, source)] = (Guard(target, max=_GUARD_MAX, otherwise=END), shown)
    return found


def _owner(
    spec: GraphSpec, cycle: tuple[str, ...], location: Location | None
) -> tuple[str, str] | None:
    for router in spec.routers:
        if router.source in cycle and router.location == location:
            return (f"router:{router.name}", router.source)
    for name in cycle:
        node = spec.node(name)
        if node is not None and node.location == location:
            return ("node", name)
    return None


def _target_text(names: tuple[str, ...]) -> str:
    nodes = [n for n in names if n != END]
    parts = [f"Literal[{', '.join(repr(n) for n in nodes)}]"] if nodes else []
    if END in names:
        parts.append("End")
    return " | ".join(parts) or "End"


def _guard_text(guard: Guard) -> str:
    return f"Guard({guard.target!r}, max={guard.max}, otherwise=END)"


def _router_lines(
    router: RouterSpec, ends: Any, state: str, guard: tuple[Guard, str] | None
) -> list[str]:
    original = f"_lg_{router.name}"
    options = [f"{router.source!r}"]
    comment = ""
    if guard is not None:
        options.append(f"guards=[{_guard_text(guard[0])}]")
        comment = f"  # CR201: {guard[1]}; choose the max"
    names = router.targets.names
    lines = [f"@g.router({', '.join(options)}){comment}"]
    if names is None or router.targets.sends:
        todo = (
            "CR401, name its targets"
            if names is None
            else "returns Send; annotate list[Send[Literal[...]]] with corral's Send"
        )
        return [
            *lines,
            f"def {router.name}(state: {state}) -> End:  # TODO: {todo}",
            f"    return {original}(state)  # type: ignore[no-any-return]",
        ]
    lines.append(f"def {router.name}(state: {state}) -> {_target_text(names)}:")
    mapping = {str(k): v for k, v in dict(ends or {}).items()}
    if mapping and any(k != v for k, v in mapping.items()):
        lines.append(f"    return {mapping!r}[{original}(state)]  # the LangGraph path_map")
    else:
        lines.append(f"    return {original}(state)  # type: ignore[no-any-return]")
    return lines


def _node_line(
    name: str,
    func: Callable[..., Any] | None,
    spec: GraphSpec,
    guard: tuple[Guard, str] | None,
    state: str,
    lambdas: list[str],
) -> list[str]:
    node = spec.node(name)
    assert node is not None
    options = [repr(name)]
    if node.start:
        options.append("start=True")
    if node.then is not None:
        shown = [("END" if t == END else repr(t)) for t in node.then]
        options.append(f"then={shown[0]}" if len(shown) == 1 else f"then=({', '.join(shown)},)")
    if node.wait_for:
        options.append(f"wait_for={list(node.wait_for)!r}")
    if guard is not None:
        options.append(f"guards=[{_guard_text(guard[0])}]")
    call = f"g.node({', '.join(options)})"
    lines = [f"# CR201: {guard[1]}; choose the guard's max"] if guard is not None else []
    if node.command is not None:
        lines.append("# TODO: returns LangGraph's Command; return corral's Command[Literal[...]]")
    if func is None:
        lines.append(f"# TODO: {name!r} is a LangGraph subgraph; port it and use g.subgraph")
        return lines
    if not func.__name__.isidentifier():  # a lambda: run it from the original builder
        own = _own_name(name)
        lines += [
            "",
            "",
            f"def {own}(state: {state}) -> dict[str, object]:  # the lambda node {name!r}",
            f"    return _lg{own}(state)  # type: ignore[no-any-return]",
            "",
            "",
        ]
        lambdas.append(f"_lg{own} = _lg_builder.nodes[{name!r}].runnable.func")
        return [*lines, f"{call}({own})"]
    lines.append(f"{call}({func.__name__})")
    return lines


def _own_name(name: str) -> str:
    return "_lambda_" + "".join(c if c.isalnum() else "_" for c in name)


def port(graph: Any, *, module: str, name: str) -> str:
    """Return the text of a corral module that re-declares a LangGraph graph.

    Args:
        graph: the ``StateGraph`` or compiled graph.
        module: the dotted name of the module it was found in (imports point there).
        name: the attribute it was found under (for the header).
    """
    builder = builder_of(graph)
    reading = read(graph)
    spec = reading.spec
    guards = _guards(spec)
    schema = getattr(builder, "state_schema", None) or getattr(builder, "schema", None)
    state = getattr(schema, "__name__", "dict")
    imports: dict[str, list[str]] = {}
    if schema is not None:
        imports.setdefault(_home(schema, module), []).append(state)
    body: list[str] = []
    lambdas: list[str] = []
    for node_name, func in reading.funcs.items():
        if func is not None and func.__name__.isidentifier():
            imports.setdefault(_home(func, module), []).append(func.__name__)
        guard = guards.get(("node", node_name))
        body += _node_line(node_name, func, spec, guard, state, lambdas)
    for router, (key, ends) in zip(spec.routers, reading.branches, strict=True):
        if router.source == START:
            body += ["", f"# TODO: {router.name!r} chooses the start node; mark them start=True"]
            continue
        original = router.func
        if original.__name__.isidentifier():
            home = _home(original, module)
            imports.setdefault(home, []).append(f"{original.__name__} as _lg_{router.name}")
        else:  # a lambda router: taken from the original builder
            lambdas.append(
                f"_lg_{router.name} = _lg_builder.branches[{router.source!r}][{key!r}].path.func"
            )
        guard = guards.get((f"router:{router.name}", router.source))
        body += ["", "", *_router_lines(router, ends, state, guard)]
    header = [
        f'"""corral port of {module}:{name}, written by `corral port`; review it before use.',
        "",
        "Nodes are the original functions; routers are re-declared with Literal annotations;",
        "each route CR201 names carries a Guard placeholder (choose its max).",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import Literal",
        "",
        "from corral import END, End, Graph, Guard",
    ]
    for home, names in imports.items():
        header.append(f"from {home} import {', '.join(dict.fromkeys(names))}")
    if lambdas:  # lambdas are taken from the original builder, which is then let go
        header += [f"from {module} import {name} as _lg_graph", ""]
        header += ['_lg_builder = getattr(_lg_graph, "builder", _lg_graph)', *lambdas]
        header.append("del _lg_graph, _lg_builder  # the original is no graph of this module")
    return "\n".join([*header, "", f"g = Graph({state})", "", *body, ""])
