"""``corral run``: run one graph with a SQLite checkpointer, progress on stderr, state on stdout.

Exit codes: 0 the run finished, 3 it waits for a person, 1 it stopped on a cap, a node error
or bad input (the checkpoint is kept, so ``--thread ID`` continues it), 2 a usage or load
error (nothing ran).

Every command it prints for a person to paste (resume, go on, continue with a bigger cap,
start a thread) is laid out by ``_shell.command_lines``: on lines of its own, within 80
columns, continued with `` \\`` when a ``--db`` URL, a path or a thread id makes it wider.
The heading, the ``error:`` lines, the others that name the thread or the database and a
person's payload are wrapped by ``_shell.fit_line`` (as ``corral show``'s, which says what a
thread waits for with :func:`waiting_lines` too); progress lines are printed as they are.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import traceback
import uuid
from typing import Any

from corral._where import command_db
from corral.analysis.bound import every_node
from corral.checkpoint import open_saver
from corral.cli._load import BadInput, compile_target, load_deps, load_one
from corral.cli._shell import command_lines, fit_line, resume_words, run_words, say
from corral.control import Resume
from corral.cost import FIELDS
from corral.errors import (
    BudgetError,
    CheckpointError,
    CorralError,
    GuardExhaustedError,
    NodeCapError,
    NodeError,
    StepLimitError,
)
from corral.loader import UsageError
from corral.runtime.app import CompiledGraph
from corral.runtime.events import Interrupt
from corral.spec import END

__all__ = ["command", "waiting_lines"]


def command(args: argparse.Namespace) -> int:
    """Run ``corral run``; return 0 (done), 3 (interrupted), 1 (failed) or 2 (usage/load)."""
    if args.resume is not None and args.thread is None:
        msg = "--resume answers the interrupt of a thread; give its --thread ID too"
        raise UsageError(msg)
    if args.resume is not None and args.input is not None:
        msg = "give --input (start a run) or --resume (answer an interrupt), not both"
        raise UsageError(msg)
    value = _input(args)  # before loading: a bad --input is told at once
    target = load_one(args.path, verbose=args.verbose, allow_partial=False)
    deps = load_deps(args.deps, verbose=args.verbose) if args.deps else None
    saver = open_saver(args.db)  # a CheckpointError (cannot connect...) is main()'s: exit 2
    app = compile_target(target, saver)
    thread = args.thread or uuid.uuid4().hex[:12]
    if args.thread is not None:
        _check_thread(app, args, value)
    cap = args.max_steps if args.max_steps is not None else app.max_steps
    verb = "resuming" if args.resume is not None else "continuing" if value is None else "running"
    where = command_db(args.db)
    say(f"{verb} {target.label} on thread {thread} (checkpoints: {where}, max_steps={cap})")
    subgraphs = {path + n.name for path, n in every_node(app.spec, "") if n.subgraph is not None}
    progress = _Progress(cap, frozenset(subgraphs))
    try:
        run = app.invoke(
            value,
            thread_id=thread,
            max_steps=args.max_steps,
            deps=deps,
            on_event=progress,
            budget=args.budget,
        )
    except CorralError as exc:
        return _failed(exc, args, thread, cap)
    print(json.dumps(run.state, indent=2, ensure_ascii=False, default=repr))
    if run.status == "interrupted":
        words = run_words(args.path, thread, args.db, args.deps)
        print("\n".join(waiting_lines(thread, run.interrupts, words)), file=sys.stderr)
        return 3
    spent = f", spent {run.spent}" if run.spent else ""
    say(f"done: {run.steps} steps{spent} on thread {run.thread_id or thread}")
    return 0


def _input(args: argparse.Namespace) -> Any:
    """Return what ``invoke`` gets: ``Resume``, the input dict, or ``None`` to continue."""
    if args.resume is not None:
        return Resume(_parse_json(args.resume, "--resume", or_text=True))
    if args.input is None:
        return None if args.thread is not None else {}
    text: str = args.input
    where = "--input"
    if text.startswith("@"):
        where = text[1:]
        text = _read_input_file(where)
    data = _parse_json(text, where)
    if not isinstance(data, dict):
        msg = f"{where} must be a JSON object of state keys, not {type(data).__name__}"
        raise BadInput(msg)
    return data


MAX_INPUT_BYTES = 64 * 1024 * 1024
"""The most ``--input @FILE`` reads: the state of one run, not a data set (or /dev/zero)."""


def _read_input_file(where: str) -> str:
    try:
        with open(where, "rb") as handle:
            raw = handle.read(MAX_INPUT_BYTES + 1)
    except OSError as exc:
        msg = f"cannot read the input file {where!r}: {exc.strerror or exc}"
        raise BadInput(msg) from exc
    if len(raw) > MAX_INPUT_BYTES:
        msg = (
            f"the input file {where!r} is larger than {MAX_INPUT_BYTES // (1024 * 1024)} MiB; "
            "give the run's input state, and let a node read big data from where it lives"
        )
        raise BadInput(msg)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        msg = (
            f"the input file {where!r} is not UTF-8 text (byte {raw[exc.start]:#04x} at "
            f"offset {exc.start}); save it as UTF-8 JSON"
        )
        raise BadInput(msg) from exc


def _parse_json(text: str, where: str, *, or_text: bool = False) -> Any:
    """Return ``text`` parsed as JSON; with ``or_text``, text that is not JSON as it is (so
    ``--resume yes`` works)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        if or_text:
            return text
        msg = (
            f"{where} is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
            """give an object such as '{"topic": "guards"}'"""
        )
        raise BadInput(msg) from exc
    except RecursionError as exc:
        msg = f"{where} is nested too deeply to read (JSON arrays or objects inside each other)"
        raise BadInput(msg) from exc
    except ValueError as exc:  # an integer past Python's digit limit
        found = re.search(r"has (\d+) digits", str(exc))
        size = f" ({found[1]} digits)" if found else ""
        msg = (
            f"{where} holds an integer too long to read{size}: Python reads at most "
            f"{sys.get_int_max_str_digits()} digits; send it as a JSON string"
        )
        raise BadInput(msg) from exc


