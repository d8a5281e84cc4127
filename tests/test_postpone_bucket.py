"""Postponed-bucket tables (``bucket = -2``): rows wait in ``bucket-postpone/`` unread until
a compaction moves them into real buckets. pypaimon writes such tables, merge-core writes
and compacts them, and after every step merge-core, pypaimon and pypaimon-rust read the
rows a plain-Python model of Paimon's rules says: a batch read sees the real buckets only;
a compaction applies each partition's postponed rows, oldest first, over what its buckets
hold."""

from __future__ import annotations

import datetime
import decimal
import json
import multiprocessing
import re
from pathlib import Path

import fastavro
import merge_core as mc
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import pypaimon_rust_rows, pypaimon_table

pypaimon = pytest.importorskip("pypaimon")
pytest.importorskip("pypaimon_rust")

SCHEMA = pa.schema([pa.field("k", pa.int64(), False), pa.field("p", pa.string(), False), ("v", pa.int64())])
POSTPONED = {"bucket": "-2", "postpone.batch-write-fixed-bucket": "false"}


class Model:
    """Paimon's rules for a deduplicate postponed-bucket table: ``visible`` what a batch
    read returns, ``waiting`` each partition's postponed rows in the order written."""

    def __init__(self) -> None:
        self.visible: dict[tuple, dict] = {}
        self.waiting: list[tuple[dict, bool]] = []

    def write(self, rows: list[dict], postponed: bool, delete: bool = False) -> None:
        for row in rows:
            if postponed:
                self.waiting.append((row, delete))
            else:
                self._apply(row, delete)

    def compact(self) -> None:
        for row, delete in self.waiting:
            self._apply(row, delete)
        self.waiting = []

    def _apply(self, row: dict, delete: bool) -> None:
        if delete:
            self.visible.pop((row["k"], row["p"]), None)
        else:
            self.visible[(row["k"], row["p"])] = row

    def rows(self) -> list[tuple]:
        return sorted((r["k"], r["p"], r["v"]) for r in self.visible.values())


def rows_of(rows: list[dict]) -> list[tuple]:
    return sorted((r["k"], r["p"], r["v"]) for r in rows)


def catalog(root: Path):
    return pypaimon.CatalogFactory.create({"warehouse": str(root.parent.parent)})


def identifier(root: Path) -> str:
    return f"{root.parent.name[:-3]}.{root.name}"


def pypaimon_read(root: Path) -> list[tuple]:
    builder = pypaimon_table(root).new_read_builder()
    return rows_of(builder.new_read().to_arrow(builder.new_scan().plan().splits()).to_pylist())


def every_reader(root: Path) -> list[list[tuple]]:
    """What merge-core, pypaimon and pypaimon-rust read of the table at ``root``."""
    ours = rows_of(mc.Table.open(root).read().read_all().to_pylist())
    return [ours, pypaimon_read(root), rows_of(pypaimon_rust_rows(root))]


def assert_read(root: Path, model: Model) -> None:
    assert every_reader(root) == [model.rows()] * 3


def pypaimon_create(root: Path, options: dict[str, str]) -> None:
    cat = catalog(root)
    cat.create_database(root.parent.name[:-3], True)
    schema = pypaimon.Schema.from_pyarrow_schema(
        SCHEMA, partition_keys=["p"], primary_keys=["k", "p"], options={"bucket": "-2", **options}
    )
    cat.create_table(identifier(root), schema, False)


def pypaimon_write(root: Path, rows: list[dict], fixed: bool = False) -> None:
    """One pypaimon commit: its batch writer puts rows in bucket-postpone/; its
    fixed-bucket writer in real buckets."""
    table = pypaimon_table(root)
    builder = table.new_postpone_fixed_bucket_write_builder() if fixed else table.new_batch_write_builder()
    writer, committer = builder.new_write(), builder.new_commit()
    writer.write_arrow(pa.Table.from_pylist(rows, schema=SCHEMA))
    committer.commit(writer.prepare_commit())
    writer.close()
    committer.close()


def data(keys: range | list[int], p: str, v: int) -> list[dict]:
    return [{"k": k, "p": p, "v": v + k} for k in keys]


