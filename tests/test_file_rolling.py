"""Data files rolled as Paimon's rolling writer rolls them: a write's level-0 files and a
compaction's run are cut into files of about ``target-file-size`` bytes (a write also at
``target-file-row-num`` rows), each holding a key range of its run. Checked on the files
themselves (sizes, rows, key ranges) and by what merge-core, pypaimon and pypaimon-rust
read, against a plain-Python model of the rows."""

from __future__ import annotations

import merge_core as mc
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from merge_core.errors import TableIOError
from merge_core.paimon import _write
from test_universal_compaction import SCHEMA, peers, tuples

pytest.importorskip("pypaimon")
pytest.importorskip("pypaimon_rust")

TARGET = 48 * 1024


def rows(keys: range, tag: str) -> pa.Table:
    # Strings that compress about as table data does: neither all alike nor random.
    return pa.Table.from_pylist(
        [{"k": k, "v": k * 3, "w": f"{tag}-{(k * 7919) % 100_003:06d}-{k % 97}"} for k in keys], schema=SCHEMA
    )


def model_of(*tables: pa.Table) -> list[tuple]:
    newest = {}
    for t in tables:
        for r in t.to_pylist():
            newest[r["k"]] = r
    return tuples(newest.values())


def key_ranges(table: mc.Table, files: list[dict]) -> list[tuple[int, int]]:
    """Each file's (first, last) key, read from the file itself."""
    out = []
    for f in files:
        keys = pq.read_table(str(table.path) + "/" + f["path"], columns=["k"]).column("k").to_pylist()
        assert keys == sorted(set(keys)), f["path"]  # a data file holds its keys in order, each once
        out.append((keys[0], keys[-1]))
    return out


def check_run(table: mc.Table, files: list[dict], target: int) -> None:
    """``files`` are one run cut at ``target`` bytes: every file but the last is about that
    size (estimated while encoding: within a factor of 1.6 either way), and their key
    ranges follow one another."""
    sizes = [f["bytes"] for f in sorted(files, key=lambda f: f["min_sequence"])]
    assert len(sizes) >= 3, sizes
    assert all(target / 1.6 <= s <= target * 1.6 for s in sizes[:-1]), sizes
    assert sizes[-1] <= target * 1.6, sizes
    ranges = sorted(key_ranges(table, files))
    assert all(a[1] < b[0] for a, b in zip(ranges, ranges[1:], strict=False)), ranges


def test_a_write_rolls_its_level_zero_files_at_the_target_size(tmp_path):
    root = tmp_path / "db.db" / "t"
    options = {"target-file-size": f"{TARGET // 1024} kb", "write-only": "true"}
    table = mc.Table.create(root, SCHEMA, key="k", buckets=1, options=options)
    data = rows(range(40_000), "a")
    table.write(data)
    files = table.files()
    assert {f["level"] for f in files} == {0}
    check_run(table, files, TARGET)
    assert sum(f["rows"] for f in files) == 40_000
    mine, theirs, rust = peers(root)
    assert mine == theirs == rust == model_of(data)


def test_a_write_rolls_at_the_target_row_count_too(tmp_path):
    root = tmp_path / "db.db" / "t"
    options = {"target-file-row-num": "1000", "write-only": "true"}
    table = mc.Table.create(root, SCHEMA, key="k", buckets=1, options=options)
    data = rows(range(3_500), "a")
    table.write(data)
    files = sorted(table.files(), key=lambda f: f["min_sequence"])
    assert [f["rows"] for f in files] == [1000, 1000, 1000, 500]
    assert key_ranges(table, files) == [(0, 999), (1000, 1999), (2000, 2999), (3000, 3499)]
    # A compaction rolls by size only, as Paimon's: one file at the default 128 MB.
    table.compact(full=True)
    assert [f["rows"] for f in table.files()] == [3_500]
    mine, theirs, rust = peers(root)
    assert mine == theirs == rust == model_of(data)


def test_a_compaction_rolls_its_run(tmp_path):
    root = tmp_path / "db.db" / "t"
    options = {"target-file-size": f"{TARGET // 1024} kb", "write-only": "true"}
    table = mc.Table.create(root, SCHEMA, key="k", buckets=1, options=options)
    first, second = rows(range(0, 40_000, 2), "a"), rows(range(0, 40_000, 3), "b")
    table.write(first)
    table.write(second)
    table.compact(full=True)
    files = table.files()
    (level,) = {f["level"] for f in files}
    assert level > 0
    check_run(table, files, TARGET)
    mine, theirs, rust = peers(root)
    assert mine == theirs == rust == model_of(first, second)


def test_a_deletion_vector_write_rolls_its_lookup_compaction(tmp_path):
    root = tmp_path / "db.db" / "t"
    options = {"target-file-size": f"{TARGET // 1024} kb", "deletion-vectors.enabled": "true"}
    table = mc.Table.create(root, SCHEMA, key="k", buckets=1, options=options)
    first, second = rows(range(40_000), "a"), rows(range(0, 40_000, 5), "b")
    table.write(first)
    table.write(second)
    above = [f for f in table.files() if f["level"] > 0]
    assert len(above) >= 3 and not [f for f in table.files() if f["level"] == 0]
    mine, theirs, rust = peers(root)
    assert mine == theirs == rust == model_of(first, second)


def test_a_failed_write_leaves_none_of_its_rolled_files(tmp_path, monkeypatch):
    root = tmp_path / "db.db" / "t"
    options = {"target-file-size": "16 kb", "write-only": "true"}
    table = mc.Table.create(root, SCHEMA, key="k", buckets=1, options=options)
    table.write(rows(range(100), "a"))
    before = sorted(p.name for p in root.rglob("*.parquet"))
    opened = []
    write = _write.DataFileWriter.write

    def failing_write(self, batch):  # the disk fills up in the write's third file
        if self not in opened:
            opened.append(self)
        if len(opened) == 3:
            raise TableIOError("no space left on device")
        write(self, batch)

    monkeypatch.setattr(_write.DataFileWriter, "write", failing_write)
    with pytest.raises(TableIOError, match="no space left"):
        table.write(rows(range(20_000), "b"))
    assert len(opened) == 3
    assert sorted(p.name for p in root.rglob("*.parquet")) == before
