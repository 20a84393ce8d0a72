"""Read graphs with mypy instead of importing them: ``corral lint --static``.

The import-based loader (:mod:`corral.loader`) runs a module's top-level code to find its
graphs. This reader runs none: it hands the files to mypy's build API, which parses and
type-checks them (following their imports, so a graph whose nodes are registered from
several modules is seen whole), and then rebuilds each graph's :class:`~corral.spec.GraphSpec`
from what mypy knows:

- a ``Graph(...)`` assigned at module level is a graph; its state, update and node-name
  types are the type arguments mypy inferred for the call, its ``name=``/``max_steps=`` the
  literal arguments;
- a function decorated with ``@g.node(...)`` or ``@g.router(...)``, where ``g`` is such a
  graph (possibly imported from another module), is one of its nodes or routers; the
  decorator's arguments must be literals (strings, tuples, ``END``, ``Guard(...)``);
- route targets come from the function's return type as mypy resolved it, so aliases and
  ``End`` read the same as at run time; the keys a node writes are inferred from its
  source by :func:`corral.writes.infer_writes`, exactly as at run time.

Everything that would need code to run (a decorator argument computed at run time, a graph
built inside a function, a reducer's behaviour) is out of reach; a decorator argument that
is not a literal is reported as a load error naming the file and line. mypy is not a
dependency of corral: this module imports it only when called.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from corral import _subgraph
from corral.counters import read_counters
from corral.loader import Loaded, LoadError, Target, UsageError, split_selector
from corral.sources import display_path, exclude_patterns, python_files
from corral.spec import (
    END,
    START,
    GraphSpec,
    Guard,
    KeySpec,
    Location,
    NodeSpec,
    RouterSpec,
    SubgraphSpec,
    TargetSet,
)
from corral.writes import infer_command_fanout, infer_writes

if TYPE_CHECKING:
    from mypy import nodes as mypy_nodes
    from mypy import types as mypy_types

__all__ = ["StaticTarget", "load_static"]

_GRAPH = "corral.dsl.Graph"
_GUARD = "corral.spec.Guard"
_SEND = "corral.control.Send"
_COMMAND = "corral.control.Command"
_CONSTANTS = {"corral.spec.END": END, "corral.spec.START": START}
_SEQUENCES = {"builtins.list", "builtins.tuple", "typing.Sequence", "collections.abc.Sequence"}


class StaticError(Exception):
    """A graph declaration the static reader cannot read without running code."""


@dataclass
class StaticTarget(Target):
    """A graph read by mypy: its spec is already built."""

    static_spec: GraphSpec | None = field(default=None, repr=False)

    def spec(self) -> GraphSpec:
        """Return the spec read from mypy's view of the module."""
        assert self.static_spec is not None
        return self.static_spec


def load_static(paths: Sequence[str], *, exclude: Sequence[str] = ()) -> Loaded:
    """Read every graph under ``paths`` with mypy's build API, running none of their code.

    Args:
        paths: ``.py`` files or folders (searched for ``.py`` files that mention corral).
        exclude: fnmatch patterns, as for ``corral lint --exclude``.

    Raises:
        UsageError: a path that does not exist, or mypy is not installed.
    """
    try:
        from mypy import build
        from mypy.errors import CompileError
        from mypy.find_sources import create_source_list
    except ImportError as exc:  # pragma: no cover - mypy is a dev dependency
        msg = "corral lint --static needs mypy (pip install mypy); or lint without --static"
        raise UsageError(msg) from exc
    loaded = Loaded()
    for argument in paths:
        path, wanted = split_selector(argument)
        files = _files(path, exclude, loaded)
        loaded.modules += len(files)
        found = Loaded()
        for batch in _batches(files, create_source_list):
            _read_batch(batch, found, build, CompileError)
        if wanted is not None:
            found.targets = [t for t in found.targets if wanted in t.aliases]
            if not found.targets and not found.errors:
                msg = f"{path} defines no graph called {wanted!r}"
                raise UsageError(msg)
        loaded.targets.extend(found.targets)
        loaded.errors.extend(found.errors)
    return loaded


def _options() -> Any:
    from mypy.options import Options

    options = Options()
    options.preserve_asts = True
    options.export_types = True
    options.incremental = False
    options.follow_imports = "silent"
    options.python_version = (3, 11)
    return options


