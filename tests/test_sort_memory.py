"""Memory is part of correctness: a sort's peak resident memory stays within
1.25 x memory_limit + 64 MiB, whatever the input size (measured in a separate process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import merge_core as mc
import pyarrow as pa
import pytest

MIB = 1 << 20


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
