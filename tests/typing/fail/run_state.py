"""`Run` is generic in the state: a key's type is its schema type, an unknown key an error."""

from __future__ import annotations

from _graph import g

run = g.compile().invoke({"score": 40})
total: str = run.state["score"]  # E: assignment = Incompatible types in assignment (expression has type "int", variable has type "str")
run.state["scroe"]  # E: typeddict-item = TypedDict "State" has no key "scroe"
