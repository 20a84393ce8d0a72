"""What every generated node and router does: the test's input, shared by model and engine.

A node's update, a router's choice and the number of ``Send`` values are plain functions
of the state it is given (its ``log`` length and the node's ``salt``), so the model and
the engine are asked the same questions. :class:`Triggers` holds the per-app moving parts
the test arms: the failed attempts a ``Retry`` absorbs, a crash (an exception or SIGKILL)
after a number of node executions, and a hook that starts a second run from inside a node.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from corral import END
from refmodel.shapes import NodeShape

Update = dict[str, Any]


class Crash(RuntimeError):
    """The exception an armed node raises (not retried: not a ConnectionError)."""


def token(path: str, arg: int | None, answer: str | None) -> str:
    """The item a node run appends to ``log``: its path, its Send argument, its answer."""
    text = path if arg is None else f"{path}<{arg}>"
    return text if answer is None else f"{text}={answer}"


def payload(path: str, arg: int | None) -> str:
    """What a node asks a person (the interrupt's value)."""
    return f"{token(path, arg, None)}?"


def node_update(
    node: NodeShape,
    path: str,
    log_len: int | None,
    arg: int | None,
    answer: str | None,
    *,
    child: bool,
) -> Update:
    """The update a node run returns (``log_len`` is None for a Send worker: no state)."""
    item = token(path, arg, answer)
    update: Update = {"log": [item]}
    if child:
        update["note"] = item
        return update
    if node.writes_last:
        update["last"] = item
    ident = f"w{arg}" if log_len is None else f"m{(log_len + node.salt) % 3}"
    update["msgs"] = [{"id": ident, "text": item}]
    return update


def _choice(state: Mapping[str, Any], salt: int, count: int) -> int:
    return (len(state["log"]) * 3 + salt) % count


def route_choice(node: NodeShape, state: Mapping[str, Any]) -> str:
    """The one target a router (``kind == "router"``) returns."""
    return node.targets[_choice(state, node.salt, len(node.targets))]


def many_choice(node: NodeShape, state: Mapping[str, Any]) -> list[str]:
    """The targets a list router returns: a non-empty subset, in annotation order."""
    count = len(node.targets)
    bits = (len(state["log"]) * 5 + node.salt) % (2**count - 1) + 1
    return [t for i, t in enumerate(node.targets) if bits >> i & 1]


def command_goto(node: NodeShape, state: Mapping[str, Any]) -> str | None:
    """Where a ``Command`` node goes (``None``: no goto, its branch ends)."""
    options: list[str | None] = [*node.targets, None]
    return options[_choice(state, node.salt, len(options))]


def send_args(node: NodeShape, state: Mapping[str, Any]) -> list[int]:
    """The arguments of the ``Send`` values a send router returns (1 to ``max_sends``)."""
    width = 1 + _choice(state, node.salt, node.max_sends)
    return [len(state["log"]) * 10 + i for i in range(width)]


def initial_values() -> dict[str, Any]:
    """The first input of a thread: every key given."""
    return {"log": ["in"], "last": "in", "msgs": []}


def is_end(target: str) -> bool:
    """Whether a route target is ``END``."""
    return target == END


class Triggers:
    """Per-app test controls, consulted at the start of every node execution."""

    def __init__(self) -> None:
        self.failures: dict[str, int] = {}
        self.crash_after: int | None = None
        self.kill = False
        self.hook_after: int | None = None
        self.hook: Callable[[], None] | None = None
        self.executions = 0

    def arm_crash(self, after: int, *, kill: bool = False) -> None:
        """Let ``after`` node executions pass, then make the next one crash."""
        self.crash_after, self.kill = after, kill

    def arm_hook(self, after: int, hook: Callable[[], None]) -> None:
        """Call ``hook`` in the node execution after ``after`` others (past its failed attempts)."""
        self.hook_after, self.hook = after, hook

    def disarm(self) -> None:
        """Forget any crash or hook still armed."""
        self.crash_after = self.hook_after = None
        self.hook = None

    def enter(self, path: str, fails: int) -> None:
        """Run at each node execution: the hook, a failed attempt, or the armed crash."""
        done = self.failures.get(path, 0)
        if done < fails:
            self.failures[path] = done + 1
            raise ConnectionError(f"{path}: attempt {done + 1} fails")
        self.failures[path] = 0
        self.executions += 1
        if self.hook_after is not None:
            if self.hook_after == 0:
                hook, self.hook_after, self.hook = self.hook, None, None
                assert hook is not None
                hook()
            else:
                self.hook_after -= 1
        if self.crash_after is not None:
            if self.crash_after == 0:
                self.crash_after = None
                if self.kill:
                    os.kill(os.getpid(), signal.SIGKILL)
                raise Crash(f"{path} crashed")
            self.crash_after -= 1


def ordered(names: Sequence[str], order: Sequence[str]) -> list[str]:
    """``names`` de-duplicated and sorted by their place in ``order`` (registration)."""
    rank = {name: index for index, name in enumerate(order)}
    return sorted(dict.fromkeys(names), key=rank.__getitem__)
