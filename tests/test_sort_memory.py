"""Memory is part of correctness: a sort's or a table write's peak resident memory stays
within 1.25 x memory_limit + 64 MiB, whatever the input size and row width (measured in
a separate process); what is held beside the sort is counted in bytes, not rows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import weakref

import merge_core as mc
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from merge_core.paimon._table import COMPACT_BATCH_ROWS
from merge_core.paimon._write import ENCODE_MEMORY

MIB = 1 << 20
ROW_GROUP_SHARE = ENCODE_MEMORY // 4  # the row group a compaction's file gathers and encodes


def probe(limit: int, kind: str, key: str, *mode: str) -> dict:
    script = os.path.join(os.path.dirname(__file__), "rss_probe.py")
    command = [sys.executable, script, str(limit), kind, key, *mode]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    assert figures["spilled_runs"] >= 8
    assert figures["rows"] == figures["rows_out"] == figures["rows_in"]
    assert figures["peak_memory_bytes"] <= limit
    return figures


@pytest.mark.parametrize("kind, key", [("int", "k"), ("str", "s"), ("str", "k,s")])
def test_peak_rss_of_a_sort_of_8x_the_limit(kind, key):
    limit = 32 * MIB
    figures = probe(limit, kind, key)
    assert figures["peak_over_base"] <= 1.25 * limit + 64 * MIB, figures


@pytest.mark.parametrize("kind, key", [("int", "k"), ("str", "s")])
def test_a_sort_of_a_parquet_path_holds_little_beside_its_budget(kind, key):
    """Given a file's path, the sort decodes it in Rust a few batches ahead: no reader of
    the caller's holds row groups, so the process stays near the budget."""
    limit = 32 * MIB
    figures = probe(limit, kind, key, "file")
    assert figures["peak_over_base"] <= 1.25 * limit + 24 * MIB, figures


def test_a_list_column_is_charged_only_its_rows_elements():
    """A slice of a list column keeps its whole child array; each row must be charged
    its own elements, or a large input could not be sorted in a small budget at all."""
    import numpy as np

    n = 2_000_000
    keys = np.random.default_rng(7).permutation(n)
    lists = pa.ListArray.from_arrays(pa.array(np.arange(0, 3 * n + 1, 3), pa.int32()), pa.array(np.arange(3 * n)))
    data = pa.table({"k": keys, "l": lists})  # one chunk: every slice shares the 48 MB child
    stream = mc.sort(data, key="k", memory_limit="16MiB")
    out = stream.read_all()
    assert out.num_rows == n and out.column("k").to_pylist()[:3] == [0, 1, 2]
    first = int(np.flatnonzero(keys == 0)[0])
    assert out.column("l")[0].as_py() == [3 * first, 3 * first + 1, 3 * first + 2]
    assert stream.stats["peak_memory_bytes"] <= 16 * 2**20


WIDE_LIMIT = 64 * MIB  # 8x it: 512 MiB of 1 KiB strings, in 32 MiB batches


def test_peak_rss_of_a_sort_of_wide_rows():
    """1 KiB strings at 64 MiB: beside its budget the sort holds the batch it is cutting
    and a few output batches. Before: the first input batch for the whole sort
    (``itertools.chain`` held it) and output batches of 8,192 rows whatever their width
    (peak 165 MiB over the base, now 105-108)."""
    figures = probe(WIDE_LIMIT, "wide", "k")
    assert figures["peak_over_base"] <= 1.25 * WIDE_LIMIT + 64 * MIB, figures


@pytest.mark.parametrize("kind", ["int", "wide"])
def test_peak_rss_of_a_table_write_of_8x_the_limit(kind):
    """A table write holds its sort's budget, and beside it row groups being encoded of
    at most a quarter of it in all. Before, with row groups of 131,072 rows and up to
    four of them queued for encoding, 1 KiB strings peaked 423 MiB over the base."""
    figures = probe(WIDE_LIMIT, kind, "k", "table")
    assert figures["peak_over_base"] <= 1.25 * WIDE_LIMIT + 64 * MIB, figures


def wide_rows(n: int, seed: int = 0) -> pa.Table:
    """``n`` rows of a unique int64 key and a 1 KiB string."""
    rng = np.random.default_rng(seed)
    data = rng.integers(97, 123, n * 1024, dtype=np.uint8)
    strings = pa.StringArray.from_buffers(
        n, pa.py_buffer(np.arange(0, (n + 1) * 1024, 1024, dtype=np.int32)), pa.py_buffer(data)
    )
    return pa.table({"k": rng.permutation(n), "s": strings})


