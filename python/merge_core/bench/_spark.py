"""The contest upsert as a Spark job: merge-core's two pipelines against Spark
SQL's union + groupBy, on one session and the same files, each writing Parquet; and the
`merge_core` data source's read and write against Spark's own on the same data."""

from __future__ import annotations

import os
import time

import merge_core as mc
from merge_core import contest

from ._inputs import Inputs
from ._measure import Run, Section, cpu_between, progress, tree_cpu
from ._table import BUCKETS
from ._upsert import write_sorted_runs, write_table

#: Spark settings of the benchmark session, reported with its figures.
SETTINGS = {"spark.sql.shuffle.partitions": "2", "spark.driver.memory": "4g"}


def session(master: str, log: str):
    """The benchmark's Spark session; the JVM's output goes to ``log``."""
    import merge_core.spark as mcs

    return mcs.local_session(master, "merge-core-bench", log=log, **SETTINGS)


def same_output(spark, a: str, b: str) -> bool:
    left, right = spark.read.parquet(a), spark.read.parquet(b)
    return left.exceptAll(right).isEmpty() and right.exceptAll(left).isEmpty()


def compare_pipelines(spark, paths: list[str], folder: str, repeat: int) -> list[Run]:
    """merge-core's two upsert pipelines and Spark SQL's on `paths`, alternating, best of
    `repeat`; each output (written under `folder`) compared with the first's."""
    import merge_core.spark as mcs

    total = contest.total_rows(paths)
    versions = [spark.read.parquet(p) for p in paths]
    pipelines = {
        "merge-core upsert_files (no shuffle)": lambda out: mcs.upsert_files(
            spark, paths, out, "uuid", **contest.CONTEST
        ),
        "merge-core upsert (shuffle, mapInArrow)": lambda out: mcs.upsert(
            versions, "uuid", **contest.CONTEST
        ).write.parquet(out),
        "Spark SQL (union + groupBy)": lambda out: contest.spark_sql_upsert(versions).write.parquet(out),
    }
    best = alternating(pipelines, repeat, lambda i, attempt: os.path.join(folder, f"out-{i}-{attempt}"))
    reference = os.path.join(folder, "out-0-0")
    return [
        Run(
            name,
            best[name][0],
            total,
            same=same_output(spark, reference, os.path.join(folder, f"out-{i}-0")),
            cpu_seconds=best[name][1],
        )
        for i, name in enumerate(pipelines)
    ]


def alternating(jobs: dict, repeat: int, argument) -> dict[str, tuple[float, float | None]]:
    """Each job's best (seconds, CPU seconds of this process tree: the JVM's and its Python
    workers'), the jobs run in turn `repeat` times so that a noisy moment hurts all;
    `argument(i, attempt)` is what the job of index `i` is called with."""
    best: dict[str, tuple[float, float | None]] = {name: (float("inf"), None) for name in jobs}
    for attempt in range(repeat):
        for i, (name, job) in enumerate(jobs.items()):
            cpu, start = tree_cpu(), time.perf_counter()
            job(argument(i, attempt))
            seconds, after = time.perf_counter() - start, tree_cpu()
            progress(f"  {name}: {seconds:.2f} s")
            if seconds < best[name][0]:
                best[name] = (seconds, cpu_between(cpu, after))
    return best


def exchange_floor(spark, paths: list[str], repeat: int) -> list[str]:
    """The report's lines on how far the shuffle path can go: Spark SQL, `upsert`, the
    exchange alone (the versions scanned, tagged and repartitioned by key, nothing done
    after it) and the exchange handed through `mapInArrow` unchanged (the JVM's Arrow
    round trip, no fold), each run to Spark's noop sink so that no writer's cost hides theirs."""
    import merge_core.spark as mcs

    versions = [spark.read.parquet(p) for p in paths]
    columns = list(versions[0].columns)

    def exchanged():
        return mcs.tagged_union(versions, columns, contest.CONTEST["null_strings"]).repartition(
            int(spark.conf.get("spark.sql.shuffle.partitions")), "uuid"
        )

    jobs = {
        "Spark SQL": lambda: contest.spark_sql_upsert(versions),
        "merge-core upsert": lambda: mcs.upsert(versions, "uuid", **contest.CONTEST),
        "the exchange alone": exchanged,
        "the exchange through mapInArrow": lambda: exchanged().mapInArrow(_unchanged, exchanged().schema),
    }
    best = alternating(
        {
            name: (lambda sink, make=make: make().write.format("noop").mode("overwrite").save())
            for name, make in jobs.items()
        },
        repeat,
        lambda i, attempt: None,
    )
    sql, upsert, floor, round_trip = (best[name] for name in jobs)

    def cpu(figures: tuple[float, float | None]) -> str:
        return "" if figures[1] is None else f" ({figures[1]:.2f} CPU s)"

    return [
        "",
        "The shuffle path's floor, each job run to Spark's noop sink (no output written), best of"
        f" {repeat}: Spark SQL {sql[0]:.2f} s{cpu(sql)}, merge-core `upsert` {upsert[0]:.2f} s{cpu(upsert)},"
        f" and Spark's scan and exchange of the versions alone, nothing done after it, {floor[0]:.2f} s{cpu(floor)};"
        f" the same exchange handed through `mapInArrow` to Python and back unchanged, {round_trip[0]:.2f} s"
        f"{cpu(round_trip)}. `upsert` is {sql[0] / upsert[0]:.2f}x faster than Spark SQL; a pipeline after Spark's"
        f" exchange could be at most {sql[0] / floor[0]:.2f}x faster even if handing the rows to Python and folding"
        f" them were free. The round trip alone, without a fold, is {sql[0] / round_trip[0]:.2f}x faster than Spark"
        " SQL: about what `upsert` can reach, as it hands every row through `mapInArrow` (it returns fewer rows"
        " than it takes, one per key, so it may be a little faster than the round trip).",
    ]


