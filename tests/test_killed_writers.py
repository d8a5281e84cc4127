"""Writers and compactions killed (SIGKILL) at random points, on each of the table modes
Paimon's defaults make (deletion vectors, dynamic and postponed buckets, a changelog
producer): nothing a commit made visible is lost, every peer reads the same rows, the
table takes the next write, and expire then leaves exactly the files the manifests name
(read by pypaimon, not by merge-core)."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import merge_core as mc
import pyarrow as pa
import pytest
from helpers import pypaimon_rust_rows, pypaimon_table, referenced_files, referenced_index_files

pytest.importorskip("pypaimon")

WORKER = str(Path(__file__).with_name("table_worker.py"))
SCHEMA = pa.schema([("k", pa.int64()), ("p", pa.string()), ("v", pa.int64())])
ROWS = 20_000

# mode -> (buckets, options); each mode's writes also compact, as its writer's would.
MODES = {
    "deletion vectors": (2, {"deletion-vectors.enabled": "true"}),
    "dynamic buckets": (-1, {"dynamic-bucket.target-row-num": "6000"}),
    "postponed buckets": (-2, {"postpone.default-bucket-num": "2"}),
    "lookup changelog": (2, {"changelog-producer": "lookup"}),
}


def create(tmp_path: Path, mode: str) -> mc.Table:
    buckets, options = MODES[mode]
    return mc.Table.create(
        tmp_path / "wh" / "db.db" / "t", SCHEMA, key=["p", "k"], partition_by="p", buckets=buckets, options=options
    )


def worker(*args: object) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, WORKER, *map(str, args)], stdout=subprocess.PIPE, text=True)


def appends(table: mc.Table) -> int:
    """How many writes committed (each one APPEND snapshot; compactions are COMPACT)."""
    return sum(table.snapshot(s).commit_kind == "APPEND" for s in table.snapshots())


def kill_after(proc: subprocess.Popen, table: mc.Table, writes: int, delay: float) -> None:
    """Waits for `writes` commits of `table`, then `delay` seconds, then kills `proc`."""
    deadline = time.time() + 120
    while appends(table) < writes and time.time() < deadline and proc.poll() is None:
        time.sleep(0.02)
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()


def rows(stream_or_rows) -> list[tuple]:
    listed = stream_or_rows if isinstance(stream_or_rows, list) else stream_or_rows.read_all().to_pylist()
    return sorted((r["k"], r["p"], r["v"]) for r in listed)


def visible_writes(table: mc.Table) -> int:
    """How many writes a batch read shows. A deletion-vector table's read skips level 0:
    its write commits its level-0 files (APPEND), then their lookup compaction (COMPACT),
    as Paimon's writer does; a writer killed between the two leaves the write's rows
    invisible until the next compaction of the bucket takes them."""
    if table.options.get("deletion-vectors.enabled") == "true" and table.snapshot().commit_kind == "APPEND":
        return appends(table) - 1
    return appends(table)


def check_every_reader(table: mc.Table) -> None:
    """All ROWS keys, each with the last visible write's v, read alike by every peer."""
    for f in table.files():
        assert (Path(table.path) / f["path"]).exists(), f["path"]
    ours = rows(table.read())
    last = visible_writes(table) - 1
    assert len(ours) == ROWS and {r[2] for r in ours} == {last}, "a committed write was lost or half seen"
    builder = pypaimon_table(Path(table.path)).new_read_builder()
    assert rows(builder.new_read().to_arrow(builder.new_scan().plan().splits()).to_pylist()) == ours
    if table.options.get("bucket") != "-2":  # pypaimon-rust 0.4 cannot read postponed-bucket tables
        assert rows(pypaimon_rust_rows(Path(table.path))) == ours


def check_files_after_expire(table: mc.Table) -> None:
    """Expire keeping the newest snapshot leaves exactly the files its manifests name."""
    root = Path(table.path)
    table.expire(keep_snapshots=1, orphan_age=0)
    on_disk = {p.name for p in root.glob("p=*/bucket-*/*")}
    assert on_disk == referenced_files(root), "a crash's file left behind, or a live file taken"
    assert {p.name for p in root.glob("index/*")} == referenced_index_files(root)
    assert not [p for p in root.rglob("*") if p.name.startswith(".")], "no temporary files left"


def check_changelog(table: mc.Table) -> None:
    """The lookup changelog holds every committed change, up to the last compaction: a
    writer killed between its write's commit (APPEND) and its lookup compaction's
    (COMPACT) leaves that write's changes to the bucket's next compaction, as Paimon's."""
    newest = {}
    for r in table.changes(0).read_all().to_pylist():
        newest[(r["k"], r["p"])] = r["v"]
    expected = rows(table.read())
    if table.snapshot().commit_kind == "APPEND":
        expected = [(k, p, v - 1) for k, p, v in expected]  # every write sets v to its number in every key
    assert sorted((k, p, v) for (k, p), v in newest.items()) == expected


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("seed", [1, 2])
def test_a_writer_killed_at_a_random_point_loses_nothing(tmp_path, mode, seed):
    table = create(tmp_path, mode)
    delay = random.Random(f"{mode}{seed}").uniform(0.0, 0.8)
    proc = worker("write", table.path, 0, ROWS, 40, 3)  # a compact() after every third write
    kill_after(proc, table, 2, delay)
    if table.options.get("bucket") == "-2":  # a batch read sees postponed rows once a compaction moved them
        table.compact()
    check_every_reader(table)
    if mode == "lookup changelog":
        check_changelog(table)
    # The table takes the next write and a full compaction after the crash.
    v = pa.array([appends(table)] * ROWS, pa.int64())
    table.write(pa.table({"k": pa.array(range(ROWS), pa.int64()), "p": ["a", "b"] * (ROWS // 2), "v": v}))
    if mode == "lookup changelog":  # its compaction took the killed write's level-0 files too
        check_changelog(table)
    table.compact(full=True)
    check_every_reader(table)
    check_files_after_expire(table)


@pytest.mark.parametrize("mode", MODES)
def test_a_compaction_killed_at_a_random_point_loses_nothing(tmp_path, mode):
    table = create(tmp_path, mode)
    writer = worker("write", table.path, 0, ROWS, 6)
    writer.communicate(timeout=300)
    assert writer.returncode == 0
    compactor = worker("compact", table.path, 50)
    time.sleep(random.Random(mode).uniform(0.2, 1.5))
    compactor.send_signal(signal.SIGKILL)
    compactor.communicate()
    if table.options.get("bucket") == "-2":
        table.compact()
    check_every_reader(table)
    table.compact(full=True)
    check_every_reader(table)
    check_files_after_expire(table)
