"""Append tables (no primary key), as Paimon defines them: merge-core writes what pypaimon and
pypaimon-rust read, reads what pypaimon writes, both writers append to one table in turn,
bucket-unaware (``bucket = -1``) and fixed buckets by ``bucket-key``, partitioned and not;
reads follow a plain-Python model of Paimon's order (partition, bucket, then the files in
sequence order, each file's rows as written), and the CLI does the same end to end."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import merge_core as mc
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from helpers import pypaimon_commit, pypaimon_rust_rows
from merge_core.paimon import _core_options

pypaimon = pytest.importorskip("pypaimon")
pytest.importorskip("pypaimon_rust")

SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.string()), ("v", pa.string()), ("n", pa.float64())])
# (partitioned, buckets): bucket-unaware and fixed buckets by bucket-key, with and without partitions.
LAYOUTS = [(False, -1), (True, -1), (False, 3), (True, 3)]
LAYOUT_IDS = ["unaware", "unaware-partitioned", "fixed", "fixed-partitioned"]


def _rows(seed: int, n: int, first_id: int) -> list[dict]:
    """``n`` rows with unique ids from ``first_id``, in no order, some values null."""
    rng = random.Random(seed)
    ids = list(range(first_id, first_id + n))
    rng.shuffle(ids)
    return [
        {
            "id": i,
            "day": rng.choice(["d1", "d2", "d3"]),
            "v": rng.choice([None, "a", "bb", f"s{i}"]),
            "n": rng.choice([None, rng.uniform(-5, 5)]),
        }
        for i in ids
    ]


def _options(buckets: int) -> dict[str, str]:
    return {"bucket": str(buckets), **({"bucket-key": "id"} if buckets > 0 else {})}


def _create(path: Path, partitioned: bool, buckets: int) -> mc.Table:
    options = {"bucket-key": "id"} if buckets > 0 else {}
    partition_by = ["day"] if partitioned else []
    return mc.Table.create(path, SCHEMA, key=None, partition_by=partition_by, buckets=buckets, options=options)


def _pypaimon_table(warehouse: Path, partitioned: bool, buckets: int):
    catalog = pypaimon.CatalogFactory.create({"warehouse": str(warehouse)})
    catalog.create_database("db", True)
    schema = pypaimon.Schema.from_pyarrow_schema(
        SCHEMA, partition_keys=["day"] if partitioned else None, options=_options(buckets)
    )
    catalog.create_table("db.t", schema, False)
    return catalog.get_table("db.t")


def _pypaimon_rows(root: Path) -> list[dict]:
    table = pypaimon.CatalogFactory.create({"warehouse": str(root.parent.parent)}).get_table("db.t")
    builder = table.new_read_builder()
    return builder.new_read().to_arrow(builder.new_scan().plan().splits()).to_pylist()


def _placement(table: mc.Table) -> dict[int, int]:
    """Each row's bucket, as the files hold them (read with pyarrow, not merge-core)."""
    out = {}
    for f in table.files():
        for i in pq.ParquetFile(Path(table.path) / f["path"]).read(columns=["id"]).column("id").to_pylist():
            out[i] = f["bucket"]
    return out


def _model(writes: list[list[dict]], partitioned: bool, bucket_of: dict[int, int]) -> list[dict]:
    """Paimon's batch read of an append table: partitions in order, each partition's
    buckets in order, each bucket's rows in the order they were written."""
    rows = [r for write in writes for r in write]
    return sorted(rows, key=lambda r: (r["day"] if partitioned else "", bucket_of[r["id"]]))


def _by_id(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: r["id"])


@pytest.mark.parametrize(("partitioned", "buckets"), LAYOUTS, ids=LAYOUT_IDS)
def test_paimon_readers_read_what_merge_core_writes(tmp_path, partitioned, buckets):
    root = tmp_path / "db.db" / "t"
    table = _create(root, partitioned, buckets)
    writes = [_rows(1, 40, 0), _rows(2, 30, 100)]
    for rows in writes:
        table.write(pa.Table.from_pylist(rows, schema=SCHEMA))

    expected = _model(writes, partitioned, _placement(table))
    assert table.read().read_all().to_pylist() == expected
    assert _by_id(_pypaimon_rows(root)) == _by_id(expected)
    assert _by_id(pypaimon_rust_rows(root)) == _by_id(expected)
    # Paimon's layout: level-0 files of the table's columns only, numbered as Paimon's writers do.
    files = table.files()
    assert {f["level"] for f in files} == {0}
    assert pq.read_schema(root / files[0]["path"]).names == SCHEMA.names
    if buckets == -1:
        assert {f["bucket"] for f in files} == {0}
        assert {f["min_sequence"] for f in files} == {0}  # every unaware write numbers from 0
    else:
        assert len({f["bucket"] for f in files}) == buckets
        assert max(f["max_sequence"] for f in files) > max(f["rows"] for f in files)  # the second write continued
    assert {p["buckets"] for p in table.partitions()} == {buckets}


