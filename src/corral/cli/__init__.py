"""The command line: ``corral lint``, ``draw``, ``cycles`` and ``run``.

``main(argv)`` parses the arguments, runs one command and returns its exit code; it never
raises for a user's mistake (a bad path, a module that fails to import, bad JSON): it prints
``error: ...`` to stderr and returns 2 (or 1 for a run that failed). ``--verbose`` adds the
traceback.

>>> main(["lint", "--explain", "CR201"])  # doctest: +ELLIPSIS
CR201 unguarded-cycle (error)
...
0
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
import traceback
from collections.abc import Sequence
from typing import Any

from corral import __version__
from corral.cli import _draw, _lint, _port, _serve, _worker
from corral.cli._lint_formats import FORMATS
from corral.cli._load import BadInput, LoadFailed
from corral.cli._options import DEFAULT_DB
from corral.cli._options import budget as _budget
from corral.cli._options import positive as _positive
from corral.cli._options import seconds as _seconds
from corral.cli._options import thread_id as _thread_id
from corral.cli._shell import say
from corral.errors import CorralError

__all__ = ["main"]

_PATH_HELP = (
    "a .py file, a folder (searched for .py files) or a dotted module name; "
    "PATH:name picks one graph"
)


def _formatter(prog: str) -> argparse.HelpFormatter:
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=32)


class _CommandParser(argparse.ArgumentParser):
    """The parser of one command: its help laid out as written, ``--verbose``, and with
    ``db=True`` the ``--db`` of the commands that read or write checkpoints."""

    def __init__(self, *, db: bool = False, **options: Any) -> None:
        super().__init__(formatter_class=_formatter, **options)
        self.add_argument(
            "-v", "--verbose", action="store_true", help="show tracebacks for load and run errors"
        )
        if db:
            self.add_argument(
                "--db",
                metavar="FILE|URL",
                default=DEFAULT_DB,
                help=f"SQLite checkpoint file or postgresql:// URL (default: {DEFAULT_DB})",
            )


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of the ``corral`` command."""
    parser = argparse.ArgumentParser(
        prog="corral",
        description="Check, draw and run corral graphs.",
        epilog=(
            "examples:\n"
            "  corral lint examples --exclude examples/broken\n"
            "                                       check every graph under examples/ but the\n"
            "                                       deliberately broken ones\n"
            "  corral draw examples/draft_loop.py   print a Mermaid flowchart\n"
            "  corral cycles examples/draft_loop.py list the loops and their guards\n"
            "  corral run examples/draft_loop.py --deps examples/draft_loop.py:FakeWriter \\\n"
            '      --input \'{"topic": "guards", "score": 0}\'\n'
            "\n"
            "`corral COMMAND --help` shows each command's options."
        ),
        formatter_class=_formatter,
    )
    parser.add_argument("--version", action="version", version=f"corral {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_CommandParser)

    lint = commands.add_parser(
        "lint",
        help="report unbounded cycles, dead nodes and the other rules",
        description=(
            "Import the modules under PATH (their module-level code runs, as under pytest,\n"
            "in a separate worker process), check every graph they define, and print one\n"
            "line per finding. A module that hangs, crashes or exits while importing is a\n"
            "load error; the other files are still checked.\n"
            "\n"
            "exit codes: 0 no error found (warnings alone exit 0), 1 an error was found,\n"
            "            2 a usage error or a module that cannot be imported"
        ),
        epilog=(
            "examples:\n"
            "  corral lint examples --exclude examples/broken\n"
            "  corral lint app/agent.py:graph --select CR2\n"
            "  corral lint src --ignore CR202 --format github\n"
            "  corral lint src --format sarif > corral.sarif\n"
            "  corral lint --explain CR201"
        ),
    )
    lint.add_argument("paths", nargs="*", metavar="PATH", help=_PATH_HELP)
    lint.add_argument(
        "--format", choices=FORMATS, default="text", help="output format (default: text)"
    )
    lint.add_argument(
        "--select",
        action="append",
        default=[],
        metavar="CODES",
        help="report only these codes or prefixes, comma-separated (CR2 = every cycle rule)",
    )
    lint.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="CODES",
        help="do not report these codes or prefixes; the longer prefix wins over --select",
    )
    lint.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="PATTERN",
        help="skip files and folders matching this fnmatch pattern (repeatable)",
    )
    lint.add_argument(
        "--docs-url",
        metavar="URL",
        help="address of the published rules page; SARIF rules link to URL#cr201 (helpUri)",
    )
    lint.add_argument(
        "--import-timeout",
        type=_seconds,
        default=10.0,
        metavar="SECONDS",
        help="CPU seconds one module may use to import and check (waiting does not count; "
        "3x this in wall-clock time at most); past it, a load error (default: 10)",
    )
    lint.add_argument("--explain", metavar="CODE", help="print the docs of one rule and exit")
    lint.add_argument(
        "--static",
        action="store_true",
        help="read the modules with mypy instead of importing them (no module code runs)",
    )
    lint.set_defaults(handler=_lint.command)

    draw = commands.add_parser(
        "draw",
        db=True,
        help="print the graph as Mermaid or Graphviz DOT text",
        description=(
            "Print one graph as a Mermaid flowchart (default) or Graphviz DOT text.\n"
            "Solid arrows are fixed routes, thick ones fan-outs, dashed ones conditional\n"
            "routes; a guarded route is labelled with its bound (≤3) and a dotted arrow\n"
            "shows where the run goes once the guard is used up. A subgraph is drawn as a\n"
            "block holding its child's nodes (--collapse: as one node). The title gives\n"
            "the most node runs one run can take (g.bound())."
        ),
        epilog=(
            "examples:\n"
            "  corral draw examples/draft_loop.py\n"
            "  corral draw examples/draft_loop.py:g --format dot | dot -Tsvg > loop.svg"
        ),
    )
    draw.add_argument("path", metavar="PATH", help=_PATH_HELP)
    draw.add_argument(
        "--format", choices=("mermaid", "dot"), default="mermaid", help="default: mermaid"
    )
    draw.add_argument(
        "--collapse", action="store_true", help="draw each subgraph as one node, not its nodes"
    )
    draw.add_argument(
        "--thread",
        type=_thread_id,
        metavar="ID",
        help="draw the routes this thread took (thick, ×N) and its guard counts (with --db)",
    )
    draw.set_defaults(handler=_draw.draw)

    cycles = commands.add_parser(
        "cycles",
        help="list the elementary cycles and the guard that bounds each",
        description=(
            "List the elementary cycles of one graph, unguarded ones first, each with the\n"
            "guards on its routes. The list stops at --limit cycles and says so."
        ),
        epilog=(
            "examples:\n"
            "  corral cycles examples/draft_loop.py\n"
            "  corral cycles agents.support:graph --limit 20\n"
            "  corral cycles examples/research_team.py --format json"
        ),
    )
    cycles.add_argument("path", metavar="PATH", help=_PATH_HELP)
    cycles.add_argument(
        "--limit", type=_positive, default=100, help="list at most N cycles (default: 100)"
    )
    cycles.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text, or json with the cycles, the step bound and the cost ceiling",
    )
    cycles.set_defaults(handler=_draw.cycles)

    run = commands.add_parser(
        "run",
        db=True,
        help="run a graph, checkpointing to SQLite",
        description=(
            "Run one graph, checkpointing every superstep to a SQLite file. Progress goes\n"
            "to stderr; the state reached is printed as JSON on stdout.\n"
            "\n"
            "exit codes: 0 the run finished, 3 it waits for a person (stderr shows the\n"
            "            payload and the command that resumes it), 1 a cap, a node error\n"
            "            or bad input (the checkpoint is kept), 2 a usage or load error"
        ),
        epilog=(
            "examples:\n"
            "  corral run examples/draft_loop.py --deps examples/draft_loop.py:FakeWriter \\\n"
            '      --input \'{"topic": "guards", "score": 0}\'\n'
            "  corral run agent.py --input @request.json --deps agent_tools:make_clients\n"
            "  corral run agent.py --thread 7f3a --resume yes\n"
            "  corral run agent.py --thread 7f3a --max-steps 200     # continue after a cap"
        ),
    )
    run.add_argument("path", metavar="PATH", help=_PATH_HELP)
    run.add_argument(
        "--input",
        metavar="JSON",
        help="the input state as JSON, or @file.json (default: {} for a new thread)",
    )
    run.add_argument(
        "--thread",
        type=_thread_id,
        metavar="ID",
        help="thread to start or continue (default: a new one)",
    )
    run.add_argument(
        "--resume",
        metavar="VALUE",
        help="answer the pending interrupt of --thread (parsed as JSON when it is JSON)",
    )
    run.add_argument(
        "--max-steps", type=_positive, metavar="N", help="cap on node runs for this invocation"
    )
    run.add_argument(
        "--budget",
        type=_budget,
        metavar="FIELD=AMOUNT,...",
        help="the most this run may spend, e.g. usd=0.5,tokens=100000 (fields: usd, tokens, "
        "calls); it stops before a node that could pass it, and goes on with a larger one",
    )
    run.add_argument(
        "--deps",
        metavar="MODULE:FACTORY",
        help="call FACTORY() from MODULE (a dotted name or a .py file) and pass it as deps",
    )
    run.set_defaults(handler=_run_command)
    _add_thread_commands(commands)
    _worker.add_parser(commands)
    _serve.add_parser(commands)
    _port.add_parser(commands)
    return parser


