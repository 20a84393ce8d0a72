"""A typed graph's answers and deps: a wrong ``Resume`` or ``deps=`` is an error; a model must fit,
and a provider adapter's options are checked."""

from __future__ import annotations

from typing import Protocol

from _graph import g

from openai import OpenAI

from corral import Resume
from corral.agents import react_agent
from corral.agents.openai import openai_model


class Tools(Protocol):
    def score(self, n: int) -> int: ...


app = g.compile(deps_type=Tools, answer_type=bool)
app.invoke(Resume("yes"), thread_id="t")  # E: arg-type = Argument 1 to "Resume" has incompatible type "str"; expected "bool | Mapping[str, bool]"
app.invoke(None, thread_id="t", deps=object())  # E: arg-type = Argument "deps" to "invoke" of "CompiledGraph" has incompatible type "object"; expected "Tools | None"
app.stream(None, mode="values", deps=1)  # E: call-overload = No overload variant of "stream" of "CompiledGraph" matches argument types "None", "str", "int"


def not_a_model(prompt: str) -> str:
    return prompt


react_agent(not_a_model, [])  # E: arg-type = Argument 1 to "react_agent" has incompatible type "Callable[[str], str]"; expected "Model"

openai_model(OpenAI(api_key="k"), "m", stream="yes")  # E: call-overload = No overload variant of "openai_model" matches argument types "OpenAI", "str", "str"
