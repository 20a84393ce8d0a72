"""The modules here are inputs for the CLI tests, not tests: pytest must not import them."""

collect_ignore_glob = ["*.py"]
