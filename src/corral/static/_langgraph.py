"""Read a module's LangGraph wiring from its source, without importing it (``lint --static``).

The builder calls are read with :mod:`ast`: ``b = StateGraph(State)`` at module level or in
a function (a factory), then ``b.add_node``, ``b.add_edge``, ``b.add_conditional_edges``,
``b.set_entry_point``/``set_finish_point``/``set_conditional_entry_point``. Names are
string constants, module-level constants, ``START``/``END``; nodes and routers are
functions or lambdas of the same file. The wiring is then replayed on a real
``StateGraph`` whose node and router functions are *stubs*: each ``def`` is compiled from
the file (at its own lines, so findings point at it) without its decorators and default
values, in a namespace holding the module's constants, so nothing of the module runs (no
import, no decorator, no body). The state schema is rebuilt from its field names, a field
annotated with a reducer (``Annotated[list, operator.add]``, ``add_messages``) keeping one.

Anything else (a node imported from another module, a graph built in a loop, a name
computed at run time) is not guessed: the file is reported with the reason, and lint
without ``--static`` reads it.
"""

from __future__ import annotations
import __future__

import ast
import importlib
import operator
import typing
from dataclasses import dataclass, field
from typing import Any

from corral.found import Target
from corral.langgraph._routes import name_of

__all__ = ["read_langgraph"]

_CALLS = frozenset(
    {"add_node", "add_edge", "add_conditional_edges", "set_entry_point", "set_finish_point"}
)


class _NeedsImport(Exception):
    """A construct whose meaning only running the module gives."""


@dataclass
class _Module:
    file: str
    tree: ast.Module
    constants: dict[str, str] = field(default_factory=dict)
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = field(default_factory=dict)
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    namespace: dict[str, Any] = field(default_factory=dict)


def read_langgraph(file: str, source: str, shown: str) -> tuple[list[Target], str | None]:
    """Return the LangGraph builders ``file`` wires, or why it needs to be imported."""
    try:
        module = _module(file, source)
        targets = []
        for scope in [module.tree.body, *[f.body for f in module.functions.values()]]:
            for name, builder in _builders(module, scope):
                targets.append(Target(name, shown, aliases=(name,), langgraph=builder))
    except _NeedsImport as exc:
        return [], str(exc)
    except SyntaxError as exc:
        return [], f"it does not parse ({exc.msg}, line {exc.lineno})"
    if not targets:
        return [], "it builds no StateGraph that its own source wires (it may import one)"
    return targets, None


def _module(file: str, source: str) -> _Module:
    from langgraph.graph import END, START
    from langgraph.types import Command, Send

    module = _Module(file, ast.parse(source, file))
    namespace: dict[str, Any] = {**vars(typing), "END": END, "START": START}
    namespace.update({"Send": Send, "Command": Command, "operator": operator})
    for stmt in module.tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            module.functions[stmt.name] = stmt
        elif isinstance(stmt, ast.ClassDef):
            module.classes[stmt.name] = stmt
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
            if isinstance(target, ast.Name) and isinstance(value, ast.Constant):
                if isinstance(value.value, str):
                    module.constants[target.id] = value.value
        elif isinstance(stmt, ast.ImportFrom) and _is_library(stmt.module or ""):
            for alias in stmt.names:  # LangGraph's own helpers (tools_condition, ToolNode)
                library = importlib.import_module(stmt.module or "")
                namespace[alias.asname or alias.name] = getattr(library, alias.name, None)
    namespace.update(module.constants)
    module.namespace = namespace
    for name, node in module.classes.items():  # LangGraph reads the nodes' annotations
        if any(isinstance(s, ast.AnnAssign) for s in node.body):
            namespace[name] = _schema(module, ast.Name(name))
    return module


def _is_library(name: str) -> bool:
    top = name.partition(".")[0]
    return top == "langgraph" or top.startswith("langchain")


def _text(module: _Module, expr: ast.expr | None) -> str:
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return expr.value
    if isinstance(expr, ast.Name):
        if expr.id in ("END", "START"):
            return "__end__" if expr.id == "END" else "__start__"
        if expr.id in module.constants:
            return module.constants[expr.id]
    line = getattr(expr, "lineno", "?")
    raise _NeedsImport(f"line {line} names a node with an expression read at run time")


def _builders(module: _Module, body: list[ast.stmt]) -> list[tuple[str, Any]]:
    from langgraph.graph import StateGraph

    found: dict[str, Any] = {}
    for stmt in body:
        if isinstance(stmt, (ast.For, ast.While)) and any(
            isinstance(n, ast.Attribute) and n.attr in _CALLS for n in ast.walk(stmt)
        ):
            raise _NeedsImport(f"line {stmt.lineno} wires the graph in a loop")
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call):
            call, target = stmt.value, stmt.targets[0]
            if name_of(call.func) == "StateGraph" and isinstance(target, ast.Name) and call.args:
                found[target.id] = StateGraph(_schema(module, call.args[0]))
        wired = stmt.value if isinstance(stmt, ast.Expr) else None
        if not (isinstance(wired, ast.Call) and isinstance(wired.func, ast.Attribute)):
            continue
        owner = wired.func.value
        if isinstance(owner, ast.Name) and owner.id in found:
            _replay(module, found[owner.id], wired)
    return list(found.items())


