"""The shapes type checkers hold node and router functions to; nothing here runs.

:class:`~corral.dsl.Graph`'s decorators are typed with these protocols so that mypy (and
pyright) check a node's first parameter against the state (or its ``input=`` type), its
return against the graph's update type and node names, and a router's first parameter and
the shape of its return, while handing the decorated function back with its type unchanged.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Concatenate, Protocol, TypeAlias, overload

from typing_extensions import ParamSpec, TypeVar

from corral.control import Command, Send
from corral.spec import End

__all__ = [
    "ANY_TYPE",
    "InputT",
    "NodeDecorator",
    "NodeFunction",
    "NodeResult",
    "NodesT",
    "ParamsT",
    "ReturnT",
    "Route",
    "RouterDecorator",
    "RouterFunction",
    "StateT",
    "UpdateT",
]

StateT = TypeVar("StateT")
UpdateT = TypeVar("UpdateT", default=Mapping[str, Any])
NodesT = TypeVar("NodesT", bound=str, default=str)
ParamsT = ParamSpec("ParamsT")
ReturnT = TypeVar("ReturnT")
InputT = TypeVar("InputT")
StateT_contra = TypeVar("StateT_contra", contravariant=True)
StateT_co = TypeVar("StateT_co", covariant=True)
UpdateT_contra = TypeVar("UpdateT_contra", contravariant=True)
NodesT_contra = TypeVar("NodesT_contra", bound=str, contravariant=True)
UpdateT_co = TypeVar("UpdateT_co", covariant=True)
NodesT_co = TypeVar("NodesT_co", bound=str, covariant=True)
ReturnT_co = TypeVar("ReturnT_co", covariant=True)

ANY_TYPE: Any = object
"""The default of ``compile``'s type-only arguments: their type variables stay ``Any``."""

NodeResult: TypeAlias = UpdateT_co | Command[NodesT_co | End] | None
"""What a node may return: an update, ``None`` or a ``Command`` naming nodes (or ``END``)."""
Route: TypeAlias = NodesT_co | End | Send[NodesT_co] | Sequence[NodesT_co | End | Send[NodesT_co]]
"""What a router may return: a node name, ``END``, a ``Send``, or a list of them (fan-out)."""


class NodeFunction(Protocol[StateT_contra, UpdateT_co, NodesT_co, ParamsT, ReturnT_co]):
    """A function that fits as a node taking ``StateT``, on a graph with ``UpdateT``, ``NodesT``.

    Only type checkers read this. Its two ``__call__`` overloads are an intersection (a
    function must fit both), not a dispatch: the first captures the function's exact
    signature and return type (``ParamsT``, ``ReturnT``) so the decorator can hand it back
    unchanged; the second says what the graph needs: a first parameter that takes
    ``StateT`` (the graph's state, or the ``input=`` type of a node a ``Send`` runs), and a
    return that is an update, ``None`` or a ``Command`` naming nodes of the graph, or an
    awaitable of one (``async def``).

    The second overload's ``*args: Any, **kwargs: Any`` stand for "any further parameters"
    (a ``ctx``), so only the first parameter and the return are checked there. mypy picks
    the overloads it infers ``ParamsT`` from with a pre-check, and a function whose first
    parameter is positional-only (``state: State, /``) passes that pre-check for the second
    overload alone, which leaves ``ParamsT`` unsolved: mypy then rejects the node. Write the
    state parameter without ``/`` (pyright accepts both). Capturing the first parameter as
    ``Any`` apart from the rest, as :class:`RouterFunction` does, would avoid that but give
    the decorated node the state's type and no name for its first parameter; a node (unlike
    a router) is often called by hand, in tests, so its exact signature is kept instead.
    """

    @overload
    def __call__(self, *args: ParamsT.args, **kwargs: ParamsT.kwargs) -> ReturnT_co: ...
    @overload
    def __call__(
        self, state: StateT_contra, /, *args: Any, **kwargs: Any
    ) -> NodeResult[UpdateT_co, NodesT_co] | Awaitable[NodeResult[UpdateT_co, NodesT_co]]: ...


class RouterFunction(Protocol[StateT_contra, ParamsT, ReturnT_co]):
    """A function that fits as a router of a graph with state ``StateT``.

    Only type checkers read this; like :class:`NodeFunction` its overloads are an
    intersection. The first captures the parameters after the state (``ParamsT``) and the
    return type (``ReturnT``); the second checks that the first parameter takes the state
    and that the return is a :data:`Route` (node names, ``END``, ``Send``s, or a list of
    them), or an awaitable of one (``async def``).

    The names in the return annotation are deliberately not checked against the graph's
    ``nodes=`` here: a decorator's error is reported on the decorator's line, above the
    body, so a misspelt ``Literal`` would first show an error about this protocol, before
    the clear ``return-value`` error that mypy reports on the router's own ``return``. The
    router's body checks its returns against its annotation, and the analyser checks the
    annotation's names against the graph (CR101).

    The state parameter is captured as ``Any``, not as a type variable of its own: mypy
    chooses the overloads it infers from with a pre-check that unsolved type variables fail,
    so a router whose only parameter is positional-only would match the second overload
    alone and leave the captured types unsolved. The decorated router's first parameter is
    typed as the graph's state.
    """

    @overload
    def __call__(
        self, state: Any, /, *args: ParamsT.args, **kwargs: ParamsT.kwargs
    ) -> ReturnT_co: ...
    @overload
    def __call__(  # type: ignore[overload-cannot-match]
        self, state: StateT_contra, /, *args: ParamsT.args, **kwargs: ParamsT.kwargs
    ) -> Route[str] | Awaitable[Route[str]]: ...


class NodeDecorator(Protocol[StateT_co, UpdateT_contra, NodesT_contra]):
    """What ``Graph.node(...)`` returns: registers a :class:`NodeFunction`, returns it unchanged.

    ``StateT_co`` is what the node's first parameter must take: the graph's state, or the
    ``input=`` type for a node that a ``Send`` runs.
    """

    def __call__(
        self, func: NodeFunction[StateT_co, UpdateT_contra, NodesT_contra, ParamsT, ReturnT], /
    ) -> Callable[ParamsT, ReturnT]: ...


class RouterDecorator(Protocol[StateT]):
    """What ``Graph.router(...)`` returns: registers a :class:`RouterFunction`, returns it."""

    def __call__(
        self, func: RouterFunction[StateT, ParamsT, ReturnT], /
    ) -> Callable[Concatenate[StateT, ParamsT], ReturnT]: ...
