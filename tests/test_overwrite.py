"""Overwrites, dropped partitions and truncates (Paimon's INSERT OVERWRITE, dropPartitions,
truncateTable): merge-core does each on a table and pypaimon 2.1 does the same on a copy;
merge-core, pypaimon and pypaimon-rust read the rows of a plain-Python model from both,
older snapshots and tags keep what was replaced, and concurrent writers conflict as in
Paimon."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import merge_core as mc
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import pypaimon_rust_rows
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_cli import CLI
from test_dynamic_bucket import check_placement, hash_index
from test_expire import catalog, identifier

pypaimon = pytest.importorskip("pypaimon")
pytest.importorskip("pypaimon_rust")

SCHEMA = pa.schema([pa.field("k", pa.int64(), False), pa.field("day", pa.string(), False), ("v", pa.int64())])
Model = dict[tuple[str, int], int]  # (day, k) -> v


def create(root: Path, partitioned: bool = True, **options: str) -> mc.Table:
    return mc.Table.create(
        root, SCHEMA, key=["k", "day"], partition_by="day" if partitioned else (), buckets=2, options=options
    )


def data(rows: list[tuple[int, str, int]]) -> pa.Table:
    return pa.table({"k": [r[0] for r in rows], "day": [r[1] for r in rows], "v": [r[2] for r in rows]}, schema=SCHEMA)


def expected(model: Model) -> list[tuple]:
    return sorted((k, day, v) for (day, k), v in model.items())


def tuples(rows: list[dict]) -> list[tuple]:
    return sorted((r["k"], r["day"], r["v"]) for r in rows)


def pypaimon_table(root: Path):
    return catalog(root).get_table(identifier(root))


def pypaimon_rows(root: Path, snapshot: int | None = None, tag: str | None = None) -> list[tuple]:
    table = pypaimon_table(root)
    if snapshot is not None:
        table = table.copy({"scan.snapshot-id": str(snapshot)})
    if tag is not None:
        table = table.copy({"scan.tag-name": tag})
    builder = table.new_read_builder()
    return tuples(builder.new_read().to_arrow(builder.new_scan().plan().splits()).to_pylist())


def check_reads(root: Path, model: Model) -> None:
    """merge-core, pypaimon and pypaimon-rust read the model's rows at ``root``."""
    want = expected(model)
    assert tuples(mc.Table.open(root).read().read_all().to_pylist()) == want
    assert pypaimon_rows(root) == want
    assert tuples(pypaimon_rust_rows(root)) == want


def pypaimon_overwrite(root: Path, rows: list[tuple], spec: dict | None) -> None:
    """pypaimon's INSERT OVERWRITE of ``rows`` (``spec``: its static partition, {} all)."""
    builder = pypaimon_table(root).new_batch_write_builder().overwrite(spec)
    write, commit = builder.new_write(), builder.new_commit()
    if rows:
        write.write_arrow(data(rows))
    commit.commit(write.prepare_commit())
    write.close()
    commit.close()


def model_overwrite(model: Model, rows: list[tuple], spec: dict, partitioned: bool, dynamic: bool) -> None:
    """What an overwrite leaves, by Paimon's rules."""
    if not partitioned:
        replaced = set(model)
    elif dynamic:
        replaced = {key for key in model if key[0] in {r[1] for r in rows}}
    else:
        replaced = {key for key in model if all(key[0] == v for v in spec.values())}
    for key in replaced:
        del model[key]
    model.update({(day, k): v for k, day, v in rows})


BASE = [(k, day, k) for day in ("d1", "d2", "d3") for k in range(6)]


