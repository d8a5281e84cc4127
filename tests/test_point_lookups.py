"""Point lookups read keys first: of each file of the key's bucket, the key column's pages
that may hold the key are decoded alone, and the other columns only where the key is. A
file whose pages hold no such key is left after its key column (``files_skipped`` in the
read's stats), and the read takes a part of the table's bytes (``bytes_read``): its files'
footers and key columns, and one file's pages. (The share of a large table, which
``merge-core bench --only lookup`` reports, is far smaller.)
Each answer is checked against pypaimon's filtered read of the same table."""

from __future__ import annotations

import glob
import os

import merge_core as mc
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from helpers import pypaimon_commit

pypaimon = pytest.importorskip("pypaimon")

SCHEMA = pa.schema([pa.field("k", pa.string(), False), ("v", pa.int64()), ("s", pa.string())])
KEYS = 60_000
COMMITS = 3  # commit c writes the keys i with i % 3 == c, interleaved with the others'


def key(i: int) -> str:
    return f"key-{i:07d}"


def _rows(ids, version: int) -> pa.Table:
    ids = list(ids)
    return pa.table(
        {
            "k": [key(i) for i in ids],
            "v": [i * 10 + version for i in ids],
            "s": [f"{i:07d}|{version}-" * 8 for i in ids],
        },
        schema=SCHEMA,
    )


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    """A one-bucket table of three interleaved commits, a fourth updating every 1000th
    key, and deletes of a few keys; and the warehouse pypaimon reads it from. write-only:
    the five commits stay five level-0 files, which the lookups' file counts expect."""
    warehouse = tmp_path_factory.mktemp("lookups")
    table = mc.Table.create(warehouse / "db.db" / "t", SCHEMA, key="k", buckets=1, options={"write-only": "true"})
    for c in range(COMMITS):
        table.write(_rows(range(c, KEYS, COMMITS), c))
    table.write(_rows(range(0, KEYS, 1000), 9))
    table.delete(pa.table({"k": [key(i) for i in (3001, 3002)]}, schema=pa.schema([SCHEMA.field("k")])))
    return table, warehouse


def _pypaimon_lookup(warehouse, k: str) -> list[dict]:
    theirs = pypaimon.CatalogFactory.create({"warehouse": str(warehouse)}).get_table("db.t")
    builder = theirs.new_read_builder()
    builder = builder.with_filter(builder.new_predicate_builder().equal("k", k))
    return builder.new_read().to_arrow(builder.new_scan().plan().splits()).select(SCHEMA.names).to_pylist()


def _table_bytes(warehouse) -> int:
    return sum(os.path.getsize(f) for f in glob.glob(str(warehouse / "db.db" / "t" / "bucket-*" / "*.parquet")))


@pytest.mark.parametrize(
    "i, holding",
    [
        (4, 1),  # written once
        (3000, 2),  # written by its commit and updated by the fourth
        (3001, 1),  # deleted: its delete is a version too
        (59_996, 1),  # near the end, past the last key of the fourth commit
        (0, 2),  # the first key
    ],
)
def test_a_lookup_reads_the_other_columns_only_of_files_holding_the_key(table, i, holding):
    table, warehouse = table
    stream = table.read(filter=pc.field("k") == key(i))
    got = stream.read_all().to_pylist()
    assert got == _pypaimon_lookup(warehouse, key(i))
    assert len(got) == (0 if i == 3001 else 1)
    stats = stream.stats
    files = stats["files_read"]
    assert files >= holding, stats
    # The files whose key pages hold no version of the key read no other column.
    assert stats["files_skipped"] >= files - holding - 1, stats  # the deletes' file may hold it
    assert stats["files_skipped"] <= files - holding, stats
    # Every column of the key's files but the key (a page of 20,000 rows here) is left:
    # without keys first, the read took about all of the table's bytes.
    assert 0 < stats["bytes_read"] < _table_bytes(warehouse) * 0.3, stats


def test_a_lookup_of_an_absent_key_reads_no_file_past_its_key_column(table):
    table, warehouse = table
    for absent in ("key-0000004x", "a", "zzz", key(KEYS)):
        stream = table.read(filter=pc.field("k") == absent)
        assert stream.read_all().num_rows == 0
        assert _pypaimon_lookup(warehouse, absent) == []
        stats = stream.stats
        # A file whose page statistics exclude the key is not opened at all; the others
        # are left after their key column.
        assert stats["rows_in"] == 0, stats
        assert stats["bytes_read"] < _table_bytes(warehouse) * 0.3, stats


