"""Scaling: merge-core's own steps on the contest data at several row counts, no peers,
to show that time grows with the rows and memory does not. Each step runs in its own
process (``python -m merge_core.bench._scaling STEP FOLDER``, which prints its figures as
JSON), so that its peak memory is its own; each row count's data is made, used and
removed before the next count's, so the disk holds one count's data at a time.

The steps, in order, on one row count's data folder:

- ``generate``: the contest versions (``merge_core.contest.generate``, seed 7): the input.
- ``write``: ``Table.write`` of the 11 versions (streamed from their files) as 11 commits
  into a new 8-bucket table, compacting as Paimon's writer does; the table is removed after.
- ``write-only``: the same into a ``write-only`` table, which keeps the 11 runs per bucket
  that the next steps merge.
- ``read``: ``Table.read`` of that table (default batch size and threads), each batch
  counted and dropped.
- ``decode floor``: its data files decoded by pyarrow on all cores, nothing merged.
- ``compact``: its full compaction (default threads).
- ``sort``: ``mc.sort`` of every version's rows by key at a 256 MiB limit, spilling.
- ``upsert_files``: ``merge_core.spark.upsert_files`` of the versions on a local Spark.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field

from ._measure import MiB, cpu_between, peak_rss, progress, reset_peak_rss, rss, tree_cpu

BUCKETS = 8
SORT_LIMIT = 256 * MiB
INPUT_BATCH = 65536  # rows per batch read from the version files
STEPS = {  # step -> what the report calls it
    "write": "Table.write, 11 commits (compacting)",
    "write-only": "Table.write, 11 commits (write-only)",
    "read": "Table.read (11 runs a bucket)",
    "decode floor": "decode floor (no merge)",
    "compact": "full compaction",
    "sort": "mc.sort, 256 MiB limit",
    "upsert_files": "Spark upsert_files",
}


@dataclass
class Point:
    """One step's figures at one row count; `bound` is the memory bound of docs/memory.md
    where it has one; `note` says why a step has no figures."""

    step: str
    rows: int
    seconds: float | None = None
    cpu_seconds: float | None = None
    peak_bytes: int | None = None
    bound: int | None = None
    rows_out: int | None = None
    note: str = ""
    extra: dict = field(default_factory=dict)


# -- the memory bounds (docs/memory.md, "Reading a table" and "Compacting a table") -------


def merge_bytes(runs: int, batch_rows: int, row_bytes: float) -> int:
    """What one merge holds: for each of its `runs`, the batch its cursor stands in and the
    one before it, each decoded into buffers up to twice its rows, and as much again for
    the merged batches (being built, ready, taken): (runs + 1) x 4 x batch x row."""
    return int((runs + 1) * 4 * batch_rows * row_bytes)


def read_bound(runs: int, row_bytes: float, threads: int) -> int:
    """A read on `threads` merging at most `threads` buckets at once: each merge's batches,
    the merged batches of the buckets merged ahead (a 128 MiB read-ahead shared among
    them) and those of the bucket being read (one share at most)."""
    from merge_core.paimon import READ_BATCH_ROWS

    ahead = READ_AHEAD_BYTES + READ_AHEAD_BYTES // max(1, threads - 1) if threads > 1 else READ_AHEAD_BYTES
    return min(threads, BUCKETS) * merge_bytes(runs, READ_BATCH_ROWS, row_bytes) + ahead


def compact_bound(runs: int, row_bytes: float, threads: int) -> int:
    """A full compaction on `threads`: one bucket a thread, each its merge's batches (of
    8,192 rows, one merged batch ready) and the row group its file gathers and encodes."""
    from merge_core.paimon import COMPACT_BATCH_ROWS, ENCODE_MEMORY

    workers = min(threads, BUCKETS)
    encoding = ENCODE_MEMORY // 4 if threads // workers == 1 else ENCODE_MEMORY
    return workers * (merge_bytes(runs, COMPACT_BATCH_ROWS, row_bytes) + encoding)


READ_AHEAD_BYTES = 128 * MiB  # rust/read/groups.rs
FORMULAS = [
    "read: min(threads, buckets) x (R + 1) x 4 x B x row + 128 MiB + 128 MiB / (threads - 1), with B = 65,536"
    " rows (the read's default batch) and the 128 MiB read-ahead shared by the buckets merged ahead, plus one"
    " share for the bucket being read;",
    "compaction: min(threads, buckets) x ((R + 1) x 4 x B x row + 16 MiB), with B = 8,192 rows"
    " (`COMPACT_BATCH_ROWS`) and 16 MiB the row group its file encodes (`ENCODE_MEMORY / 4`);",
    "R the runs a bucket merges (11 here), row the decoded bytes of a row of the read's columns (the table's and"
    " the two system columns, measured on the table's first data file). (R + 1) x 4 x B x row is, per run and for"
    " the output, the batch a merge stands in and the one before it, each in buffers up to twice its rows."
    " Neither counts the rows: the bound is the same at every row count.",
    "The writes and the sort have no column of their own: they sort within 256 MiB (the writes' default"
    " `memory_limit`), which docs/memory.md holds within 1.25 x the limit + 64 MiB (384 MiB), beside the"
    " input's reader (pyarrow's, here, reading row groups of up to 1,048,576 rows).",
]


# -- the steps, each run in its own process ------------------------------------------------


def versions(folder: str) -> list[str]:
    plain = os.path.join(folder, "plain")
    return sorted((os.path.join(plain, f) for f in os.listdir(plain)), key=lambda p: int(os.path.basename(p)[:-8]))


def version_batches(path: str, first: bool):
    """A version's rows as its commit writes them, read a batch at a time: 'null' in
    `name` after the base is a null."""
    import pyarrow.parquet as pq

    from merge_core import contest

    for batch in pq.ParquetFile(path).iter_batches(batch_size=INPUT_BATCH):
        yield batch if first else contest.null_strings_as_null(batch, ["name"])


def table_root(folder: str, step: str) -> str:
    return os.path.join(folder, "tables", step)


def write_table(folder: str, step: str) -> dict:
    import merge_core as mc
    from merge_core import contest

    options = {"write-only": "true"} if step == "write-only" else None
    root = table_root(folder, step)
    table = mc.Table.create(
        root, contest.SCHEMA, key="uuid", buckets=BUCKETS, merge=contest.CONTEST_MERGE, options=options
    )
    paths = versions(folder)
    return measured(lambda: sum(table.write(version_batches(p, i == 0))["rows"] for i, p in enumerate(paths)))


def bucket_runs(table) -> int:
    """The most sorted runs a bucket of `table` merges on a read."""
    return max(len(section.runs) for split in table.plan() for section in split.sections)


def row_bytes(table) -> float:
    """The decoded bytes of a row of the read's columns (the data file's, but the `_KEY_`
    copies), on the first row group of the table's first data file."""
    import pyarrow.parquet as pq

    from ._upsert import data_files

    file = pq.ParquetFile(data_files(table)[0])
    columns = [name for name in file.schema_arrow.names if not name.startswith("_KEY_")]
    group = file.read_row_group(0, columns=columns)
    return group.nbytes / group.num_rows


