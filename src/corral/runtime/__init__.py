"""The engine: supersteps, merging, caps, guards, streaming, interrupts."""

from corral.runtime.app import CompiledGraph, Run
from corral.runtime.context import Context
from corral.runtime.interrupts import interrupt

__all__ = ["CompiledGraph", "Context", "Run", "interrupt"]
