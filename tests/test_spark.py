"""merge_core.spark on a local Spark (2 cores): the upsert against DuckDB SQL over the same
files, Spark SQL's plan, empty partitions, column order, bad input, sort within partitions."""

from __future__ import annotations

import os
import subprocess
import sys

import merge_core as mc
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pyspark = pytest.importorskip("pyspark")
import merge_core.spark as mcs  # noqa: E402
from merge_core import contest  # noqa: E402


@pytest.fixture(scope="session")
def contest_files(tmp_path_factory):
    return contest.generate(str(tmp_path_factory.mktemp("contest")), rows=3000, increments=10, seed=5)


def sorted_rows(table: pa.Table, key: str = "uuid") -> list[dict]:
    return table.sort_by(key).to_pylist()


def test_contest_upsert_equals_duckdb(spark, contest_files):
    from test_contest_semantics import duckdb_upsert

    versions = [spark.read.parquet(p) for p in contest_files]
    got = mcs.upsert(versions, key="uuid", num_partitions=3, **contest.CONTEST).toArrow()
    want = duckdb_upsert([pq.read_table(p) for p in contest_files])
    assert got.column_names == contest.SCHEMA.names
    assert sorted_rows(got) == want


def test_spark_sql_baseline_agrees(spark, contest_files):
    versions = [spark.read.parquet(p) for p in contest_files]
    mine = mcs.upsert(versions, key="uuid", **contest.CONTEST).toArrow()
    theirs = contest.spark_sql_upsert(versions).toArrow()
    assert sorted_rows(mine) == sorted_rows(theirs.cast(mine.schema))


def test_deduplicate_with_empty_partitions_and_column_order(spark):
    v0 = spark.createDataFrame([(1, "a", 10), (2, "b", 20)], "k long, s string, n long")
    v1 = spark.createDataFrame([(30, "c", 3), (25, "B", 2)], "n long, s string, k long")  # other column order
    got = mcs.upsert([v0, v1], key="k", num_partitions=8).toArrow()  # most of 8 partitions are empty
    assert sorted_rows(got, "k") == [
        {"k": 1, "s": "a", "n": 10},
        {"k": 2, "s": "B", "n": 25},
        {"k": 3, "s": "c", "n": 30},
    ]


def test_a_key_in_one_version_only_and_a_single_version(spark):
    v0 = spark.createDataFrame([(1, 5)], "k long, n long")
    got = mcs.upsert([v0], key="k", merge=mc.Aggregate({"n": "sum"})).toArrow()
    assert got.to_pylist() == [{"k": 1, "n": 5}]


def test_bad_inputs(spark):
    v0 = spark.createDataFrame([(1, 5)], "k long, n long")
    with pytest.raises(mc.InvalidInputError, match="at least one version"):
        mcs.upsert([], key="k")
    with pytest.raises(mc.InvalidInputError, match="unknown column 'nope'"):
        mcs.upsert([v0], key="nope")
    with pytest.raises(mc.InvalidInputError, match="version 1 has columns"):
        mcs.upsert([v0, spark.createDataFrame([(1,)], "k long")], key="k")


def test_sort_within_partitions(spark):
    df = spark.createDataFrame([(i * 7919 % 1000, i) for i in range(1000)], "k long, i long").repartition(3)
    sorted_df = mcs.sort_within_partitions(df, key="k", memory_limit="64KiB")
    partitions = sorted_df.rdd.glom().map(lambda rows: [r.k for r in rows]).collect()
    assert len(partitions) == 3
    assert all(p == sorted(p) for p in partitions)
    assert sorted(k for p in partitions for k in p) == sorted(i * 7919 % 1000 for i in range(1000))


def test_upsert_files_equals_duckdb_and_leaves_only_parts(spark, contest_files, tmp_path):
    from test_contest_semantics import duckdb_upsert

    out = tmp_path / "out"
    counts = mcs.upsert_files(spark, contest_files, str(out), key="uuid", buckets=3, **contest.CONTEST)
    assert sorted(os.listdir(out)) == ["part-00000.parquet", "part-00001.parquet", "part-00002.parquet"]
    got = pq.read_table(out)
    want = duckdb_upsert([pq.read_table(p) for p in contest_files])
    assert got.column_names == contest.SCHEMA.names
    assert sorted_rows(got) == want
    rows_in = sum(pq.ParquetFile(p).metadata.num_rows for p in contest_files)
    assert {k: counts[k] for k in ("rows_in", "rows_out", "buckets")} == {
        "rows_in": rows_in,
        "rows_out": len(want),
        "buckets": 3,
    }
    assert counts["bytes_read"] == counts["input_bytes"] > 0  # unsorted: bucketed by a first stage, read once
    # Each key is written by exactly one bucket's task.
    parts = [set(pq.read_table(out / name).column("uuid").to_pylist()) for name in sorted(os.listdir(out))]
    assert sum(len(p) for p in parts) == len(set().union(*parts))


