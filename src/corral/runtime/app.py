"""``CompiledGraph``: a checked graph that can run. (Placeholder until the runtime issue.)"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from corral.checkpoint.base import Checkpointer
from corral.spec import GraphSpec

__all__ = ["CompiledGraph", "Run"]

StateT = TypeVar("StateT")


@dataclass
class Run:
    """The outcome of ``invoke``."""

    state: dict[str, Any]
    steps: int = 0
    supersteps: int = 0
    status: str = "done"
    interrupts: list[Any] = field(default_factory=list)
    guards: dict[tuple[str, str], int] = field(default_factory=dict)
    thread_id: str | None = None
    trace: list[Any] = field(default_factory=list)


class CompiledGraph(Generic[StateT]):
    """A checked graph, ready to run."""

    def __init__(
        self,
        spec: GraphSpec,
        *,
        checkpointer: Checkpointer | None = None,
        interrupt_before: Sequence[str] = (),
        interrupt_after: Sequence[str] = (),
        max_steps: int | None = None,
    ) -> None:
        self.spec = spec
        self.checkpointer = checkpointer
        self.interrupt_before = tuple(interrupt_before)
        self.interrupt_after = tuple(interrupt_after)
        self.max_steps = max_steps if max_steps is not None else spec.max_steps
