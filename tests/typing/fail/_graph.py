"""The graph the failing cases share: state, update schema and node names."""

from __future__ import annotations

from typing import Literal, TypedDict

from corral import Graph


class State(TypedDict):
    score: int
    drafts: list[str]


class StateUpdate(TypedDict, total=False):
    score: int
    drafts: list[str]


class OtherState(TypedDict):
    user: str


Nodes = Literal["draft", "critique", "revise", "work"]

g = Graph(State, StateUpdate, Nodes)
loose = Graph(State)


class Document(TypedDict):
    """What a `Send` hands to the node it runs."""

    name: str
    text: str
