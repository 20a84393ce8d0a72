"""A known limit, not a wish: mypy rejects a node whose first parameter is positional-only.

The node below fits the graph, and pyright accepts it; mypy's inference cannot capture its
signature (see ``corral.dsl.NodeFunction``) and reports ``Never``. docs/typing.md tells users
to write the parameter without ``/``. If a future mypy or corral lifts the limit, this case
fails: move the node to ``pass/decorators.py`` and drop the paragraph in docs/typing.md.
"""

from __future__ import annotations

from _graph import State, StateUpdate, g


@g.node()  # E: arg-type "NodeFunction[State, StateUpdate, Literal['draft', 'critique', 'revise', 'work'], Never, Never]"
def draft(state: State, /) -> StateUpdate:
    return {}
