"""corral: agents and looping workflows as annotated Python modules, checked before they run."""

from corral import reducers
from corral.analysis.bound import Bound
from corral.analysis.diagnostic import Diagnostic
from corral.checkpoint import Checkpointer, MemorySaver, PostgresSaver, SqliteSaver
from corral.control import Command, Resume, Send
from corral.dsl import Graph
from corral.errors import (
    CheckpointError,
    ConcurrentRunError,
    CorralError,
    GraphError,
    GuardExhaustedError,
    InvalidUpdateError,
    NodeCapError,
    NodeError,
    NodeTimeoutError,
    RouteError,
    SerializationError,
    StepLimitError,
    StuckJoinError,
    ToolError,
)
from corral.reducers import Overwrite
from corral.retry import Retry
from corral.runtime import CompiledGraph, Context, Run, interrupt
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
    "CheckpointError",
    "ConcurrentRunError",
    "CorralError",
    "GraphError",
    "GuardExhaustedError",
    "InvalidUpdateError",
    "NodeCapError",
    "NodeError",
    "NodeTimeoutError",
    "RouteError",
    "SerializationError",
    "StepLimitError",
    "StuckJoinError",
    "ToolError",
    "__version__",
]
