"""Ctrl-C at a random moment of a spilling sort or table write: the process exits
promptly (an interrupted write once deadlocked: the main thread joined the spill thread
holding the GIL, which the spill thread needed to free a pyarrow buffer) and leaves no
spill directory behind."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import pytest

SCRIPT = textwrap.dedent(
    """
    import sys
    import numpy as np, pyarrow as pa, merge_core as mc

    spill, what = sys.argv[1], sys.argv[2]
    n = 3_000_000
    rng = np.random.default_rng(0)
    data = pa.table({"k": rng.integers(0, 10**9, n), "v": rng.integers(0, 100, n)})
    print("ready", flush=True)
    if what == "sort":
        mc.sort(data, key="k", memory_limit="8MiB", spill_dir=spill).read_all()
    elif what == "iterate":
        for _ in mc.sort(data.to_batches(50_000), key="k", memory_limit="8MiB", spill_dir=spill):
            pass
    elif what == "buffer":
        buffer = mc.SortBuffer(data.schema, key="k", memory_limit="8MiB", spill_dir=spill)
        for batch in data.to_batches(50_000):
            buffer.write(batch)
        buffer.close()
    else:
        table = mc.Table.create(spill + "/t", data.schema, key="k", buckets=2, merge=mc.Aggregate({"v": "sum"}))
        table.write(data, memory_limit="8MiB", spill_dir=spill)
    print("done", flush=True)
    """
)


@pytest.mark.parametrize("what", ["sort", "iterate", "buffer", "table"])
def test_an_interrupt_ends_the_process_promptly_and_leaves_no_spill(tmp_path, what):
    rng = random.Random(what)
    for _ in range(3):
        spill = tmp_path / f"spill-{rng.random()}"
        spill.mkdir()
        child = subprocess.Popen(
            [sys.executable, "-c", SCRIPT, str(spill), what], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert child.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.2, 2.0))
        child.send_signal(signal.SIGINT)
        sent = time.perf_counter()
        try:
            out, err = child.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            child.kill()
            pytest.fail(f"{what}: the process hung after Ctrl-C")
        waited = time.perf_counter() - sent
        assert waited < 3.0, f"{what}: {waited:.1f}s to stop after Ctrl-C"
        # A signal that lands after the work is done, while the interpreter shuts down
        # (its handlers already reset), ends the process by SIGINT with nothing printed.
        finished = "done" in out
        stopped = child.returncode == 0 or "KeyboardInterrupt" in err
        assert stopped or (finished and child.returncode == -signal.SIGINT), err[-2000:]
        left = [p for p in os.listdir(spill) if p.startswith("merge-core-spill-")]
        assert not left, f"{what}: spill directories left behind: {left}"
