"""MemorySaver, SqliteSaver and PostgresSaver keep the same promises (checkpoint/base.py)."""

from __future__ import annotations

import datetime
import operator
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any, Literal, TypedDict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corral import (
    END,
    CheckpointError,
    ConcurrentRunError,
    End,
    Graph,
    Guard,
    MemorySaver,
    Overwrite,
    PostgresSaver,
    Send,
    SqliteSaver,
)
from corral.checkpoint import Checkpoint, Checkpointer
from corral.errors import SerializationError

Saver = MemorySaver | SqliteSaver | PostgresSaver
MakeSaver = Callable[..., Saver]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def make_saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MakeSaver]:
    """Yield a factory of fresh savers of one kind; closes what it made."""
    made: list[Saver] = []

    def make(**options: Any) -> Saver:
        saver: Saver
        if request.param == "memory":
            saver = MemorySaver(**options)
        elif request.param == "postgres":
            cluster = request.getfixturevalue("postgres_cluster")
            saver = PostgresSaver(cluster.new_database(), **options)
        else:
            saver = SqliteSaver(tmp_path / f"db{len(made)}" / "checkpoints.sqlite", **options)
        made.append(saver)
        return saver

    yield make
    for saver in made:
        saver.close()


def linear(saver: Checkpointer, n: int, *, every: int = 3, thread: str = "t") -> None:
    """Put ``n`` checkpoints of a counter; a snapshot every ``every``, writes in between."""
    state: dict[str, Any] = {"n": 0, "log": []}
    for i in range(n):
        state = {"n": i, "log": [*state["log"], f"entry {i}"]}
        saver.put(
            Checkpoint(
                thread,
                f"c{i}",
                f"c{i - 1}" if i else None,
                state if i % every == 0 else None,
                [("count", {"n": i, "log": [f"entry {i}"]})],
                {"step": i, "next": ["count"]},
            )
        )


def ids(checkpoints: list[Checkpoint]) -> list[str]:
    return [c.checkpoint_id for c in checkpoints]


def test_both_savers_satisfy_the_protocol(make_saver: MakeSaver) -> None:
    """Each saver is a Checkpointer (runtime-checkable protocol)."""
    assert isinstance(make_saver(), Checkpointer)


def test_unknown_thread_or_checkpoint_gives_empty_lists(make_saver: MakeSaver) -> None:
    """Nothing saved means nothing returned, never an error."""
    saver = make_saver()
    assert saver.chain("nobody") == []
    assert saver.checkpoints("nobody") == []
    linear(saver, 2)
    assert saver.chain("t", "no-such-id") == []


def test_chain_runs_from_the_nearest_snapshot(make_saver: MakeSaver) -> None:
    """chain() starts at the newest snapshot at or before the wanted checkpoint."""
    saver = make_saver()
    linear(saver, 8, every=3)  # snapshots at c0, c3, c6
    assert ids(saver.chain("t")) == ["c6", "c7"]
    assert ids(saver.chain("t", "c5")) == ["c3", "c4", "c5"]
    assert ids(saver.chain("t", "c3")) == ["c3"]
    assert ids(saver.chain("t", "c2")) == ["c0", "c1", "c2"]
    head = saver.chain("t", "c5")[0]
    assert head.snapshot == {"n": 3, "log": ["entry 0", "entry 1", "entry 2", "entry 3"]}


def test_checkpoint_round_trips_every_field(make_saver: MakeSaver) -> None:
    """What comes back equals what was put: ids, parent, snapshot, writes (as tuples), meta."""
    saver = make_saver()
    first = Checkpoint(
        "t",
        "a",
        None,
        {"pair": (1, 2), "tags": {"x"}, "when": None},
        [("start", {"pair": (1, 2)})],
        {"next": ["work", "work"], "sends": [Send("work", {"doc": "a.txt"})], "guards": {}},
    )
    second = Checkpoint(
        "t", "b", "a", None, [("work", {"tags": Overwrite(frozenset({"y"}))}), ("b", {})], {}
    )
    saver.put(first)
    saver.put(second)
    assert saver.checkpoints("t") == [first, second]
    assert saver.chain("t") == [first, second]
    assert isinstance(saver.chain("t")[1].writes[0], tuple)


