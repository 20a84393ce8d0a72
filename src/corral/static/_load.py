"""Loading for ``corral lint --static``: the files to read, mypy builds, graphs to targets.

The files are those the import-based ``corral lint`` would import (the one folder walk,
:func:`corral.sources.python_files`); they are built in batches in which no two files share
a module name, and each batch's graphs are read by :class:`~corral.static._reader.Reader`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib.metadata import packages_distributions
from typing import Any

from corral.loader import Loaded, LoadError, Target, UsageError, split_selector
from corral.sources import (
    UnreadableFile,
    display_path,
    exclude_patterns,
    python_files,
    read_source,
)
from corral.spec import GraphSpec
from corral.static._expressions import StaticError
from corral.static._reader import Reader

__all__ = ["StaticTarget", "load_static"]


@dataclass
class StaticTarget(Target):
    """A graph read by mypy: its spec is already built."""

    static_spec: GraphSpec | None = field(default=None, repr=False)

    def spec(self) -> GraphSpec:
        """Return the spec read from mypy's view of the module."""
        assert self.static_spec is not None
        return self.static_spec


def load_static(paths: Sequence[str], *, exclude: Sequence[str] = ()) -> Loaded:
    """Read every graph under ``paths`` with mypy's build API, running none of their code.

    Args:
        paths: ``.py`` files or folders (searched for ``.py`` files that mention corral).
        exclude: fnmatch patterns, as for ``corral lint --exclude``.

    Raises:
        UsageError: a path that does not exist, or mypy is not installed.
    """
    try:
        from mypy import build
        from mypy.errors import CompileError
        from mypy.find_sources import create_source_list
    except ImportError as exc:  # pragma: no cover - mypy is a dev dependency
        msg = "corral lint --static needs mypy (pip install mypy); or lint without --static"
        raise UsageError(msg) from exc
    loaded = Loaded()
    for argument in paths:
        path, wanted = split_selector(argument)
        files = _files(path, exclude, loaded)
        loaded.modules += len(files)
        found = Loaded()
        for batch in _batches(files, create_source_list):
            _read_batch(batch, found, build, CompileError)
        if wanted is not None:
            found.targets = [t for t in found.targets if wanted in t.aliases]
            if not found.targets and not found.errors:
                msg = f"{path} defines no graph called {wanted!r}"
                raise UsageError(msg)
        loaded.targets.extend(found.targets)
        loaded.errors.extend(found.errors)
    return loaded


def _options(own: frozenset[str] = frozenset()) -> Any:
    """Return mypy's options for a build whose files belong to the top-level packages
    ``own`` (which mypy follows even where they are installed)."""
    from mypy.options import Options

    options = Options()
    options.preserve_asts = True
    options.export_types = True
    options.incremental = False
    options.follow_imports = "silent"
    options.python_version = (3, 11)
    for name in _installed_packages():
        if name in own:
            continue
        options.per_module_options[name] = {"follow_imports": "skip"}
        options.per_module_options[name + ".*"] = {"follow_imports": "skip"}
    return options


@cache
def _installed_packages() -> tuple[str, ...]:
    """Return the top-level packages installed from distributions, corral and the typing
    helpers aside: mypy does not follow imports into them (they are ``Any`` to the reader).

    A graph's modules need corral's types and their own; reading an SDK such as openai's or
    pydantic's took mypy 95 % of ``lint --static`` (36 of 38 CPU s over ``examples/``) and
    changed no finding. The linted files' own top-level packages are followed even when
    they are installed (``pip install -e .``).
    """
    keep = {"corral", "typing_extensions", "mypy_extensions"}
    names = packages_distributions()
    return tuple(n for n in names if n.isidentifier() and n not in keep)


def _batches(files: list[str], create_source_list: Any) -> list[list[Any]]:
    """Split the files into builds in which no two files have the same module name.

    Two scripts called ``agent.py`` in different folders are both module ``agent`` to mypy,
    which refuses a build holding both; each goes into its own build instead (the first
    build that has no ``agent`` yet), and graphs are read per build, so they never mix.
    """
    if not files:
        return []
    batches: list[list[Any]] = []
    taken: list[set[str]] = []
    for source in create_source_list(files, _options()):
        for batch, names in zip(batches, taken, strict=True):
            if source.module not in names:
                batch.append(source)
                names.add(source.module)
                break
        else:
            batches.append([source])
            taken.append({source.module})
    return batches


def _read_batch(sources: list[Any], loaded: Loaded, build: Any, compile_error: Any) -> None:
    """Build one batch with mypy and add its graphs (or its errors) to ``loaded``."""
    try:
        own = frozenset(s.module.partition(".")[0] for s in sources)
        result = build.build(sources, _options(own))
    except compile_error as exc:
        names = ", ".join(s.path for s in sources)
        loaded.errors.append(LoadError(names, exc, "\n".join(exc.messages)))
        return
    wanted = {s.module for s in sources}
    found = [result.graph[m].tree for m in sorted(wanted) if m in result.graph]
    trees = [tree for tree in found if tree is not None]
    reader = Reader(result.types)
    for tree in trees:
        reader.find_graphs(tree)
    for tree in trees:
        reader.find_functions(tree)
    shown = list(reader.graphs.values())
    # A child graph defined in a module that was only imported is read too, not reported.
    for module in reader.child_modules():
        state = result.graph.get(module)
        if state is not None and state.tree is not None and module not in wanted:
            reader.find_graphs(state.tree)
            reader.find_functions(state.tree)
    for graph in shown:
        try:
            spec = reader.spec(graph)
        except StaticError as exc:
            loaded.errors.append(LoadError(graph.path, exc, str(exc)))
            continue
        name = graph.fullname.rpartition(".")[2]
        loaded.targets.append(StaticTarget(name, graph.path, aliases=(name,), static_spec=spec))
    for path, line, problem in reader.errors:
        loaded.errors.append(LoadError(f"{path}:{line}", problem, str(problem)))


def _files(path: str, exclude: Sequence[str], loaded: Loaded) -> list[str]:
    """Return the files under ``path`` that ``corral lint`` (without --static) would import."""
    if not os.path.lexists(path):
        msg = f"{path!r} does not exist; corral lint --static takes .py files and folders"
        raise UsageError(msg)
    files = []
    for file in python_files(path, exclude_patterns(exclude), only_marked=True):
        if file.problem is None:
            files.append(file.path)
            if _imports_langgraph(file.path):
                _read_langgraph(file.path, loaded)
        else:
            loaded.errors.append(LoadError(display_path(file.path), file.problem, ""))
    return files


def _read_langgraph(file: str, loaded: Loaded) -> None:
    """Add the LangGraph graphs ``file`` wires, or say why it must be imported to read them."""
    from corral.static._langgraph import read_langgraph

    shown = display_path(file)
    try:
        targets, problem = read_langgraph(file, read_source(file).decode(), shown)
    except Exception as exc:  # LangGraph refused the replayed wiring: the import says why
        targets, problem = [], f"replaying its wiring failed ({type(exc).__name__}: {exc})"
    loaded.targets.extend(targets)
    if problem is not None:
        loaded.langgraph_modules.append(f"{shown}: {problem}")


_IMPORT_LANGGRAPH = re.compile(rb"^[ \t]*(?:from|import)[ \t]+langgraph\b", re.MULTILINE)


def _imports_langgraph(file: str) -> bool:
    """Return whether ``file`` imports LangGraph (whose graphs mypy's reading cannot see)."""
    try:
        return _IMPORT_LANGGRAPH.search(read_source(file)) is not None
    except UnreadableFile:
        return False