def entries(root: Path) -> list[dict]:
    """The live manifest entries of the latest snapshot, read with fastavro."""
    snapshot = json.loads((root / "snapshot" / f"snapshot-{mc.Table.open(root).snapshots()[-1]}").read_text())
    live: dict[tuple, dict] = {}
    for listing in ("baseManifestList", "deltaManifestList"):
        with open(root / "manifest" / snapshot[listing], "rb") as f:
            manifests = [m["_FILE_NAME"] for m in fastavro.reader(f)]
        for name in manifests:
            with open(root / "manifest" / name, "rb") as f:
                for e in fastavro.reader(f):
                    key = (e["_PARTITION"], e["_BUCKET"], e["_FILE"]["_FILE_NAME"])
                    if e["_KIND"] == 0:
                        live[key] = e
                    else:
                        live.pop(key)
    return list(live.values())


def total_buckets(root: Path) -> dict[str, set[int]]:
    """Each partition's buckets' totalBuckets, as the manifests record them (postponed files excluded)."""
    out: dict[str, set[int]] = {}
    table = mc.Table.open(root)
    names = {f["path"].split("/")[-1]: f["partition"][0] for f in table.files()}
    for e in entries(root):
        if e["_BUCKET"] >= 0:
            out.setdefault(names[e["_FILE"]["_FILE_NAME"]], set()).add(e["_TOTAL_BUCKETS"])
    return out


def test_postponed_rows_are_not_read_until_merge_core_compacts_them(tmp_path):
    root = tmp_path / "db.db" / "t"
    pypaimon_create(root, {"postpone.default-bucket-num": "2"})
    model = Model()
    pypaimon_write(root, data(range(10), "a", 0) + data([3, 4], "b", 100))
    model.write(data(range(10), "a", 0) + data([3, 4], "b", 100), postponed=True)
    pypaimon_write(root, data([1, 2, 11], "a", 1000))  # newer versions of 1 and 2
    model.write(data([1, 2, 11], "a", 1000), postponed=True)
    assert_read(root, model)  # nothing: the rows wait in bucket-postpone/
    table = mc.Table.open(root)
    assert {f["bucket"] for f in table.files()} == {-2}
    assert all("/bucket-postpone/" in f["path"] and f["path"].endswith(".avro") for f in table.files())

    result = table.compact()
    model.compact()
    assert result["files_merged"] == 3  # the postponed files, all gone from the snapshot
    assert_read(root, model)
    assert total_buckets(root) == {"a": {2}, "b": {2}}  # postpone.default-bucket-num
    assert {f["bucket"] for f in table.files()} == {0, 1}

    # pypaimon's fixed-bucket writer updates keys in the buckets merge-core put them in:
    # a key in the wrong bucket would read twice.
    pypaimon_write(root, data([0, 1, 9], "a", 2000), fixed=True)
    model.write(data([0, 1, 9], "a", 2000), postponed=False)
    assert_read(root, model)

    # Postponed rows are newer than the buckets' rows once compacted, whenever written.
    pypaimon_write(root, data([4, 9], "a", 3000) + data([5], "b", 3000))
    model.write(data([4, 9], "a", 3000) + data([5], "b", 3000), postponed=True)
    new_rows = data([4, 7], "a", 4000) + data([1, 2, 3], "c", 4000)  # c: a new partition, default-bucket-num
    mc.Table.open(root).write(pa.Table.from_pylist(new_rows, schema=SCHEMA))
    model.write(new_rows, postponed=False)
    assert_read(root, model)
    mc.Table.open(root).compact(full=True)
    model.compact()
    assert_read(root, model)
    assert total_buckets(root) == {"a": {2}, "b": {2}, "c": {2}}


