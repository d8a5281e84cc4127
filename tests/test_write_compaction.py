"""A write's own compaction, as Paimon's writers compact: once a write's level-0 files
join their bucket, the bucket's sorted runs are picked by Paimon's universal compaction
and merged before the commit, which adds the files (APPEND) then replaces what was
merged (COMPACT). Checked against the pick over the APPEND snapshot's files, a
plain-Python model of the rows, and what pypaimon and pypaimon-rust read; ``write-only``
leaves level 0 to ``compact()``."""

from __future__ import annotations

import merge_core as mc
import pyarrow as pa
import pytest
from helpers import pypaimon_commit
from test_expire import catalog, identifier
from test_universal_compaction import KIND, SCHEMA, apply, check_levels, commit_rows, expected_after, peers, tuples

pytest.importorskip("pypaimon")
pytest.importorskip("pypaimon_rust")

KIND_SCHEMA = SCHEMA.append(pa.field(KIND, pa.string()))
TRIGGER = 3


def runs_of(files: list[dict]) -> int:
    """A bucket's sorted runs: each level-0 file, then one per level above."""
    return sum(f["level"] == 0 for f in files) + len({f["level"] for f in files} - {0})


def write_and_check(table: mc.Table, rows: list[dict]) -> int | None:
    """Writes ``rows`` and checks the commit against the pick over the bucket once the
    write's file is added: one APPEND snapshot holding it, then, if the pick takes
    anything, one COMPACT snapshot with the files it keeps and one file at its level.
    Returns the level written by the compaction (None: none)."""
    before = table.snapshots()
    table.write(pa.Table.from_pylist(rows, schema=KIND_SCHEMA), row_kind=KIND)
    new = [s for s in table.snapshots() if s not in before]
    append = new[0]
    assert table.snapshot(append).commit_kind == "APPEND"
    kept, levels = expected_after(table, append)
    (level,) = levels.values()
    if level is None:
        assert len(new) == 1, "nothing to pick: the write commits its file alone"
        return None
    assert [table.snapshot(s).commit_kind for s in new] == ["APPEND", "COMPACT"]
    assert table.snapshot(new[1]).commit_user == table.snapshot(append).commit_user
    written = check_levels(table, kept, levels)
    assert written in (set(), {level})
    return level


def write_commits(table: mc.Table, commits: range) -> dict:
    """Writes each commit's generated rows (30 of them, with row kinds) as one write; the
    model of the rows the table then holds."""
    model: dict = {}
    for c in commits:
        rows = commit_rows(c, 30)
        table.write(pa.Table.from_pylist(rows, schema=KIND_SCHEMA), row_kind=KIND)
        apply(model, rows, "deduplicate")
    return model


def test_writes_compact_as_the_pick_says(tmp_path):
    root = tmp_path / "db.db" / "t"
    table = mc.Table.create(
        root, SCHEMA, key="k", buckets=1, options={"num-sorted-run.compaction-trigger": str(TRIGGER)}
    )
    model: dict = {}
    base = [{"k": k, "v": k, "w": "base", KIND: "+I"} for k in range(3000)]
    levels_written = set()
    for c, rows in enumerate([base, *(commit_rows(c, 60) for c in range(1, 21))]):
        levels_written.add(write_and_check(table, rows))
        apply(model, rows, "deduplicate")
        assert runs_of(table.files()) <= TRIGGER, c  # the run count rule: never more runs than the trigger
        mine, theirs, rust = peers(root)
        assert mine == theirs == rust == tuples(model.values()), c
    # the history went through each kind of pick: none, below the top, into the top
    assert {None, TRIGGER} < levels_written, levels_written
    assert levels_written - {None, TRIGGER}, levels_written


def test_a_first_write_of_many_versions_compacts_its_own_files(tmp_path):
    """Versions a write cannot fold go to several level-0 files of one commit; past the
    trigger, the write's own files are picked (there is no snapshot before it)."""
    root = tmp_path / "db.db" / "t"
    options = {"num-sorted-run.compaction-trigger": "2"}
    table = mc.Table.create(root, SCHEMA, key="k", buckets=1, merge=mc.Aggregate({"v": "sum"}), options=options)
    rows = [{"k": 1, "v": i, "w": None, KIND: "+I"} for i in range(1, 5)]
    table.write(pa.Table.from_pylist(rows, schema=KIND_SCHEMA), row_kind=KIND)
    assert [table.snapshot(s).commit_kind for s in table.snapshots()] == ["APPEND", "COMPACT"]
    assert [f["level"] for f in table.files(1)] == [0, 0, 0, 0]
    assert [f["level"] for f in table.files()] == [2]
    mine, theirs, rust = peers(root)
    assert mine == theirs == rust == [(1, 10, None)]


