"""Print the analyser's precision and recall on the LangGraph corpus.

Run from the repository root: ``python tests/langgraph_corpus/score.py`` (``-v`` lists every
claim). tests/unit/test_langgraph_corpus.py asserts the figures.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/

from langgraph_corpus.corpus import projects, score


def main(argv: list[str]) -> int:
    result = score()
    count = len(list(projects()))
    errors = len(result.true_errors) + len(result.false_errors)
    defects = len(result.found) + len(result.missed)
    print(f"projects: {count}")
    print(
        f"precision: {result.precision:.1%} ({len(result.true_errors)} true and "
        f"{len(result.false_errors)} false of {errors} distinct error findings)"
    )
    print(f"recall: {result.recall:.1%} ({len(result.found)} of {defects} real defects found)")
    for where, problem in result.failures:
        print(f"FAILED {where}: {problem}")
    for where, code, message, _ in result.false_errors:
        print(f"FALSE  {where} {code} {message}")
    for where, defect in result.missed:
        print(f"MISSED {where} {defect.codes} {defect.nodes}: {defect.why}")
    if "-v" in argv:
        for where, code, message, _ in result.true_errors:
            print(f"TRUE   {where} {code} {message}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
