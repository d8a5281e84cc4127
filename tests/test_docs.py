"""The README's examples run, so they cannot drift from what the code does."""

from __future__ import annotations

import doctest
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_examples_run():
    results = doctest.testfile(str(README), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert results.attempted >= 5
    assert results.failed == 0
