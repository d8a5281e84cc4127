"""A primary-key merge-on-read table: merge-core's `mc.Table` against pypaimon (today's
Python reader of a Paimon table) on the same versions, and the dynamic partition
pruning example of Paimon's FLIP-248."""

from __future__ import annotations

import datetime as dt
import os
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import merge_core as mc
from merge_core import contest

from ._measure import Run, Section, failure, measure, missing, progress, same_rows, timed
from ._upsert import BATCH, contest_versions, write_table

BUCKETS = 8


def paimon_table(warehouse: str, paths: list[str]):
    """The versions as commits into a Paimon primary-key table with the contest's rules
    (aggregation merge engine: sum, default last_non_null_value)."""
    from pypaimon import CatalogFactory, Schema

    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database("bench", False)
    schema = pa.schema([f.with_nullable(f.name != "uuid") for f in contest.SCHEMA])
    options = {
        "bucket": str(BUCKETS),
        "file.format": "parquet",
        "merge-engine": "aggregation",
        "fields.requests.aggregate-function": "sum",
        "fields.default-aggregate-function": "last_non_null_value",
    }
    definition = Schema.from_pyarrow_schema(schema, primary_keys=["uuid"], options=options)
    catalog.create_table("bench.contest", definition, False)
    table = catalog.get_table("bench.contest")
    for i, path in enumerate(paths):
        data = pq.read_table(path)
        data = (contest.null_strings_as_null(data, ["name"]) if i else data).cast(schema)
        builder = table.new_batch_write_builder()
        writer, commit = builder.new_write(), builder.new_commit()
        writer.write_arrow(data)
        commit.commit(writer.prepare_commit())
        writer.close()
        commit.close()
    return table


def paimon_read(table) -> pa.Table:
    builder = table.new_read_builder()
    return builder.new_read().to_arrow(builder.new_scan().plan().splits())


def compare(folder: str, base_rows: int, repeat: int) -> tuple[list[Run], int]:
    paths = contest_versions(os.path.join(folder, "plain"), base_rows)
    total = contest.total_rows(paths)
    mine, write_seconds = timed("merge-core write", lambda: write_table(os.path.join(folder, "mc"), paths, BUCKETS))
    seconds, peak, cpu, reference = measure(lambda: mine.read(batch_size=BATCH).read_all(), repeat)
    write = {"write (s)": f"{write_seconds:.2f}"}
    runs = [Run("merge-core mc.Table", seconds, total, peak, True, cpu, extra=write)]
    progress(f"  merge-core read: {seconds:.2f} s")
    why = missing("pypaimon")
    if why:
        return [*runs, Run("pypaimon", note=why)], total
    try:
        theirs, write_seconds = timed("pypaimon write", lambda: paimon_table(os.path.join(folder, "paimon"), paths))
        seconds, peak, cpu, result = measure(lambda: paimon_read(theirs), repeat)
    except Exception as error:  # pypaimon's failure is a finding, reported as such
        return [*runs, Run("pypaimon", note=failure(error))], total
    progress(f"  pypaimon read: {seconds:.2f} s")
    same = same_rows(reference, result, order_by="uuid")
    runs.append(Run("pypaimon", seconds, total, peak, same, cpu, extra={"write (s)": f"{write_seconds:.2f}"}))
    return runs, total


def dpp_example(folder: str, rows: int) -> list[str]:
    """A fact table partitioned by date read through a date dimension filtered by year."""
    days = [dt.date(1998, 1, 1) + dt.timedelta(days=i) for i in range(3 * 365)]
    schema = pa.schema([("id", pa.int64()), ("returned", pa.date32()), ("amount", pa.int64())])
    table = mc.Table.create(os.path.join(folder, "sales"), schema, key="id", partition_by="returned", buckets=2)
    ids = np.arange(rows, dtype=np.int64)
    table.write(pa.table({"id": ids, "returned": pa.array(days).take(ids % len(days)), "amount": ids}))
    date_dim = pa.table({"d_date": days, "d_year": [d.year for d in days]})
    year_2000 = date_dim.filter(pc.equal(date_dim.column("d_year"), 2000))
    lines = [
        f"A fact table of {rows:,} rows partitioned by day over 3 years (2 buckets), read through a date"
        " dimension filtered to the year 2000 (`mc.DynamicFilter(date_dim, 'd_date', 'returned')`):",
        "",
        "| read | partitions read | files read | rows | seconds |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, dynamic in [
        ("without the filter", None),
        ("with the dynamic filter", mc.DynamicFilter(year_2000, "d_date", "returned")),
    ]:
        start = time.perf_counter()
        stream = table.read(dynamic_filter=dynamic)
        out = stream.read_all()
        seconds = time.perf_counter() - start
        s = stream.stats
        lines.append(
            f"| {name} | {s['partitions_read']} of {s['partitions_total']} | {s['files_read']} of {s['files_total']}"
            f" | {out.num_rows:,} | {seconds:.2f} |"
        )
    return lines


def run(folder: str, base_rows: int, repeat: int) -> Section:
    runs, total = compare(folder, base_rows, repeat)
    return Section(
        "table",
        "Primary-key merge-on-read table: mc.Table and pypaimon",
        [
            f"The contest versions ({total:,} rows) written as 11 commits into an {BUCKETS}-bucket primary-key"
            " table with the contest's rules, then read merged. pypaimon: a local filesystem catalog, merge engine"
            " `aggregation` (requests `sum`, default `last_non_null_value`), Parquet files.",
            "The time column is the merged read; the write of the 11 commits is its own column.",
        ],
        runs,
        extra_columns=["write (s)"],
        after=["### Dynamic partition pruning", "", *dpp_example(folder, max(base_rows // 2, 10_000))],
    )
