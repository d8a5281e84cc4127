"""What a deletion-vector table's writes keep from one write to the next, and what they
no longer rewrite: the rows of the files above level 0 stay decoded in the Table
(``_file_rows``), and a write into an empty bucket moves its level-0 file to the top
level as it is, as Paimon's lookup rewriter upgrades it. A kept row must never be
served for a file that changed: after every write merge-core, pypaimon and
pypaimon-rust read the rows of a plain-Python model."""

from __future__ import annotations

import os
from pathlib import Path

import merge_core as mc
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from helpers import pypaimon_commit
from merge_core.errors import CorruptTableError
from merge_core.fs import LocalStore
from merge_core.paimon._file_rows import FileRows
from test_expire import catalog, identifier
from test_paimon_dv_write import KIND, SCHEMA, as_tuples, check_layout, deletion_vectors, peers_read, write_rows

pytest.importorskip("pypaimon")
pytest.importorskip("pypaimon_rust")

DV = {"deletion-vectors.enabled": "true"}
SUM = mc.Aggregate({"v": "sum"})  # a row found above is merged in: a stale one would show


def rows(keys, v: int, w: str) -> list[dict]:
    return [{"k": k, "p": "a", "v": v, "w": w, KIND: "+I"} for k in keys]


class Model:
    """Each key's row after the writes so far, for the aggregation above (v sums, w last non-null)."""

    def __init__(self) -> None:
        self.rows: dict[int, dict] = {}

    def add(self, new: list[dict]) -> None:
        for r in new:
            old = self.rows.get(r["k"])
            v = r["v"] if old is None else old["v"] + r["v"]
            self.rows[r["k"]] = {"k": r["k"], "p": r["p"], "v": v, "w": r["w"]}

    def expected(self) -> list[tuple]:
        return as_tuples(list(self.rows.values()))


def write_modelled(table: mc.Table, model: Model, rows: list[dict]) -> None:
    """Writes ``rows`` to ``table`` and adds them to its ``model``."""
    write_rows(table, rows)
    model.add(rows)


def all_read(root: Path, model: Model) -> None:
    mine, py, rust = peers_read(root)
    assert mine == py == rust == model.expected()
    check_layout(root)


def test_the_file_rows_follow_the_file_on_disk(tmp_path):
    path = str(tmp_path / "data-1.parquet")
    pq.write_table(pa.table({"k": [1, 2]}), path)
    held, store = FileRows(), LocalStore()
    assert held.rows(store, path).column("k").to_pylist() == [1, 2]
    assert held.rows(store, path).column("k").to_pylist() == [1, 2]
    assert held.stats()["hits"] == 1
    pq.write_table(pa.table({"k": [7, 8]}), path)  # rewritten in place (same size and inode)
    assert held.rows(store, path).column("k").to_pylist() == [7, 8], "a file rewritten at its path is read again"
    pq.write_table(pa.table({"k": [5, 6]}), str(tmp_path / "new.parquet"))
    os.replace(tmp_path / "new.parquet", path)  # another file put at its path
    assert held.rows(store, path).column("k").to_pylist() == [5, 6], "a file replaced at its path is read again"
    held.retain({"data-2.parquet"})
    assert held.stats()["entries"] == 0, "a file no longer live is let go"
    os.remove(path)
    with pytest.raises(CorruptTableError, match="data-1.parquet is missing"):
        held.rows(store, path)
    small = FileRows(budget=1)
    pq.write_table(pa.table({"k": [1, 2]}), path)
    assert small.rows(store, path).num_rows == 2 and small.stats()["entries"] == 0, "past the budget: not kept"


