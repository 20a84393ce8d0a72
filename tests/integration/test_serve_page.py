"""The inbox page in a real headless Chromium, against a real ``corral serve``.

Set ``CORRAL_SERVE_SCREENSHOTS=DIR`` to save the two pages' screenshots there (the ones in
``docs/`` come from this test).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("starlette")
langgraph_sdk = pytest.importorskip("langgraph_sdk")
pytest.importorskip("websockets")
from serving.browser import Browser, chromium  # noqa: E402
from serving.server import Server, serving  # noqa: E402


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("serve")
    with serving(str(tmp / "runs.sqlite"), tmp) as running:
        yield running


@pytest.fixture
def client(server: Server) -> Any:
    return langgraph_sdk.get_sync_client(url=server.url)


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    chromium()
    (tmp_path / "profile").mkdir()
    opened = Browser(tmp_path / "profile")
    try:
        yield opened
    finally:
        opened.close()


def _shots() -> Path | None:
    folder = os.environ.get("CORRAL_SERVE_SCREENSHOTS")
    return Path(folder) if folder else None


def test_a_waiting_thread_is_on_top_and_answering_it_finishes_the_run(
    server: Server, client: Any, browser: Browser
) -> None:
    """The list shows the waiting thread first (though another is newer); its page shows
    the drawing, the state and the question; the form's answer resumes the run, and the
    page then shows it finished, with the answer in the state."""
    waiting = client.threads.create(metadata={"ticket": "T-7"})["thread_id"]
    client.runs.wait(waiting, "review", input={"topic": "the launch post"})
    newer = client.threads.create()["thread_id"]
    client.runs.wait(newer, "slow", input={"text": "no gate"})
    browser.goto(f"{server.url}/")
    first_row = browser.evaluate("document.querySelectorAll('tr')[1].innerText")
    assert waiting in first_row and "waiting for you" in first_row
    assert "publish 'the launch post'?" in first_row
    assert browser.evaluate("document.scripts.length") == 0
    if _shots():
        browser.screenshot(_shots() / "serve-inbox.png")  # type: ignore[operator]
    browser.evaluate(f"document.querySelector('a[href=\"/inbox/{waiting}\"]').click()")
    browser.wait_for("document.querySelector('textarea') !== null")
    text = browser.text()
    assert "ask asks: publish 'the launch post'?" in text
    assert '"topic": "the launch post"' in text  # the state
    assert browser.evaluate("document.querySelector('.drawing img, .drawing pre') !== null")
    assert "critique" in text or browser.evaluate("document.querySelector('.drawing img')")
    if _shots():
        browser.screenshot(_shots() / "serve-thread.png")  # type: ignore[operator]
    browser.evaluate("document.querySelector('textarea').value = 'yes, publish'")
    browser.evaluate("document.querySelector('form button').click()")
    browser.wait_for("document.body.innerText.includes('status idle')")
    assert '"answer": "yes, publish"' in browser.text()
    assert client.threads.get_state(waiting)["values"]["answer"] == "yes, publish"
    assert client.runs.list(waiting)[0]["metadata"] == {"source": "inbox"}


def test_a_script_in_the_state_runs_nothing(server: Server, client: Any, browser: Browser) -> None:
    """A state value holding <script> is shown as text; the page has no script at all."""
    payload = "<script>document.title='pwned'</script><img src=x onerror=alert(1)>"
    tid = client.threads.create()["thread_id"]
    client.runs.wait(tid, "review", input={"topic": payload})
    browser.goto(f"{server.url}/inbox/{tid}")
    assert browser.evaluate("document.title") != "pwned"
    assert browser.evaluate("document.scripts.length") == 0
    assert browser.evaluate("document.querySelectorAll('main img[src=x]').length") == 0
    assert payload in browser.text()
    browser.goto(f"{server.url}/")
    assert browser.evaluate("document.scripts.length") == 0 and payload in browser.text()


def test_an_answer_posted_without_the_pages_token_is_refused(server: Server, client: Any) -> None:
    """Another site cannot answer for a person: the form needs the page's CSRF token."""
    tid = client.threads.create()["thread_id"]
    client.runs.wait(tid, "review", input={"topic": "csrf"})
    state = client.threads.get_state(tid)
    field = f"answer-{state['interrupts'][0]['id']}"
    url = f"{server.url}/inbox/{tid}/answer"
    refused = httpx.post(url, data={field: "yes"})
    assert refused.status_code == 403
    refused = httpx.post(
        url, data={field: "yes", "csrf": "guess"}, headers={"cookie": "corral_csrf=other"}
    )
    assert refused.status_code == 403
    assert client.threads.get(tid)["status"] == "interrupted"
    page = httpx.get(f"{server.url}/inbox/{tid}")
    token = page.cookies["corral_csrf"]
    assert "script-src" not in page.headers["content-security-policy"]
    accepted = httpx.post(url, data={field: '"yes"', "csrf": token}, cookies={"corral_csrf": token})
    assert accepted.status_code == 303
    client.runs.join(tid, client.runs.list(tid)[0]["run_id"])
    # the question was not text, so an answer that parses as JSON is passed as JSON
    assert client.threads.get_state(tid)["values"]["answer"] == "yes"


def test_a_pause_before_a_node_is_gone_on_from_with_continue(server: Server, client: Any) -> None:
    """interrupt_before has no question: the page offers Continue, which runs the rest."""
    tid = client.threads.create()["thread_id"]
    client.runs.wait(tid, "slow", input={"text": "x"}, interrupt_before=["finish"])
    with httpx.Client(base_url=server.url) as browser:
        page = browser.get(f"/inbox/{tid}")
        assert "paused before <b>finish</b>" in page.text and "<textarea" not in page.text
        item = client.threads.get_state(tid)["interrupts"][0]["id"]
        token = browser.cookies["corral_csrf"]
        sent = browser.post(f"/inbox/{tid}/answer", data={"csrf": token, f"answer-{item}": ""})
        assert sent.status_code == 303
    client.runs.join(tid, client.runs.list(tid)[0]["run_id"])
    assert client.threads.get_state(tid)["values"]["tokens"] == ["written", "done"]


def test_the_thread_page_shows_what_the_thread_spent(server: Server, client: Any) -> None:
    """API.md 19: what a thread has spent is on its page (review's draft spends a call)."""
    tid = client.threads.create()["thread_id"]
    client.runs.wait(tid, "review", input={"topic": "spend"})
    page = httpx.get(f"{server.url}/inbox/{tid}")
    assert page.status_code == 200 and "<p>spent <b>" in page.text
    assert page.text.split("<p>spent <b>", 1)[1].split("</b>", 1)[0].endswith("calls")
