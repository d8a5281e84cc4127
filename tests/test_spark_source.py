"""merge-core as a Spark data source (``format("merge_core")``) on a local Spark (2 cores):
reads equal to mc.Table.read and pypaimon's, filters equal to the unfiltered read filtered
afterwards (and pruning partitions), time travel options, writes read back by merge-core,
pypaimon and pypaimon-rust, a failed job leaving nothing, SQL, and bad options."""

from __future__ import annotations

import datetime as dt
import threading
import time
from decimal import Decimal
from pathlib import Path

import merge_core as mc
import pyarrow as pa
import pytest
from helpers import pypaimon_rust_rows

pytest.importorskip("pyspark.sql.datasource")
import merge_core.spark as mcs  # noqa: E402
from test_expire import catalog, identifier  # noqa: E402 (pypaimon's catalog of the table)

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), False),
        pa.field("day", pa.string(), False),
        pa.field("hour", pa.int32(), False),
        ("amount", pa.decimal128(20, 4)),
        ("ts", pa.timestamp("ms")),
        ("at", pa.timestamp("us", tz="UTC")),
        ("note", pa.string()),
        ("blob", pa.binary()),
        ("tags", pa.list_(pa.field("element", pa.int32()))),
        ("point", pa.struct([("x", pa.int32()), ("y", pa.string())])),
    ]
)
DAYS = ["2024-06-01", "2024-06-02", "2024-06-03"]
MERGES = {
    "deduplicate": "deduplicate",
    "partial-update": "partial-update",
    "aggregate": mc.Aggregate({"amount": "sum"}, default="last_non_null_value"),
}


def batch(ids: range, version: int) -> pa.Table:
    """Rows of ``ids`` as written by commit ``version``: some values null, so that
    partial-update keeps older ones."""
    return pa.table(
        {
            "id": list(ids),
            "day": [DAYS[i % 3] for i in ids],
            "hour": [i % 2 for i in ids],
            "amount": [None if (i + version) % 5 == 0 else Decimal(f"{i}.{version:04d}") for i in ids],
            "ts": [dt.datetime(2024, 1, 1) + dt.timedelta(milliseconds=i * 1001 + version) for i in ids],
            "at": [None if i % 4 == 0 else dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc) for i in ids],
            "note": [None if (i + version) % 3 == 0 else f"v{version}-{i}" for i in ids],
            "blob": [bytes([i % 256, version]) for i in ids],
            "tags": [[i, None, version] if i % 2 else [] for i in ids],
            "point": [{"x": i, "y": None if i % 2 else f"p{version}"} for i in ids],
        },
        schema=SCHEMA,
    )


def made(root: Path, merge) -> mc.Table:
    table = mc.Table.create(root, SCHEMA, key="id", partition_by=["day", "hour"], buckets=2, merge=merge)
    table.write(batch(range(0, 60), 1))
    table.write(batch(range(40, 90), 2))
    if merge == "deduplicate":
        table.delete(pa.table({"id": [1, 2, 45], "day": [DAYS[1], DAYS[2], DAYS[0]], "hour": [1, 0, 1]}))
    table.write(batch(range(80, 100), 3))
    return table


@pytest.fixture(scope="module")
def source(spark):
    mcs.register(spark, pushdown=True)
    yield spark
    spark.conf.set(mcs._source.PUSHDOWN_SETTING, "false")
    mcs.register(spark)


@pytest.fixture(scope="module")
def tables(tmp_path_factory, source):
    root = tmp_path_factory.mktemp("spark-source")
    return {name: made(root / "db.db" / name.replace("-", "_"), merge) for name, merge in MERGES.items()}


def by_id(table: pa.Table) -> list[dict]:
    return table.sort_by("id").to_pylist()


def spark_read(spark, table: mc.Table, **options) -> pa.Table:
    reader = spark.read.format("merge_core")
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load(str(table.path)).toArrow()


def in_table_types(got: pa.Table, table: mc.Table) -> pa.Table:
    """Spark's answer in the table's Arrow types (microsecond timestamps back to ms)."""
    return got.cast(pa.schema([table.schema.field(n).remove_metadata() for n in got.column_names]))


