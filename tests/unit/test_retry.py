"""The ``Retry`` value: which errors it retries and how long it waits between attempts."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corral import (
    GraphError,
    GuardExhaustedError,
    NodeCapError,
    NodeTimeoutError,
    Retry,
    StepLimitError,
)
from corral.runtime.interrupts import UnansweredInterrupt


def test_defaults_match_the_contract() -> None:
    """A bare Retry tries 3 times, 0.5 s doubling up to 30 s, with jitter, on network errors."""
    policy = Retry()
    assert (policy.attempts, policy.backoff, policy.max_backoff, policy.jitter) == (
        3,
        0.5,
        30.0,
        True,
    )
    assert policy.on == (ConnectionError, TimeoutError, NodeTimeoutError)


def test_schedule_without_jitter_doubles_up_to_the_cap() -> None:
    """The n-th wait is min(max_backoff, backoff * 2**(n-1)) seconds."""
    policy = Retry(attempts=10, backoff=0.5, max_backoff=30.0, jitter=False)
    assert [policy.delay(n) for n in range(1, 10)] == [
        0.5,
        1.0,
        2.0,
        4.0,
        8.0,
        16.0,
        30.0,
        30.0,
        30.0,
    ]


def test_schedule_survives_huge_failure_counts() -> None:
    """A very late attempt waits max_backoff, never overflowing."""
    assert Retry(backoff=1.0, max_backoff=7.0, jitter=False).delay(5000) == 7.0


def test_jitter_ends_are_exactly_half_and_whole() -> None:
    """With jitter the wait is the schedule times 0.5 + rand()/2: 0.5 at rand=0, 1 at rand=1."""
    policy = Retry(backoff=2.0, max_backoff=100.0, jitter=True)
    assert policy.delay(3, rand=lambda: 0.0) == 4.0
    assert policy.delay(3, rand=lambda: 1.0) == 8.0
    assert policy.delay(3, rand=lambda: 0.5) == 6.0


@settings(max_examples=60, deadline=None)
@given(
    failures=st.integers(min_value=1, max_value=80),
    backoff=st.floats(min_value=0, max_value=100, allow_nan=False),
    cap=st.floats(min_value=0, max_value=1000, allow_nan=False),
    r=st.floats(min_value=0, max_value=1),
)
def test_jittered_wait_lies_within_half_and_whole_of_the_schedule(
    failures: int, backoff: float, cap: float, r: float
) -> None:
    """Every jittered wait is in [0.5, 1] times the plain schedule."""
    plain = Retry(backoff=backoff, max_backoff=cap, jitter=False).delay(failures)
    assert plain == min(cap, backoff * 2.0 ** (failures - 1))
    jittered = Retry(backoff=backoff, max_backoff=cap, jitter=True).delay(failures, rand=lambda: r)
    assert plain * 0.5 <= jittered <= plain or math.isclose(jittered, plain)


def test_jitter_uses_random_by_default() -> None:
    """Without rand=, a jittered wait is drawn in [0.5, 1] of the schedule."""
    policy = Retry(backoff=1.0, max_backoff=10.0)
    waits = {policy.delay(2) for _ in range(50)}
    assert all(1.0 <= w <= 2.0 for w in waits)
    assert len(waits) > 1


def test_default_on_retries_network_errors_and_timeouts_only() -> None:
    """ConnectionError, TimeoutError and NodeTimeoutError are retried; a ValueError is not."""
    policy = Retry()
    assert policy.retries(ConnectionResetError("reset"))
    assert policy.retries(TimeoutError())
    assert policy.retries(NodeTimeoutError("slow", node="n", timeout_s=1.0))
    assert not policy.retries(ValueError("bad"))
    assert not policy.retries(KeyError("k"))


def test_on_takes_a_type_a_tuple_or_a_predicate() -> None:
    """on=ValueError means (ValueError,), not a predicate that is always true."""
    assert Retry(on=ValueError).on == (ValueError,)
    assert Retry(on=ValueError).retries(ValueError()) and not Retry(on=ValueError).retries(
        KeyError()
    )
    assert Retry(on=[KeyError, ValueError]).on == (KeyError, ValueError)
    picky = Retry(on=lambda exc: "again" in str(exc))
    assert picky.retries(RuntimeError("try again")) and not picky.retries(RuntimeError("no"))


@pytest.mark.parametrize(
    "exc",
    [
        GraphError("misuse"),
        StepLimitError("cap", steps=3, max_steps=3, node="n"),
        NodeCapError("cap", node="n", max_runs=1),
        GuardExhaustedError("used up", source="a", target="b", max=1),
        UnansweredInterrupt("payload", 0),
        KeyboardInterrupt(),
    ],
)
def test_pauses_graph_errors_and_caps_are_never_retried(exc: BaseException) -> None:
    """Even a predicate that says yes to everything does not retry these."""
    assert not Retry(on=lambda _: True).retries(exc)
    assert not Retry(on=(BaseException,)).retries(exc)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"attempts": 0}, "attempts=0"),
        ({"attempts": True}, "attempts=True"),
        ({"backoff": -1}, "backoff=-1"),
        ({"max_backoff": "1"}, "max_backoff='1'"),
        ({"on": (ValueError, "x")}, "'x'"),
        ({"on": 3}, "on=3"),
    ],
)
def test_bad_settings_are_graph_errors(kwargs: dict[str, object], fragment: str) -> None:
    """A bad setting names itself and says what to pass."""
    with pytest.raises(GraphError, match="Retry") as info:
        Retry(**kwargs)  # type: ignore[arg-type]
    assert fragment in str(info.value)


def test_retry_is_a_frozen_value() -> None:
    """Two policies with the same fields are equal, and a policy cannot be changed."""
    assert Retry(attempts=2) == Retry(attempts=2)
    with pytest.raises(AttributeError):
        Retry().attempts = 5  # type: ignore[misc]
