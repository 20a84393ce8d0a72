"""`invoke`/`stream`/`update_state` take the graph's update schema: an unknown key is an error."""

from __future__ import annotations

from _graph import g

app = g.compile()
app.invoke({"scroe": 40})  # E: arg-type "StateUpdate | Resume | Command[Any] | None"
app.invoke({"score": "40"})  # E: arg-type "dict[str, str]"
app.stream({"drfats": []}, mode="values")  # E: call-overload "No overload variant of"
app.update_state("t1", {"scroe": 1})  # E: typeddict-unknown-key "scroe"


async def later() -> None:
    await app.ainvoke({"scroe": 40})  # E: arg-type "StateUpdate"
