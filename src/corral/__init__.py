"""corral: agents and looping workflows as annotated Python modules, checked before they run.

Every public name is imported from its module the first time it is used (``__getattr__``
below; ``from corral import Graph`` works as usual), so a program pays only for the parts it
uses: ``corral threads`` never loads the DSL, a graph kept in memory never loads sqlite3,
and nothing loads networkx or asyncio before the analyser or an async run needs them
(docs/architecture.md, "Start time").
"""

from importlib import import_module

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing at startup

if TYPE_CHECKING:
    from corral import reducers
    from corral.analysis.bound import Bound
    from corral.analysis.diagnostic import Diagnostic
    from corral.checkpoint.base import Checkpointer
    from corral.checkpoint.memory import MemorySaver
    from corral.checkpoint.postgres import PostgresSaver
    from corral.checkpoint.sqlite import SqliteSaver
    from corral.control import Command, Resume, Send
    from corral.cost import Budget, Cost
    from corral.dsl import Graph
    from corral.errors import (
        BudgetError,
        BusyThreadError,
        CheckpointError,
        ConcurrentRunError,
        CorralError,
        CostExceededError,
        GraphError,
        GuardExhaustedError,
        InterruptWithoutCheckpointerError,
        InvalidUpdateError,
        LangGraphArgumentError,
        LeaseLostError,
        ModelUnavailableError,
        NodeCapError,
        NodeError,
        NodeTimeoutError,
        RouteError,
        RunCancelledError,
        RunFailedError,
        RunLimitError,
        RunningLoopError,
        SerializationError,
        StepLimitError,
        StreamModeError,
        StuckJoinError,
        ThreadStateError,
        ToolError,
        WaitTimeoutError,
    )
    from corral.reducers import Overwrite
    from corral.retry import Retry
    from corral.runtime.app import CompiledGraph, Run
    from corral.runtime.context import Context
    from corral.runtime.interrupts import interrupt
    from corral.spec import END, START, Cycle, End, Guard


__version__ = "0.1.0"

__all__ = [
    # building a graph
    "END",
    "START",
    "End",
    "Graph",
    "Guard",
    "Retry",
    "Budget",
    "Cost",
    # what nodes and routers return
    "Command",
    "Overwrite",
    "Send",
    "reducers",
    # running
    "CompiledGraph",
    "Context",
    "Resume",
    "Run",
    "interrupt",
    # checkpoints
    "Checkpointer",
    "MemorySaver",
    "PostgresSaver",
    "SqliteSaver",
    # analysis
    "Bound",
    "Cycle",
    "Diagnostic",
    # errors
    "BudgetError",
    "BusyThreadError",
    "CheckpointError",
    "ConcurrentRunError",
    "CorralError",
    "CostExceededError",
    "GraphError",
    "GuardExhaustedError",
    "InterruptWithoutCheckpointerError",
    "InvalidUpdateError",
    "LangGraphArgumentError",
    "LeaseLostError",
    "ModelUnavailableError",
    "NodeCapError",
    "NodeError",
    "NodeTimeoutError",
    "RouteError",
    "RunCancelledError",
    "RunFailedError",
    "RunLimitError",
    "RunningLoopError",
    "SerializationError",
    "StepLimitError",
    "StreamModeError",
    "StuckJoinError",
    "ThreadStateError",
    "ToolError",
    "WaitTimeoutError",
    "__version__",
]

_MODULE_OF = {
    "corral.spec": ("END", "START", "End", "Guard", "Cycle"),
    "corral.dsl": ("Graph",),
    "corral.retry": ("Retry",),
    "corral.cost": ("Budget", "Cost"),
    "corral.control": ("Command", "Resume", "Send"),
    "corral.reducers": ("Overwrite",),
    "corral": ("reducers",),
    "corral.runtime.app": ("CompiledGraph", "Run"),
    "corral.runtime.context": ("Context",),
    "corral.runtime.interrupts": ("interrupt",),
    "corral.checkpoint.base": ("Checkpointer",),
    "corral.checkpoint.memory": ("MemorySaver",),
    "corral.checkpoint.postgres": ("PostgresSaver",),
    "corral.checkpoint.sqlite": ("SqliteSaver",),
    "corral.analysis.bound": ("Bound",),
    "corral.analysis.diagnostic": ("Diagnostic",),
    "corral.errors": tuple(name for name in __all__ if name.endswith("Error")),
}
"""The public names each module defines, as imported above (``corral``'s are submodules)."""
_DEFINED_IN = {name: module for module, names in _MODULE_OF.items() for name in names}


def __getattr__(name: str) -> object:
    """Import the public name ``name`` from its module the first time it is asked for."""
    module = _DEFINED_IN.get(name)
    if module is None:
        msg = f"module 'corral' has no attribute {name!r}"
        raise AttributeError(msg)
    if module == __name__:
        value: object = import_module(f"{__name__}.{name}")
    else:
        value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_DEFINED_IN})
