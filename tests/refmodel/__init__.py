"""A reference model of one corral thread, and the random graphs it is checked on.

``shapes`` describes a random graph as plain data (and draws them with hypothesis),
``behaviour`` is what every generated node and router does (shared by both sides, so
they are given the same work), ``interpreter`` runs a shape the way API.md and
docs/concepts.md say a corral thread runs, and ``build`` turns a shape into a real
``corral.Graph``. The tests that compare the two are ``tests/unit/test_model_*.py``.
"""
