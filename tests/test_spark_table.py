"""merge_core.spark.write / compact / read of an mc.Table (a Paimon table), and the
seed's DPP query on Spark."""

from __future__ import annotations

import datetime as dt

import merge_core as mc
import merge_core.spark as mcs
import pyarrow as pa
import pytest
from helpers import pypaimon_rust_rows

SCHEMA = pa.schema([("id", pa.int64()), ("sold", pa.date32()), ("amount", pa.int64()), ("note", pa.string())])
DAYS = [dt.date(1999, 12, 29) + dt.timedelta(days=i) for i in range(8)]


def sales(n: int, offset: int, version: int) -> pa.Table:
    return pa.table(
        {
            "id": range(offset, offset + n),
            "sold": [DAYS[i % len(DAYS)] for i in range(offset, offset + n)],
            "amount": [version * 1000 + i for i in range(n)],
            "note": [None if i % 7 == 0 else f"v{version}" for i in range(n)],
        },
        schema=SCHEMA,
    )


@pytest.fixture(scope="module")
def tables(tmp_path_factory, spark):
    """The same commits written locally and through Spark."""
    root = tmp_path_factory.mktemp("spark-table")
    local = mc.Table.create(root / "local", SCHEMA, key="id", partition_by="sold", buckets=3, merge="partial-update")
    remote = mc.Table.create(root / "spark", SCHEMA, key="id", partition_by="sold", buckets=3, merge="partial-update")
    for version, (n, offset) in enumerate([(400, 0), (300, 200), (50, 380)]):
        data = sales(n, offset, version)
        local.write(data)
        result = mcs.write(spark.createDataFrame(data.to_pandas()), remote)
        assert result["snapshot"] == version + 1
    return local, remote


def rows(table: pa.Table) -> list[dict]:
    return table.sort_by("id").to_pylist()


def test_spark_write_and_read_equal_local(spark, tables):
    local, remote = tables
    expected = rows(local.read().read_all())
    assert len(expected) == 500
    assert rows(remote.read().read_all()) == expected
    from_spark = mcs.read(spark, remote).toArrow()
    assert rows(from_spark.cast(local.read().schema)) == expected

    def buckets(table):
        return sorted((f["partition"], f["bucket"], f["rows"]) for f in table.files())

    assert buckets(remote) == buckets(local), "the same files, in the same buckets"


def test_spark_compaction_equals_local(spark, tmp_path, tables):
    local, remote = tables
    import shutil

    shutil.copytree(remote.path, tmp_path / "db.db" / "copy")
    copy = mc.Table.open(tmp_path / "db.db" / "copy")
    result = mcs.compact(spark, copy, full=True)
    assert result["files_merged"] == len(remote.files()) and result["files_written"] == 24
    assert all(f["level"] == 5 for f in copy.files()) and len(copy.files()) == 24, "one file per bucket"
    assert rows(copy.read().read_all()) == rows(local.read().read_all())
    assert mcs.compact(spark, copy, full=True)["files_merged"] == 0
    pytest.importorskip("pypaimon_rust")
    read = sorted(pypaimon_rust_rows(copy.path), key=lambda r: r["id"])
    assert read == rows(local.read().read_all()), "a peer reads Spark's compaction"


def test_spark_read_of_projection_older_snapshot_and_partitions(spark, tables):
    _, remote = tables
    got = mcs.read(spark, remote, columns=["amount", "id"], snapshot=1, partitions={"sold": DAYS[0]}).toArrow()
    assert got.column_names == ["amount", "id"]
    assert sorted(got.column("id").to_pylist()) == [i for i in range(400) if i % 8 == 0]


def test_the_seed_query_prunes_partitions(spark, tables):
    """store_returns ⋈ date_dim WHERE d_year = 2000, with the date dimension as the
    dynamic filter's build side (FLIP-248)."""
    from pyspark.sql import functions as F

    local, remote = tables
    days = [DAYS[0] + dt.timedelta(days=i) for i in range(-5, 12)]
    date_dim = spark.createDataFrame([(d, d.year) for d in days], "d_date date, d_year int").where("d_year = 2000")
    stats: dict[str, int] = {}
    dynamic = mc.DynamicFilter(date_dim, "d_date", partition_column="sold")
    fact = mcs.read(spark, remote, dynamic_filter=dynamic, stats=stats)
    joined = fact.join(date_dim, fact.sold == date_dim.d_date).groupBy("d_year").agg(F.sum("amount").alias("total"))
    total = joined.collect()
    expected = sum(r["amount"] for r in local.read().read_all().to_pylist() if r["sold"].year == 2000)
    assert [(r.d_year, r.total) for r in total] == [(2000, expected)]
    assert stats["partitions_total"] == 8 and stats["partitions_read"] == 5 and stats["partitions_pruned"] == 3
    unfiltered: dict[str, int] = {}
    mcs.read(spark, remote, stats=unfiltered)
    assert unfiltered["files_read"] > stats["files_read"]


def test_spark_dynamic_filter_threshold_and_empty_build_side(spark, tables):
    _, remote = tables
    dim = spark.createDataFrame([(d,) for d in DAYS], "d date")
    assert not mc.DynamicFilter(dim, "d", partition_column="sold", threshold=16).applies
    empty = mc.DynamicFilter(dim.where("d < date'1900-01-01'"), "d", partition_column="sold")
    assert mcs.read(spark, remote, dynamic_filter=empty).count() == 0


def test_spark_writes_compacts_and_reads_a_branch(spark, tmp_path):
    """Spark's tasks reopen the branch, not main: its files are written with the branch's
    options (here its own compression) and hold the branch's rows, main untouched."""
    import json

    import pyarrow.parquet as pq

    pypaimon = pytest.importorskip("pypaimon")
    root = tmp_path / "db.db" / "t"
    main = mc.Table.create(root, SCHEMA, key="id", partition_by="sold", buckets=2, merge="partial-update")
    for version in range(3):
        main.write(sales(100, version * 10, version))
    pypaimon.CatalogFactory.create({"warehouse": str(tmp_path)}).create_tag("db.t", "one", snapshot_id=1)
    pypaimon.CatalogFactory.create({"warehouse": str(tmp_path)}).create_branch("db.t", "b", tag_name="one")
    branch_schema = root / "branch" / "branch-b" / "schema" / "schema-0"
    document = json.loads(branch_schema.read_text())
    document["options"]["file.compression"] = "snappy"  # as an ALTER TABLE of the branch would
    branch_schema.write_text(json.dumps(document))
    branch = mc.Table.open(root, branch="b")
    local = mc.Table.create(
        tmp_path / "local", SCHEMA, key="id", partition_by="sold", buckets=2, merge="partial-update"
    )
    local.write(sales(100, 0, 0))
    for version in (7, 8):
        local.write(sales(60, 70, version))
        assert mcs.write(spark.createDataFrame(sales(60, 70, version).to_pandas()), branch)["snapshot"] == version - 5
    assert mcs.compact(spark, branch, full=True)["snapshot"] == 4
    expected = rows(local.read().read_all())
    assert rows(branch.read().read_all()) == expected
    assert rows(mcs.read(spark, branch).toArrow().cast(local.read().schema)) == expected
    assert main.snapshots() == [1, 2, 3] and len(rows(main.read().read_all())) == 120
    for f in branch.files():
        assert pq.ParquetFile(root / f["path"]).metadata.row_group(0).column(0).compression == "SNAPPY", f["path"]
