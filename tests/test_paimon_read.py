"""Reading Paimon tables written by Paimon's Java writer (the shared fixtures): every
snapshot equals what each fixture's README says was written and what pypaimon-rust (and,
where it can, pypaimon) reads; plans, splits, projections, partition filters; damaged
tables raise typed errors."""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import merge_core as mc
import pyarrow as pa
import pytest

FIXTURES = Path(__file__).resolve().parent.parent.parent / "shared" / "paimon-fixtures"
pytestmark = pytest.mark.skipif(not FIXTURES.is_dir(), reason="the shared Paimon fixtures are not beside this checkout")

TWO_ROADS = "Two roads diverged in a wood, and I took the one less traveled by, And that has made all the difference."
# What each README says was written, folded by hand: (f0, f1, f2, f3) per live key.
SNAPSHOT_1 = {
    (TWO_ROADS, 10, 1, 11.0),
    ("Alice", 10, 1, 11.1),
    ("Bob", 10, 0, 12.1),
    ("Emily", 10, 0, 13.1),
    ("Tony", 10, 0, 14.1),
    ("Alex", 10, 0, 16.1),
    ("David", 10, 0, 17.1),
    ("Lucy", 20, 1, 14.1),
    ("Paul", 20, 1, 18.1),
}
AFTER_UPDATE = (SNAPSHOT_1 - {("Tony", 10, 0, 14.1), ("Alice", 10, 1, 11.1)}) | {("Alice", 10, 1, 19.1)}
AFTER_MORE = (AFTER_UPDATE - {("Alex", 10, 0, 16.1)}) | {("Skye", 10, 0, 21.0), ("Marco", 10, 0, 21.1)}
LATEST_MOR = (AFTER_MORE | {("Skye2", 10, 0, 31.0), ("Marco2", 10, 0, 31.1)}) - {("Alex", 10, 0, 21.2)}
EXPECTED = {
    "pk_table_scan_and_read_mor": {
        1: SNAPSHOT_1,
        2: AFTER_UPDATE,
        3: AFTER_UPDATE,
        4: AFTER_MORE | {("Alex", 10, 0, 21.2)},
        5: LATEST_MOR,
    },
    # Deletion vectors: a batch read sees compacted files only (snapshots 5 and 6 wrote level 0).
    "pk_table_scan_and_read_dv": {2: SNAPSHOT_1, 4: AFTER_UPDATE, 6: AFTER_UPDATE},
    "pk_dv_index_in_data_no_external": {2: SNAPSHOT_1, 4: AFTER_UPDATE},
    # First-row with ignore-delete: the first row of each key, compacted files only.
    "pk_table_scan_and_read_first_row": {3: SNAPSHOT_1, 5: SNAPSHOT_1},
    "pk_with_bitmap_dv": {
        4: {
            (1, "Bob", 10, 1, 12.1),
            (2, "Emily", 10, 0, 13.1),
            (3, "Tony", 10, 0, 14.1),
            (5, "Bob", 10, 1, 16.1),
            (6, "Tony", 20, 0, 17.1),
            (7, "Alice", 20, None, 18.1),
        }
    },
    # Partial-update read with ignore-delete: the deletes of snapshot 2 are dropped.
    "pk_table_partial_update": {
        2: {
            (0, 1, 100.0, True, "new_apple"),
            (1, 0, 2.0, False, None),
            (1, 1, 133.3, False, "banana"),
            (2, 1, 144.4, True, "orange"),
        }
    },
}


def table_path(name: str) -> Path:
    return FIXTURES / f"{name}.db" / name


def rows(table: pa.Table) -> set[tuple]:
    return {tuple(r.values()) for r in table.to_pylist()}


def pypaimon_rust_read(name: str, snapshot: int | None = None) -> pa.Table:
    from pypaimon_rust.datafusion import PaimonCatalog

    table = PaimonCatalog({"warehouse": str(FIXTURES)}).get_table((name, name))
    builder = table.new_read_builder({"scan.snapshot-id": str(snapshot)} if snapshot else None)
    batches = builder.new_read().read(builder.new_scan().plan().splits())
    return pa.Table.from_batches(batches) if batches else pa.table({})


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_java_written_tables_read_as_written(name):
    table = mc.Table.open(table_path(name))
    assert table.snapshots() == list(range(1, max(table.snapshots()) + 1))
    for snapshot, expected in EXPECTED[name].items():
        got = table.read(snapshot=snapshot).read_all()
        assert rows(got) == expected, snapshot
        assert got.num_rows == len(expected)  # one row per key
    assert rows(table.read().read_all()) == EXPECTED[name][max(EXPECTED[name])]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_snapshot_equals_pypaimon_rust(name):
    pytest.importorskip("pypaimon_rust")
    table = mc.Table.open(table_path(name))
    for snapshot in table.snapshots():
        ours = table.read(snapshot=snapshot).read_all()
        theirs = pypaimon_rust_read(name, snapshot)
        assert rows(ours) == rows(theirs), snapshot
        if theirs.num_columns:  # pypaimon-rust returns no schema for an empty read
            assert ours.schema.names == theirs.schema.names


