"""``merge-core table ...``: create, write, read, compact, inspect and expire a table."""

from __future__ import annotations

import argparse
import json
import time

import pyarrow as pa

import merge_core as mc

from . import contest
from .cli import UserError, _open_parquet, add_command, add_null_string_option, write_stream

EXAMPLES = """examples:
  merge-core table create lake/users --like data/0.parquet -k uuid --buckets 8 --preset contest
  merge-core table write lake/users data/*.parquet --null-string name     one commit per file
  merge-core table read lake/users -o users.parquet --columns uuid,requests
  merge-core table read lake/sales -o jan.parquet --partition day=2024-01-01 --partition day=2024-01-02
  merge-core table compact lake/users --full
  merge-core table info lake/users
  merge-core table expire lake/users --keep 3
"""


def add_commands(commands: argparse._SubParsersAction) -> None:
    table = commands.add_parser(
        "table",
        help="an Apache Paimon primary-key table: create | write | read | compact | info | expire",
        description="An Apache Paimon primary-key table, merged on read (Flink, Spark and pypaimon share it).",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = table.add_subparsers(dest="action", required=True, metavar="ACTION")

    def sub(name: str, help: str) -> argparse.ArgumentParser:
        p = add_command(actions, name, help, EXAMPLES)
        p.add_argument("path", help="the table's directory")
        return p

    p = sub("create", "create an empty table with the schema of a Parquet file")
    p.add_argument("--like", required=True, metavar="PARQUET", help="take the columns of this Parquet file")
    p.add_argument("-k", "--key", required=True, action="append", help="key column (repeat for several)")
    p.add_argument("--partition-by", action="append", default=[], metavar="COL")
    p.add_argument("--buckets", type=int, default=4)
    p.add_argument("--merge", default="deduplicate", help="deduplicate (default), first-row, partial-update, aggregate")
    p.add_argument("--preset", choices=["contest"], help="the contest's rules: requests summed, others newest non-null")
    p.add_argument("--sequence", action="append", default=[], metavar="COL")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE", help="a Paimon table option")
    p.set_defaults(run=cmd_create)

    p = sub("write", "write Parquet files into the table, one commit per file, in order")
    p.add_argument("inputs", nargs="+", metavar="IN")
    p.add_argument("--row-kind", default=None, metavar="COL", help="column of row kinds (+I, -U, +U, -D)")
    add_null_string_option(p, "commits after the table's first")
    p.add_argument("--memory", default="256MiB", help="sort memory of each write (default 256MiB)")
    p.set_defaults(run=cmd_write)

    p = sub("read", "read the merged table (or an older snapshot) into a Parquet file")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--columns", default=None, help="comma-separated columns (default: all)")
    p.add_argument("--partition", action="append", default=[], metavar="COL=VALUE", help="read only these partitions")
    p.add_argument("--snapshot", type=int, default=None)
    p.set_defaults(run=cmd_read)

    p = sub("compact", "merge the files of buckets with many runs (--full: of every bucket) into one, dropping deletes")
    p.add_argument("--full", action="store_true")
    p.set_defaults(run=cmd_compact)

    p = sub("info", "show the table's definition, snapshot, files and runs")
    p.set_defaults(run=cmd_info)

    p = sub("expire", "remove old snapshots and the files nothing uses any more")
    p.add_argument("--keep", type=int, default=1, help="snapshots to keep (default 1)")
    p.add_argument("--orphan-age", type=float, default=3600.0, help="seconds before an unreferenced file is removed")
    p.set_defaults(run=cmd_expire)


def cmd_create(args: argparse.Namespace) -> int:
    schema = _open_parquet(args.like).schema_arrow
    merge = contest.CONTEST_MERGE if args.preset == "contest" else args.merge
    options = dict(_key_value(item, "--option KEY=VALUE") for item in args.option)
    table = mc.Table.create(
        args.path,
        schema,
        key=args.key,
        partition_by=args.partition_by,
        buckets=args.buckets,
        merge=merge,
        sequence=args.sequence or None,
        options=options,
    )
    function = table.info()["merge"]["function"]
    print(f"created {table.path}: key {table.key}, {table.buckets} buckets, merge {function}")
    return 0


def cmd_write(args: argparse.Namespace) -> int:
    table = mc.Table.open(args.path)
    files = [_open_parquet(p) for p in args.inputs]
    for path, parquet in zip(args.inputs, files, strict=True):
        start = time.perf_counter()
        batches = parquet.iter_batches(batch_size=65536)  # streamed: never the whole file in memory
        if args.null_string and table.snapshots():
            batches = (contest.null_strings_as_null(b, args.null_string) for b in batches)
        data = pa.RecordBatchReader.from_batches(parquet.schema_arrow, batches)
        result = table.write(data, row_kind=args.row_kind, memory_limit=args.memory)
        seconds = time.perf_counter() - start
        rows, runs = parquet.metadata.num_rows, result["files"]
        print(f"snapshot {result['snapshot']}: {path}: {rows:,} rows -> {runs} runs in {seconds:.2f}s")
    return 0


def cmd_read(args: argparse.Namespace) -> int:
    table = mc.Table.open(args.path)
    partitions: dict[str, list[str]] = {}
    for item in args.partition:
        column, value = _key_value(item, "--partition COL=VALUE")
        partitions.setdefault(column, []).append(value)
    columns = args.columns.split(",") if args.columns else None
    start = time.perf_counter()
    stream = table.read(columns=columns, partitions=partitions or None, snapshot=args.snapshot)
    rows = write_stream(stream, args.output)
    seconds = time.perf_counter() - start
    s = stream.stats
    print(
        f"read snapshot {s['snapshot']}: {s['rows_in']:,} stored rows -> {rows:,} rows in {seconds:.2f}s "
        f"({s['rows_in'] / max(seconds, 1e-9) / 1e6:.2f} M rows/s) -> {args.output}\n"
        f"  files read {s['files_read']} of {s['files_total']}, "
        f"partitions read {s['partitions_read']} of {s['partitions_total']}"
    )
    return 0


def cmd_compact(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    result = mc.Table.open(args.path).compact(full=args.full)
    seconds = time.perf_counter() - start
    kind = "full" if args.full else "partial"
    merged, written = result["files_merged"], result["files_written"]
    print(f"{kind} compaction: {merged} files -> {written} in {seconds:.2f}s (snapshot {result['snapshot']})")
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    print(json.dumps(mc.Table.open(args.path).info(), indent=2))
    return 0


def cmd_expire(args: argparse.Namespace) -> int:
    result = mc.Table.open(args.path).expire(keep_snapshots=args.keep, orphan_age=args.orphan_age)
    mib = result["bytes_removed"] / 2**20
    print(
        f"removed {result['snapshots_removed']} snapshots, {result['files_removed']} data files and "
        f"{result['manifests_removed']} manifest files ({mib:.1f} MiB)"
    )
    return 0


def _key_value(item: str, usage: str) -> tuple[str, str]:
    key, sep, value = item.partition("=")
    if not sep or not key:
        option, form = usage.split()
        raise UserError(f"{option} takes {form}, got {item!r}")
    return key, value
