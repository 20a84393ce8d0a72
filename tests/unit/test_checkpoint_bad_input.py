"""Bad input to a checkpointer is a named error, the same in every saver (memory, SQLite,
PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from corral import CheckpointError, MemorySaver, PostgresSaver, SerializationError, SqliteSaver
from corral.checkpoint import Checkpoint
from corral.checkpoint.serde import MAX_DEPTH


def nested(levels: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(levels - 1):
        value = [value]
    return value


def cyclic() -> list[Any]:
    value: list[Any] = [1]
    value.append(value)
    return value


BAD: dict[str, tuple[dict[str, Any], str]] = {
    "deep": ({"tree": nested(500)}, "['tree']" + "[0]" * (MAX_DEPTH - 1)),
    "cycle": ({"log": ["a", cyclic()]}, "['log'][1]" + "[1]" * (MAX_DEPTH - 2)),
    "huge int": ({"v": 10**5000}, "['v']"),
    "huge int in a list": ({"v": [1, 2, -(10**4400)]}, "['v'][2]"),
}


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "memory":
        yield MemorySaver()
    elif request.param == "sqlite":
        with SqliteSaver(tmp_path / "c.sqlite") as sqlite:
            yield sqlite
    else:
        with PostgresSaver(request.getfixturevalue("postgres_url")) as postgres:
            yield postgres


@pytest.mark.parametrize("case", list(BAD))
@pytest.mark.parametrize("part", ["state", "update", "meta"])
def test_values_json_cannot_hold_are_named(saver: Any, case: str, part: str) -> None:
    """Cycles, nesting deeper than MAX_DEPTH and ints too long for JSON raise
    SerializationError at the same location in every saver; nothing is stored."""
    value, suffix = BAD[case]
    saver.put(Checkpoint("t", "0", None, {"ok": 1}))
    if part == "state":
        checkpoint = Checkpoint("t", "1", "0", value)
        where = "state"
    elif part == "update":
        checkpoint = Checkpoint("t", "1", "0", None, [("node", value)])
        where = "update"
    else:
        checkpoint = Checkpoint("t", "1", "0", None, [], value)
        where = "meta"
    with pytest.raises(SerializationError) as info:
        saver.put(checkpoint)
    assert info.value.location == where + suffix
    assert [c.checkpoint_id for c in saver.checkpoints("t")] == ["0"]
    saver.put(Checkpoint("t", "1", "0", None, [("node", {"ok": 2})]))  # the saver goes on


def test_nesting_up_to_the_limit_is_stored(saver: Any) -> None:
    """A value nested MAX_DEPTH levels deep (state included) round-trips."""
    value = {"tree": nested(MAX_DEPTH - 1)}
    saver.put(Checkpoint("t", "0", None, value, [("n", value)], value))
    (back,) = saver.chain("t")
    assert back.snapshot == value and back.writes == [("n", value)] and back.meta == value


@pytest.mark.parametrize("thread_id", [object(), 7, None, ["t"]])
def test_a_thread_id_that_is_not_a_str_is_named(saver: Any, thread_id: Any) -> None:
    """A thread id of another type is refused as such, not reported as a damaged file."""
    for call in (
        lambda: saver.chain(thread_id),
        lambda: saver.checkpoints(thread_id),
        lambda: saver.put(Checkpoint(thread_id, "1", None, {})),
    ):
        with pytest.raises(CheckpointError, match=r"thread_id=.* is an? \w+, not a str") as info:
            call()
        assert "damaged" not in str(info.value)
        kind = {object: "an object", int: "an int", type(None): "a NoneType", list: "a list"}
        assert f" is {kind[type(thread_id)]}, not a str" in str(info.value)


def test_a_thread_id_with_a_lone_surrogate_is_named(saver: Any) -> None:
    """A thread id that is not valid Unicode (a lone surrogate, as os.fsdecode makes of
    bytes that are not UTF-8) is a CheckpointError naming it in every saver and at every
    entry of a compiled graph, never a bare UnicodeEncodeError; nothing is stored."""
    from typing import TypedDict

    from corral import END, Graph

    class S(TypedDict):
        n: int

    g = Graph(S)

    @g.node(start=True, then=END)
    def step(state: S) -> dict[str, int]:
        return {"n": state["n"] + 1}

    app = g.compile(checkpointer=saver)
    bad = "t\udcff"
    queued = [] if isinstance(saver, MemorySaver) else [lambda: app.submit({"n": 1}, thread_id=bad)]
    for call in (
        *queued,
        lambda: saver.chain(bad),
        lambda: saver.checkpoints(bad),
        lambda: saver.put(Checkpoint(bad, "1", None, {})),
        lambda: app.invoke({"n": 1}, thread_id=bad),
        lambda: app.get_state(bad),
        lambda: app.history(bad),
        lambda: app.update_state(bad, {"n": 2}),
    ):
        with pytest.raises(CheckpointError) as info:
            call()
        assert "lone surrogate '\\udcff' at index 1" in str(info.value)
        assert "pass a thread id of valid text" in str(info.value)
    assert app.invoke({"n": 1}, thread_id="thé ☃").state == {"n": 2}  # valid Unicode is fine


@pytest.mark.parametrize(
    ("value", "where"),
    [
        ({"v": 10**5000}, "['v']"),
        ({"v": [1, -(10**4400)]}, "['v'][1]"),
        ({"v": [*range(20), 10**4400]}, "['v'][20]"),
        ({"v": {f"k{i}": i for i in range(9)} | {"big": 10**4400}}, "['v']['big']"),
    ],
    ids=["key", "short list", "long list", "long dict"],
)
@pytest.mark.parametrize("part", ["state", "update"])
def test_a_huge_int_is_refused_even_where_the_digit_limit_is_lifted(
    saver: Any, value: dict[str, Any], where: str, part: str
) -> None:
    """A process that called sys.set_int_max_str_digits(0) could write a number every other
    process fails to read (a file called damaged there): the saver refuses it at the put,
    in a snapshot and in a node's update, naming where it sits."""
    import sys

    if part == "state":
        checkpoint = Checkpoint("t", "0", None, value)
    else:
        checkpoint = Checkpoint("t", "0", None, None, [("node", value)])
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        with pytest.raises(SerializationError, match="more than the 4300 a JSON number") as info:
            saver.put(checkpoint)
    finally:
        sys.set_int_max_str_digits(limit)
    assert info.value.location == part + where
    assert saver.chain("t") == []


