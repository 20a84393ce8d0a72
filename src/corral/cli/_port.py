"""``corral port``: print a corral module skeleton for a LangGraph graph."""

from __future__ import annotations

import argparse
from typing import Any

from corral.loader import UsageError, dotted_name, split_selector

__all__ = ["add_parser", "command"]


def add_parser(commands: Any) -> None:
    """Add the ``port`` command to the ``corral`` parser's subcommands."""
    port = commands.add_parser(
        "port",
        help="print a corral module skeleton for a LangGraph graph",
        description=(
            "Print a corral module that re-declares one LangGraph graph: its node functions\n"
            "imported from the original module, each router re-declared with a Literal\n"
            "return annotation (through its path_map), and a Guard placeholder on each\n"
            "route where CR201 would cut a loop. Review it: what corral cannot know is left\n"
            "as a TODO comment."
        ),
        epilog=(
            "examples:\n"
            "  corral port agent.py:graph > agent_corral.py\n"
            "  corral port myapp.agents.research"
        ),
    )
    port.add_argument("path", metavar="PATH", help="FILE.py[:graph] or module[:graph]")
    port.set_defaults(handler=command)


def command(args: argparse.Namespace) -> int:
    """Print the port of one LangGraph graph; return 0."""
    from corral import langgraph
    from corral.cli._load import load_one

    target = load_one(args.path, verbose=args.verbose)
    if target.langgraph is None:
        msg = f"{target.label} is a corral graph already; corral port reads LangGraph graphs"
        raise UsageError(msg)
    path, _ = split_selector(args.path)
    module = dotted_name(path) if path.endswith((".py", ".pyw")) else path
    print(langgraph.port(target.langgraph, module=module, name=target.name), end="")
    return 0
