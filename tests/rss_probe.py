"""Run by test_sort_memory.py in a fresh process: sorts 8x memory_limit of generated data
and prints the peak resident memory above the process's footprint before the sort."""

import itertools
import json
import os
import resource
import sys
import tempfile

import merge_core as mc
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

PAGE = resource.getpagesize()


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def peak_rss() -> int:
    """This process image's high-water mark. (`ru_maxrss` would not do: it survives exec,
    so a child of a large test runner starts with the runner's peak.)"""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))


def batches(total: int, kind: str, rows: int = 65536):
    """Batches built straight into Arrow buffers, so generating them costs little memory."""
    rng = np.random.default_rng(0)
    produced = 0
    while produced < total:
        cols = {"k": rng.integers(0, 2**62, rows)}
        if kind == "str":
            data = rng.integers(48, 58, rows * 120, dtype=np.uint8)
            offsets = np.arange(0, (rows + 1) * 120, 120, dtype=np.int32)
            cols["s"] = pa.StringArray.from_buffers(rows, pa.py_buffer(offsets), pa.py_buffer(data))
        else:
            for i in range(7):
                cols[f"p{i}"] = rng.integers(0, 1000, rows)
        batch = pa.record_batch(cols)
        produced += batch.nbytes
        yield batch


def main() -> None:
    limit, kind, key = int(sys.argv[1]), sys.argv[2], sys.argv[3].split(",")
    from_file = sys.argv[4:] == ["file"]
    next(batches(1, kind))  # warm up imports and allocators
    with tempfile.TemporaryDirectory() as folder:
        if from_file:  # the data written to a Parquet file first, which the sort reads itself
            source = os.path.join(folder, "input.parquet")
            generated = batches(8 * limit, kind)
            first = next(generated)
            with pq.ParquetWriter(source, first.schema) as writer:
                for batch in itertools.chain([first], generated):
                    writer.write_batch(batch)
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")  # the high-water mark starts again from here
        else:
            source = batches(8 * limit, kind)
        base = rss()
        measure(mc.sort(source, key=key, memory_limit=limit), key, base)


def measure(stream, key: list[str], base: int) -> None:
    rows, previous = 0, None
    for batch in stream:
        rows += batch.num_rows
        first = batch.column(key[0])[0].as_py()
        assert previous is None or previous <= first
        previous = batch.column(key[0])[-1].as_py()
    peak = peak_rss()
    print(json.dumps({"rows": rows, "peak_over_base": peak - base, **stream.stats}))


if __name__ == "__main__":
    main()
