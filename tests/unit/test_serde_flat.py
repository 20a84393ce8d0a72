"""The encoder's fast paths for flat containers (long lists of scalars or of flat dicts, dicts
of str values) store and refuse exactly what the general path does, and copy what they take."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corral import MemorySaver, SerializationError, SqliteSaver
from corral.checkpoint import Checkpoint
from corral.checkpoint.serde import MAX_DEPTH, TAG, decode, encode

HUGE = 10**4300
"""The least int with too many digits to store."""

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=5)
    | st.sampled_from([HUGE - 1, -HUGE + 1])
)
unstorable = st.sampled_from([HUGE, -HUGE, b"x", (1,), datetime.date(2026, 1, 2), object()])
keys = st.text(max_size=4) | st.sampled_from([TAG, 1, None])
flat_dicts = st.dictionaries(keys, scalars | unstorable, max_size=3)
items = scalars | flat_dicts | unstorable
long_lists = (
    st.lists(scalars, min_size=8, max_size=24)
    | st.lists(st.dictionaries(keys, scalars, max_size=3), min_size=8, max_size=24)
    | st.lists(items, min_size=8, max_size=24)
)


def same(a: Any, b: Any) -> bool:
    """Return whether ``a`` and ``b`` are equal with the same types all the way down."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(v, b[k]) for k, v in a.items())
    return bool(a == b)


def item_error(item: Any, where: str) -> str | None:
    """Return the location the encoder names for ``item`` alone, ``None`` when it stores."""
    try:
        encode(item, where=where, depth=1)
    except SerializationError as err:
        return err.location
    return None


@settings(max_examples=300, deadline=None)
@given(long_lists)
def test_long_list_stores_and_refuses_as_its_items_do(value: list[Any]) -> None:
    """A long list's tree is its items' trees, its error the first bad item's, by index."""
    errors = [item_error(x, f"state['log'][{i}]") for i, x in enumerate(value)]
    bad = [e for e in errors if e is not None]
    if bad:
        with pytest.raises(SerializationError) as info:
            encode({"log": value}, where="state")
        assert info.value.location == bad[0]
        return
    tree = encode(value)
    assert same(tree, [encode(x, depth=1) for x in value])
    assert same(decode(tree), value)
    assert tree is not value
    assert not any(t is x for t, x in zip(tree, value, strict=True) if isinstance(x, dict))


def test_a_flat_list_keeps_bools_and_floats_apart_from_ints() -> None:
    value = [True, 1, 1.0, False, 0, None, "1"] * 3
    assert same(decode(encode(value)), value)
    messages = [{"n": 1, "ok": True, "x": 1.0}] * 10
    assert same(decode(encode(messages)), messages)


def test_dicts_holding_the_tag_key_or_other_keys_in_a_long_list_come_back_as_they_were() -> None:
    for odd in ({TAG: 1}, {TAG: "tuple", "v": [1]}, {1: "a"}, {None: 2, "k": 3}):
        value = [{"role": "user"}] * 9 + [odd]
        assert same(decode(encode(value)), value)
        assert encode(value)[-1] == encode(odd)


def test_a_huge_int_among_many_is_named() -> None:
    with pytest.raises(SerializationError, match="digits") as info:
        encode({"log": [*range(20), HUGE, 3]}, where="state")
    assert info.value.location == "state['log'][20]"
    with pytest.raises(SerializationError, match="digits") as info:
        encode({"a": 1, "b": HUGE, "c": "x"}, where="meta")
    assert info.value.location == "meta['b']"
    assert encode({"a": 1, "b": HUGE - 1}) == {"a": 1, "b": HUGE - 1}
    rows = [{"n": i} for i in range(10)] + [{"n": -HUGE}]
    with pytest.raises(SerializationError) as info:
        encode({"rows": rows}, where="state")
    assert info.value.location == "state['rows'][10]['n']"


def test_a_long_list_of_dicts_too_deep_is_refused_like_a_short_one() -> None:
    """The dicts of a list nested MAX_DEPTH - 1 levels deep are one level too deep."""
    for count in (1, 10):
        value: Any = [{"a": "b"}] * count
        for _ in range(MAX_DEPTH - 1):
            value = [value]
        with pytest.raises(SerializationError, match="nested more than"):
            encode(value)
        encode(value[0])  # one level less is stored


def history(n: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"message {i}"} for i in range(n)]


def test_memory_saver_keeps_its_own_copy_of_a_flat_snapshot() -> None:
    """Mutating what was put, or what a read returned, never changes the stored checkpoint."""
    saver = MemorySaver()
    messages, log = history(30), list(range(30))
    update = {"messages": history(1)}
    saver.put(Checkpoint("t", "1", None, {"messages": messages, "log": log}, [("n", update)]))
    messages[3]["content"] = "changed"
    messages.append({"role": "x", "content": "y"})
    log[0] = 99
    update["messages"][0]["role"] = "changed"
    (read,) = saver.chain("t")
    assert read.snapshot == {"messages": history(30), "log": list(range(30))}
    assert read.writes == [("n", {"messages": history(1)})]
    assert read.snapshot is not None
    read.snapshot["messages"][0]["content"] = "mutated after the read"
    read.snapshot["log"].clear()
    (again,) = saver.chain("t")
    assert again.snapshot == {"messages": history(30), "log": list(range(30))}


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_bad_value_in_a_long_list_is_named_by_every_saver(kind: str, tmp_path: Path) -> None:
    saver = MemorySaver() if kind == "memory" else SqliteSaver(tmp_path / "c.sqlite")
    messages: list[Any] = history(30)
    messages[17] = {"role": "user", "content": datetime.date(2026, 1, 2)}
    try:
        with pytest.raises(SerializationError) as info:
            saver.put(Checkpoint("t", "1", None, {"messages": messages}))
        assert info.value.location == "state['messages'][17]['content']"
        with pytest.raises(SerializationError, match=r"written by 'chat'") as info:
            saver.put(Checkpoint("t", "1", None, {}, [("chat", {"messages": messages})]))
        assert "['messages'][17]['content']" in (info.value.location or "")
    finally:
        saver.close()