def test_a_file_without_room_is_declined_and_the_files_held_stay(tmp_path):
    """Files met in the same order write after write: evicting the oldest to make room
    would miss every time; a file that does not fit is declined instead (read by the
    caller) until a file held is no longer live."""
    store = LocalStore()
    paths = [str(tmp_path / f"data-{i}.parquet") for i in range(2)]
    for path in paths:
        pq.write_table(pa.table({"k": list(range(100))}), path)
    size = pq.read_table(paths[0]).nbytes
    held = FileRows(budget=size + size // 2)  # room for one
    assert held.rows(store, paths[0]).num_rows == 100
    assert held.rows(store, paths[1]).num_rows == 100, "decoded once, not kept"
    assert held.rows(store, paths[1]) is None, "declined: the caller reads it itself"
    assert held.rows(store, paths[0]) is not None and held.stats()["hits"] == 1, "the file held stays"
    assert held.stats()["entries"] == 1 and held.stats()["declined"] == 1
    held.retain({"data-1.parquet"})  # the held file is no longer live: room for the declined one
    assert held.rows(store, paths[1]).num_rows == 100
    assert held.stats()["entries"] == 1 and held.stats()["declined"] == 0
    assert held.rows(store, paths[1]) is not None and held.stats()["hits"] == 2


def test_later_writes_take_the_rows_found_from_the_files_kept(tmp_path):
    root = tmp_path / "db.db" / "t"
    table = mc.Table.create(root, SCHEMA, key=["k", "p"], buckets=2, merge=SUM, options=DV)
    model = Model()
    for i, keys in enumerate([range(0, 400), range(0, 400, 3), range(1, 500, 7), range(0, 400, 2)]):
        batch = rows(keys, i + 1, f"w{i}")
        write_modelled(table, model, batch)
        all_read(root, model)
    assert table._file_rows.stats()["hits"] > 0, "the writes found rows in files they kept"


def test_a_pypaimon_write_and_another_tables_compaction_between_writes(tmp_path):
    root = tmp_path / "db.db" / "t"
    table = mc.Table.create(root, SCHEMA, key=["k", "p"], buckets=1, merge=SUM, options=DV)
    model = Model()
    first = rows(range(300), 1, "mc1")
    write_modelled(table, model, first)
    write_modelled(table, model, rows(range(0, 300, 5), 10, "mc2"))
    # pypaimon's rows land at level 0, and pypaimon writes no deletion vectors: the next
    # merge-core write compacts them with its own.
    theirs = [{"k": k, "p": "a", "v": 100, "w": "py"} for k in range(0, 300, 4)]
    pypaimon_commit(catalog(root).get_table(identifier(root)), theirs, SCHEMA)
    model.add([{**r, KIND: "+I"} for r in theirs])
    write_modelled(table, model, rows(range(0, 300, 6), 1000, "mc3"))
    all_read(root, model)
    mc.Table.open(root).compact(full=True)  # another Table object rewrites every file the first holds
    write_modelled(table, model, rows(range(0, 300, 7), 5000, "mc4"))
    all_read(root, model)


def test_a_file_replaced_at_its_path_is_not_taken_from_the_rows_kept(tmp_path):
    root = tmp_path / "db.db" / "t"
    table = mc.Table.create(root, SCHEMA, key=["k", "p"], buckets=1, merge=SUM, options=DV)
    model = Model()
    for i, keys in enumerate([range(2000), range(0, 2000, 50)]):  # a big file at the top, a small one below
        write_modelled(table, model, rows(keys, i + 1, f"w{i}"))
    all_read(root, model)
    (top,) = [f["path"] for f in table.files() if f["level"] == 5]
    assert table._file_rows.stats()["entries"] == 2, "the top file met by the lookup, the file written below"
    # Every file of the table restored at its path with other values (a restore, a
    # hand-made repair: not what Paimon's writers do, but what a reader sees).
    for f in table.files():
        path = root / f["path"]
        data = pq.read_table(path)
        raised = data.set_column(data.schema.get_field_index("v"), "v", pc.add(data.column("v"), 1_000_000))
        pq.write_table(raised, path.with_suffix(".tmp"), compression="zstd")
        os.replace(path.with_suffix(".tmp"), path)
    live = mc.Table.open(root).read().read_all().to_pylist()
    model.rows = {r["k"]: r for r in live}
    write_modelled(table, model, rows(range(0, 2000, 40), 7, "after"))
    assert top in {f["path"] for f in table.files()}, "the top file stayed: its rows were looked up"
    # (The peers go by the sizes and statistics the manifests hold, which no longer fit the files.)
    assert as_tuples(table.read().read_all().to_pylist()) == model.expected()


def test_a_write_into_an_empty_bucket_moves_its_file_up_unchanged(tmp_path):
    root = tmp_path / "db.db" / "t"
    table = mc.Table.create(root, SCHEMA, key=["k", "p"], buckets=2, merge=SUM, options=DV)
    model = Model()
    write_modelled(table, model, rows(range(100), 1, "one"))
    appended, compacted = table.snapshots()
    level_zero = {f["path"]: f["level"] for f in table.files(appended)}
    top = {f["path"]: f["level"] for f in table.files(compacted)}
    assert set(level_zero.values()) == {0} and set(top.values()) == {5}
    assert top.keys() == level_zero.keys(), "the same files, a level up (Paimon's upgrade)"
    all_read(root, model)
    write_modelled(table, model, rows(range(0, 100, 2), 2, "two"))  # a bucket that has files: merged, rewritten
    assert not {f["path"] for f in table.files() if f["level"] == 4} & level_zero.keys()
    all_read(root, model)


def test_a_first_write_with_deletes_is_rewritten(tmp_path):
    root = tmp_path / "db.db" / "t"
    table = mc.Table.create(root, SCHEMA, key=["k", "p"], buckets=1, options=DV)
    write_rows(table, [*rows(range(10), 1, "x"), {"k": 50, "p": "a", "v": 1, "w": "x", KIND: "-D"}])
    appended, compacted = table.snapshots()
    assert {f["path"] for f in table.files(appended)}.isdisjoint(f["path"] for f in table.files(compacted))
    assert [f["delete_rows"] for f in table.files()] == [0], "the delete dropped at the top level"
    mine, py, rust = peers_read(root)
    assert mine == py == rust == sorted((k, "a", 1, "x") for k in range(10))


def test_a_failed_compaction_commit_keeps_the_upgraded_file(tmp_path, monkeypatch):
    from merge_core.paimon import _commit

    root = tmp_path / "db.db" / "t"
    table = mc.Table.create(root, SCHEMA, key=["k", "p"], buckets=1, merge=SUM, options=DV)
    real = _commit.Committer.commit_changes

    def fails_to_compact(self, kind, changes):
        if kind == "COMPACT":
            raise OSError("the disk went away")
        return real(self, kind, changes)

    monkeypatch.setattr(_commit.Committer, "commit_changes", fails_to_compact)
    with pytest.raises(OSError, match="went away"):
        write_rows(table, rows(range(20), 1, "one"))
    monkeypatch.undo()
    (appended,) = table.snapshots()
    for f in table.files(appended):  # the append landed: its file must stay
        assert (root / f["path"]).exists()
    model = Model()  # (a batch read of the table skips level 0 until a compaction lands)
    model.add(rows(range(20), 1, "one"))
    write_modelled(table, model, rows(range(0, 20, 2), 2, "two"))  # the next write compacts both
    all_read(root, model)


def test_a_snapshot_id_taken_again_after_a_rollback_is_read_afresh(tmp_path):
    # The Table keeps the live files of the snapshot it read last, by id and manifest lists:
    # after a rollback another writer's snapshot may take an id it read before.
    root = tmp_path / "db.db" / "t"
    table = mc.Table.create(root, SCHEMA, key=["k", "p"], buckets=1, merge=SUM, options=DV)
    model = Model()
    write_modelled(table, model, rows(range(100), 1, "a"))
    write_rows(table, rows(range(0, 100, 2), 10, "b"))  # snapshots 3 (its append) and 4
    table.rollback_to(2)
    theirs = [{"k": k, "p": "a", "v": 100, "w": "py"} for k in range(0, 100, 3)]
    pypaimon_commit(catalog(root).get_table(identifier(root)), theirs, SCHEMA)  # snapshot 3 again
    model.add([{**r, KIND: "+I"} for r in theirs])
    write_modelled(table, model, rows(range(0, 100, 5), 1000, "c"))
    all_read(root, model)


def test_the_rows_kept_stay_within_lookup_cache_max_memory_size(tmp_path):
    # Paimon's budget of its lookup cache is the budget of the rows a Table keeps decoded.
    held = {}
    for budget in ("256 mb", "20 kb"):
        root = tmp_path / budget.replace(" ", "") / "db.db" / "t"
        options = {**DV, "lookup.cache-max-memory-size": budget}
        table = mc.Table.create(root, SCHEMA, key=["k", "p"], buckets=1, merge=SUM, options=options)
        model = Model()
        for i, keys in enumerate([range(3000), range(0, 3000, 7), range(0, 3000, 11)]):
            write_modelled(table, model, rows(keys, i + 1, f"w{i}"))
        all_read(root, model)
        held[budget] = table._file_rows.stats()["bytes"]
    assert held["256 mb"] > 20 * 1024, held  # the files above level 0 are held whole...
    assert 0 < held["20 kb"] <= 20 * 1024, held  # ...or as many as the budget takes
    table.set_options({"lookup.cache-max-memory-size": "0 b"})
    write_modelled(table, model, rows(range(0, 3000, 13), 4, "w3"))
    all_read(root, model)
    assert table._file_rows.stats()["bytes"] == 0


class LastModel(Model):
    """Each key's newest row (deduplicate)."""

    def add(self, new: list[dict]) -> None:
        for r in new:
            self.rows[r["k"]] = {"k": r["k"], "p": r["p"], "v": r["v"], "w": r["w"]}


def levels_by_name(table: mc.Table, snapshot: int | None = None) -> dict[str, int]:
    return {f["path"].split("/")[-1]: f["level"] for f in table.files(snapshot)}


@pytest.mark.parametrize("sequence_field", [False, True])
def test_a_deduplicate_write_alone_in_its_pick_moves_up_unchanged_and_hides_the_rows_above(tmp_path, sequence_field):
    """Paimon's lookup rewriter upgrades a lone level-0 file of a deduplicate table without
    a sequence field to any level (``CHANGELOG_NO_REWRITE``): its rows are the newest, the
    rows above with its keys are only marked deleted. With a sequence field (an older row
    may win) it is merged and rewritten."""
    root = tmp_path / "db.db" / "t"
    options = {**DV, "sequence.field": "v"} if sequence_field else DV
    table = mc.Table.create(root, SCHEMA, key=["k", "p"], buckets=1, options=options)
    model = LastModel()
    versions = [range(3000), range(0, 3000, 3), range(1, 3000, 7), range(0, 3000, 2), range(0, 3000, 11)]
    upgraded = []
    for i, keys in enumerate(versions):
        write_modelled(table, model, rows(keys, i + 1, f"w{i}"))  # v grows: the sequence field agrees
        appended, compacted = table.snapshots()[-2:]
        before = levels_by_name(table, appended - 1) if appended > 1 else {}
        (written,) = levels_by_name(table, appended).keys() - before.keys()
        after = levels_by_name(table, compacted)
        if written in after:
            upgraded.append(after[written])
        all_read(root, model)
    if sequence_field:
        assert upgraded == [5], "only the first write, into the empty bucket, goes up unchanged"
    else:
        assert upgraded == [5, 4, 3, 4][: len(upgraded)] and len(upgraded) >= 3, upgraded
        marked = deletion_vectors(root)
        assert marked, "the rows the upgraded files replace are marked, not rewritten"