@pytest.mark.parametrize("name", sorted(set(EXPECTED) - {"pk_table_partial_update"}))
def test_latest_snapshot_equals_pypaimon(name):
    """pypaimon reads five of the six (it refuses partial-update with ignore-delete)."""
    pypaimon = pytest.importorskip("pypaimon")
    theirs = pypaimon.CatalogFactory.create({"warehouse": str(FIXTURES)}).get_table(f"{name}.{name}")
    builder = theirs.new_read_builder()
    want = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    assert rows(mc.Table.open(table_path(name)).read().read_all()) == rows(want)


def test_describes_the_table():
    table = mc.Table.open(table_path("pk_table_scan_and_read_mor"))
    assert table.key == ["f0", "f1", "f2"] and table.partition_by == ["f1"] and table.buckets == 2
    assert table.schema.names == ["f0", "f1", "f2", "f3"]
    assert table.schema.field("f3").metadata == {b"PARQUET:field_id": b"3"}
    assert table.merge == mc.Deduplicate()
    assert mc.Table.open(table_path("pk_table_partial_update")).merge == mc.PartialUpdate(ignore_delete=True)
    info = table.info()
    assert info["format"] == "paimon" and info["snapshot"] == 5 and info["files"] > 0


def test_projection_partition_filter_and_threads():
    table = mc.Table.open(table_path("pk_table_scan_and_read_mor"))
    projected = table.read(columns=["f3", "f0"]).read_all()
    assert projected.schema.names == ["f3", "f0"]
    assert {(r["f0"], r["f3"]) for r in projected.to_pylist()} == {(r[0], r[3]) for r in LATEST_MOR}
    only_20 = table.read(partitions={"f1": 20}).read_all()
    assert rows(only_20) == {r for r in LATEST_MOR if r[1] == 20}
    assert table.read(partitions={"f1": [30]}).read_all().num_rows == 0
    one = table.read(threads=1).read_all()
    assert all(table.read(threads=n).read_all().equals(one) for n in (2, 3, 8))
    with pytest.raises(mc.InvalidInputError, match="not a partition column"):
        table.read(partitions={"f0": "x"})
    with pytest.raises(mc.InvalidInputError, match="no columns"):
        table.read(columns=["nope"])


def test_dynamic_partition_pruning():
    table = mc.Table.open(table_path("pk_table_scan_and_read_mor"))
    dim = pa.table({"code": ["20", "99"]})  # a build side of another type: cast to the partition's
    stream = table.read(dynamic_filter=mc.DynamicFilter(dim, "code", partition_column="f1"))
    assert rows(stream.read_all()) == {r for r in LATEST_MOR if r[1] == 20}
    assert stream.stats["partitions_read"] == 1 and stream.stats["partitions_total"] == 2
    assert stream.stats["dynamic_filters_applied"] == 1
    unusable = mc.DynamicFilter(pa.table({"code": ["x"]}), "code", partition_column="f1")
    assert rows(table.read(dynamic_filter=unusable).read_all()) == LATEST_MOR  # cannot cast: prunes nothing


def test_plan_and_read_split_are_the_public_seam():
    table = mc.Table.open(table_path("pk_table_scan_and_read_mor"))
    splits = table.plan(columns=["f0", "f3"])
    assert splits and all(s.columns == ("f0", "f3") for s in splits)
    # Splits travel to workers: pickled, then read on their own.
    parts = [table.read_split(pickle.loads(pickle.dumps(s))).read_all() for s in splits]
    assert rows(pa.concat_tables(parts)) == {(r[0], r[3]) for r in LATEST_MOR}
    # The bucket of f1=10 read at snapshot 5 merges four level-0 files in one section.
    busiest = max(splits, key=lambda s: s.files)
    assert busiest.files == 4 and len(busiest.sections) == 1 and len(busiest.sections[0].runs) == 3


def test_an_empty_read_keeps_the_columns():
    table = mc.Table.open(table_path("pk_table_scan_and_read_mor"))
    empty = table.read(partitions={"f1": 99}, columns=["f0", "f3"]).read_all()
    assert empty.num_rows == 0 and empty.schema.names == ["f0", "f3"]
    assert empty.schema.field("f3").type == pa.float64()


@pytest.fixture
def mor_copy(tmp_path):
    return Path(shutil.copytree(table_path("pk_table_scan_and_read_mor"), tmp_path / "t"))


def data_files(root: Path) -> list[Path]:
    return sorted(root.glob("f1=*/bucket-*/data-*.parquet"))


def test_a_missing_data_file_is_a_corrupt_table(mor_copy):
    table = mc.Table.open(mor_copy)
    for f in data_files(mor_copy):
        f.unlink()
    with pytest.raises(mc.CorruptTableError, match="data file .*cannot open"):
        table.read().read_all()