def read_table(folder: str) -> dict:
    import merge_core as mc

    table = mc.Table.open(table_root(folder, "write-only"))
    runs, width = bucket_runs(table), row_bytes(table)
    threads = os.cpu_count() or 1

    def read() -> int:
        return sum(batch.num_rows for batch in table.read())

    return {**measured(read), "bound": read_bound(runs, width, threads), "runs": runs, "row_bytes": width}


def decode_floor(folder: str) -> dict:
    import merge_core as mc

    from ._upsert import decode_only, planned_files

    table = mc.Table.open(table_root(folder, "write-only"))
    stored = sum(f.rows for f in planned_files(table))

    def decode() -> int:
        decode_only(table, stored)
        return stored

    return measured(decode)


def compact_table(folder: str) -> dict:
    import merge_core as mc

    table = mc.Table.open(table_root(folder, "write-only"))
    runs, width = bucket_runs(table), row_bytes(table)
    threads = os.cpu_count() or 1
    figures = measured(lambda: table.compact(full=True)["files_merged"])
    figures["files_merged"] = figures.pop("rows_out")
    figures["rows_out"] = sum(f["rows"] for f in table.files())
    return {**figures, "bound": compact_bound(runs, width, threads), "runs": runs, "row_bytes": width}


def sort_versions(folder: str) -> dict:
    import merge_core as mc

    spill = os.path.join(folder, "spill")
    os.makedirs(spill, exist_ok=True)
    paths = versions(folder)

    def sort() -> int:
        batches = itertools.chain.from_iterable(version_batches(p, True) for p in paths)
        rows, last = 0, None
        for batch in mc.sort(batches, key="uuid", memory_limit=SORT_LIMIT, spill_dir=spill):
            keys = batch.column("uuid")
            if last is not None and keys[0].as_py() < last:
                raise RuntimeError("mc.sort's output is out of order")
            rows, last = rows + batch.num_rows, keys[-1].as_py()
        return rows

    return measured(sort)


