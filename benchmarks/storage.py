"""Storage: what a SQLite thread takes on disk, against its payload, as it grows.

The chat graph of ``durable_step.py`` (one ~500-byte message appended a superstep) runs
200 and then, on a new file, 400 supersteps with ``SqliteSaver``. Measured: the file's
bytes (its WAL folded in) against the payload, the JSON bytes of the messages; and the
bytes the second 200 steps added against the first 200's (an empty store's file
subtracted): 1.0x when storage is linear in the steps, towards 3x when every checkpoint
stores the whole state (quadratic). With LangGraph installed, its ``InMemorySaver`` of the
same graph gives the peer column: the bytes its serializer wrote for the same steps.
"""

from __future__ import annotations

import operator
import sqlite3
import tempfile
from pathlib import Path
from typing import Annotated, Any, TypedDict

from _shared import Report, Row, chat_graph, command, message, payload_bytes, run_chat

from corral import SqliteSaver


def file_bytes(path: Path) -> int:
    """Return the size of the database after folding the WAL into it."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def stored(folder: Path, steps: int) -> int:
    path = folder / f"{steps}.sqlite"
    with SqliteSaver(path, synchronous="NORMAL") as saver:
        if steps:
            run_chat(chat_graph(steps).compile(checkpointer=saver), steps)
    return file_bytes(path)


class LgChat(TypedDict):
    messages: Annotated[list[dict[str, str]], operator.add]


def langgraph_bytes(steps: int) -> int | None:
    """Return the bytes LangGraph's checkpointer serialized for the same thread."""
    try:
        from langgraph.checkpoint.memory import InMemorySaver
        from langgraph.graph import END as LG_END
        from langgraph.graph import START as LG_START
        from langgraph.graph import StateGraph
    except ImportError:
        return None
    g = StateGraph(LgChat)
    g.add_node("chat", lambda s: {"messages": [message(len(s["messages"]))]})
    g.add_edge(LG_START, "chat")
    g.add_conditional_edges(
        "chat", lambda s: LG_END if len(s["messages"]) >= steps else "chat", ["chat", LG_END]
    )
    saver = InMemorySaver()
    config: Any = {"configurable": {"thread_id": "t"}, "recursion_limit": 10 * steps}
    g.compile(checkpointer=saver).invoke({"messages": []}, config)
    # The saver's serialized (type, bytes) pairs, as its tables hold them; another
    # LangGraph version may hold them otherwise, and then the peer column stays empty.
    try:
        total = 0
        for value in saver.storage.values():
            for namespace in value.values():
                for checkpoint, meta, _parent in namespace.values():
                    total += len(checkpoint[1]) + len(meta[1])
        total += sum(len(blob[1]) for blob in saver.blobs.values())
        total += sum(len(w[2][1]) for writes in saver.writes.values() for w in writes.values())
    except (AttributeError, TypeError, ValueError, IndexError):
        return None
    return total


def measure(quick: bool) -> Report:
    half = 100 if quick else 200
    with tempfile.TemporaryDirectory() as tmp:
        empty, first, both = (stored(Path(tmp), n) for n in (0, half, 2 * half))
    payload = payload_bytes(2 * half)
    growth = (both - first) / (first - empty)
    peers = ("", "")
    lg_first, lg_both = langgraph_bytes(half), langgraph_bytes(2 * half)
    if lg_first is not None and lg_both is not None:
        lg_growth = (lg_both - lg_first) / lg_first
        peers = (f"LangGraph: {lg_both / payload:.0f}x", f"LangGraph: {lg_growth:.1f}x")
    return Report(
        rows=[
            Row(
                f"storage (SQLite, {2 * half} steps) / payload", both / payload, 2.5, "x", peers[0]
            ),
            Row(
                f"storage of steps {half + 1}-{2 * half} / of steps 1-{half}",
                growth,
                1.25,
                "x",
                peers[1],
            ),
        ],
        notes=[
            f"payload of {2 * half} messages {payload} bytes; file: empty {empty}, after "
            f"{half} steps {first}, after {2 * half} steps {both} bytes"
        ],
    )


main = command(measure, __doc__)

if __name__ == "__main__":
    raise SystemExit(main())