def _check_thread(app: CompiledGraph[Any], args: argparse.Namespace, value: Any) -> None:
    """Refuse, with the command to use instead, a --thread/--resume that cannot go on.

    The runtime's own messages give Python advice (``invoke(...)``, ``Resume({...})``);
    the command line names its options instead.
    """
    thread: str = args.thread
    start = _command(args, thread, "--input", "JSON")
    try:
        snapshot = app.get_state(thread)
    except CheckpointError:
        if value is None or isinstance(value, Resume):
            where = command_db(args.db)
            msg = f"thread {thread!r} has no checkpoint in {where}; start it with:\n{start}"
            raise BadInput(msg) from None
        return
    if not isinstance(value, Resume):
        return
    if snapshot.status != "interrupted" or not snapshot.interrupts:
        msg = (
            f"thread {thread!r} is not waiting for an answer (status {snapshot.status!r});\n"
            f"leave out --resume to continue it, or start a new run with:\n{start}"
        )
        raise BadInput(msg)
    ids = [i.id for i in snapshot.interrupts if i.when == "during"]
    answer = value.value
    if len(ids) > 1 and not (isinstance(answer, dict) and answer and set(answer) <= set(ids)):
        msg = (
            f"thread {thread!r} has {len(ids)} pending interrupts; answer each by id:\n"
            f"{_command(args, thread, *resume_words(ids))}"
        )
        raise BadInput(msg)


