"""What counts as a graph in a module: :class:`Target` and :func:`find_targets`, the one
place that decides it (``lint``, ``draw``, ``cycles``, ``run`` and the lint worker all go
through :func:`corral.loader.load`, which calls it)."""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from corral.analysis.diagnostic import Diagnostic
from corral.dsl import Graph
from corral.spec import GraphSpec

if TYPE_CHECKING:
    from corral.runtime.app import CompiledGraph

__all__ = ["Target", "find_targets"]


@dataclass
class Target:
    """One graph found in a module: a ``Graph``, a compiled app, or both for the same graph."""

    name: str
    """The module attribute the graph was found under (the first one, for a folded pair)."""
    source: str
    """The file (or module name) it came from, for messages."""
    graph: Graph[Any, Any, Any] | None = None
    app: CompiledGraph[Any] | None = None
    aliases: tuple[str, ...] = ()
    """Every attribute name that refers to this target."""
    failed: bool = False
    """True when the module's import failed after defining this graph (a partial module)."""
    langgraph: Any = None
    """A LangGraph ``StateGraph`` or compiled graph (then ``graph`` and ``app`` are ``None``)."""

    shown_as: str | None = None
    """Set by :func:`load`: how the user named the target (see :attr:`label`)."""

    @property
    def label(self) -> str:
        """Return ``PATH:name`` as the user gave it (the file, for a graph found in a folder
        or package), the name being the one picked by, else :attr:`name`."""
        return self.shown_as or f"{self.source}:{self.name}"

    module: types.ModuleType | None = field(default=None, repr=False)
    """The module of a failed target: Python drops a module whose import failed from
    ``sys.modules``, where ``typing.get_type_hints`` looks up the names of string
    annotations (``from __future__ import annotations``); :meth:`spec` puts it back while
    it reads the graph."""

    def spec(self) -> GraphSpec:
        """Return the target's spec (read now for a ``Graph``, as compiled for an app)."""
        if self.langgraph is not None:
            from corral import langgraph

            return langgraph.spec(self.langgraph, self.name)
        if self.graph is not None:
            module = self.module
            if module is None or sys.modules.get(module.__name__) is not None:
                return self.graph.spec()
            sys.modules[module.__name__] = module
            try:
                return self.graph.spec()
            finally:
                sys.modules.pop(module.__name__, None)
        assert self.app is not None
        return self.app.spec

    def check(self) -> list[Diagnostic]:
        """Return the target's findings (a LangGraph graph's under LangGraph's semantics)."""
        if self.langgraph is not None:
            from corral import langgraph

            return langgraph.check(self.langgraph)
        from corral.analysis import analyse

        return analyse(self.spec())


def find_targets(
    module: types.ModuleType, source: str, seen: dict[int, Target], *, failed: bool
) -> list[Target]:
    """Return the module's graph targets, skipping ones already found in an earlier module.

    This is the one place that decides what counts as a graph in a module (``lint``,
    ``draw``, ``cycles``, ``run`` and the lint worker all call it); a new kind of graph
    object is recognised by extending it.
    """
    found: list[Target] = []
    # A module holding a compiled graph has imported the engine; until one has, the CLI
    # does not import it either (it costs more than the rest of corral together).
    compiled: type[CompiledGraph[Any]] | None = getattr(
        sys.modules.get("corral.runtime.app"), "CompiledGraph", None
    )
    apps: list[tuple[str, CompiledGraph[Any]]] = []
    langgraphs: list[tuple[str, Any]] = []
    for attr, value in list(vars(module).items()):
        if isinstance(value, Graph):
            if not _known(value, attr, seen, found):
                target = _new(Target(attr, source, graph=value), value, seen, found, failed)
                target.module = module if failed else None
        elif compiled is not None and isinstance(value, compiled):
            apps.append((attr, value))
        elif _is_langgraph(value):
            langgraphs.append((attr, value))
    for attr, app in apps:
        if _known(app, attr, seen, found):
            continue
        owner = _graph_of(app, found)
        if owner is not None:
            owner.app = owner.app or app
            owner.aliases = (*owner.aliases, attr)
            seen[id(app)] = owner
        else:
            _new(Target(attr, source, app=app), app, seen, found, failed)
    found += _langgraph_targets(langgraphs, source, seen, failed=failed)
    return found


def _known(value: object, attr: str, seen: dict[int, Target], found: list[Target]) -> bool:
    """Return whether ``value`` is a target already; ``attr`` is then one more of its
    aliases when it was found in this module."""
    known = seen.get(id(value))
    if known is not None and known in found and attr not in known.aliases:
        known.aliases = (*known.aliases, attr)
    return known is not None


def _new(
    target: Target, value: object, seen: dict[int, Target], found: list[Target], failed: bool
) -> Target:
    """Record ``target``, found under its ``name``, as the target of ``value``."""
    target.aliases = (target.name,)
    target.failed = failed
    seen[id(value)] = target
    found.append(target)
    return target


def _is_langgraph(value: object) -> bool:
    # Checked by class name, so a module that never imported LangGraph costs nothing.
    if "langgraph" not in sys.modules or isinstance(value, type):
        return False
    from corral.langgraph import is_langgraph

    return is_langgraph(value)


def _langgraph_targets(
    values: list[tuple[str, Any]], source: str, seen: dict[int, Target], *, failed: bool
) -> list[Target]:
    """Return a target per LangGraph graph; a compiled graph joins its builder's target."""
    found: list[Target] = []
    by_builder: dict[int, Target] = {}
    ordered = sorted(values, key=lambda item: hasattr(item[1], "builder"))  # builders first
    for attr, value in ordered:
        builder = getattr(value, "builder", value)
        if id(builder) in by_builder:
            seen.setdefault(id(value), by_builder[id(builder)])
        if not _known(value, attr, seen, found):
            target = Target(attr, source, langgraph=value)
            by_builder[id(builder)] = _new(target, value, seen, found, failed)
    return found


def _graph_of(app: CompiledGraph[Any], found: list[Target]) -> Target | None:
    """Return the target whose graph ``app`` was compiled from (same spec), if any."""
    for target in found:
        if target.graph is None or target.app is not None:
            continue
        try:
            if target.graph.spec() == app.spec:
                return target
        except Exception:
            continue
    return None