def test_forks_keep_both_branches(make_saver: MakeSaver) -> None:
    """A checkpoint whose parent is an older one starts a branch; chain follows parent_id."""
    saver = make_saver()
    linear(saver, 5, every=10)  # only c0 is a snapshot
    saver.put(Checkpoint("t", "fork1", "c2", None, [("edit", {"n": 100})], {}, newest_read="c4"))
    saver.put(Checkpoint("t", "fork2", "fork1", None, [("count", {"n": 101})], {}))
    assert ids(saver.chain("t")) == ["c0", "c1", "c2", "fork1", "fork2"]
    assert ids(saver.chain("t", "c4")) == ["c0", "c1", "c2", "c3", "c4"]
    assert ids(saver.checkpoints("t")) == ["c0", "c1", "c2", "c3", "c4", "fork1", "fork2"]
    assert saver.chain("t")[-1].parent_id == "fork1"


def test_newest_id_names_the_newest_without_reading_it(make_saver: MakeSaver) -> None:
    """newest_id follows puts and forks, as chain(t)[-1] does; None for an unknown thread."""
    saver = make_saver()
    assert saver.newest_id("t") is None
    linear(saver, 25, every=10)
    assert saver.newest_id("t") == "c24" == saver.chain("t")[-1].checkpoint_id
    saver.put(Checkpoint("t", "fork1", "c2", None, [("edit", {"n": 100})], {}, newest_read="c24"))
    assert saver.newest_id("t") == "fork1"
    linear(saver, 3, thread="other")
    assert (saver.newest_id("t"), saver.newest_id("other"), saver.newest_id("x")) == (
        "fork1",
        "c2",
        None,
    )


def test_a_stale_parent_is_refused_by_every_saver(make_saver: MakeSaver) -> None:
    """A put against a parent that is no longer the newest raises ConcurrentRunError and
    stores nothing; a fork names the newest it read, and a stale one is refused too."""
    saver = make_saver()
    linear(saver, 5, every=10)
    with pytest.raises(ConcurrentRunError) as info:
        saver.put(Checkpoint("t", "late", "c2", None, [("edit", {"n": 100})], {}))
    assert (info.value.thread_id, info.value.expected, info.value.newest) == ("t", "c2", "c4")
    with pytest.raises(ConcurrentRunError) as info:
        saver.put(Checkpoint("t", "f", "c2", None, [], {}, newest_read="c3"))
    assert (info.value.expected, info.value.newest) == ("c3", "c4")
    with pytest.raises(ConcurrentRunError):
        saver.put(Checkpoint("t", "again", None, {"n": 0}))
    assert ids(saver.checkpoints("t")) == ["c0", "c1", "c2", "c3", "c4"]


def test_threads_are_independent(make_saver: MakeSaver) -> None:
    """Two threads may use the same checkpoint ids; each sees only its own."""
    saver = make_saver()
    linear(saver, 3, thread="x")
    linear(saver, 2, thread="y")
    assert ids(saver.checkpoints("x")) == ["c0", "c1", "c2"]
    assert ids(saver.checkpoints("y")) == ["c0", "c1"]
    assert saver.threads() == ["x", "y"]


def test_duplicate_id_is_refused(make_saver: MakeSaver) -> None:
    """A checkpoint id is unique within its thread; reuse is an error naming it."""
    saver = make_saver()
    linear(saver, 2)
    with pytest.raises(CheckpointError, match=r"'c1' already exists in thread 't'"):
        saver.put(Checkpoint("t", "c1", "c0", None, [], {}))
    with pytest.raises(CheckpointError, match=r"'c0' already exists in thread 't'"):
        saver.put(Checkpoint("t", "c0", "c1", None, [], {}))  # written after the newest
    assert ids(saver.checkpoints("t")) == ["c0", "c1"] and saver.newest_id("t") == "c1"  # type: ignore[attr-defined]