def _batches(files: list[str], create_source_list: Any) -> list[list[Any]]:
    """Split the files into builds in which no two files have the same module name.

    Two scripts called ``agent.py`` in different folders are both module ``agent`` to mypy,
    which refuses a build holding both; each goes into its own build instead (the first
    build that has no ``agent`` yet), and graphs are read per build, so they never mix.
    """
    if not files:
        return []
    batches: list[list[Any]] = []
    taken: list[set[str]] = []
    for source in create_source_list(files, _options()):
        for batch, names in zip(batches, taken, strict=True):
            if source.module not in names:
                batch.append(source)
                names.add(source.module)
                break
        else:
            batches.append([source])
            taken.append({source.module})
    return batches


def _read_batch(sources: list[Any], loaded: Loaded, build: Any, compile_error: Any) -> None:
    """Build one batch with mypy and add its graphs (or its errors) to ``loaded``."""
    try:
        result = build.build(sources, _options())
    except compile_error as exc:
        names = ", ".join(s.path for s in sources)
        loaded.errors.append(LoadError(names, exc, "\n".join(exc.messages)))
        return
    wanted = {s.module for s in sources}
    trees = [result.graph[m].tree for m in sorted(wanted) if m in result.graph]
    reader = _Reader(result.types)
    for tree in trees:
        if tree is not None:
            reader.find_graphs(tree)
    for tree in trees:
        if tree is not None:
            reader.find_functions(tree)
    shown = list(reader.graphs.values())
    # A child graph defined in a module that was only imported is read too, not reported.
    for module in reader.child_modules():
        state = result.graph.get(module)
        if state is not None and state.tree is not None and module not in wanted:
            reader.find_graphs(state.tree)
            reader.find_functions(state.tree)
    for graph in shown:
        try:
            spec = reader.spec(graph)
        except StaticError as exc:
            loaded.errors.append(LoadError(graph.path, exc, str(exc)))
            continue
        name = graph.fullname.rpartition(".")[2]
        loaded.targets.append(StaticTarget(name, graph.path, aliases=(name,), static_spec=spec))
    for path, line, problem in reader.errors:
        loaded.errors.append(LoadError(f"{path}:{line}", problem, str(problem)))


def _files(path: str, exclude: Sequence[str], loaded: Loaded) -> list[str]:
    """Return the files under ``path`` that ``corral lint`` (without --static) would import."""
    if not os.path.lexists(path):
        msg = f"{path!r} does not exist; corral lint --static takes .py files and folders"
        raise UsageError(msg)
    files = []
    for file in python_files(path, exclude_patterns(exclude), only_marked=True):
        if file.problem is None:
            files.append(file.path)
        else:
            loaded.errors.append(LoadError(display_path(file.path), file.problem, ""))
    return files


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


