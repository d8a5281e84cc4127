"""``Table.rollback_to`` against pypaimon 2.1's ``rollback_to`` on a copy of the same
table: the same snapshots, tags and hints remain, pypaimon and pypaimon-rust read the
rolled-back table, its tags and its branches; merge-core also removes the files only
the removed snapshots used, and never one a kept snapshot, tag or branch needs. A
rollback killed at any step leaves a table every reader reads, and a sequence of
writes, tags, rollbacks, compactions and expires matches a plain-Python model."""

from __future__ import annotations

import datetime
import json
import shutil
import subprocess
import sys
from pathlib import Path

import merge_core as mc
import pyarrow as pa
import pytest
from helpers import pypaimon_rust_rows
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_expire import SCHEMA, catalog, identifier, pypaimon_read, rows_of

pytest.importorskip("pypaimon")
pytest.importorskip("pypaimon_rust")


def rust_read(root: Path, options: dict[str, str] | None = None) -> list[tuple]:
    return rows_of(pa.Table.from_pylist(pypaimon_rust_rows(root, options=options), schema=SCHEMA))


def history(root: Path, commits: int = 4) -> tuple[mc.Table, dict[int, list[tuple]]]:
    """``commits`` writes, each updating half the keys and adding one, a compaction after
    the second: the rows of each snapshot."""
    table = mc.Table.create(root, SCHEMA, key="k", buckets=2)
    seen = {}
    for i in range(commits):
        keys = [k for k in range(8) if k % 2 == i % 2] + [100 + i]
        snapshot = table.write(pa.table({"k": keys, "v": [i] * len(keys)}, schema=SCHEMA))["snapshot"]
        seen[snapshot] = rows_of(table.read().read_all())
        if i == 1:
            seen[table.compact(full=True)["snapshot"]] = seen[snapshot]
    return table, seen


def pypaimon_table(root: Path):
    return catalog(root).get_table(identifier(root))


def state(root: Path) -> dict:
    """What a rollback leaves in the metadata: snapshots, tags and the hints."""
    hint = {n: (root / "snapshot" / n).read_text().strip() for n in ("LATEST", "EARLIEST")}
    return {
        "snapshots": sorted(int(p.name.split("-")[1]) for p in (root / "snapshot").glob("snapshot-*")),
        "tags": sorted(p.name for p in (root / "tag").glob("tag-*")),
        "hints": hint,
    }


def data_files(root: Path) -> set[str]:
    return {p.name for p in root.rglob("data-*.parquet")}


def check_reads(root: Path, expected: list[tuple], tags: dict[str, list[tuple]]) -> None:
    """merge-core, pypaimon and pypaimon-rust read ``expected`` now, and each tag's rows."""
    assert rows_of(mc.Table.open(root).read().read_all()) == expected
    assert pypaimon_read(root) == expected
    assert rust_read(root) == expected
    for name, rows in tags.items():
        assert rows_of(mc.Table.open(root).read(tag=name).read_all()) == rows
        assert pypaimon_read(root, {"scan.tag-name": name}) == rows
        assert rust_read(root, {"scan.tag-name": name}) == rows


def test_a_rollback_to_a_snapshot_leaves_what_pypaimons_leaves(tmp_path):
    root = tmp_path / "mc" / "db.db" / "t"
    table, seen = history(root)  # snapshots 1, 2, 3 (compaction), 4, 5
    table.create_tag("two", snapshot=2)
    table.create_tag("four", snapshot=4)
    catalog(root).create_tag(identifier(root), "five", snapshot_id=5)
    theirs = tmp_path / "pypaimon" / "db.db" / "t"
    shutil.copytree(root, theirs)

    result = table.rollback_to(snapshot=3)
    pypaimon_table(theirs).rollback_to(3)
    assert (
        state(root)
        == state(theirs)
        == {
            "snapshots": [1, 2, 3],
            "tags": ["tag-two"],
            "hints": {"LATEST": "3", "EARLIEST": "1"},
        }
    )
    assert result["snapshot"] == 3 and result["snapshots_removed"] == 2 and result["tags_removed"] == 2
    check_reads(root, seen[3], {"two": seen[2]})
    check_reads(theirs, seen[3], {"two": seen[2]})
    # merge-core removed the files only snapshots 4 and 5 wrote; pypaimon leaves them as orphans.
    assert result["files_removed"] == 4 and result["manifests_removed"] > 0
    assert len(data_files(theirs) - data_files(root)) == 4 and data_files(root) < data_files(theirs)
    # The table takes writes on top, numbered after the target.
    assert table.write(pa.table({"k": [7], "v": [70]}, schema=SCHEMA))["snapshot"] == 4
    check_reads(root, sorted({**dict(seen[3]), 7: 70}.items()), {"two": seen[2]})