@pytest.mark.parametrize(("partitioned", "buckets"), LAYOUTS, ids=LAYOUT_IDS)
def test_merge_core_reads_what_pypaimon_writes(tmp_path, partitioned, buckets):
    theirs = _pypaimon_table(tmp_path / "pypaimon", partitioned, buckets)
    writes = [_rows(3, 40, 0), _rows(4, 30, 100)]
    for rows in writes:
        pypaimon_commit(theirs, rows, SCHEMA)
    table = mc.Table.open(tmp_path / "pypaimon" / "db.db" / "t")

    assert table.read().read_all().to_pylist() == _model(writes, partitioned, _placement(table))
    # merge-core places each row in the bucket pypaimon placed it in.
    ours = _create(tmp_path / "ours" / "db.db" / "t", partitioned, buckets)
    for rows in writes:
        ours.write(pa.Table.from_pylist(rows, schema=SCHEMA))
    assert _placement(ours) == _placement(table)


@pytest.mark.parametrize(("partitioned", "buckets"), LAYOUTS, ids=LAYOUT_IDS)
def test_a_pypaimon_append_between_two_merge_core_appends(tmp_path, partitioned, buckets):
    root = tmp_path / "db.db" / "t"
    table = _create(root, partitioned, buckets)
    theirs = pypaimon.CatalogFactory.create({"warehouse": str(tmp_path)}).get_table("db.t")
    writes = [_rows(5, 25, 0), _rows(6, 25, 100), _rows(7, 25, 200)]
    table.write(pa.Table.from_pylist(writes[0], schema=SCHEMA))
    pypaimon_commit(theirs, writes[1], SCHEMA)
    table.write(pa.Table.from_pylist(writes[2], schema=SCHEMA))

    assert table.snapshots() == [1, 2, 3]
    expected = _model(writes, partitioned, _placement(table))
    assert table.read().read_all().to_pylist() == expected
    assert _by_id(_pypaimon_rows(root)) == _by_id(expected)
    assert _by_id(pypaimon_rust_rows(root)) == _by_id(expected)
    assert table.read(snapshot=2).read_all().num_rows == 50


def test_row_kinds_other_than_additions_are_refused_by_name_unless_ignored(tmp_path):
    table = mc.Table.create(tmp_path / "t", SCHEMA, key=None)
    rows = pa.Table.from_pylist(_rows(8, 4, 0), schema=SCHEMA)
    with pytest.raises(mc.InvalidInputError, match=r"-D rows.*ignore-delete"):
        table.write(rows.append_column("op", pa.array(["+I", "+U", "-D", "+I"])), row_kind="op")
    with pytest.raises(mc.InvalidInputError, match=r"-U rows"):
        table.write(rows.append_column("op", pa.array(["+I", "-U", "+U", "+I"])), row_kind="op")
    assert table.snapshots() == [] and not list((tmp_path / "t").glob("bucket-*/*.parquet"))
    table.write(rows.append_column("op", pa.array(["+I", "+U", "+U", "+I"])), row_kind="op")
    assert table.read().read_all() == rows

    ignoring = mc.Table.create(tmp_path / "i", SCHEMA, key=None, options={"ignore-delete": "true"})
    ignoring.write(rows.append_column("op", pa.array(["+I", "-U", "-D", "+U"])), row_kind="op")
    assert ignoring.read().read_all() == rows.take([0, 3])


def test_options_an_append_table_refuses_are_named(tmp_path):
    with pytest.raises(mc.UnsupportedFeatureError, match="deletion-vectors.enabled"):
        mc.Table.create(tmp_path / "dv", SCHEMA, key=None, options={"deletion-vectors.enabled": "true"})
    with pytest.raises(mc.InvalidInputError, match="bucket-key"):
        mc.Table.create(tmp_path / "b", SCHEMA, key=None, buckets=2)
    with pytest.raises(mc.InvalidInputError, match="changelog-producer"):
        mc.Table.create(tmp_path / "c", SCHEMA, key=None, options={"changelog-producer": "input"})
    with pytest.raises(mc.InvalidInputError, match="merges nothing"):
        mc.Table.create(tmp_path / "m", SCHEMA, key=None, merge="first-row")
    # Merge options mean nothing without a key: accepted, as Paimon accepts them.
    mc.Table.create(tmp_path / "ok", SCHEMA, key=None, options={"merge-engine": "first-row"})
    assert all(_core_options.lookup(name) for name in _core_options.APPEND)
    table = mc.Table.create(tmp_path / "t", SCHEMA, key=None)
    with pytest.raises(mc.UnsupportedFeatureError, match="primary key"):
        table.delete(pa.table({"id": [1]}))