def spark_upsert(folder: str, master: str) -> dict:
    """`upsert_files` timed alone, once its Spark session is up; CPU seconds are the whole
    process tree's (the JVM's and its Python workers'); memory is not measured (the JVM's)."""
    import merge_core.spark as mcs
    from merge_core import contest

    from ._spark import SETTINGS

    spark = mcs.local_session(master, "merge-core-scaling", log=os.path.join(folder, "spark.log"), **SETTINGS)
    try:
        warm_up(spark, folder)
        out = os.path.join(folder, "upserted")
        cpu, start = tree_cpu(), time.perf_counter()
        counts = mcs.upsert_files(spark, versions(folder), out, "uuid", **contest.CONTEST)
        seconds, after = time.perf_counter() - start, tree_cpu()
    finally:
        spark.stop()
    shutil.rmtree(out, ignore_errors=True)
    cpu_seconds = cpu_between(cpu, after)
    return {"seconds": seconds, "cpu_seconds": cpu_seconds, "peak": None, "rows_out": counts["rows_out"]}


def warm_up(spark, folder: str) -> None:
    """One untimed `upsert_files` of a thousand rows first: a new session's first jobs pay
    for starting the JVM's code and the Python workers (15-20 s on 2 shared cores), the same
    at any size, which would hide how the job's own time grows."""
    import pyarrow.parquet as pq

    import merge_core.spark as mcs
    from merge_core import contest

    small = os.path.join(folder, "warm-up")
    os.makedirs(small, exist_ok=True)
    inputs = []
    for i, path in enumerate(versions(folder)[:2]):
        inputs.append(os.path.join(small, f"{i}.parquet"))
        pq.write_table(pq.ParquetFile(path).read_row_group(0).slice(0, 1000), inputs[-1])
    mcs.upsert_files(spark, inputs, os.path.join(small, "out"), "uuid", **contest.CONTEST)
    shutil.rmtree(small, ignore_errors=True)


def measured(work) -> dict:
    """Runs `work` once in this process: its seconds, CPU seconds (every thread), resident
    peak above where it started, and what it returned (`rows_out`)."""
    from ._measure import cpu_seconds

    reset_peak_rss()
    base = rss()
    cpu, start = cpu_seconds(), time.perf_counter()
    result = work()
    seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    return {"seconds": seconds, "cpu_seconds": cpu, "peak": peak_rss() - base, "rows_out": result}


def run_step(step: str, folder: str, base_rows: int, master: str) -> dict:
    if step == "generate":
        from merge_core import contest

        return measured(lambda: contest.total_rows(contest.generate(os.path.join(folder, "plain"), base_rows, 10, 7)))
    if step in ("write", "write-only"):
        return write_table(folder, step)
    if step == "read":
        return read_table(folder)
    if step == "decode floor":
        return decode_floor(folder)
    if step == "compact":
        return compact_table(folder)
    if step == "sort":
        return sort_versions(folder)
    if step == "upsert_files":
        return spark_upsert(folder, master)
    raise ValueError(f"unknown step {step!r}")


def main() -> None:
    step, folder, base_rows, master = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    print(json.dumps(run_step(step, folder, base_rows, master)))


# -- the suite, in the bench's process ----------------------------------------------------


