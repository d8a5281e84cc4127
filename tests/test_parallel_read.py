"""A merge cut into key ranges merged in parallel (a one-bucket table's read, a k-way merge
of Parquet files) gives what one thread gives, for any thread count."""

from __future__ import annotations

import os
import signal
import threading
import time
import warnings
from pathlib import Path

import merge_core as mc
import merge_core.paimon._write as write
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ROWS = 200_000  # above twice the least rows a slice takes (65,536), so reads are cut


def keys_of(kind: str, numbers: np.ndarray) -> pa.Array:
    if kind == "int":
        return pa.array(numbers, pa.int64())
    # A long shared prefix: the page statistics of such keys are truncated.
    return pa.array([f"{'k' * 70}{n:08d}" for n in numbers.tolist()], pa.string())


def one_bucket_table(root, kind: str) -> tuple[mc.Table, list, int]:
    """A one-bucket table of 5 commits (deletes among them): the table, its rows as
    sorted (key, value) pairs, and its number of commits."""
    rng = np.random.default_rng(5)
    schema = pa.schema([pa.field("k", pa.int64() if kind == "int" else pa.string(), False), ("v", pa.int64())])
    # write-only: the 5 runs stay as written (a fifth write would compact, as Paimon's writer does)
    table = mc.Table.create(root, schema, key="k", buckets=1, options={"write-only": "true"})
    expected: dict = {}
    commits = [np.arange(ROWS)] + [rng.choice(ROWS + 20_000, 60_000, replace=False) for _ in range(4)]
    for version, numbers in enumerate(commits):
        keys = keys_of(kind, numbers)
        values = pa.array(numbers * 10 + version, pa.int64())
        deletes = np.zeros(len(numbers), bool) if version == 0 else rng.random(len(numbers)) < 0.2
        kinds = pa.array(np.where(deletes, "-D", "+I"))
        table.write(pa.table({"k": keys, "v": values, "_kind": kinds}), row_kind="_kind")
        for k, v, deleted in zip(keys.to_pylist(), values.to_pylist(), deletes.tolist(), strict=True):
            if deleted:
                expected.pop(k, None)
            else:
                expected[k] = v
    return table, sorted(expected.items()), len(commits)


@pytest.mark.parametrize("kind", ["int", "string"])
def test_a_one_bucket_table_reads_alike_on_any_thread_count(tmp_path, monkeypatch, kind):
    monkeypatch.setattr(write, "PAGE_ROWS", 2048)  # pages fine enough to cut this little data
    table, reference, runs = one_bucket_table(tmp_path / "t", kind)
    for threads in (1, 2, 3, 8):
        stream = table.read(threads=threads)
        got = stream.read_all()
        assert list(zip(got["k"].to_pylist(), got["v"].to_pylist(), strict=True)) == reference, threads
        # One thread merges the bucket whole; more threads merge it in key ranges.
        assert (stream.stats["runs"] > runs) == (threads > 1), (threads, stream.stats)


@pytest.mark.parametrize("kind", ["int", "string"])
def test_a_merge_of_parquet_files_is_alike_on_any_thread_count(tmp_path, kind):
    rng = np.random.default_rng(9)
    paths, expected = [], {}
    for run in range(6):
        numbers = np.sort(rng.choice(ROWS, ROWS // 4, replace=False))
        keys = keys_of(kind, numbers)
        values = pa.array(np.full(len(numbers), run), pa.int64())
        paths.append(str(tmp_path / f"{run}.parquet"))
        pq.write_table(
            pa.table({"k": keys, "v": values}),
            paths[-1],
            write_page_index=True,
            data_page_size=32 << 10,
            use_dictionary=False,
        )
        expected.update(zip(keys.to_pylist(), values.to_pylist(), strict=True))  # a later run is newer
    reference = sorted(expected.items())
    for threads in (1, 2, 3, 8):
        stream = mc.merge(paths, key="k", threads=threads)
        got = stream.read_all()
        assert list(zip(got["k"].to_pylist(), got["v"].to_pylist(), strict=True)) == reference, threads
        assert (stream.stats["runs"] > len(paths)) == (threads > 1), (threads, stream.stats)


@pytest.mark.parametrize("kept", [0.0, 0.6])
def test_a_cut_read_of_a_damaged_file_fails_and_never_hangs(tmp_path, monkeypatch, kept):
    """Key ranges share the pages a cut falls in, one waiting while the other decodes
    them: a file that cannot be decoded (all of it, or past 60% of its bytes) must fail
    the read on every thread count, not leave a range waiting."""
    monkeypatch.setattr(write, "PAGE_ROWS", 2048)
    table, _, _ = one_bucket_table(tmp_path / "t", "int")
    files = [Path(f.path) for split in table.plan() for s in split.sections for run in s.runs for f in run]
    intact = {f: f.read_bytes() for f in files}
    for threads in (2, 3, 8):
        stream = table.read(threads=threads)  # planned: the files' footers are read now
        for f, data in intact.items():
            f.write_bytes(data[: max(100, int(len(data) * kept))])
        error = _error_within(stream.read_all, seconds=120)
        assert isinstance(error, mc.CorruptTableError), (threads, error)
        for f, data in intact.items():
            f.write_bytes(data)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_child_made_by_fork_merges_on_workers_of_its_own(tmp_path, monkeypatch):
    """Worker threads are kept for the next read; a child made by `fork` has none of
    them, whatever its parent's list of idle workers says: its read must not hand its
    ranges to threads that are not there (it would wait for them forever)."""
    monkeypatch.setattr(write, "PAGE_ROWS", 2048)
    table, reference, _ = one_bucket_table(tmp_path / "t", "int")
    keys = [k for k, _ in reference]
    assert table.read(threads=2).read_all()["k"].to_pylist() == keys  # the workers are idle now
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads (Python 3.12+)
        child = os.fork()
    if child == 0:
        same = False
        try:
            same = table.read(threads=2).read_all()["k"].to_pylist() == keys
        finally:
            os._exit(0 if same else 1)  # never back into pytest
    deadline = time.monotonic() + 120
    while (done := os.waitpid(child, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    if done[0] == 0:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
        pytest.fail("the child's read hangs")
    assert os.waitstatus_to_exitcode(done[1]) == 0, "the child read other rows, or failed"


def _error_within(work, seconds: float) -> Exception | None:
    """What `work` raises (None if nothing), run on a thread that must end in `seconds`."""
    outcome: list = []

    def run() -> None:
        try:
            work()
        except Exception as error:
            outcome.append(error)
        else:
            outcome.append(None)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout=seconds)
    assert not thread.is_alive(), "the read hangs"
    return outcome[0]
