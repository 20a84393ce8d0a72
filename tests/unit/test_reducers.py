"""The built-in reducers and Overwrite."""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Annotated, TypedDict

from corral import END, Graph, Overwrite, reducers


def test_append_adds_one_item_or_extends_with_a_list() -> None:
    """append adds a single value and extends with a list or tuple."""
    assert reducers.append(["a"], "b") == ["a", "b"]
    assert reducers.append(["a"], ["b", "c"]) == ["a", "b", "c"]
    assert reducers.append(["a"], ("b",)) == ["a", "b"]
    assert reducers.append(None, "a") == ["a"]


def test_reducers_never_change_current_in_place() -> None:
    """Every built-in reducer returns a new value and leaves its input alone."""
    items, table, tags = ["a"], {"a": 1}, {"a"}
    reducers.append(items, "b")
    reducers.add_messages(items, "b")
    reducers.merge(table, {"b": 2})
    reducers.union(tags, {"b"})
    assert (items, table, tags) == (["a"], {"a": 1}, {"a"})


def test_add_messages_appends_and_replaces_by_id() -> None:
    """A message with a known id replaces the old one in place; others are appended."""
    old = [{"id": "1", "text": "hi"}, {"id": "2", "text": "there"}]
    new = reducers.add_messages(old, [{"id": "2", "text": "THERE"}, {"id": "3", "text": "!"}])
    assert [m["text"] for m in new] == ["hi", "THERE", "!"]
    assert reducers.add_messages(old, {"text": "no id"})[-1] == {"text": "no id"}


def test_add_messages_reads_id_attributes() -> None:
    """Objects with an ``id`` attribute are matched too."""

    @dataclass
    class Msg:
        id: str
        text: str

    merged = reducers.add_messages([Msg("1", "a")], [Msg("1", "b"), Msg("2", "c")])
    assert merged == [Msg("1", "b"), Msg("2", "c")]


def test_merge_and_union() -> None:
    """merge is a shallow dict update; union adds a collection or a single item."""
    assert reducers.merge({"a": 1, "b": 2}, {"b": 3, "c": 4}) == {"a": 1, "b": 3, "c": 4}
    assert reducers.union({"a"}, ["b"]) == {"a", "b"}
    assert reducers.union({"a"}, "ab") == {"a", "ab"}
    assert reducers.union(None, {"x"}) == {"x"}


class S(TypedDict):
    messages: Annotated[list[dict[str, str]], reducers.add_messages]
    notes: Annotated[list[str], reducers.append]
    table: Annotated[dict[str, int], reducers.merge]
    tags: Annotated[set[str], reducers.union]
    total: Annotated[int, operator.add]


def test_built_in_reducers_in_a_graph_start_from_empty() -> None:
    """Each reducer key starts empty and merges node updates."""
    g = Graph(S)

    @g.node(start=True, then="second")
    def first(state: S) -> dict[str, object]:
        return {
            "messages": [{"id": "m1", "text": "draft"}],
            "notes": "one",
            "table": {"a": 1},
            "tags": "x",
            "total": 2,
        }

    @g.node(then=END)
    def second(state: S) -> dict[str, object]:
        return {
            "messages": [{"id": "m1", "text": "final"}],
            "notes": ["two", "three"],
            "table": {"b": 2},
            "tags": {"y"},
            "total": 3,
        }

    run = g.compile().invoke({})
    assert run.state == {
        "messages": [{"id": "m1", "text": "final"}],
        "notes": ["one", "two", "three"],
        "table": {"a": 1, "b": 2},
        "tags": {"x", "y"},
        "total": 5,
    }


def test_overwrite_bypasses_the_reducer() -> None:
    """Overwrite(value) replaces the value of a reducer key."""
    g = Graph(S)

    @g.node(start=True, then=END)
    def reset(state: S) -> dict[str, object]:
        return {"notes": Overwrite(["fresh"]), "total": Overwrite(0)}

    run = g.compile().invoke({"notes": ["old"], "total": 9})
    assert run.state["notes"] == ["fresh"] and run.state["total"] == 0
