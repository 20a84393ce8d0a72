"""The inbox: a server-rendered page where people see threads and answer the waiting ones.

``GET /`` lists the threads, those waiting for a person on top, then the others newest
first. ``GET /inbox/THREAD`` shows one: its status, the drawing of its graph with the path
it took and each guard's count (``corral draw --thread``), its state, its history and, when
it waits, the question with a form; ``POST /inbox/THREAD/answer`` queues
``Resume(answer)`` exactly as the API's ``command={"resume": ...}`` does. No JavaScript:
forms post and redirect, a page with a run in flight reloads itself every 2 seconds.

Safety: every value is HTML-escaped and the pages forbid scripts (Content-Security-Policy);
forms carry a token that must equal a SameSite=Strict cookie (double-submit), so another
site cannot post an answer; with ``--auth-token`` the page asks for the token once and
keeps it in an HttpOnly cookie.
"""

from __future__ import annotations

import base64
import hmac
import html
import json
import secrets
import shutil
import subprocess
from typing import Any
from urllib.parse import parse_qs, quote

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from corral.checkpoint import ThreadInfo
from corral.errors import BusyThreadError
from corral.runtime.events import Interrupt, StateSnapshot
from corral.serve._guard import PAGE_COOKIE
from corral.serve._runs import Served
from corral.serve._shapes import iso, thread_status
from corral.serve._threads_api import last_run, snapshot_of, thread_app

__all__ = ["routes"]

_CSRF = "corral_csrf"
_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
_STYLE = """
body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#1d2327;background:#f6f7f7}
header{background:#1d2327;color:#fff;padding:.6em 1.2em}header a{color:#fff}
main{max-width:1100px;margin:1em auto;padding:0 1em}
table{border-collapse:collapse;width:100%;background:#fff}
td,th{border-bottom:1px solid #dcdcde;padding:.35em .6em;text-align:left;vertical-align:top}
.waiting{background:#fff8e5}.status{font-weight:600}.error{color:#b32d2e}
pre{background:#fff;border:1px solid #dcdcde;padding:.8em;overflow:auto;max-height:28em}
.question{background:#fff8e5;border:1px solid #dba617;padding:1em;margin:1em 0}
textarea{width:100%;min-height:4em;font:inherit}button{font:inherit;padding:.3em 1.2em}
.drawing img{max-width:100%;background:#fff;border:1px solid #dcdcde}
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _csrf(request: Request) -> str:
    """Return the page's form token: the browser's cookie, or a new one (set by ``_page``)."""
    token = request.cookies.get(_CSRF) or secrets.token_urlsafe(32)
    return str(request.scope.setdefault("corral.csrf", token))


def _page(
    request: Request, title: str, body: str, *, refresh: bool = False, status: int = 200
) -> Response:
    token = _csrf(request)
    head = '<meta http-equiv="refresh" content="2">' if refresh else ""
    text = (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8">{head}'
        f'<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{_e(title)} · corral</title><style>{_STYLE}</style></head><body>"
        f'<header><a href="/">corral inbox</a></header><main>'
        f"{body}</main></body></html>"
    )
    response = HTMLResponse(text, status, headers=_HEADERS)
    if request.cookies.get(_CSRF) != token:
        response.set_cookie(_CSRF, token, httponly=True, samesite="strict", path="/")
    return response


_HEADERS = {
    "Content-Security-Policy": _POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


async def _form(request: Request) -> dict[str, str]:
    """Return the posted form's fields; refuse it (403) without the page's CSRF token."""
    body = await request.body()
    fields = {
        k: v[0]
        for k, v in parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True).items()
    }
    cookie = request.cookies.get(_CSRF, "")
    given = fields.get("csrf", "")
    if not cookie or not hmac.compare_digest(cookie.encode(), given.encode()):
        from corral.serve._requests import fail

        raise fail(403, "the form's token does not match; reload the page and send it again")
    return fields


def _signed_in(request: Request) -> bool:
    return request.scope.get("corral.signed_in", True) is not False


def _sign_in(request: Request) -> Response:
    body = (
        "<h1>Sign in</h1><p>This server needs its token (<code>--auth-token</code>).</p>"
        '<form method="post" action="/signin"><input type="hidden" name="csrf" '
        f'value="{_e(_csrf(request))}">'
        '<p><input type="password" name="token" autocomplete="current-password" size="40"> '
        "<button>Sign in</button></p></form>"
    )
    return _page(request, "sign in", body)


async def sign_in(request: Request) -> Response:
    fields = await _form(request)
    token: str | None = request.app.state.token
    given = fields.get("token", "")
    if token is None or not hmac.compare_digest(given.encode(), token.encode()):
        return _page(request, "sign in", '<p class="error">That token is wrong.</p>')
    response = RedirectResponse("/", status_code=303)
    response.set_cookie(PAGE_COOKIE, given, httponly=True, samesite="strict", path="/")
    return response


# -- the list ----------------------------------------------------------------------------


def _rows(served: Served) -> list[tuple[ThreadInfo, str, StateSnapshot | None]]:
    rows = []
    for thread in served.saver.thread_infos():
        snapshot = snapshot_of(served, thread)
        status = thread_status(snapshot, last_run(served, thread.thread_id))
        rows.append((thread, status, snapshot))
    rows.sort(key=lambda row: row[1] != "interrupted")  # stable: newest first within each
    return rows


def _question(value: Any) -> str:
    """Return what an interrupt asks: its value's ``question`` when it has one, as text."""
    if isinstance(value, dict) and "question" in value:
        value = value["question"]
    return value if isinstance(value, str) else json.dumps(value, default=str)