@pytest.mark.parametrize("n", [8_000, 40_000])  # sorted in memory, spilled
def test_output_batches_of_wide_rows_are_cut_by_bytes(n):
    """Output batches hold about a sixteenth of the limit at most, however few rows that
    is (``batch_size`` is a number of rows at most)."""
    data = wide_rows(n)
    stream = mc.sort(data, key="k", memory_limit="16MiB")
    batches = list(stream)
    assert max(b.nbytes for b in batches) <= (16 * MIB) // 16
    assert pa.Table.from_batches(batches).equals(data.sort_by("k"))
    assert (stream.stats["spilled_runs"] > 0) == (n > 10_000)


def test_a_table_write_cuts_row_groups_of_wide_rows_by_bytes(tmp_path):
    """At 16 MiB the write's encoding may hold 4 MiB, a quarter of it per row group: row
    groups of about a thousand 1 KiB rows, not 131,072 (here, the whole file)."""
    data = wide_rows(40_000)
    table = mc.Table.create(tmp_path / "db.db" / "t", data.schema, key="k", buckets=1)
    table.write(data, memory_limit="16MiB")
    (f,) = table.files()
    metadata = pq.ParquetFile(tmp_path / "db.db" / "t" / f["path"]).metadata
    groups = [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]
    assert sum(groups) == 40_000 and max(groups) <= 1024, groups
    out, want = table.read().read_all(), data.sort_by("k")
    assert all(out.column(c).equals(want.column(c)) for c in ("k", "s"))


def test_no_batch_of_an_iterable_is_held_once_taken(tmp_path):
    """A sort or table write of an iterable holds none of the batches it copied from
    while the next is made: each is as large as the budget. (Before, the sort held the
    first to its end, and a table write each batch while the next was made.)"""
    refs: list[weakref.ref] = []
    alive: list[bool] = []

    def batches():
        for i in range(6):
            alive.extend(r() is not None for r in refs)
            batch = wide_rows(256, i).to_batches()[0]  # 256 KiB, cut at a 256 KiB limit
            refs.append(weakref.ref(batch))
            yield batch
            del batch

    assert mc.sort(batches(), key="k", memory_limit="256KiB").read_all().num_rows == 6 * 256
    assert alive and not any(alive), alive
    refs.clear()
    alive.clear()
    table = mc.Table.create(tmp_path / "db.db" / "t", wide_rows(1).schema, key="k", buckets=1)
    assert table.write(batches(), memory_limit="256KiB")["rows"] == 256
    assert alive and not any(alive), alive


def probe_read(size: int, runs: int, step: str = "read") -> dict:
    script = os.path.join(os.path.dirname(__file__), "rss_probe.py")
    command = [sys.executable, script, str(size), "str", "k", step, str(runs)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_a_tables_read_holds_a_few_batches_per_run_whatever_its_size():
    """A merged read holds, for each run, the batch being merged and the next one decoded
    ahead (with the pages it is cut from), plus the output batch: bounded by the runs and
    the batch size, not by the rows. Four times the rows, the same peak. (8 runs of
    8,192-row batches of 141-byte rows: 9 MiB of batches, twice over, and the allocators'
    slack.)"""
    runs, batch_bytes = 8, 8192 * (8 + 124 + 8 + 1)
    small, large = probe_read(64 * MIB, runs), probe_read(256 * MIB, runs)
    assert small["runs"] == large["runs"] == runs
    assert large["rows"] == 4 * small["rows"]
    assert large["peak_over_base"] <= 1.15 * small["peak_over_base"] + 4 * MIB, (small, large)
    assert large["peak_over_base"] <= runs * 4 * batch_bytes + 24 * MIB, large


def test_a_full_compaction_holds_a_few_batches_per_run_whatever_its_size():
    """A compaction's merge holds, for each run, the batch its cursor stands in and the
    one before it (decoded into buffers up to twice their rows), a few merged batches
    (one being built, one ready, one the writer takes) and the row group being encoded:
    bounded by the runs and the batch size, not by the rows (docs/memory.md). Before, its
    merge read 65,536-row batches and kept up to 128 MiB of output ready for the slower
    writer: 150 and 258 MiB at these sizes, growing with the rows."""
    runs, batch_bytes = 8, COMPACT_BATCH_ROWS * (8 + 124 + 8 + 1)
    small, large = probe_read(64 * MIB, runs, "compact"), probe_read(256 * MIB, runs, "compact")
    assert small["runs"] == large["runs"] == runs
    # one run, in files of target-file-size (128 MB): the large one's is rolled
    assert small["files"] == 1 and 1 <= large["files"] <= 3, (small, large)
    assert large["rows"] == 4 * small["rows"]
    assert large["peak_over_base"] <= 1.15 * small["peak_over_base"] + 4 * MIB, (small, large)
    bound = runs * 4 * batch_bytes + 4 * batch_bytes + ROW_GROUP_SHARE
    assert large["peak_over_base"] <= bound + 40 * MIB, large