def test_a_rollback_to_a_tag_whose_snapshot_expired_restores_it_as_pypaimon_does(tmp_path):
    root = tmp_path / "mc" / "db.db" / "t"
    table, seen = history(root)
    table.create_tag("one", snapshot=1)
    tag = root / "tag" / "tag-one"  # as Java writes a tag: its snapshot and two fields of its own
    tag.write_text(
        json.dumps({**json.loads(tag.read_text()), "tagCreateTime": [2026, 1, 2, 3, 4, 5], "tagTimeRetained": None})
    )
    table.expire(keep_snapshots=2, orphan_age=0)  # snapshots 4 and 5 are left
    copies = [tmp_path / name / "db.db" / "t" for name in ("pypaimon", "by-id")]
    for copy in copies:
        shutil.copytree(root, copy)

    assert table.rollback_to(tag="one")["snapshots_removed"] == 2
    pypaimon_table(copies[0]).rollback_to("one")
    assert mc.Table.open(copies[1]).rollback_to(snapshot=1)["snapshot"] == 1  # the id a tag holds
    expected = {"snapshots": [1], "tags": ["tag-one"], "hints": {"LATEST": "1", "EARLIEST": "1"}}
    assert state(root) == state(copies[1]) == expected
    # pypaimon 2.1 leaves EARLIEST at 4 (Java's createSnapshotFileIfNeeded moves it to 1).
    theirs = state(copies[0])
    assert theirs["hints"].pop("EARLIEST") == "4" and theirs == {**expected, "hints": {"LATEST": "1"}}
    for copy in (root, *copies):
        check_reads(copy, seen[1], {"one": seen[1]})
    assert data_files(root) == data_files(copies[1]) == {f["path"].rpartition("/")[2] for f in table.files()}
    restored = json.loads((root / "snapshot" / "snapshot-1").read_text())
    assert "tagCreateTime" not in restored and "tagTimeRetained" not in restored and restored["id"] == 1
    assert table.write(pa.table({"k": [7], "v": [70]}, schema=SCHEMA))["snapshot"] == 2


def test_a_rollback_as_of_a_time_takes_the_snapshot_pypaimons_rollback_to_timestamp_takes(tmp_path):
    root = tmp_path / "mc" / "db.db" / "t"
    table, seen = history(root)
    base = 1_700_000_000_000
    for snapshot in seen:  # an hour apart
        path = root / "snapshot" / f"snapshot-{snapshot}"
        path.write_text(json.dumps({**json.loads(path.read_text()), "timeMillis": base + snapshot * 3_600_000}))
    theirs = tmp_path / "pypaimon" / "db.db" / "t"
    shutil.copytree(root, theirs)
    millis = base + 3 * 3_600_000 + 59_000
    assert table.rollback_to(as_of=datetime.datetime.fromtimestamp(millis / 1000))["snapshot"] == 3
    pypaimon_table(theirs).rollback_to_timestamp(millis)
    assert state(root) == state(theirs) and state(root)["snapshots"] == [1, 2, 3]
    check_reads(root, seen[3], {})
    check_reads(theirs, seen[3], {})


def test_branches_and_earlier_tags_keep_every_file_they_need(tmp_path):
    root = tmp_path / "db.db" / "t"
    table, seen = history(root, commits=6)  # snapshots 1..7
    cat = catalog(root)
    cat.create_tag(identifier(root), "five", snapshot_id=5)
    cat.create_branch(identifier(root), "b5", tag_name="five")
    table.create_tag("three", snapshot=3)
    table.rollback_to(snapshot=2)
    assert table.tags() == {}  # both tags were on later snapshots
    check_reads(root, seen[2], {})
    assert pypaimon_read(root, branch="b5") == seen[5]  # the branch's files stayed
    # Expire afterwards keeps the branch's files too.
    table.expire(keep_snapshots=1, orphan_age=0)
    assert pypaimon_read(root, branch="b5") == seen[5]
    table.create_tag("two")
    table.write(pa.table({"k": [1], "v": [9]}, schema=SCHEMA))
    table.rollback_to(tag="two")
    check_reads(root, seen[2], {"two": seen[2]})
    assert pypaimon_read(root, branch="b5") == seen[5]


