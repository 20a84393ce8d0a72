"""Find the graphs of a ``.py`` file, a folder or a dotted module, the way the CLI does.

Loading *imports* the modules, as pytest does: their module-level code runs. Each module-level
:class:`~corral.dsl.Graph` and compiled app (:class:`~corral.runtime.app.CompiledGraph`) becomes
one :class:`Target`; a compiled app built from a graph found in the same module is folded into
that graph's target, so a module with ``g = Graph(...)`` and ``app = g.compile()`` holds one
target, reachable as ``:g`` and as ``:app`` (and named in messages as it was picked).

A module whose import fails is a :class:`LoadError`, never an exception; when the import raised
:class:`~corral.errors.GraphError` (``app = g.compile()`` at module level on a broken graph) the
error is kept, and the graphs the module had defined before the failure are still offered as
targets, so ``draw`` and ``cycles`` can show the defect.

>>> found = load(["corral.spec"])
>>> found.targets, found.errors
([], [])
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
import traceback
import types
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from corral.errors import GraphError
from corral.found import Target, find_targets
from corral.sources import (
    UnreadableFile,
    UsageError,
    check_regular,
    display_path,
    exclude_patterns,
    mentions_corral,
    python_files,
)

__all__ = [
    "LoadError",
    "Loaded",
    "Target",
    "UnreadableFile",
    "UsageError",
    "display_path",
    "dotted_name",
    "exclude_patterns",
    "find_targets",
    "import_module",
    "import_modules",
    "is_module_name",
    "load",
    "python_files",
    "split_selector",
]

_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


@dataclass(frozen=True)
class LoadError:
    """A module that could not be imported."""

    source: str
    """The file (or module name) that failed, as shown to the user."""
    exc: BaseException
    formatted: str
    """The full traceback, shown with ``--verbose``."""

    @property
    def message(self) -> str:
        """Return one line naming the file and the exception."""
        if isinstance(self.exc, UnreadableFile):
            return f"cannot read {self.source}: it {self.exc.problem}"
        text = str(self.exc).strip().splitlines()
        detail = f": {text[0]}" if text else ""
        return f"cannot import {self.source}: {type(self.exc).__name__}{detail}"


@dataclass
class Loaded:
    """What :func:`load` found: graph targets, modules that failed, and how many files it read."""

    targets: list[Target] = field(default_factory=list)
    errors: list[LoadError] = field(default_factory=list)
    graph_errors: list[tuple[str, GraphError]] = field(default_factory=list)
    """Modules whose import raised ``GraphError``: ``(source, error)``."""
    modules: int = 0
    """How many modules were imported (or tried)."""
    langgraph_modules: list[str] = field(default_factory=list)
    """Files ``lint --static`` read that import LangGraph, whose graphs it cannot read."""


_Imported = tuple[str, types.ModuleType | None, LoadError | None]
"""One module imported: its source as shown, the module (also when its import failed after
defining something) and the error, if any."""


def split_selector(argument: str) -> tuple[str, str | None]:
    """Split ``PATH:name`` into the path and the graph name (``None`` when absent).

    >>> split_selector("examples/loop.py:app")
    ('examples/loop.py', 'app')
    >>> split_selector("examples/loop.py")
    ('examples/loop.py', None)
    """
    head, sep, tail = argument.rpartition(":")
    if sep and head and tail.isidentifier() and not os.path.exists(argument):
        return head, tail
    return argument, None


def load(
    paths: Sequence[str],
    *,
    exclude: Sequence[str] = (),
    only_marked: bool = False,
) -> Loaded:
    """Import every module named by ``paths`` and collect their graphs.

    Args:
        paths: ``.py`` files, folders or dotted module names, each optionally ``:name``.
        exclude: fnmatch patterns; a file matches when its path, its name or one of its
            parent folders does (like flake8's ``--exclude``).
        only_marked: import only files whose text mentions ``corral`` (a file that never
            does cannot define a graph); lint uses this so that pointing it at a whole
            repository does not run ``setup.py`` or scripts.

    Raises:
        UsageError: a path that is neither a file, a folder nor an importable module name,
            or a ``:name`` that no module defines.
    """
    loaded = Loaded()
    seen: dict[int, Target] = {}
    patterns = exclude_patterns(exclude)
    for argument in paths:
        path, wanted = split_selector(argument)
        found: list[Target] = []
        for source, module, error in _modules(path, patterns, only_marked):
            loaded.modules += 1
            if error is not None:
                if isinstance(error.exc, GraphError) and error.exc.diagnostics:
                    loaded.graph_errors.append((source, error.exc))
                else:
                    loaded.errors.append(error)
            if module is not None:
                found.extend(find_targets(module, source, seen, failed=error is not None))
        if wanted is not None:
            picked = [t for t in found if wanted in t.aliases]
            if not picked and not loaded.errors and not loaded.graph_errors:
                names = sorted({a for t in found for a in t.aliases})
                have = ", ".join(names) if names else "no graphs"
                msg = f"{path} defines no graph called {wanted!r} (it has: {have})"
                raise UsageError(msg)
            found = picked
        for target in found:  # named by the path as given, unless found in a folder's file
            where = path if target.source in (path, display_path(path)) else target.source
            target.shown_as = f"{where}:{wanted or target.name}"
        loaded.targets.extend(found)
    return loaded


def _current_folder_on_path() -> None:
    """Put the current folder on ``sys.path``, so that every command imports what a module
    run from the project's root imports (``from app.graph import ...``)."""
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)


