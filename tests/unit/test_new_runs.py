"""A new run on a saved thread (``invoke(input, thread_id=T)``, a chat turn) writes its input
checkpoint as the input's write on top of the thread's newest checkpoint, and rebuilds exactly.

Compared against a reference saver that puts a snapshot in every checkpoint (its states are
never replayed), and against the states the runs returned, on all three savers.
"""

from __future__ import annotations

import operator
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal, TypedDict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reopening import Opener, reopening

from corral import (
    END,
    Graph,
    Guard,
    MemorySaver,
    Resume,
    SqliteSaver,
    StepLimitError,
    interrupt,
)
from corral.checkpoint import Checkpoint, Checkpointer
from corral.checkpoint._store import SNAPSHOT_MIN


class Chat(TypedDict):
    messages: Annotated[list[dict[str, Any]], operator.add]
    notes: Annotated[list[str], operator.add]
    turn: int


def chat_graph() -> Graph[Chat]:
    """``think`` appends one thought a superstep until the user's ``think`` count is reached,
    then ``answer`` (asking first when the user said ``ask``) replies and ends."""
    g = Graph(Chat, max_steps=1000)

    @g.node(start=True)
    def think(state: Chat) -> dict[str, object]:
        return {"messages": [{"role": "thought", "content": f"t{len(state['messages'])}"}]}

    @g.router("think", guards=[Guard("think", max=100)])
    def more(state: Chat) -> Literal["think", "answer"]:
        user = _last_user(state)
        since = len(state["messages"]) - 1 - state["messages"].index(user)
        return "think" if since < int(user.get("think", 0)) else "answer"

    @g.node(then=END)
    def answer(state: Chat) -> dict[str, object]:
        user = _last_user(state)
        out: dict[str, object] = {"turn": state.get("turn", 0) + 1}
        if user.get("ask"):
            out["notes"] = [f"answer {interrupt('ok?')!r}"]
        out["messages"] = [{"role": "assistant", "content": f"re {user['content']}"}]
        return out

    return g


def _last_user(state: Chat) -> dict[str, Any]:
    return next(m for m in reversed(state["messages"]) if m["role"] == "user")


def user(i: int, think: int = 0, ask: bool = False) -> dict[str, Any]:
    return {"role": "user", "content": f"u{i}", "think": think, "ask": ask}


class AlwaysSnapshot(MemorySaver):
    """A reference store: every checkpoint carries a snapshot (nothing is ever replayed)."""

    def wants_snapshot(self, thread_id: str, checkpoint_id: str) -> bool:
        return True


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    """Yield a function that opens a NEW saver on one store each call (memory: the same)."""
    with reopening(request, tmp_path / "checkpoints.sqlite") as opener:
        yield opener


def ordered(saver: Checkpointer, thread: str) -> list[Checkpoint]:
    """The thread's checkpoints, oldest first."""
    return sorted(saver.checkpoints(thread), key=lambda c: int(c.meta["seq"]))


def test_chat_turns_write_deltas_and_rebuild_to_what_each_run_returned(store: Opener) -> None:
    """Each turn's input checkpoint is a write on the previous run's last checkpoint; every
    run's state is what get_state and history give back, also through a new saver; snapshots
    stay every SNAPSHOT_MIN checkpoints across the turns."""
    g = chat_graph()
    app = g.compile(checkpointer=store())
    runs = [app.invoke({"messages": [user(0, think=2)], "turn": 0}, thread_id="t")]
    for i in range(1, 12):
        runs.append(app.invoke({"messages": [user(i, think=i % 4)]}, thread_id="t"))
    assert len(runs[-1].state["messages"]) == 4 + sum(2 + max(1, i % 4) for i in range(1, 12))
    assert runs[0].state["messages"][0] == user(0, think=2)
    for reader in (app, g.compile(checkpointer=store())):
        assert reader.get_state("t").values == runs[-1].state
        by_id = {s.checkpoint_id: s for s in reader.history("t")}
        for run in runs:
            assert run.checkpoint_id is not None
            assert by_id[run.checkpoint_id].values == run.state
            assert reader.get_state("t", run.checkpoint_id).values == run.state
    saver = store()
    puts = ordered(saver, "t")
    inputs = [c for c in puts if c.meta["source"] == "input"]
    assert len(inputs) == 12
    assert inputs[0].snapshot is not None and inputs[0].parent_id is None
    for i, (checkpoint, before) in enumerate(zip(inputs[1:], runs[:-1], strict=True), start=1):
        assert checkpoint.parent_id == before.checkpoint_id
        assert checkpoint.writes == [("__input__", {"messages": [user(i, think=i % 4)]})]
        assert checkpoint.meta["run"] == i + 1 and checkpoint.meta["steps"] == 0
    with_snapshot = [i for i, c in enumerate(puts) if c.snapshot is not None]
    assert with_snapshot == list(range(0, len(puts), SNAPSHOT_MIN))
    assert len(puts) > 2 * SNAPSHOT_MIN
    assert max(len(saver.chain("t", c.checkpoint_id)) for c in puts) == SNAPSHOT_MIN


def test_a_new_run_from_an_older_checkpoint_starts_at_a_snapshot(store: Opener) -> None:
    """invoke(input, thread_id, checkpoint_id=older) forks: its input checkpoint is whole."""
    app = chat_graph().compile(checkpointer=store())
    first = app.invoke({"messages": [user(0, think=2)], "turn": 0}, thread_id="t")
    app.invoke({"messages": [user(1)]}, thread_id="t")
    fork = app.invoke({"messages": [user(2)]}, thread_id="t", checkpoint_id=first.checkpoint_id)
    assert fork.state["messages"][:4] == first.state["messages"]
    assert [m["content"] for m in fork.state["messages"][4:]] == ["u2", "t5", "re u2"]
    inputs = [c for c in ordered(store(), "t") if c.meta["source"] == "input"]
    assert [c.snapshot is not None for c in inputs] == [True, False, True]
    assert app.get_state("t").values == fork.state


