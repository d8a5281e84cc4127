"""The contest upsert read: 11 versions of a table merged by key with the
contest's rules (requests summed, other columns newest non-null, 'null' names after the
base are nulls), by merge-core and by the engines a user would pick instead."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

import merge_core as mc
from merge_core import contest
from merge_core.paimon import FileRead

from ._inputs import Inputs
from ._measure import Peer, Section, same_rows, time_peers, timed

VALUE_COLUMNS = ["ip", "hostname", "name", "city", "job", "phonenum"]
BATCH = 65536


def write_sorted_runs(folder: str, paths: list[str], row_group_size: int = BATCH) -> list[str]:
    """Each version sorted by key, as a table's sorted runs are (`<version>.parquet`)."""
    os.makedirs(folder, exist_ok=True)
    runs = []
    for version, path in enumerate(paths):
        runs.append(os.path.join(folder, f"{version}.parquet"))
        pq.write_table(pq.read_table(path).sort_by("uuid"), runs[-1], row_group_size=row_group_size)
    return runs


def merge_core(runs: list[str]) -> pa.Table:
    def version(i: int, path: str):
        batches = pq.ParquetFile(path).iter_batches(batch_size=BATCH)
        return (contest.null_strings_as_null(b, ["name"]) for b in batches) if i else batches

    readers = [version(i, p) for i, p in enumerate(runs)]
    return mc.merge(readers, key="uuid", merge=contest.CONTEST_MERGE, batch_size=BATCH).read_all()


def write_table(root: str, paths: list[str], buckets: int = 8) -> mc.Table:
    """The versions as `len(paths)` commits into a bucketed table (Paimon's format), each
    commit a sorted run of every bucket: `write-only`, so no write compacts them (the reads
    timed on it merge all the versions)."""
    table = mc.Table.create(
        root,
        contest.SCHEMA,
        key="uuid",
        buckets=buckets,
        merge=contest.CONTEST_MERGE,
        options={"write-only": "true"},
    )
    for i, path in enumerate(paths):
        data = pq.read_table(path)
        table.write(contest.null_strings_as_null(data, ["name"]) if i else data)
    return table


def planned_files(table: mc.Table) -> list[FileRead]:
    """The files a read of ``table`` merges, as its plan gives them (path, rows...)."""
    return [f for split in table.plan() for section in split.sections for run in section.runs for f in run]


def data_files(table: mc.Table) -> list[str]:
    """The paths of the data files a read of ``table`` merges."""
    return [f.path for f in planned_files(table)]


def decode_only(table: mc.Table, rows: int) -> None:
    """Decodes every data file a read of `table` merges, on all cores, and merges nothing:
    the part of `Table.read` that is Parquet decoding. Fails unless it decoded `rows`."""
    scanner = ds.dataset(data_files(table), format="parquet").scanner(batch_size=BATCH, use_threads=True)
    decoded = sum(batch.num_rows for batch in scanner.to_batches())
    if decoded != rows:
        raise RuntimeError(f"decoded {decoded:,} rows of {rows:,}")


def duckdb(runs: list[str]) -> pa.Table:
    import duckdb

    con = duckdb.connect(config={"threads": os.cpu_count() or 1})
    files = ", ".join(f"'{p}'" for p in runs)
    newest = {c: f"arg_max({c}, v) filter (where {c} is not null)" for c in VALUE_COLUMNS}
    newest["name"] = "arg_max(name, v) filter (where name is not null and not (v > 0 and name = 'null'))"
    columns = ", ".join(f"{newest[c]} as {c}" for c in VALUE_COLUMNS)
    return con.sql(f"""
        with versions as (
            select *, regexp_extract(filename, '(\\d+)\\.parquet$', 1)::INT as v
            from read_parquet([{files}], filename = true)
        )
        select uuid, sum(requests)::BIGINT as requests, {columns} from versions group by uuid
    """).to_arrow_table()


def datafusion(runs: list[str]) -> pa.Table:
    from datafusion import SessionContext

    ctx = SessionContext()
    for v, path in enumerate(runs):
        ctx.register_parquet(f"v{v}", path)
    union = " union all ".join(
        f"select *, {v} as v, {'name' if v == 0 else 'nullif(name, ' + repr('null') + ')'} as name_ from v{v}"
        for v in range(len(runs))
    )
    newest = {c: f"last_value({c} order by v) filter (where {c} is not null)" for c in VALUE_COLUMNS}
    newest["name"] = "last_value(name_ order by v) filter (where name_ is not null)"
    columns = ", ".join(f"{newest[c]} as {c}" for c in VALUE_COLUMNS)
    return ctx.sql(f"select uuid, sum(requests) as requests, {columns} from ({union}) group by uuid").to_arrow_table()