def test_a_node_writing_a_huge_int_is_stopped_at_the_put(saver: Any) -> None:
    """A node of a process that lifted the digit limit returns an int too long for JSON:
    the run stops with SerializationError naming the key and the node, and what the thread
    holds stays readable by a process with the default limit."""
    import sys
    from typing import TypedDict

    from corral import END, Graph

    class S(TypedDict):
        n: int

    g = Graph(S)

    @g.node(start=True, then=END)
    def grow(state: S) -> dict[str, int]:
        return {"n": 10**5000}

    app = g.compile(checkpointer=saver)
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        with pytest.raises(SerializationError) as info:
            app.invoke({"n": 1}, thread_id="t")
    finally:
        sys.set_int_max_str_digits(limit)
    assert info.value.location == "update['n']"
    assert "written by 'grow'" in str(info.value)
    assert app.get_state("t").values == {"n": 1}


def test_a_value_too_deep_to_store_runs_without_a_saver_and_is_named_with_one() -> None:
    """Without a checkpointer a node reads a 600-deep or cyclic value as a private copy
    (no RecursionError blamed on the node); with one, the run stops at the first put with
    SerializationError naming the key, as every saver does."""
    from typing import TypedDict

    from corral import END, Graph

    class S(TypedDict):
        v: Any
        seen: int

    g = Graph(S)

    @g.node(start=True, then=END)
    def keep(state: S) -> dict[str, Any]:
        mine = state["v"]
        assert mine is not value  # a private copy, whatever its depth
        mine.append("mine")  # changing it changes nothing the run holds
        return {"seen": len(mine)}

    app = g.compile()
    for value in (nested(600), cyclic()):
        size = len(value)
        run = app.invoke({"v": value, "seen": 0})
        assert run.status == "done" and run.state["seen"] == size + 1
        assert len(value) == size and run.state["v"] == value
    with pytest.raises(SerializationError) as info:
        g.compile(checkpointer=MemorySaver()).invoke({"v": nested(600), "seen": 0}, thread_id="t")
    assert info.value.location.startswith("state['v']")