def test_merge_core_writes_postponed_rows_as_paimons_postpone_writer(tmp_path):
    root = tmp_path / "db.db" / "t"
    table = mc.Table.create(root, SCHEMA, key="k", partition_by="p", options=POSTPONED)
    # `buckets=-2` makes the same table as the option.
    fixed = {"postpone.batch-write-fixed-bucket": "false"}
    by_argument = mc.Table.create(tmp_path / "b", SCHEMA, key="k", partition_by="p", buckets=-2, options=fixed)
    assert by_argument.options == table.options
    model = Model()
    rows = data([5, 1, 3], "a", 0) + data([1], "a", 10) + data([2], "b", 0)  # key 1 twice, unsorted
    table.write(pa.Table.from_pylist(rows, schema=SCHEMA))
    model.write(rows, postponed=True)
    table.delete(pa.table({"k": [3], "p": ["a"]}))
    model.write(data([3], "a", 0), postponed=True, delete=True)
    assert_read(root, model)

    files = [e for e in entries(root) if e["_BUCKET"] == -2]
    assert len(files) == 3
    pattern = re.compile(r"data--u-[0-9a-f-]{36}-s-\d+-w-[0-9a-f-]{36}-0\.parquet")
    for e in files:
        f = e["_FILE"]
        assert pattern.fullmatch(f["_FILE_NAME"])
        assert (e["_TOTAL_BUCKETS"], f["_LEVEL"], f["_MIN_SEQUENCE_NUMBER"], f["_MAX_SEQUENCE_NUMBER"]) == (
            -2,
            0,
            -1,
            -1,
        )
    first = next(f for f in table.files() if f["rows"] == 4)
    stored = pq.ParquetFile(root / first["path"]).read().to_pylist()
    assert [(r["k"], r["v"]) for r in stored] == [(5, 5), (1, 1), (3, 3), (1, 11)]  # as written, not folded

    table.compact()
    model.compact()
    assert_read(root, model)
    assert not [f for f in table.files() if f["bucket"] == -2]


def test_a_partitions_bucket_count_is_paimons(tmp_path):
    """Compaction sizes a new partition from its postponed rows
    (postpone.target-row-num-per-bucket); later writes keep that count; a write to a new
    partition makes one bucket, as pypaimon's fixed-bucket writer does."""
    root = tmp_path / "db.db" / "t"
    options = {"bucket": "-2", "postpone.target-row-num-per-bucket": "4"}
    table = mc.Table.create(root, SCHEMA, key="k", partition_by="p", options=options)
    model = Model()
    pypaimon_write(root, data(range(10), "a", 0))  # 10 rows: 3 buckets
    model.write(data(range(10), "a", 0), postponed=True)
    table.compact()
    model.compact()
    assert total_buckets(root) == {"a": {3}}
    table.write(pa.Table.from_pylist(data(range(5, 15), "a", 100) + data([1, 2], "b", 100), schema=SCHEMA))
    model.write(data(range(5, 15), "a", 100) + data([1, 2], "b", 100), postponed=False)
    pypaimon_write(root, data([1], "c", 200), fixed=True)
    model.write(data([1], "c", 200), postponed=False)
    assert total_buckets(root) == {"a": {3}, "b": {1}, "c": {1}}
    assert_read(root, model)
    # pypaimon's fixed-bucket writer keeps merge-core's counts (a key in another bucket reads twice)
    pypaimon_write(root, data(range(15), "a", 300) + data([2], "b", 300), fixed=True)
    model.write(data(range(15), "a", 300) + data([2], "b", 300), postponed=False)
    assert_read(root, model)


def _compact_killed_before_commit(path: str) -> None:
    import os

    from merge_core.paimon import _commit

    def killed(*_args, **_kwargs):
        os._exit(9)

    _commit.Committer._claim = killed  # dies where the snapshot would be claimed
    mc.Table.open(path).compact(full=True)


