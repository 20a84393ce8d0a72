"""``corral worker``: run the queued runs of one graph (see :mod:`corral.workers`)."""

from __future__ import annotations

import argparse
import signal
from typing import Any

from corral.cli._options import positive, seconds

__all__ = ["add_parser", "command"]


def add_parser(commands: Any) -> None:
    """Add the ``worker`` command to the ``corral`` parser's subcommands."""
    worker = commands.add_parser(
        "worker",
        db=True,
        help="run queued runs of a graph (app.submit), many workers on one database",
        description=(
            "Take the runs queued with app.submit(...) for one graph and run them, each\n"
            "under a lease renewed by heartbeat, so two workers never run one thread at\n"
            "once and a run whose worker died is taken over after --lease seconds from\n"
            "its last checkpoint. Start as many workers as you like, on any machines that\n"
            "reach the database. Events go to stderr as JSON lines. SIGTERM or Ctrl-C:\n"
            "take no new run, finish the held ones within --grace seconds, release the rest.\n"
            "\n"
            "exit codes: 0 stopped cleanly, 2 a usage or load error"
        ),
        epilog=(
            "examples:\n"
            "  corral worker agents/support.py:graph --db postgresql://app@db/agents \\\n"
            "      --concurrency 8\n"
            "  corral worker agent.py --db runs/checkpoints.sqlite   # workers on one machine\n"
            "  corral worker agent.py --db postgresql://app@db/agents --deps agent_tools:clients"
        ),
    )
    worker.add_argument(
        "path",
        metavar="PATH",
        help="FILE.py[:graph][=NAME] or module[:graph][=NAME]: takes the runs served as NAME "
        "(default: the graph's name, as corral serve names it)",
    )
    worker.add_argument(
        "--concurrency", type=positive, default=1, metavar="N", help="runs at once (default: 1)"
    )
    worker.add_argument(
        "--lease",
        type=seconds,
        default=30.0,
        metavar="SECONDS",
        help="a run is taken over this long after its worker's last heartbeat (default: 30)",
    )
    worker.add_argument(
        "--poll",
        type=seconds,
        default=0.5,
        metavar="SECONDS",
        help="how often an idle worker asks for work (default: 0.5)",
    )
    worker.add_argument(
        "--grace",
        type=seconds,
        default=30.0,
        metavar="SECONDS",
        help="after SIGTERM, how long held runs may take before release (default: 30)",
    )
    worker.add_argument(
        "--until-idle", action="store_true", help="stop once no queued run is ready"
    )
    worker.add_argument(
        "--deps",
        metavar="MODULE:FACTORY",
        help=(
            "call FACTORY() from MODULE (a dotted name or a .py file) once, when the worker "
            "starts, and pass the result as deps to every run (nodes read it as ctx.deps)"
        ),
    )
    worker.set_defaults(handler=command)


def command(args: argparse.Namespace) -> int:
    """Run ``corral worker`` until SIGTERM/Ctrl-C (or an empty queue with --until-idle)."""
    from corral.cli._load import open_named
    from corral.workers import Worker

    with open_named(args, [args.path], pool=args.concurrency + 2) as (graphs, deps):
        worker = Worker(
            next(iter(graphs.values())),
            graphs=graphs,
            concurrency=args.concurrency,
            lease_s=args.lease,
            poll_s=args.poll,
            grace_s=args.grace,
            deps=deps,
        )
        stopping = (signal.SIGTERM, signal.SIGINT)
        found = {signum: signal.signal(signum, lambda *_: worker.stop()) for signum in stopping}
        try:
            worker.run(until_idle=args.until_idle)
        finally:  # main() may run in-process (a test, an app): give the signals back
            for signum, handler in found.items():
                if handler is not None:  # None: set outside Python, cannot be put back
                    signal.signal(signum, handler)
    return 0