class _Reader:
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
                and _callee(stmt.rvalue) == _GRAPH
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
                if not (
                    isinstance(decorator, nodes.CallExpr)
                    and isinstance(decorator.callee, nodes.MemberExpr)
                    and isinstance(decorator.callee.expr, nodes.RefExpr)
                    and decorator.callee.name in ("node", "router")
                ):
                    continue
                graph = self.graphs.get(decorator.callee.expr.fullname or "")
                if graph is None:
                    continue
                try:
                    if decorator.callee.name == "node":
                        graph.nodes.append(self._node(stmt, decorator, tree.path))
                    else:
                        graph.routers.append(self._router(stmt, decorator, tree.path))
                except StaticError as exc:
                    self.errors.append((tree.path, decorator.line, exc))

    def _subgraph_call(self, call: mypy_nodes.CallExpr, path: str) -> None:
        """Record ``g.subgraph("name", child, ...)`` as a node of ``g`` that runs ``child``."""
        from mypy import nodes

        callee = call.callee
        if not (
            isinstance(callee, nodes.MemberExpr)
            and callee.name == "subgraph"
            and isinstance(callee.expr, nodes.RefExpr)
        ):
            return
        graph = self.graphs.get(callee.expr.fullname or "")
        if graph is None:
            return
        try:
            args = _arguments(call, ("name", "child"))
            name = _constant(args["name"])
            child = args.get("child")
            child_name = child.fullname if isinstance(child, nodes.RefExpr) else ""
            then = args.get("then")
            then_routes: tuple[str, ...] | None = None
            if then is not None and not _is_none(then):
                value = _constant(then)
                then_routes = (value,) if isinstance(value, str) else tuple(value)
            node = NodeSpec(
                name=name,
                func=_subgraph.stand_in(name),
                location=Location(path, call.line, 1),
                start=bool(_constant(args["start"])) if "start" in args else False,
                then=then_routes,
                max_runs=_constant(args["max_runs"]) if "max_runs" in args else None,
                guards=_guards(args.get("guards")),
                wait_for=tuple(_constant(args["wait_for"])) if "wait_for" in args else (),
                ignore=tuple(_constant(args["ignore"])) if "ignore" in args else (),
            )
        except StaticError as exc:
            self.errors.append((path, call.line, exc))
            return
        graph.nodes.append(node)
        output = args.get("output")
        written = _output_keys(output) if output is not None and not _is_none(output) else ()
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
        args = _arguments(graph.call, ("state_schema", "update_schema", "nodes"))
        instance = self.types.get(graph.call)
        state_type, update_type, nodes_type = _graph_type_args(instance)
        state_expr = args.get("state_schema")
        if state_expr is None or state_type is None:
            msg = f"{graph.fullname}: Graph(...) has no state schema mypy can read"
            raise StaticError(msg)
        keys = _keys(state_expr, state_type)
        update_keys = None
        update_expr = args.get("update_schema")
        if update_expr is not None and not _is_none(update_expr) and update_type is not None:
            update_keys = _keys(update_expr, update_type)
        node_names = None
        if args.get("nodes") is not None and nodes_type is not None:
            node_names = _literal_names(nodes_type)
        name = _constant(args["name"]) if "name" in args else None
        max_steps = _constant(args["max_steps"]) if "max_steps" in args else 50
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
        args = _arguments(call, ("name",))
        then = args.get("then")
        then_routes: tuple[str, ...] | None = None
        if then is not None and not _is_none(then):
            value = _constant(then)
            then_routes = (value,) if isinstance(value, str) else tuple(value)
        writes_arg = args.get("writes")
        writes_value = _constant(writes_arg) if writes_arg is not None else None
        stub = _stub(decorated, path)
        writes = frozenset(writes_value) if writes_value is not None else infer_writes(stub)
        name = _constant(args["name"]) if "name" in args else None
        command = _command_targets(func)
        return NodeSpec(
            name=name if name is not None else func.name,
            func=stub,
            location=_def_location(func, path),
            start=bool(_constant(args["start"])) if "start" in args else False,
            then=then_routes,
            command=command,
            command_fanout=command is not None and infer_command_fanout(stub),
            max_runs=_constant(args["max_runs"]) if "max_runs" in args else None,
            guards=_guards(args.get("guards")),
            wait_for=tuple(_constant(args["wait_for"])) if "wait_for" in args else (),
            writes=writes,
            writes_declared=writes_value is not None,
            takes_ctx=_takes_ctx(func),
            is_async=func.is_coroutine,
            ignore=tuple(_constant(args["ignore"])) if "ignore" in args else (),
            counters=read_counters(stub),
        )

    def _router(
        self, decorated: mypy_nodes.Decorator, call: mypy_nodes.CallExpr, path: str
    ) -> RouterSpec:
        func = decorated.func
        args = _arguments(call, ("source",))
        if "source" not in args:
            msg = f"@router on {func.name!r} names no source node"
            raise StaticError(msg)
        stub = _stub(decorated, path)
        return RouterSpec(
            source=_constant(args["source"]),
            name=func.name,
            func=stub,
            counters=read_counters(stub),
            location=_def_location(func, path),
            targets=_router_targets(func),
            guards=_guards(args.get("guards")),
            takes_ctx=_takes_ctx(func),
            is_async=func.is_coroutine,
            ignore=tuple(_constant(args["ignore"])) if "ignore" in args else (),
        )


# -- expressions ---------------------------------------------------------------------------


def _callee(call: mypy_nodes.CallExpr) -> str | None:
    from mypy import nodes

    return call.callee.fullname if isinstance(call.callee, nodes.RefExpr) else None


def _arguments(
    call: mypy_nodes.CallExpr, positional: Sequence[str]
) -> dict[str, mypy_nodes.Expression]:
    from mypy import nodes

    out: dict[str, mypy_nodes.Expression] = {}
    index = 0
    for arg, kind, name in zip(call.args, call.arg_kinds, call.arg_names, strict=True):
        if kind == nodes.ARG_POS:
            if index < len(positional):
                out[positional[index]] = arg
            index += 1
        elif kind == nodes.ARG_NAMED and name is not None:
            out[name] = arg
        else:
            msg = f"line {call.line}: *args/**kwargs in a graph declaration cannot be read"
            raise StaticError(msg)
    return out