def _replay(module: _Module, builder: Any, call: ast.Call) -> None:
    method = call.func.attr if isinstance(call.func, ast.Attribute) else ""
    args = list(call.args)
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    if method == "add_node":
        if len(args) == 1:
            builder.add_node(_text(module, ast.Constant(name_of(args[0]))), _stub(module, args[0]))
        else:
            builder.add_node(_text(module, args[0]), _stub(module, args[1]))
    elif method == "add_edge":
        source = args[0]
        sources = (
            [_text(module, e) for e in source.elts]
            if isinstance(source, (ast.List, ast.Tuple))
            else _text(module, source)
        )
        builder.add_edge(sources, _text(module, args[1]))
    elif method in ("add_conditional_edges", "set_conditional_entry_point"):
        if method == "set_conditional_entry_point":
            args.insert(0, ast.Constant("__start__"))
        path_map = args[2] if len(args) > 2 else keywords.get("path_map")
        builder.add_conditional_edges(
            _text(module, args[0]), _stub(module, args[1]), _path_map(module, path_map)
        )
    elif method in ("set_entry_point", "set_finish_point"):
        getattr(builder, method)(_text(module, args[0]))


def _path_map(module: _Module, expr: ast.expr | None) -> Any:
    if expr is None:
        return None
    if isinstance(expr, (ast.List, ast.Tuple)):
        return [_text(module, e) for e in expr.elts]
    if isinstance(expr, ast.Dict) and all(k is not None for k in expr.keys):
        return {
            _text(module, k): _text(module, v) for k, v in zip(expr.keys, expr.values, strict=True)
        }
    raise _NeedsImport(f"line {expr.lineno} passes a path_map built at run time")


def _stub(module: _Module, expr: ast.expr) -> Any:
    """Return a function with the user's ``def`` (or lambda) as its code, never run."""
    if isinstance(expr, ast.Lambda):
        code = compile(ast.Expression(expr), module.file, "eval")
        return eval(code, dict(module.namespace))  # builds the lambda; runs none of its body
    name = name_of(expr) if isinstance(expr, ast.Name) else None
    node = module.functions.get(name or "")
    if node is None and callable(module.namespace.get(name or "")):
        return module.namespace[name or ""]  # LangGraph's own, e.g. tools_condition
    if isinstance(expr, ast.Call) and name_of(expr.func) == "ToolNode":
        from langgraph.prebuilt import ToolNode

        return ToolNode([])  # the tools do not change the wiring
    if node is None:
        raise _NeedsImport(
            f"line {expr.lineno}: {ast.unparse(expr)!r} is not a function of this file"
        )
    kind = type(node)  # an async def stays async (LangGraph awaits it)
    bare = kind(
        name=node.name,
        args=_no_defaults(node.args),
        body=node.body,
        decorator_list=[],
        returns=node.returns,
        type_comment=None,
    )
    ast.copy_location(bare, node)
    namespace = dict(module.namespace)
    flags = __future__.annotations.compiler_flag
    exec(compile(ast.Module([bare], []), module.file, "exec", flags=flags), namespace)
    return namespace[node.name]


def _no_defaults(args: ast.arguments) -> ast.arguments:
    return ast.arguments(
        args.posonlyargs,
        args.args,
        args.vararg,
        args.kwonlyargs,
        [None] * len(args.kwonlyargs),
        args.kwarg,
        [],
    )


def _schema(module: _Module, expr: ast.expr) -> Any:
    """Return a ``TypedDict`` with the state class's fields and reducers."""
    from langgraph.graph.message import add_messages

    node = module.classes.get(name_of(expr) or "")
    if node is None or not any(isinstance(s, ast.AnnAssign) for s in node.body):
        if name_of(expr) == "MessagesState":
            from langgraph.graph import MessagesState

            return MessagesState
        line = getattr(expr, "lineno", "?")
        raise _NeedsImport(f"line {line}: the state schema is not a class of this file")
    fields: dict[str, Any] = {}
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            text = ast.unparse(stmt.annotation)
            reducer = add_messages if "add_messages" in text else operator.add
            reduced = text.startswith("Annotated[") and text.count(",") >= 1
            fields[stmt.target.id] = typing.Annotated[Any, reducer] if reduced else Any
    return typing.TypedDict(node.name, fields, total=False)  # type: ignore[operator]
