"""A write or delete whose retracts (``-U``, ``-D``) the table's merge function cannot fold
is refused before anything is written, naming the option that would allow it: stored,
such a retract made every later read of its key fail (the table was bricked). Where the
table's options say what a retract means, the write goes through."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import merge_core as mc
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string()), ("n", pa.int64())])
CLI = shutil.which("merge-core", path=os.path.dirname(sys.executable)) or "merge-core"


def files_of(root) -> set[str]:
    return {str(p) for p in root.rglob("*") if p.is_file()}


def rows(table: mc.Table) -> list[tuple]:
    return sorted(tuple(r.values()) for r in table.read().read_all().to_pylist())


@pytest.mark.parametrize(
    ("merge", "options", "names"),
    [
        (mc.PartialUpdate(), {}, ["'ignore-delete'", "'partial-update.remove-record-on-delete'", "sequence-group"]),
        (mc.Aggregate({"v": "listagg"}), {}, ["'fields.v.ignore-retract'"]),
        (mc.Aggregate({"n": "max"}), {}, ["'fields.n.ignore-retract'"]),
    ],
    ids=["partial-update", "listagg", "max"],
)
def test_a_delete_the_merge_function_cannot_fold_is_refused_and_changes_nothing(tmp_path, merge, options, names):
    root = tmp_path / "db.db" / "t"
    table = mc.Table.create(root, SCHEMA, key="id", buckets=2, merge=merge, options=options)
    table.write(pa.table({"id": [1, 2], "v": ["a", "b"], "n": [1, 2]}))
    before, snapshots, kept = rows(table), table.snapshots(), files_of(root)
    with pytest.raises(mc.InvalidInputError, match="cannot take this write's -D rows") as refused:
        table.delete(pa.table({"id": [1]}))
    for name in names:
        assert name in str(refused.value)
    assert (rows(table), table.snapshots(), files_of(root)) == (before, snapshots, kept)
    with pytest.raises(mc.InvalidInputError, match="-U rows"):
        table.write(pa.table({"id": [2], "v": ["b"], "n": [2], "op": ["-U"]}), row_kind="op")
    assert rows(table) == before
    table.compact(full=True)  # the table still reads and compacts
    assert rows(table) == before


@pytest.mark.parametrize(
    ("merge", "options", "after"),
    [
        (mc.PartialUpdate(), {"partial-update.remove-record-on-delete": "true"}, [(2, "b", 2)]),
        (mc.PartialUpdate(), {"ignore-delete": "true"}, [(1, "a", 1), (2, "b", 2)]),
        # Paimon's retracts of a delete that carries only the key: sum takes back nothing
        # for a null, nor does last_non_null_value (the default) forget its value
        (mc.Aggregate({"n": "sum"}), {}, [(1, "a", 1), (2, "b", 2)]),
        (mc.Aggregate({"v": "listagg"}), {"fields.v.ignore-retract": "true"}, [(1, "a", 1), (2, "b", 2)]),
        ("deduplicate", {}, [(2, "b", 2)]),
    ],
    ids=["remove-record-on-delete", "ignore-delete", "sum", "ignore-retract", "deduplicate"],
)
def test_a_delete_the_tables_options_give_a_meaning_goes_through(tmp_path, merge, options, after):
    table = mc.Table.create(tmp_path / "t", SCHEMA, key="id", buckets=2, merge=merge, options=options)
    table.write(pa.table({"id": [1, 2], "v": ["a", "b"], "n": [1, 2]}))
    table.delete(pa.table({"id": [1]}))
    assert rows(table) == after


def test_the_command_line_refuses_such_rows_of_row_kind_with_its_exit_status(tmp_path):
    data = tmp_path / "d.parquet"
    pq.write_table(pa.table({"id": [1, 2], "v": ["a", "b"], "n": [1, 2], "op": ["+I", "-D"]}), data)
    lake = tmp_path / "lake"
    like = tmp_path / "like.parquet"
    pq.write_table(pa.table({"id": [1], "v": ["a"], "n": [1]}), like)
    created = subprocess.run(
        [CLI, "table", "create", str(lake), "--like", str(like), "-k", "id", "--merge", "partial-update"],
        capture_output=True,
        text=True,
    )
    assert created.returncode == 0, created.stderr
    result = subprocess.run(
        [CLI, "table", "write", str(lake), str(data), "--row-kind", "op"], capture_output=True, text=True
    )
    assert result.returncode == 2 and "cannot take this write's -D rows" in result.stderr, result
    assert mc.Table.open(lake).snapshots() == []
