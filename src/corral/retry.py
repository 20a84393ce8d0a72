"""``Retry``: run a node again, in the same superstep, after a transient failure.

A retry policy is a frozen value. It decides two things and runs nothing:

- whether an exception is worth another attempt (:meth:`Retry.retries`): the exception types
  in ``on`` (or a predicate), never a pause from ``interrupt()``, a ``GraphError`` or a run
  limit (``StepLimitError``, ``NodeCapError``, ``GuardExhaustedError``), which would fail the
  same way again;
- how long to wait before the next attempt (:meth:`Retry.delay`): exponential backoff,
  ``min(max_backoff, backoff * 2**(n-1))`` seconds after the n-th failure, times a random
  factor in [0.5, 1] with ``jitter`` so that many runs failing together do not retry in step.

The runtime waits through :func:`sleep` (sync nodes) and :func:`async_sleep` (async nodes),
looked up on this module at each wait, so a test can replace them and never sleep for real.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from corral.errors import GraphError, NodeTimeoutError, RunLimitError

__all__ = ["DEFAULT_RETRY_ON", "Retry", "async_sleep", "sleep"]

DEFAULT_RETRY_ON: tuple[type[BaseException], ...] = (
    ConnectionError,
    TimeoutError,
    NodeTimeoutError,
)
"""What a ``Retry`` retries when ``on`` is not given: network failures and timeouts."""

RetryOn = tuple[type[BaseException], ...] | Callable[[BaseException], bool]


def sleep(seconds: float) -> None:
    """Wait ``seconds`` before a sync node's next attempt (replace it in tests)."""
    time.sleep(seconds)


async def async_sleep(seconds: float) -> None:
    """Wait ``seconds`` before an async node's next attempt (replace it in tests)."""
    import asyncio  # only async runs need it; `import corral` stays light

    await asyncio.sleep(seconds)


@dataclass(frozen=True)
class Retry:
    """A retry policy for a node: how many attempts, on which errors, how long between them.

    All attempts are one node run (one step). The n-th failure waits :meth:`delay` seconds
    before attempt n + 1; after the last attempt the error is raised as ``NodeError`` with
    ``.attempts``.

    >>> policy = Retry(attempts=4, backoff=1.0, max_backoff=3.0, jitter=False)
    >>> [policy.delay(n) for n in (1, 2, 3)]
    [1.0, 2.0, 3.0]
    >>> policy.retries(ConnectionError("reset")), policy.retries(ValueError("bad"))
    (True, False)
    """

    attempts: int = 3
    """How many times the node is tried in all (1 means no retry)."""
    on: RetryOn = field(default=DEFAULT_RETRY_ON)
    """The exception types to retry, or a predicate that takes the exception."""
    backoff: float = 0.5
    """Seconds to wait after the first failure; doubled after each further one."""
    max_backoff: float = 30.0
    """The longest wait between two attempts, in seconds."""
    jitter: bool = True
    """Multiply each wait by a random factor in [0.5, 1]."""

    def __post_init__(self) -> None:
        attempts = self.attempts
        if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
            msg = f"Retry(attempts={attempts!r}) must be a whole number of attempts, 1 or more"
            raise GraphError(msg)
        for knob in ("backoff", "max_backoff"):
            value = getattr(self, knob)
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                msg = f"Retry({knob}={value!r}) must be a number of seconds, 0 or more"
                raise GraphError(msg)
        on: object = self.on
        if isinstance(on, type) and issubclass(on, BaseException):
            # A class is callable too; without this, on=ValueError would be a "predicate"
            # that is always true.
            object.__setattr__(self, "on", (on,))
        elif isinstance(on, list | tuple):
            bad = [t for t in on if not (isinstance(t, type) and issubclass(t, BaseException))]
            if bad:
                msg = (
                    f"Retry(on=...) holds {bad[0]!r}, which is not an exception type; pass a "
                    "tuple of exception types or a predicate taking the exception"
                )
                raise GraphError(msg)
            object.__setattr__(self, "on", tuple(on))
        elif not callable(on):
            msg = (
                f"Retry(on={on!r}) is neither a tuple of exception types nor a predicate; "
                "pass e.g. on=(ConnectionError, TimeoutError)"
            )
            raise GraphError(msg)

    def retries(self, exc: BaseException) -> bool:
        """Return whether ``exc`` is worth another attempt under this policy.

        A pause from ``interrupt()`` (not an ``Exception``), a ``GraphError`` and the run
        limits are never retried, whatever ``on`` says.

        >>> from corral.errors import GraphError
        >>> Retry(on=lambda exc: True).retries(GraphError("misuse"))
        False
        """
        if not isinstance(exc, Exception) or isinstance(exc, GraphError | RunLimitError):
            return False
        if isinstance(self.on, tuple):
            return isinstance(exc, self.on)
        return bool(self.on(exc))

    def delay(
        self,
        failures: int,
        *,
        rand: Callable[[], float] = random.random,
        error: BaseException | None = None,
    ) -> float:
        """Return the seconds to wait after the ``failures``-th failed attempt (1 or more).

        ``rand`` gives a number in [0, 1]; with ``jitter`` the wait is multiplied by
        ``0.5 + rand() / 2``. An ``error`` that carries ``retry_after_s`` (a provider's
        ``Retry-After``, :class:`~corral.errors.ModelUnavailableError`) waits at least that
        long, but never more than ``max_backoff``.

        >>> Retry(backoff=0.5, max_backoff=30.0, jitter=False).delay(3)
        2.0
        >>> Retry(backoff=0.5, jitter=True).delay(3, rand=lambda: 0.0)
        1.0
        """
        if failures < 1:
            msg = f"failures={failures!r} must be 1 or more"
            raise ValueError(msg)
        # 2.0 ** 1100 overflows a float; past the cap the exponent no longer matters.
        exponent = min(failures - 1, 1023)
        seconds = min(float(self.max_backoff), self.backoff * 2.0**exponent)
        if self.jitter:
            seconds *= 0.5 + rand() / 2
        asked = getattr(error, "retry_after_s", None)
        if isinstance(asked, int | float) and asked > seconds:
            seconds = min(float(asked), float(self.max_backoff))
        return seconds
