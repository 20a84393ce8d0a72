"""The shape of a checkpoint's ``meta``, checked where a saver reads a checkpoint back.

A row edited by hand or damaged on disk (``"next": 5``) would otherwise surface as a bare
``TypeError`` deep in the engine; the store reports a damaged checkpoint instead, naming
it. Only a meta the engine wrote (it has the ``format`` key) is checked, any JSON being
storable; keys are optional (older files lack some) and unknown keys allowed.
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable
from typing import Any, Final

Check = Callable[[Any], bool]


def _int(value: Any) -> bool:
    return type(value) is int


def _str(value: Any) -> bool:
    return type(value) is str


def _list_of(item: Check) -> Check:
    return lambda value: type(value) is list and all(item(x) for x in value)


def _dict_of(item: Check) -> Check:
    return lambda value: type(value) is dict and all(item(x) for x in value.values())


def _task(value: Any) -> bool:
    """A task to run next or a finished task: an object naming its node (and its position)."""
    return type(value) is dict and _str(value.get("node")) and _int(value.get("task", 0))


def _guard(value: Any) -> bool:
    return type(value) is list and len(value) == 3 and all(map(_str, value[:2])) and _int(value[2])


_SHAPES: Final[dict[str, tuple[Check, str]]] = {
    "format": (_int, "an int"),
    "seq": (_int, "an int"),
    "run": (_int, "an int"),
    "steps": (_int, "an int"),
    "supersteps": (_int, "an int"),
    "since_snapshot": (_int, "an int"),
    "status": (_str, "a string"),
    "source": (_str, "a string"),
    "fingerprint": (_str, "a string"),
    "next": (_list_of(_task), "a list of tasks ({'node': ...})"),
    "runs": (_dict_of(_int), "an object of run counts"),
    "guards": (_list_of(_guard), "a list of [source, target, count]"),
    "interrupts": (_list_of(_task), "a list of pauses ({'task': ..., 'node': ...})"),
    "arrived": (_dict_of(_list_of(_str)), "an object of node-name lists"),
    "held": (_list_of(lambda _: True), "a list"),
    "answers": (_dict_of(_list_of(lambda _: True)), "an object of lists"),
    "done": (_list_of(_task), "a list of finished tasks"),
    "reroute": (_list_of(_task), "a list of finished tasks"),
    "reducers": (_dict_of(_str), "an object of reducer names"),
}
"""Each key the engine reads from ``meta``: the check its value must pass, and its shape."""


def meta_problem(meta: dict[str, Any]) -> str | None:
    """Return what is wrong with an engine-written ``meta`` (its first wrong key), or ``None``.

    >>> meta_problem({"format": 1, "next": [{"node": "draft"}], "steps": 2})
    >>> meta_problem({"format": 1, "next": 5})
    "its meta 'next' is 5, not a list of tasks ({'node': ...})"
    >>> meta_problem({"next": 5})  # not the engine's: any JSON is stored and read back
    """
    if "format" not in meta:
        return None
    for key, (fits, shape) in _SHAPES.items():
        if key in meta and not fits(meta[key]):
            return f"its meta {key!r} is {reprlib.repr(meta[key])}, not {shape}"
    return None
