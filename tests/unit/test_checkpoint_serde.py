"""The checkpoint encoding: lossless for corral's values, JSON only, clear about the rest."""

from __future__ import annotations

import dataclasses
import datetime
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corral import CheckpointError, Overwrite, Send
from corral.checkpoint.serde import TAG, Serializer, decode, encode
from corral.errors import SerializationError

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | st.binary(max_size=8)
)
hashables = st.recursive(
    scalars,
    lambda inner: st.tuples(inner, inner) | st.frozensets(inner, max_size=3),
    max_leaves=6,
)


def _containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return (
        st.lists(inner, max_size=4)
        | st.tuples(inner)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=6), inner, max_size=4)
        | st.dictionaries(hashables, inner, max_size=3)
        | st.dictionaries(st.sampled_from([TAG, "v", "x"]), inner, max_size=3)
        | st.sets(hashables, max_size=3)
        | st.frozensets(hashables, max_size=3)
        | st.builds(Overwrite, inner)
        | st.builds(Send, st.sampled_from(["work", "edit"]), inner)
    )


values = st.recursive(scalars | hashables, _containers, max_leaves=20)


def same(a: Any, b: Any) -> bool:
    """Return whether ``a`` and ``b`` are equal with the same types all the way down."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(v, b[k]) for k, v in a.items())
    if isinstance(a, Overwrite):
        return same(a.value, b.value)
    if isinstance(a, Send):
        return a.node == b.node and same(a.arg, b.arg)
    return bool(a == b)  # sets, frozensets and scalars: == is exact for the types above


@settings(max_examples=150, deadline=None)
@given(values)
def test_round_trip_keeps_values_and_types(value: Any) -> None:
    """decode(encode(x)) equals x with the same types, also after a trip through JSON text."""
    tree = encode(value)
    assert same(decode(tree), value)
    assert same(decode(json.loads(json.dumps(tree))), value)


@settings(max_examples=50, deadline=None)
@given(values)
def test_encoding_is_plain_json(value: Any) -> None:
    """The encoded tree holds only JSON types: dicts with str keys, lists and scalars."""

    def plain(tree: Any) -> bool:
        if isinstance(tree, dict):
            return all(type(k) is str and plain(v) for k, v in tree.items())
        if isinstance(tree, list):
            return all(plain(x) for x in tree)
        return tree is None or type(tree) in (str, int, float, bool)

    assert plain(encode(value))


def test_tags_are_readable() -> None:
    """Each non-JSON value gets a small tagged object a person can read in the database."""
    assert encode((1, "a")) == {TAG: "tuple", "v": [1, "a"]}
    assert encode({2: "b"}) == {TAG: "dict", "v": [[2, "b"]]}
    assert encode(Overwrite([])) == {TAG: "overwrite", "v": []}
    assert encode(Send("work", {"doc": 1})) == {TAG: "send", "node": "work", "v": {"doc": 1}}
    assert encode({"plain": [1, 2.5, None, True]}) == {"plain": [1, 2.5, None, True]}


def test_user_dict_cannot_pose_as_a_tag() -> None:
    """A dict that happens to hold the tag key comes back as that dict, not as a tuple."""
    tricky = {TAG: "tuple", "v": [1, 2]}
    assert decode(encode(tricky)) == tricky
    assert type(decode(encode(tricky))) is dict
    reference_lookalike = {TAG: 7}
    assert decode(encode(reference_lookalike)) == reference_lookalike


def test_unstorable_value_names_the_key_and_index() -> None:
    """A value JSON cannot hold raises SerializationError with its path and the fix."""
    state = {"drafts": ["a", "b", datetime.date(2026, 1, 2)]}
    with pytest.raises(SerializationError) as info:
        encode(state, where="state")
    err = info.value
    assert err.location == "state['drafts'][2]"
    assert err.value_type is datetime.date
    assert "state['drafts'][2]" in str(err)
    assert "serializer=" in str(err)
    assert isinstance(err, CheckpointError) and isinstance(err, TypeError)


@pytest.mark.parametrize(
    ("value", "location"),
    [
        ({"k": (1, object())}, "state['k'][1]"),
        ({"k": {"inner": {"deep": [0, {1j}]}}}, "state['k']['inner']['deep'][1]<item 1j>"),
        ({"k": Overwrite([lambda: 1])}, "state['k'].value[0]"),
        ({"k": Send("work", {"when": datetime.time()})}, "state['k'].arg['when']"),
        ({"k": {3: [object()]}}, "state['k'][3][0]"),
        ({"k": {(1, 1j): "a"}}, "state['k']<key (1, 1j)>[1]"),
    ],
)
def test_location_follows_every_container(value: Any, location: str) -> None:
    """The path in the message follows lists, dicts, sets, Overwrite and Send."""
    with pytest.raises(SerializationError) as info:
        encode(value, where="state")
    assert info.value.location == location


def test_location_follows_a_serializers_data() -> None:
    """A value inside the data a serializer returned is named through the value it stands
    for, at its place in the container."""
    bad = {"notes": [Note("hi", datetime.datetime(2026, 1, 1), ("a", 1j))]}
    with pytest.raises(SerializationError) as info:
        encode(bad, serializer=Notes(), where="state")
    assert info.value.location == "state['notes'][0]['tags'][1]"


@pytest.mark.parametrize(
    ("value", "location"),
    [
        ({"k": {10**5000}}, "state['k']<item <int object>>"),
        ({"k": {10**5000: "a"}}, "state['k']<key <int object>>"),
    ],
)
def test_a_place_named_by_a_value_without_a_repr_is_still_named(value: Any, location: str) -> None:
    """An int too long to print (or a failing repr) in a set or as a key: the error is
    still a SerializationError, the place shown as the value's type."""
    with pytest.raises(SerializationError) as info:
        encode(value, where="state")
    assert info.value.location == location


