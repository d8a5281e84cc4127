"""``Table.expire`` on a shared table: what tags, branches, consumers and other writers'
files need stays (pypaimon and pypaimon-rust read them afterwards), which snapshots expire
follows Paimon's options, and two expires racing each other never call the table corrupt."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import time
from pathlib import Path

import merge_core as mc
import pyarrow as pa
import pytest
from helpers import pypaimon_commit, pypaimon_rust_rows

pypaimon = pytest.importorskip("pypaimon")
pytest.importorskip("pypaimon_rust")

SCHEMA = pa.schema([pa.field("k", pa.int64(), False), ("v", pa.int64())])


def rows_of(table: pa.Table) -> list[tuple]:
    return sorted((r["k"], r["v"]) for r in table.to_pylist())


def catalog(root: Path):
    return pypaimon.CatalogFactory.create({"warehouse": str(root.parent.parent)})


def identifier(root: Path) -> str:
    return f"{root.parent.name[:-3]}.{root.name}"


def pypaimon_read(root: Path, options: dict[str, str] | None = None, branch: str | None = None) -> list[tuple]:
    name = identifier(root) + (f"$branch_{branch}" if branch else "")
    table = catalog(root).get_table(name)
    if options:
        table = table.copy(options)
    builder = table.new_read_builder()
    return rows_of(builder.new_read().to_arrow(builder.new_scan().plan().splits()))


def history(root: Path, commits: int = 3) -> tuple[mc.Table, dict[int, list[tuple]]]:
    """A table of ``commits`` writes, each updating every key; the rows of each snapshot.
    write-only: one snapshot per write (no write's own COMPACT), as the tests count them."""
    table = mc.Table.create(root, SCHEMA, key="k", buckets=2, options={"write-only": "true"})
    seen = {}
    for i in range(commits):
        snapshot = table.write(pa.table({"k": list(range(8)), "v": [i] * 8}, schema=SCHEMA))["snapshot"]
        seen[snapshot] = rows_of(table.read(snapshot=snapshot).read_all())
    return table, seen


def test_a_tag_keeps_its_files_through_compaction_and_expire(tmp_path):
    root = tmp_path / "db.db" / "t"
    table, seen = history(root)
    catalog(root).create_tag(identifier(root), "t1", snapshot_id=1)
    table.compact(full=True)
    result = table.expire(keep_snapshots=1, orphan_age=0)
    assert result["snapshots_removed"] == 3
    assert pypaimon_read(root, {"scan.tag-name": "t1"}) == seen[1]
    assert rows_of(table.read().read_all()) == seen[3]
    # Once the tag goes, the next expire may take its files.
    catalog(root).delete_tag(identifier(root), "t1")
    assert table.expire(keep_snapshots=1, orphan_age=0)["files_removed"] > 0
    assert rows_of(table.read().read_all()) == seen[3]


def test_a_branch_keeps_its_files_after_its_tag_is_gone(tmp_path):
    root = tmp_path / "db.db" / "t"
    table, seen = history(root)
    cat = catalog(root)
    cat.create_tag(identifier(root), "t2", snapshot_id=2)
    cat.create_branch(identifier(root), "b1", tag_name="t2")
    cat.delete_tag(identifier(root), "t2")
    table.compact(full=True)
    table.expire(keep_snapshots=1, orphan_age=0)
    assert pypaimon_read(root, branch="b1") == seen[2]
    assert rows_of(table.read().read_all()) == seen[3]


def test_a_consumer_keeps_the_snapshots_it_has_still_to_read(tmp_path):
    root = tmp_path / "db.db" / "t"
    table, seen = history(root, commits=5)
    (root / "consumer").mkdir()
    (root / "consumer" / "consumer-job").write_text(json.dumps({"nextSnapshot": 3}))
    assert table.expire(keep_snapshots=1, orphan_age=0)["snapshots_removed"] == 2
    assert table.snapshots() == [3, 4, 5]
    for snapshot in (3, 4):
        assert rows_of(table.read(snapshot=snapshot).read_all()) == seen[snapshot]
        assert rows_of(pa.Table.from_pylist(pypaimon_rust_rows(root, snapshot))) == seen[snapshot]


@pytest.mark.parametrize(
    ("options", "ages", "kept"),
    [
        ({}, [0] * 12, list(range(1, 13))),  # Paimon's defaults: all within the hour
        ({}, [7200] * 12, list(range(3, 13))),  # Paimon's defaults: at least 10 kept
        ({"snapshot.num-retained.min": "2"}, [0] * 6, list(range(1, 7))),  # all within the hour
        ({"snapshot.num-retained.min": "2"}, [7200] * 3 + [0] * 3, [3, 4, 5, 6]),  # 3's successor is new
        ({"snapshot.num-retained.min": "2", "snapshot.time-retained": "10 min"}, [700] * 5 + [0], [5, 6]),
        ({"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "3"}, [0] * 6, [4, 5, 6]),
        (
            {"snapshot.num-retained.min": "1", "snapshot.expire.limit": "2", "snapshot.time-retained": "0"},
            [0] * 6,
            [3, 4, 5, 6],
        ),
    ],
)
def test_which_snapshots_expire_follows_paimons_options(tmp_path, options, ages, kept):
    """``ages``: each snapshot's age in seconds, set in its file as Paimon's expire reads it.
    write-only: one snapshot per write (no write's own COMPACT), as ``kept`` counts them."""
    root = tmp_path / "db.db" / "t"
    table = mc.Table.create(root, SCHEMA, key="k", buckets=1, options={**options, "write-only": "true"})
    now = time.time()
    for i, age in enumerate(ages):
        snapshot = table.write(pa.table({"k": [i], "v": [i]}, schema=SCHEMA))["snapshot"]
        path = root / "snapshot" / f"snapshot-{snapshot}"
        document = json.loads(path.read_text())
        document["timeMillis"] = int((now - age) * 1000)
        path.write_text(json.dumps(document))
    table.expire(orphan_age=0)
    assert table.snapshots() == kept
    assert rows_of(table.read().read_all()) == [(i, i) for i in range(len(ages))]


def test_files_of_another_writers_layout_are_kept(tmp_path):
    """pypaimon's postponed-bucket files (``bucket-postpone/``) and timestamp partitions:
    expire never decides from a path it recomputes, so it keeps what the manifests name."""
    cat = pypaimon.CatalogFactory.create({"warehouse": str(tmp_path)})
    cat.create_database("db", True)
    schema = pa.schema([pa.field("k", pa.int64(), False), pa.field("p", pa.timestamp("us"), False), ("v", pa.int64())])
    for name, bucket in (("postponed", "-2"), ("fixed", "2")):
        paimon_schema = pypaimon.Schema.from_pyarrow_schema(
            schema, partition_keys=["p"], primary_keys=["p", "k"], options={"bucket": bucket}
        )
        cat.create_table(f"db.{name}", paimon_schema, False)
        rows = [
            {"k": k, "p": pa.scalar(1704067200000000 + k % 2, pa.timestamp("us")).as_py(), "v": k} for k in range(6)
        ]
        pypaimon_commit(cat.get_table(f"db.{name}"), rows, schema)
        root = tmp_path / "db.db" / name
        before = sorted(p.relative_to(root) for p in root.rglob("data-*"))
        assert before
        mc.Table.open(root).expire(keep_snapshots=1, orphan_age=0)
        assert sorted(p.relative_to(root) for p in root.rglob("data-*")) == before


def test_a_layout_it_does_not_understand_is_refused_before_anything_goes(tmp_path):
    root = tmp_path / "db.db" / "t"
    table, _ = history(root)
    live = root / table.files()[0]["path"]
    elsewhere = root / "somewhere-else"
    elsewhere.mkdir()
    shutil.move(live, elsewhere / live.name)
    before = sorted(p for p in root.rglob("*") if p.is_file())
    with pytest.raises(mc.UnsupportedFeatureError, match="nothing was removed"):
        table.expire(keep_snapshots=1, orphan_age=0)
    assert sorted(p for p in root.rglob("*") if p.is_file()) == before


def test_a_missing_manifest_of_a_kept_snapshot_is_corruption_not_a_race(tmp_path):
    root = tmp_path / "db.db" / "t"
    table, _ = history(root)
    latest = json.loads((root / "snapshot" / "snapshot-3").read_text())
    (root / "manifest" / latest["deltaManifestList"]).unlink()
    before = sorted(p for p in root.rglob("*") if p.is_file())
    with pytest.raises(mc.CorruptTableError, match=latest["deltaManifestList"]):
        table.expire(keep_snapshots=1, orphan_age=0)
    assert sorted(p for p in root.rglob("*") if p.is_file()) == before


def _expire_in_a_loop(root: str, rounds: int, errors: multiprocessing.Queue) -> None:
    table = mc.Table.open(root)
    for _ in range(rounds):
        try:
            table.expire(keep_snapshots=1)  # files of writes in progress are young: they stay
        except mc.CommitConflictError:
            pass
        except Exception as e:  # noqa: BLE001 - reported to the test
            errors.put(f"{type(e).__name__}: {e}")
            return


def test_expires_racing_each_other_and_a_writer_never_call_the_table_corrupt(tmp_path):
    root = tmp_path / "db.db" / "t"
    table = mc.Table.create(root, SCHEMA, key="k", buckets=2)
    context = multiprocessing.get_context("spawn")
    errors = context.Queue()
    expirers = [context.Process(target=_expire_in_a_loop, args=(str(root), 150, errors)) for _ in range(2)]
    for p in expirers:
        p.start()
    writes = 0
    while any(p.is_alive() for p in expirers) and writes < 200:
        table.write(pa.table({"k": [writes % 8], "v": [writes]}, schema=SCHEMA))
        writes += 1
    for p in expirers:
        p.join(120)
    found = []
    while not errors.empty():
        found.append(errors.get())
    assert found == [] and all(p.exitcode == 0 for p in expirers)
    got = dict(rows_of(table.read().read_all()))
    assert got == {k: max(w for w in range(writes) if w % 8 == k) for k in range(min(writes, 8))}
    assert writes > 20 and os.listdir(root / "snapshot")