def test_a_killed_compaction_loses_nothing_and_expire_keeps_what_is_live(tmp_path):
    root = tmp_path / "db.db" / "t"
    table = mc.Table.create(root, SCHEMA, key="k", partition_by="p", buckets=1, options=POSTPONED)
    model = Model()
    pypaimon_write(root, data(range(6), "a", 0))
    model.write(data(range(6), "a", 0), postponed=True)
    table.compact()
    model.compact()
    table.write(pa.Table.from_pylist(data([1, 7], "a", 100) + data([1], "b", 100), schema=SCHEMA))
    model.write(data([1, 7], "a", 100) + data([1], "b", 100), postponed=True)
    pypaimon_write(root, data([2], "a", 200))
    model.write(data([2], "a", 200), postponed=True)

    child = multiprocessing.get_context("spawn").Process(target=_compact_killed_before_commit, args=(str(root),))
    child.start()
    child.join()
    assert child.exitcode == 9
    assert_read(root, model)  # nothing committed, nothing lost
    assert len([f for f in table.files() if f["bucket"] == -2]) == 3

    # An expire keeps the postponed files while they are live, and takes the dead
    # compaction's files as orphans.
    removed = table.expire(keep_snapshots=1, orphan_age=0)
    assert removed["files_removed"] >= 1
    assert_read(root, model)

    table.compact()
    model.compact()
    assert_read(root, model)
    table.expire(keep_snapshots=1, orphan_age=0)
    assert_read(root, model)
    assert not list(root.glob("*/bucket-postpone/*"))  # only expired snapshots named them
    assert len(list(root.glob("*/bucket-*/data-*"))) == len(table.files())


def test_merge_on_read_and_bucket_by_bucket_compaction_are_refused(tmp_path):
    root = tmp_path / "db.db" / "t"
    table = mc.Table.create(root, SCHEMA, key="k", partition_by="p", options=POSTPONED)
    table.write(pa.Table.from_pylist(data([1], "a", 0), schema=SCHEMA))
    with pytest.raises(mc.UnsupportedFeatureError, match="postponed buckets"):
        table.plan_compaction()  # Spark's compact: it would merge postponed files as a bucket
    with pytest.raises(mc.UnsupportedFeatureError, match="postpone.merge-on-read"):
        mc.Table.create(
            tmp_path / "db.db" / "u", SCHEMA, key="k", options={**POSTPONED, "postpone.merge-on-read": "true"}
        )


def test_pypaimons_avro_postponed_files_of_every_type_compact_to_the_rows_written(tmp_path):
    root = tmp_path / "db.db" / "t"
    schema = pa.schema(
        [
            pa.field("k", pa.int64(), False),
            ("d", pa.date32()),
            ("ts", pa.timestamp("ms")),
            ("ts6", pa.timestamp("us")),
            ("dec", pa.decimal128(10, 2)),
            ("s", pa.string()),
            ("b", pa.binary()),
            ("f", pa.float64()),
            ("i", pa.int32()),
            ("bo", pa.bool_()),
            ("st", pa.struct([("a", pa.int64()), ("b", pa.string())])),
            ("l", pa.list_(pa.int64())),
        ]
    )
    cat = catalog(root)
    cat.create_database("db", True)
    paimon_schema = pypaimon.Schema.from_pyarrow_schema(schema, primary_keys=["k"], options={"bucket": "-2"})
    cat.create_table(identifier(root), paimon_schema, False)
    rows = [
        {
            "k": i,
            "d": datetime.date(2024, 1, 1 + i),
            "ts": datetime.datetime(2024, 1, 1, 12, 0, i, 1000 * i),
            "ts6": datetime.datetime(2024, 1, 1, 0, 0, 0, 7 * i),
            "dec": decimal.Decimal(f"{i}.25"),
            "s": f"s{i}",
            "b": bytes([i]),
            "f": i / 3,
            "i": i,
            "bo": i % 2 == 0,
            "st": {"a": i, "b": "x"},
            "l": [i, i + 1],
        }
        for i in range(5)
    ]
    rows.append({"k": 9, **{c: None for c in schema.names if c != "k"}})
    builder = pypaimon_table(root).new_batch_write_builder()
    writer, committer = builder.new_write(), builder.new_commit()
    writer.write_arrow(pa.Table.from_pylist(rows, schema=schema))
    committer.commit(writer.prepare_commit())
    writer.close()
    committer.close()
    assert [p.suffix for p in root.glob("bucket-postpone/*")] == [".avro"]

    mc.Table.open(root).compact()
    builder = pypaimon_table(root).new_read_builder()
    theirs = builder.new_read().to_arrow(builder.new_scan().plan().splits()).sort_by("k").to_pylist()
    ours = mc.Table.open(root).read().read_all().sort_by("k").to_pylist()
    assert ours == theirs == rows
    assert sorted(pypaimon_rust_rows(root), key=lambda r: r["k"]) == rows


