"""The contest upsert as a Spark job (issue 5): merge-core's two pipelines against Spark
SQL's union + groupBy, on one session and the same files, each writing Parquet."""

from __future__ import annotations

import os
import time

from merge_core import contest

from ._measure import Run, Section, progress
from ._upsert import contest_versions

#: Spark settings of the benchmark session, reported with its figures.
SETTINGS = {"spark.sql.shuffle.partitions": "2", "spark.driver.memory": "4g"}


def session(master: str):
    import merge_core.spark as mcs

    return mcs.local_session(master, "merge-core-bench", **SETTINGS)


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
        "merge-core upsert_files (no shuffle)": lambda out: mcs.upsert_files(spark, paths, out, "uuid", **mcs.CONTEST),
        "merge-core upsert (shuffle, mapInArrow)": lambda out: mcs.upsert(
            versions, "uuid", **mcs.CONTEST
        ).write.parquet(out),
        "Spark SQL (union + groupBy)": lambda out: mcs.contest_upsert_spark_sql(versions).write.parquet(out),
    }
    best = {name: float("inf") for name in pipelines}
    for attempt in range(repeat):  # alternating, so a noisy moment hurts both
        for i, (name, job) in enumerate(pipelines.items()):
            start = time.perf_counter()
            job(os.path.join(folder, f"out-{i}-{attempt}"))
            best[name] = min(best[name], time.perf_counter() - start)
            progress(f"  {name}: {time.perf_counter() - start:.2f} s")
    reference = os.path.join(folder, "out-0-0")
    return [
        Run(name, best[name], total, same=same_output(spark, reference, os.path.join(folder, f"out-{i}-0")))
        for i, name in enumerate(pipelines)
    ]


def run(folder: str, base_rows: int, repeat: int, spark) -> Section:
    paths = contest_versions(os.path.join(folder, "plain"), base_rows)
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
            "`upsert_files`: one Spark task per key bucket (one bucket per core) reads the files itself, keeps its"
            " bucket, folds"
            " in Rust and writes its part; `upsert`: Spark shuffles the rows by key and `mapInArrow` hands each"
            " task's batches to Rust. Memory is the JVM's and the Python workers', not measured here.",
        ],
        runs,
    )
