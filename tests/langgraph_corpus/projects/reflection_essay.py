"""iusGPT's reflection loop: generate, reflect, and stop after a few rounds of messages.

Source: Mitchu727/iusGPT @ 07dc62beca86706fbd936ee84211706ae333da41, src/some.py (no
licence file found: re-expressed). A ``MessageGraph``: the state is the list of messages,
each node appends one, and the router stops when the list is longer than six. Added after
the reading was tuned on the other projects (a held-out project).
"""

from __future__ import annotations

import warnings
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.graph import END

from langgraph_corpus.corpus import Clean, Project


def generation_node(state: list[BaseMessage]) -> Any:
    return AIMessage("an essay")


def reflection_node(state: list[BaseMessage]) -> Any:
    return HumanMessage("a critique")


def should_continue(state: list[BaseMessage]):  # type: ignore[no-untyped-def]
    if len(state) > 6:
        return END
    return "reflect"


def build() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # MessageGraph is deprecated in LangGraph 1.x
        from langgraph.graph import MessageGraph

        builder = MessageGraph()
    builder.add_node("generate", generation_node)
    builder.add_node("reflect", reflection_node)
    builder.set_entry_point("generate")
    builder.add_conditional_edges("generate", should_continue)
    builder.add_edge("reflect", "generate")
    return builder


PROJECT = Project(
    repo="Mitchu727/iusGPT",
    commit="07dc62beca86706fbd936ee84211706ae333da41",
    files=("src/some.py",),
    licence="none found",
    verbatim=False,
    graphs=lambda: {"reflection": build()},
    clean=(
        Clean(
            "reflection",
            ("generate", "reflect"),
            "CR201",
            "each pass appends two messages and should_continue ends once there are more "
            "than six: the loop is bounded by the message list",
        ),
    ),
)
