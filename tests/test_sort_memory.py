"""Memory is part of correctness: a sort's peak resident memory stays within
1.25 x memory_limit + 64 MiB, whatever the input size (measured in a separate process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

MIB = 1 << 20


@pytest.mark.parametrize("kind, key", [("int", "k"), ("str", "s"), ("str", "k,s")])
def test_peak_rss_of_a_sort_of_8x_the_limit(kind, key):
    limit = 32 * MIB
    probe = os.path.join(os.path.dirname(__file__), "rss_probe.py")
    result = subprocess.run([sys.executable, probe, str(limit), kind, key], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    assert figures["spilled_runs"] >= 8
    assert figures["rows"] == figures["rows_out"] == figures["rows_in"]
    assert figures["peak_memory_bytes"] <= limit
    assert figures["peak_over_base"] <= 1.25 * limit + 64 * MIB, figures