def test_a_table_pypaimon_made_with_deletion_vectors_is_refused_by_name(tmp_path):
    catalog = pypaimon.CatalogFactory.create({"warehouse": str(tmp_path)})
    catalog.create_database("db", True)
    options = {"deletion-vectors.enabled": "true"}
    catalog.create_table("db.t", pypaimon.Schema.from_pyarrow_schema(SCHEMA, options=options), False)
    pypaimon_commit(catalog.get_table("db.t"), _rows(9, 5, 0), SCHEMA)
    table = mc.Table.open(tmp_path / "db.db" / "t")
    with pytest.raises(mc.UnsupportedFeatureError, match="deletion-vectors.enabled"):
        table.read()
    with pytest.raises(mc.UnsupportedFeatureError, match="deletion-vectors.enabled"):
        table.write(pa.Table.from_pylist(_rows(9, 5, 10), schema=SCHEMA))


@pytest.mark.parametrize(("partitioned", "buckets"), LAYOUTS, ids=LAYOUT_IDS)
def test_compaction_rewrites_small_files_in_order(tmp_path, partitioned, buckets):
    root = tmp_path / "db.db" / "t"
    table = _create(root, partitioned, buckets)
    writes = [_rows(10 + i, 12, 100 * i) for i in range(5)]
    for rows in writes:
        table.write(pa.Table.from_pylist(rows, schema=SCHEMA))
    before = table.read().read_all()
    files_before = len(table.files())

    result = table.compact()  # five writes: every bucket that took all five has its five small files
    after = table.files()
    assert result["files_merged"] > 0 and len(after) < files_before
    assert table.snapshot().commit_kind == "COMPACT"
    assert table.read().read_all() == before
    assert table.compact(full=True)["files_merged"] >= 0
    assert len(table.files()) == len({(f["partition"], f["bucket"]) for f in table.files()})
    assert table.read().read_all() == before
    assert _by_id(_pypaimon_rows(root)) == _by_id(before.to_pylist())
    assert _by_id(pypaimon_rust_rows(root)) == _by_id(before.to_pylist())
    assert table.compact(full=True)["files_merged"] == 0  # one file per bucket already


def test_filters_skip_files_and_equal_the_read_filtered_afterwards(tmp_path):
    table = mc.Table.create(tmp_path / "t", SCHEMA, key=None, partition_by="day")
    for i in range(4):
        table.write(pa.Table.from_pylist(_rows(20 + i, 20, 100 * i), schema=SCHEMA))
    everything = table.read().read_all()
    for condition in (pc.field("id") >= 300, (pc.field("day") == "d2") & pc.field("v").is_null(), pc.field("n") < 0):
        stream = table.read(filter=condition)
        assert stream.read_all() == everything.filter(condition)
    skipping = table.read(filter=pc.field("id") >= 300)
    skipping.read_all()
    assert skipping.stats["files_skipped_by_value_stats"] == skipping.stats["files_total"] - 3

    # Fixed buckets: a point lookup on the bucket key opens the one bucket the key hashes to.
    fixed = _create(tmp_path / "f", False, 4)
    rows = _rows(24, 40, 0)
    fixed.write(pa.Table.from_pylist(rows, schema=SCHEMA))
    lookup = fixed.read(filter=pc.field("id") == 7)
    assert lookup.read_all().to_pylist() == [r for r in rows if r["id"] == 7]
    assert lookup.stats["buckets_skipped_by_filter"] == 3 and lookup.stats["files_read"] == 1


def test_schema_changes_read_older_files_as_paimon_does(tmp_path):
    root = tmp_path / "db.db" / "t"
    table = mc.Table.create(root, SCHEMA, key=None)
    first = _rows(30, 5, 0)
    table.write(pa.Table.from_pylist(first, schema=SCHEMA))
    table.add_column("extra", pa.int32())
    table.rename_column("v", "text")
    second = [{**r, "extra": 7} for r in _rows(31, 5, 10)]
    renamed = [{"id": r["id"], "day": r["day"], "text": r["v"], "n": r["n"], "extra": r["extra"]} for r in second]
    table.write(pa.Table.from_pylist(renamed, schema=table.schema))
    expected = [{"id": r["id"], "day": r["day"], "text": r["v"], "n": r["n"], "extra": None} for r in first] + renamed
    assert table.read().read_all().to_pylist() == expected
    assert _by_id(pypaimon_rust_rows(root)) == _by_id(expected)