def import_modules(path: str, *, dotted: bool, only_marked: bool) -> Iterator[_Imported]:
    """Import one ``.py`` file, or a dotted module and its submodules, as :func:`load` does.

    Yields ``(source, module, error)`` per module; a module that failed has ``error`` set
    (and ``module`` too when it defined something before failing).
    """
    if dotted:
        yield from _import_dotted(path, only_marked)
    else:
        yield _import_file(path)


def _modules(path: str, patterns: Sequence[str], only_marked: bool) -> Iterator[_Imported]:
    if is_module_name(path):
        yield from _import_dotted(path, only_marked)
        return
    for file in python_files(path, patterns, only_marked=only_marked):
        if file.problem is not None:
            source = display_path(file.path)
            yield source, None, _error(source, file.problem)
        else:
            yield _import_file(file.path)


def is_module_name(path: str) -> bool:
    """Return whether ``path`` names a module (dotted) rather than an existing file or folder."""
    return (
        not os.path.lexists(path)
        and _DOTTED.fullmatch(path) is not None
        and not path.endswith(".py")
    )


def dotted_name(file: str) -> str:
    """Return the name ``file`` is imported by from the folder above its top package."""
    return _module_name(Path(file).resolve())[0]


def _module_name(file: Path) -> tuple[str, Path]:
    """Return the dotted name of ``file`` and the folder its top package lives in."""
    parts = [] if file.name == "__init__.py" else [file.stem]
    folder = file.parent
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    return ".".join(parts), folder


def _import_file(file: str) -> _Imported:
    _current_folder_on_path()
    source = display_path(file)
    absolute = Path(file).resolve()
    name, root = _module_name(absolute)
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    cached = sys.modules.get(name)
    if cached is not None and _same_file(cached, absolute):
        return source, cached, None
    if cached is not None or not all(p.isidentifier() for p in name.split(".")):
        # The name belongs to another module (a stdlib clash, or a second file with the same
        # name in another folder): load this file under a private name instead.
        name = "_corral_" + re.sub(r"\W", "_", str(absolute))
    try:
        parent = name.rpartition(".")[0]
        if parent:
            importlib.import_module(parent)
        spec = importlib.util.spec_from_file_location(name, absolute)
        assert spec is not None and spec.loader is not None
    except BaseException as exc:
        return source, None, _error(source, exc)
    return _execute(source, name, spec)


def _import_dotted(name: str, only_marked: bool) -> Iterator[_Imported]:
    _current_folder_on_path()
    try:
        spec = importlib.util.find_spec(name)
    except BaseException as exc:
        yield name, None, _error(name, exc)
        return
    if spec is None or spec.loader is None:
        msg = f"{name!r} is not a file, a folder or an importable module"
        raise UsageError(msg)
    cached = sys.modules.get(name)
    if cached is not None:
        module: types.ModuleType | None = cached
        yield name, cached, None
    else:
        _, module, error = _execute(name, name, spec)
        yield name, module, error
    if module is not None and spec.submodule_search_locations:
        import pkgutil

        for info in pkgutil.iter_modules(getattr(module, "__path__", []), name + "."):
            found = importlib.util.find_spec(info.name)
            origin = found.origin if found is not None else None
            if origin and origin.endswith(".py") and (not only_marked or mentions_corral(origin)):
                yield _import_file(origin)


def _execute(source: str, name: str, spec: importlib.machinery.ModuleSpec) -> _Imported:
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        assert spec.loader is not None
        spec.loader.exec_module(module)
    except BaseException as exc:
        sys.modules.pop(name, None)
        if isinstance(exc, KeyboardInterrupt):
            raise
        # Keep the partly run module: the graphs defined before the failure are still useful.
        return source, module, _error(source, exc)
    return source, module, None


def _error(source: str, exc: BaseException) -> LoadError:
    formatted = "".join(traceback.format_exception(exc))
    return LoadError(source, exc, formatted)


def _same_file(module: types.ModuleType, file: Path) -> bool:
    origin = getattr(module, "__file__", None)
    if origin is None:
        return False
    try:
        return Path(origin).resolve() == file
    except OSError:
        return False


def import_module(name_or_path: str) -> types.ModuleType:
    """Import a module by dotted name or ``.py`` path, the way :func:`load` does.

    Raises:
        UsageError: the name is neither an existing file nor an importable module.
        ImportError: the module failed to import; the original exception is ``__cause__``.
    """
    if os.path.lexists(name_or_path) and not os.path.isdir(name_or_path):
        try:
            check_regular(name_or_path)
        except UnreadableFile as exc:
            raise UsageError(str(exc)) from exc
        _, module, error = _import_file(name_or_path)
    elif is_module_name(name_or_path):
        _, module, error = next(_import_dotted(name_or_path, only_marked=False))
    else:
        msg = f"{name_or_path!r} is neither a .py file nor an importable module name"
        raise UsageError(msg)
    if error is not None or module is None:
        assert error is not None
        raise ImportError(error.message) from error.exc
    return module
