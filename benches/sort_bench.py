"""External sort benchmark: merge-core against the tools a user would pick instead.

Sorts `factor` x `memory_limit` of data (Arrow size) read from one Parquet file, for an
int64 key, a 128-byte string key and a composite key. merge-core, DataFusion (fair spill
pool of the same size, spilling to disk) and DuckDB (same memory_limit) sort within the
limit; Polars and pyarrow sort in memory, for reference. Every run is a fresh process
so its peak RSS is its own; disk written is the process's write() bytes.

    python benches/sort_bench.py                       # 64 MiB limit, 8x data
    python benches/sort_bench.py --limit-mib 32 --out docs/benchmarks/sort.md
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time

KEYS = {"int64": ["k"], "str128": ["s"], "composite": ["s", "k"]}
TOOLS = ["read-only", "merge-core", "merge-core-uncompressed", "datafusion", "duckdb", "polars", "pyarrow"]
STRING_BYTES = 128


def generate(path: str, total_bytes: int) -> int:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(42)
    rows_per_batch = 1 << 16
    row_bytes = STRING_BYTES + 4 + 8 * 5
    batches = max(1, total_bytes // (row_bytes * rows_per_batch))
    schema = pa.schema([("k", pa.int64()), ("s", pa.string())] + [(f"p{i}", pa.int64()) for i in range(4)])
    with pq.ParquetWriter(path, schema) as writer:  # one row group per batch: readers stream
        for _ in range(batches):
            # Strings share a long prefix, so comparisons must look at most of the 128 bytes.
            tail = rng.integers(48, 58, rows_per_batch * 16, dtype=np.uint8).reshape(rows_per_batch, 16)
            data = np.concatenate([np.full((rows_per_batch, STRING_BYTES - 16), ord("x"), np.uint8), tail], axis=1)
            offsets = np.arange(0, (rows_per_batch + 1) * STRING_BYTES, STRING_BYTES, dtype=np.int32)
            strings = pa.StringArray.from_buffers(rows_per_batch, pa.py_buffer(offsets), pa.py_buffer(data.ravel()))
            cols = [pa.array(rng.integers(0, 1 << 40, rows_per_batch)), strings]
            cols += [pa.array(rng.integers(0, 1000, rows_per_batch)) for _ in range(4)]
            writer.write_batch(pa.record_batch(cols, schema=schema), row_group_size=rows_per_batch)
    return batches * rows_per_batch


def written_bytes() -> int:
    with open("/proc/self/io") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("wchar:"))


def peak_rss() -> int:
    """This process image's high-water mark (`ru_maxrss` survives exec, so it would
    include the parent's peak)."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def run_tool(tool: str, path: str, key: list[str], limit: int, tmp: str) -> dict:
    """Sorts in this process; returns its figures."""
    import pyarrow.parquet as pq

    count = 0

    def consume(batches):
        nonlocal count
        for b in batches:
            count += b.num_rows

    if tool == "read-only":
        # Reading the Parquet file and nothing else: the floor every tool stands on.
        base, io0, start = rss(), written_bytes(), time.perf_counter()
        consume(pq.ParquetFile(path).iter_batches(batch_size=65536))
    elif tool.startswith("merge-core"):
        import merge_core as mc

        compression = "none" if tool.endswith("uncompressed") else "lz4"
        base, io0, start = rss(), written_bytes(), time.perf_counter()
        batches = pq.ParquetFile(path).iter_batches(batch_size=65536)
        consume(mc.sort(batches, key=key, memory_limit=limit, spill_dir=tmp, spill_compression=compression))
    elif tool == "datafusion":
        from datafusion import RuntimeEnvBuilder, SessionConfig, SessionContext

        runtime = RuntimeEnvBuilder().with_fair_spill_pool(limit).with_disk_manager_specified(tmp)
        # Two partitions exhaust a 64 MiB pool in SortPreservingMergeExec; one sorts within it.
        ctx = SessionContext(SessionConfig().with_target_partitions(1), runtime)
        base, io0, start = rss(), written_bytes(), time.perf_counter()
        ctx.register_parquet("t", path)
        order = ", ".join(key)
        consume(b.to_pyarrow() for b in ctx.sql(f"select * from t order by {order}").execute_stream())
    elif tool == "duckdb":
        import duckdb

        con = duckdb.connect(config={"memory_limit": f"{limit // (1 << 20)}MB", "temp_directory": tmp})
        base, io0, start = rss(), written_bytes(), time.perf_counter()
        order = ", ".join(key)
        consume(con.sql(f"select * from read_parquet('{path}') order by {order}").to_arrow_reader(65536))
    elif tool == "polars":
        import polars as pl

        base, io0, start = rss(), written_bytes(), time.perf_counter()
        count = pl.read_parquet(path).sort(key).height
    elif tool == "pyarrow":
        base, io0, start = rss(), written_bytes(), time.perf_counter()
        count = pq.read_table(path).sort_by([(k, "ascending") for k in key]).num_rows
    else:
        raise SystemExit(f"unknown tool {tool}")
    seconds = time.perf_counter() - start
    peak = peak_rss()
    return {"rows": count, "seconds": seconds, "peak_rss_over_base": peak - base, "disk_written": written_bytes() - io0}


