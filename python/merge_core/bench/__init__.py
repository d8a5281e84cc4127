"""`merge-core bench`: merge-core side by side with the tools a user would pick instead,
on the same generated inputs in one run, written up as a Markdown report with charts.

Suites (each in its own module, each returning a report section):
``kway`` (k-way merge of sorted runs), ``upsert`` (the contest upsert read), ``sort``
(external sort at 8x the memory limit), ``table`` (writing a Paimon table: merge-core vs
pypaimon and pypaimon-rust, merge-core's compaction; dynamic partition pruning; universal
compaction after 50 small commits),
``paimon`` (a Paimon table written by pypaimon, read by merge-core, pypaimon and
pypaimon-rust), ``lookup`` (point lookups in that table, by each of them), ``spark``
(the contest upsert as a Spark job).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass

from ._inputs import Inputs
from ._measure import MiB, Section, missing, progress
from ._report import write


@dataclass(frozen=True)
class Scale:
    base_rows: int  # contest base rows (increments: 10 x base/5)
    kway_runs: int
    kway_rows_per_run: int
    sort_limit: int  # bytes; the sort's data is 8x this
    repeat: int


SCALES = {
    "tiny": Scale(20_000, 8, 20_000, 4 * MiB, 1),
    "small": Scale(200_000, 16, 100_000, 16 * MiB, 2),
    "full": Scale(2_000_000, 16, 1_000_000, 64 * MiB, 3),
}
SUITES = ["kway", "upsert", "sort", "table", "paimon", "lookup", "append", "spark"]
SORT_FACTOR = 8


def run(
    scale: str = "small",
    out: str = "docs/benchmarks",
    suites: list[str] | None = None,
    master: str = "local[2]",
    repeat: int | None = None,
    command: str | None = None,
) -> str:
    """Runs the suites at `scale`, writes the report and charts into `out`; returns the
    report's path. Generated data lives in a temporary folder removed at the end."""
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r}: use one of {', '.join(SCALES)}")
    unknown = set(suites or []) - set(SUITES)
    if unknown:
        raise ValueError(f"unknown suite(s) {', '.join(sorted(unknown))}: use {', '.join(SUITES)}")
    chosen = [s for s in SUITES if s in (suites or SUITES)]
    size = SCALES[scale]
    repeat = repeat or size.repeat
    spark = None
    sections: list[Section] = []
    with tempfile.TemporaryDirectory(prefix="merge-core-bench-") as tmp:
        inputs = Inputs(os.path.join(tmp, "shared"), size.base_rows)  # what several suites read, made once
        try:
            if {"upsert", "spark"} & set(chosen) and not missing("pyspark"):
                from . import _spark

                spark = _spark.session(master, log=os.path.join(tmp, "spark.log"))  # removed with the data
            for suite in chosen:
                progress(f"{suite}:")
                folder = os.path.join(tmp, suite)
                sections.append(run_suite(suite, folder, inputs, size, repeat, spark))
                shutil.rmtree(folder, ignore_errors=True)  # keep the disk footprint to one suite
        finally:
            if spark is not None:
                spark.stop()
    return write(sections, out, scale, command or f"merge-core bench --scale {scale}")


def run_suite(suite: str, folder: str, inputs: Inputs, size: Scale, repeat: int, spark) -> Section:
    """One suite's section; `folder` is its own scratch, removed after it."""
    os.makedirs(folder, exist_ok=True)
    if suite == "kway":
        from . import _kway

        return _kway.run(folder, size.kway_runs, size.kway_rows_per_run, repeat)
    if suite == "upsert":
        from . import _upsert

        return _upsert.run(folder, inputs, repeat, spark)
    if suite == "sort":
        from . import _sort

        return _sort.run(folder, size.sort_limit, SORT_FACTOR)
    if suite == "table":
        from . import _table

        return _table.run(folder, inputs, repeat)
    if suite == "paimon":
        from . import _paimon

        return _paimon.run(folder, inputs, repeat)
    if suite == "lookup":
        from . import _lookup

        return _lookup.run(folder, inputs, repeat)
    if suite == "append":
        from . import _append_table

        return _append_table.run(folder, inputs, repeat)
    from . import _spark

    if spark is None:
        return Section("spark", "Contest upsert as a Spark job", ["skipped: pyspark is not installed"], [])
    return _spark.run(folder, inputs, repeat, spark)