@pytest.mark.parametrize("merge", list(MERGES))
def test_read_equals_table_read_and_pypaimon(source, tables, merge):
    table = tables[merge]
    got = spark_read(source, table)
    assert got.column_names == SCHEMA.names
    expected = by_id(table.read().read_all())
    assert len(expected) > 90
    assert by_id(in_table_types(got, table)) == expected
    builder = catalog(table.path).get_table(identifier(table.path)).new_read_builder()
    theirs = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    assert by_id(in_table_types(got, table)) == by_id(theirs.select(SCHEMA.names).cast(table.read().schema))


def test_the_spark_schema_maps_paimon_types_exactly(source, tables):
    df = source.read.format("merge_core").load(str(tables["deduplicate"].path))
    assert df.schema.simpleString() == (
        "struct<id:bigint,day:string,hour:int,amount:decimal(20,4),ts:timestamp_ntz,at:timestamp,note:string,"
        "blob:binary,tags:array<int>,point:struct<x:int,y:string>>"
    )
    assert [f.nullable for f in df.schema] == [False, True, True, *[True] * 7], "partition columns may be null"


FILTERS = {
    "day = '2024-06-02'": lambda r: r["day"] == "2024-06-02",
    "day IN ('2024-06-01', '2024-06-03') AND hour = 1": lambda r: r["day"] != "2024-06-02" and r["hour"] == 1,
    "day > '2024-06-01' AND hour <= 0": lambda r: r["day"] > "2024-06-01" and r["hour"] <= 0,
    "day LIKE '%-03'": lambda r: r["day"].endswith("-03"),
    "day IS NULL": lambda r: False,
    "note = 'v1-10'": lambda r: r["note"] == "v1-10",  # a value: never prunes (a newer version may differ)
    "id BETWEEN 30 AND 50": lambda r: 30 <= r["id"] <= 50,  # keys: files by key range
    "id IN (1, 45, 99, 200) AND hour = 1": lambda r: r["id"] in (1, 45, 99) and r["hour"] == 1,
    "id = 41.5": lambda r: False,
    "id = 41 OR hour = 1": lambda r: r["id"] == 41 or r["hour"] == 1,  # an OR: not pushed
}


def fresh(spark, table: mc.Table):
    """A DataFrame of its own for each filtered query: Spark 4.3 keeps the splits one
    query planned with pushed filters on the DataFrame's source and reuses them for the
    next query of that DataFrame whose filters it does not push
    (``test_spark_reuses_the_splits_of_an_earlier_query``)."""
    return spark.read.format("merge_core").load(str(table.path))


@pytest.mark.xfail(strict=True, reason="Spark 4.3 reuses the splits planned for a pushed filter (docs/spark.md)")
def test_spark_reuses_the_splits_of_an_earlier_query(source, tables):
    table = tables["deduplicate"]
    df = source.read.format("merge_core").load(str(table.path))
    everything = df.count()
    assert df.where("day = '2024-06-02'").count() < everything
    assert df.count() == everything, "the second count reads only the first filter's splits"


@pytest.mark.parametrize("merge", ["deduplicate", "partial-update"])
def test_filters_equal_the_unfiltered_read_filtered_and_prune_partitions(source, tables, merge):
    table = tables[merge]
    df = source.read.format("merge_core").load(str(table.path))
    everything = by_id(df.toArrow())
    splits = df.rdd.getNumPartitions()
    assert splits == 12, "one Spark partition per split: 6 partitions of 2 buckets"
    for condition, oracle in FILTERS.items():
        filtered = fresh(source, table).where(condition)
        assert by_id(filtered.toArrow()) == [r for r in everything if oracle(r)], condition
        pruned = {r["day"] for r in everything} - {r["day"] for r in everything if oracle(r)}
        if condition.startswith("day"):  # each day a filter drops takes its 4 splits away
            assert filtered.rdd.getNumPartitions() <= max(1, splits - 4 * len(pruned)), condition
    assert fresh(source, table).where("note = 'v1-10'").rdd.getNumPartitions() == splits


