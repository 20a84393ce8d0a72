"""A provider's "not now" answers, as :class:`~corral.errors.ModelUnavailableError`.

The OpenAI and Anthropic SDKs raise the same shapes: ``APIConnectionError`` (with
``APITimeoutError`` under it) when no answer came, and ``APIStatusError`` carrying the HTTP
response otherwise. Connection errors, timeouts, 408, 429 and 5xx answers are worth another
attempt; corral raises them as ``ModelUnavailableError`` (a ``ConnectionError``, so the
default ``Retry`` retries them), naming the endpoint without its query (where some
providers put a key) and keeping the provider's ``Retry-After``. Any other error (a
refused key, a bad request) is raised as the SDK raised it: another attempt would fail
the same way.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from corral.errors import ModelUnavailableError

__all__ = ["provider_errors"]

_RETRYABLE_STATUS = frozenset({408, 429})


@contextmanager
def provider_errors(sdk: ModuleType) -> Iterator[None]:
    """Raise ``sdk``'s transient errors inside the block as ``ModelUnavailableError`` (the
    SDK's error is its ``__cause__``); any other error goes on as the SDK raised it."""
    try:
        yield
    except sdk.APIError as exc:
        raise unavailable(exc, sdk) or exc from exc


def unavailable(exc: Exception, sdk: ModuleType) -> ModelUnavailableError | None:
    """Return ``exc`` as a ``ModelUnavailableError`` when another attempt may succeed."""
    request = getattr(exc, "request", None)
    url = getattr(request, "url", None)
    port = f":{url.port}" if url is not None and url.port is not None else ""
    endpoint = f"{url.scheme}://{url.host}{port}{url.path}" if url is not None else "?"
    kind = type(exc).__name__
    if isinstance(exc, sdk.APIConnectionError):
        what = "timed out" if isinstance(exc, sdk.APITimeoutError) else "could not be reached"
        msg = f"model endpoint {endpoint!r} {what} ({kind}); {_ADVICE}"
        return ModelUnavailableError(msg, endpoint=endpoint)
    status = getattr(exc, "status_code", None)
    if not isinstance(exc, sdk.APIStatusError) or not isinstance(status, int):
        return None
    if status not in _RETRYABLE_STATUS and status < 500:
        return None
    after = retry_after_s(exc.response.headers)
    wait = f", asking to wait {after:g} s" if after is not None else ""
    msg = f"model endpoint {endpoint!r} answered {status} ({kind}){wait}; {_ADVICE}"
    return ModelUnavailableError(msg, endpoint=endpoint, status=status, retry_after_s=after)


_ADVICE = "the default Retry retries it: give the node (or react_agent) retry=Retry(...)"


def retry_after_s(headers: Any) -> float | None:
    """Return the wait a response asks for: ``retry-after-ms``, or ``retry-after`` in
    seconds (as OpenAI and Anthropic send it); ``None`` when it asks for none (or a date).

    >>> retry_after_s({"retry-after-ms": "1500"}), retry_after_s({"retry-after": "2"})
    (1.5, 2.0)
    >>> retry_after_s({"retry-after": "soon"}) is None
    True
    """
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            seconds = float(raw) * scale
        except ValueError:
            continue
        if math.isfinite(seconds):
            return max(seconds, 0.0)
    return None
