"""A module that never mentions the library: lint must not import it."""

raise SystemExit("plain.py was imported; lint should have skipped it")