def test_a_files_first_lookup_reads_its_key_pages_and_its_second_builds_its_digests(table):
    """Cold, a lookup reads of each file the key pages that may hold its key (as without
    the cache); the files' second lookup reads their whole key columns to build their
    digests; later lookups read no key column of a file without the key."""
    from merge_core.paimon import lookup_cache_stats, set_lookup_cache_size

    table, warehouse = table
    set_lookup_cache_size(0)
    set_lookup_cache_size(128 << 20)
    try:
        reads = [table.read(filter=pc.field("k") == key(i)) for i in (4, 40_000, 20_000)]
        for stream in reads:
            assert stream.read_all().num_rows == 1
        first, second, third = (stream.stats["bytes_read"] for stream in reads)
        assert first < second, (first, second)
        assert third < second, (third, second)
        assert lookup_cache_stats()["hits"] > 0
    finally:
        set_lookup_cache_size(128 << 20)


def test_a_range_of_keys_reads_keys_first_and_answers_as_pypaimon(table):
    table, warehouse = table
    expression = (pc.field("k") >= key(2990)) & (pc.field("k") < key(3010))
    stream = table.read(filter=expression)
    got = sorted(stream.read_all().to_pylist(), key=lambda r: r["k"])
    whole = table.read().read_all().filter(expression)
    assert got == sorted(whole.to_pylist(), key=lambda r: r["k"])
    assert [r["k"] for r in got] == [key(i) for i in range(2990, 3010) if i not in (3001, 3002)]
    assert stream.stats["rows_in"] < 40, stream.stats


def test_a_table_read_again_reads_its_manifests_once_per_snapshot(tmp_path, monkeypatch):
    from merge_core.paimon import _meta

    reads = []
    read_avro = _meta.read_avro
    monkeypatch.setattr(_meta, "read_avro", lambda path, *a, **k: reads.append(path) or read_avro(path, *a, **k))
    table = mc.Table.create(tmp_path / "t", SCHEMA, key="k", buckets=2)
    table.write(_rows(range(100), 0))
    for i in (1, 2, 3):
        assert table.read(filter=pc.field("k") == key(i)).read_all()["v"].to_pylist() == [i * 10]
    first = len(reads)
    assert first > 0
    for i in (4, 5, 6):
        table.read(filter=pc.field("k") == key(i)).read_all()
    assert len(reads) == first, "the same snapshot's manifests were read again"
    table.write(_rows([4], 7))  # a new snapshot: its manifests are read
    assert table.read(filter=pc.field("k") == key(4)).read_all()["v"].to_pylist() == [47]
    assert len(reads) > first
    assert mc.Table.open(tmp_path / "t").read(filter=pc.field("k") == key(4)).read_all()["v"].to_pylist() == [47]


def test_lookups_take_a_snapshots_plan_once_and_see_every_new_snapshot(tmp_path, monkeypatch):
    """One Table looks keys up while other writers commit: merge-core through another
    Table, pypaimon, a compaction, a delete, and a rollback whose next commit takes the
    rolled-back snapshot's id again. Each answer equals a model of the rows; lookups of
    one snapshot decode its files' statistics and plan its buckets once."""
    from merge_core.paimon import _plan, _skipping

    decoded, planned = [], []
    decode, plan = _skipping._decoded, _plan.Planner.bucket_splits
    monkeypatch.setattr(_skipping, "_decoded", lambda *a: decoded.append(1) or decode(*a))
    monkeypatch.setattr(_plan.Planner, "bucket_splits", lambda self, *a: planned.append(1) or plan(self, *a))
    path = tmp_path / "db.db" / "t"
    reader = mc.Table.create(path, SCHEMA, key="k", buckets=2)
    model: dict[str, int] = {}

    def write(ids, version: int) -> None:
        mc.Table.open(path).write(_rows(ids, version))
        model.update({key(i): i * 10 + version for i in ids})

    def check(ids=range(0, 40, 3)) -> None:
        for i in ids:
            got = reader.read(columns=["k", "v"], filter=pc.field("k") == key(i)).read_all().to_pylist()
            assert got == ([{"k": key(i), "v": model[key(i)]}] if key(i) in model else []), (i, got)

    write(range(30), 0)
    check()
    decoded.clear(), planned.clear()
    check()  # the same snapshot: nothing decoded or planned again
    assert decoded == [] and planned == []
    write(range(20, 40), 1)
    check()
    assert decoded and planned, "a new snapshot was planned from the old one's files"
    theirs = pypaimon.CatalogFactory.create({"warehouse": str(tmp_path)}).get_table("db.t")
    pypaimon_commit(theirs, _rows(range(10, 15), 2).to_pylist(), SCHEMA)
    model.update({key(i): i * 10 + 2 for i in range(10, 15)})
    check()
    mc.Table.open(path).compact(full=True)
    check()
    mc.Table.open(path).delete(pa.table({"k": [key(3), key(21)]}, schema=pa.schema([SCHEMA.field("k")])))
    del model[key(3)], model[key(21)]
    check()
    snapshot = mc.Table.open(path).snapshots()[-1]
    mc.Table.open(path).rollback_to(snapshot - 1)  # the delete undone ...
    model.update({key(3): 30, key(21): 211})
    write([6], 5)  # ... and its snapshot id taken again by another commit
    assert mc.Table.open(path).snapshots()[-1] == snapshot
    check()