class _Progress:
    """Print one stderr line per node run, with the step against the cap and guard counts.

    The number shown is the engine's step count, but never the same number twice: nodes
    of one superstep that do not finish (two ``Send`` runs that both ask a person) have
    not been counted yet, and each still gets its own line number. Entering a subgraph is
    not a node run: it gets a line without a number, and its node runs follow by path.
    """

    def __init__(self, cap: int, subgraphs: frozenset[str]) -> None:
        self.cap = cap
        self.shown = 0
        self.subgraphs = subgraphs
        """The paths of the subgraph nodes (``research``, ``research/inner``)."""

    def __call__(self, event: object) -> None:
        from corral.runtime.events import NodeRetry, NodeStart, Paused, RouteTaken

        if isinstance(event, NodeStart):
            send = " (Send)" if event.send else ""
            if event.node in self.subgraphs:
                print(f"        enter subgraph {event.node}{send}", file=sys.stderr)
                return
            self.shown = max(self.shown + 1, event.step)
            print(f"[{self.shown}/{self.cap}] {event.node}{send}", file=sys.stderr)
        elif isinstance(event, RouteTaken):
            target = event.target
            if target == END or target.endswith(f"/{END}"):  # a subgraph's END by path
                target = target[: -len(END)] + "END"
            if event.via == "otherwise":
                note = "guard used up"
                print(f"        {event.source} → {target} ({note})", file=sys.stderr)
            elif event.guard is not None:
                count, bound = event.guard
                print(f"        {event.source} → {target} (guard {count}/{bound})", file=sys.stderr)
        elif isinstance(event, NodeRetry):
            line = (
                f"        {event.node} attempt {event.attempt} failed ({event.error}); "
                f"retrying in {event.delay_s:g} s"
            )
            print("\n".join(fit_line(line)), file=sys.stderr)
        elif isinstance(event, Paused):
            names = ", ".join(dict.fromkeys(i.node for i in event.interrupts))
            print(f"        paused at {names}", file=sys.stderr)


def _command(args: argparse.Namespace, thread: str, *extra: str) -> str:
    """Return the ``corral run`` command that goes on with ``thread`` (with this run's
    ``--db`` and ``--deps``, then ``extra``), indented, on as many lines as 80 columns need."""
    return "\n".join(command_lines([*run_words(args.path, thread, args.db, args.deps), *extra]))


def waiting_lines(thread: str, interrupts: list[Interrupt], words: list[str]) -> list[str]:
    """Return what ``corral run`` and ``corral show`` say of a thread waiting for a person:
    each question asked (with its id) and each pause before or after a node, then the
    command that goes on (``words``: the thread's ``corral run``, given the answers)."""
    lines = fit_line(f"waiting for a person on thread {thread}:")
    asking = []
    for item in interrupts:
        if item.when != "during":
            lines.extend(fit_line(f"  paused {item.when} {item.node!r} (interrupt_{item.when})"))
            continue
        asking.append(item.id)
        payload = json.dumps(item.value, ensure_ascii=False, default=repr)
        lines.extend(fit_line(f"  {item.node} asks (id {item.id}): {payload}"))
    if not asking:
        lines.append("go on with:")
    elif len(asking) > 1:
        lines.append("answer each interrupt by id:")
    else:
        lines.append("resume with (VALUE is parsed as JSON when it is JSON):")
    return lines + command_lines([*words, *resume_words(asking)])


def _failed(exc: CorralError, args: argparse.Namespace, thread: str, cap: int) -> int:
    if args.verbose:
        traceback.print_exception(exc, file=sys.stderr)
    say(f"error: {exc}")
    cause = exc.__cause__
    if isinstance(exc, NodeError) and cause is not None and str(cause) not in str(exc):
        say(f"  caused by {type(cause).__name__}: {cause}")
    if isinstance(exc, StepLimitError):
        more = _command(args, thread, "--max-steps", str(cap * 2))
        print(f"the state reached is saved; continue with:\n{more}", file=sys.stderr)
    elif isinstance(exc, BudgetError):
        # twice the budget, and never less than what lets the refused node start
        larger = ",".join(
            f"{name}={max(value * 2, getattr(exc.spent, name) + getattr(exc.cost, name))}"
            for name in FIELDS
            if (value := getattr(exc.budget, name)) is not None
        )
        more = _command(args, thread, "--budget", larger)
        print(f"the state reached is saved; continue with:\n{more}", file=sys.stderr)
    elif isinstance(exc, (NodeError, NodeCapError, GuardExhaustedError)):
        say(f"the last checkpoint of thread {thread} is kept ({command_db(args.db)})")
    return 1
