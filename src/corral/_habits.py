"""LangGraph's spellings of a run's arguments, answered with corral's in one line.

A LangGraph user writes ``stream_mode=``, ``config={"configurable": {...}}``, ``context=``.
corral keeps one typed spelling for each (mypy flags the other one too); at run time the
other spelling gets :class:`~corral.errors.LangGraphArgumentError` naming corral's, instead of
Python's bare "unexpected keyword argument". None is accepted silently: ``mode="updates"``
yields ``(node, update)`` pairs where ``stream_mode="updates"`` yields ``{node: update}``,
and a ``config`` dict would bring an untyped mapping back beside the typed keywords.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from typing_extensions import ParamSpec, TypeVar

from corral.errors import LangGraphArgumentError

__all__ = ["langgraph_hints"]

P = ParamSpec("P")
R = TypeVar("R")

_INSTEAD = {
    "stream_mode": "mode=",
    "context": "deps=",
    "interrupt_before": "g.compile(interrupt_before=[...])",
    "interrupt_after": "g.compile(interrupt_after=[...])",
    "recursion_limit": "max_steps= (it counts node runs, not supersteps)",
    "config": "thread_id=, checkpoint_id= and max_steps= keywords",
}

_IDS = ("thread_id", "checkpoint_id")
_THREAD_FIRST = {
    "get_state": "get_state({})",
    "update_state": "update_state({}, values)",
    "history": "history({})",
}
"""The methods whose first argument is the thread id, where LangGraph's take the config."""


def langgraph_hints(first: int) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Return a decorator refusing LangGraph's spellings with corral's.

    ``first`` is the index (``self`` is 0) of the first positional argument where a
    LangGraph ``config`` dict may stand: 2 after ``invoke``'s input, 1 for ``get_state``.
    """

    def decorate(method: Callable[P, R]) -> Callable[P, R]:
        def check(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
            if (kwargs and not _INSTEAD.keys().isdisjoint(kwargs)) or any(
                _is_config(arg) for arg in args[first:]
            ):
                raise _hint(method.__name__, args[first:], kwargs)

        if inspect.iscoroutinefunction(method):  # stays a coroutine function to inspect

            @functools.wraps(method)
            async def achecked(*args: P.args, **kwargs: P.kwargs) -> Any:
                check(args, kwargs)
                return await method(*args, **kwargs)

            return achecked  # type: ignore[return-value]

        @functools.wraps(method)
        def checked(*args: P.args, **kwargs: P.kwargs) -> R:
            check(args, kwargs)
            return method(*args, **kwargs)

        return checked

    return decorate


def _is_config(value: object) -> bool:
    return isinstance(value, Mapping) and "configurable" in value


def _hint(method: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> LangGraphArgumentError:
    config = next((a for a in args if _is_config(a)), None)
    name = "config" if config is not None else next(k for k in kwargs if k in _INSTEAD)
    if name == "config" or (name == "context" and _is_config(kwargs[name])):
        given = config if config is not None else kwargs[name]
        return _config_hint(method, given if isinstance(given, Mapping) else {})
    instead = _INSTEAD[name]
    if name == "stream_mode" and method in ("invoke", "ainvoke"):
        instead = "stream(..., mode=...) (invoke returns a Run with .state)"
    msg = f"{method}() got {name}=, LangGraph's spelling; corral's is {instead}"
    return LangGraphArgumentError(msg, argument=name, instead=instead)


def _config_hint(method: str, config: Mapping[str, Any]) -> LangGraphArgumentError:
    """Spell the ids of a LangGraph config as corral's arguments (and nothing else of it)."""
    found = config.get("configurable")
    ids = {k: v for k, v in (found if isinstance(found, Mapping) else {}).items() if k in _IDS}
    words = [f"{key}={value!r}" for key, value in ids.items() if isinstance(value, str)]
    if isinstance(config.get("recursion_limit"), int):
        words.append(f"max_steps={config['recursion_limit']!r}")
    instead = ", ".join(words) or _INSTEAD["config"]
    if method in _THREAD_FIRST:
        thread = ids.get("thread_id")
        instead = _THREAD_FIRST[method].format(repr(thread) if isinstance(thread, str) else "t")
    msg = f"{method}() got a LangGraph config dict; corral takes {instead} instead"
    return LangGraphArgumentError(msg, argument="config", instead=instead)
