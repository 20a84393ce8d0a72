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
_CONFIG_KEYS = {"thread_id": "thread_id", "checkpoint_id": "checkpoint_id"}


def langgraph_hints(first: int) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Return a decorator refusing LangGraph's spellings with corral's.

    ``first`` is the index (``self`` is 0) of the first positional argument where a
    LangGraph ``config`` dict may stand: 2 after ``invoke``'s input, 1 for ``get_state``.
    """

    def decorate(method: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(method)
        def checked(*args: P.args, **kwargs: P.kwargs) -> R:
            if (kwargs and not _INSTEAD.keys().isdisjoint(kwargs)) or any(
                _is_config(arg) for arg in args[first:]
            ):
                raise _hint(method.__name__, args[first:], kwargs)
            return method(*args, **kwargs)

        return checked

    return decorate


def _is_config(value: object) -> bool:
    return isinstance(value, Mapping) and "configurable" in value


def _hint(method: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> LangGraphArgumentError:
    config = next((a for a in args if _is_config(a)), None)
    name = "config" if config is not None else next(k for k in kwargs if k in _INSTEAD)
    if name == "config" or (name == "context" and _is_config(kwargs[name])):
        config = config if config is not None else kwargs[name]
        return _config_hint(method, config)
    instead = _INSTEAD[name]
    if name == "stream_mode" and method in ("invoke", "ainvoke"):
        instead = "stream(..., mode=...) (invoke returns a Run with .state)"
    msg = f"{method}() got {name}=, LangGraph's spelling; corral's is {instead}"
    return LangGraphArgumentError(msg, argument=name, instead=instead)


def _config_hint(method: str, config: Any) -> LangGraphArgumentError:
    """Spell the ids of a LangGraph config as corral keywords (and nothing else of it)."""
    configurable = config.get("configurable", {}) if isinstance(config, Mapping) else {}
    words = [
        f"{word}={configurable[key]!r}"
        for key, word in _CONFIG_KEYS.items()
        if isinstance(configurable, Mapping) and isinstance(configurable.get(key), str)
    ]
    if isinstance(config, Mapping) and isinstance(config.get("recursion_limit"), int):
        words.append(f"max_steps={config['recursion_limit']!r}")
    instead = ", ".join(words) or _INSTEAD["config"]
    first = "thread_id, " if method in ("get_state", "update_state") else ""
    msg = f"{method}() got a LangGraph config dict; corral takes {first}{instead} instead"
    return LangGraphArgumentError(msg, argument="config", instead=instead)
