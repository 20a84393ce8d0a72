"""What a command loads: the graph it names, compiled with ``--db``'s saver, and ``--deps``."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from corral.cli._shell import say
from corral.errors import GraphError
from corral.loader import Target, UsageError, display_path, import_module, load, split_selector

if TYPE_CHECKING:
    from corral.checkpoint import Checkpointer
    from corral.runtime.app import CompiledGraph

__all__ = ["BadInput", "LoadFailed", "compile_target", "load_deps", "open_named", "load_one"]


class LoadFailed(Exception):
    """The one graph a command needs could not be loaded; the errors were printed."""


class BadInput(Exception):
    """An ``--input`` or ``--resume`` value that cannot be used: the command exits with 1."""


def load_one(argument: str, *, verbose: bool, allow_partial: bool = True) -> Target:
    """Load ``PATH[:name]`` and return its one graph.

    Load errors are printed to stderr. A module that failed to import after defining its
    graph (``app = g.compile()`` at module level on a broken graph) still yields that graph
    when ``allow_partial`` is true, with a note, so ``draw`` and ``cycles`` can show the defect.

    Raises:
        UsageError: no graph, or several and no ``:name`` to pick one.
        LoadFailed: the module could not be imported (the error was printed).
    """
    loaded = load([argument])
    problems = [(e.message, e.formatted) for e in loaded.errors]
    for source, err in loaded.graph_errors:
        codes = ", ".join(dict.fromkeys(d.code for d in err.diagnostics if d.severity == "error"))
        problems.append((f"cannot import {source}: GraphError: the graph has errors ({codes})", ""))
    targets = loaded.targets
    usable = targets if allow_partial else [t for t in targets if not t.failed]
    if problems and len(usable) != 1:
        for message, formatted in problems:
            if verbose and formatted:
                print(formatted, file=sys.stderr, end="")
            say(f"error: {message}")
        if loaded.graph_errors:
            print("hint: `corral lint` lists the findings", file=sys.stderr)
        raise LoadFailed
    path, _ = split_selector(argument)
    if not usable:
        msg = f"{path} defines no corral Graph (or compiled app) at module level"
        raise UsageError(msg)
    if len(usable) > 1:
        names = ", ".join(t.name for t in usable)
        msg = f"{path} defines {len(usable)} graphs ({names}); pick one with {usable[0].label}"
        raise UsageError(msg)
    target = usable[0]
    if target.failed:
        say(
            f"note: {target.source} failed to import after defining {target.name!r}; "
            "showing the graph as it was defined"
        )
    return target


def load_deps(spec: str, *, verbose: bool) -> Any:
    """Import ``module:factory`` and return ``factory()`` (or the object, if not callable)."""
    module_name, sep, attr = spec.rpartition(":")
    if not sep or not module_name or not attr:
        msg = f"--deps {spec!r} must be MODULE:FACTORY, e.g. my_tools:make_clients"
        raise UsageError(msg)
    try:
        module = import_module(module_name)
    except ImportError as exc:
        if verbose and exc.__cause__ is not None:
            traceback.print_exception(exc.__cause__, file=sys.stderr)
        msg = f"--deps: {exc}"
        raise UsageError(msg) from exc
    factory = getattr(module, attr, None)
    if factory is None:
        msg = f"--deps: {module_name} has no attribute {attr!r}"
        raise UsageError(msg)
    if not callable(factory):
        return factory
    try:
        return factory()
    except Exception as exc:
        if verbose:
            traceback.print_exc()
        msg = f"--deps: {attr}() raised {type(exc).__name__}: {exc}"
        raise UsageError(msg) from exc


def compile_target(target: Target, saver: Checkpointer) -> CompiledGraph[Any]:
    """Compile the target with the checkpointer of --db, keeping a compiled app's settings.

    Raises:
        LoadFailed: the graph does not compile (its findings were printed).
    """
    from corral.runtime.app import CompiledGraph  # the engine, only for a command that runs

    if target.langgraph is not None:
        msg = (
            f"{target.label} is a LangGraph graph: corral lints, draws and ports it but does not "
            f"run it; run it with LangGraph, or `corral port {target.label}` to move it to corral"
        )
        raise UsageError(msg)
    app = target.app
    kept: dict[str, Any] = {"checkpointer": saver}
    if app is not None:
        kept.update(
            interrupt_before=app.interrupt_before,
            interrupt_after=app.interrupt_after,
            max_steps=app.max_steps,
        )
    try:
        if target.graph is not None:
            return target.graph.compile(**kept)
        assert app is not None
        return CompiledGraph(app.spec, **kept)
    except GraphError as exc:
        errors = [d for d in exc.diagnostics if d.severity == "error"]
        if not errors:
            say(f"error: {target.label} does not compile: {exc}")
        else:
            say(f"error: {target.label} does not compile ({len(errors)} errors):")
        for d in errors:
            where = f"{display_path(d.file)}:{d.line}:{d.col}"
            print(f"  {where}: {d.code} {d.message}", file=sys.stderr)
        raise LoadFailed from exc


@contextmanager
def open_named(args: Any, paths: list[str], pool: int) -> Iterator[tuple[dict[str, Any], Any]]:
    """Yield ``corral serve``'s and ``corral worker``'s graphs and ``--deps``: every
    ``PATH[:graph][=name]`` compiled with one saver of ``--db`` (``pool`` connections,
    closed at the end), under the name its runs are queued with (``name``, else the graph's
    own name, else its variable's). Both commands name graphs alike, so a worker started
    with the server's PATH takes exactly that graph's runs; two graphs with one name are
    refused."""
    from corral.checkpoint import open_saver

    deps = load_deps(args.deps, verbose=args.verbose) if args.deps else None
    saver = open_saver(args.db, max_size=pool)
    try:
        graphs: dict[str, Any] = {}
        for argument in paths:
            path, _, alias = argument.partition("=")
            target = load_one(path, verbose=args.verbose, allow_partial=False)
            app = compile_target(target, saver)
            name = alias or app.spec.name or target.name
            if name in graphs:
                msg = (
                    f"two graphs are named {name!r} ({argument!r} and another); "
                    f"serve one under another name with PATH:graph=NAME"
                )
                raise UsageError(msg)
            graphs[name] = app
        yield graphs, deps
    finally:
        saver.close()
