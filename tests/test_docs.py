"""The examples of the README and of every guide under docs/ run, so they cannot drift
from what the code does."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
GUIDES = ["README.md", "docs/guide.md", "docs/semantics.md", "docs/memory.md"]


def run_examples(path: str, **globs) -> doctest.TestResults:
    return doctest.testfile(str(ROOT / path), module_relative=False, optionflags=FLAGS, globs=globs)


@pytest.mark.parametrize("path", GUIDES)
def test_guide_examples_run(path):
    results = run_examples(path)
    assert results.attempted >= 5, f"{path} lost its examples"
    assert results.failed == 0


def test_spark_guide_examples_run(spark):
    results = run_examples("docs/spark.md", spark=spark)
    assert results.attempted >= 10
    assert results.failed == 0


def test_every_guide_with_examples_is_tested():
    tested = {*GUIDES, "docs/spark.md"}
    with_examples = {str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md") if ">>> " in p.read_text()}
    assert with_examples <= tested