def test_spark_writes_a_postponed_bucket_table_where_table_write_would(spark, tmp_path):
    import merge_core.spark as mcs

    fixed = {"bucket": "-2", "postpone.default-bucket-num": "3"}
    for name, options in {"fixed": fixed, "postponed": POSTPONED}.items():
        root = tmp_path / "db.db" / name
        table = mc.Table.create(root, SCHEMA, key="k", partition_by="p", options=options)
        model = Model()
        rows = data(range(40), "a", 0) + data(range(10), "b", 0)
        mcs.write(spark.createDataFrame(pa.Table.from_pylist(rows, schema=SCHEMA).to_pandas()), table)
        model.write(rows, postponed=name == "postponed")
        assert_read(root, model)
        table.compact()
        model.compact()
        assert_read(root, model)
        # postponed: the compaction sizes each partition from its files (far below 1 GB: one bucket)
        assert total_buckets(root) == ({"a": {3}, "b": {3}} if name == "fixed" else {"a": {1}, "b": {1}})


def test_an_aggregate_table_folds_postponed_rows_in_the_order_written(tmp_path):
    """listagg shows the order: each write's rows, then the next write's, as written."""
    root = tmp_path / "db.db" / "t"
    schema = pa.schema([pa.field("k", pa.int64(), False), ("v", pa.int64()), ("s", pa.string())])
    merge = mc.Aggregate({"v": "sum", "s": "listagg"})
    options = {**POSTPONED, "postpone.default-bucket-num": "2"}
    table = mc.Table.create(root, schema, key="k", merge=merge, options=options)
    writes = [[(1, 1, "a"), (2, 10, "b"), (1, 2, "c")], [(3, 100, "e"), (1, 4, "d")], [(1, 8, "f")]]
    expected: dict[int, tuple[int, str]] = {}
    for i, rows in enumerate(writes):
        table.write(pa.Table.from_pylist([dict(zip(("k", "v", "s"), r, strict=True)) for r in rows], schema=schema))
        for k, v, s in rows:
            total, text = expected.get(k, (0, None))
            expected[k] = (total + v, s if text is None else f"{text},{s}")
        if i:  # after the second write and the third, never after the first alone
            table.compact(full=i == 2)
            want = sorted((k, v, s) for k, (v, s) in expected.items())
            builder = pypaimon_table(root).new_read_builder()
            theirs = builder.new_read().to_arrow(builder.new_scan().plan().splits()).to_pylist()
            for read in (table.read().read_all().to_pylist(), theirs, pypaimon_rust_rows(root)):
                assert sorted((r["k"], r["v"], r["s"]) for r in read) == want


def test_postponed_rows_written_before_a_schema_change_compact_by_field_id(tmp_path):
    """Files postponed under an older schema: a renamed column is found by its field id, an
    added one reads as null, a dropped one is left out, as every reader reads them."""
    root = tmp_path / "db.db" / "t"
    schema = pa.schema([pa.field("k", pa.int64(), False), ("v", pa.int64()), ("gone", pa.string())])
    table = mc.Table.create(root, schema, key="k", options=POSTPONED)
    table.write(pa.table({"k": [1, 2], "v": [10, 20], "gone": ["x", "y"]}, schema=schema))
    table.rename_column("v", "w")
    table.drop_column("gone")
    table.add_column("extra", pa.string())
    table = mc.Table.open(root)
    later = pa.schema([pa.field("k", pa.int64(), False), ("w", pa.int64()), ("extra", pa.string())])
    table.write(pa.table({"k": [2, 3], "w": [21, 30], "extra": ["b", "c"]}, schema=later))
    table.compact()
    want = [(1, 10, None), (2, 21, "b"), (3, 30, "c")]
    builder = catalog(root).get_table(identifier(root)).new_read_builder()
    theirs = builder.new_read().to_arrow(builder.new_scan().plan().splits()).to_pylist()
    for read in (table.read().read_all().to_pylist(), theirs, pypaimon_rust_rows(root)):
        assert sorted((r["k"], r["w"], r["extra"]) for r in read) == want
