"""A list of messages a store decodes fresh from JSON is vouched for as flat (dicts of
scalars) only when it is, and a run continued from it still gives each node its own copy:
what a node changes in what it read never reaches the run's state or the store."""

from __future__ import annotations

import json
import operator
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, TypedDict

import pytest
from hypothesis import given
from hypothesis import strategies as st
from reopening import Opener, reopening

from corral import END, End, Graph, Guard, SqliteSaver, StepLimitError
from corral.checkpoint._stored import scalar_dicts
from corral.runtime.state import IMMUTABLE

scalars = st.one_of(
    st.text(max_size=5), st.integers(), st.floats(allow_nan=False), st.booleans(), st.none()
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=6,
)


@given(st.lists(st.dictionaries(st.text(max_size=4), json_values, max_size=4), max_size=6))
def test_dicts_parsed_from_json_are_scalar_dicts_exactly_when_their_values_are_scalars(
    items: list[dict[str, Any]],
) -> None:
    """The answer from the garbage collector's tracking equals a check of every value."""
    parsed = json.loads(json.dumps(items))
    every_value = all(type(v) in IMMUTABLE for item in parsed for v in item.values())
    assert scalar_dicts(parsed) is every_value


def test_a_dict_given_a_list_after_parsing_is_no_longer_a_scalar_dict() -> None:
    parsed = json.loads('[{"a": 1}, {"b": "x"}]')
    assert scalar_dicts(parsed)
    parsed[1]["c"] = ["nested"]
    del parsed[1]["c"]  # tracking is never dropped again: still not vouched for
    assert not scalar_dicts(parsed)


class Chat(TypedDict):
    messages: Annotated[list[dict[str, Any]], operator.add]


def message(i: int, nested: bool) -> dict[str, Any]:
    """A message long enough to be stored as its own value (``nested``: with a list)."""
    out: dict[str, Any] = {"role": "assistant", "content": f"message {i}: " + "x" * 150, "n": i}
    if nested:
        out["tags"] = ["a", str(i)]
    return out


def mutating_graph() -> Graph[Chat, Mapping[str, Any]]:
    """``chat`` changes every message it read, in place, then appends one."""
    g = Graph(Chat, name="mutating")

    @g.node(start=True, then=END)
    def chat(state: Chat) -> dict[str, object]:
        seen = state["messages"]
        for m in seen:
            m["content"] = "changed"
            if "tags" in m:
                m["tags"].append("changed")
        seen.append({"role": "user", "content": "sneaked in"})
        return {"messages": [message(len(seen) - 1, nested=False)]}

    return g


@pytest.fixture(params=["sqlite", "postgres", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    with reopening(request, tmp_path / "chat.db") as opener:
        yield opener


@pytest.mark.parametrize("nested", [False, True], ids=["flat", "nested"])
@pytest.mark.parametrize("deltas", [0, 3], ids=["at-snapshot", "after-deltas"])
def test_a_node_changing_messages_read_back_from_a_store_changes_nothing(
    store: Opener, nested: bool, deltas: int
) -> None:
    """A thread continued by a new saver: the node's changes to the messages it read (flat
    or holding lists, rebuilt from a snapshot alone or with replayed writes) reach neither
    the run's state nor the store; only its update does."""
    first = [message(i, nested and i % 2 == 1) for i in range(12)]
    g = mutating_graph()
    app = g.compile(checkpointer=store())
    app.invoke({"messages": first}, thread_id="t")
    for _ in range(deltas):
        app.invoke({"messages": []}, thread_id="t")
    before = app.get_state("t").values["messages"]
    assert len(before) == 12 + 1 + deltas

    run = g.compile(checkpointer=store()).invoke({"messages": []}, thread_id="t")

    expected = [*before, message(len(before), nested=False)]
    assert run.state["messages"] == expected
    assert g.compile(checkpointer=store()).get_state("t").values["messages"] == expected


def test_the_messages_a_sqlite_read_vouches_for_are_the_flat_ones(tmp_path: Path) -> None:
    """``Checkpoint.flat_lists`` holds the snapshot's list of messages itself when every
    message is a dict of scalars, and nothing when one holds a list."""
    path = tmp_path / "chat.db"
    g = mutating_graph()
    for thread, nested in (("flat", False), ("nested", True)):
        with SqliteSaver(path) as saver:
            messages = [message(i, nested and i == 5) for i in range(12)]
            g.compile(checkpointer=saver).invoke({"messages": messages}, thread_id=thread)
        with SqliteSaver(path) as saver:
            snapshot = saver.chain(thread)[0].snapshot
            assert snapshot is not None
            flat = saver.chain(thread)[0].flat_lists
        if nested:
            assert flat == ()
        else:
            assert len(flat) == 1 and flat[0] == snapshot["messages"]


def test_a_thread_continued_after_its_step_cap_gets_a_copy_of_the_flat_messages(
    tmp_path: Path,
) -> None:
    """``invoke(None)`` from a snapshot the store vouched for: the node's in-place change is
    its own."""

    class Loop(TypedDict):
        messages: Annotated[list[dict[str, Any]], operator.add]

    g = Graph(Loop, name="loop")

    @g.node(start=True)
    def chat(state: Loop) -> dict[str, object]:
        seen = state["messages"]
        for m in seen:
            m["content"] = "changed"
        return {"messages": [message(len(seen), nested=False)]}

    @g.router("chat", guards=[Guard("chat", max=100, otherwise=END)])
    def again(state: Loop) -> Literal["chat"] | End:
        return "chat" if len(state["messages"]) < 14 else END

    path = tmp_path / "loop.db"
    with SqliteSaver(path) as saver, pytest.raises(StepLimitError):
        first = [message(i, nested=False) for i in range(12)]
        g.compile(checkpointer=saver).invoke({"messages": first}, thread_id="t", max_steps=1)
    with SqliteSaver(path) as saver:
        run = g.compile(checkpointer=saver).invoke(None, thread_id="t")
    assert run.state["messages"] == [message(i, nested=False) for i in range(14)]