@pytest.mark.parametrize("option", ["write-only", "write.compaction-skip"])
@pytest.mark.parametrize("dv", [False, True])
def test_write_only_leaves_level_zero_to_compact(tmp_path, option, dv):
    """Paimon's ``write-only``: writes never compact, not even a deletion-vector table's
    by lookup (its writes stay invisible to batch reads until compacted); ``compact()``
    then does."""
    root = tmp_path / "db.db" / "t"
    options = {"num-sorted-run.compaction-trigger": "2", option: "true"}
    if dv:
        options["deletion-vectors.enabled"] = "true"
    table = mc.Table.create(root, SCHEMA, key="k", buckets=1, options=options)
    model = write_commits(table, range(1, 7))
    assert [table.snapshot(s).commit_kind for s in table.snapshots()] == ["APPEND"] * 6
    assert [f["level"] for f in table.files()] == [0] * 6
    mine, theirs, rust = peers(root)
    assert mine == theirs == rust == ([] if dv else tuples(model.values()))
    table.compact()
    assert table.snapshot().commit_kind == "COMPACT"
    assert all(f["level"] > 0 for f in table.files())
    mine, theirs, rust = peers(root)
    assert mine == theirs == rust == tuples(model.values())


def test_pypaimon_writes_between_are_picked_with_the_next_write(tmp_path):
    """pypaimon's writer compacts nothing: its level-0 files wait in the bucket, and the
    next merge-core write's pick takes them as Paimon's writer would (the runs' sizes,
    newest first by sequence number)."""
    root = tmp_path / "db.db" / "t"
    table = mc.Table.create(
        root, SCHEMA, key="k", buckets=1, options={"num-sorted-run.compaction-trigger": str(TRIGGER)}
    )
    theirs_table = catalog(root).get_table(identifier(root))
    model: dict = {}
    waiting: set[str] = set()  # pypaimon's files not yet compacted
    taken = 0
    for c in range(1, 13):
        rows = commit_rows(c, 40)
        if c % 3 == 0:  # pypaimon: upserts only
            rows = [{k: v for k, v in r.items() if k != KIND} for r in rows if r[KIND] == "+I"]
            before = {f["path"] for f in table.files()}
            pypaimon_commit(theirs_table, rows, SCHEMA)
            apply(model, [{**r, KIND: "+I"} for r in rows], "deduplicate")
            waiting |= {f["path"] for f in table.files()} - before
            continue
        write_and_check(table, rows)
        apply(model, rows, "deduplicate")
        left = waiting & {f["path"] for f in table.files()}
        taken += len(waiting - left)
        waiting = left
        mine, theirs, rust = peers(root)
        assert mine == theirs == rust == tuples(model.values()), c
    assert taken, "no merge-core write compacted pypaimon's files"


def test_writes_of_one_commit_into_one_bucket_leave_their_files_at_level_zero(tmp_path):
    """Two writes of one commit (two Spark tasks) that each compacted the same bucket:
    each picked without the other's file, and both may replace the same files, so their
    compactions are undone; the files stay at level 0 for the next pick."""
    root = tmp_path / "db.db" / "t"
    options = {"num-sorted-run.compaction-trigger": "2"}
    table = mc.Table.create(root, SCHEMA, key="k", buckets=1, options={**options, "write-only": "true"})
    for c in range(1, 3):
        table.write(pa.Table.from_pylist(commit_rows(c, 30), schema=KIND_SCHEMA), row_kind=KIND)
    table.set_options(options | {"write-only": "false"})
    messages = []
    for c in range(3, 5):
        with table.new_write(row_kind=KIND) as write:
            write.write(pa.Table.from_pylist(commit_rows(c, 30), schema=KIND_SCHEMA))
            messages += write.prepare_commit()
    assert all(m.compact_after for m in messages)  # each write compacted on its own
    compacted = {f["_FILE_NAME"] for m in messages for f in m.compact_after}
    before = table.snapshots()
    table.commit(messages)
    assert [table.snapshot(s).commit_kind for s in table.snapshots() if s not in before] == ["APPEND"]
    assert [f["level"] for f in table.files()] == [0] * 4
    assert not any((root / "bucket-0" / name).exists() for name in compacted)
    model: dict = {}
    for c in range(1, 5):
        apply(model, commit_rows(c, 30), "deduplicate")
    mine, theirs, rust = peers(root)
    assert mine == theirs == rust == tuples(model.values())


def test_a_write_whose_compaction_loses_the_race_still_lands(tmp_path):
    """Another compaction of the bucket commits between a write's pick and its commit: the
    write's APPEND lands, its own COMPACT (replacing files no longer live) is dropped and
    its merged file removed; the write's file waits at level 0 for the next pick."""
    root = tmp_path / "db.db" / "t"
    options = {"num-sorted-run.compaction-trigger": "2", "write-only": "true"}
    table = mc.Table.create(root, SCHEMA, key="k", buckets=1, options=options)
    model = write_commits(table, range(1, 3))
    table.set_options({"write-only": "false"})
    rows = commit_rows(3, 30)
    with table.new_write(row_kind=KIND) as write:
        write.write(pa.Table.from_pylist(rows, schema=KIND_SCHEMA))
        messages = write.prepare_commit()
    apply(model, rows, "deduplicate")
    (merged,) = [f["_FILE_NAME"] for m in messages for f in m.compact_after]
    table.compact(full=True)  # replaces the two files the write's pick took
    before = table.snapshots()
    snapshot = table.commit(messages)
    assert [table.snapshot(s).commit_kind for s in table.snapshots() if s not in before] == ["APPEND"]
    assert snapshot == table.snapshots()[-1]
    assert sorted(f["level"] for f in table.files()) == [0, 2]
    assert not (root / "bucket-0" / merged).exists()
    mine, theirs, rust = peers(root)
    assert mine == theirs == rust == tuples(model.values())
