"""The reader of ``corral lint --static``: graphs, nodes and routers from mypy's trees.

A ``Graph(...)`` assigned at module level is a graph; a function decorated with
``@g.node(...)`` or ``@g.router(...)`` where ``g`` is such a graph is one of its nodes or
routers; ``g.subgraph(...)`` adds a node running a child graph. :meth:`Reader.spec` then
builds the :class:`~corral.spec.GraphSpec` the analyser reads, as the DSL would at run time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from corral import _subgraph
from corral.counters import read_counters
from corral.spec import GraphSpec, KeySpec, Location, NodeSpec, RouterSpec, SubgraphSpec
from corral.static._expressions import (
    GRAPH,
    StaticError,
    call_arguments,
    callee_name,
    constant,
    is_none,
    output_keys,
    read_guards,
)
from corral.static._types import (
    graph_type_args,
    literal_names,
    node_command_targets,
    router_targets,
    state_keys,
)
from corral.writes import infer_command_fanout, infer_writes

if TYPE_CHECKING:
    from mypy import nodes as mypy_nodes
    from mypy import types as mypy_types


@dataclass
class _Graph:
    fullname: str
    path: str
    call: mypy_nodes.CallExpr
    nodes: list[NodeSpec] = field(default_factory=list)
    routers: list[RouterSpec] = field(default_factory=list)
    children: dict[str, tuple[str, frozenset[str] | tuple[()] | None]] = field(default_factory=dict)
    """Subgraph node name -> (the child's full name, the keys ``output=`` writes: ``()``
    without ``output=``, ``None`` when they cannot be read)."""


class Reader:
    """Collects graphs, then their nodes and routers, from mypy's trees."""

    def __init__(self, types: dict[mypy_nodes.Expression, mypy_types.Type] | None) -> None:
        self.types = types or {}
        self.graphs: dict[str, _Graph] = {}
        self.errors: list[tuple[str, int, StaticError]] = []

    # -- finding -------------------------------------------------------------------------

    def find_graphs(self, tree: mypy_nodes.MypyFile) -> None:
        from mypy import nodes

        for stmt in tree.defs:
            if (
                isinstance(stmt, nodes.AssignmentStmt)
                and isinstance(stmt.rvalue, nodes.CallExpr)
                and callee_name(stmt.rvalue) == GRAPH
            ):
                for lvalue in stmt.lvalues:
                    if isinstance(lvalue, nodes.NameExpr) and lvalue.fullname:
                        self.graphs[lvalue.fullname] = _Graph(
                            lvalue.fullname, tree.path, stmt.rvalue
                        )

    def find_functions(self, tree: mypy_nodes.MypyFile) -> None:
        from mypy import nodes

        for stmt in tree.defs:
            if isinstance(stmt, nodes.ExpressionStmt) and isinstance(stmt.expr, nodes.CallExpr):
                self._subgraph_call(stmt.expr, tree.path)
            if not isinstance(stmt, nodes.Decorator):
                continue
            for decorator in stmt.original_decorators:
                graph = self._graph_of(decorator, ("node", "router"))
                if graph is None:
                    continue
                assert isinstance(decorator, nodes.CallExpr)
                assert isinstance(decorator.callee, nodes.MemberExpr)
                try:
                    if decorator.callee.name == "node":
                        graph.nodes.append(self._node(stmt, decorator, tree.path))
                    else:
                        graph.routers.append(self._router(stmt, decorator, tree.path))
                except StaticError as exc:
                    self.errors.append((tree.path, decorator.line, exc))

    def _graph_of(self, expr: mypy_nodes.Expression, methods: tuple[str, ...]) -> _Graph | None:
        """Return the graph whose method ``expr`` calls (``g.node(...)``), if it is one of
        ``methods`` and ``g`` a graph read."""
        from mypy import nodes

        if not (
            isinstance(expr, nodes.CallExpr)
            and isinstance(expr.callee, nodes.MemberExpr)
            and isinstance(expr.callee.expr, nodes.RefExpr)
            and expr.callee.name in methods
        ):
            return None
        return self.graphs.get(expr.callee.expr.fullname or "")

    def _subgraph_call(self, call: mypy_nodes.CallExpr, path: str) -> None:
        """Record ``g.subgraph("name", child, ...)`` as a node of ``g`` that runs ``child``."""
        from mypy import nodes

        graph = self._graph_of(call, ("subgraph",))
        if graph is None:
            return
        try:
            args = call_arguments(call, ("name", "child"))
            name = constant(args["name"])
            child = args.get("child")
            child_name = child.fullname if isinstance(child, nodes.RefExpr) else ""
            node = NodeSpec(
                name=name,
                func=_subgraph.stand_in(name),
                location=Location(path, call.line, 1),
                **_node_options(args),
            )
        except StaticError as exc:
            self.errors.append((path, call.line, exc))
            return
        graph.nodes.append(node)
        output = args.get("output")
        written = output_keys(output) if output is not None and not is_none(output) else ()
        graph.children[name] = (child_name or "", written)

    def child_modules(self) -> list[str]:
        """Return the modules of child graphs not read yet."""
        names = {c for g in self.graphs.values() for c, _ in g.children.values()}
        return sorted({n.rpartition(".")[0] for n in names if n and n not in self.graphs})

    def _with_children(self, graph: _Graph, keys: tuple[KeySpec, ...]) -> tuple[NodeSpec, ...]:
        """Return the graph's nodes, each subgraph node holding its child's spec."""
        out: list[NodeSpec] = []
        for node in graph.nodes:
            child = graph.children.get(node.name)
            target = self.graphs.get(child[0]) if child is not None else None
            if child is None or target is None or target is graph:
                out.append(node)
                continue
            spec = self.spec(target)
            names = {k.name for k in spec.keys}
            sub = SubgraphSpec(spec, tuple(k.name for k in keys if k.name in names))
            writes = _subgraph.writes_of(sub) if child[1] == () else child[1] or None
            out.append(
                dataclasses.replace(
                    node, subgraph=sub, writes=writes, is_async=_subgraph.is_async(spec)
                )
            )
        return tuple(out)

    # -- building ------------------------------------------------------------------------

    def spec(self, graph: _Graph) -> GraphSpec:
        args = call_arguments(graph.call, ("state_schema", "update_schema", "nodes"))
        instance = self.types.get(graph.call)
        state_type, update_type, nodes_type = graph_type_args(instance)
        state_expr = args.get("state_schema")
        if state_expr is None or state_type is None:
            msg = f"{graph.fullname}: Graph(...) has no state schema mypy can read"
            raise StaticError(msg)
        keys = state_keys(state_expr, state_type)
        update_keys = None
        update_expr = args.get("update_schema")
        if update_expr is not None and not is_none(update_expr) and update_type is not None:
            update_keys = state_keys(update_expr, update_type)
        node_names = None
        if args.get("nodes") is not None and nodes_type is not None:
            node_names = literal_names(nodes_type)
        name = constant(args["name"]) if "name" in args else None
        max_steps = constant(args["max_steps"]) if "max_steps" in args else 50
        return GraphSpec(
            name=name,
            location=Location(graph.path, graph.call.line, 1),
            keys=keys,
            nodes=self._with_children(graph, keys),
            routers=tuple(graph.routers),
            max_steps=max_steps,
            node_names=node_names,
            update_keys=update_keys,
        )

    def _node(
        self, decorated: mypy_nodes.Decorator, call: mypy_nodes.CallExpr, path: str
    ) -> NodeSpec:
        func = decorated.func
        args = call_arguments(call, ("name",))
        writes_arg = args.get("writes")
        writes_value = constant(writes_arg) if writes_arg is not None else None
        fields = _function_fields(decorated, path)
        stub = fields["func"]
        writes = frozenset(writes_value) if writes_value is not None else infer_writes(stub)
        name = constant(args["name"]) if "name" in args else None
        command = node_command_targets(func)
        return NodeSpec(
            name=name if name is not None else func.name,
            command=command,
            command_fanout=command is not None and infer_command_fanout(stub),
            writes=writes,
            **fields,
            **_node_options(args),
        )

    def _router(
        self, decorated: mypy_nodes.Decorator, call: mypy_nodes.CallExpr, path: str
    ) -> RouterSpec:
        func = decorated.func
        args = call_arguments(call, ("source",))
        if "source" not in args:
            msg = f"@router on {func.name!r} names no source node"
            raise StaticError(msg)
        return RouterSpec(
            source=constant(args["source"]),
            name=func.name,
            targets=router_targets(func),
            guards=read_guards(args.get("guards")),
            ignore=tuple(constant(args["ignore"])) if "ignore" in args else (),
            **_function_fields(decorated, path),
        )


