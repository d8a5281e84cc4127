"""External sort at `factor` x the memory limit: merge-core, DataFusion and DuckDB within
the limit (spilling), Polars and pyarrow in memory. Each tool sorts in its own process so
that its peak memory and its disk writes are its own (`python -m merge_core.bench._sort`
is that process)."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time

from ._measure import MiB, Run, Section, missing, peak_rss, progress, rss, written_bytes

KEYS = {"int64": ["k"], "str128": ["s"], "composite": ["s", "k"]}
STRING_BYTES = 128
TOOLS = {  # tool -> module it needs
    "read only (floor)": None,
    "merge-core": None,
    "merge-core (uncompressed spills)": None,
    "merge-core (batches from Python)": None,
    "DataFusion": "datafusion",
    "DataFusion (batches from Python)": "datafusion",
    "DuckDB": "duckdb",
    "Polars (in memory)": "polars",
    "pyarrow (in memory)": None,
}


def write_data(path: str, total_bytes: int) -> int:
    """Random rows (int64 key, 128-byte string sharing a 112-byte prefix, 4 int64) of
    about `total_bytes` in Arrow, one row group per 64k rows; returns the row count."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(42)
    rows_per_batch = 1 << 16
    batches = max(1, total_bytes // ((STRING_BYTES + 4 + 8 * 5) * rows_per_batch))
    schema = pa.schema([("k", pa.int64()), ("s", pa.string())] + [(f"p{i}", pa.int64()) for i in range(4)])
    with pq.ParquetWriter(path, schema) as writer:
        for _ in range(batches):
            tail = rng.integers(48, 58, rows_per_batch * 16, dtype=np.uint8).reshape(rows_per_batch, 16)
            data = np.concatenate([np.full((rows_per_batch, STRING_BYTES - 16), ord("x"), np.uint8), tail], axis=1)
            offsets = np.arange(0, (rows_per_batch + 1) * STRING_BYTES, STRING_BYTES, dtype=np.int32)
            strings = pa.StringArray.from_buffers(rows_per_batch, pa.py_buffer(offsets), pa.py_buffer(data.ravel()))
            columns = [pa.array(rng.integers(0, 1 << 40, rows_per_batch)), strings]
            columns += [pa.array(rng.integers(0, 1000, rows_per_batch)) for _ in range(4)]
            writer.write_batch(pa.record_batch(columns, schema=schema), row_group_size=rows_per_batch)
    return batches * rows_per_batch


def sort_here(tool: str, path: str, key: list[str], limit: int, tmp: str) -> dict:
    """Sorts in this process and returns its figures (run in a fresh process)."""
    import pyarrow.parquet as pq

    def batches():
        return pq.ParquetFile(path).iter_batches(batch_size=65536)

    order = ", ".join(key)
    base, io0, start = rss(), written_bytes(), time.perf_counter()
    if tool == "read only (floor)":
        rows = sum(b.num_rows for b in batches())
    elif tool.startswith("merge-core"):
        import merge_core as mc

        compression = "none" if "uncompressed" in tool else "lz4"
        source = batches() if "from Python" in tool else path
        sorted_ = mc.sort(source, key=key, memory_limit=limit, spill_dir=tmp, spill_compression=compression)
        rows = sum(b.num_rows for b in sorted_)
    elif tool.startswith("DataFusion"):
        import pyarrow.dataset as ds
        from datafusion import RuntimeEnvBuilder, SessionConfig, SessionContext

        runtime = RuntimeEnvBuilder().with_fair_spill_pool(limit).with_disk_manager_specified(tmp)
        # Two partitions exhaust a small pool in SortPreservingMergeExec; one sorts within it.
        ctx = SessionContext(SessionConfig().with_target_partitions(1), runtime)
        if "from Python" in tool:  # pyarrow's scanner hands DataFusion the batches
            ctx.register_dataset("t", ds.dataset(path))
        else:
            ctx.register_parquet("t", path)
        rows = sum(b.to_pyarrow().num_rows for b in ctx.sql(f"select * from t order by {order}").execute_stream())
    elif tool == "DuckDB":
        import duckdb

        con = duckdb.connect(config={"memory_limit": f"{max(1, limit // MiB)}MB", "temp_directory": tmp})
        reader = con.sql(f"select * from read_parquet('{path}') order by {order}").to_arrow_reader(65536)
        rows = sum(b.num_rows for b in reader)
    elif tool == "Polars (in memory)":
        import polars as pl

        rows = pl.read_parquet(path).sort(key).height
    elif tool == "pyarrow (in memory)":
        rows = pq.read_table(path).sort_by([(k, "ascending") for k in key]).num_rows
    else:
        raise ValueError(f"unknown tool {tool}")
    return {
        "rows": rows,
        "seconds": time.perf_counter() - start,
        "peak": peak_rss() - base,
        "written": written_bytes() - io0,
    }


def sort_in_process(tool: str, path: str, key: list[str], limit: int) -> Run:
    why = missing(TOOLS[tool])
    if why:
        return Run(tool, note=why)
    command = [sys.executable, "-m", "merge_core.bench._sort", tool, path, ",".join(key), str(limit)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or ["no message"]
        error = next((line for line in reversed(lines) if "Error" in line), lines[-1])
        return Run(tool, note=f"failed: {error.strip()[:160]}")
    figures = json.loads(done.stdout)
    # Every sort returns all rows; the sorted order itself is covered by the test suite.
    return Run(
        tool,
        figures["seconds"],
        figures["rows"],
        figures["peak"],
        extra={"disk written (MiB)": str(figures["written"] // MiB)},
    )


def run(folder: str, limit: int, factor: int) -> Section:
    path = f"{folder}/sort-input.parquet"
    rows = write_data(path, factor * limit)
    runs = []
    for key_name, key in KEYS.items():
        for tool in TOOLS:
            result = sort_in_process(tool, path, key, limit)
            result.tool = f"{key_name}: {tool}"
            if result.rows is not None and result.rows != rows:
                result.note = f"returned {result.rows:,} of {rows:,} rows"
            runs.append(result)
            figures = f"{result.seconds:.2f} s, peak +{result.peak_bytes // MiB} MiB" if result.seconds else result.note
            progress(f"  {result.tool}: {figures}")
    return Section(
        "sort",
        f"External sort at {factor}x a {limit // MiB} MiB memory limit",
        [
            f"{rows:,} rows (int64 key, {STRING_BYTES}-byte string with a shared 112-byte prefix, four int64"
            f" columns), about {factor}x the limit in Arrow, read from one Parquet file; keys: int64, the string,"
            " and (string, int64).",
            "merge-core (lz4 spills by default), DataFusion (fair spill pool of the limit, one partition) and"
            " DuckDB (`memory_limit`) sort within the limit, spilling to disk; Polars and pyarrow sort in memory"
            " for reference. Every tool is given the file's path and reads it itself (merge-core decodes it in"
            " Rust), except the `batches from Python` lines: merge-core takes pyarrow's `iter_batches` of the file"
            " as a Python iterator, DataFusion a pyarrow dataset of it (`register_dataset`). Each run is its"
            " own process: peak memory is above that process's start, disk"
            " written is its write() bytes; `read only` is the cost of reading the file with pyarrow and"
            " nothing else.",
            "Ratios compare with merge-core on the same key.",
        ],
        runs,
        extra_columns=["disk written (MiB)"],
    )


def main() -> None:
    tool, path, key, limit = sys.argv[1:5]
    with tempfile.TemporaryDirectory(prefix="mc-sort-bench-") as tmp:
        print(json.dumps(sort_here(tool, path, key.split(","), int(limit), tmp)))


if __name__ == "__main__":
    main()
