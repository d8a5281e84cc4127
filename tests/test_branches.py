"""Branches of a table (Paimon's ``branch/branch-<name>/``, made by pypaimon's
``create_branch``): merge-core reads them as pypaimon does, commits into them where
Paimon does (pypaimon reads what it wrote, and merge-core what pypaimon wrote), tags
them, and main's expire and rollback keep every file a branch uses."""

from __future__ import annotations

from pathlib import Path

import merge_core as mc
import pyarrow as pa
import pytest
from helpers import pypaimon_commit
from test_expire import SCHEMA, catalog, history, identifier, pypaimon_read, rows_of

pytest.importorskip("pypaimon")
pytest.importorskip("pypaimon_rust")


def rust_read(root: Path, branch: str) -> list[tuple]:
    """The rows pypaimon-rust reads from ``branch`` of the table at ``root``."""
    from pypaimon_rust.datafusion import PaimonCatalog

    table = PaimonCatalog({"warehouse": str(root.parent.parent)}).get_table(identifier(root) + f"$branch_{branch}")
    builder = table.new_read_builder()
    batches = builder.new_read().read(builder.new_scan().plan().splits())
    return rows_of(pa.Table.from_batches(batches, schema=SCHEMA) if batches else SCHEMA.empty_table())


def branched(root: Path) -> tuple[mc.Table, dict[int, list[tuple]]]:
    """Three commits on main; branch ``b2`` from a tag of snapshot 2, ``empty`` from main's
    schema alone."""
    table, seen = history(root)
    cat = catalog(root)
    cat.create_tag(identifier(root), "t2", snapshot_id=2)
    cat.create_branch(identifier(root), "b2", tag_name="t2")
    cat.create_branch(identifier(root), "empty")
    return table, seen


def test_a_branch_pypaimon_made_reads_as_pypaimon_reads_it(tmp_path):
    root = tmp_path / "db.db" / "t"
    table, seen = branched(root)
    b2 = mc.Table.open(root, branch="b2")
    assert (b2.branch, table.branch, table.branches()) == ("b2", "main", ["b2", "empty"])
    assert b2.snapshots() == [2] and b2.tags() == {"t2": 2}
    assert rows_of(b2.read().read_all()) == pypaimon_read(root, branch="b2") == rust_read(root, "b2") == seen[2]
    assert rows_of(b2.read(tag="t2").read_all()) == seen[2]
    assert rows_of(mc.Table.open(root, branch="empty").read().read_all()) == pypaimon_read(root, branch="empty") == []
    assert rows_of(mc.Table.open(root, branch="main").read().read_all()) == seen[3]


def test_commits_to_a_branch_land_where_paimon_keeps_them(tmp_path):
    root = tmp_path / "db.db" / "t"
    table, seen = branched(root)
    b2 = mc.Table.open(root, branch="b2")
    assert b2.write(pa.table({"k": [1, 50], "v": [10, 50]}, schema=SCHEMA))["snapshot"] == 3
    assert (root / "branch" / "branch-b2" / "snapshot" / "snapshot-3").exists()
    mine = sorted({**dict(seen[2]), 1: 10, 50: 50}.items())
    assert rows_of(b2.read().read_all()) == pypaimon_read(root, branch="b2") == rust_read(root, "b2") == mine
    pypaimon_commit(catalog(root).get_table(identifier(root) + "$branch_b2"), [{"k": 2, "v": 20}], SCHEMA)
    theirs = sorted({**dict(mine), 2: 20}.items())
    assert rows_of(b2.read().read_all()) == theirs
    b2.compact(full=True)
    b2.create_tag("mine", snapshot=3)
    assert pypaimon_read(root, {"scan.tag-name": "mine"}, branch="b2") == mine
    assert pypaimon_read(root, branch="b2") == theirs
    # Main is untouched, and its expire and rollback keep every file the branch uses.
    assert table.snapshots() == [1, 2, 3] and rows_of(table.read().read_all()) == seen[3]
    table.rollback_to(snapshot=1)
    table.expire(keep_snapshots=1, orphan_age=0)
    assert pypaimon_read(root, branch="b2") == rows_of(b2.read().read_all()) == rust_read(root, "b2") == theirs
    assert pypaimon_read(root, {"scan.tag-name": "mine"}, branch="b2") == mine
    assert pypaimon_read(root) == seen[1]


def test_unknown_branches_and_removals_on_a_branch_are_refused(tmp_path):
    root = tmp_path / "db.db" / "t"
    branched(root)
    with pytest.raises(mc.TableNotFoundError, match=r"no branch 'nope' .*\(its branches: \['b2', 'empty'\]\)"):
        mc.Table.open(root, branch="nope")
    for name in ("", "a/b", "12"):
        with pytest.raises(mc.InvalidInputError, match="is not a branch name"):
            mc.Table.open(root, branch=name)
    b2 = mc.Table.open(root, branch="b2")
    for action in (lambda: b2.expire(keep_snapshots=1), lambda: b2.rollback_to(snapshot=2)):
        with pytest.raises(mc.UnsupportedFeatureError, match="on branch 'b2' .*run it on the main table"):
            action()


def test_a_catalog_opens_a_branch_by_paimons_name(tmp_path):
    root = tmp_path / "db.db" / "t"
    _, seen = branched(root)
    b2 = mc.Catalog(tmp_path).get_table("db.t$branch_b2")
    assert b2.branch == "b2" and rows_of(b2.read().read_all()) == seen[2]
    with pytest.raises(mc.TableNotFoundError, match=r"no branch 'nope' .*\['b2', 'empty'\]"):
        mc.Catalog(tmp_path).get_table("db.t$branch_nope")


def test_a_schema_change_of_a_branch_stays_in_the_branch(tmp_path):
    root = tmp_path / "db.db" / "t"
    table, seen = branched(root)
    b2 = mc.Table.open(root, branch="b2")
    assert b2.add_column("note", pa.string()) == 1
    assert (root / "branch" / "branch-b2" / "schema" / "schema-1").exists()
    assert not (root / "schema" / "schema-1").exists()
    b2 = mc.Table.open(root, branch="b2")
    b2.write(pa.table({"k": [1], "v": [11], "note": ["x"]}))
    expected = [{"k": k, "v": 11 if k == 1 else v, "note": "x" if k == 1 else None} for k, v in seen[2]]
    assert b2.read().read_all().sort_by("k").to_pylist() == expected
    theirs = catalog(root).get_table(identifier(root) + "$branch_b2")
    builder = theirs.new_read_builder()
    assert builder.new_read().to_arrow(builder.new_scan().plan().splits()).sort_by("k").to_pylist() == expected
    assert mc.Table.open(root).schema.names == ["k", "v"] and rows_of(table.read().read_all()) == seen[3]