def test_unknown_parent_is_refused(make_saver: MakeSaver) -> None:
    """A parent that the thread does not have would break every later chain."""
    saver = make_saver()
    with pytest.raises(CheckpointError, match=r"parent 'ghost'.*put the parent first"):
        saver.put(Checkpoint("t", "a", "ghost", None, [], {}))
    assert saver.checkpoints("t") == []


def test_history_cannot_be_changed_through_objects(make_saver: MakeSaver) -> None:
    """Mutating what was put, or what was read, leaves the stored checkpoint alone."""
    saver = make_saver()
    state: dict[str, Any] = {"log": ["a"], "meta": {"k": [1]}}
    saver.put(Checkpoint("t", "a", None, state, [("n", {"log": ["a"]})], {"next": ["n"]}))
    state["log"].append("changed")
    state["meta"]["k"].append(2)
    read = saver.chain("t")[0]
    assert read.snapshot == {"log": ["a"], "meta": {"k": [1]}}
    assert read.snapshot is not None
    read.snapshot["log"].append("changed too")
    read.meta["next"].append("x")
    again = saver.chain("t")[0]
    assert again.snapshot == {"log": ["a"], "meta": {"k": [1]}}
    assert again.meta == {"next": ["n"]}


def test_unstorable_state_names_the_key(make_saver: MakeSaver) -> None:
    """A datetime in the state, with no serializer, fails the put and names where it is."""
    saver = make_saver()
    snapshot = {"drafts": ["a", "b", datetime.date(2026, 1, 1)]}
    with pytest.raises(SerializationError, match=r"state\['drafts'\]\[2\]") as info:
        saver.put(Checkpoint("t", "a", None, snapshot, [], {}))
    assert info.value.location == "state['drafts'][2]"
    assert saver.checkpoints("t") == []


def test_unstorable_update_names_the_node(make_saver: MakeSaver) -> None:
    """A bad value in a write names the key and the node that returned it."""
    saver = make_saver()
    with pytest.raises(SerializationError, match=r"update\['when'\] \(written by 'plan'\)"):
        saver.put(Checkpoint("t", "a", None, None, [("plan", {"when": object()})], {}))


class Dates:
    def encode(self, value: Any) -> tuple[str, Any] | None:
        if isinstance(value, datetime.date):
            return "date", value.isoformat()
        return None

    def decode(self, tag: str, data: Any) -> Any:
        return datetime.date.fromisoformat(data)


def test_serializer_hook_stores_other_types(make_saver: MakeSaver) -> None:
    """With serializer=, the saver stores and reads back values JSON cannot hold."""
    saver = make_saver(serializer=Dates())
    day = datetime.date(2026, 11, 30)
    saver.put(Checkpoint("t", "a", None, {"due": [day]}, [("plan", {"due": [day]})], {}))
    back = saver.chain("t")[0]
    assert back.snapshot == {"due": [day]}
    assert back.writes == [("plan", {"due": [day]})]


def test_unicode_and_odd_floats_survive(make_saver: MakeSaver) -> None:
    """Non-ASCII text, a lone surrogate, infinities and -0.0 come back as they went in."""
    saver = make_saver()
    state = {
        "text": "naïve 日本語 " * 40,
        "odd": "\udc80 lone",
        "floats": [float("inf"), -float("inf"), -0.0, 1e300],
    }
    saver.put(Checkpoint("t", "a", None, state, [], {}))
    back = saver.chain("t")[0].snapshot
    assert back == state
    assert back is not None
    assert str(back["floats"][2]) == "-0.0"