def test_bad_rollbacks_are_refused_and_change_nothing(tmp_path):
    root = tmp_path / "db.db" / "t"
    table, _ = history(root)
    table.create_tag("two", snapshot=2)
    table.expire(keep_snapshots=3, orphan_age=0)  # 3, 4, 5 are left
    before = sorted((p, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file())
    for kwargs, error, match in [
        ({}, mc.InvalidInputError, "one of snapshot, tag and as_of"),
        ({"snapshot": 3, "tag": "two"}, mc.InvalidInputError, "one of snapshot, tag and as_of"),
        ({"tag": "two", "as_of": datetime.datetime.now()}, mc.InvalidInputError, "one of snapshot, tag and as_of"),
        ({"as_of": datetime.datetime(2001, 1, 1)}, mc.TableNotFoundError, "its earliest kept snapshot, 3, was"),
        ({"as_of": "yesterday"}, mc.InvalidInputError, "as_of must be a datetime"),
        ({"snapshot": 1}, mc.TableNotFoundError, r"no snapshot 1 .*kept: \[3, 4, 5\], and no tag holds it"),
        ({"snapshot": 9}, mc.TableNotFoundError, "no snapshot 9"),
        ({"snapshot": "3"}, mc.InvalidInputError, "snapshot must be a snapshot id"),
        ({"tag": "nope"}, mc.TableNotFoundError, r"no tag 'nope' .*\['two'\]"),
    ]:
        with pytest.raises(error, match=match):
            table.rollback_to(**kwargs)
    assert sorted((p, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()) == before
    assert table.rollback_to(snapshot=5)["snapshots_removed"] == 0  # the latest: nothing to do
    assert table.snapshots() == [3, 4, 5]


def test_a_missing_manifest_stops_the_rollback_before_anything_goes(tmp_path):
    root = tmp_path / "db.db" / "t"
    table, _ = history(root)
    removed = json.loads((root / "snapshot" / "snapshot-5").read_text())
    (root / "manifest" / removed["deltaManifestList"]).unlink()
    before = sorted(p for p in root.rglob("*") if p.is_file())
    with pytest.raises(mc.CorruptTableError, match=removed["deltaManifestList"]):
        table.rollback_to(snapshot=2)
    assert sorted(p for p in root.rglob("*") if p.is_file()) == before


def test_kept_changelogs_later_than_the_target_go_as_in_paimon(tmp_path):
    """Paimon's ``cleanLongLivedChangelogs``: changelog files later than the target go
    and the changelog's LATEST hint names the newest left (-1 when none is)."""
    root = tmp_path / "db.db" / "t"
    table, seen = history(root)
    changelogs = root / "changelog"
    changelogs.mkdir()
    for i in (2, 3, 4, 5):  # a kept changelog has a snapshot's form
        shutil.copy(root / "snapshot" / f"snapshot-{i}", changelogs / f"changelog-{i}")
    (changelogs / "LATEST").write_text("5")
    (changelogs / "EARLIEST").write_text("2")
    result = table.rollback_to(snapshot=3)
    assert result["changelogs_removed"] == 2
    assert sorted(p.name for p in changelogs.glob("changelog-*")) == ["changelog-2", "changelog-3"]
    assert (changelogs / "LATEST").read_text() == "3"
    check_reads(root, seen[3], {})
    table.rollback_to(snapshot=1)
    assert not list(changelogs.glob("changelog-*")) and (changelogs / "LATEST").read_text() == "-1"
    check_reads(root, seen[1], {})


def test_the_command_line_rolls_back_and_reads_as_of_a_time(tmp_path):
    import datetime
    import os

    import pyarrow.parquet as pq

    cli = shutil.which("merge-core", path=os.path.dirname(sys.executable)) or "merge-core"

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([cli, "table", *args], capture_output=True, text=True, timeout=300)

    root = tmp_path / "db.db" / "t"
    table, seen = history(root)
    lake = str(root)
    table.create_tag("two", snapshot=2)
    out = str(tmp_path / "out.parquet")
    then = datetime.datetime.fromtimestamp(table.snapshot(2).time_millis / 1000)  # naive: local time
    done = run("read", lake, "-o", out, "--as-of", then.isoformat(sep=" "))
    assert done.returncode == 0 and rows_of(pq.read_table(out)) == seen[2], done.stderr
    for args, message in [
        (("rollback", lake), "one of the arguments --snapshot --tag --as-of is required"),
        (("rollback", lake, "--snapshot", "1", "--tag", "two"), "not allowed with argument"),
        (("rollback", lake, "--as-of", "soon"), "--as-of takes an ISO 8601 date-time"),
        (("rollback", lake, "--as-of", "2001-01-01"), "no snapshot committed at or before 2001-01-01"),
        (("rollback", lake, "--snapshot", "9"), "no snapshot 9 to roll back to"),
        (("rollback", lake, "--tag", "nope"), "no tag 'nope'"),
        (("read", lake, "-o", out, "--as-of", "yesterday"), "--as-of takes an ISO 8601 date-time"),
        (("read", lake, "-o", out, "--as-of", "2001-01-01"), "no snapshot committed at or before 2001-01-01"),
        (("read", lake, "-o", out, "--branch", "nope"), "--branch nope: no branch 'nope'"),
    ]:
        failed = run(*args)
        assert failed.returncode == 2 and message in failed.stderr, (args, failed.stderr)
    assert table.snapshots() == [1, 2, 3, 4, 5]
    fourth = datetime.datetime.fromtimestamp(table.snapshot(4).time_millis / 1000)  # naive: local time
    done = run("rollback", lake, "--as-of", fourth.isoformat())
    assert done.returncode == 0 and table.snapshots() == [1, 2, 3, 4], done.stderr
    done = run("rollback", lake, "--tag", "two")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"rolled {lake} back to snapshot 2: removed 2 snapshots, ")
    assert table.snapshots() == [1, 2] and pypaimon_read(root) == seen[2]
    catalog(root).create_branch(identifier(root), "b", tag_name="two")
    table.write(pa.table({"k": [1], "v": [9]}, schema=SCHEMA))
    assert run("read", lake, "-o", out, "--branch", "b").returncode == 0
    assert rows_of(pq.read_table(out)) == seen[2]
    help_text = run("rollback", "--help").stdout
    assert "--snapshot N" in help_text and "--tag NAME" in help_text and "examples:" in help_text


# -- a rollback killed at every step ---------------------------------------------------

KILLER = """
import os, signal, sys
import merge_core as mc
from merge_core import fs

steps = int(sys.argv[2])
for name in ("write", "delete", "create_new"):
    def counted(self, *args, _real=getattr(fs.LocalStore, name), **kwargs):
        global steps
        if steps == 0:
            os.kill(os.getpid(), signal.SIGKILL)
        steps -= 1
        return _real(self, *args, **kwargs)
    setattr(fs.LocalStore, name, counted)
mc.Table.open(sys.argv[1]).rollback_to(**{sys.argv[3]: (int if sys.argv[3] == "snapshot" else str)(sys.argv[4])})
"""


def _killed_rollback(root: Path, steps: int, kind: str, target: str) -> int:
    done = subprocess.run([sys.executable, "-c", KILLER, str(root), str(steps), kind, target], timeout=300)
    return done.returncode


@pytest.mark.parametrize(("kind", "target"), [("snapshot", "3"), ("tag", "one")])
def test_a_rollback_killed_at_any_step_leaves_a_readable_table(tmp_path, kind, target):
    """The rollback's process is killed before its n-th write or removal, for every n
    until one run completes: each time the table reads as one of its past snapshots,
    every tag left reads whole, and running the rollback again finishes it."""
    origin = tmp_path / "origin" / "db.db" / "t"
    table, seen = history(origin)
    table.create_tag("one", snapshot=1)
    table.create_tag("four", snapshot=4)
    if kind == "tag":
        table.expire(keep_snapshots=2, orphan_age=0)  # the tag's snapshot is restored
    wanted = 3 if kind == "snapshot" else 1
    tags = {"one": seen[1], "four": seen[4]}
    for steps in range(200):
        root = tmp_path / str(steps) / "db.db" / "t"
        shutil.copytree(origin, root)
        code = _killed_rollback(root, steps, kind, target)
        copy = mc.Table.open(root)
        # The snapshot the LATEST hint leads to; only while a restored snapshot has a gap
        # after it may a reader listing the directory read the newest one instead.
        hinted, listed = seen[copy.snapshot().id], seen[copy.snapshots()[-1]]
        assert rows_of(copy.read().read_all()) == hinted
        assert pypaimon_read(root) in (hinted, listed) and rust_read(root) in (hinted, listed)
        assert hinted == listed or (kind == "tag" and copy.snapshots()[:2] == [1, 4]), copy.snapshots()
        for name in copy.tags():
            assert rows_of(copy.read(tag=name).read_all()) == tags[name] == pypaimon_read(root, {"scan.tag-name": name})
        if code == 0:
            break
        assert code == -9
        copy.rollback_to(**{kind: int(target) if kind == "snapshot" else target})
        assert copy.snapshots()[-1] == wanted and rows_of(copy.read().read_all()) == seen[wanted]
        copy.expire(keep_snapshots=10, orphan_age=0)  # what the crash left unused goes as orphans
        used = {f["path"].rpartition("/")[2] for snapshot in copy.snapshots() for f in copy.files(snapshot)}
        assert data_files(root) == used
    assert code == 0 and steps > 5


# -- a model of writes, tags, rollbacks, compactions and expires -----------------------

OPS = st.lists(
    st.one_of(
        st.tuples(st.just("write"), st.lists(st.integers(0, 5), min_size=1, max_size=4)),
        st.tuples(st.just("tag"), st.sampled_from(["a", "b", "c"])),
        st.tuples(st.just("delete_tag"), st.sampled_from(["a", "b", "c"])),
        st.tuples(st.just("rollback_snapshot"), st.integers(0, 9)),
        st.tuples(st.just("rollback_tag"), st.sampled_from(["a", "b", "c"])),
        st.tuples(st.just("compact"), st.booleans()),
        st.tuples(st.just("expire"), st.integers(1, 3)),
    ),
    min_size=1,
    max_size=16,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
@example(ops=[("write", [0])] * 5)  # with the write's own compaction, the fifth write made two snapshots
def test_rollbacks_among_other_operations_match_a_model(tmp_path_factory, ops):
    root = tmp_path_factory.mktemp("model") / "db.db" / "t"
    # write-only: the model has one snapshot per write (a write's own compaction would add
    # a COMPACT snapshot once a bucket has five runs; tests/test_write_compaction.py)
    table = mc.Table.create(root, SCHEMA, key="k", buckets=2, options={"write-only": "true"})
    snapshots: dict[int, dict[int, int]] = {}  # id -> the rows it holds
    tags: dict[str, tuple[int, dict[int, int]]] = {}
    for step, (op, arg) in enumerate(ops):
        latest = max(snapshots, default=None)
        if op == "write":
            rows = {**snapshots.get(latest, {}), **{k: step for k in arg}}
            snapshots[table.write(pa.table({"k": arg, "v": [step] * len(arg)}, schema=SCHEMA))["snapshot"]] = rows
        elif op == "tag" and latest is not None and arg not in tags:
            table.create_tag(arg)
            tags[arg] = (latest, snapshots[latest])
        elif op == "delete_tag" and arg in tags:
            table.delete_tag(arg)
            del tags[arg]
        elif op in ("rollback_snapshot", "rollback_tag"):
            held = {snap: rows for snap, rows in tags.values()}
            if op == "rollback_tag" and arg in tags:
                target, rows = tags[arg]
                table.rollback_to(tag=arg)
            elif op == "rollback_snapshot" and (arg in snapshots or arg in held):
                target, rows = arg, snapshots.get(arg, held.get(arg))
                table.rollback_to(snapshot=arg)
            else:
                with pytest.raises(mc.TableNotFoundError):
                    table.rollback_to(**({"tag": arg} if op == "rollback_tag" else {"snapshot": arg}))
                continue
            snapshots = {i: r for i, r in snapshots.items() if i <= target} or {target: rows}
            tags = {name: held for name, held in tags.items() if held[0] <= target}
        elif op == "compact" and latest is not None:
            done = table.compact(full=arg)["snapshot"]
            snapshots.setdefault(done, snapshots[latest])
        elif op == "expire" and latest is not None:
            table.expire(keep_snapshots=arg, orphan_age=0)
            snapshots = {i: snapshots[i] for i in sorted(snapshots)[-arg:]}
        assert table.snapshots() == sorted(snapshots)
        assert table.tags() == {name: snap for name, (snap, _) in tags.items()}
        if snapshots:
            assert dict(rows_of(table.read().read_all())) == snapshots[max(snapshots)]
        for name, (_, rows) in tags.items():
            assert dict(rows_of(table.read(tag=name).read_all())) == rows
    if snapshots:
        assert dict(pypaimon_read(root)) == snapshots[max(snapshots)]
        for name, (_, rows) in tags.items():
            assert dict(pypaimon_read(root, {"scan.tag-name": name})) == rows