def test_overwrites_tags_time_travel_rollback_and_expire_work_as_for_keyed_tables(tmp_path):
    root = tmp_path / "db.db" / "t"
    table = mc.Table.create(root, SCHEMA, key=None, partition_by="day", options={"merge-engine": "first-row"})
    first, second = _rows(50, 20, 0), _rows(51, 20, 100)
    table.write(pa.Table.from_pylist(first, schema=SCHEMA))  # merge options mean nothing here: all rows read
    table.create_tag("first")
    table.write(pa.Table.from_pylist(second, schema=SCHEMA))
    d1 = [r for r in second if r["day"] == "d1"]
    table.write(pa.Table.from_pylist(d1, schema=SCHEMA), overwrite={"day": "d1"})
    kept = [r for r in first + second if r["day"] != "d1"]
    now = table.read().read_all().to_pylist()
    assert _by_id(now) == _by_id(kept + d1)
    assert table.snapshot().commit_kind == "OVERWRITE"
    assert _by_id(pypaimon_rust_rows(root)) == _by_id(now)
    assert table.read(tag="first").read_all().to_pylist() == _model([first], True, {r["id"]: 0 for r in first})
    table.rollback_to(snapshot=2)
    assert _by_id(table.read().read_all().to_pylist()) == _by_id(first + second)
    assert table.expire(keep_snapshots=1, orphan_age=0)["snapshots_removed"] == 1
    assert _by_id(table.read().read_all().to_pylist()) == _by_id(first + second)
    assert _by_id(table.read(tag="first").read_all().to_pylist()) == _by_id(first)  # the tag keeps its files


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """merge-core's CLI, run from the package under test."""
    env = {**os.environ, "PYTHONPATH": str(Path(mc.__file__).parent.parent)}
    code = "import sys; from merge_core.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300
    )


def test_the_cli_creates_writes_reads_and_compacts_an_append_table(tmp_path):
    writes = [_rows(40 + i, 30, 100 * i) for i in range(5)]
    for i, rows in enumerate(writes):
        pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), tmp_path / f"{i}.parquet")

    created = _cli("table", "create", "lake/db.db/t", "--like", "0.parquet", "--partition-by", "day", cwd=tmp_path)
    assert created.returncode == 0, created.stderr
    assert "append table" in created.stdout and "bucket-unaware" in created.stdout
    files = [f"{i}.parquet" for i in range(5)]
    written = _cli("table", "write", "lake/db.db/t", *files, cwd=tmp_path)
    assert written.returncode == 0, written.stderr
    assert written.stdout.count("snapshot") == 5
    read = _cli("table", "read", "lake/db.db/t", "-o", "out.parquet", cwd=tmp_path)
    assert read.returncode == 0, read.stderr
    table = mc.Table.open(tmp_path / "lake" / "db.db" / "t")
    expected = _model(writes, True, _placement(table))
    assert pq.read_table(tmp_path / "out.parquet").to_pylist() == expected
    info = _cli("table", "info", "lake/db.db/t", cwd=tmp_path)
    assert info.returncode == 0, info.stderr
    assert "append table" in info.stdout and "merge:" not in info.stdout
    compacted = _cli("table", "compact", "lake/db.db/t", cwd=tmp_path)
    assert compacted.returncode == 0, compacted.stderr
    assert len(table.files()) == 3  # one file per partition
    assert table.read().read_all().to_pylist() == expected

    fixed = _cli(
        "table", "create", "lake/db.db/f", "--like", "0.parquet", "--buckets", "2", "--option", "bucket-key=id",
        cwd=tmp_path,
    )  # fmt: skip
    assert fixed.returncode == 0 and "2 buckets" in fixed.stdout, fixed.stderr
    keyless = _cli("table", "create", "lake/db.db/g", "--like", "0.parquet", "--buckets", "2", cwd=tmp_path)
    assert keyless.returncode != 0 and "bucket-key" in keyless.stderr
    merged = _cli("table", "create", "lake/db.db/h", "--like", "0.parquet", "--merge", "first-row", cwd=tmp_path)
    assert merged.returncode != 0 and "--merge" in merged.stderr and "--key" in merged.stderr
