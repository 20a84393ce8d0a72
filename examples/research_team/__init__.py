"""A research team: a supervisor graph that composes two agent graphs as subgraphs.

- :mod:`research_team.researcher`: plans queries with an async model call (``timeout=``)
  and runs a flaky search tool under ``Retry``, in a guarded loop;
- :mod:`research_team.writer`: drafts a report with the model, streaming its tokens as
  custom events (``ctx.emit``), and asks a person to approve it with ``interrupt()``;
- :mod:`research_team.supervisor`: the parent graph; ``python -m research_team.supervisor``
  (from ``examples/``) runs it and prints the tokens as they come.
"""