@pytest.mark.parametrize(
    "partitioned, dynamic, spec, rows",
    [
        (True, False, {"day": "d1"}, [(1, "d1", 100), (9, "d1", 900)]),
        (True, False, {"day": "d2"}, []),  # a static overwrite of no rows empties the partition
        (True, False, {}, [(1, "d1", 100), (2, "d4", 400)]),
        (True, True, {}, [(1, "d1", 100), (2, "d4", 400)]),  # only d1 and d4 replaced
        (True, True, {"day": "d3"}, [(7, "d3", 700)]),
        (False, False, {}, [(1, "x", 100)]),
        (False, True, {}, [(1, "x", 100)]),  # the option does not apply without partition columns
    ],
)
def test_an_overwrite_replaces_what_pypaimons_does(tmp_path, partitioned, dynamic, spec, rows):
    """The same overwrite by merge-core and, on a copy of the table, by pypaimon: every
    reader reads the model's rows from both; the snapshot is one OVERWRITE; the snapshot
    before it still reads the old rows, in every reader."""
    ours, theirs = tmp_path / "a" / "db.db" / "t", tmp_path / "b" / "db.db" / "t"
    table = create(ours, partitioned, **{"dynamic-partition-overwrite": str(dynamic).lower()})
    base = BASE if partitioned else [(k, "x", k) for k in range(12)]
    table.write(data(base))
    table.write(data(base[::3]))  # two files in some buckets: the overwrite deletes each
    shutil.copytree(ours.parent.parent, theirs.parent.parent)
    model: Model = {(day, k): v for k, day, v in base}
    before = expected(model)

    result = table.write(data(rows), overwrite=spec or True)
    pypaimon_overwrite(theirs, rows, spec)
    model_overwrite(model, rows, spec, partitioned, dynamic)
    if dynamic and partitioned and not rows:
        assert result["snapshot"] is None
    else:
        assert result["snapshot"] == 3 and table.snapshot().commit_kind == "OVERWRITE"
    for root in (ours, theirs):
        check_reads(root, model)
    assert tuples(table.read(snapshot=2).read_all().to_pylist()) == before
    assert pypaimon_rows(ours, snapshot=2) == before
    assert tuples(pypaimon_rust_rows(ours, snapshot=2)) == before
    # As Java's overwrite writers ignore the files they replace, sequence numbers start at 0
    # (pypaimon's continue the replaced files'; the rows read are the same).
    new = [f for f in table.files() if f not in table.files(snapshot=2)]
    assert all(f["min_sequence"] == 0 for f in new) and (new or not rows)
    # The replaced files stay on disk: only expire takes them.
    assert all((ours / f["path"]).exists() for f in table.files(snapshot=2))


@pytest.mark.parametrize("option, dynamic", [(True, False), (False, True)])
def test_dynamic_overwrite_decides_one_commit_over_the_table_option(tmp_path, option, dynamic):
    """``dynamic_overwrite`` replaces the table's option for one overwrite (as Paimon's
    Spark connector copies the table with the mode Spark resolved); the option stays."""
    root = tmp_path / "db.db" / "t"
    table = create(root, **{"dynamic-partition-overwrite": str(option).lower()})
    table.write(data(BASE))
    model: Model = {(day, k): v for k, day, v in BASE}
    rows = [(1, "d1", 100), (9, "d1", 900)]
    table.write(data(rows), overwrite=True, dynamic_overwrite=dynamic)
    model_overwrite(model, rows, {}, True, dynamic)
    check_reads(root, model)
    assert table.options["dynamic-partition-overwrite"] == str(option).lower()
    with pytest.raises(mc.InvalidInputError, match="dynamic_overwrite applies to an overwrite"):
        table.write(data(rows), dynamic_overwrite=dynamic)
    with pytest.raises(mc.InvalidInputError, match="True, False or None"):
        table.write(data(rows), overwrite=True, dynamic_overwrite="yes")
    assert table.snapshots() == [1, 2]


def test_overwritten_files_are_upgraded_to_the_top_level(tmp_path):
    """With overwrite-upgrade (Paimon's default) a bucket's new files go to the top level
    when their key ranges do not overlap (Paimon's tryUpgrade), bucket by bucket; with the
    option off they stay at level 0. A bucket of an aggregate table given two versions of
    a key with row kinds has two overlapping files (a key's k-th version in the k-th
    file), which stay at level 0. Every reader reads the same sums either way."""
    for upgrade in ("true", "false"):
        root = tmp_path / upgrade / "db.db" / "t"
        table = mc.Table.create(
            root,
            SCHEMA,
            key=["k", "day"],
            partition_by="day",
            buckets=2,
            merge=mc.Aggregate({"v": "sum"}),
            options={"overwrite-upgrade": upgrade},
        )
        table.write(data(BASE))
        table.compact(full=True)
        rows = data([(1, "d1", 100), (1, "d1", 5), (2, "d1", 200), (3, "d1", 1)])
        kinds = rows.append_column("op", pa.array(["+I"] * 4))
        table.write(kinds, row_kind="op", overwrite={"day": "d1"})
        levels: dict[int, list[int]] = {}
        for f in table.files():
            if f["partition"] == ("d1",):
                levels.setdefault(f["bucket"], []).append(f["level"])
        two = [b for b, found in levels.items() if len(found) == 2]
        assert len(two) == 1 and levels[two[0]] == [0, 0]  # key 1's two versions overlap
        assert all(found == ([5] if upgrade == "true" else [0]) for b, found in levels.items() if b not in two)
        model = {(day, k): v for k, day, v in BASE if day != "d1"}
        model.update({("d1", 1): 105, ("d1", 2): 200, ("d1", 3): 1})
        check_reads(root, model)