def test_saver_can_be_used_from_another_thread(make_saver: MakeSaver) -> None:
    """ainvoke may put from a worker thread: the saver must not be tied to its creator."""
    saver = make_saver()
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        try:
            linear(saver, 5, thread=f"w{k}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    workers = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert errors == []
    assert sorted(saver.threads()) == ["w0", "w1", "w2", "w3"]
    assert all(len(saver.checkpoints(f"w{k}")) == 5 for k in range(4))


# -- a model-based property: any tree of checkpoints, any snapshot pattern ----------------

operations = st.lists(
    st.tuples(st.integers(min_value=0, max_value=1000), st.booleans(), st.booleans()),
    min_size=1,
    max_size=25,
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(operations)
def test_chain_matches_a_model_of_the_tree(make_saver: MakeSaver, ops: list[Any]) -> None:
    """For random forks and snapshots, chain(id) is the parent path back to a snapshot."""
    saver = make_saver()
    thread = f"t{id(ops)}"
    parents: dict[str, str | None] = {}
    snapshots: set[str] = set()
    order: list[str] = []
    for k, (pick, snap, fork) in enumerate(ops):
        checkpoint_id = f"c{k}"
        parent = None if not order else (order[pick % len(order)] if fork else order[-1])
        item = "x" * 200 + str(k)  # big enough to be stored once and shared
        newest = order[-1] if order else None
        if parent != newest:
            with pytest.raises(ConcurrentRunError):
                saver.put(Checkpoint(thread, checkpoint_id, parent, None, [], {"k": k}))
        saver.put(
            Checkpoint(
                thread,
                checkpoint_id,
                parent,
                {"k": k, "items": [item] * 2} if snap else None,
                [("node", {"items": [item]})],
                {"k": k},
                newest_read=newest if parent != newest else None,
            )
        )
        parents[checkpoint_id] = parent
        if snap:
            snapshots.add(checkpoint_id)
        order.append(checkpoint_id)

    def expected(target: str) -> list[str]:
        path: list[str] = []
        current: str | None = target
        while current is not None:
            path.append(current)
            if current in snapshots:
                break
            current = parents[current]
        return path[::-1]

    assert ids(saver.checkpoints(thread)) == order
    assert ids(saver.chain(thread)) == expected(order[-1])
    for checkpoint_id in order:
        chain = saver.chain(thread, checkpoint_id)
        assert ids(chain) == expected(checkpoint_id)
        k = int(checkpoint_id[1:])
        assert chain[-1].meta == {"k": k}
        assert chain[-1].writes == [("node", {"items": ["x" * 200 + str(k)]})]
        if checkpoint_id in snapshots:
            assert chain[-1].snapshot == {"k": k, "items": ["x" * 200 + str(k)] * 2}


def big_values() -> dict[str, Any]:
    """Values large enough that SQLite splits them and stores their parts once."""
    words = [f"word {i} " + "x" * 60 for i in range(120)]
    return {
        "tuple": tuple(words),
        "set": set(words[:50]),
        "frozen": frozenset(words[50:90]),
        "bytes": bytes(range(256)) * 40,
        "int_keys": {i: w for i, w in enumerate(words[:80])},
        "tag_lookalike": {"$corral": "tuple", "v": words[:70]},
        "send": Send("work", {"docs": words}),
        "overwrite": Overwrite(words[:100]),
        "nested": {f"k{i}": {"text": w, "n": i, "flag": i % 2 == 0} for i, w in enumerate(words)},
        "long_name_keys": {("k" * 150) + str(i): "v" * 150 for i in range(3)},
        "mixed": [1, "short", "y" * 300, [words[0], 2.5], None, True] * 20,
    }


def test_big_values_of_every_kind_round_trip(make_saver: MakeSaver) -> None:
    """Large tuples, sets, bytes, non-str-key dicts, Send and Overwrite survive storage."""
    saver = make_saver()
    values = big_values()
    saver.put(Checkpoint("t", "a", None, values, [("n", values)], {"pending": values}))
    saver.put(Checkpoint("t", "b", "a", dict(values), [("n", {"tuple": values["tuple"]})], {}))
    first, second = saver.checkpoints("t")
    assert first.snapshot == values
    assert first.writes == [("n", values)]
    assert first.meta == {"pending": values}
    assert second.snapshot == values
    assert type(second.snapshot["tuple"]) is tuple
    assert type(second.snapshot["int_keys"]) is dict and 3 in second.snapshot["int_keys"]


def test_meta_keys_can_change_appear_and_disappear(make_saver: MakeSaver) -> None:
    """Each checkpoint's meta comes back whole, whatever changed since its parent."""
    saver = make_saver()
    metas: list[dict[str, Any]] = [
        {"status": "running", "next": ["a"], "steps": 1, "runs": {"a": 1}},
        {"status": "running", "next": ["a"], "steps": 2, "runs": {"a": 2}, "extra": [1]},
        {"status": "done", "next": [], "steps": 2, "runs": {"a": 2}},
        {"status": "done", "next": [], "steps": 2, "runs": {"a": 2}},
        {"steps": True, "runs": {"a": 2.0}},  # equal in Python, different in JSON
    ]
    for i, meta in enumerate(metas):
        saver.put(Checkpoint("t", f"c{i}", f"c{i - 1}" if i else None, None, [], meta))
    saver.put(Checkpoint("t", "fork", "c1", None, [], {"forked": True}, newest_read="c4"))
    back = saver.checkpoints("t")
    assert [c.meta for c in back] == [*metas, {"forked": True}]
    assert type(back[4].meta["steps"]) is bool
    assert type(back[4].meta["runs"]["a"]) is float
    assert saver.chain("t", "c3")[-1].meta == metas[3]


def test_a_list_item_changed_in_place_is_stored_as_it_is_now(make_saver: MakeSaver) -> None:
    """Snapshots of a growing list reuse stored items only while they are unchanged."""
    saver = make_saver()
    message = {"role": "user", "content": "first version " * 20}
    history: list[Any] = [message, {"role": "ai", "content": "reply " * 40}]
    saver.put(Checkpoint("t", "a", None, {"history": list(history)}, [], {}))
    message["content"] = "edited in place " * 20  # nodes should not do this; still stored right
    history.append({"role": "user", "content": "more " * 40})
    saver.put(Checkpoint("t", "b", "a", {"history": list(history)}, [], {}))
    history[1] = (1, 2)  # replaced by a value of another type
    saver.put(Checkpoint("t", "c", "b", {"history": list(history)}, [], {}))
    first, second, third = (c.snapshot for c in saver.checkpoints("t"))
    assert first is not None and second is not None and third is not None
    assert first["history"][0]["content"] == "first version " * 20
    reply = {"role": "ai", "content": "reply " * 40}
    assert second["history"] == [history[0], reply, history[2]]
    assert third["history"] == history
    assert third["history"][1] == (1, 2)


def test_an_item_changed_in_place_to_an_equal_value_of_another_type_keeps_its_type(
    make_saver: MakeSaver,
) -> None:
    """An item changed in place to values equal to the old ones (``True`` for ``1``, keys
    in another order) is stored as it is now, type for type and key for key."""
    saver = make_saver()
    item: dict[str, Any] = {"text": "x " * 100, "n": 1, "m": 2}
    saver.put(Checkpoint("t", "a", None, {"log": [item]}, [], {}))
    item["n"] = True
    item["m"] = item.pop("m") * 1.0
    saver.put(Checkpoint("t", "b", "a", {"log": [item]}, [], {}))
    back = saver.chain("t")[-1].snapshot
    assert back is not None
    assert [(k, type(v)) for k, v in back["log"][0].items()] == [
        ("text", str),
        ("n", bool),
        ("m", float),
    ]


def test_a_written_item_changed_before_the_snapshot_is_stored_as_it_is_then(
    make_saver: MakeSaver,
) -> None:
    """A snapshot re-uses what the writes since the last one stored for the very same
    message objects, but only while they are unchanged: a message edited in place after
    its write is stored as it is at the snapshot, and its write keeps the first version."""
    saver = make_saver()
    kept = {"role": "ai", "content": "kept as written " * 20}
    edited = {"role": "user", "content": "first version " * 20}
    saver.put(Checkpoint("t", "a", None, {"log": []}, [], {}))
    saver.put(Checkpoint("t", "b", "a", None, [("n", {"log": [kept]})], {}))
    saver.put(Checkpoint("t", "c", "b", None, [("n", {"log": [edited]})], {}))
    edited["content"] = "edited in place " * 20  # nodes should not do this; still stored right
    new = {"role": "ai", "content": "the snapshot's own write " * 10}
    state = {"log": [kept, edited, new]}
    saver.put(Checkpoint("t", "d", "c", state, [("n", {"log": [new]})], {}))
    back = {c.checkpoint_id: c for c in saver.checkpoints("t")}
    assert back["d"].snapshot == {"log": [kept, edited, new]}
    assert back["c"].writes == [
        ("n", {"log": [{"role": "user", "content": "first version " * 20}]})
    ]
    assert back["d"].writes == [("n", {"log": [new]})]
    assert saver.chain("t")[0].snapshot == state


def test_long_lists_read_back_in_bulk_keep_tags_escapes_and_order(make_saver: MakeSaver) -> None:
    """A list of stored items is read back whole and in order, whether or not its items
    hold tagged values, escapes, or text that looks like a tag."""
    plain = [{"role": "user", "content": f"message {i} " * 12} for i in range(40)]
    odd: list[Any] = [
        {"content": "costs $corral " * 12},
        {"content": "a tab\t and a bell \x07 " * 8},
        {"content": "a tuple inside", "pair": (1, 2), "pad": "x" * 120},
        {"content": "\u00e9t\u00e9 \U0001f99c \ud83e " * 20},
        {"$corral": "a user key", "pad": "y" * 130},
    ]
    saver = make_saver()
    state = {"plain": plain, "mixed": plain[:10] + odd + plain[10:20]}
    saver.put(Checkpoint("t", "a", None, state, [], {}))
    saver.put(Checkpoint("t", "b", "a", None, [("n", {"mixed": [odd[2]]})], {}))
    first, second = saver.chain("t")
    assert first.snapshot == state
    assert second.writes == [("n", {"mixed": [odd[2]]})]
    assert saver.chain("t")[0].snapshot == state  # read again, by the same saver


class Chat(TypedDict):
    messages: Annotated[list[dict[str, str]], operator.add]


def test_get_state_hands_over_values_the_caller_owns(make_saver: MakeSaver) -> None:
    """Two reads never share objects, so changing what get_state returned changes nothing
    stored (the built-in savers decode afresh, and get_state skips its copy for them)."""
    g = Graph(Chat, name="chat")

    @g.node(start=True, then=END)
    def reply(state: Chat) -> dict[str, object]:
        return {"messages": [{"role": "ai", "content": "hello " * 30}]}

    saver = make_saver()
    app = g.compile(checkpointer=saver)
    app.invoke({"messages": [{"role": "user", "content": "hi " * 50}]}, thread_id="t")
    first = app.get_state("t").values
    first["messages"][0]["content"] = "changed"
    first["messages"].append({"role": "user", "content": "extra"})
    again = app.get_state("t").values
    assert len(again["messages"]) == 2
    assert again["messages"][0]["content"] == "hi " * 50


class Big(TypedDict):
    text: str
    n: int


def test_a_large_value_changed_every_step_is_read_without_replaying_it(
    make_saver: MakeSaver,
) -> None:
    """Snapshots are placed by bytes too: a 2 MB string replaced every step is never replayed
    from older writes (a chain holds at most one such write after its snapshot), also when
    a new saver continues the thread."""
    size, steps = 2_000_000, 6
    g = Graph(Big, name="big")

    @g.node(start=True)
    def grow(state: Big) -> dict[str, object]:
        n = state["n"] + 1
        return {"text": f"{n:08d}" + "x" * (size - 8), "n": n}

    @g.router("grow", guards=[Guard("grow", max=50, otherwise=END)])
    def more(state: Big) -> Literal["grow"] | End:
        return "grow" if state["n"] < steps else END

    saver = make_saver()
    app = g.compile(checkpointer=saver)
    app.invoke({"text": "", "n": 0}, thread_id="t")
    later = SqliteSaver(saver.path) if type(saver) is SqliteSaver else saver
    for _ in range(3):  # a new saver (SQLite) knows the thread only from what it reads
        g.compile(checkpointer=later).update_state("t", {"text": "y" * size})
    if later is not saver:
        later.close()
    for checkpoint in saver.checkpoints("t"):
        chain = saver.chain("t", checkpoint.checkpoint_id)
        replayed = sum(len(str(u)) for c in chain[1:] for _, u in c.writes)
        assert replayed <= size + 100, (checkpoint.checkpoint_id, len(chain))
    assert app.get_state("t").values["text"] == "y" * size