def inbox(request: Request) -> Response:
    if not _signed_in(request):
        return _sign_in(request)
    rows = _rows(request.app.state.served)
    lines = []
    for thread, status, snapshot in rows:
        link = f"/inbox/{quote(thread.thread_id, safe='')}"
        waiting = ' class="waiting"' if status == "interrupted" else ""
        pending = snapshot.interrupts if snapshot is not None else ()
        question = _question(pending[0].value) if pending else ""
        shown = "waiting for you" if status == "interrupted" else status
        lines.append(
            f'<tr{waiting}><td><a href="{_e(link)}">{_e(thread.thread_id)}</a></td>'
            f'<td>{_e(thread.graph or "")}</td><td class="status">{_e(shown)}</td>'
            f"<td>{_e(question)}</td><td>{_e(iso(thread.updated_at)[:19])}</td></tr>"
        )
    count = sum(1 for _, status, _ in rows if status == "interrupted")
    body = (
        f"<h1>Threads</h1><p>{count} waiting for a person, {len(rows)} in all.</p>"
        "<table><tr><th>thread</th><th>graph</th><th>status</th><th>question</th>"
        f"<th>updated (UTC)</th></tr>{''.join(lines)}</table>"
    )
    busy = any(status == "busy" for _, status, _ in rows)
    return _page(request, "threads", body, refresh=busy)


# -- one thread --------------------------------------------------------------------------


def _drawing(served: Served, thread: ThreadInfo) -> str:
    """Return the graph drawn with the path the thread took: SVG with ``dot``, else Mermaid."""
    from corral.history import taken_routes
    from corral.render import render_dot, render_mermaid

    app = thread_app(served, thread)
    assert app.checkpointer is not None
    taken = taken_routes(app.checkpointer, thread.thread_id, app.spec)
    dot = shutil.which("dot")
    if dot is not None:
        try:
            svg = subprocess.run(
                [dot, "-Tsvg"],
                input=render_dot(app.spec, taken=taken).encode(),
                capture_output=True,
                timeout=20,
                check=True,
            ).stdout
        except (OSError, subprocess.SubprocessError):
            svg = b""
        if svg:  # as an image: an SVG shown by <img> runs no script
            data = base64.b64encode(svg).decode()
            alt = "the graph, with the routes this thread took"
            return f'<img alt="{alt}" src="data:image/svg+xml;base64,{data}">'
    return f"<pre>{_e(render_mermaid(app.spec, taken=taken))}</pre>"


def _history(served: Served, thread: ThreadInfo) -> str:
    from corral.history import history_rows, ordered

    app = thread_app(served, thread)
    assert app.checkpointer is not None
    rows = history_rows(ordered(app.checkpointer, thread.thread_id))
    lines = [
        f"<tr><td>{_e(r.checkpoint_id)}</td><td>{r.step}</td><td>{_e(', '.join(r.nodes))}</td>"
        f"<td>{_e(', '.join(r.keys))}</td><td>{_e(r.status)}</td></tr>"
        for r in reversed(rows)
    ]
    return (
        "<table><tr><th>checkpoint</th><th>steps</th><th>nodes</th><th>keys written</th>"
        f"<th>status</th></tr>{''.join(lines)}</table>"
    )