def test_rows_outside_a_static_spec_are_refused(tmp_path):
    """As Paimon's commit refuses a change outside the partition overwritten: nothing is
    committed and the write's files are removed."""
    root = tmp_path / "db.db" / "t"
    table = create(root, **{"dynamic-partition-overwrite": "false"})
    table.write(data(BASE))
    files = sorted(p for p in root.rglob("*.parquet"))
    with pytest.raises(mc.InvalidInputError, match="rows of another partition"):
        table.write(data([(1, "d1", 1), (1, "d2", 2)]), overwrite={"day": "d1"})
    with pytest.raises(mc.InvalidInputError, match="not a partition column"):
        table.write(data([(1, "d1", 1)]), overwrite={"k": 1})
    with pytest.raises(mc.InvalidInputError, match="overwrite must be"):
        table.write(data([(1, "d1", 1)]), overwrite="d1")
    assert sorted(p for p in root.rglob("*.parquet")) == files and table.snapshots() == [1]


def test_messages_commit_only_as_they_were_written(tmp_path):
    """An overwrite write's messages (sequence numbers from 0, keys placed afresh) would
    corrupt an append, and an append's would not replace: each is refused as the other."""
    table = create(tmp_path / "db.db" / "t")
    table.write(data(BASE))
    with table.new_write(overwrite=True) as write:
        write.write(data([(1, "d1", 5)]))
        messages = write.prepare_commit()
    with pytest.raises(mc.InvalidInputError, match="overwrite write"):
        table.commit(messages)
    with table.new_write() as write:
        write.write(data([(1, "d1", 5)]))
        messages = write.prepare_commit()
    with pytest.raises(mc.InvalidInputError, match="overwrite write"):
        table.commit(messages, overwrite=True)
    assert table.snapshots() == [1]


def test_drop_partitions_and_truncate_as_pypaimon(tmp_path):
    """drop_partitions (a missing partition skipped, a partial spec matching several) and
    truncate, by merge-core and by pypaimon on a copy: the same rows in every reader; a
    tag made before survives them and an expire, and pypaimon reads it."""
    schema = pa.schema(
        [pa.field("k", pa.int64(), False), pa.field("day", pa.string(), False), pa.field("r", pa.string(), False)]
    )
    ours, theirs = tmp_path / "a" / "db.db" / "t", tmp_path / "b" / "db.db" / "t"
    table = mc.Table.create(ours, schema, key="k", partition_by=["day", "r"], buckets=2)
    rows = [(k, day, r) for k in range(4) for day in ("d1", "d2") for r in ("eu", "us")]
    table.write(pa.table({"k": [x[0] for x in rows], "day": [x[1] for x in rows], "r": [x[2] for x in rows]}))
    table.create_tag("before")
    shutil.copytree(ours.parent.parent, theirs.parent.parent)

    def check(root: Path, want: set[tuple]) -> None:
        got = {(r["k"], r["day"], r["r"]) for r in mc.Table.open(root).read().read_all().to_pylist()}
        builder = pypaimon_table(root).new_read_builder()
        read = builder.new_read().to_arrow(builder.new_scan().plan().splits()).to_pylist()
        assert got == {(r["k"], r["day"], r["r"]) for r in read} == want
        assert {(r["k"], r["day"], r["r"]) for r in pypaimon_rust_rows(root)} == want

    specs = [{"day": "d1", "r": "eu"}, {"r": "us"}, {"day": "d9"}]
    result = table.drop_partitions(specs)
    catalog(theirs).drop_partitions(identifier(theirs), specs)
    assert result == {"snapshot": 2, "partitions": 3, "files": result["files"], "rows": 12}
    left = {x for x in rows if x[1:] == ("d2", "eu")}
    check(ours, left)
    check(theirs, left)
    assert table.truncate()["rows"] == 4
    builder = pypaimon_table(theirs).new_batch_write_builder()
    commit = builder.new_commit()
    commit.truncate_table()
    commit.close()
    check(ours, set())
    check(theirs, set())
    assert table.snapshot().commit_kind == "OVERWRITE"
    table.expire(keep_snapshots=1, orphan_age=0)
    assert {(r["k"], r["day"], r["r"]) for r in table.read(tag="before").read_all().to_pylist()} == set(rows)
    builder = pypaimon_table(ours).copy({"scan.tag-name": "before"}).new_read_builder()
    assert len(builder.new_read().to_arrow(builder.new_scan().plan().splits())) == len(rows)