def in_process(step: str, folder: str, base_rows: int, master: str) -> dict:
    """One step in a fresh process; its figures, or {"note": why it failed}."""
    command = [sys.executable, "-m", "merge_core.bench._scaling", step, folder, str(base_rows), master]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or ["no message"]
        error = next((line for line in reversed(lines) if "Error" in line), lines[-1])
        return {"note": f"failed: {error.strip()[:160]}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def point(step: str, rows: int, figures: dict) -> Point:
    if "note" in figures:
        return Point(step, rows, note=figures["note"])
    extra = {k: figures[k] for k in ("runs", "row_bytes", "files_merged") if k in figures}
    return Point(
        step,
        rows,
        figures["seconds"],
        figures["cpu_seconds"],
        figures["peak"],
        figures.get("bound"),
        figures["rows_out"],
        extra=extra,
    )


def one_count(folder: str, base_rows: int, master: str, spark: bool) -> tuple[list[Point], dict]:
    """Every step at one row count (base rows + 10 increments of a fifth of it); the data
    folder is removed at the end."""
    os.makedirs(folder, exist_ok=True)
    made = in_process("generate", folder, base_rows, master)
    if "note" in made:
        raise RuntimeError(f"generating the contest data ({base_rows:,} base rows) {made['note']}")
    rows = made["rows_out"]
    progress(f"  {rows:,} rows: generated in {made['seconds']:.1f} s, peak +{made['peak'] // MiB} MiB")
    points = []
    for step in STEPS:
        if step == "upsert_files" and not spark:
            points.append(Point(step, rows, note="skipped: pyspark is not installed"))
            continue
        points.append(point(step, rows, in_process(step, folder, base_rows, master)))
        progress(f"  {rows:,} rows: {STEPS[step]}: {describe(points[-1])}")
        if step == "write":
            shutil.rmtree(table_root(folder, step), ignore_errors=True)
    shutil.rmtree(folder, ignore_errors=True)
    return points, made


def describe(p: Point) -> str:
    if p.seconds is None:
        return p.note
    cpu = "" if p.cpu_seconds is None else f", {p.cpu_seconds:.1f} CPU s"
    peak = "" if p.peak_bytes is None else f", peak +{p.peak_bytes // MiB} MiB"
    bound = "" if p.bound is None else f" (bound {p.bound // MiB} MiB)"
    return f"{p.seconds:.2f} s{cpu}{peak}{bound}"


def run(folder: str, counts: list[int], master: str) -> tuple[list[Point], list[dict]]:
    """Every step at each count of base rows, smallest first; the points and each count's
    generation figures."""
    from ._measure import missing

    spark = missing("pyspark") is None
    points, made = [], []
    for base_rows in counts:
        progress(f"scaling: {3 * base_rows:,} rows ({base_rows:,} base + 10 x {base_rows // 5:,})")
        start = time.perf_counter()
        found, generated = one_count(os.path.join(folder, f"rows-{base_rows}"), base_rows, master, spark)
        points += found
        made.append(generated)
        progress(f"  done in {time.perf_counter() - start:.0f} s")
    return points, made


# -- the report's section ---------------------------------------------------------------

MERGED = {"read", "compact", "upsert_files"}  # steps whose output has one row per key


def millions(rows: int) -> str:
    return f"{rows / 1e6:g}M"


def checked(p: Point, points: list[Point]) -> str:
    """Whether a step gave the rows it must: every input row (the writes, the floor, the
    sort) or, for the merged outputs, as many as the read at the same count."""
    if p.rows_out is None:
        return "n/a"
    if p.step in MERGED:
        read = next((q for q in points if q.step == "read" and q.rows == p.rows and q.rows_out), None)
        return "n/a" if read is None else ("yes" if p.rows_out == read.rows_out else "**NO**")
    return "yes" if p.rows_out == p.rows else "**NO**"


def per_row(value: float | None, rows: int, first: Point | None, of: str) -> str:
    """`value` per row over the same at the smallest count: 1.00x is linear."""
    base = None if first is None else getattr(first, of)
    if value is None or not base:
        return ""
    return f"{(value / rows) / (base / first.rows):.2f}x"


def table_row(p: Point, points: list[Point]) -> str:
    if p.seconds is None:
        return f"| {STEPS[p.step]} | {p.rows:,} | {p.note} |" + " |" * 8
    first = next(q for q in points if q.step == p.step and q.seconds is not None)
    cells = [
        STEPS[p.step],
        f"{p.rows:,}",
        f"{p.seconds:.2f}",
        "n/a" if p.cpu_seconds is None else f"{p.cpu_seconds:.2f}",
        f"{p.rows / p.seconds / 1e6:.2f}",
        per_row(p.seconds, p.rows, first, "seconds"),
        per_row(p.cpu_seconds, p.rows, first, "cpu_seconds"),
        "n/a" if p.peak_bytes is None else str(p.peak_bytes // MiB),
        "" if p.bound is None else str(p.bound // MiB),
        "" if p.rows_out is None else f"{p.rows_out:,}",
        checked(p, points),
    ]
    return "| " + " | ".join(cells) + " |"


def floor_ratios(points: list[Point]) -> str:
    pairs = []
    for read in (p for p in points if p.step == "read" and p.cpu_seconds):
        floor = next((p for p in points if p.step == "decode floor" and p.rows == read.rows and p.cpu_seconds), None)
        if floor is not None:
            pairs.append(f"{millions(read.rows)} {read.cpu_seconds / floor.cpu_seconds:.2f}x")
    return "`Table.read`'s CPU seconds over the decode floor's: " + (", ".join(pairs) or "not measured") + "."


def bounds_line(points: list[Point]) -> str:
    """R and row as measured at each size (the read's; the compaction's are the same table's)."""
    figures = [
        f"{millions(p.rows)}: R = {p.extra['runs']}, row = {p.extra['row_bytes']:.0f} B"
        for p in points
        if p.step == "read" and "runs" in p.extra
    ]
    return "Measured: " + ("; ".join(figures) or "nothing") + "."


def over_bound(points: list[Point]) -> str:
    """The peaks above their bound, by how much; the tests of the bounds
    (tests/test_sort_memory.py, one thread) allow 40 MiB of the allocators' slack beside it."""
    over = [
        f"{STEPS[p.step]} at {millions(p.rows)} by {(p.peak_bytes - p.bound) / MiB:.0f} MiB"
        for p in points
        if p.bound is not None and p.peak_bytes is not None and p.peak_bytes > p.bound
    ]
    if not over:
        return "Every peak is within its bound."
    return (
        "Above the bound: " + ", ".join(over) + " (tests/test_sort_memory.py holds each bound on one thread with"
        " 40 MiB of the allocators' slack beside it)."
    )


def scaling_text(points: list[Point], made: list[dict], about: list[str], chart: str | None) -> list[str]:
    counts = sorted({p.rows for p in points})
    smallest = millions(counts[0]) if counts else "the smallest"
    generated = ", ".join(
        f"{millions(g['rows_out'])} in {g['seconds']:.0f} s (peak +{g['peak'] // MiB} MiB)" for g in made
    )
    lines = [
        f"## Scaling: merge-core's steps from {smallest} to {millions(counts[-1]) if counts else '?'} rows",
        "",
        *(f"- {line}" for line in about),
        f"- The contest data (`merge-core gen`, seed 7) at {len(counts)} sizes: base rows + 10 increments of a"
        " fifth of them, 32-character hex keys. No peers: merge-core's own steps, each run once in its own"
        " process, one size after another (each size's data made, used and removed before the next).",
        "- Steps: `Table.write` of the 11 versions, read a batch at a time from their files, as 11 commits into a"
        f" new {BUCKETS}-bucket table (compacting as Paimon's writer does, and `write-only`, keeping 11 runs a"
        " bucket); `Table.read` of the `write-only` table (default batch size and threads), each batch counted"
        " and dropped; the decode floor (its data files decoded by pyarrow on all cores, nothing merged); its"
        f" full compaction; `mc.sort` of all the rows by key at a {SORT_LIMIT // MiB} MiB limit (spilling, fed"
        " by pyarrow's reader of the version files); `merge_core.spark.upsert_files` of the version files on a"
        " local Spark (`local[2]`), timed once its session is up, CPU seconds its process tree's (JVM and"
        " Python workers), memory not measured (the JVM's).",
        f"- `per row vs {smallest}`: seconds (or CPU seconds) per row over the same step's at {smallest}: 1.00x"
        " is linear, above it slower per row. Peak memory: the step's process's resident high-water mark above"
        " its level when the step started. `rows out` is checked: every input row for the writes, the floor and"
        " the sort; as many rows as `Table.read` gave (one per key) for the compaction and `upsert_files`.",
        "",
        "| step | rows | seconds | CPU seconds | M rows/s | time per row vs "
        f"{smallest} | CPU per row vs {smallest} | peak memory (MiB) | bound (MiB) | rows out | checked |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    ordered = sorted(points, key=lambda p: (list(STEPS).index(p.step), p.rows))
    lines += [table_row(p, points) for p in ordered]
    if chart:
        lines += ["", f"![Scaling: time and peak memory against rows]({chart})"]
    lines += [
        "",
        f"- {floor_ratios(points)}",
        '- Memory bounds (docs/memory.md, "Reading a table" and "Compacting a table"), the `bound` column: '
        + " ".join(FORMULAS),
        f"- {bounds_line(points)} {over_bound(points)}",
        f"- Generating the data (not a step, for the run's length): {generated or 'none'}.",
        "",
    ]
    return lines


if __name__ == "__main__":
    main()