def _add_thread_commands(commands: Any) -> None:
    """Add ``threads``, ``history`` and ``show``: read a checkpoint database, never write."""
    from corral.cli import _threads

    listing = commands.add_parser(
        "threads",
        db=True,
        help="list the threads of a checkpoint database",
        description=(
            "List every thread: its status, steps, last update time (UTC) and next nodes.\n"
            "The threads a subgraph's child runs on are left out unless --all is given."
        ),
    )
    listing.add_argument(
        "--all", action="store_true", help="list subgraph child threads too (marked by parent)"
    )
    listing.set_defaults(handler=_threads.threads)
    past = commands.add_parser(
        "history",
        db=True,
        help="list the checkpoints of one thread",
        description=(
            "One row per checkpoint of THREAD, oldest first: its id, the step count, the\n"
            "nodes that ran, the status and the keys they wrote."
        ),
        epilog="examples:\n  corral history t1 --db runs.sqlite --format json",
    )
    past.add_argument("thread", type=_thread_id, metavar="THREAD")
    past.set_defaults(handler=_threads.history)
    now = commands.add_parser(
        "show",
        db=True,
        help="show one thread: state, next nodes, guards, pending interrupts",
        description=(
            "Show THREAD at its newest checkpoint: status, next nodes, guard counts,\n"
            "pending interrupts with their ids and the command that answers them, and the\n"
            "state. --graph PATH adds each guard's max and rebuilds the state with the\n"
            "graph's reducers when the checkpoint holds only what changed."
        ),
        epilog="examples:\n  corral show t1 --db runs.sqlite --graph agent.py",
    )
    now.add_argument("thread", type=_thread_id, metavar="THREAD")
    now.add_argument("--graph", metavar="PATH", help=_PATH_HELP)
    now.set_defaults(handler=_threads.show)
    for command in (listing, past, now):
        command.add_argument("--format", choices=("text", "json"), default="text")