def polars(runs: list[str]) -> pa.Table:
    import polars as pl

    frames = []
    for v, path in enumerate(runs):
        frame = pl.scan_parquet(path).with_columns(pl.lit(v).alias("v"))
        if v > 0:
            frame = frame.with_columns(
                pl.when(pl.col("name") == "null").then(None).otherwise(pl.col("name")).alias("name")
            )
        frames.append(frame)
    newest = [pl.col(c).drop_nulls().last().alias(c) for c in VALUE_COLUMNS]
    # A sum over only nulls is null (as in SQL and Paimon), not Polars' 0.
    requests = pl.when(pl.col("requests").count() > 0).then(pl.col("requests").sum()).alias("requests")
    return pl.concat(frames).group_by("uuid", maintain_order=False).agg(requests, *newest).collect().to_arrow()


def pyarrow_group_by(runs: list[str]) -> pa.Table:
    versions = [pq.read_table(runs[0])]
    versions += [contest.null_strings_as_null(pq.read_table(p), ["name"]) for p in runs[1:]]
    # Single-threaded group_by keeps input order, so "last" (skipping nulls) is the newest value.
    aggregates = [("requests", "sum", pc.ScalarAggregateOptions(min_count=1))]
    aggregates += [(c, "last", pc.ScalarAggregateOptions(skip_nulls=True)) for c in VALUE_COLUMNS]
    out = pa.concat_tables(versions).group_by("uuid", use_threads=False).aggregate(aggregates)
    return out.rename_columns(["uuid", "requests", *VALUE_COLUMNS])


def spark_sql(spark, runs: list[str]) -> pa.Table:

    return contest.spark_sql_upsert([spark.read.parquet(p) for p in runs]).toArrow()


def run(folder: str, inputs: Inputs, repeat: int, spark) -> Section:
    paths = inputs.contest_versions()
    runs = write_sorted_runs(os.path.join(folder, "sorted"), paths)
    total = contest.total_rows(runs)
    table, write_seconds = timed("merge-core Table write", lambda: write_table(os.path.join(folder, "table"), paths))
    peers = [
        Peer("merge-core Table.read (8 buckets, 11 commits)", lambda: table.read(batch_size=BATCH).read_all()),
        Peer(
            "Table.read's Parquet decoding alone (floor, no merge)", lambda: decode_only(table, total), compared=False
        ),
        Peer("merge-core merge (11 sorted runs, one thread)", lambda: merge_core(runs)),
        Peer("DuckDB", lambda: duckdb(runs), "duckdb"),
        Peer("Polars (lazy)", lambda: polars(runs), "polars"),
        Peer("DataFusion SQL", lambda: datafusion(runs), "datafusion"),
        Peer("pyarrow group_by", lambda: pyarrow_group_by(runs)),
    ]
    if spark is not None:
        peers.append(Peer("Spark SQL (union + groupBy)", lambda: spark_sql(spark, runs), "pyspark", in_process=False))
    return Section(
        "upsert",
        "Contest upsert read: 11 versions merged by key",
        [
            f"Contest-shaped data (`merge-core gen`): {inputs.base_rows:,} base rows + 10 increments of"
            f" {inputs.base_rows // 5:,} = {total:,} rows, 32-character hex keys, every version sorted by key.",
            "Rules: requests summed (null if all null), other columns newest non-null, the string 'null' in `name`"
            " after the base is a null. Every result is checked against merge-core's, row by row.",
            f"`Table.read`: the same versions written as 11 commits into an 8-bucket `mc.Table` (the write took"
            f" {write_seconds:.2f} s, {total / write_seconds / 1e6:.2f} M rows/s), read merged on all cores.",
            "DuckDB and DataFusion use all cores; Spark SQL runs on the local session (its memory and CPU are the"
            " JVM's, not counted); peak memory is the Python process's above its level when the run started, the"
            " returned table included.",
            "The floor row decodes the table's data files (all their columns, all cores) and merges nothing: what"
            " `Table.read` would cost if merging were free.",
        ],
        time_peers(peers, repeat, total, lambda a, b: same_rows(a, b, order_by="uuid")),
    )
