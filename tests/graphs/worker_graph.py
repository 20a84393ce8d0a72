"""A graph for the worker tests: a chain with a fan-out, each node logging its run.

``plan -> draft -> (check_a | check_b) -> review -> publish``; every node appends its name to
``log`` and adds to ``total``, so the final state says which nodes ran how often. A node
kills its own process (SIGKILL) when ``$CORRAL_DIE_AT`` names it and the marker file
``$CORRAL_DIE_FLAG`` exists (the marker is removed first, so only one process dies); a node
waits while ``$CORRAL_HOLD_FLAG`` exists (a slow node, for SIGTERM tests).

For takeover tests: the process stops itself (SIGSTOP) where ``$CORRAL_FREEZE_AT`` says,
once, while the marker ``$CORRAL_FREEZE_FLAG`` exists: in the node of that name, or with
``input`` just before a claimed run's input is handed to ``invoke`` (after the worker
decided the run starts afresh). Each node run appends ``PID NODE`` to ``$CORRAL_RUNS_LOG``.
"""

from __future__ import annotations

import operator
import os
import signal
import threading
import time
from typing import Annotated, Any, TypedDict

from corral import END, Graph, interrupt


class Work(TypedDict):
    topic: str
    log: Annotated[list[str], operator.add]
    total: Annotated[int, operator.add]
    answer: str


g = Graph(Work, name="work")

WEIGHTS = {"plan": 1, "draft": 10, "check_a": 100, "check_b": 1000, "review": 10_000}
CLEAN = {
    "log": ["plan", "draft", "check_a", "check_b", "review", "publish"],
    "total": 11_111,
}


def freeze_at(point: str) -> None:
    """Stop this process (SIGSTOP) if ``$CORRAL_FREEZE_AT`` names ``point``, once."""
    flag = os.environ.get("CORRAL_FREEZE_FLAG")
    if os.environ.get("CORRAL_FREEZE_AT") == point and flag and os.path.exists(flag):
        os.remove(flag)
        # Stopped outside any queue transaction: a SQLite write lock held while stopped
        # would stop every other worker too. Sent to this thread, the stop begins here.
        from corral.workers import client

        locks = [getattr(q, "_lock", None) for q in list(client._QUEUES.values())]
        held = [lock for lock in locks if lock is not None]
        for lock in held:
            lock.acquire()
        try:
            signal.pthread_kill(threading.get_ident(), signal.SIGSTOP)
        finally:
            for lock in held:
                lock.release()


if os.environ.get("CORRAL_FREEZE_AT") == "input":
    import corral.workers.worker as _worker

    _load_input = _worker.load_input

    def _load_then_freeze(run: Any, serializer: Any = None) -> Any:
        value = _load_input(run, serializer)
        freeze_at("input")
        return value

    _worker.load_input = _load_then_freeze


def step(name: str) -> dict[str, object]:
    """Do what every node does: maybe die, maybe freeze, maybe wait, then log the run."""
    runs = os.environ.get("CORRAL_RUNS_LOG")
    if runs:
        with open(runs, "a", encoding="utf-8") as out:
            out.write(f"{os.getpid()} {name}\n")
    freeze_at(name)
    flag = os.environ.get("CORRAL_DIE_FLAG")
    if os.environ.get("CORRAL_DIE_AT") == name and flag and os.path.exists(flag):
        os.remove(flag)
        os.kill(os.getpid(), signal.SIGKILL)
    hold = os.environ.get("CORRAL_HOLD_FLAG")
    while hold and os.path.exists(hold):
        time.sleep(0.01)
    return {"log": [name], "total": WEIGHTS.get(name, 0)}


@g.node(start=True, then="draft")
def plan(state: Work) -> dict[str, object]:
    return step("plan")


@g.node(then=["check_a", "check_b"])
def draft(state: Work) -> dict[str, object]:
    return step("draft")


@g.node(then="review")
def check_a(state: Work) -> dict[str, object]:
    return step("check_a")


@g.node(then="review")
def check_b(state: Work) -> dict[str, object]:
    return step("check_b")


@g.node(then="publish", wait_for=["check_a", "check_b"])
def review(state: Work) -> dict[str, object]:
    return step("review")


@g.node(then=END)
def publish(state: Work) -> dict[str, object]:
    out = step("publish")
    if state["topic"] == "ask":
        out["answer"] = str(interrupt("publish?"))
    if state["topic"] == "boom":
        raise RuntimeError("the printer is on fire")
    return out
