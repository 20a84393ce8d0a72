"""A corpus of public LangGraph projects, each a minimal extract of its wiring with verdicts."""
