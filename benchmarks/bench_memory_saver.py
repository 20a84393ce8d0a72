"""What a ``MemorySaver`` adds to a step: the same graph run with it and without a checkpointer.

Run: ``python benchmarks/bench_memory_saver.py [--steps 200] [--rounds 15]``

The graph is ``bench_checkpoint.py``'s engine graph: one node looping through a guard, each
step appending a ~500-byte message to a list through ``operator.add`` (a copy of one made
before the run), ``--steps`` steps in
one ``invoke``. Two lines, in one process, rounds interleaved (none, memory, none, ...) so a
machine loaded by others slows both alike:

* ``none``: compiled without a checkpointer;
* ``memory``: compiled with a fresh ``MemorySaver`` each round (its input checkpoint, one
  checkpoint a step, a snapshot every 20th).

Figures are CPU time (``time.process_time``) a step, the least and the median over rounds,
and the ratio ``memory / none`` of each; "saver" is the difference, what ``MemorySaver``
costs a step. A third line, ``put``, times ``MemorySaver.put`` alone of the checkpoints the
engine wrote (re-put into a fresh saver), a step's write with a snapshot every 20th.
"""

from __future__ import annotations

import argparse
import gc
import operator
import statistics
import sys
import time
from typing import Annotated, Any, Literal, TypedDict

from corral import END, End, Graph, Guard, MemorySaver
from corral.checkpoint import Checkpoint


def message(i: int) -> dict[str, str]:
    """Return the i-th ~500-byte chat message (as ``bench_checkpoint.py`` writes it)."""
    words = " ".join(f"w{(i * 7919 + k * 104729) % 100000:05d}" for k in range(80))
    return {"role": "assistant", "content": f"step {i}: {words}"[:470]}


MESSAGES: list[dict[str, str]] = []
"""The messages, made once: the node copies one, so its own cost stays small against the
saver's (making one costs ~30 us here)."""


class State(TypedDict):
    messages: Annotated[list[dict[str, str]], operator.add]


def graph(steps: int) -> Graph[State]:
    g = Graph(State, max_steps=steps + 1)

    @g.node(start=True)
    def chat(state: State) -> dict[str, object]:
        return {"messages": [dict(MESSAGES[len(state["messages"])])]}

    @g.router("chat", guards=[Guard("chat", max=steps - 1, otherwise=END)])
    def again(state: State) -> Literal["chat"] | End:
        return "chat"

    return g


def run_once(g: Graph[State], steps: int, saver: MemorySaver | None) -> float:
    """Return the CPU seconds a step of one whole run."""
    app = g.compile(checkpointer=saver) if saver is not None else g.compile()
    gc.collect()
    cpu = time.process_time()
    run = app.invoke({"messages": []}, thread_id="bench")
    cpu = time.process_time() - cpu
    assert len(run.state["messages"]) == steps, run.steps
    return cpu / steps


def put_once(checkpoints: list[Checkpoint]) -> float:
    """Return the CPU seconds a put of ``checkpoints`` into a fresh saver (input excluded)."""
    saver = MemorySaver()
    saver.put(checkpoints[0])
    gc.collect()
    cpu = time.process_time()
    for checkpoint in checkpoints[1:]:
        saver.put(checkpoint)
    return (time.process_time() - cpu) / (len(checkpoints) - 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args(argv)
    steps: int = args.steps
    MESSAGES[:] = [message(i) for i in range(steps)]
    g = graph(steps)
    written = MemorySaver()
    run_once(g, steps, written)  # warm-up, and the checkpoints the put line re-puts
    run_once(g, steps, None)
    checkpoints = [
        Checkpoint(c.thread_id, c.checkpoint_id, c.parent_id, c.snapshot, c.writes, c.meta)
        for c in written.checkpoints("bench")
    ]
    times: dict[str, list[float]] = {"none": [], "memory": [], "put": []}
    for _ in range(args.rounds):
        times["none"].append(run_once(g, steps, None))
        times["memory"].append(run_once(g, steps, MemorySaver()))
        times["put"].append(put_once(checkpoints))
    print(
        f"{steps} steps, one ~500-byte message each; CPU us a step over {args.rounds} "
        f"interleaved rounds (python {sys.version.split()[0]})"
    )
    least = {name: min(t) for name, t in times.items()}
    median = {name: statistics.median(t) for name, t in times.items()}
    for name in ("none", "memory"):
        print(
            f"{name:>7}: least {least[name] * 1e6:6.1f} us ({least[name] / least['none']:4.2f}x)"
            f", median {median[name] * 1e6:6.1f} us ({median[name] / median['none']:4.2f}x)"
        )
    saver: dict[str, Any] = {k: v["memory"] - v["none"] for k, v in (("l", least), ("m", median))}
    print(f"  saver: least {saver['l'] * 1e6:6.1f} us, median {saver['m'] * 1e6:6.1f} us a step")
    print(f"    put: least {least['put'] * 1e6:6.1f} us, median {median['put'] * 1e6:6.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
