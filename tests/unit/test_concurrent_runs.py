"""Two runs of one thread at once never both commit: the compare-and-set (API section 14).

Each run appends its own tag to ``done`` in one node. Every accepted checkpoint names the
thread's newest as its parent, so the history stays one line and the final state holds the
tag of every run that returned: kept + refused == started, and nothing is lost silently.
"""

from __future__ import annotations

import multiprocessing
import operator
import threading
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

from corral import END, ConcurrentRunError, Graph, MemorySaver, SqliteSaver
from corral.runtime import CompiledGraph


class Log(TypedDict):
    inbox: Annotated[list[str], operator.add]
    done: Annotated[list[str], operator.add]


def make_app(saver: Any) -> CompiledGraph[Log]:
    g = Graph(Log)

    @g.node(start=True, then="record")
    def read(state: Log) -> dict[str, object]:
        return {}

    @g.node(then=END)
    def record(state: Log) -> dict[str, object]:
        return {"done": [state["inbox"][-1]]}

    return g.compile(checkpointer=saver)


def start_runs(app: CompiledGraph[Log], who: str, count: int) -> tuple[list[str], int]:
    """Start ``count`` runs on thread 't'; return the tags of those that returned and the
    number refused with ConcurrentRunError (any other error fails the test)."""
    returned: list[str] = []
    refused = 0
    for i in range(count):
        tag = f"{who}-{i}"
        try:
            app.invoke({"inbox": [tag], "done": []}, thread_id="t")
        except ConcurrentRunError:
            refused += 1
        else:
            returned.append(tag)
    return returned, refused


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_runs_in_threads_are_kept_or_refused(kind: str, tmp_path: Path) -> None:
    """Four threads each start ten runs of one thread: each run returns with its tag in the
    final state or raises ConcurrentRunError; none is lost silently."""
    saver = MemorySaver() if kind == "memory" else SqliteSaver(tmp_path / "c.sqlite")
    app = make_app(saver)
    results: list[tuple[list[str], int]] = []
    start = threading.Barrier(4)

    def work(who: str) -> None:
        start.wait()
        results.append(start_runs(app, who, 10))

    workers = [threading.Thread(target=work, args=(f"w{k}",)) for k in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    returned = [tag for tags, _ in results for tag in tags]
    refused = sum(n for _, n in results)
    kept = app.get_state("t").values["done"]
    assert sorted(kept) == sorted(returned)
    assert len(kept) + refused == 40


def _process(path: str, who: str, out: Any) -> None:
    with SqliteSaver(path) as saver:
        out.put(start_runs(make_app(saver), who, 5))


def test_runs_in_processes_are_kept_or_refused(tmp_path: Path) -> None:
    """Four processes each start five runs of one thread in one SQLite file: kept + refused
    == started, and every kept run's tag is in the final state."""
    path = str(tmp_path / "c.sqlite")
    SqliteSaver(path).close()  # created once, so the processes race only on the runs
    context = multiprocessing.get_context("fork")
    out = context.Queue()
    procs = [context.Process(target=_process, args=(path, f"p{k}", out)) for k in range(4)]
    for p in procs:
        p.start()
    results = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    returned = [tag for tags, _ in results for tag in tags]
    refused = sum(n for _, n in results)
    with SqliteSaver(path) as saver:
        kept = make_app(saver).get_state("t").values["done"]
    assert sorted(kept) == sorted(returned)
    assert len(kept) + refused == 20
