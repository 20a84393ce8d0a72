"""``corral threads``, ``history`` and ``show``: what a checkpoint database holds, without Python.

They read the checkpoints (through the same ``open_saver`` as ``corral run --db``) and never
write. Everything they print comes from each checkpoint's metadata (status, step count,
next nodes, guard counts, runs of each node, pending interrupts) and its writes (which
keys the nodes that ran wrote). Two things need the graph, given with ``--graph PATH``: a
guard's maximum, and the state when the newest checkpoint stores only what changed (the
state is then rebuilt with the graph's reducers, exactly as ``get_state`` does; without
``--graph``, with the reducers the checkpoints name, when all are corral's own). Every
line fits 80 columns: table cells are cut (``…``), other lines wrapped,
and the resume command continued with `` \\`` (see ``_shell``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shlex
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from corral._where import command_db, parse_db
from corral.checkpoint import Checkpoint, Checkpointer, open_saver
from corral.cli._load import compile_target, load_one
from corral.cli._run import waiting_lines
from corral.cli._shell import WIDTH, command_lines, fit_line, resume_words, run_words
from corral.cost import Cost
from corral.errors import CorralError
from corral.history import (
    CHILD_THREAD,
    HistoryRow,
    child_threads,
    history_rows,
    ordered,
    written_at,
)
from corral.loader import UsageError
from corral.reducers import BUILT_IN
from corral.runtime.events import Interrupt
from corral.runtime.state import apply_writes

__all__ = ["history", "open_existing", "show", "threads"]


def open_existing(db: str) -> Checkpointer:
    """Open ``db`` for reading; a SQLite path that does not exist is a usage error."""
    where = parse_db(db)
    if where.kind == "sqlite" and not os.path.isfile(where.target):
        msg = f"no checkpoint database at {db!r}; give the file `corral run --db` wrote to"
        raise UsageError(msg)
    return open_saver(db)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> str:
    """Return rows in columns; the last column takes what is left of 80 characters.

    A column is at most 24 wide, and the widest ones give up columns (down to the width
    of their heading) until the last has 10, so a row fits an 80-column terminal.

    >>> print(_table(("A", "B", "C", "D"), [("a" * 30, "b" * 30, "c" * 30, "d" * 30)]))
    A                      B                      C                       D
    aaaaaaaaaaaaaaaaaaaa…  bbbbbbbbbbbbbbbbbbbb…  ccccccccccccccccccccc…  ddddddddd…
    """
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header) - 1)]
    widths = [min(w, 24) for w in widths]
    floor = [min(len(h), w) for h, w in zip(header, widths, strict=False)]
    while sum(w + 2 for w in widths) + 10 > WIDTH and widths != floor:
        widest = max(range(len(widths)), key=lambda i: widths[i] - floor[i])
        widths[widest] -= 1
    rest = max(WIDTH - sum(w + 2 for w in widths), 10)
    lines = []
    for row in [header, *rows]:
        cells = [_cut(cell, w).ljust(w) for cell, w in zip(row, widths, strict=False)]
        lines.append(("  ".join([*cells, _cut(row[-1], rest)])).rstrip())
    return "\n".join(lines)


def _listed(ids: list[str], *, children: bool) -> list[tuple[str, str | None, int]]:
    """Return ``(thread, parent, depth)`` to list: each child right after its parent."""
    under = child_threads(ids)
    parents = {child: parent for parent, kids in under.items() for child in kids}
    out: list[tuple[str, str | None, int]] = []

    def add(thread: str, depth: int) -> None:
        out.append((thread, parents.get(thread), depth))
        for child in under.get(thread, ()) if children else ():
            add(child, depth + 1)

    for thread in ids:
        if thread not in parents:
            add(thread, 0)
    return out


def threads(args: argparse.Namespace) -> int:
    """Print every thread of ``--db`` with its status, step count and last update time."""
    saver = open_existing(args.db)
    ids = saver.threads()
    listed = _listed(ids, children=args.all)
    found: list[dict[str, Any]] = []  # the JSON rows
    for thread, parent, _ in listed:
        chain = ordered(saver, thread)
        last = chain[-1].meta
        found.append(
            {"thread": thread, **_summary(last), "checkpoints": len(chain), "parent": parent}
        )
    if args.format == "json":
        print(json.dumps(found, indent=2))
        return 0
    if not found:
        print(f"no threads in {command_db(args.db)}")
        return 0
    rows: list[tuple[str, ...]] = [
        (
            "  " * depth + thread.removeprefix(f"{parent}/") if parent else thread,
            t["status"],
            str(t["steps"]),
            (t["updated"] or "-").replace("T", " ").removesuffix("+00:00"),
            ", ".join(t["next"]),
        )
        for (thread, parent, depth), t in zip(listed, found, strict=True)
    ]
    header: tuple[str, ...] = ("THREAD", "STATUS", "STEPS", "UPDATED (UTC)", "NEXT")
    spent = [Cost.from_json(t["spent"]) for t in found]
    if any(spent):  # a column only for graphs that report what they spend
        header = (*header[:3], "SPENT", *header[3:])
        rows = [(*r[:3], str(c) if c else "-", *r[3:]) for r, c in zip(rows, spent, strict=True)]
    print(_table(header, rows))
    hidden = len(ids) - len(listed)
    if hidden:
        what = "thread" if hidden == 1 else "threads"
        print(f"({hidden} subgraph child {what} not shown; --all lists them)")
    return 0


def _with_children(
    saver: Checkpointer, thread: str, checkpoints: list[Checkpoint], ids: list[str]
) -> list[HistoryRow]:
    """Return the history rows of ``thread``, each superstep's row naming the node runs of
    the subgraph children it entered too, by path (``research/search``), whatever they
    wrote: a child's thread is listed in ``ids``, named after its parent's superstep."""
    rows = history_rows(checkpoints)
    entered: dict[tuple[str, str, str], list[str]] = {}
    for child in ids:
        match = CHILD_THREAD.fullmatch(child)
        if match is None or match["parent"] != thread:
            continue
        nodes = entered.setdefault((match["run"], match["step"], match["fork"] or ""), [])
        for row in _with_children(saver, child, ordered(saver, child), ids):
            nodes.extend(f"{match['node']}/{node}" for node in row.nodes if node != "input")
    for index, checkpoint in enumerate(checkpoints):
        meta = checkpoint.meta
        key = (str(meta.get("run", 0)), str(meta.get("supersteps", 0)), meta.get("fork") or "")
        nodes = entered.pop(key, [])
        if nodes:
            merged = tuple(dict.fromkeys([*rows[index].nodes, *nodes]))
            rows[index] = dataclasses.replace(rows[index], nodes=merged)
    return rows


def history(args: argparse.Namespace) -> int:
    """Print one row per checkpoint of ``THREAD``, oldest first, subgraph children's node
    runs included."""
    saver = open_existing(args.db)
    rows = _with_children(saver, args.thread, ordered(saver, args.thread), saver.threads())
    if args.format == "json":
        print(json.dumps([asdict(r) for r in rows], indent=2))
        return 0
    shown = [
        (r.checkpoint_id, str(r.step), ", ".join(r.nodes) or "-", r.status, ", ".join(r.keys))
        for r in rows
    ]
    print(_table(("CHECKPOINT", "STEP", "NODES", "STATUS", "KEYS WRITTEN"), shown))
    return 0


def show(args: argparse.Namespace) -> int:
    """Print the thread's state, next nodes, guards and pending interrupts."""
    saver = open_existing(args.db)
    chain = ordered(saver, args.thread)
    last = chain[-1]
    meta = last.meta
    maxima: dict[tuple[str, str], int] = {}
    state: dict[str, Any] | None = dict(last.snapshot) if last.snapshot is not None else None
    custom: dict[str, str] = {}
    if args.graph:
        target = load_one(args.graph, verbose=args.verbose, allow_partial=False)
        app = compile_target(target, saver)
        state = app.get_state(args.thread).values
        spec = app.spec
        maxima = {(n.name, g.target): g.max for n in spec.nodes for g in n.guards}
        maxima |= {(r.source, g.target): g.max for r in spec.routers for g in r.guards}
    elif state is None:
        state, custom = _replayed(saver.chain(args.thread, None))
    interrupts = [
        Interrupt(str(p.get("id")), str(p.get("node")), p.get("value"), p.get("when", "during"))
        for p in meta.get("interrupts") or []
    ]
    summary = _summary(meta)
    words = run_words(args.graph or "PATH", args.thread, args.db)
    asking = [i.id for i in interrupts if i.when == "during"]
    # the command that answers the pending interrupts, or continues a failed run
    resume = shlex.join([*words, *resume_words(asking)])
    report = {
        "thread": args.thread,
        "checkpoint": last.checkpoint_id,
        **summary,
        "guards": [
            {"source": s, "target": t, "count": n, "max": maxima.get((s, t))}
            for s, t, n in meta.get("guards", [])
        ],
        "interrupts": [asdict(i) for i in interrupts],
        "state": state,
        "state_needs_graph": custom,
        "resume": resume if interrupts or summary["error"] is not None else None,
    }
    if args.format == "json":
        print(json.dumps(report, indent=2, ensure_ascii=False, default=repr))
        return 0
    print(_show_text(report, interrupts, words, graph_given=bool(args.graph)))
    return 0