def _output_keys(expr: mypy_nodes.Expression) -> frozenset[str] | None:
    """Return the keys of ``lambda final: {"k": ...}``, as inference reads them at run time."""
    from mypy import nodes

    if not isinstance(expr, nodes.LambdaExpr):
        return None
    body = expr.expr()
    if not isinstance(body, nodes.DictExpr):
        return None
    keys = [k.value for k, _ in body.items if isinstance(k, nodes.StrExpr)]
    return frozenset(keys) if len(keys) == len(body.items) else None


def _is_none(expr: mypy_nodes.Expression) -> bool:
    from mypy import nodes

    return isinstance(expr, nodes.NameExpr) and expr.fullname == "builtins.None"


def _constant(expr: mypy_nodes.Expression) -> Any:
    """Return the value of a literal expression (or a ``Final`` constant such as ``END``)."""
    from mypy import nodes

    if isinstance(expr, (nodes.StrExpr, nodes.IntExpr)):
        return expr.value
    if isinstance(expr, (nodes.TupleExpr, nodes.ListExpr)):
        return tuple(_constant(item) for item in expr.items)
    if isinstance(expr, nodes.UnaryExpr) and expr.op == "-":
        return -_constant(expr.expr)
    if isinstance(expr, nodes.RefExpr):
        if expr.fullname in _CONSTANTS:
            return _CONSTANTS[expr.fullname]
        if expr.fullname == "builtins.None":
            return None
        if expr.fullname in ("builtins.True", "builtins.False"):
            return expr.fullname == "builtins.True"
        if isinstance(expr.node, nodes.Var) and expr.node.final_value is not None:
            return expr.node.final_value
    msg = (
        f"line {expr.line}: this argument is computed at run time; corral lint --static "
        "reads literal arguments only (lint without --static to import the module)"
    )
    raise StaticError(msg)


def _guards(expr: mypy_nodes.Expression | None) -> tuple[Guard, ...]:
    from mypy import nodes

    if expr is None:
        return ()
    if not isinstance(expr, (nodes.ListExpr, nodes.TupleExpr)):
        _constant(expr)  # raises: not a literal
        return ()
    guards = []
    for item in expr.items:
        if not (isinstance(item, nodes.CallExpr) and _callee(item) == _GUARD):
            msg = f"line {item.line}: guards= must list Guard(...) calls"
            raise StaticError(msg)
        args = _arguments(item, ("target",))
        otherwise = _constant(args["otherwise"]) if "otherwise" in args else None
        target, limit = _constant(args["target"]), _constant(args["max"])
        guards.append(Guard(target, max=limit, otherwise=otherwise))
    return tuple(guards)


# -- types ---------------------------------------------------------------------------------


def _graph_type_args(
    instance: mypy_types.Type | None,
) -> tuple[mypy_types.Type | None, mypy_types.Type | None, mypy_types.Type | None]:
    from mypy.types import Instance, get_proper_type

    proper = get_proper_type(instance) if instance is not None else None
    if isinstance(proper, Instance) and proper.type.fullname == _GRAPH and len(proper.args) == 3:
        return proper.args[0], proper.args[1], proper.args[2]
    return None, None, None


def _keys(expr: mypy_nodes.Expression, typ: mypy_types.Type) -> tuple[KeySpec, ...]:
    """Read a TypedDict's keys; a key declared ``Annotated[T, reducer]`` has a reducer."""
    from mypy import nodes
    from mypy.types import TypedDictType, get_proper_type

    proper = get_proper_type(typ)
    if not isinstance(proper, TypedDictType):
        msg = f"line {expr.line}: the state schema is not a TypedDict mypy can read"
        raise StaticError(msg)
    reducers = set()
    info = expr.node if isinstance(expr, nodes.RefExpr) else None
    if isinstance(info, nodes.TypeInfo):
        for base in info.mro:
            for stmt in base.defn.defs.body:
                if (
                    isinstance(stmt, nodes.AssignmentStmt)
                    and isinstance(stmt.lvalues[0], nodes.NameExpr)
                    and _is_annotated(stmt.unanalyzed_type)
                ):
                    reducers.add(stmt.lvalues[0].name)
    return tuple(
        KeySpec(name, _show(value), _STATIC_REDUCER if name in reducers else None)
        for name, value in proper.items.items()
    )


def _static_reducer(current: Any, update: Any) -> Any:
    """Stand in for a reducer the static reader saw declared but cannot call."""
    msg = "a statically read graph cannot run"
    raise TypeError(msg)


