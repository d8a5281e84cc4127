"""A merge-on-read table against engines reading the plain files (issue 6's benchmark).

The contest data (2M base rows + 10 x 400k) is written as 11 commits into an 8-bucket
mc.Table; the merged read is timed against DuckDB and Polars computing the same upsert
from the 11 Parquet files, all in this process, each checked to give the same rows. Then
the FLIP-248 example: a fact table partitioned by date read with and without the dynamic
filter of a date dimension filtered by year.

    python benches/table_bench.py                      # full size
    python benches/table_bench.py --rows 200000 --repeat 2 --out /tmp/table.md
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import tempfile
import time
from collections.abc import Callable

import merge_core as mc
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from merge_core import contest

VALUE_COLUMNS = ["ip", "hostname", "name", "city", "job", "phonenum"]


def duckdb_upsert(paths: list[str], threads: int) -> pa.Table:
    import duckdb

    con = duckdb.connect(config={"threads": threads})
    files = ", ".join(f"'{p}'" for p in paths)
    newest = {c: f"arg_max({c}, v) filter (where {c} is not null)" for c in VALUE_COLUMNS}
    newest["name"] = "arg_max(name, v) filter (where name is not null and not (v > 0 and name = 'null'))"
    columns = ", ".join(f"{newest[c]} as {c}" for c in VALUE_COLUMNS)
    sql = f"""
        with versions as (
            select *, regexp_extract(filename, '(\\d+)\\.parquet$', 1)::INT as v
            from read_parquet([{files}], filename = true)
        )
        select uuid, sum(requests)::BIGINT as requests, {columns}
        from versions group by uuid
    """
    return con.sql(sql).to_arrow_table()


def polars_upsert(paths: list[str]) -> pa.Table:
    import polars as pl

    frames = []
    for v, path in enumerate(paths):
        frame = pl.scan_parquet(path).with_columns(pl.lit(v).alias("v"))
        if v > 0:
            frame = frame.with_columns(
                pl.when(pl.col("name") == "null").then(None).otherwise(pl.col("name")).alias("name")
            )
        frames.append(frame)
    newest = [pl.col(c).drop_nulls().last().alias(c) for c in VALUE_COLUMNS]
    # A sum over only nulls is null (as in SQL and Paimon), not Polars' 0.
    requests = pl.when(pl.col("requests").count() > 0).then(pl.col("requests").sum()).alias("requests")
    query = pl.concat(frames).group_by("uuid").agg(requests, *newest)
    return query.collect().to_arrow()


def merge_core_read(table: mc.Table) -> pa.Table:
    return table.read().read_all()


def same_rows(a: pa.Table, b: pa.Table) -> bool:
    columns = contest.SCHEMA.names
    a = a.select(columns).cast(contest.SCHEMA).sort_by("uuid")
    b = b.select(columns).cast(contest.SCHEMA).sort_by("uuid")
    return a.equals(b)


def best_of(repeat: int, run: Callable[[], pa.Table]) -> tuple[float, pa.Table]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
    return min(times), result


def write_table(root: str, paths: list[str]) -> tuple[mc.Table, float]:
    table = mc.Table.create(
        os.path.join(root, "lake"), contest.SCHEMA, key="uuid", buckets=8, merge=contest.CONTEST_MERGE
    )
    start = time.perf_counter()
    for i, path in enumerate(paths):
        data = pq.read_table(path)
        table.write(contest.null_strings_as_null(data, ["name"]) if i else data)
    return table, time.perf_counter() - start


def dpp_example(root: str, rows: int) -> list[str]:
    """store_returns partitioned by date, read through date_dim WHERE d_year = 2000."""
    days = [dt.date(1998, 1, 1) + dt.timedelta(days=i) for i in range(3 * 365)]
    schema = pa.schema([("id", pa.int64()), ("returned", pa.date32()), ("amount", pa.int64())])
    table = mc.Table.create(os.path.join(root, "sales"), schema, key="id", partition_by="returned", buckets=2)
    ids = pa.array(range(rows), pa.int64())
    day_of_row = pc.remainder(ids, len(days))
    table.write(pa.table({"id": ids, "returned": pa.array(days).take(day_of_row), "amount": ids}))
    date_dim = pa.table({"d_date": days, "d_year": [d.year for d in days]})
    build = date_dim.filter(pc.equal(date_dim.column("d_year"), 2000))
    lines = ["| read | partitions read | files read | rows | seconds |", "|---|---:|---:|---:|---:|"]
    for name, dynamic in [
        ("no filter", None),
        ("dynamic filter (d_year = 2000)", mc.DynamicFilter(build, "d_date", "returned")),
    ]:
        start = time.perf_counter()
        stream = table.read(dynamic_filter=dynamic)
        out = stream.read_all()
        seconds = time.perf_counter() - start
        s = stream.stats
        lines.append(
            f"| {name} | {s['partitions_read']} of {s['partitions_total']} | {s['files_read']} of {s['files_total']} "
            f"| {out.num_rows:,} | {seconds:.2f} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=2_000_000, help="base rows (increments: rows / 5)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2, help="DuckDB threads")
    parser.add_argument("--out", default="docs/benchmarks/table.md")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="mc-table-bench-") as root:
        paths = contest.generate(os.path.join(root, "data"), args.rows, 10, seed=7)
        total = sum(pq.ParquetFile(p).metadata.num_rows for p in paths)
        table, write_seconds = write_table(root, paths)
        results = {}
        runs = {
            "merge-core Table.read": lambda: merge_core_read(table),
            f"DuckDB (threads={args.threads})": lambda: duckdb_upsert(paths, args.threads),
            "Polars (lazy)": lambda: polars_upsert(paths),
        }
        for name, run in runs.items():
            results[name] = best_of(args.repeat, run)
            print(f"{name}: {results[name][0]:.2f}s", flush=True)
        reference = results["merge-core Table.read"][1]
        mine = results["merge-core Table.read"][0]
        lines = [
            "# Merge-on-read table vs engines over the plain files",
            "",
            f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"pyarrow {pa.__version__}. Data: contest-shaped, {args.rows:,} base rows + 10 increments of "
            f"{args.rows // 5:,} = {total:,} rows, {reference.num_rows:,} keys. Best of {args.repeat}.",
            "",
            f"Writing the 11 files as 11 commits into an 8-bucket table took {write_seconds:.2f} s "
            f"({total / write_seconds / 1e6:.2f} M rows/s).",
            "",
            "| reader | seconds | M input rows/s | vs merge-core | same result |",
            "|---|---:|---:|---:|---|",
        ]
        for name, (seconds, result) in results.items():
            same = "yes" if same_rows(result, reference) else "NO"
            lines.append(f"| {name} | {seconds:.2f} | {total / seconds / 1e6:.2f} | {seconds / mine:.2f}x | {same} |")
        lines += ["", "## Dynamic partition pruning (FLIP-248 example)", ""]
        lines += dpp_example(root, max(args.rows // 2, 10_000))
    text = "\n".join(lines) + "\n"
    print(text)
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
