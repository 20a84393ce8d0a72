"""``Toolbox``: typed Python functions as tools a model can call.

Each function's signature becomes a pydantic model, built once when the toolbox is made:
its JSON Schema is what the model sees, and it validates a call's arguments before the
function runs. The invariant is that running a call never raises for anything the model
did or any failure of the tool: an unknown name, arguments that do not validate, an
exception inside the tool and a timeout each come back as a tool message with
``is_error: True`` that says what went wrong, so the model can repair its call. What is
raised is only what no model can repair: an ``interrupt()`` (a person must answer) and a
``GraphError`` (a defect in the program).
"""

from __future__ import annotations

import asyncio
import inspect
import re
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias, TypedDict

from corral._registry import caller_locals
from corral.agents.messages import ToolCall, ToolMessage, tool_result
from corral.errors import GraphError, ToolError
from corral.runtime.context import Context

try:
    import pydantic
    import pydantic_core
except ImportError as exc:  # pragma: no cover - the extra is part of the dev install
    msg = "corral.agents needs pydantic 2; install it with: pip install 'corral[agents]'"
    raise ImportError(msg) from exc

__all__ = ["INVALID_JSON_KEY", "ToolFunction", "ToolSchema", "Toolbox"]

if TYPE_CHECKING:
    # mypy types ``[f, g]`` of functions with different signatures as ``list[function]``,
    # which is no ``Callable``; naming it here lets ``Toolbox([f, g])`` type-check.
    from builtins import function as _AnyFunction

    ToolFunction: TypeAlias = Callable[..., Any] | _AnyFunction
else:
    ToolFunction = Callable[..., Any]

INVALID_JSON_KEY = "__invalid_json__"
"""The only key of a call's ``arguments`` when a provider sent text that is not JSON.

Adapters put the raw text there; the toolbox answers with an error message that quotes it.
"""


class ToolSchema(TypedDict):
    """What a model is told about one tool: its name, what it does and its JSON Schema."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class _Tool:
    name: str
    func: Callable[..., Any]
    description: str
    arguments: type[pydantic.BaseModel]
    """The pydantic model of the arguments the model sends (the context parameter excluded)."""
    context_param: str | None
    """The parameter that receives the node's ``Context``, if the function has one."""
    is_async: bool


