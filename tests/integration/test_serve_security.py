"""``corral serve``'s safety: loopback by default, the token, body limits, ids that are data,
and no database URL or password in any response or log line."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("starlette")
langgraph_sdk = pytest.importorskip("langgraph_sdk")
from langgraph_sdk import errors as sdk_errors  # noqa: E402
from serving.server import Server, serving  # noqa: E402

from corral.cli import build_parser  # noqa: E402

_TOKEN = "tok-3f9a2c"


def test_the_server_binds_the_loopback_address_by_default() -> None:
    args = build_parser().parse_args(["serve", "agent.py"])
    assert args.host == "127.0.0.1" and args.port == 2024 and args.workers == 2


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("serve")
    env = {"CORRAL_SERVE_TOKEN": _TOKEN}
    with serving(str(tmp / "runs.sqlite"), tmp, "--max-body", "4096", env=env) as running:
        yield running


def test_with_a_token_every_api_call_needs_it(guarded: Server) -> None:
    """No token, or a wrong one: 401 with {"detail"}; the SDK's api_key= (x-api-key) and a
    Bearer header both work; the health check stays open."""
    anonymous = langgraph_sdk.get_sync_client(url=guarded.url, api_key=None)
    for call in (
        lambda: anonymous.assistants.search(),
        lambda: anonymous.threads.create(),
        lambda: anonymous.threads.search(),
        lambda: anonymous.runs.wait(None, "review", input={"topic": "x"}),
    ):
        with pytest.raises((sdk_errors.AuthenticationError, httpx.HTTPStatusError)) as raised:
            call()
        assert "401" in str(raised.value) or isinstance(
            raised.value, sdk_errors.AuthenticationError
        )
    wrong = httpx.get(f"{guarded.url}/threads/x", headers={"x-api-key": "tok-3f9a2"})
    assert wrong.status_code == 401 and set(wrong.json()) == {"detail"}
    client = langgraph_sdk.get_sync_client(url=guarded.url, api_key=_TOKEN)
    tid = client.threads.create()["thread_id"]
    bearer = {"Authorization": f"Bearer {_TOKEN}"}
    assert httpx.get(f"{guarded.url}/threads/{tid}", headers=bearer).status_code == 200
    assert httpx.get(f"{guarded.url}/ok").status_code == 200


def test_the_page_asks_for_the_token_once(guarded: Server) -> None:
    """Without it the page shows a sign-in form and nothing else; signing in sets a cookie
    that lets the page (and only the page) through."""
    with httpx.Client(base_url=guarded.url) as browser:
        page = browser.get("/")
        assert page.status_code == 200 and 'name="token"' in page.text
        assert "<table" not in page.text
        csrf = browser.cookies["corral_csrf"]
        wrong = browser.post("/signin", data={"token": "nope", "csrf": csrf})
        assert "wrong" in wrong.text and "corral_token" not in browser.cookies
        signed = browser.post("/signin", data={"token": _TOKEN, "csrf": csrf})
        assert signed.status_code == 303
        assert "<table" in browser.get("/").text
        assert browser.get("/threads/x").status_code == 401  # the cookie is not an API key


def test_bodies_over_max_body_are_413_even_without_a_length(guarded: Server) -> None:
    headers = {"x-api-key": _TOKEN}
    body = b'{"metadata": {"pad": "' + b"x" * 5000 + b'"}}'

    def chunks() -> Iterator[bytes]:
        yield from (body[i : i + 1000] for i in range(0, len(body), 1000))

    for content in (body, chunks()):
        answer = httpx.post(f"{guarded.url}/threads", content=content, headers=headers)
        assert answer.status_code == 413 and "--max-body" in answer.json()["detail"]
    assert httpx.post(f"{guarded.url}/threads", json={}, headers=headers).status_code == 200


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("serve")
    with serving(str(tmp / "runs.sqlite"), tmp) as running:
        yield running


@pytest.mark.parametrize(
    "thread_id",
    [
        "'; DROP TABLE corral_threads; --",
        "a?b=c#d%2F",
        "...",
        "ünïcødé thread 线程",
        '" OR 1=1 --',
    ],
)
def test_a_thread_id_is_data_whatever_it_holds(server: Server, thread_id: str) -> None:
    """Ids that look like SQL or paths are stored and found as the text they are."""
    client = langgraph_sdk.get_sync_client(url=server.url)
    made = client.threads.create(thread_id=thread_id, if_exists="do_nothing")
    assert made["thread_id"] == thread_id
    out = client.runs.wait(thread_id, "review", input={"topic": "ids"})
    assert out["topic"] == "ids"
    assert client.threads.get(thread_id)["thread_id"] == thread_id
    assert httpx.get(f"{server.url}/inbox/{quote(thread_id, safe='')}").status_code == 200
    assert len(client.threads.search(limit=1000)) >= 1  # the table is still there


def test_a_thread_id_too_long_or_with_a_slash_is_422(server: Server) -> None:
    for thread_id in ("x" * 201, "../../etc/passwd", "..", ".", ""):
        answer = httpx.post(f"{server.url}/threads", json={"thread_id": thread_id})
        assert answer.status_code == 422 or thread_id == "", answer.text


def test_no_response_or_log_line_holds_the_database_url_or_password(
    postgres_url: str, tmp_path: Path
) -> None:
    """On PostgreSQL with a password in the URL: runs, errors and the log never show it."""
    password = "Pw-9c1e7d5b"
    db = postgres_url.replace("postgresql://postgres@", f"postgresql://postgres:{password}@")
    seen: list[str] = []
    with serving(db, tmp_path) as running:
        client = langgraph_sdk.get_sync_client(url=running.url)
        tid = client.threads.create()["thread_id"]
        client.runs.wait(tid, "review", input={"topic": "pg"})
        done = client.runs.wait(tid, "review", command={"resume": "ok"})
        assert done["answer"] == "ok"
        with pytest.raises(Exception, match="broke"):
            client.runs.wait(None, "slow", input={"text": "boom"})
        for method, path, body in [
            ("GET", f"/threads/{tid}", None),
            ("GET", f"/threads/{tid}/state", None),
            ("POST", f"/threads/{tid}/history", {}),
            ("GET", f"/threads/{tid}/runs", None),
            ("GET", "/threads/nope", None),
            ("POST", f"/threads/{tid}/runs", {"assistant_id": "review", "input": {"x": 1}}),
            ("POST", f"/threads/{tid}/state", {"values": {"nope": 1}}),
            ("GET", "/", None),
            ("GET", f"/inbox/{tid}", None),
        ]:
            answer = httpx.request(method, running.url + path, json=body)
            seen.append(answer.text + str(answer.headers))
        log = running.output()
    for text in [*seen, log]:
        assert password not in text and db not in text
    assert "Application startup complete" in log  # the log was read


def test_a_bad_database_url_is_an_error_line_without_its_password(tmp_path: Path) -> None:
    db = "postgresql://app:Pw-77aa@127.0.0.1:1/nowhere?connect_timeout=1"
    graphs = str(Path(__file__).parents[1] / "serving" / "served_graph.py")
    done = subprocess.run(
        [sys.executable, "-m", "corral", "serve", f"{graphs}:review", "--db", db],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode != 0
    assert "Pw-77aa" not in done.stderr + done.stdout
    assert done.stderr.startswith("error: ")


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.text(min_size=1, max_size=200).filter(lambda t: "/" not in t and t not in (".", "..")))
def test_any_thread_id_is_stored_and_found_as_given(server: Server, thread_id: str) -> None:
    """Whatever text a thread id holds (quotes, %, dots, any script), it round-trips."""
    made = httpx.post(
        f"{server.url}/threads", json={"thread_id": thread_id, "if_exists": "do_nothing"}
    )
    assert made.status_code == 200 and made.json()["thread_id"] == thread_id
    found = httpx.get(f"{server.url}/threads/{quote(thread_id, safe='')}")
    assert found.status_code == 200 and found.json()["thread_id"] == thread_id