def test_a_reducer_key_the_thread_lacks_is_carried_by_a_snapshot(store: Opener) -> None:
    """A schema that gained a reducer key: the new run starts it empty, and so does a read."""

    class Old(TypedDict):
        messages: Annotated[list[dict[str, Any]], operator.add]
        turn: int

    old = Graph(Old)

    @old.node(start=True, then=END)
    def reply(state: Old) -> dict[str, object]:
        return {"messages": [{"role": "assistant", "content": "hi"}]}

    old.compile(checkpointer=store()).invoke({"messages": [user(0)], "turn": 0}, thread_id="t")
    g = chat_graph()
    app = g.compile(checkpointer=store())
    run = app.invoke({"messages": [user(1)]}, thread_id="t")
    assert run.state["notes"] == []
    assert g.compile(checkpointer=store()).get_state("t").values == run.state
    inputs = [c for c in ordered(store(), "t") if c.meta["source"] == "input"]
    assert [c.snapshot is not None for c in inputs] == [True, True]


def test_snapshots_by_bytes_count_across_turns(tmp_path: Path) -> None:
    """Large user messages: the store's advice places snapshots across run boundaries, so a
    read replays a bounded number of bytes, not every turn since the last counted snapshot."""
    big = "x" * 400_000
    path = tmp_path / "big.sqlite"
    with SqliteSaver(path) as saver:
        app = chat_graph().compile(checkpointer=saver)
        app.invoke({"messages": [user(0)], "turn": 0}, thread_id="t")
        for i in range(1, 9):
            msg = {**user(i), "content": f"{i}{big}"}
            run = app.invoke({"messages": [msg]}, thread_id="t")
    with SqliteSaver(path) as saver:
        puts = ordered(saver, "t")
        assert len(puts) == 27
        # by count alone: checkpoints 0 and 20; by bytes, every ~1 MiB of writes, any source
        assert sum(c.snapshot is not None for c in puts) >= 6
        assert any(c.meta["source"] == "input" and c.snapshot is not None for c in puts[1:])
        chain = saver.chain("t")
        big_writes = sum(len(str(c.writes)) > 400_000 for c in chain[1:])
        assert big_writes <= 3
        assert chat_graph().compile(checkpointer=saver).get_state("t").values == run.state


# --------------------------------------------------------------------------- property

Op = tuple[str, int, int, bool]

ops = st.lists(
    st.tuples(
        st.sampled_from(["new", "new", "continue", "resume"]),
        st.integers(0, 3),  # thoughts asked for (new) / the answer (resume)
        st.integers(1, 6),  # max_steps of the call
        st.booleans(),  # the user asks to be asked
    ),
    min_size=1,
    max_size=14,
)


def play(saver: Checkpointer, script: list[Op]) -> list[tuple[Any, ...]]:
    """Run ``script`` on one thread; return what each call gave (status, state, counters)."""
    app = chat_graph().compile(checkpointer=saver)
    seen: list[tuple[Any, ...]] = []
    status = ""
    for i, (kind, n, cap, ask) in enumerate(script):
        if kind == "new" or not status:
            arg: Any = {"messages": [user(i, think=n, ask=ask)]}
            if not status:
                arg["turn"] = 0
        elif kind == "resume" and status == "interrupted":
            arg = Resume(f"a{n}")
        else:
            arg = None
        try:
            run = app.invoke(arg, thread_id="t", max_steps=cap)
        except StepLimitError as err:
            status = "running"
            seen.append(("cap", err.steps, err.state))
        else:
            status = run.status
            interrupts = [(x.id, x.value) for x in run.interrupts]
            seen.append((run.status, run.state, run.steps, run.guards, interrupts))
    return seen


def read_back(saver: Checkpointer) -> list[tuple[Any, ...]]:
    """The thread's state and history through a new app, checkpoint ids left out."""
    app = chat_graph().compile(checkpointer=saver)
    snaps = [app.get_state("t"), *app.history("t")]
    return [
        (s.values, s.next, s.status, s.steps, s.supersteps, s.guards, s.runs, s.source,
         [(x.id, x.value) for x in s.interrupts])
        for s in snaps
    ]  # fmt: skip


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script=ops)
def test_any_mix_of_turns_continues_and_answers_reads_back_as_whole_snapshots(
    script: list[Op],
) -> None:
    """Random turns, continues after a step cap, and answers to interrupts on one thread: the
    runs, get_state and every checkpoint of history equal those of a store that snapshots
    every checkpoint, on MemorySaver and SqliteSaver (read with a new saver)."""
    reference = AlwaysSnapshot()
    expected = play(reference, script)
    expected_back = read_back(reference)
    memory = MemorySaver()
    assert play(memory, script) == expected
    assert read_back(memory) == expected_back
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.sqlite"
        with SqliteSaver(path) as saver:
            assert play(saver, script) == expected
        with SqliteSaver(path) as saver:
            assert read_back(saver) == expected_back
    puts = memory.checkpoints("t")
    turns = [c for c in puts if c.meta["source"] == "input"]
    assert sum(c.snapshot is not None for c in turns) <= 1 + len(puts) // SNAPSHOT_MIN
