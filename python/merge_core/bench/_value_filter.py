"""A filter on a value column whose statistics exclude 90% of the files (issue 40's speed
goal): a primary-key table partitioned by month, ten months written by merge-core one
commit each into two buckets, so each bucket of a month is one file; a filter on the day
(a value column, not the partition) leaves one month's files possible. By Paimon's rules
a bucket's only file is tested by its own value statistics, so the other 18 files are
not opened. merge-core's read, pypaimon's and pypaimon-rust's, each timed in CPU seconds,
with the files each opened."""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

import merge_core as mc

from ._measure import measure, missing, same_rows

MONTHS, BUCKETS, DAYS = 10, 2, 30
DAY = 3 * DAYS + 14  # in the fourth month
NATIVE = {"read.native.enabled": "true"}
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), False),
        pa.field("month", pa.int32(), False),
        pa.field("day", pa.int32()),
        pa.field("note", pa.string()),
    ]
)


def write(warehouse: str, rows: int) -> mc.Table:
    """The table, ``rows`` rows over ten months, one commit a month."""
    table = mc.Table.create(
        os.path.join(warehouse, "bench.db", "events"), SCHEMA, key="id", partition_by="month", buckets=BUCKETS
    )
    per_month = max(rows // MONTHS, DAYS)
    for month in range(MONTHS):
        ids = pa.array(range(month * per_month, (month + 1) * per_month), pa.int64())
        days = pc.add(pc.divide(pc.multiply(pc.subtract(ids, month * per_month), DAYS), per_month), month * DAYS)
        notes = pc.binary_join_element_wise("event-", pc.cast(ids, pa.string()), "")
        table.write(pa.table([ids, pa.array([month] * len(ids), pa.int32()), pc.cast(days, pa.int32()), notes], SCHEMA))
    return table


def merge_core_read(table: mc.Table, opened: list[int]) -> pa.Table:
    stream = table.read(filter=pc.field("day") == DAY)
    result = stream.read_all()
    opened[:] = [stream.stats["files_read"], stream.stats["files_total"], stream.stats["files_skipped_by_value_stats"]]
    return result


def pypaimon_read(warehouse: str, opened: list[Any], options: dict[str, str] | None = None) -> pa.Table:
    from pypaimon import CatalogFactory

    table = CatalogFactory.create({"warehouse": warehouse}).get_table("bench.events")
    table = table.copy(options) if options else table
    builder = table.new_read_builder()
    builder = builder.with_filter(builder.new_predicate_builder().equal("day", DAY))
    splits = builder.new_scan().plan().splits()
    opened[:] = [sum(len(s.files) for s in splits), "files"]
    return builder.new_read().to_arrow(splits)


def pypaimon_rust_read(warehouse: str, opened: list[Any]) -> pa.Table:
    from pypaimon_rust.datafusion import PaimonCatalog

    table = PaimonCatalog({"warehouse": warehouse}).get_table(("bench", "events"))
    builder = table.new_read_builder().with_filter({"method": "equal", "field": "day", "literals": [DAY]})
    splits = builder.new_scan().plan().splits()
    opened[:] = [len(splits), "splits"]  # its splits do not show their files
    return pa.Table.from_batches(builder.new_read().read(splits))


def lines(folder: str, rows: int, repeat: int) -> list[str]:
    """The report's lines on the filtered reads, one per reader."""
    warehouse = os.path.join(folder, "events")
    table = write(warehouse, rows)
    files = len(table.files())
    reference: Any = None
    out = [
        f"**A filter on a value column.** {rows:,} rows in {files} files: a table partitioned by month, ten months"
        f" in {BUCKETS} buckets, one commit each; the filter `day = {DAY}` (a value column) can hold rows of one"
        " month only, whose statistics alone say so. CPU seconds, best of the repeats:",
        "",
    ]
    readers = [
        ("merge-core Table.read(filter=)", None, lambda o: merge_core_read(table, o)),
        ("pypaimon-rust with_filter", "pypaimon_rust", lambda o: pypaimon_rust_read(warehouse, o)),
        (
            "pypaimon read.native.enabled",
            "pypaimon",
            lambda o: pypaimon_read(warehouse, o, {"read.native.enabled": "true"}),
        ),
        ("pypaimon (Python)", "pypaimon", lambda o: pypaimon_read(warehouse, o)),
    ]
    for tool, module, read in readers:
        why = missing(module)
        if why:
            out.append(f"- {tool}: {why}")
            continue
        opened: list[Any] = []
        try:
            _, _, cpu, result = measure(lambda read=read, opened=opened: read(opened), repeat)
        except Exception as error:  # a peer's failure is a finding, reported
            out.append(f"- {tool}: failed: {type(error).__name__}: {str(error)[:200]}")
            continue
        reference = result if reference is None else reference
        same = "same rows" if same_rows(reference, result, order_by="id") else "**rows differ**"
        if module is None:
            read_files, total, skipped = opened
            what = f"opened {read_files} of {total} files ({skipped} skipped by value statistics, counted in `stats`)"
        else:
            what = f"planned {opened[0]} {opened[1]}"
        out.append(f"- {tool}: {cpu:.3f} s CPU, {result.num_rows:,} rows, {what}; {same}")
    return out