_STATIC_REDUCER: Callable[[Any, Any], Any] = _static_reducer


def _is_annotated(unanalyzed: mypy_types.Type | None) -> bool:
    from mypy.types import UnboundType

    return (
        isinstance(unanalyzed, UnboundType)
        and unanalyzed.name.rpartition(".")[2] == "Annotated"
        and len(unanalyzed.args) >= 2
    )


def _show(typ: mypy_types.Type) -> str:
    return str(typ).replace("builtins.", "")


def _members(typ: mypy_types.Type) -> list[mypy_types.ProperType]:
    from mypy.types import UnionType, get_proper_type

    proper = get_proper_type(typ)
    if isinstance(proper, UnionType):
        return [m for item in proper.items for m in _members(item)]
    return [proper]


def _literal_names(typ: mypy_types.Type) -> tuple[str, ...] | None:
    from mypy.types import LiteralType

    names: list[str] = []
    for member in _members(typ):
        if not (isinstance(member, LiteralType) and isinstance(member.value, str)):
            return None
        if member.value not in names:
            names.append(member.value)
    return tuple(names) if names else None


def _return_type(func: mypy_nodes.FuncDef) -> mypy_types.Type | None:
    from mypy.types import CallableType, Instance, get_proper_type

    if func.unanalyzed_type is None or not isinstance(func.type, CallableType):
        return None
    ret = func.type.ret_type
    proper = get_proper_type(ret)
    if func.is_coroutine and isinstance(proper, Instance) and proper.args:
        return proper.args[-1]  # Coroutine[Any, Any, T]
    return ret


def _read_targets(typ: mypy_types.Type, names: list[str], sends: list[str], top: bool) -> bool:
    """Add the targets of ``typ`` to ``names``; return whether it was a sequence (fan-out)."""
    from mypy.types import Instance, LiteralType, NoneType

    many = False
    for member in _members(typ):
        if isinstance(member, LiteralType) and isinstance(member.value, str):
            _add(names, member.value)
        elif isinstance(member, Instance) and member.type.fullname == _SEND and member.args:
            inner = _literal_names(member.args[0])
            if inner is None:
                msg = "its return annotation has a Send whose target is not a Literal"
                raise StaticError(msg)
            for name in inner:
                _add(names, name)
                _add(sends, name)
        elif (
            top
            and isinstance(member, Instance)
            and member.type.fullname in _SEQUENCES
            and member.args
        ):
            many = True
            _read_targets(member.args[0], names, sends, top=False)
        elif isinstance(member, NoneType):
            msg = "its return annotation allows None, which is not a route; return END to finish"
            raise StaticError(msg)
        else:
            msg = f"its return annotation has {member}, which names no Literal targets"
            raise StaticError(msg)
    return many


def _router_targets(func: mypy_nodes.FuncDef) -> TargetSet:
    ret = _return_type(func)
    if ret is None:
        return TargetSet(None, problem="it has no return annotation")
    names: list[str] = []
    sends: list[str] = []
    try:
        many = _read_targets(ret, names, sends, top=True)
    except StaticError as exc:
        return TargetSet(None, problem=str(exc))
    if not names:
        return TargetSet(None, problem=f"its return annotation {ret} names no Literal targets")
    return TargetSet(tuple(names), many=many, sends=tuple(sends))


def _command_targets(func: mypy_nodes.FuncDef) -> TargetSet | None:
    from mypy.types import Instance

    ret = _return_type(func)
    if ret is None:
        return None
    commands = [m for m in _members(ret) if isinstance(m, Instance) and m.type.fullname == _COMMAND]
    if not commands:
        return None
    names: list[str] = []
    sends: list[str] = []
    try:
        for command in commands:
            _read_targets(command.args[0], names, sends, top=False)
    except StaticError as exc:
        return TargetSet(None, problem=str(exc))
    return TargetSet(tuple(names), many=False, sends=tuple(sends))


def _add(names: list[str], name: str) -> None:
    if name not in names:
        names.append(name)


# -- functions -----------------------------------------------------------------------------


def _takes_ctx(func: mypy_nodes.FuncDef) -> bool:
    from mypy import nodes

    positional = [k for k in func.arg_kinds if k in (nodes.ARG_POS, nodes.ARG_OPT, nodes.ARG_STAR)]
    return len(positional) >= 2 or nodes.ARG_STAR in positional


def _def_location(func: mypy_nodes.FuncDef, path: str) -> Location:
    return Location(path, func.line, func.column + 1)


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
