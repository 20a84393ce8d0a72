"""``corral serve``: graphs over the Agent Protocol, with the inbox page (``corral.serve``)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from corral.cli._load import open_named
from corral.cli._options import seconds
from corral.loader import UsageError

__all__ = ["add_parser", "command"]


def add_parser(commands: Any) -> None:
    """Add the ``serve`` command to the ``corral`` parser's subcommands."""
    serve = commands.add_parser(
        "serve",
        db=True,
        help="serve graphs over HTTP (LangGraph SDK compatible) with an inbox page",
        description=(
            "Serve the named graphs over HTTP: the Agent Protocol's threads, runs and\n"
            "assistants in the shapes of the LangGraph server, so the LangGraph SDK works\n"
            "against it, and at / an inbox page where people answer waiting threads. Runs\n"
            "are queued in the database and run by this process's workers (--workers) or\n"
            "by `corral worker` processes on the same database. An assistant's id is its\n"
            "graph's name; PATH:name=alias serves it under another name.\n"
            "\n"
            "exit codes: 0 stopped, 2 a usage or load error"
        ),
        epilog=(
            "examples:\n"
            "  corral serve agents/support.py:graph --db runs.sqlite\n"
            "  CORRAL_SERVE_TOKEN=s3cret corral serve agents/ --db postgresql://app@db/agents \\\n"
            "      --host 0.0.0.0 --workers 8"
        ),
    )
    serve.add_argument("paths", nargs="+", metavar="PATH", help="FILE.py[:graph][=name] ...")
    serve.add_argument("--host", default="127.0.0.1", help="(default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=2024, help="(default: 2024)")
    serve.add_argument(
        "--workers",
        type=_count,
        default=2,
        metavar="N",
        help="runs this process runs at once; 0 leaves them to `corral worker` (default: 2)",
    )
    serve.add_argument(
        "--auth-token",
        metavar="TOKEN",
        default=os.environ.get("CORRAL_SERVE_TOKEN"),
        help="every API call needs it (Bearer or x-api-key) (default: $CORRAL_SERVE_TOKEN)",
    )
    serve.add_argument(
        "--max-body",
        type=_count,
        default=1 << 20,
        metavar="BYTES",
        help="larger request bodies get 413 (default: 1048576)",
    )
    serve.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="let a browser UI on ORIGIN call the API (repeatable)",
    )
    serve.add_argument("--deps", metavar="MODULE:FACTORY", help="passed to every node as deps")
    serve.add_argument(
        "--lease",
        type=seconds,
        default=30.0,
        metavar="SECONDS",
        help="a run whose server died is taken over this long after it (default: 30)",
    )
    serve.set_defaults(handler=command)


def _count(text: str) -> int:
    if not text.isdigit():
        msg = f"{text!r} is not a whole number, 0 or more"
        raise argparse.ArgumentTypeError(msg)
    return int(text)


def command(args: argparse.Namespace) -> int:
    """Run ``corral serve`` until SIGTERM/Ctrl-C."""
    try:
        import uvicorn

        from corral.serve import create_app
    except ImportError as exc:
        msg = f"corral serve needs the serve extra: pip install 'corral[serve]' ({exc})"
        raise UsageError(msg) from exc
    with open_named(args, args.paths, pool=args.workers + 8) as (graphs, deps):
        app = create_app(
            graphs,
            workers=args.workers,
            deps=deps,
            token=args.auth_token or None,
            max_body=args.max_body,
            cors_origins=tuple(args.cors_origin),
            secrets=(args.db,),
            lease_s=args.lease,
        )
        uvicorn.run(app, host=args.host, port=args.port, log_level="info", access_log=False)
    return 0
