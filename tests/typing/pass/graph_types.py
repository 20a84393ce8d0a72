# pyright: strict
"""The type a ``Graph`` gets from its constructor, at each level of typing effort.

Checked by ``mypy --strict`` (``mypy.ini``) and by ``tests/unit/test_typing.py``; never run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypedDict, assert_type

from corral import CompiledGraph, Graph


class State(TypedDict):
    topic: str
    score: int


class StateUpdate(TypedDict, total=False):
    topic: str
    score: int


Nodes = Literal["draft", "critique", "revise"]

# Level 0: only the state. The update and node-name types take their defaults.
plain = Graph(State)
assert_type(plain, Graph[State, Mapping[str, Any], str])
named = Graph(State, name="loop", max_steps=10)
assert_type(named, Graph[State, Mapping[str, Any], str])

# Level 1: an update schema; node returns are checked against it.
updates = Graph(State, StateUpdate)
assert_type(updates, Graph[State, StateUpdate, str])

# Level 2: node names too, passed as a TypeForm; every name is checked against them.
full = Graph(State, StateUpdate, Nodes)
assert_type(full, Graph[State, StateUpdate, Nodes])
by_keyword = Graph(State, StateUpdate, nodes=Nodes)
assert_type(by_keyword, Graph[State, StateUpdate, Nodes])
names_only = Graph(State, nodes=Nodes)
assert_type(names_only, Graph[State, Mapping[str, Any], Nodes])
names_no_updates = Graph(State, None, Nodes)
assert_type(names_no_updates, Graph[State, Mapping[str, Any], Nodes])
inline = Graph(State, StateUpdate, Literal["a", "b"])
assert_type(inline, Graph[State, StateUpdate, Literal["a", "b"]])

# The explicit forms: an annotation fills in what the call leaves to its defaults.
explicit: Graph[State, StateUpdate, Nodes] = Graph(State, StateUpdate)
assert_type(explicit, Graph[State, StateUpdate, Nodes])
short: Graph[State] = Graph(State)
assert_type(short, Graph[State, Mapping[str, Any], str])


def build() -> Graph[State, StateUpdate, Nodes]:
    """A graph built in a function and returned with its full type."""
    return Graph(State, StateUpdate, Nodes)


assert_type(build(), Graph[State, StateUpdate, Nodes])

# compile() keeps the state type.
assert_type(plain.compile(), CompiledGraph[State, Mapping[str, Any]])
assert_type(updates.compile(), CompiledGraph[State, StateUpdate])
full.compile(interrupt_before=["critique"], interrupt_after=("revise",))