def _unchanged(batches):
    """A `mapInArrow` function that hands its batches back as they came."""
    yield from batches


def bytes_read(spark, paths: list[str], folder: str) -> list[str]:
    """The report's lines on what `upsert_files` reads at 8 and 64 buckets: the versions
    sorted by key in row groups of 8,192 rows (split by key range) and as generated
    (bucketed by a first stage)."""
    import merge_core.spark as mcs

    sorted_runs = write_sorted_runs(os.path.join(folder, "sorted"), paths, row_group_size=8192)
    lines = []
    for label, inputs in (("sorted by key", sorted_runs), ("unsorted", paths)):
        figures = []
        for buckets in (8, 64):
            out = os.path.join(folder, f"bytes-{label.split()[0]}-{buckets}")
            counts = mcs.upsert_files(spark, inputs, out, "uuid", buckets=buckets, **contest.CONTEST)
            read, exchanged = (counts[k] / counts["input_bytes"] for k in ("bytes_read", "exchanged_bytes"))
            figures.append(f"{buckets} buckets {read:.2f} (exchange files {exchanged:.2f})")
        lines.append(f"- inputs {label}: " + ", ".join(figures))
    return [
        "upsert_files bytes read per input byte (the inputs' column chunks read by all tasks over their size; in"
        " brackets, the exchange files the first stage wrote, per input byte):",
        "",
        *lines,
    ]


def data_source(spark, paths: list[str], folder: str, repeat: int) -> list[str]:
    """The report's lines on the `merge_core` data source: a merged read of the versions'
    table (merge-core's 11 commits into 8 buckets) against Spark SQL's upsert of the same
    versions as plain Parquet, and the versions appended through the source against Spark
    writing them as Parquet bucketed and sorted by key, as a table's files are. Both pairs
    write their output (the reads as Parquet); the reads' outputs are compared."""
    import merge_core.spark as mcs

    mcs.register(spark)
    table = write_table(os.path.join(folder, "source-table"), paths)
    versions = [spark.read.parquet(p) for p in paths]

    def source_write(out: str) -> None:
        mc.Table.create(out, contest.SCHEMA, key="uuid", buckets=BUCKETS, merge=contest.CONTEST_MERGE)
        for version in versions:
            version.write.format("merge_core").mode("append").save(out)

    def parquet_write(out: str) -> None:
        for version in versions:
            version.repartition(BUCKETS, "uuid").sortWithinPartitions("uuid").write.mode("append").parquet(out)

    jobs = {
        "source read": lambda out: spark.read.format("merge_core").load(str(table.path)).write.parquet(out),
        "Spark SQL": lambda out: contest.spark_sql_upsert(versions).write.parquet(out),
        "source write": source_write,
        "Parquet write": parquet_write,
    }
    best = alternating(jobs, repeat, lambda i, attempt: os.path.join(folder, f"source-{i}-{attempt}"))
    same = same_output(spark, os.path.join(folder, "source-0-0"), os.path.join(folder, "source-1-0"))
    (read, _), (sql, _), (write, _), (parquet, _) = (best[name] for name in jobs)
    return [
        "",
        f'The `merge_core` data source, best of {repeat}: `spark.read.format("merge_core")` of the versions\''
        f" table ({len(paths)} commits into {BUCKETS} buckets by merge-core) written as Parquet, {read:.2f} s,"
        f" against Spark SQL's union + groupBy of the versions as Parquet files, {sql:.2f} s: {sql / read:.2f}x"
        f' (same rows: {same}). The versions appended through `df.write.format("merge_core")` into a new'
        f" {BUCKETS}-bucket table, one commit each, {write:.2f} s, against Spark writing them as Parquet"
        f" repartitioned into {BUCKETS} by key and sorted within each, {parquet:.2f} s: {parquet / write:.2f}x.",
    ]


def run(folder: str, inputs: Inputs, repeat: int, spark) -> Section:
    paths = inputs.contest_versions()
    runs = compare_pipelines(spark, paths, folder, repeat)
    total = runs[0].rows
    conf = spark.sparkContext.getConf()
    settings = {k: conf.get(k) for k in [*SETTINGS, "spark.sql.execution.arrow.maxRecordsPerBatch"]}
    return Section(
        "spark",
        "Contest upsert as a Spark job",
        [
            f"The contest versions ({total:,} rows in 11 Parquet files) upserted on Spark {spark.version},"
            f" master `{spark.sparkContext.master}`, and written as Parquet; outputs compared with `exceptAll`.",
            "Settings: " + ", ".join(f"`{k}={v}`" for k, v in settings.items()) + ".",
            "`upsert_files`: one Spark task per key bucket (one bucket per core) folds in Rust and writes its part;"
            " the inputs, unsorted here, are read once by a first stage that writes each row into its bucket's"
            " exchange file; `upsert`: Spark shuffles the rows by key and `mapInArrow` hands each"
            " task's batches to Rust. Memory is the JVM's and the Python workers', not measured here;"
            " CPU seconds are theirs and the driver's (every process of the run's process tree).",
        ],
        runs,
        after=[
            *bytes_read(spark, paths, folder),
            *exchange_floor(spark, paths, repeat),
            *data_source(spark, paths, folder, repeat),
        ],
    )
