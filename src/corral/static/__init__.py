"""Read graphs with mypy instead of importing them: ``corral lint --static``.

The import-based loader (:mod:`corral.loader`) runs a module's top-level code to find its
graphs. This reader runs none: it hands the files to mypy's build API, which parses and
type-checks them (following their imports, so a graph whose nodes are registered from
several modules is seen whole), and then rebuilds each graph's :class:`~corral.spec.GraphSpec`
from what mypy knows:

- a ``Graph(...)`` assigned at module level is a graph; its state, update and node-name
  types are the type arguments mypy inferred for the call, its ``name=``/``max_steps=`` the
  literal arguments;
- a function decorated with ``@g.node(...)`` or ``@g.router(...)``, where ``g`` is such a
  graph (possibly imported from another module), is one of its nodes or routers; the
  decorator's arguments must be literals (strings, tuples, ``END``, ``Guard(...)``);
- route targets come from the function's return type as mypy resolved it, so aliases and
  ``End`` read the same as at run time; the keys a node writes are inferred from its
  source by :func:`corral.writes.infer_writes`, exactly as at run time.

Everything that would need code to run (a decorator argument computed at run time, a graph
built inside a function, a reducer's behaviour) is out of reach; a decorator argument that
is not a literal is reported as a load error naming the file and line. mypy is not a
dependency of corral: this module imports it only when called.
"""

from corral.static._load import StaticTarget, load_static

__all__ = ["StaticTarget", "load_static"]