def test_upsert_files_matches_the_shuffle_pipeline(spark, tmp_path):
    """Composite key, other column order, more buckets than keys (empty parts), deletes."""
    pq.write_table(pa.table({"a": [1, 1, 2], "b": ["x", "y", "x"], "n": [1, 2, 3]}), tmp_path / "0.parquet")
    pq.write_table(pa.table({"n": [10, 20], "b": ["y", "z"], "a": [1, 2]}), tmp_path / "1.parquet")
    files = [str(tmp_path / "0.parquet"), str(tmp_path / "1.parquet")]
    merge = mc.Aggregate({"n": "sum"})
    mcs.upsert_files(spark, files, str(tmp_path / "out"), key=["a", "b"], merge=merge, buckets=7)
    got = pq.read_table(tmp_path / "out")
    assert got.column_names == ["a", "b", "n"] and len(os.listdir(tmp_path / "out")) == 7
    shuffled = mcs.upsert([spark.read.parquet(f) for f in files], key=["a", "b"], merge=merge).toArrow()
    key = [("a", "ascending"), ("b", "ascending")]
    assert got.sort_by(key).to_pylist() == shuffled.sort_by(key).to_pylist()
    assert got.sort_by(key).to_pylist() == [
        {"a": 1, "b": "x", "n": 1},
        {"a": 1, "b": "y", "n": 12},
        {"a": 2, "b": "x", "n": 3},
        {"a": 2, "b": "z", "n": 20},
    ]


@pytest.mark.parametrize("shuffled", [False, True], ids=["sorted", "unsorted"])
def test_upsert_files_reads_each_input_byte_once(spark, tmp_path, shuffled):
    """Sorted inputs are split by key range (most row groups read by the task of their
    range), unsorted ones bucketed by a first stage: at 8 and 64 buckets, the tasks read
    what a full read of the inputs reads, at most 1.1 times (here exactly once)."""
    from test_upsert_files_plan import newest, sorted_versions, write_versions

    rng = np.random.default_rng(6)
    versions = [t.take(rng.permutation(t.num_rows)) if shuffled else t for t in sorted_versions()]
    paths = write_versions(tmp_path, versions)
    for buckets in (8, 64):
        out = tmp_path / f"out-{buckets}"
        counts = mcs.upsert_files(spark, paths, str(out), key="s", buckets=buckets)
        assert pq.read_table(out).sort_by("k").equals(newest(versions))
        assert counts["rows_in"] == sum(t.num_rows for t in versions) and len(os.listdir(out)) == buckets
        assert counts["bytes_read"] / counts["input_bytes"] <= 1.1, counts
        assert (counts["exchanged_bytes"] < counts["input_bytes"]) != shuffled, counts


def test_upsert_files_bad_inputs(spark, tmp_path):
    pq.write_table(pa.table({"k": [1], "n": [5]}), tmp_path / "0.parquet")
    pq.write_table(pa.table({"k": [1], "n": ["5"]}), tmp_path / "typed.parquet")
    good = str(tmp_path / "0.parquet")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    cases = [
        (dict(inputs=[]), "at least one version"),
        (dict(inputs=[str(tmp_path / "missing.parquet")]), "no such file"),
        (dict(key="nope"), "unknown column 'nope'"),
        (dict(inputs=[good, str(tmp_path / "typed.parquet")]), "column 'n' is string"),
        (dict(output=str(tmp_path / "full")), "not an empty folder"),
        (dict(buckets=-1), "buckets must be at least 1"),
    ]
    for change, message in cases:
        args = {"inputs": [good], "output": str(tmp_path / "out"), "key": "k", **change}
        with pytest.raises(mc.InvalidInputError, match=message):
            mcs.upsert_files(spark, **args)
    assert not (tmp_path / "out").exists()


def test_upsert_files_failure_leaves_no_output(spark, tmp_path):
    big = 2**62
    pq.write_table(pa.table({"k": [1, 2], "n": [big, 1]}), tmp_path / "0.parquet")
    pq.write_table(pa.table({"k": [1, 2], "n": [big, 1]}), tmp_path / "1.parquet")  # k=1 overflows int64
    files = [str(tmp_path / "0.parquet"), str(tmp_path / "1.parquet")]
    with pytest.raises(Exception, match="overflow"):
        mcs.upsert_files(spark, files, str(tmp_path / "out"), key="k", merge=mc.Aggregate({"n": "sum"}), buckets=2)
    assert os.listdir(tmp_path / "out") == []


def test_a_local_session_keeps_the_jvms_output_off_stderr(tmp_path):
    """`mcs.local_session()` without `log=`: the JVM's startup lines go to the default
    log file, not to the caller's stderr (they were five lines of it)."""
    code = "import merge_core.spark as mcs; s = mcs.local_session('local[1]'); print(s.range(3).count()); s.stop()"
    env = {**os.environ, "MERGE_CORE_LOG_DIR": str(tmp_path)}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "3" and result.stderr == "", result.stderr
    (log,) = tmp_path.glob("spark-*.log")
    assert log.stat().st_size > 0