def test_an_overwrite_of_a_branch_leaves_main_as_it_was(tmp_path):
    """A branch (pypaimon's create_branch) overwritten and a partition of it dropped:
    the branch reads the model's rows in merge-core and pypaimon, main its own rows."""
    root = tmp_path / "db.db" / "t"
    create(root).write(data(BASE))
    catalog(root).create_tag(identifier(root), "t1", snapshot_id=1)
    catalog(root).create_branch(identifier(root), "b", tag_name="t1")
    branch = mc.Table.open(root, branch="b")
    branch.write(data([(1, "d1", 100)]), overwrite={"day": "d1"})
    branch.drop_partitions([{"day": "d2"}])
    model = {(day, k): v for k, day, v in BASE if day == "d3"} | {("d1", 1): 100}
    assert tuples(branch.read().read_all().to_pylist()) == expected(model)
    builder = catalog(root).get_table(identifier(root) + "$branch_b").new_read_builder()
    assert tuples(builder.new_read().to_arrow(builder.new_scan().plan().splits()).to_pylist()) == expected(model)
    check_reads(root, {(day, k): v for k, day, v in BASE})


def test_specs_match_typed_partition_values(tmp_path):
    """Date, int and timestamp partition columns, their spec values given as strings (as
    Paimon's specs hold them) or in the columns' types: the partitions they name, no other."""
    import datetime

    schema = pa.schema(
        [
            pa.field("k", pa.int64(), False),
            pa.field("d", pa.date32(), False),
            pa.field("n", pa.int32(), False),
            pa.field("ts", pa.timestamp("ms"), False),
        ]
    )
    options = {"dynamic-partition-overwrite": "false"}
    table = mc.Table.create(tmp_path / "t", schema, key="k", partition_by=["d", "n", "ts"], buckets=1, options=options)
    d1, d2, ts = datetime.date(2024, 1, 1), datetime.date(2024, 1, 2), datetime.datetime(2024, 1, 1, 12, 30)
    rows = {1: (d1, 1), 2: (d2, 1), 3: (d1, 2), 4: (d2, 2)}
    table.write(
        pa.table(
            {"k": list(rows), "d": [r[0] for r in rows.values()], "n": [r[1] for r in rows.values()], "ts": [ts] * 4},
            schema=schema,
        )
    )
    assert table.drop_partitions([{"d": "2024-01-01", "n": "2"}])["rows"] == 1
    assert table.drop_partitions([{"ts": "2024-01-01 12:30:00", "d": d2, "n": 2}])["rows"] == 1
    table.write(pa.table({"k": [9], "d": [d1], "n": [1], "ts": [ts]}, schema=schema), overwrite={"d": d1, "n": 1})
    assert sorted(r["k"] for r in table.read().read_all().to_pylist()) == [2, 9]
    with pytest.raises(mc.InvalidInputError, match="does not fit"):
        table.drop_partitions([{"d": "tomorrow"}])


