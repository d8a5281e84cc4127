"""A table (Paimon's layout) under a killed writer and racing writers and compactors,
in real subprocesses."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import merge_core as mc
import pyarrow as pa
import pytest

WORKER = str(Path(__file__).with_name("table_worker.py"))
SCHEMA = pa.schema([("k", pa.int64()), ("p", pa.string()), ("v", pa.int64())])


def worker(*args: object) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, WORKER, *map(str, args)], stdout=subprocess.PIPE, text=True)


def latest(table: mc.Table) -> int:
    return max(table.snapshots(), default=0)


def check_intact(table: mc.Table) -> int:
    """Every live file exists and the latest snapshot reads whole; returns its id."""
    snapshot = latest(table)
    for f in table.files():
        assert (table.path / f["path"]).exists(), f["path"]
    out = table.read().read_all()
    if snapshot:
        # Writer 0 commits write i (its (i + 1)-th APPEND snapshot, each perhaps followed
        # by its own compaction's COMPACT) with v = i over all its keys.
        appends = [s for s in table.snapshots() if table.snapshot(s).commit_kind == "APPEND"]
        assert out.num_rows == 20_000
        assert set(out.column("v").to_pylist()) == {len(appends) - 1}
    return snapshot


@pytest.mark.parametrize("delay", [0.05, 0.3, 0.9])
def test_a_killed_writer_leaves_the_last_commit_intact(tmp_path, delay):
    table = mc.Table.create(tmp_path / "t", SCHEMA, key="k", partition_by="p", buckets=4)
    proc = worker("write", tmp_path / "t", 0, 20_000, 50)
    deadline = time.time() + 60
    while latest(table) < 2 and time.time() < deadline:
        time.sleep(0.02)
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    committed = check_intact(table)
    assert committed >= 2
    # The table takes new writes after the crash, and expire clears what the crash left.
    table.write(pa.table({"k": pa.array([0], pa.int64()), "p": ["a"], "v": pa.array([-1], pa.int64())}))
    kinds = [table.snapshot(s).commit_kind for s in table.snapshots() if s > committed]
    assert kinds in (["APPEND"], ["APPEND", "COMPACT"]), kinds
    table.expire(keep_snapshots=1, orphan_age=0)
    live = {f["path"] for f in table.files()}
    on_disk = {p.relative_to(table.path).as_posix() for p in table.path.rglob("data-*.parquet")}
    assert on_disk == live
    assert not [p for p in table.path.rglob("*") if p.name.startswith(".")], "no temporary files left"


def test_racing_writers_both_commit_in_order(tmp_path):
    table = mc.Table.create(tmp_path / "t", SCHEMA, key="k", partition_by="p", buckets=2)
    procs = [worker("write", tmp_path / "t", w, 2_000, 8) for w in range(2)]
    procs.append(worker("compact", tmp_path / "t", 6))
    procs.append(worker("compact", tmp_path / "t", 6))
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), outputs
    writes = [s for s in table.snapshots() if table.snapshot(s).commit_kind == "APPEND"]
    assert len(writes) == 16, "every write committed"
    out = table.read().read_all()
    assert out.num_rows == 4_000 and set(out.column("v").to_pylist()) == {7}, "nothing lost, last write wins"
    assert table.snapshots() == list(range(1, len(table.snapshots()) + 1)), "no snapshot id skipped"