class Toolbox:
    """The tools an agent can call, built from plain typed functions (sync or async).

    >>> def add(a: int, b: int) -> int:
    ...     '''Add two whole numbers.'''
    ...     return a + b
    >>> box = Toolbox([add])
    >>> box.schemas()[0]["parameters"]["properties"]
    {'a': {'type': 'integer'}, 'b': {'type': 'integer'}}
    >>> box.call({"id": "c1", "name": "add", "arguments": {"a": 2, "b": "3"}})["content"]
    '5'
    >>> box.call({"id": "c2", "name": "add", "arguments": {"a": 2}})["content"]
    "error: invalid arguments for tool 'add': b: Field required; fix them and call it again"

    A parameter annotated ``Context`` receives the node's context (``ctx.deps`` holds the
    clients passed to ``invoke``); it is not part of the schema.

    Args:
        tools: the functions; a tool's name is its function's ``__name__``, its description
            the first paragraph of its docstring, and the ``Args:`` section of the docstring
            describes its parameters.
        timeout_s: the most seconds an async tool may run before it is cancelled and its
            call answered with an error (``None``: no limit). A sync tool cannot be stopped
            safely, so it has no timeout.
    """

    def __init__(
        self,
        tools: Iterable[ToolFunction],
        *,
        timeout_s: float | None = None,
        _depth: int = 1,
    ) -> None:
        if timeout_s is not None and not timeout_s > 0:
            msg = f"timeout_s={timeout_s!r} must be a positive number of seconds, or None"
            raise ToolError(msg, tool="")
        self.timeout_s = timeout_s
        self._tools: dict[str, _Tool] = {}
        # tools defined inside a function may name its locals in their annotations
        localns = caller_locals(_depth)
        for func in tools:
            tool = _read_tool(func, localns)
            if tool.name in self._tools:
                msg = f"two tools are named {tool.name!r}; give each function its own name"
                raise ToolError(msg, tool=tool.name)
            self._tools[tool.name] = tool
        self._schemas = [_schema_of(tool) for tool in self._tools.values()]

    def __repr__(self) -> str:
        return f"Toolbox({list(self._tools)!r})"

    @property
    def names(self) -> tuple[str, ...]:
        """The tools' names, in the order they were given."""
        return tuple(self._tools)

    @property
    def is_async(self) -> bool:
        """Whether any tool is a coroutine function (its tool node is then ``async``)."""
        return any(tool.is_async for tool in self._tools.values())

    def schemas(self) -> list[ToolSchema]:
        """Return one ``{"name", "description", "parameters"}`` per tool, in order."""
        return [schema.copy() for schema in self._schemas]

    def call(self, call: ToolCall, ctx: Context[Any] | None = None) -> ToolMessage:
        """Run one call and return its tool message; a failure gives ``is_error: True``.

        An async tool is run to its end in a fresh event loop (use :meth:`acall` inside one).
        """
        tool, arguments, error = self._prepare(call, ctx)
        if error is not None:
            return error
        assert tool is not None
        if tool.is_async:
            return asyncio.run(self._await(tool, call, arguments))
        return _run_sync(tool, call, arguments)

    async def acall(self, call: ToolCall, ctx: Context[Any] | None = None) -> ToolMessage:
        """Run one call, awaiting an async tool under the toolbox's ``timeout_s``."""
        tool, arguments, error = self._prepare(call, ctx)
        if error is not None:
            return error
        assert tool is not None
        if tool.is_async:
            return await self._await(tool, call, arguments)
        return _run_sync(tool, call, arguments)

    def run(self, calls: Sequence[ToolCall], ctx: Context[Any] | None = None) -> list[ToolMessage]:
        """Run calls one after another; return their tool messages in call order."""
        return [self.call(call, ctx) for call in calls]

    async def arun(
        self, calls: Sequence[ToolCall], ctx: Context[Any] | None = None
    ) -> list[ToolMessage]:
        """Run calls concurrently; return their tool messages in call order."""
        return list(await asyncio.gather(*(self.acall(call, ctx) for call in calls)))

    def _prepare(
        self, call: ToolCall, ctx: Context[Any] | None
    ) -> tuple[_Tool | None, dict[str, Any], ToolMessage | None]:
        """Find the tool and validate the arguments, or return the error message to send."""
        tool = self._tools.get(call["name"])
        if tool is None:
            known = ", ".join(repr(name) for name in self._tools) or "none"
            text = f"unknown tool {call['name']!r}; the tools are: {known}"
            return None, {}, _error(call, text)
        raw = call.get("arguments")
        if isinstance(raw, Mapping) and set(raw) == {INVALID_JSON_KEY}:
            text = (
                f"the arguments for tool {tool.name!r} are not valid JSON: "
                f"{raw[INVALID_JSON_KEY]!r}; send a JSON object"
            )
            return tool, {}, _error(call, text)
        try:
            validated = tool.arguments.model_validate(raw if raw is not None else {})
        except pydantic.ValidationError as exc:
            text = (
                f"invalid arguments for tool {tool.name!r}: {_describe(exc)}; "
                "fix them and call it again"
            )
            return tool, {}, _error(call, text)
        arguments = {name: getattr(validated, name) for name in type(validated).model_fields}
        if tool.context_param is not None:
            arguments[tool.context_param] = ctx
        return tool, arguments, None

    async def _await(self, tool: _Tool, call: ToolCall, arguments: dict[str, Any]) -> ToolMessage:
        try:
            result = await asyncio.wait_for(tool.func(**arguments), self.timeout_s)
        except TimeoutError:
            text = (
                f"tool {tool.name!r} timed out after {self.timeout_s:g}s and was cancelled; "
                "try a smaller request, or another tool"
            )
            return _error(call, text)
        except GraphError:
            raise
        except Exception as exc:
            return _failed(call, tool, exc)
        return _answer(call, result)


