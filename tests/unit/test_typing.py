"""mypy checks routes: well-typed modules pass ``--strict``, broken ones fail where expected.

One mypy run covers every file under ``tests/typing/``: the modules in ``pass/`` must have no
error at all, and each module in ``fail/`` must have exactly the errors its lines announce
with a ``# E: <code> "<text>"`` comment, where ``<text>`` is part of mypy's message (the
offending literal, usually), or ``# E: <code> = <message>``, the whole message. A
regression in the library's typing (a decorator that returns ``Any``, a ``Literal`` widened
to ``str``) makes an expected error disappear or an ``assert_type`` fail, and this test with
it.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Annotated, Literal, TypedDict

import pytest
from mypy import api

from corral import END, Graph, GraphError

ROOT = Path(__file__).resolve().parents[2]
TYPING = ROOT / "tests" / "typing"
PASS_FILES = sorted((TYPING / "pass").glob("*.py"))
FAIL_FILES = sorted(p for p in (TYPING / "fail").glob("*.py") if not p.name.startswith("_"))
SHARED_FAIL_FILES = sorted((TYPING / "fail").glob("_*.py"))

_EXPECT = re.compile(r'#\s*E:\s*(?P<code>[\w-]+)\s+(?:"(?P<text>[^"]+)"|=\s*(?P<exact>.*?)\s*$)')
_ERROR = re.compile(
    r"^(?P<path>.+?):(?P<line>\d+): error: (?P<message>.*?)\s+\[(?P<code>[\w-]+)\]$"
)


@dataclass(frozen=True)
class Error:
    """One error mypy reported (or that a ``# E:`` comment expects)."""

    line: int
    code: str
    text: str
    """The whole message for a reported error; the expected part for an expected one."""
    exact: bool = False
    """For an expected error: ``text`` is the whole message (``# E: code = message``)."""


@cache
def run_mypy(cache_dir: str) -> tuple[dict[Path, list[Error]], str]:
    """Run mypy once over every typing module; return the errors by file and the raw output."""
    args = [
        "--config-file",
        str(ROOT / "mypy.ini"),
        "--strict",
        "--cache-dir",
        cache_dir,
        "--show-error-codes",
        "--no-error-summary",
        "--hide-error-context",
        "--no-pretty",
        "--no-color-output",
        "--show-absolute-path",
        *map(str, [*PASS_FILES, *SHARED_FAIL_FILES, *FAIL_FILES]),
    ]
    stdout, stderr, _status = api.run(args)
    assert not stderr, stderr
    errors: dict[Path, list[Error]] = {}
    for raw in stdout.splitlines():
        found = _ERROR.match(raw)
        if found:
            error = Error(int(found["line"]), found["code"], found["message"])
            errors.setdefault(Path(found["path"]).resolve(), []).append(error)
    return errors, stdout


@pytest.fixture(scope="module")
def mypy_errors(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[Path, list[Error]], str]:
    return run_mypy(str(tmp_path_factory.mktemp("mypy-cache")))


def expected_errors(path: Path) -> list[Error]:
    """Read the ``# E: code "text"`` comments of a module."""
    out = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        for found in _EXPECT.finditer(line):
            if found["exact"] is not None:
                out.append(Error(number, found["code"], found["exact"], exact=True))
            else:
                out.append(Error(number, found["code"], found["text"]))
    return out


def test_every_case_is_collected() -> None:
    """The typing folders hold the modules this test expects (a rename would hide them)."""
    assert {p.name for p in PASS_FILES} >= {"graph_types.py", "decorators.py"}
    assert {p.name for p in FAIL_FILES} >= {
        "node_state.py",
        "send_input.py",
        "router_state.py",
        "invoke_input.py",
        "run_state.py",
        "send_function.py",
        "guard_target.py",
    }
    assert len(FAIL_FILES) >= 10
    for path in FAIL_FILES:
        assert expected_errors(path), f"{path.name} expects no error; add # E: comments"


@pytest.mark.parametrize(
    "name",
    [
        "invoke_input.py",
        "run_state.py",
        "send_function.py",
        "guard_target.py",
        "router_target_typo.py",
        "answers_and_deps.py",
    ],
)
def test_each_promise_of_typing_at_the_edges_pins_the_whole_message(name: str) -> None:
    """Issue 12 pt 6: input keys, run.state, Send(function), guards, router typos: exact text."""
    expected = expected_errors(TYPING / "fail" / name)
    assert expected and all(e.exact for e in expected)


@pytest.mark.parametrize("path", PASS_FILES + SHARED_FAIL_FILES, ids=lambda p: p.name)
def test_well_typed_module_passes_strict(
    path: Path, mypy_errors: tuple[dict[Path, list[Error]], str]
) -> None:
    """A well-typed module (assert_type on graphs and decorated functions) has no error."""
    errors, output = mypy_errors
    assert errors.get(path.resolve(), []) == [], output


@pytest.mark.parametrize("path", FAIL_FILES, ids=lambda p: p.name)
def test_broken_module_fails_where_expected(
    path: Path, mypy_errors: tuple[dict[Path, list[Error]], str]
) -> None:
    """Each expected error is reported on its line with its code and literal; no other is."""
    errors, output = mypy_errors
    actual = errors.get(path.resolve(), [])
    expected = expected_errors(path)
    assert [(e.line, e.code) for e in actual] == [(e.line, e.code) for e in expected], output
    for want, got in zip(expected, actual, strict=True):
        if want.exact:
            assert got.text == want.text, f"{path.name}:{got.line}: {got.text!r}"
        else:
            where = f"{path.name}:{got.line}"
            assert want.text in got.text, f"{where}: {got.text!r} lacks {want.text!r}"


def test_router_literal_typo_first_reports_the_return_value(
    mypy_errors: tuple[dict[Path, list[Error]], str],
) -> None:
    """A misspelt router target: mypy's first error is the body's return-value one, no noise."""
    errors, output = mypy_errors
    path = (TYPING / "fail" / "router_target_typo.py").resolve()
    reported = errors.get(path, [])
    assert reported, output
    first = reported[0]
    assert first.code == "return-value"
    assert "got \"Literal['revise']\", expected \"Literal['revsie', '__end__']\"" in first.text
    lines = [line for line in output.splitlines() if str(path) in line]
    assert not [line for line in lines if "RouterFunction[" in line], output


def test_node_state_error_names_the_parameter_type_and_the_state(
    mypy_errors: tuple[dict[Path, list[Error]], str],
) -> None:
    """A node taking the wrong state: the message shows its type and the one the graph needs."""
    errors, output = mypy_errors
    reported = errors.get((TYPING / "fail" / "node_state.py").resolve(), [])
    assert reported, output
    assert "Callable[[OtherState], StateUpdate]" in reported[0].text
    assert "NodeFunction[State, StateUpdate, Literal['draft'" in reported[0].text
    sends = errors.get((TYPING / "fail" / "send_input.py").resolve(), [])
    assert sends, output
    assert "Callable[[int], StateUpdate]" in sends[0].text
    assert "NodeFunction[Document, StateUpdate," in sends[0].text


def test_nodes_literal_is_read_at_run_time() -> None:
    """The node names passed for mypy are the ones compile() compares with the graph (CR108)."""
    g = Graph(LoopState, nodes=Literal["first", "second"])

    @g.node(start=True, then=END)
    def first(state: LoopState) -> None:
        return None

    findings = [d for d in g.check() if d.code == "CR108"]
    assert findings, "a name in nodes= with no node registered must be reported"
    assert "second" in findings[0].message
    with pytest.raises(GraphError):
        g.compile()


class LoopState(TypedDict):
    score: int
    drafts: Annotated[list[str], operator.add]


class LoopUpdate(TypedDict, total=False):
    score: int
    drafts: list[str]


class DriftedUpdate(TypedDict, total=False):
    score: str
    draft: list[str]


def test_update_schema_is_compared_with_the_state_at_run_time() -> None:
    """An update schema with the state's keys, all optional, passes; one that differs is CR303."""

    def build(update: type[LoopUpdate] | type[DriftedUpdate]) -> Graph[LoopState, object, str]:
        g: Graph[LoopState, object, str] = Graph(LoopState, update, Literal["only"])

        @g.node(name="only", start=True, then=END)
        def only(state: LoopState) -> None:
            return None

        return g

    assert build(LoopUpdate).check() == []
    findings = [(d.code, d.message) for d in build(DriftedUpdate).check()]
    assert {code for code, _ in findings} == {"CR303"}
    messages = " ".join(message for _, message in findings)
    assert "'draft'" in messages and "'drafts'" in messages and "'score'" in messages
