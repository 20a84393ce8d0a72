"""A parent chain that loops or breaks is a named CheckpointError on every saver, never a
hang (API.md section 14; issue 27: PostgreSQL's recursive query used to run until the disk
was full). Only damage makes such a chain: the savers refuse an unknown parent on put, so
the tests damage what was stored, by SQL (or, for MemorySaver, its dict)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypedDict

import pytest

from corral import END, CheckpointError, Graph, MemorySaver, PostgresSaver, SqliteSaver
from corral.checkpoint import Checkpoint


class Count(TypedDict):
    n: int


def counting() -> Graph[Count, Any]:
    g = Graph(Count, name="count")

    @g.node(start=True, then=END)
    def add(state: Count) -> Count:
        return {"n": state["n"] + 1}

    return g


def written(saver: Any) -> None:
    """Put c0 (a snapshot), c1 and c2 (writes only), as a run does."""
    saver.put(Checkpoint("t", "c0", None, {"n": 0}, [], {"i": 0}))
    saver.put(Checkpoint("t", "c1", "c0", None, [("add", {"n": 1})], {"i": 1}))
    saver.put(Checkpoint("t", "c2", "c1", None, [("add", {"n": 2})], {"i": 2}))


DAMAGE = {  # checkpoint -> the parent it is given
    "its own parent": {"c2": "c2"},
    "a loop of two": {"c1": "c2"},
    "a missing parent": {"c1": "gone"},
}

Damage = Callable[[dict[str, str]], None]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def damaged(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Any, Damage]]:
    """Yield a saver holding :func:`written`'s thread, and a function that re-parents rows."""
    saver: Any
    if request.param == "memory":
        saver = MemorySaver()
        written(saver)

        def damage(parents: dict[str, str]) -> None:
            for child, parent in parents.items():
                saver.connection.execute(
                    "UPDATE corral_checkpoints SET parent_id = ? WHERE checkpoint_id = ?",
                    (parent, child),
                )

    elif request.param == "sqlite":
        path = tmp_path / "c.sqlite"
        saver = SqliteSaver(path)
        written(saver)

        def damage(parents: dict[str, str]) -> None:
            with sqlite3.connect(path) as conn:
                for child, parent in parents.items():
                    conn.execute(
                        "UPDATE corral_checkpoints SET parent_id = ? WHERE checkpoint_id = ?",
                        (parent, child),
                    )

    else:
        import psycopg

        url = request.getfixturevalue("postgres_cluster").new_database()
        saver = PostgresSaver(url)
        written(saver)

        def damage(parents: dict[str, str]) -> None:
            with psycopg.connect(url, autocommit=True) as conn:
                for child, parent in parents.items():
                    conn.execute(
                        "UPDATE corral_checkpoints SET parent_id = %s WHERE checkpoint_id = %s",
                        (parent, child),
                    )

    yield saver, damage
    saver.close()


@pytest.mark.parametrize("case", list(DAMAGE))
def test_a_damaged_parent_chain_is_named_by_every_read(
    damaged: tuple[Any, Damage], case: str
) -> None:
    """chain, get_state, history and invoke each raise CheckpointError naming the thread and
    a checkpoint of the damage; none hangs."""
    saver, damage = damaged
    damage(DAMAGE[case])
    app = counting().compile(checkpointer=saver)
    reads: list[Callable[[], object]] = [
        lambda: saver.chain("t"),
        lambda: app.get_state("t"),
        lambda: app.history("t"),
        lambda: app.invoke(None, thread_id="t"),
    ]
    for read in reads:
        with pytest.raises(CheckpointError) as info:
            read()
        message = str(info.value)
        assert "'t'" in message and ("'c1'" in message or "'c2'" in message), message


def test_a_chain_that_ends_at_a_snapshot_before_the_damage_reads(
    damaged: tuple[Any, Damage],
) -> None:
    """Damage above the nearest snapshot is never walked: c0 reads as it was put."""
    saver, damage = damaged
    damage({"c1": "c2"})
    assert [c.checkpoint_id for c in saver.chain("t", "c0")] == ["c0"]