def versions() -> dict[str, str]:
    out = {}
    for name, module in [
        ("merge-core", "merge_core"),
        ("datafusion", "datafusion"),
        ("duckdb", "duckdb"),
        ("polars", "polars"),
        ("pyarrow", "pyarrow"),
    ]:
        try:
            out[name] = __import__(module).__version__
        except ImportError:
            out[name] = None
    out["merge-core-uncompressed"] = out["merge-core"]
    out["read-only"] = out["pyarrow"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit-mib", type=int, default=64)
    parser.add_argument("--factor", type=int, default=8)
    parser.add_argument("--tools", default=",".join(TOOLS))
    parser.add_argument("--keys", default=",".join(KEYS))
    parser.add_argument("--out", help="write the Markdown report here")
    parser.add_argument("--run", nargs=3, metavar=("TOOL", "FILE", "KEY"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    limit = args.limit_mib << 20
    if args.run:
        tool, path, key = args.run
        with tempfile.TemporaryDirectory() as tmp:
            print(json.dumps(run_tool(tool, path, key.split(","), limit, tmp)))
        return

    have = versions()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "data.parquet")
        rows = generate(path, args.factor * limit)
        results = []
        for key_name in args.keys.split(","):
            for tool in args.tools.split(","):
                if have.get(tool) is None:
                    results.append({"key": key_name, "tool": tool, "skipped": "not installed"})
                    continue
                cmd = [
                    sys.executable,
                    __file__,
                    "--limit-mib",
                    str(args.limit_mib),
                    "--run",
                    tool,
                    path,
                    ",".join(KEYS[key_name]),
                ]
                done = subprocess.run(cmd, capture_output=True, text=True)
                if done.returncode != 0:
                    lines = done.stderr.strip().splitlines()
                    error = next((line for line in lines if "Error" in line and "Traceback" not in line), lines[-1])
                    results.append({"key": key_name, "tool": tool, "skipped": error.strip()[:160]})
                    continue
                figures = json.loads(done.stdout)
                results.append({"key": key_name, "tool": tool, **figures})
                print(
                    f"{key_name:10} {tool:11} {figures['seconds']:7.2f}s "
                    f"peak +{figures['peak_rss_over_base'] >> 20} MiB, wrote {figures['disk_written'] >> 20} MiB",
                    flush=True,
                )
    report = render(results, rows, args, have)
    print(report)
    if args.out:
        with open(args.out, "w") as f:
            f.write(report)


def render(results: list[dict], rows: int, args, have: dict) -> str:
    lines = [
        "# External sort: merge-core and its peers",
        "",
        f"- Data: {rows:,} rows (int64 key, {STRING_BYTES}-byte string, four int64 columns), about "
        f"{args.factor}x the memory limit of {args.limit_mib} MiB, read from one Parquet file.",
        f"- Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}.",
        "- Versions: "
        + ", ".join(
            f"{k} {v}"
            for k, v in have.items()
            if v and k in ("merge-core", "datafusion", "duckdb", "polars", "pyarrow")
        ),
        "- merge-core, DataFusion (fair spill pool, target_partitions=1) and DuckDB (memory_limit, default threads)"
        " sort within the limit, spilling; Polars and pyarrow sort in memory.",
        "- One process per run; peak RSS is above the process's footprint before the sort (reading the file"
        " alone costs what the read-only row shows); ratio is time / merge-core's.",
        "",
        "| key | tool | seconds | M rows/s | ratio | peak RSS (MiB) | disk written (MiB) |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for key_name in KEYS:
        mine = next((r for r in results if r["key"] == key_name and r["tool"] == "merge-core" and "seconds" in r), None)
        for r in (r for r in results if r["key"] == key_name):
            if "skipped" in r:
                lines.append(f"| {key_name} | {r['tool']} | skipped: {r['skipped']} | | | | |")
                continue
            ratio = f"{r['seconds'] / mine['seconds']:.2f}" if mine else ""
            lines.append(
                f"| {key_name} | {r['tool']} | {r['seconds']:.2f} | {r['rows'] / r['seconds'] / 1e6:.2f} | {ratio} "
                f"| {r['peak_rss_over_base'] >> 20} | {r['disk_written'] >> 20} |"
            )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