def test_drop_partitions_refuses_what_paimon_would(tmp_path):
    table = create(tmp_path / "db.db" / "t")
    table.write(data(BASE))
    for specs, message in (
        ([], "non-empty list"),
        ({"day": "d1"}, "non-empty list"),
        ([{}], "at least one partition column"),
        ([{"k": 1}], "not a partition column"),
    ):
        with pytest.raises(mc.InvalidInputError, match=message):
            table.drop_partitions(specs)
    flat = create(tmp_path / "db.db" / "flat", partitioned=False)
    with pytest.raises(mc.InvalidInputError, match="truncate"):
        flat.drop_partitions([{"day": "d1"}])
    assert table.snapshots() == [1]
    # A table merge-core does not write is not dropped from or truncated either.
    callbacks = create(tmp_path / "db.db" / "callbacks", **{"commit.callbacks": "com.example.Callback"})
    for drop in (lambda: callbacks.drop_partitions([{"day": "d1"}]), callbacks.truncate):
        with pytest.raises(mc.UnsupportedFeatureError, match="commit.callbacks"):
            drop()
    assert callbacks.snapshots() == []


def test_an_overwrite_replaces_a_write_committed_before_it(tmp_path):
    """As Paimon's overwrite, which deletes what each attempt's latest snapshot holds: a
    write into the partition committed between the overwrite's write and its commit is
    replaced too; a compaction of a replaced file committed after it fails."""
    table = create(tmp_path / "db.db" / "t")
    table.write(data(BASE))
    table.write(data(BASE[:3]))
    compaction = table.plan_compaction(full=True)
    merged = [table.compact_bucket(task) for task in compaction]
    with table.new_write(overwrite=True) as write:
        write.write(data([(1, "d1", 100)]))
        messages = write.prepare_commit()
    other = mc.Table.open(table.path)
    other.write(data([(4, "d1", 400), (4, "d2", 400)]))  # lands before the overwrite
    table.commit(messages, overwrite={"day": "d1"})
    model = {(day, k): v for k, day, v in BASE if day != "d1"}
    model.update({("d1", 1): 100, ("d2", 4): 400})
    check_reads(table.path, model)
    with pytest.raises(mc.CommitConflictError):
        table.commit(merged)
    check_reads(table.path, model)


def test_an_overwrite_that_loses_a_race_replaces_the_winner(tmp_path, monkeypatch):
    """A write that claims the snapshot id the overwrite's first attempt meant to take:
    the overwrite retries on top of it, and its deletes, recomputed, take the winner's
    file of the replaced partition too (a delete list kept from the first attempt would
    leave it live)."""
    from merge_core.paimon._commit import Committer

    table = create(tmp_path / "db.db" / "t")
    table.write(data(BASE))
    with table.new_write(overwrite=True) as write:
        write.write(data([(1, "d1", 100)]))
        messages = write.prepare_commit()
    claim, raced = Committer._claim, []

    def racing_claim(self, snapshot_id, text):
        if not raced:
            raced.append(snapshot_id)
            mc.Table.open(table.path).write(data([(4, "d1", 400), (4, "d2", 400)]))
        return claim(self, snapshot_id, text)

    monkeypatch.setattr(Committer, "_claim", racing_claim)
    assert table.commit(messages, overwrite={"day": "d1"}) == 3 and raced == [2]
    model = {(day, k): v for k, day, v in BASE if day != "d1"}
    model.update({("d1", 1): 100, ("d2", 4): 400})
    check_reads(table.path, model)


def test_a_partitions_entries_match_pypaimons(tmp_path):
    """Table.partitions() against pypaimon's partition listing (Paimon's partition
    entries): stored rows, files and bytes of each partition, after an overwrite; the
    newest file's creation time between the clock before and after the write."""
    import datetime

    root = tmp_path / "db.db" / "t"
    table = create(root)
    table.write(data(BASE))
    start = datetime.datetime.now().replace(microsecond=0)
    table.write(data([(1, "d1", 5), (2, "d1", 5), (3, "d4", 1)]), overwrite=True)
    end = datetime.datetime.now()
    listed = catalog(root).list_partitions_paged(identifier(root)).elements
    theirs = {p.spec["day"]: (p.record_count, p.file_count, p.file_size_in_bytes) for p in listed}
    ours = {p["partition"]["day"]: (p["rows"], p["files"], p["bytes"]) for p in table.partitions()}
    assert ours == theirs and set(ours) == {"d1", "d2", "d3", "d4"}
    for p in table.partitions():
        assert p["buckets"] == 2
        if p["partition"]["day"] in ("d1", "d4"):
            assert start <= p["last_file_creation_time"] <= end