def _replayed(chain: list[Checkpoint]) -> tuple[dict[str, Any] | None, dict[str, str]]:
    """Return the state at the chain's end, replayed with the reducers its meta names.

    Only corral's built-in reducers can be replayed without the graph; otherwise the state
    is ``None`` and the keys that need ``--graph`` come second, with their reducers' names.
    """
    named = next((c.meta["reducers"] for c in reversed(chain) if "reducers" in c.meta), None)
    if not chain or chain[0].snapshot is None or named is None:
        return None, {}
    custom = {key: name for key, name in named.items() if name not in BUILT_IN}
    if custom:
        return None, custom
    reducers = {key: BUILT_IN[name] for key, name in named.items()}
    values = dict(chain[0].snapshot)
    try:
        for checkpoint in chain[1:]:
            values = apply_writes(values, list(checkpoint.writes), reducers, {})
    except CorralError:
        return None, {}
    return values, {}


def _summary(meta: dict[str, Any]) -> dict[str, Any]:
    """Return what ``threads`` and ``show`` say of a thread's newest checkpoint; ``error``
    is ``TYPE: message`` of the error a failed run recorded (``None``: none)."""
    failed = meta.get("error") if meta.get("status") == "error" else None
    error = f"{failed.get('type')}: {failed.get('message')}" if isinstance(failed, dict) else None
    return {
        "status": str(meta.get("status", "running")),
        "steps": int(meta.get("steps", 0)),
        "updated": written_at(meta),
        "next": [t.get("node") for t in meta.get("next", [])],
        "error": error,
        "spent": Cost.from_json(meta.get("spent")).to_json(),
    }


