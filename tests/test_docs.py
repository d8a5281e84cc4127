"""The examples of the README and of every guide under docs/ run, so they cannot drift
from what the code does; the demo's output the README shows is what the demo prints."""

from __future__ import annotations

import doctest
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
GUIDES = ["docs/guide.md", "docs/semantics.md", "docs/memory.md"]
CLI = shutil.which("merge-core", path=os.path.dirname(sys.executable)) or "merge-core"


def run_examples(path: str, **globs) -> doctest.TestResults:
    return doctest.testfile(str(ROOT / path), module_relative=False, optionflags=FLAGS, globs=globs)


@pytest.mark.parametrize("path", GUIDES)
def test_guide_examples_run(path):
    results = run_examples(path)
    assert results.attempted >= 5, f"{path} lost its examples"
    assert results.failed == 0


def test_readme_examples_run(spark):
    """The README's examples, its Spark example included (whose local_session finds the
    tests' session already running)."""
    results = run_examples("README.md")
    assert results.attempted >= 15, "README.md lost its examples"
    assert results.failed == 0


def test_spark_guide_examples_run(spark):
    results = run_examples("docs/spark.md", spark=spark)
    assert results.attempted >= 10
    assert results.failed == 0


def test_every_guide_with_examples_is_tested():
    tested = {*GUIDES, "README.md", "docs/spark.md"}
    with_examples = {str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md") if ">>> " in p.read_text()}
    assert with_examples <= tested


def test_table_format_lists_every_paimon_option_as_the_code_classifies_it():
    """docs/table-format.md's list of Paimon's options is the code's table, option for
    option (after a change, print it with: python -m merge_core.paimon._core_options)."""
    from merge_core.paimon._core_options import OPTIONS, markdown

    text = (ROOT / "docs" / "table-format.md").read_text()
    listed = re.search(r"<!-- BEGIN paimon-options[^\n]*-->\n(.*?)<!-- END paimon-options -->", text, re.S).group(1)
    assert listed.strip() == markdown().strip()
    assert set(re.findall(r"^- `([^`]+)`", listed, re.M)) == {option.name for option in OPTIONS}


def shape(text: str) -> list[str]:
    """The demo's report with its figures, and the pipelines' ranking, left out: what
    stays the same from run to run."""
    lines = []
    for line in text.strip().splitlines():
        line = re.sub(r"\d[\d,]*(\.\d+)?", "N", line)
        line = re.sub(r"\b(N \w+?)s\b", r"\1", line)  # 1 run, 2 runs
        line = re.sub(r"(N s +N +)(fastest|Nx slower)$", r"\1RANK", line)
        line = re.sub(r"^Result: .*", "Result: (checked below)", line)
        lines.append(re.sub(r"\s+", " ", line).strip())
    table = [i for i, line in enumerate(lines) if line.endswith(" RANK")]
    lines[table[0] : table[-1] + 1] = sorted(lines[table[0] : table[-1] + 1])  # the order is the ranking
    return lines


def test_the_demo_prints_what_the_readme_shows(tmp_path):
    """`merge-core demo` (small data) ends with the README's report: what ran, the three
    pipelines with their times, one line on each, the check, and one sentence saying which
    won and by how much, with figures that agree with the table. Nothing on stderr: Spark's
    output goes to its log."""
    pytest.importorskip("pyspark")
    readme = (ROOT / "README.md").read_text()
    shown = re.search(r"```text\n(What ran:.*?)```", readme, re.S).group(1)
    env = {**os.environ, "MERGE_CORE_LOG_DIR": str(tmp_path)}
    args = [CLI, "demo", "--rows", "5000", "--increments", "10", "--repeat", "1"]
    result = subprocess.run(args, capture_output=True, text=True, timeout=900, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert list(tmp_path.glob("spark-*.log"))
    steps = result.stdout[: result.stdout.index("What ran:")]
    assert re.search(r"^generating the data: .* \.\.\. done \(\d+ s\)$", steps, re.M), steps
    assert re.search(r"^starting Spark \(.*\) \.\.\. done \(\d+ s\)$", steps, re.M), steps
    report = result.stdout[result.stdout.index("What ran:") :]
    assert shape(report) == shape(shown), report

    times = {m.group(1): float(m.group(2)) for m in re.finditer(r"^  (.+?)\s+([\d.]+) s\s", report, re.M)}
    assert set(times) == {"merge-core upsert_files", "merge-core upsert", "Spark SQL"}
    assert "the same " in report and "rows (compared with exceptAll" in report
    result_line = report.strip().splitlines()[-1]
    winner = min(times, key=times.get)
    if winner == "Spark SQL":
        assert result_line.startswith("Result: Spark SQL was fastest")
    else:
        ratio = float(re.search(r"fastest, ([\d.]+)x faster than Spark SQL", result_line).group(1))
        assert result_line.startswith(f"Result: {winner} was fastest")
        assert ratio == pytest.approx(times["Spark SQL"] / times[winner], abs=0.02)