def _node_options(args: dict[str, Any]) -> dict[str, Any]:
    """Return the fields of a node that ``@g.node(...)`` and ``g.subgraph(...)`` both take."""
    then = args.get("then")
    then_routes: tuple[str, ...] | None = None
    if then is not None and not is_none(then):
        value = constant(then)
        then_routes = (value,) if isinstance(value, str) else tuple(value)
    return {
        "start": bool(constant(args["start"])) if "start" in args else False,
        "then": then_routes,
        "max_runs": constant(args["max_runs"]) if "max_runs" in args else None,
        "guards": read_guards(args.get("guards")),
        "wait_for": tuple(constant(args["wait_for"])) if "wait_for" in args else (),
        "ignore": tuple(constant(args["ignore"])) if "ignore" in args else (),
    }


def _function_fields(decorated: mypy_nodes.Decorator, path: str) -> dict[str, Any]:
    """Return the fields a node and a router read alike from their decorated function."""
    from mypy import nodes

    func = decorated.func
    stub = _stub(decorated, path)
    positional = [k for k in func.arg_kinds if k in (nodes.ARG_POS, nodes.ARG_OPT, nodes.ARG_STAR)]
    return {
        "func": stub,
        "location": Location(path, func.line, func.column + 1),
        "takes_ctx": len(positional) >= 2 or nodes.ARG_STAR in positional,
        "is_async": func.is_coroutine,
        "counters": read_counters(stub),
    }


def _stub(decorated: mypy_nodes.Decorator, path: str) -> Callable[..., Any]:
    """Return a function whose code points at the decorated function's source, unrun.

    :func:`corral.writes.infer_writes` reads a function's source through its code object
    (file and first line); this stub has the right ones and a body of ``pass``, so the same
    inference runs on the same text as at run time, and no user code runs.
    """
    first = min([decorated.func.line, *(d.line for d in decorated.original_decorators)])
    name = decorated.func.name
    namespace: dict[str, Any] = {}
    # The docstring makes stubs of same-named functions at the same line of two files
    # unequal: code objects compare without their file name, and the inference cache is
    # keyed by code object, so without it one file's writes would be read for the other's.
    body = f"def {name}(*args, **kwargs):\n    {path!r}\n"
    code = compile("\n" * (first - 1) + body, path, "exec")
    exec(code, namespace)
    stub: Callable[..., Any] = namespace[name]
    return stub
