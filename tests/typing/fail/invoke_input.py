"""`invoke`/`stream`/`submit`/`update_state` (and async) take the graph's update schema: an unknown key is an error."""

from __future__ import annotations

from _graph import g

app = g.compile()
app.invoke({"scroe": 40})  # E: arg-type = Argument 1 to "invoke" of "CompiledGraph" has incompatible type "dict[str, int]"; expected "StateUpdate | Resume[Any] | Command[Any] | None"
app.invoke({"score": "40"})  # E: arg-type = Argument 1 to "invoke" of "CompiledGraph" has incompatible type "dict[str, str]"; expected "StateUpdate | Resume[Any] | Command[Any] | None"
app.stream({"drfats": []}, mode="values")  # E: call-overload = No overload variant of "stream" of "CompiledGraph" matches argument types "dict[str, list[Never]]", "str"
app.submit({"scroe": 1}, thread_id="t1")  # E: arg-type = Argument 1 to "submit" of "CompiledGraph" has incompatible type "dict[str, int]"; expected "StateUpdate | Resume[Any] | None"
app.update_state("t1", {"scroe": 1})  # E: typeddict-unknown-key = Extra key "scroe" for TypedDict "StateUpdate"


async def later() -> None:
    app.astream({"scroe": 40})  # E: call-overload = No overload variant of "astream" of "CompiledGraph" matches argument type "dict[str, int]"
    await app.ainvoke({"scroe": 40})  # E: arg-type = Argument 1 to "ainvoke" of "CompiledGraph" has incompatible type "dict[str, int]"; expected "StateUpdate | Resume[Any] | Command[Any] | None"
