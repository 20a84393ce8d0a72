"""A module whose import fails: lint reports it in one line and exits 2."""

from corral_tools_that_are_not_installed import search  # noqa: F401

from corral import Graph

g = Graph(dict)
