"""The scrubber that keeps the database URL and its password out of text and logs."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("starlette")

from corral.serve._guard import Scrubber

_SECRET = st.text(
    alphabet=st.characters(whitelist_categories=("L", "N"), whitelist_characters="-_.~!$"),
    min_size=4,
    max_size=20,
)


@given(_SECRET)
def test_a_urls_password_never_survives(password: str) -> None:
    url = f"postgresql://app:{password}@db.internal:5432/agents"
    scrub = Scrubber(url)
    for text in (f"cannot connect to {url}", f"auth failed for {password!r}"):
        assert password not in scrub(text) and "<database>" in scrub(text)


def test_a_conninfo_password_and_a_log_record_are_scrubbed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    scrub = Scrubber("host=db user=app password=s3cr3t-pw dbname=x")
    assert "s3cr3t-pw" not in scrub("FATAL: password=s3cr3t-pw rejected")
    log = logging.getLogger("test.serve.scrub")
    log.addFilter(scrub)
    try:
        raise RuntimeError("connect to host=db user=app password=s3cr3t-pw dbname=x failed")
    except RuntimeError:
        with caplog.at_level(logging.ERROR, logger="test.serve.scrub"):
            log.exception("store %s", "host=db user=app password=s3cr3t-pw dbname=x")
    finally:
        log.removeFilter(scrub)
    assert "s3cr3t-pw" not in caplog.text and "<database>" in caplog.text
