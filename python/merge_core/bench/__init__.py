"""`merge-core bench`: merge-core side by side with the tools a user would pick instead,
on the same generated inputs in one run, written up as a Markdown report with charts.

Suites (each in its own module, each returning a report section):
``kway`` (k-way merge of sorted runs), ``upsert`` (the contest upsert read), ``sort``
(external sort at 8x the memory limit), ``table`` (writing a Paimon table: merge-core vs
pypaimon and pypaimon-rust, merge-core's compaction; dynamic partition pruning; universal
compaction after 50 small commits),
``paimon`` (a Paimon table written by pypaimon, read by merge-core, pypaimon and
pypaimon-rust), ``lookup`` (point lookups in that table, by each of them), ``spark``
(the contest upsert as a Spark job); and ``scaling`` (merge-core's own steps at several
row counts, no peers: time against rows and memory that does not grow with them), which
runs only when asked for (``--only scaling``) or at the ``huge`` scale (6M to 60M rows),
and replaces only its own section of the report.
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
    scaling: tuple[int, ...]  # the scaling suite's sizes, in contest base rows (3x as many rows in all)


SCALES = {
    "tiny": Scale(20_000, 8, 20_000, 4 * MiB, 1, (10_000, 20_000)),
    "small": Scale(200_000, 16, 100_000, 16 * MiB, 2, (200_000, 400_000)),
    "full": Scale(2_000_000, 16, 1_000_000, 64 * MiB, 3, (2_000_000, 4_000_000)),
    # Only the scaling suite: 6M, 12M, 30M and 60M rows (about 30 minutes on a quiet 2-core machine).
    "huge": Scale(20_000_000, 16, 1_000_000, 64 * MiB, 1, (2_000_000, 4_000_000, 10_000_000, 20_000_000)),
}
SUITES = ["kway", "upsert", "sort", "table", "paimon", "lookup", "append", "spark", "scaling"]
DEFAULT_SUITES = [s for s in SUITES if s != "scaling"]  # scaling is a run of its own
ONLY_SCALING = {"huge"}  # scales too large for the suites with peers
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
    if scale in ONLY_SCALING and set(suites or ["scaling"]) != {"scaling"}:
        raise ValueError(f"the {scale!r} scale runs only the scaling suite")
    default = ["scaling"] if scale in ONLY_SCALING else DEFAULT_SUITES
    chosen = [s for s in SUITES if s in (suites or default)]
    size = SCALES[scale]
    command = command or f"merge-core bench --scale {scale}"
    path = None
    if chosen != ["scaling"]:
        path = run_peers([s for s in chosen if s != "scaling"], size, out, scale, master, repeat, command)
    if "scaling" in chosen:
        path = run_scaling(size, out, scale, master, command)
    return path


def run_scaling(size: Scale, out: str, scale: str, master: str, command: str) -> str:
    """The scaling suite, its data in a temporary folder removed at the end; writes its
    section into the report in `out`, leaving the rest of it as it is."""
    from . import _scaling
    from ._report import write_scaling

    with tempfile.TemporaryDirectory(prefix="merge-core-scaling-") as tmp:
        points, made = _scaling.run(tmp, list(size.scaling), master)
    return write_scaling(points, made, out, scale, command)


def run_peers(
    chosen: list[str], size: Scale, out: str, scale: str, master: str, repeat: int | None, command: str
) -> str:
    """The suites with peers on the same inputs, written as the report (its scaling
    section kept)."""
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
    return write(sections, out, scale, command)


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