def _run_command(args: argparse.Namespace) -> int:
    from corral.cli import _run  # imports the runtime only when something runs

    return _run.command(args)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``corral`` command line with ``argv`` and return its exit code."""
    _reopen_closed_streams()
    _make_output_safe()
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors
        return exc.code if isinstance(exc.code, int) else 2
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        code: int = args.handler(args)
    except LoadFailed:  # the load errors were printed
        return 2
    except BadInput as exc:  # what the run was given cannot be used: it is a failed run
        say(f"error: {exc}")
        return 1
    except CorralError as exc:  # a usage error, or e.g. a state schema that is not a TypedDict
        if args.verbose:
            traceback.print_exc()
        say(f"error: {exc}")
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:  # stdout's reader went away (| head), or its device is full
        if isinstance(exc, BrokenPipeError) or (exc.errno in _DEVICE_FULL and exc.filename is None):
            return _output_lost(exc)
        return _failed(args, exc)
    except Exception as exc:
        return _failed(args, exc)
    finally:
        try:
            sys.stdout.flush()
        except OSError as exc:
            code = _output_lost(exc)
    return code


def _failed(args: argparse.Namespace, exc: BaseException) -> int:
    if args.verbose:
        traceback.print_exception(exc)
    say(
        f"error: corral {args.command} failed: {type(exc).__name__}: {exc} "
        "(a bug in corral? --verbose shows the traceback)"
    )
    return 2


_DEVICE_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})
"""What a write to a device that refuses it raises (``> /dev/full``)."""


def _output_lost(exc: OSError) -> int:
    """Stop when stdout cannot take the output.

    When its reader has gone (``corral draw x.py | head -5``), quietly, with 141: what a
    shell reports for a process ended by SIGPIPE. Otherwise the error says so (what was
    done is kept), with 1. Later writes (and the interpreter's flush at exit) go to
    ``os.devnull``, so Python does not print a second error.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    if isinstance(exc, BrokenPipeError):
        return 141
    say(
        f"error: cannot write the output to stdout: {exc.strerror}; free space where stdout "
        "goes, or send it elsewhere (checkpoints already written are kept)"
    )
    return 1


def _reopen_closed_streams() -> None:
    """Write to ``os.devnull`` when stdout or stderr was closed (``corral run ... >&-``).

    Python sets ``sys.stdout`` to ``None`` when fd 1 is closed at start; without this the
    first flush is an ``AttributeError`` after a run that worked.
    """
    if sys.stdout is None:
        sys.stdout = open(os.devnull, "w", encoding="utf-8")
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")


def _make_output_safe() -> None:
    """Print arrows and ``≤`` on terminals that cannot encode them, instead of crashing."""
    for stream in (sys.stdout, sys.stderr):
        encoding = getattr(stream, "encoding", None) or "ascii"
        try:
            "→≤".encode(encoding)
        except (UnicodeEncodeError, LookupError):
            reconfigure = getattr(stream, "reconfigure", None)
            if reconfigure is not None:
                reconfigure(errors="replace")