# -- dynamic and postponed buckets ----------------------------------------------------------


def test_a_dynamic_bucket_overwrite_places_keys_afresh_as_pypaimon(tmp_path):
    """An overwrite of a dynamic-bucket table places its keys in empty buckets (Paimon's
    SimpleHashBucketAssigner) and its commit drops the replaced partition's HASH files:
    merge-core writes the HASH index pypaimon writes for the same overwrite, the other
    partition's index is kept, and writes by both after it keep every key in one bucket."""
    ours, theirs = tmp_path / "a" / "db.db" / "t", tmp_path / "b" / "db.db" / "t"
    table = create(ours, **{"bucket": "-1", "dynamic-bucket.target-row-num": "3"})
    table.write(data(BASE + [(k, "d1", k) for k in range(6, 12)]))
    shutil.copytree(ours.parent.parent, theirs.parent.parent)
    kept = {key: hashes for key, hashes in hash_index(ours).items() if key[0] != "d1"}
    rows = [(k, "d1", -k) for k in (20, 3, 21, 22, 23)]
    table.write(data(rows), overwrite={"day": "d1"})
    pypaimon_overwrite(theirs, rows, {"day": "d1"})
    model = {(day, k): v for k, day, v in BASE if day != "d1"}
    model.update({("d1", k): v for k, _, v in rows})
    assert hash_index(ours) == hash_index(theirs)
    assert {key: h for key, h in hash_index(ours).items() if key[0] != "d1"} == kept
    assert {b for (day, b) in hash_index(ours) if day == "d1"} == {0, 1}  # 5 keys, 3 a bucket, from 0
    for root in (ours, theirs):
        check_reads(root, model)
        check_placement(root, target=3)
    more = [(k, "d1", 1000 + k) for k in (3, 20, 30, 31)]
    table.write(data(more))
    model.update({("d1", k): v for k, _, v in more})
    check_reads(ours, model)
    check_placement(ours, target=3)
    table.drop_partitions([{"day": "d2"}])
    assert not [key for key in hash_index(ours) if key[0] == "d2"]
    builder = pypaimon_table(ours).new_batch_write_builder()
    write, commit = builder.new_write(), builder.new_commit()
    write.write_arrow(data([(0, "d2", 1), (30, "d1", 2)]))
    commit.commit(write.prepare_commit())
    model = {key: v for key, v in model.items() if key[0] != "d2"}
    model.update({("d2", 0): 1, ("d1", 30): 2})
    check_reads(ours, model)
    check_placement(ours)


def test_a_dynamic_bucket_write_racing_an_overwrite_conflicts(tmp_path):
    """A write that placed keys before an overwrite replaced its partition's HASH index
    cannot commit after it: its buckets were assigned from an index that is gone."""
    table = create(tmp_path / "db.db" / "t", **{"bucket": "-1"})
    table.write(data(BASE))
    with table.new_write() as write:
        write.write(data([(50, "d1", 1)]))
        messages = write.prepare_commit()
    table.write(data([(1, "d1", 1)]), overwrite={"day": "d1"})
    with pytest.raises(mc.CommitConflictError):
        table.commit(messages)
    check_reads(table.path, {(day, k): v for k, day, v in BASE if day != "d1"} | {("d1", 1): 1})


def test_a_postponed_bucket_overwrite_drops_the_postponed_files(tmp_path):
    """In a postponed-bucket table an overwrite replaces the partition's postponed files
    too (Paimon's overwrite scan takes every bucket of such a table): a compaction after
    it finds no postponed rows of the replaced partition to bring back."""
    root = tmp_path / "db.db" / "t"
    table = create(root, **{"bucket": "-2", "postpone.batch-write-fixed-bucket": "false"})
    table.write(data(BASE))
    table.compact()
    table.write(data([(0, "d1", 50), (0, "d2", 50)]))  # waits in bucket-postpone/
    table.write(data([(1, "d1", 100)]), overwrite={"day": "d1"})
    table.compact()
    model = {(day, k): v for k, day, v in BASE if day != "d1"}
    model.update({("d1", 1): 100, ("d2", 0): 50})
    check_reads(root, model)


# -- a sequence of operations against a model -------------------------------------------------