def _read_tool(func: ToolFunction, localns: Mapping[str, Any] | None = None) -> _Tool:
    """Build a tool from a function's signature, type hints and docstring."""
    name = getattr(func, "__name__", None)
    if not isinstance(name, str) or not callable(func):
        msg = f"{func!r} is not a function; a tool is a plain (sync or async) function"
        raise ToolError(msg, tool=str(func))
    try:
        hints = typing.get_type_hints(func, localns=dict(localns or {}), include_extras=True)
    except Exception as exc:
        msg = f"the annotations of tool {name!r} do not resolve: {exc}"
        raise ToolError(msg, tool=name) from exc
    doc = inspect.getdoc(func) or ""
    described = _parameter_docs(doc)
    fields: dict[str, Any] = {}
    context_param = None
    for param in inspect.signature(func).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            msg = (
                f"tool {name!r} has parameter {param.name!r} of kind {param.kind.description}; "
                "a tool is called with keyword arguments only"
            )
            raise ToolError(msg, tool=name)
        hint = hints.get(param.name, inspect.Parameter.empty)
        if (typing.get_origin(hint) or hint) is Context:
            context_param = param.name
            continue
        if hint is inspect.Parameter.empty:
            msg = (
                f"parameter {param.name!r} of tool {name!r} has no type annotation; "
                "annotate it so the model knows what to send"
            )
            raise ToolError(msg, tool=name)
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (hint, pydantic.Field(default, description=described.get(param.name)))
    try:
        arguments = pydantic.create_model(
            f"{name}_arguments",
            __config__=pydantic.ConfigDict(extra="forbid", arbitrary_types_allowed=False),
            **fields,
        )
        arguments.model_json_schema()
    except Exception as exc:
        msg = f"tool {name!r} has a parameter pydantic cannot describe as JSON Schema: {exc}"
        raise ToolError(msg, tool=name) from exc
    description = doc.split("\n\n", 1)[0].strip().replace("\n", " ")
    return _Tool(
        name=name,
        func=func,
        description=description,
        arguments=arguments,
        context_param=context_param,
        is_async=inspect.iscoroutinefunction(func),
    )


_ARG_LINE = re.compile(r"^\s+(?P<name>\w+)(?:\s*\([^)]*\))?:\s*(?P<text>.*)$")


def _parameter_docs(doc: str) -> dict[str, str]:
    """Read the Google-style ``Args:`` section of a docstring: ``{parameter: description}``.

    >>> _parameter_docs("Add.\\n\\nArgs:\\n    a: the first.\\n    b (int): the\\n        second.")
    {'a': 'the first.', 'b': 'the second.'}
    """
    found: dict[str, str] = {}
    inside = False
    current: str | None = None
    found_indent = 0
    for line in doc.splitlines():
        if line.strip() in ("Args:", "Arguments:", "Parameters:"):
            inside = True
            continue
        if not inside:
            continue
        if line and not line[0].isspace():
            break
        match = _ARG_LINE.match(line)
        indent = len(line) - len(line.lstrip())
        if match and (current is None or indent <= found_indent):
            current = match["name"]
            found_indent = indent
            found[current] = match["text"].strip()
        elif current is not None and line.strip():
            found[current] = f"{found[current]} {line.strip()}".strip()
    return found


def _schema_of(tool: _Tool) -> ToolSchema:
    parameters = tool.arguments.model_json_schema()
    _drop_titles(parameters)
    return {"name": tool.name, "description": tool.description, "parameters": parameters}


def _drop_titles(schema: Any) -> None:
    """Remove pydantic's generated ``title``s (noise in a prompt), keeping property names."""
    if isinstance(schema, dict):
        if isinstance(schema.get("title"), str):
            del schema["title"]
        for key, value in schema.items():
            if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
                for sub in value.values():
                    _drop_titles(sub)
            else:
                _drop_titles(value)
    elif isinstance(schema, list):
        for item in schema:
            _drop_titles(item)


def _describe(exc: pydantic.ValidationError) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        text = f"{where}: {error['msg']}"
        if error["type"] not in ("missing", "extra_forbidden") and "input" in error:
            text += f" (got {error['input']!r})"
        parts.append(text)
    return "; ".join(parts)


def _answer(call: ToolCall, result: Any) -> ToolMessage:
    """Return the tool message for a result: a str as it is, anything else as JSON."""
    if isinstance(result, str):
        content = result
    else:
        try:
            content = pydantic_core.to_json(result).decode()
        except Exception:
            content = repr(result)
    return tool_result(call["id"], content)


def _run_sync(tool: _Tool, call: ToolCall, arguments: dict[str, Any]) -> ToolMessage:
    """Run a sync tool: its result, or the error the model reads (graph errors go on up)."""
    try:
        result = tool.func(**arguments)
    except GraphError:
        raise
    except Exception as exc:
        return _failed(call, tool, exc)
    return _answer(call, result)


def _failed(call: ToolCall, tool: _Tool, exc: Exception) -> ToolMessage:
    detail = f": {exc}" if str(exc) else ""
    return _error(call, f"tool {tool.name!r} raised {type(exc).__name__}{detail}")


def _error(call: ToolCall, text: str) -> ToolMessage:
    return tool_result(call["id"], f"error: {text}", is_error=True)