def _show_text(
    report: dict[str, Any], interrupts: list[Interrupt], words: list[str], *, graph_given: bool
) -> str:
    lines = [
        *fit_line(
            f"thread {report['thread']}: {report['status']} after {report['steps']} steps "
            f"(checkpoint {report['checkpoint']})"
        ),
        *fit_line(f"next: {', '.join(report['next']) or '(nothing: the run finished)'}"),
    ]
    spent = Cost.from_json(report["spent"])
    if spent:
        lines.extend(fit_line(f"spent: {spent}"))
    if report["error"]:
        lines.extend(fit_line(f"failed: {report['error']}"))
        if not interrupts:
            lines.append("once the cause is fixed, continue it with:")
            lines.extend(command_lines(words))
    if report["guards"]:
        lines.append("guards:")
        for g in report["guards"]:
            bound = f"/{g['max']}" if g["max"] is not None else ""
            used = " (used up)" if g["max"] is not None and g["count"] >= g["max"] else ""
            lines.extend(fit_line(f"  {g['source']} → {g['target']}: {g['count']}{bound}{used}"))
        if not graph_given:
            lines.append("  (give --graph PATH to see each guard's max)")
    if interrupts:
        lines.extend(waiting_lines(report["thread"], interrupts, words))
    custom = ", ".join(f"{k!r} ({name})" for k, name in report["state_needs_graph"].items())
    if report["state"] is None:
        lines.append("state: the newest checkpoint stores only what changed; give")
        lines.append("  --graph PATH to rebuild it with the graph's reducers")
        if custom:
            lines.extend(fit_line(f"  (custom reducers, not replayed without it: {custom})"))
    else:
        lines.append("state:")
        text = json.dumps(report["state"], indent=2, ensure_ascii=False, default=repr)
        lines.extend(wrapped for line in text.splitlines() for wrapped in fit_line("  " + line))
    return "\n".join(lines)
