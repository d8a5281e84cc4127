"""Tags made and removed by merge-core, as Paimon's ``createTag``/``deleteTag`` make them:
pypaimon and pypaimon-rust read merge-core's tags (through compaction and expire), and
merge-core removes tags pypaimon made, after which pypaimon can make the name again."""

from __future__ import annotations

import merge_core as mc
import pyarrow as pa
import pytest
from helpers import pypaimon_rust_rows
from test_expire import catalog, history, identifier, pypaimon_read, rows_of

pytest.importorskip("pypaimon")


def rust_rows(root, tag: str) -> list[tuple]:
    return sorted((r["k"], r["v"]) for r in pypaimon_rust_rows(root, options={"scan.tag-name": tag}))


def test_the_peers_read_merge_cores_tags_through_compaction_and_expire(tmp_path):
    root = tmp_path / "db.db" / "t"
    table, seen = history(root)
    assert table.create_tag("first", snapshot=1) == 1
    assert table.create_tag("latest") == 3
    assert table.tags() == {"first": 1, "latest": 3}
    table.compact(full=True)
    assert table.expire(keep_snapshots=1, orphan_age=0)["snapshots_removed"] == 3
    for name, snapshot in (("first", 1), ("latest", 3)):
        assert rows_of(table.read(tag=name).read_all()) == seen[snapshot]
        assert pypaimon_read(root, {"scan.tag-name": name}) == seen[snapshot]
        assert rust_rows(root, name) == seen[snapshot]


def test_merge_core_removes_a_tag_pypaimon_made(tmp_path):
    root = tmp_path / "db.db" / "t"
    table, seen = history(root)
    catalog(root).create_tag(identifier(root), "theirs", snapshot_id=2)
    assert table.tags() == {"theirs": 2}
    table.delete_tag("theirs")
    assert table.tags() == {}
    with pytest.raises(Exception, match="theirs"):
        pypaimon_read(root, {"scan.tag-name": "theirs"})
    catalog(root).create_tag(identifier(root), "theirs", snapshot_id=1)  # the name is free again
    assert rows_of(table.read(tag="theirs").read_all()) == seen[1]
    # What only the removed tag kept goes with the next expire, and nothing else does.
    table.delete_tag("theirs")
    table.compact(full=True)
    assert table.expire(keep_snapshots=1, orphan_age=0)["files_removed"] > 0
    assert rows_of(table.read().read_all()) == seen[3]


def test_bad_tags_are_refused_and_change_nothing(tmp_path):
    root = tmp_path / "db.db" / "t"
    empty = mc.Table.create(tmp_path / "db.db" / "e", pa.schema([pa.field("k", pa.int64(), False)]), key="k")
    with pytest.raises(mc.InvalidInputError, match="no snapshot to tag"):
        empty.create_tag("x")
    table, _ = history(root)
    table.create_tag("t", snapshot=2)
    catalog(root).create_tag(identifier(root), "p", snapshot_id=1)
    for name, snapshot, error, match in [
        ("t", 3, mc.TableExistsError, "tag 't' already exists .on snapshot 2"),
        ("p", 3, mc.TableExistsError, "tag 'p' already exists .on snapshot 1"),
        ("u", 9, mc.InvalidInputError, r"no snapshot 9 to tag .the snapshots kept: \[1, 2, 3\]"),
        ("", None, mc.InvalidInputError, "is not a tag name"),
        ("a/b", None, mc.InvalidInputError, "is not a tag name"),
        ("  ", None, mc.InvalidInputError, "must not be blank"),
    ]:
        with pytest.raises(error, match=match):
            table.create_tag(name, snapshot)
    with pytest.raises(mc.TableNotFoundError, match=r"no tag 'nope' .* \(its tags: \['p', 't'\]\)"):
        table.delete_tag("nope")
    assert table.tags() == {"t": 2, "p": 1}


def test_the_command_line_lists_makes_reads_and_removes_tags(tmp_path):
    import os
    import shutil
    import subprocess
    import sys

    import pyarrow.parquet as pq

    cli = shutil.which("merge-core", path=os.path.dirname(sys.executable)) or "merge-core"

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([cli, "table", *args], capture_output=True, text=True, timeout=300)

    root = tmp_path / "db.db" / "t"
    table, seen = history(root)
    lake = str(root)
    assert run("tag", lake).stdout.strip() == f"no tags in {lake}"
    made = run("tag", lake, "first", "--snapshot", "1")
    assert made.returncode == 0 and made.stdout.strip() == f"tagged snapshot 1 of {lake} as first", made
    assert run("tag", lake, "last").returncode == 0
    assert run("tag", lake).stdout.splitlines() == ["first\tsnapshot 1", "last\tsnapshot 3"]
    out = str(tmp_path / "first.parquet")
    assert run("read", lake, "-o", out, "--tag", "first").returncode == 0
    assert rows_of(pq.read_table(out)) == seen[1] == pypaimon_read(root, {"scan.tag-name": "first"})
    again = run("tag", lake, "first")
    assert again.returncode == 2 and "tag 'first' already exists (on snapshot 1)" in again.stderr, again.stderr
    assert run("tag", lake, "first", "--delete").returncode == 0
    missing = run("tag", lake, "first", "--delete")
    assert missing.returncode == 2 and "no tag 'first'" in missing.stderr and "['last']" in missing.stderr
    assert table.tags() == {"last": 3}
