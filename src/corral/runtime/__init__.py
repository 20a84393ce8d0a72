"""The engine: supersteps, merging, caps, guards, streaming, interrupts."""

from corral.runtime.app import CompiledGraph, Run
from corral.runtime.context import Context
from corral.runtime.events import (
    CheckpointWritten,
    Custom,
    Event,
    Interrupt,
    NodeEnd,
    NodeRetry,
    NodeStart,
    Paused,
    RouteTaken,
    RunEnd,
    RunError,
    StateSnapshot,
    SuperstepEnd,
    TraceRecord,
)
from corral.runtime.interrupts import interrupt

__all__ = [
    "CheckpointWritten",
    "CompiledGraph",
    "Context",
    "Custom",
    "Event",
    "Interrupt",
    "NodeEnd",
    "NodeRetry",
    "NodeStart",
    "Paused",
    "RouteTaken",
    "Run",
    "RunEnd",
    "RunError",
    "StateSnapshot",
    "SuperstepEnd",
    "TraceRecord",
    "interrupt",
]
