"""merge_core.spark on a local Spark (2 cores): the upsert against DuckDB SQL over the same
files, Spark SQL's plan, empty partitions, column order, bad input, sort within partitions."""

from __future__ import annotations

import merge_core as mc
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
    got = mcs.upsert(versions, key="uuid", num_partitions=3, **mcs.CONTEST).toArrow()
    want = duckdb_upsert([pq.read_table(p) for p in contest_files])
    assert got.column_names == contest.SCHEMA.names
    assert sorted_rows(got) == want


def test_spark_sql_baseline_agrees(spark, contest_files):
    versions = [spark.read.parquet(p) for p in contest_files]
    mine = mcs.upsert(versions, key="uuid", **mcs.CONTEST).toArrow()
    theirs = mcs.contest_upsert_spark_sql(versions).toArrow()
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
