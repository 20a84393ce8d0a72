"""A support desk: classify a ticket, call the right tool, repair a failed call, reply.

``classify`` routes each ticket to one of three tool nodes (billing, technical, general),
each calling its client from ``deps``. A tool node returns a ``Command`` that both updates
the state and picks the next node: ``reply`` when the tool answered, ``repair`` when it
raised. ``repair`` fixes what it can (here: a badly written invoice number) and routes back
to the same tool; those routes are guarded (one retry each), and when the retry is used up
the ticket goes to a person (``handoff``) instead of looping.

Run it::

    python examples/support_router.py
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypedDict

from corral import END, Command, Context, Graph, Guard, Run


class State(TypedDict):
    """One ticket on its way to an answer."""

    ticket: str
    category: str
    query: str
    answer: str
    error: str
    retries: int


class StateUpdate(TypedDict, total=False):
    """Any subset of the state's keys."""

    ticket: str
    category: str
    query: str
    answer: str
    error: str
    retries: int


class ToolError(Exception):
    """A tool call that failed in a way ``repair`` may fix."""


class Billing(Protocol):
    def invoice_status(self, invoice_id: str) -> str: ...


class Docs(Protocol):
    def search(self, query: str) -> str: ...


class Faq(Protocol):
    def answer(self, question: str) -> str: ...


@dataclass
class Tools:
    """The tool clients, passed to ``invoke`` as ``deps``."""

    billing: Billing
    docs: Docs
    faq: Faq


Nodes = Literal["classify", "billing", "technical", "general", "repair", "reply", "handoff"]
Desk = Literal["billing", "technical", "general"]
ToolOutcome = Command[Literal["reply", "repair"]]

g = Graph(State, StateUpdate, Nodes, name="support_router", max_steps=20)


@g.node(start=True)
def classify(state: State) -> StateUpdate:
    text = state["ticket"].lower()
    if "invoice" in text or "refund" in text:
        invoice = re.search(r"inv[\s#-]*\d+", text)
        return {"category": "billing", "query": invoice.group(0) if invoice else text}
    if "error" in text or "crash" in text:
        return {"category": "technical", "query": text}
    return {"category": "general", "query": text}


@g.router("classify")
def route_ticket(state: State) -> Desk:
    if state["category"] == "billing":
        return "billing"
    if state["category"] == "technical":
        return "technical"
    return "general"


def _call(tool: str, call: Callable[[str], str], query: str) -> ToolOutcome:
    """Call one tool; route to ``reply`` with its answer or to ``repair`` with the error."""
    try:
        answer = call(query)
    except ToolError as exc:
        return Command(update={"error": f"{tool}: {exc}"}, goto="repair")
    return Command(update={"answer": answer, "error": ""}, goto="reply")


@g.node()
def billing(state: State, ctx: Context) -> ToolOutcome:
    tools: Tools = ctx.deps
    return _call("billing", tools.billing.invoice_status, state["query"])


@g.node()
def technical(state: State, ctx: Context) -> ToolOutcome:
    tools: Tools = ctx.deps
    return _call("docs", tools.docs.search, state["query"])


@g.node()
def general(state: State, ctx: Context) -> ToolOutcome:
    tools: Tools = ctx.deps
    return _call("faq", tools.faq.answer, state["query"])


@g.node()
def repair(state: State) -> StateUpdate:
    # The billing API wants "INV-0042"; customers write "inv 42", "INV#42"...
    digits = re.sub(r"\D", "", state["query"])
    query = f"INV-{int(digits):04d}" if digits else state["query"].strip()
    return {"query": query, "retries": state["retries"] + 1}


@g.router(
    "repair",
    guards=[
        Guard("billing", max=1, otherwise="handoff"),
        Guard("technical", max=1, otherwise="handoff"),
        Guard("general", max=1, otherwise="handoff"),
    ],
)
def retry(state: State) -> Desk:
    return route_ticket(state)


@g.node(then=END)
def reply(state: State) -> StateUpdate:
    return {"answer": f"Hello! {state['answer']}"}


@g.node(then=END)
def handoff(state: State) -> StateUpdate:
    return {"answer": f"A person will follow up (tool failed: {state['error']})."}


app = g.compile()


@dataclass
class FakeBilling:
    """Knows one invoice and insists on the ``INV-0000`` spelling."""

    calls: list[str] = field(default_factory=list)

    def invoice_status(self, invoice_id: str) -> str:
        self.calls.append(invoice_id)
        if not re.fullmatch(r"INV-\d{4}", invoice_id):
            msg = f"malformed invoice id {invoice_id!r}; expected INV-0000"
            raise ToolError(msg)
        if invoice_id != "INV-0042":
            msg = f"no invoice {invoice_id!r}"
            raise ToolError(msg)
        return f"{invoice_id} was refunded on 3 March; allow 5 working days."


class FakeDocs:
    def search(self, query: str) -> str:
        return "Error E42 means the sync token expired: sign out and in again."


class FakeFaq:
    def answer(self, question: str) -> str:
        return "We are open 9-17 CET, Monday to Friday."


def fake_tools() -> Tools:
    """Return offline tool clients."""
    return Tools(billing=FakeBilling(), docs=FakeDocs(), faq=FakeFaq())


def handle(ticket: str, tools: Tools | None = None) -> Run:
    """Answer one ticket."""
    return app.invoke({"ticket": ticket, "retries": 0}, deps=tools or fake_tools())


TICKETS = [
    "Where is the refund for invoice inv 42?",
    "The app shows error E42 after the update",
    "When are you open?",
    "Refund for invoice INV#7 please",
]


def main() -> None:
    for ticket in TICKETS:
        run = handle(ticket)
        path = " → ".join(record.node for record in run.trace)
        print(f"{ticket}\n  {path}\n  {run.state['answer']}")


if __name__ == "__main__":
    main()