def test_owner_appears_in_the_message() -> None:
    """An update's error also names the node that wrote it."""
    with pytest.raises(SerializationError, match=r"update\['x'\] \(written by 'draft'\)"):
        encode({"x": object()}, where="update", owner="written by 'draft'")


def test_subclasses_of_json_types_are_not_silently_flattened() -> None:
    """A str or int subclass (an enum, say) would come back as a plain str: refuse it."""
    import enum

    class Colour(enum.StrEnum):
        RED = "red"

    with pytest.raises(SerializationError, match="Colour"):
        encode({"c": Colour.RED}, where="state")


@dataclasses.dataclass
class Note:
    text: str
    when: datetime.datetime
    tags: tuple[str, ...] = ()


class Notes:
    """A serializer for datetimes and ``Note`` dataclasses (the documented pattern)."""

    def encode(self, value: Any) -> tuple[str, Any] | None:
        if isinstance(value, datetime.datetime):
            return "datetime", value.isoformat()
        if isinstance(value, Note):
            return "note", dataclasses.asdict(value) | {"tags": value.tags}
        return None

    def decode(self, tag: str, data: Any) -> Any:
        if tag == "datetime":
            return datetime.datetime.fromisoformat(data)
        if tag == "note":
            return Note(**data)
        raise ValueError(f"unknown tag {tag!r}")


def test_serializer_stores_datetimes_and_dataclasses() -> None:
    """A serializer's data is encoded in turn, so a dataclass may hold datetimes and tuples."""
    when = datetime.datetime(2026, 11, 30, 8, 0, tzinfo=datetime.UTC)
    value = {"notes": [Note("hi", when, ("a", "b"))], "at": when}
    assert isinstance(Notes(), Serializer)
    tree = json.loads(json.dumps(encode(value, serializer=Notes())))
    back = decode(tree, serializer=Notes())
    assert back == value
    assert back["notes"][0].tags == ("a", "b")


def test_reading_serializer_values_needs_the_serializer() -> None:
    """Without the serializer that wrote a value, reading it says what to pass."""
    tree = encode({"at": datetime.datetime(2026, 1, 1)}, serializer=Notes())
    with pytest.raises(CheckpointError, match=r"tag 'datetime'.*serializer="):
        decode(tree, where="state")


def test_serializer_that_declines_falls_back_to_the_error() -> None:
    """A serializer returning None for a value leaves the usual error."""
    with pytest.raises(SerializationError, match="complex"):
        encode({"z": 1j}, serializer=Notes(), where="state")


def test_broken_serializer_is_reported_with_the_location() -> None:
    """An exception in the serializer's encode() names the value's place."""

    class Broken:
        def encode(self, value: Any) -> tuple[str, Any] | None:
            raise RuntimeError("boom")

        def decode(self, tag: str, data: Any) -> Any:
            return data

    with pytest.raises(SerializationError, match=r"state\['z'\].*boom") as info:
        encode({"z": 1j}, serializer=Broken(), where="state")
    assert isinstance(info.value.__cause__, RuntimeError)


def test_serializer_returning_the_same_type_is_refused() -> None:
    """encode() must make progress; returning the value itself would loop forever."""

    class Lazy:
        def encode(self, value: Any) -> tuple[str, Any] | None:
            return "same", value

        def decode(self, tag: str, data: Any) -> Any:
            return data

    with pytest.raises(SerializationError, match="JSON-friendly"):
        encode({"z": 1j}, serializer=Lazy(), where="state")


def test_unknown_tag_is_a_clear_error() -> None:
    """A tag this corral does not know (a newer writer) is refused, never guessed."""
    with pytest.raises(CheckpointError, match=r"'pickle'.*corral version"):
        decode({TAG: "pickle", "v": "gASV..."})


def test_decoded_values_are_fresh_objects() -> None:
    """Decoding the same tree twice gives objects that share nothing mutable."""
    tree = encode({"items": [[1], {"a": [2]}]})
    first, second = decode(tree), decode(tree)
    first["items"][0].append(99)
    first["items"][1]["a"].append(99)
    assert second == {"items": [[1], {"a": [2]}]}


def test_set_encoding_is_stable() -> None:
    """Sets encode in sorted order when they can, so equal states give equal bytes."""
    assert encode({"b", "a", "c"}) == {TAG: "set", "v": ["a", "b", "c"]}
    mixed = encode({1, "a"})
    assert sorted(map(str, mixed["v"])) == ["1", "a"]