def _answer_form(thread_id: str, interrupts: tuple[Interrupt, ...], csrf: str) -> str:
    parts = []
    for item in interrupts:
        if item.when != "during":  # interrupt_before/after: nothing to answer, only go on
            parts.append(
                f'<div class="question"><p>paused {_e(item.when)} <b>{_e(item.node)}</b></p>'
                f'<input type="hidden" name="answer-{_e(item.id)}" value=""></div>'
            )
            continue
        parts.append(
            f'<div class="question"><p><b>{_e(item.node)}</b> asks: {_e(_question(item.value))}</p>'
            f'<textarea name="answer-{_e(item.id)}" required></textarea></div>'
        )
    action = f"/inbox/{quote(thread_id, safe='')}/answer"
    label = "Answer and resume" if any(i.when == "during" for i in interrupts) else "Continue"
    return (
        f'<form method="post" action="{_e(action)}"><input type="hidden" name="csrf" '
        f'value="{_e(csrf)}">{"".join(parts)}<button>{label}</button></form>'
    )


def thread_page(request: Request) -> Response:
    if not _signed_in(request):
        return _sign_in(request)
    served: Served = request.app.state.served
    thread_id = request.path_params["thread_id"]
    thread = served.saver.thread_info(thread_id)
    if thread is None:
        body = f"<h1>Not found</h1><p>No thread {_e(thread_id)}.</p>"
        return _page(request, "not found", body, status=404)
    snapshot = snapshot_of(served, thread)
    status = thread_status(snapshot, last_run(served, thread_id))
    parts = [
        f"<h1>Thread {_e(thread_id)}</h1>",
        f'<p>graph <b>{_e(thread.graph or "")}</b> · status <span class="status">'
        f"{_e('waiting for you' if status == 'interrupted' else status)}</span></p>",
    ]
    if snapshot is not None and snapshot.spent:
        parts.append(f"<p>spent <b>{_e(str(snapshot.spent))}</b></p>")
    if status == "error":
        failed = served.runs.of_thread(thread_id)[0]
        parts.append(f'<p class="error">{_e(failed.error or "")}</p>')
    if status == "interrupted" and snapshot is not None:
        parts.append(_answer_form(thread_id, snapshot.interrupts, _csrf(request)))
    if snapshot is not None and thread.graph:
        parts.append(f'<h2>Path taken</h2><div class="drawing">{_drawing(served, thread)}</div>')
    values = snapshot.values if snapshot is not None else {}
    shown = json.dumps(values, indent=2, ensure_ascii=False, default=str)
    parts.append(f"<h2>State</h2><pre>{_e(shown)}</pre>")
    if snapshot is not None:
        parts.append(f"<h2>History</h2>{_history(served, thread)}")
    return _page(request, thread_id, "".join(parts), refresh=status == "busy")


def _typed(text: str, asked: Any) -> Any:
    """Return the answer as typed, or as JSON when it parses and the question is not text."""
    if isinstance(asked, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def _resume(served: Served, thread_id: str, fields: dict[str, str]) -> str | None:
    """Queue the answers as a resume run; return an error to show, or ``None``."""
    thread = served.saver.thread_info(thread_id)
    snapshot = snapshot_of(served, thread) if thread is not None else None
    if thread is None or snapshot is None or not snapshot.interrupts or not thread.graph:
        return "this thread is not waiting for an answer"
    answers = {}
    for item in snapshot.interrupts:
        text = fields.get(f"answer-{item.id}")
        if text is None:
            return "the page is out of date: the thread waits for another question; reload it"
        if item.when == "during":
            answers[item.id] = _typed(text, item.value)
    value = next(iter(answers.values())) if len(answers) == 1 else answers
    fields_of_run = {
        "input": None,
        # a pause before/after a node is gone on from with no answer, as invoke(None)
        "command": {"resume": value} if answers else None,
        "stream_mode": ["values"],
        "metadata": {"source": "inbox"},
        "multitask_strategy": "reject",  # two people answering at once: the second is told
    }
    try:
        served.start(thread_id, thread.graph, fields_of_run)
    except BusyThreadError:
        return "someone answered already: the thread is running again"
    return None


async def answer(request: Request) -> Response:
    if not _signed_in(request):
        return _sign_in(request)
    served: Served = request.app.state.served
    thread_id = request.path_params["thread_id"]
    fields = await _form(request)
    problem = await run_in_threadpool(_resume, served, thread_id, fields)
    if problem is not None:
        back = f"/inbox/{quote(thread_id, safe='')}"
        body = f'<p class="error">{_e(problem)}</p><p><a href="{_e(back)}">Back</a></p>'
        return _page(request, "not sent", body, status=409)
    return RedirectResponse(f"/inbox/{quote(thread_id, safe='')}", status_code=303)


routes = [
    Route("/", inbox, methods=["GET"]),
    Route("/signin", sign_in, methods=["POST"]),
    Route("/inbox/{thread_id}", thread_page, methods=["GET"]),
    Route("/inbox/{thread_id}/answer", answer, methods=["POST"]),
]
