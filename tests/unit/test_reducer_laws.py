"""Laws of the built-in reducers, checked on random values.

Merging in one superstep applies updates one at a time, in registration order; these laws
are what make that safe: folding two updates one after the other equals folding their
combination (associativity), an empty update changes nothing, and ``current`` is never
changed in place (a node may still hold it).
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from corral import reducers

LAWS = settings(max_examples=200, deadline=None)

items = st.lists(st.integers(-5, 5), max_size=6)
mappings = st.dictionaries(st.sampled_from("abcde"), st.integers(), max_size=5)
sets = st.sets(st.integers(-5, 5), max_size=6)


@st.composite
def message_lists(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Draw chat messages; ids are unique within one list, and some messages have none."""
    ids = draw(st.lists(st.sampled_from("123456"), unique=True, max_size=4))
    out: list[dict[str, Any]] = [{"id": i, "text": draw(st.text("xyz", max_size=2))} for i in ids]
    out += [{"text": t} for t in draw(st.lists(st.text("xyz", max_size=2), max_size=2))]
    return draw(st.permutations(out))


@LAWS
@given(current=items, first=items, second=items)
def test_append_folds_like_one_combined_update(
    current: list[int], first: list[int], second: list[int]
) -> None:
    """Appending two updates in turn equals appending their concatenation."""
    one_by_one = reducers.append(reducers.append(current, first), second)
    combined = reducers.append(current, reducers.append(first, second))
    assert one_by_one == combined == current + first + second


@LAWS
@given(current=mappings, first=mappings, second=mappings)
def test_merge_is_associative_and_empty_is_identity(
    current: dict[str, int], first: dict[str, int], second: dict[str, int]
) -> None:
    """Merging dicts is associative, and an empty dict changes nothing."""
    left = reducers.merge(reducers.merge(current, first), second)
    right = reducers.merge(current, reducers.merge(first, second))
    assert left == right
    assert reducers.merge(current, {}) == current


@LAWS
@given(current=sets, first=sets, second=sets)
def test_union_is_associative_commutative_and_idempotent(
    current: set[int], first: set[int], second: set[int]
) -> None:
    """The order of set updates never matters, and repeating one changes nothing."""
    left = reducers.union(reducers.union(current, first), second)
    assert left == reducers.union(reducers.union(current, second), first)
    assert left == reducers.union(current, reducers.union(first, second))
    assert reducers.union(left, first) == left


@LAWS
@given(current=message_lists(), first=message_lists(), second=message_lists())
def test_add_messages_folds_like_one_combined_update(
    current: list[dict[str, Any]], first: list[dict[str, Any]], second: list[dict[str, Any]]
) -> None:
    """Two message updates in turn give what their combination gives, ids replaced in place."""
    one_by_one = reducers.add_messages(reducers.add_messages(current, first), second)
    combined = reducers.add_messages(current, reducers.add_messages(first, second))
    assert one_by_one == combined
    ids = [m["id"] for m in one_by_one if "id" in m]
    assert len(ids) == len(set(ids))
    assert reducers.add_messages(current, []) == current


@LAWS
@given(current=items, update=items, mapping=mappings, other=mappings, bag=sets, more=sets)
def test_reducers_leave_current_untouched(
    current: list[int],
    update: list[int],
    mapping: dict[str, int],
    other: dict[str, int],
    bag: set[int],
    more: set[int],
) -> None:
    """No reducer changes the value it merges into (a node may still be reading it)."""
    before = copy.deepcopy((current, mapping, bag))
    reducers.append(current, update)
    reducers.add_messages(current, update)
    reducers.merge(mapping, other)
    reducers.union(bag, more)
    assert (current, mapping, bag) == before