def test_key_filters_skip_files_and_splits_by_key_range(source, tmp_path):
    """Each day holds its own range of ids, written by two commits of disjoint halves: a
    filter on the key leaves out the files whose key range it excludes, and a bucket
    left with no file is no split."""
    from pyspark.sql.datasource import LessThan

    schema = pa.schema([pa.field("id", pa.int64(), False), pa.field("day", pa.string(), False), ("v", pa.int64())])
    table = mc.Table.create(tmp_path / "db.db" / "k", schema, key="id", partition_by="day", buckets=2)
    for half in (0, 1):
        ids = [day * 100 + half * 50 + i for day in range(3) for i in range(50)]
        table.write(pa.table({"id": ids, "day": [DAYS[i // 100] for i in ids], "v": [i % 7 for i in ids]}, schema))
    df = source.read.format("merge_core").load(str(table.path))
    everything = by_id(df.toArrow())
    assert df.rdd.getNumPartitions() == 6, "3 days of 2 buckets"
    cases = {  # condition: (oracle, splits)
        "id < 30": (lambda r: r["id"] < 30, 2),
        "id = 160": (lambda r: r["id"] == 160, 1),  # and only the bucket 160 hashes to (Paimon's BucketSelector)
        "id IN (5, 260)": (lambda r: r["id"] in (5, 260), 2),
        "id BETWEEN 140 AND 160 AND v > 2": (lambda r: 140 <= r["id"] <= 160 and r["v"] > 2, 2),
        "v = 3": (lambda r: r["v"] == 3, 6),  # a value: no file skipped
        "id > 1000": (lambda r: False, 1),  # Spark's one partition of an empty plan
    }
    for condition, (oracle, splits) in cases.items():
        filtered = fresh(source, table).where(condition)
        assert by_id(filtered.toArrow()) == [r for r in everything if oracle(r)], condition
        assert filtered.rdd.getNumPartitions() == splits, condition
    # The source's own counters, on a reader planned in this process as Spark's driver plans it.
    reader = mcs._source.Source({"path": str(table.path)}).reader(df.schema)
    reader.pushFilters([LessThan(("id",), 30)])
    planned = [p.value for p in reader.partitions()]
    assert reader.stats["files_total"] == 12 and reader.stats["files_skipped_by_key_stats"] == 10
    assert sum(split.files for split in planned) == 2


@pytest.mark.parametrize("setting", ["false", "true"])
def test_by_default_every_filter_is_left_to_spark(source, tables, setting):
    """register() without pushdown takes no filters, whatever the session's setting,
    so that a DataFrame queried twice reads what it should (Spark 4.3's bug above)."""
    table = tables["deduplicate"]
    source.conf.set(mcs._source.PUSHDOWN_SETTING, setting)
    try:
        mcs.register(source)
        df = source.read.format("merge_core").load(str(table.path))
        everything = df.count()
        filtered = df.where("day = '2024-06-02'")
        assert filtered.rdd.getNumPartitions() == 12
        expected = table.read(partitions={"day": "2024-06-02"}).read_all()
        assert by_id(in_table_types(filtered.toArrow(), table)) == by_id(expected)
        assert df.count() == everything
    finally:
        mcs.register(source, pushdown=True)


def test_snapshot_tag_as_of_warehouse_and_a_schema_of_fewer_columns(source, tables):
    table = tables["deduplicate"]
    table.create_tag("first", snapshot=1)
    first = by_id(table.read(snapshot=1).read_all())
    assert by_id(in_table_types(spark_read(source, table, snapshot=1), table)) == first
    assert by_id(in_table_types(spark_read(source, table, tag="first"), table)) == first
    committed = dt.datetime.fromtimestamp(table.snapshot(2).time_millis / 1000)
    as_of = spark_read(source, table, as_of=committed.isoformat())
    assert by_id(in_table_types(as_of, table)) == by_id(table.read(snapshot=2).read_all())
    warehouse = Path(table.path).parent.parent
    named = source.read.format("merge_core").option("warehouse", str(warehouse)).load("db.deduplicate")
    assert named.count() == table.read().read_all().num_rows
    narrow = source.read.format("merge_core").schema("note string, id bigint").load(str(table.path)).toArrow()
    assert narrow.column_names == ["note", "id"]
    assert by_id(narrow) == by_id(table.read(columns=["note", "id"]).read_all())


def test_a_branch_by_option_or_by_name_is_read_and_written(source, tmp_path):
    root = tmp_path / "db.db" / "br"
    table = mc.Table.create(root, pa.schema([pa.field("k", pa.int64(), False), ("v", pa.int64())]), key="k")
    table.write(pa.table({"k": [1, 2], "v": [1, 2]}))
    catalog(root).create_branch(identifier(root), "b")  # main's schema, none of its rows
    df = source.createDataFrame([(2, 20), (3, 30)], "k bigint, v bigint")
    df.write.format("merge_core").option("branch", "b").mode("append").save(str(root))
    by_name = source.read.format("merge_core").option("warehouse", str(tmp_path)).load("db.br$branch_b")
    assert sorted(by_name.collect()) == [(2, 20), (3, 30)]
    assert sorted(source.read.format("merge_core").load(str(root)).collect()) == [(1, 1), (2, 2)], "main unchanged"
    branch = mc.Table.open(root, branch="b")
    assert branch.snapshots() == [1] and table.snapshots() == [1]
    assert sorted(branch.read().read_all().to_pylist(), key=lambda r: r["k"]) == [{"k": 2, "v": 20}, {"k": 3, "v": 30}]


WRITE_SCHEMA_NAMES = ["id", "day", "hour", "amount", "ts", "at", "note"]
WRITE_SCHEMA = "id bigint, day string, hour int, amount decimal(20,4), ts timestamp_ntz, at timestamp, note string"


def written_rows(ids: range, version: int) -> list[tuple]:
    at = dt.datetime(2024, 3, 1, 12, tzinfo=dt.timezone.utc)
    return [
        (i, DAYS[i % 3], i % 2, Decimal(f"{version}.{i:04d}"), dt.datetime(2024, 2, 1, 0, 0, i % 60), at, f"w{version}")
        for i in ids
    ]


def test_append_commits_once_and_peers_read_it(source, tmp_path):
    schema = pa.schema([SCHEMA.field(n) for n in WRITE_SCHEMA_NAMES])
    table = mc.Table.create(tmp_path / "db.db" / "w", schema, key="id", partition_by="day", buckets=3)
    for version, ids in ((1, range(0, 300)), (2, range(200, 400))):
        df = source.createDataFrame(written_rows(ids, version), WRITE_SCHEMA).repartition(3)
        df.write.format("merge_core").mode("append").save(str(table.path))
        assert table.snapshots() == list(range(1, version + 1)), "one commit per job"
    expected = {r[0]: r for r in written_rows(range(0, 300), 1)} | {r[0]: r for r in written_rows(range(200, 400), 2)}
    mine = by_id(table.read().read_all())
    assert [tuple(r.values()) for r in mine] == [expected[i] for i in sorted(expected)]
    assert sorted(pypaimon_rust_rows(table.path), key=lambda r: r["id"]) == mine
    builder = catalog(table.path).get_table(identifier(table.path)).new_read_builder()
    theirs = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    assert by_id(theirs.select(schema.names).cast(table.read().schema)) == mine


def pypaimon_rows(table: mc.Table) -> list[dict]:
    builder = catalog(table.path).get_table(identifier(table.path)).new_read_builder()
    theirs = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    return by_id(theirs.select(table.schema.names).cast(table.read().schema))


def as_arrow(rows: list[tuple], schema: pa.Schema) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(WRITE_SCHEMA_NAMES, r, strict=True)) for r in rows], schema)


# name: (the source's options, Table.write's overwrite and dynamic_overwrite, the ids
# written, which old rows the overwrite replaces)
OVERWRITES = {
    "static: the whole table": ({}, True, False, range(99, 160, 6), lambda r: True),  # rows of one partition
    "static: a partition": (
        {"partition": "day=2024-06-02"},
        {"day": "2024-06-02"},
        False,
        range(100, 160, 6),  # i % 6 == 4: day 2024-06-02, hour 0; hour 1 is replaced too
        lambda r: r["day"] == "2024-06-02",
    ),
    "dynamic: the partitions written": (
        {"partitionOverwriteMode": "dynamic"},
        True,
        True,
        range(99, 160, 6),  # i % 6 == 3: day 2024-06-01, hour 1
        lambda r: (r["day"], r["hour"]) == ("2024-06-01", 1),
    ),
    "dynamic: within a partition": (
        {"partitionOverwriteMode": "DYNAMIC", "partition": "day=2024-06-01"},
        {"day": "2024-06-01"},
        True,
        range(96, 160, 6),  # i % 6 == 0: day 2024-06-01, hour 0; a static spec would drop hour 1 too
        lambda r: (r["day"], r["hour"]) == ("2024-06-01", 0),
    ),
}


@pytest.mark.parametrize("case", list(OVERWRITES))
def test_overwrite_equals_table_overwrite_pypaimon_and_an_oracle(source, tmp_path, case):
    """A Spark overwrite is static unless partitionOverwriteMode says dynamic, as in
    Paimon's Spark connector, although the table's dynamic-partition-overwrite is true
    (its default): each result equals Table.write with the same spec and mode, pypaimon's
    read of it, and the old rows outside what is replaced plus the new ones."""
    options, spec, dynamic, ids, replaced = OVERWRITES[case]
    schema = pa.schema([SCHEMA.field(n) for n in WRITE_SCHEMA_NAMES])
    old, new = written_rows(range(0, 120), 1), written_rows(ids, 2)
    made = []
    for who in ("spark", "mc"):
        table = mc.Table.create(tmp_path / "db.db" / who, schema, key="id", partition_by=["day", "hour"], buckets=2)
        table.write(as_arrow(old, schema))
        made.append(table)
    by_spark, by_mc = made
    writer = source.createDataFrame(new, WRITE_SCHEMA).repartition(3).write.format("merge_core").mode("overwrite")
    for name, value in options.items():
        writer = writer.option(name, value)
    writer.save(str(by_spark.path))
    by_mc.write(as_arrow(new, schema), overwrite=spec, dynamic_overwrite=dynamic)
    assert by_spark.snapshots() == [1, 2] and by_spark.snapshot().commit_kind == "OVERWRITE"
    got = by_id(by_spark.read().read_all())
    assert got == by_id(by_mc.read().read_all())
    assert got == pypaimon_rows(by_spark)
    kept = [r for r in by_id(as_arrow(old, schema)) if not replaced(r)]
    assert got == sorted(kept + by_id(as_arrow(new, schema)), key=lambda r: r["id"])
    assert 0 < len(kept) < len(old) or case.startswith("static: the whole")


def test_an_overwrite_of_rows_outside_its_partition_fails_and_leaves_nothing(source, tmp_path):
    schema = pa.schema([SCHEMA.field(n) for n in WRITE_SCHEMA_NAMES])
    root = tmp_path / "db.db" / "o"
    table = mc.Table.create(root, schema, key="id", partition_by="day", buckets=2)
    table.write(as_arrow(written_rows(range(10), 1), schema))
    before = {p for p in root.rglob("*") if p.is_file()}
    df = source.createDataFrame(written_rows(range(20, 30), 2), WRITE_SCHEMA)
    with pytest.raises(Exception, match="was given rows of another partition"):
        df.write.format("merge_core").mode("overwrite").option("partition", "day=2024-06-01").save(str(root))
    assert table.snapshots() == [1]
    assert {p for p in root.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize("mode", ["append", "overwrite"])
def test_a_failed_job_leaves_no_file_and_no_snapshot(source, tmp_path, mode):
    """Task 0 writes its files and finishes; only then does task 1 fail: Spark aborts the
    job with task 0's messages, and the abort removes task 0's files; ``expire`` then
    finds the table as it was."""
    schema = pa.schema([SCHEMA.field(n) for n in WRITE_SCHEMA_NAMES])
    root = tmp_path / "db.db" / "f"
    table = mc.Table.create(root, schema, key="id", partition_by="day", buckets=2)
    first = [dict(zip(WRITE_SCHEMA_NAMES, r, strict=True)) for r in written_rows(range(5), 0)]
    table.write(pa.Table.from_pylist(first, schema))
    before = {p for p in root.rglob("*") if p.is_file()}
    go = tmp_path / "go"

    def second_task_fails(batches):
        from pyspark import TaskContext

        yield from batches
        if TaskContext.get().partitionId() == 1:
            while not go.exists():
                time.sleep(0.05)
            raise RuntimeError("task 1 fails on purpose")

    def let_task_1_fail_once_task_0_is_done() -> None:
        tracker = source.sparkContext.statusTracker()
        deadline = time.monotonic() + 300  # a hang would be a failure of the test, not of the source
        while time.monotonic() < deadline:
            written = {p for p in root.rglob("data-*") if p.is_file()} - before
            stages = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
            if written and any(s is not None and s.numCompletedTasks >= 1 for s in stages):
                break
            time.sleep(0.05)
        go.touch()

    # The job runs on this thread (a session's Python data sources are not found from a
    # job started on another thread); the watcher on another.
    watcher = threading.Thread(target=let_task_1_fail_once_task_0_is_done)
    watcher.start()
    rows = source.createDataFrame(written_rows(range(100), 1), WRITE_SCHEMA).repartition(2)
    df = rows.mapInArrow(second_task_fails, rows.schema)
    failed = []
    try:
        df.write.format("merge_core").mode(mode).save(str(root))
    except Exception as e:
        failed.append(e)
    go.touch()
    watcher.join()
    assert failed and "task 1 fails on purpose" in str(failed[0])
    assert {p for p in root.rglob("*") if p.is_file()} == before, "the files task 0 wrote are gone"
    assert table.snapshots() == [1]
    table.expire(orphan_age=0)
    assert {p for p in root.rglob("*") if p.is_file()} == before
    assert by_id(table.read().read_all()) == by_id(pa.Table.from_pylist(first, schema))


def test_sql_view_select_and_insert(source, tables, tmp_path):
    table = tables["aggregate"]
    source.sql(f"CREATE OR REPLACE TEMPORARY VIEW agg USING merge_core OPTIONS (path '{table.path}')")
    total = source.sql("SELECT day, sum(amount) AS s FROM agg WHERE hour = 1 GROUP BY day ORDER BY day").collect()
    rows = table.read().read_all().to_pylist()
    assert [(r.day, r.s) for r in total] == [
        (d, sum(r["amount"] or 0 for r in rows if r["day"] == d and r["hour"] == 1)) for d in DAYS
    ]
    schema = pa.schema([SCHEMA.field(n) for n in WRITE_SCHEMA_NAMES])
    target = mc.Table.create(tmp_path / "db.db" / "ins", schema, key="id", partition_by="day", buckets=2)
    source.sql(f"CREATE OR REPLACE TEMPORARY VIEW ins USING merge_core OPTIONS (path '{target.path}')")
    source.sql(f"INSERT INTO ins SELECT {', '.join(WRITE_SCHEMA_NAMES)} FROM agg WHERE id < 10")
    assert target.snapshots() == [1]
    expected = [r for r in by_id(table.read(columns=WRITE_SCHEMA_NAMES).read_all()) if r["id"] < 10]
    assert by_id(target.read().read_all()) == expected
    source.sql(f"INSERT OVERWRITE ins SELECT {', '.join(WRITE_SCHEMA_NAMES)} FROM agg WHERE id >= 95")
    assert target.snapshots() == [1, 2] and target.snapshot().commit_kind == "OVERWRITE"
    expected = [r for r in by_id(table.read(columns=WRITE_SCHEMA_NAMES).read_all()) if r["id"] >= 95]
    assert by_id(target.read().read_all()) == expected, "a static overwrite: the whole table replaced"


def test_bad_options_and_modes_are_clear_errors(source, tables, tmp_path):
    from pyspark.errors import AnalysisException

    path = str(tables["deduplicate"].path)

    def reader():  # a DataFrameReader keeps its options: a new one each time
        return source.read.format("merge_core")

    cases = [
        (lambda: reader().option("snapshots", "1").load(path), r"unknown option\(s\) \['snapshots'\]"),
        (lambda: reader().load(), "needs a table"),
        (lambda: reader().option("snapshot", "first").load(path), "option snapshot must be a snapshot id"),
        (lambda: reader().option("snapshot", "99").load(path).count(), "TableNotFoundError"),
        (lambda: reader().option("as_of", "yesterday").load(path), "option as_of must be an ISO 8601"),
        (lambda: reader().option("tag", "t").option("snapshot", "1").load(path), "one of snapshot, tag and as_of"),
        (lambda: reader().load(str(tmp_path / "none")), "TableNotFoundError"),
        (lambda: reader().schema("nope int").load(path).collect(), "no column 'nope'"),
        (lambda: reader().schema("id string").load(path).collect(), "column 'id' is bigint in the table, not string"),
    ]
    df = source.read.format("merge_core").load(path)
    source.sql(f"CREATE OR REPLACE TEMPORARY VIEW dedup USING merge_core OPTIONS (path '{path}')")

    def writer():
        return df.write.format("merge_core")

    cases += [
        (lambda: writer().mode("overwrite").option("partitionOverwriteMode", "x").save(path), "static or dynamic"),
        (lambda: writer().mode("overwrite").option("partition", "id=1").save(path), r"names \['id'\], not partition"),
        (lambda: writer().mode("overwrite").option("partition", "day").save(path), "column=value pairs"),
        (lambda: writer().mode("append").option("partition", "day=d").save(path), "this write appends"),
        (lambda: source.sql("INSERT OVERWRITE dedup PARTITION (day = 'd') SELECT 1"), "NON_PARTITION_COLUMN"),
        (lambda: writer().mode("append").option("snapshot", "1").save(path), "for writing the merge_core source"),
        (lambda: df.drop("note").write.format("merge_core").mode("append").save(path), r"missing \['note'\]"),
    ]
    snapshots = tables["deduplicate"].snapshots()
    for action, message in cases:
        with pytest.raises(AnalysisException, match=message):
            action()
    assert tables["deduplicate"].snapshots() == snapshots


def test_a_dynamic_bucket_table_takes_new_keys_from_one_task(source, tmp_path):
    """Two tasks assigning new keys to one partition's buckets, each from the hash index
    as it was, could put a key in two buckets: that job is refused at its commit and its
    files removed. One task's new keys, and several tasks' updates of keys the index
    holds, commit; merge-core and pypaimon read the rows written."""
    schema = pa.schema([pa.field("k", pa.int64(), False), ("v", pa.int64())])
    root = tmp_path / "db.db" / "dynamic"
    table = mc.Table.create(root, schema, key="k", options={"bucket": "-1"})

    def write(keys: range, v: int, tasks: int) -> None:
        df = source.createDataFrame([(k, v) for k in keys], "k long, v long")
        df = df.coalesce(1) if tasks == 1 else df.repartition(tasks)
        df.write.format("merge_core").mode("append").save(str(root))

    def pypaimon_rows() -> list[tuple]:
        builder = catalog(root).get_table(identifier(root)).new_read_builder()
        read = builder.new_read().to_arrow(builder.new_scan().plan().splits())
        return sorted((r["k"], r["v"]) for r in read.to_pylist())

    write(range(0, 100), 1, tasks=1)
    files = {p for p in root.rglob("*") if p.is_file()}
    with pytest.raises(Exception, match=r"dynamic buckets \('bucket' = -1\).*2 tasks assigned new keys"):
        write(range(100, 200), 2, tasks=2)
    assert table.snapshots() == [1]
    assert {p for p in root.rglob("*") if p.is_file()} == files, "the refused job left files"
    write(range(0, 100, 3), 3, tasks=2)  # keys the index holds: no task assigns
    want = sorted((k, 3 if k % 3 == 0 else 1) for k in range(100))
    assert sorted(tuple(r.values()) for r in table.read().read_all().to_pylist()) == pypaimon_rows() == want
