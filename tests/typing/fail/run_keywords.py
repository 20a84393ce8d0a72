"""`invoke` and `ainvoke` take one set of keywords: a misspelt or mistyped one is an error."""

from __future__ import annotations

from _graph import g

app = g.compile()
app.invoke({"score": 40}, thread_idd="t1")  # E: call-arg "thread_idd"
app.invoke({"score": 40}, max_steps="9")  # E: arg-type "max_steps"


async def later() -> None:
    await app.ainvoke(None, checkpoint="c1")  # E: call-arg "checkpoint"
