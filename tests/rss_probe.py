"""Run by test_sort_memory.py in a fresh process: sorts (or writes to a table) 8x
memory_limit of generated data and prints the peak resident memory above the process's
footprint before the sort."""

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


#: Each kind's string width (none: seven int64 columns) and rows per generated batch.
KINDS = {"int": (0, 65536), "str": (120, 65536), "wide": (1024, 32768)}


def batches(total: int, kind: str):
    """Batches built straight into Arrow buffers, so generating them costs little memory;
    the generator holds none of them while it makes the next."""
    rng = np.random.default_rng(0)
    produced = 0
    while produced < total:
        produced += (batch := make_batch(rng, kind)).nbytes
        yield batch
        del batch


def make_batch(rng: np.random.Generator, kind: str) -> pa.RecordBatch:
    width, rows = KINDS[kind]
    cols = {"k": rng.integers(0, 2**62, rows)}
    if width:
        data = rng.integers(48, 58, rows * width, dtype=np.uint8)
        offsets = np.arange(0, (rows + 1) * width, width, dtype=np.int32)
        cols["s"] = pa.StringArray.from_buffers(rows, pa.py_buffer(offsets), pa.py_buffer(data))
    else:
        for i in range(7):
            cols[f"p{i}"] = rng.integers(0, 1000, rows)
    return pa.record_batch(cols)


def main() -> None:
    limit, kind, key = int(sys.argv[1]), sys.argv[2], sys.argv[3].split(",")
    from_file = sys.argv[4:] == ["file"]
    if sys.argv[4:] == ["table"]:
        return write_table(limit, kind, key)
    if sys.argv[4:5] in (["read"], ["compact"]):
        return read_table(limit, kind, key, sys.argv[4], int(sys.argv[5]))
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


def write_table(limit: int, kind: str, key: list[str]) -> None:
    """A table write (``Table.write``'s steps) of 8x the limit, sorted within the limit."""
    first = next(batches(1, kind))  # warm up imports and allocators
    with tempfile.TemporaryDirectory() as folder:
        table = mc.Table.create(os.path.join(folder, "t"), first.schema, key=key, buckets=2)
        del first
        base = rss()
        with table.new_write(memory_limit=limit) as write:
            write.write(batches(8 * limit, kind))
            buffer = write._buffer
            figures = {"rows_in": buffer.rows_written, "spilled_runs": buffer.spilled_runs}
            figures["peak_memory_bytes"] = buffer.peak_memory_bytes
            messages = write.prepare_commit()
        table.commit(messages)
        peak = peak_rss()
        rows = sum(f["rows"] for f in table.files())
        print(json.dumps({"rows": rows, "rows_out": rows, "peak_over_base": peak - base, **figures}))


def read_table(size: int, kind: str, key: list[str], step: str, runs: int) -> None:
    """A one-bucket table of ``runs`` commits holding ``size`` bytes of generated rows in
    all, then read whole on one thread (``read``: each batch dropped once counted) or
    fully compacted on one thread (``compact``), measured from a high-water mark reset
    after writing."""
    with tempfile.TemporaryDirectory() as folder:
        generated = batches(size, kind)
        first = next(generated)
        # write-only: the runs stay as written (a fifth write would compact, as Paimon's writer does)
        options = {"write-only": "true"}
        table = mc.Table.create(os.path.join(folder, "t"), first.schema, key=key, buckets=1, options=options)
        commits = [[] for _ in range(runs)]
        for i, batch in enumerate(itertools.chain([first], generated)):
            commits[i % runs].append(batch)
        del first, batch
        for parts in commits:  # row groups of a megabyte: files of many row groups (16 MiB / 16)
            table.write(parts, memory_limit="16MiB")
            parts.clear()
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # the high-water mark starts again from here
        base = rss()
        if step == "read":
            measure(table.read(batch_size=8192, threads=1), key, base)
            return
        merged = table.compact(full=True, threads=1)["files_merged"]
        peak = peak_rss()
        rows = sum(f["rows"] for f in table.files())
        print(json.dumps({"rows": rows, "peak_over_base": peak - base, "files": len(table.files()), "runs": merged}))


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