OPERATION = st.one_of(
    st.tuples(st.just("write"), st.lists(st.tuples(st.integers(0, 5), st.sampled_from("abc")), max_size=6)),
    st.tuples(st.just("overwrite"), st.lists(st.tuples(st.integers(0, 5), st.sampled_from("abc")), max_size=6)),
    st.tuples(st.just("overwrite-partition"), st.sampled_from("abc")),
    st.tuples(st.just("drop"), st.lists(st.sampled_from("abcd"), min_size=1, max_size=2)),
    st.tuples(st.just("truncate"), st.none()),
    st.tuples(st.just("compact"), st.booleans()),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(OPERATION, min_size=1, max_size=7), st.booleans(), st.sampled_from(["2", "-1", "-2"]))
def test_writes_overwrites_drops_and_compactions_against_a_model(tmp_path_factory, operations, dynamic, bucket):
    """Writes, overwrites (dynamic or static, of the table or a partition), dropped
    partitions, truncates and compactions in any order: merge-core reads the model's rows
    after each step and pypaimon and pypaimon-rust at the end."""
    root = tmp_path_factory.mktemp("ops") / "db.db" / "t"
    table = create(root, **{"dynamic-partition-overwrite": str(dynamic).lower(), "bucket": bucket})
    model: Model = {}
    value = 0
    for op, arg in operations:
        value += 1
        if op in ("write", "overwrite"):
            rows = [(k, day, value) for k, day in dict.fromkeys(arg)]
            if op == "write":
                table.write(data(rows))
                model.update({(day, k): v for k, day, v in rows})
            else:
                table.write(data(rows), overwrite=True)
                model_overwrite(model, rows, {}, True, dynamic)
        elif op == "overwrite-partition":
            rows = [(value % 3, arg, value)]
            table.write(data(rows), overwrite={"day": arg})
            model_overwrite(model, rows, {"day": arg}, True, dynamic)
        elif op == "drop":
            table.drop_partitions([{"day": day} for day in arg])
            model = {key: v for key, v in model.items() if key[0] not in arg}
        elif op == "truncate":
            table.truncate()
            model = {}
        else:
            table.compact(full=arg)
        assert tuples(table.read().read_all().to_pylist()) == expected(model)
    if table.snapshots():
        check_reads(root, model)


# -- the command line -------------------------------------------------------------------------


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=300)


def test_the_command_line_overwrites_drops_and_truncates(tmp_path):
    root = tmp_path / "db.db" / "t"
    create(root).write(data(BASE))
    jan = tmp_path / "d1.parquet"
    pq.write_table(data([(1, "d1", 100)]), jan)
    done = cli("table", "write", str(root), str(jan), str(jan), "--overwrite", "--partition", "day=d1")
    assert done.returncode == 0 and "snapshot 2: overwrote day=d1 with 2 rows from 2 files" in done.stdout
    model = {(day, k): v for k, day, v in BASE if day != "d1"} | {("d1", 1): 100}
    check_reads(root, model)
    done = cli("table", "drop-partition", str(root), "day=d2", "day=d9")
    assert done.returncode == 0 and "dropped 1 partition" in done.stdout, done.stderr
    check_reads(root, {key: v for key, v in model.items() if key[0] != "d2"})
    done = cli("table", "truncate", str(root))
    assert done.returncode == 0 and "truncated" in done.stdout
    check_reads(root, {})
    for args, message in (
        (["write", str(root), str(jan), "--partition", "day=d1"], "give --overwrite too"),
        (["write", str(root), str(jan), "--overwrite", "--partition", "day=d2"], "rows of another partition"),
        (["write", str(root), str(jan), "--overwrite", "--partition", "k=1"], "not a partition column"),
        (["write", str(root), str(jan), "--overwrite", "--partition", "day"], "COL=VALUE"),
        (["drop-partition", str(root), "day=d1,day=d2"], "given twice"),
        (["drop-partition", str(root), "v=1"], "not a partition column"),
    ):
        failed = cli("table", *args)
        assert failed.returncode == 2 and message in failed.stderr and failed.stderr.count("\n") == 1, failed.stderr
    for action in ("drop-partition", "truncate"):
        assert "examples:" in cli("table", action, "--help").stdout
    assert mc.Table.open(root).snapshots() == [1, 2, 3, 4]