def test_a_damaged_data_file_is_a_corrupt_table(mor_copy):
    table = mc.Table.open(mor_copy)
    for f in data_files(mor_copy):
        f.write_bytes(f.read_bytes()[:100])
    with pytest.raises(mc.CorruptTableError, match="data file"):
        table.read().read_all()


def test_a_truncated_or_corrupt_manifest_is_a_corrupt_table(mor_copy):
    manifests = sorted((mor_copy / "manifest").glob("manifest-[!l]*"))
    original = manifests[0].read_bytes()
    table = mc.Table.open(mor_copy)
    manifests[0].write_bytes(original[: len(original) // 2])
    with pytest.raises(mc.CorruptTableError, match="not a readable Avro file"):
        table.read(snapshot=5)
    manifests[0].write_bytes(original[:20] + bytes(64) + original[84:])
    with pytest.raises(mc.CorruptTableError):
        table.read(snapshot=5)


def test_a_snapshot_pointing_at_nothing_and_unknown_versions(mor_copy):
    table = mc.Table.open(mor_copy)
    snapshot = mor_copy / "snapshot" / "snapshot-5"
    data = json.loads(snapshot.read_text())
    snapshot.write_text(json.dumps({**data, "deltaManifestList": "manifest-list-gone"}))
    with pytest.raises(mc.CorruptTableError, match="manifest-list-gone is missing"):
        table.read()
    snapshot.write_text(json.dumps({**data, "version": 99}))
    with pytest.raises(mc.UnsupportedFeatureError, match="snapshot format version 99"):
        table.read()
    with pytest.raises(mc.TableNotFoundError, match="no snapshot 42"):
        table.read(snapshot=42)
    schema = mor_copy / "schema" / "schema-0"
    schema.write_text(json.dumps({**json.loads(schema.read_text()), "version": 9}))
    with pytest.raises(mc.UnsupportedFeatureError, match="schema format version 9"):
        mc.Table.open(mor_copy)


def test_a_latest_hint_that_lags_is_not_trusted(mor_copy):
    (mor_copy / "snapshot" / "LATEST").write_text("2")
    assert rows(mc.Table.open(mor_copy).read().read_all()) == LATEST_MOR


def test_a_damaged_deletion_vector_is_a_corrupt_table(tmp_path):
    root = Path(shutil.copytree(table_path("pk_table_scan_and_read_dv"), tmp_path / "t"))
    index = sorted((root / "index").glob("index-*"))[0]
    data = bytearray(index.read_bytes())
    data[12] ^= 0xFF  # inside the bitmap: the checksum no longer matches
    index.write_bytes(bytes(data))
    with pytest.raises(mc.CorruptTableError, match="fails its checksum"):
        mc.Table.open(root).read()


def test_a_postponed_bucket_table_reads_its_real_buckets(mor_copy):
    """Java's files in real buckets read the same once the table's buckets are postponed
    (bucket = -2): a batch read takes the real buckets, as Paimon's does."""
    before = rows(mc.Table.open(mor_copy).read().read_all())
    schema = mor_copy / "schema" / "schema-0"
    data = json.loads(schema.read_text())
    schema.write_text(json.dumps({**data, "options": {**data["options"], "bucket": "-2"}}))
    assert before and rows(mc.Table.open(mor_copy).read().read_all()) == before


def test_spark_reads_a_paimon_table_one_task_per_split(spark):
    import merge_core.spark as mcs

    path = table_path("pk_table_scan_and_read_mor")
    stats: dict[str, int] = {}
    df = mcs.read(spark, str(path), columns=["f0", "f3"], stats=stats)
    assert df.rdd.getNumPartitions() == stats["splits"] == len(mc.Table.open(path).plan())
    assert rows(df.toArrow()) == {(r[0], r[3]) for r in LATEST_MOR}
    older = mcs.read(spark, path, snapshot=1, partitions={"f1": 20}).toArrow()
    assert rows(older) == {r for r in SNAPSHOT_1 if r[1] == 20}


def test_cli_reads_and_describes_a_paimon_table(tmp_path):
    import subprocess
    import sys

    import pyarrow.parquet as pq

    cli = Path(sys.executable).parent / "merge-core"
    path = table_path("pk_table_scan_and_read_mor")
    out = tmp_path / "out.parquet"
    done = subprocess.run(
        [str(cli), "table", "read", str(path), "-o", str(out), "--partition", "f1=10", "--snapshot", "4"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "read snapshot 4" in done.stdout
    assert rows(pq.read_table(out)) == {r for r in EXPECTED["pk_table_scan_and_read_mor"][4] if r[1] == 10}
    info = subprocess.run([str(cli), "table", "info", str(path), "--json"], capture_output=True, text=True)
    assert info.returncode == 0 and json.loads(info.stdout)["format"] == "paimon"
