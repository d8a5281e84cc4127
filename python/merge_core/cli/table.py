"""``merge-core table ...``: create, alter, write (or overwrite), read, compact, inspect, expire, tag and
roll back a table, drop its partitions or truncate it."""

from __future__ import annotations

import argparse
import datetime
import json
from typing import Any

import pyarrow as pa

import merge_core as mc

from .. import contest
from . import filter_expr
from .common import (
    HelpFormatter,
    Progress,
    UserError,
    add_command,
    add_memory_option,
    add_merge_options,
    add_null_string_option,
    add_warehouse_option,
    check_columns,
    check_no_null_keys,
    check_output,
    check_positive,
    human_bytes,
    merge_option,
    open_parquet,
    parquet_batches,
    parse_memory,
    plural,
    rate,
    table_ref,
    write_stream,
)

EXAMPLES = """examples:
  merge-core table create lake/users --like data/0.parquet -k uuid --buckets 8 --preset contest
  merge-core table write lake/users data/*.parquet --null-string name     one commit per file
  merge-core table read lake/users -o users.parquet --columns uuid,requests
  merge-core table compact lake/users --full
  merge-core table info lake/users
  merge-core table expire lake/users --keep 3
  merge-core table tag lake/users before-backfill
  merge-core table rollback lake/users --tag before-backfill
  merge-core table write lake/sales jan1.parquet --overwrite --partition day=2024-01-01
  merge-core table drop-partition lake/sales day=2024-01-01
  merge-core table info shop.users --warehouse lake         DB.TABLE in a warehouse (merge-core catalog)

Run 'merge-core table ACTION --help' for an action's options and examples.
"""

ACTION_EXAMPLES = {
    "create": """
merge-core table create lake/users --like data/0.parquet -k uuid --buckets 8 --preset contest
merge-core table create lake/sales --like sales.parquet -k id --partition-by day --option write-buffer-size=256mb
merge-core table create lake/users --like changes.parquet -k id --row-kind op    op: kinds, not a column
merge-core table create shop.users --warehouse lake --like data/0.parquet -k uuid    in lake/shop.db/users
merge-core table create lake/events --like events.parquet --partition-by day     append table (no key)
merge-core table create lake/events --like events.parquet --buckets 8 --option bucket-key=user
""",
    "write": """
merge-core table write lake/users data/*.parquet --null-string name     one commit per file
merge-core table write lake/users changes.parquet --row-kind op          op holds +I, -U, +U or -D
merge-core table write lake/users full.parquet --overwrite                 replace the table (one commit)
merge-core table write lake/sales jan1.parquet --overwrite --partition day=2024-01-01
""",
    "read": """
merge-core table read lake/users -o users.parquet --columns uuid,requests
merge-core table read lake/sales -o jan.parquet --partition day=2024-01-01 --partition day=2024-01-02
merge-core table read lake/users -o before.parquet --snapshot 3
merge-core table read lake/users -o before.parquet --tag before-backfill
merge-core table read lake/users -o then.parquet --as-of '2026-11-27 08:00'        local time
merge-core table read lake/users -o then.parquet --as-of 2026-11-27T08:00:00+00:00
merge-core table read lake/users -o trial.parquet --branch trial                    a branch Paimon made
merge-core table read lake/sales -o big.parquet --filter "amount > 100 and day in ('d1', 'd2')"
""",
    "compact": """
merge-core table compact lake/users
merge-core table compact lake/users --full
""",
    "info": """
merge-core table info lake/users
merge-core table info lake/users --json
merge-core table info shop.users --warehouse lake
""",
    "expire": """
merge-core table expire lake/users
merge-core table expire lake/users --keep 3
""",
    "tag": """
merge-core table tag lake/users                              list the tags
merge-core table tag lake/users before-backfill              tag the latest snapshot
merge-core table tag lake/users nightly --snapshot 12        tag snapshot 12
merge-core table tag lake/users nightly --delete             remove the tag (expire takes what only it kept)
""",
    "rollback": """
merge-core table rollback lake/users --snapshot 12           remove the snapshots after 12
merge-core table rollback lake/users --tag before-backfill   back to the tagged snapshot (restored if expired)
merge-core table rollback lake/users --as-of '2026-11-27 08:00'   back to the snapshot current then (local time)
""",
    "drop-partition": """
merge-core table drop-partition lake/sales day=2024-01-01
merge-core table drop-partition lake/sales day=2024-01-01 day=2024-01-02          two partitions
merge-core table drop-partition lake/sales region=eu,day=2024-01-01               by both columns
merge-core table drop-partition lake/sales region=eu                              every day of region eu
""",
    "truncate": """
merge-core table truncate lake/users
merge-core table truncate shop.users --warehouse lake
""",
    "alter": """
merge-core table alter lake/users --add-column email STRING                add a column (older rows read null)
merge-core table alter lake/users --add-column price 'DECIMAL(10, 2)' --after name
merge-core table alter lake/users --rename-column email mail
merge-core table alter lake/users --drop-column mail
merge-core table alter lake/users --alter-column visits --type BIGINT       widen a column's type
merge-core table alter lake/users --alter-column name --comment 'full name'
merge-core table alter lake/users --set snapshot.num-retained.max=50 --set write-buffer-size=512mb
merge-core table alter lake/users --reset snapshot.num-retained.max        back to Paimon's default
""",
}


def add_command_to(commands: argparse._SubParsersAction) -> None:
    table = commands.add_parser(
        "table",
        help="an Apache Paimon table: create | alter | write | read | compact | info | expire | tag"
        " | rollback | drop-partition | truncate",
        description="An Apache Paimon table: a primary-key table merged on read, or an append table (no key) read"
        " as written (Flink, Spark and pypaimon share it).",
        epilog=EXAMPLES,
        formatter_class=HelpFormatter,
    )
    actions = table.add_subparsers(dest="action", required=True, metavar="ACTION")

    def sub(name: str, help: str) -> argparse.ArgumentParser:
        p = add_command(actions, name, help, ACTION_EXAMPLES[name])
        p.add_argument("path", metavar="TABLE", help="the table's directory (or DB.TABLE with --warehouse)")
        add_warehouse_option(p)
        return p

    p = sub("create", "create an empty table with the columns of a Parquet file")
    p.add_argument("--like", required=True, metavar="PARQUET", help="take the columns of this Parquet file")
    p.add_argument(
        "-k",
        "--key",
        action="append",
        default=[],
        help="primary key column (repeat for several); without one, an append table: rows kept as written,"
        " never merged",
    )
    p.add_argument(
        "--partition-by", action="append", default=[], metavar="COL", help="partition column (repeat for several)"
    )
    p.add_argument(
        "--buckets",
        type=int,
        default=None,
        help="buckets per partition (1 to 65536; default 4; -1 dynamic, -2 postponed buckets); an append table's"
        " default is -1 (bucket-unaware, one bucket per partition), and N buckets need --option bucket-key=COL",
    )
    add_merge_options(p, ["deduplicate", "first-row", "partial-update", "aggregate"])
    p.add_argument("--preset", choices=["contest"], help="the contest's rules: requests summed, others newest non-null")
    p.add_argument(
        "--row-kind",
        default=None,
        metavar="COL",
        help="the column of --like holding row kinds (+I, -U, +U, -D): not a column of the table (Paimon keeps a"
        " row's kind as _VALUE_KIND); give it to table write --row-kind",
    )
    p.add_argument(
        "--sequence", action="append", default=[], metavar="COL", help="column ordering the versions of a key"
    )
    p.add_argument(
        "--option", action="append", default=[], metavar="KEY=VALUE", help="a Paimon table option (repeatable)"
    )
    p.set_defaults(run=cmd_create)
    _add_alter_action(sub)

    p = sub("write", "write Parquet files into the table, one commit per file, in order")
    p.add_argument("inputs", nargs="+", metavar="IN", help="Parquet files with the table's columns, oldest first")
    p.add_argument("--row-kind", default=None, metavar="COL", help="column of row kinds (+I, -U, +U, -D)")
    add_null_string_option(p, "commits after the table's first")
    add_memory_option(p, "sort memory of each write")
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace what the table holds with the files' rows, as one commit (Paimon's INSERT OVERWRITE): the"
        " whole table, or with the table option dynamic-partition-overwrite (true by default) the partitions the"
        " rows are in; older snapshots keep the replaced rows until expire",
    )
    p.add_argument(
        "--partition",
        action="append",
        default=[],
        metavar="COL=VALUE",
        help="with --overwrite: overwrite this partition (one value per partition column, some or all of them);"
        " every row must be in it",
    )
    p.set_defaults(run=cmd_write)

    p = sub("read", "read the merged table (or an older snapshot) into a Parquet file")
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="the Parquet file to write (replaced whole)")
    p.add_argument("--columns", default=None, metavar="A,B,...", help="comma-separated columns (default: all)")
    p.add_argument(
        "--partition",
        action="append",
        default=[],
        metavar="COL=VALUE",
        help="read only this partition (repeat for several)",
    )
    p.add_argument(
        "--filter",
        default=None,
        metavar="COND",
        help="keep the rows for which COND is true, e.g. \"k = 5 and v > 3\", \"day in ('d1', 'd2')\", "
        '"name is not null" (=, !=, <, <=, >, >=, in, is [not] null, and, or, not, parentheses); '
        "files and partitions it excludes are not read",
    )
    which = p.add_mutually_exclusive_group()
    which.add_argument("--snapshot", type=int, default=None, help="read this snapshot (default: the latest)")
    which.add_argument("--tag", default=None, metavar="NAME", help="read the snapshot this tag holds")
    which.add_argument(
        "--as-of",
        default=None,
        metavar="TIME",
        help="read the newest snapshot committed at or before TIME: an ISO 8601 date-time ('2026-11-27 08:00',"
        " '2026-11-27T08:00:00+01:00'); without an offset it is local time, as Paimon reads scan.timestamp",
    )
    p.add_argument(
        "--branch", default=None, metavar="NAME", help="read this branch of the table (default: main, the table itself)"
    )
    p.set_defaults(run=cmd_read)

    p = sub("compact", "merge the files of buckets with many runs into one file each, dropping deletes")
    p.add_argument("--full", action="store_true", help="compact every bucket, not only those with 5 or more runs")
    p.set_defaults(run=cmd_compact)

    p = sub("info", "show the table's definition, latest snapshot, files, rows and runs")
    p.add_argument("--json", action="store_true", help="print the figures as JSON, for programs")
    p.set_defaults(run=cmd_info)

    p = sub("expire", "remove old snapshots and the files nothing uses any more")
    p.add_argument(
        "--keep",
        type=int,
        metavar="N",
        help="keep exactly the newest N snapshots (default: as the table's options say, as in Paimon: "
        "snapshot.num-retained.min (10) and those younger than snapshot.time-retained (1 h))",
    )
    p.add_argument(
        "--orphan-age",
        type=float,
        default=3600.0,
        metavar="SECONDS",
        help="age after which a file no snapshot uses (a failed write's) is removed",
    )
    p.set_defaults(run=cmd_expire)

    p = sub("tag", "list the table's tags, or tag a snapshot (its files stay while the tag does), or remove a tag")
    p.add_argument("name", nargs="?", metavar="NAME", help="the tag to create (or with --delete, remove)")
    p.add_argument("--snapshot", type=int, default=None, help="the snapshot to tag (default: the latest)")
    p.add_argument("--delete", action="store_true", help="remove the tag NAME")
    p.set_defaults(run=cmd_tag)

    p = sub(
        "rollback",
        "roll the table back to a snapshot or tag: later snapshots, the tags of later snapshots and the files only"
        " they used are removed (run it while nothing writes to the table)",
    )
    to = p.add_mutually_exclusive_group(required=True)
    to.add_argument("--snapshot", type=int, default=None, metavar="N", help="roll back to snapshot N")
    to.add_argument("--tag", default=None, metavar="NAME", help="roll back to the snapshot tag NAME holds")
    to.add_argument(
        "--as-of",
        default=None,
        metavar="TIME",
        help="roll back to the newest snapshot committed at or before TIME (ISO 8601; local time without an offset)",
    )
    p.set_defaults(run=cmd_rollback)
    p = sub("drop-partition", "drop partitions: one commit without their files (older snapshots keep them)")
    p.add_argument(
        "specs",
        nargs="+",
        metavar="COL=VALUE[,COL=VALUE...]",
        help="a partition to drop, by some or all of its columns (a partition with no data is skipped)",
    )
    p.set_defaults(run=cmd_drop_partition)

    p = sub("truncate", "empty the table: one commit without any file (older snapshots keep them)")
    p.set_defaults(run=cmd_truncate)


def _add_alter_action(sub: Any) -> None:
    p = sub(
        "alter",
        "change the table's columns or options, as Paimon's ALTER TABLE: one change a run, written as the"
        " table's next schema, which Paimon's readers and writers follow",
    )
    change = p.add_mutually_exclusive_group(required=True)
    change.add_argument(
        "--add-column",
        nargs=2,
        metavar=("NAME", "TYPE"),
        help="add a nullable column of a Paimon SQL type (INT, BIGINT, STRING, DECIMAL(10, 2), TIMESTAMP(6) ...)",
    )
    change.add_argument("--rename-column", nargs=2, metavar=("NAME", "NEW_NAME"), help="rename a column")
    change.add_argument("--drop-column", metavar="NAME", help="drop a column (not a key or partition column)")
    change.add_argument(
        "--alter-column", metavar="NAME", help="change a column's --type, --nullable/--not-null or --comment"
    )
    change.add_argument("--set", action="append", metavar="KEY=VALUE", help="set a table option (repeat)")
    change.add_argument("--reset", action="append", metavar="KEY", help="remove a table option (repeat)")
    p.add_argument("--after", metavar="COL", help="with --add-column: place the new column after COL")
    p.add_argument("--type", metavar="TYPE", help="with --alter-column: the column's new Paimon SQL type")
    null = p.add_mutually_exclusive_group()
    null.add_argument("--nullable", action="store_true", default=None, help="with --alter-column: allow nulls")
    null.add_argument(
        "--not-null", dest="nullable", action="store_false", help="with --alter-column: refuse nulls (Paimon's rules)"
    )
    p.add_argument("--comment", metavar="TEXT", help="with --add-column or --alter-column: the column's comment")
    p.set_defaults(run=cmd_alter)


def open_table(path: str, warehouse: str | None = None, branch: str | None = None) -> mc.Table:
    """The table TABLE names (a directory, or DB.TABLE with --warehouse), or its ``branch``,
    or a UserError naming what is there instead."""
    table = table_ref(path, warehouse).open()
    if branch is None:
        return table
    try:
        return mc.Table.open(table.path, filesystem=table.filesystem, branch=branch)
    except (mc.TableNotFoundError, mc.InvalidInputError) as e:
        raise UserError(f"--branch {branch}: {e}") from None


def cmd_create(args: argparse.Namespace) -> int:
    where = table_ref(args.path, args.warehouse)
    schema = open_parquet(args.like, "--like").schema_arrow
    if args.row_kind is not None:
        check_columns([args.row_kind], "--row-kind", schema, args.like)
        schema = schema.remove(schema.get_field_index(args.row_kind))
    for flag, names in (("--key", args.key), ("--partition-by", args.partition_by), ("--sequence", args.sequence)):
        check_columns(names, flag, schema, args.like)
    if args.key:
        if args.buckets not in (None, -1, -2):  # -1 dynamic, -2 postponed buckets, as Paimon's option
            check_positive(args.buckets, "--buckets", 65536)
        merge = contest.CONTEST_MERGE if args.preset == "contest" else merge_option(args, [(args.like, schema)])
    else:
        _check_append_flags(args)
        merge = "deduplicate"
    options = dict(_key_value(item, "--option KEY=VALUE") for item in args.option)
    table = where.create(
        schema,
        key=args.key,
        partition_by=args.partition_by,
        buckets=args.buckets,
        merge=merge,
        sequence=args.sequence or None,
        options=options,
    )
    if not table.key:
        buckets = "bucket-unaware" if table.buckets == -1 else plural(table.buckets, "bucket")
        print(f"created {table.path}: append table (no key, rows never merged), {buckets}")
        return 0
    function = table.info()["merge"]["function"]
    print(f"created {table.path}: key {', '.join(table.key)}, {plural(table.buckets, 'bucket')}, merge {function}")
    return 0


def _check_append_flags(args: argparse.Namespace) -> None:
    """Refuses, for a table without --key, the flags that say how versions of a key merge."""
    given = [
        flag
        for flag, value in (
            ("--merge", args.merge),
            ("--agg", args.agg),
            ("--preset", args.preset),
            ("--sequence", args.sequence),
        )
        if value
    ]
    if given:
        raise UserError(
            f"{', '.join(given)} say how the versions of a key merge: give --key (an append table has none)"
        )
    if args.buckets is not None and args.buckets != -1:
        check_positive(args.buckets, "--buckets (or -1, bucket-unaware)", 65536)


def cmd_write(args: argparse.Namespace) -> int:
    if args.partition and not args.overwrite:
        raise UserError("--partition names the partition to overwrite: give --overwrite too")
    table = open_table(args.path, args.warehouse)
    spec = _partition_spec(table, args.partition, "--partition COL=VALUE") if args.overwrite else None
    files = [(p, open_parquet(p, "IN")) for p in args.inputs]
    for path, parquet in files:
        missing = [n for n in table.schema.names if n not in parquet.schema_arrow.names]
        if missing:
            raise UserError(f"{path} lacks the table's columns {', '.join(missing)}")
        if args.row_kind:
            check_columns([args.row_kind], "--row-kind", parquet.schema_arrow, path)
        check_no_null_keys(parquet, table.key, path)  # nothing to check for an append table
        check_columns(args.null_string, "--null-string", parquet.schema_arrow, path)
    memory = parse_memory(args.memory)
    if spec is not None:
        return _overwrite(table, files, spec, args, memory)
    for path, parquet in files:
        with Progress() as progress:
            progress.phase(f"writing {path}", parquet.metadata.num_rows)
            batches = parquet_batches(parquet, progress)  # streamed: never the whole file in memory
            if args.null_string and table.snapshots():
                batches = (contest.null_strings_as_null(b, args.null_string) for b in batches)
            data = pa.RecordBatchReader.from_batches(parquet.schema_arrow, batches)
            result = table.write(data, row_kind=args.row_kind, memory_limit=memory)
            seconds = progress.elapsed()
        rows = parquet.metadata.num_rows
        print(
            f"snapshot {result['snapshot']}: {path}: {plural(rows, 'row')} -> {plural(result['files'], 'file')}"
            f" in {seconds:.2f}s"
        )
    return 0


def _overwrite(table: mc.Table, files: list, spec: dict[str, str], args: argparse.Namespace, memory: int) -> int:
    """``table write --overwrite``: every file's rows in one write, committed as one overwrite."""
    null_strings = args.null_string and table.snapshots()
    rows = sum(parquet.metadata.num_rows for _, parquet in files)
    with Progress() as progress:
        progress.phase("overwriting", rows)
        with table.new_write(row_kind=args.row_kind, memory_limit=memory, overwrite=True) as write:
            for _, parquet in files:
                batches = parquet_batches(parquet, progress)
                if null_strings:
                    batches = (contest.null_strings_as_null(b, args.null_string) for b in batches)
                write.write(pa.RecordBatchReader.from_batches(parquet.schema_arrow, batches))
            messages = write.prepare_commit()
        snapshot = table.commit(messages, overwrite=spec or True)
        seconds = progress.elapsed()
    what = ", ".join(f"{k}={v}" for k, v in spec.items()) or "the table"
    if snapshot is None:
        print(f"nothing overwritten: no rows, and the table replaces only the partitions rows are in ({what})")
        return 0
    written = sum(1 for m in messages if m.new_files)
    print(
        f"snapshot {snapshot}: overwrote {what} with {plural(rows, 'row')} from {plural(len(files), 'file')}"
        f" -> {plural(written, 'file')} in {seconds:.2f}s"
    )
    return 0


def _partition_spec(table: mc.Table, items: list[str], usage: str) -> dict[str, str]:
    """COL=VALUE items as a partition spec: partition columns of the table, each once."""
    spec: dict[str, str] = {}
    for item in items:
        column, value = _key_value(item, usage)
        if column not in table.partition_by:
            columns = ", ".join(table.partition_by) or "none"
            raise UserError(f"{column} is not a partition column of the table (its partition columns: {columns})")
        if column in spec:
            raise UserError(f"partition column {column} is given twice ({spec[column]} and {value})")
        spec[column] = value
    return spec


def cmd_drop_partition(args: argparse.Namespace) -> int:
    table = open_table(args.path, args.warehouse)
    if not table.partition_by:
        raise UserError(f"{args.path} has no partition columns: 'merge-core table truncate' empties it")
    specs = [_partition_spec(table, spec.split(","), "COL=VALUE[,COL=VALUE...]") for spec in args.specs]
    result = table.drop_partitions(specs)
    print(
        f"snapshot {result['snapshot']}: dropped {plural(result['partitions'], 'partition')}"
        f" ({plural(result['files'], 'file')}, {plural(result['rows'], 'stored row')});"
        " older snapshots keep them until expire"
    )
    return 0


def cmd_truncate(args: argparse.Namespace) -> int:
    result = open_table(args.path, args.warehouse).truncate()
    print(
        f"snapshot {result['snapshot']}: truncated ({plural(result['files'], 'file')},"
        f" {plural(result['rows'], 'stored row')} removed); older snapshots keep them until expire"
    )
    return 0


def cmd_read(args: argparse.Namespace) -> int:
    table = open_table(args.path, args.warehouse, args.branch)
    as_of = None if args.as_of is None else _moment(args.as_of)
    partitions: dict[str, list[str]] = {}
    for item in args.partition:
        column, value = _key_value(item, "--partition COL=VALUE")
        partitions.setdefault(column, []).append(value)
    partition_schema = pa.schema([table.schema.field(c) for c in table.partition_by])
    check_columns(partitions, "--partition", partition_schema, f"the partitions of {args.path}")
    columns = args.columns.split(",") if args.columns else None
    if columns:
        check_columns(columns, "--columns", table.schema, args.path)
    if args.snapshot is not None and args.snapshot not in table.snapshots():
        kept = ", ".join(map(str, table.snapshots())) or "none yet"
        raise UserError(f"--snapshot {args.snapshot}: the table has no such snapshot (it keeps: {kept})")
    condition = None if args.filter is None else filter_expr.parse(args.filter, table.read_schema())
    check_output(args.output, [])
    with Progress() as progress:
        progress.phase("reading")
        stream = table.read(
            columns=columns,
            partitions=partitions or None,
            snapshot=args.snapshot,
            tag=args.tag,
            as_of=as_of,
            filter=condition,
        )
        rows = write_stream(stream, args.output, progress)
        seconds = progress.elapsed()
    s = stream.stats
    print(
        f"read snapshot {s['snapshot']}: {plural(s['rows_in'], 'stored row')} -> {plural(rows, 'row')}"
        f" in {seconds:.2f}s "
        f"({rate(s['rows_in'], seconds)}) -> {args.output}\n"
        f"  files read {s['files_read']} of {s['files_total']}, "
        f"partitions read {s['partitions_read']} of {s['partitions_total']}"
        + (f", rows filtered out {s['rows_filtered_out']}" if "rows_filtered_out" in s else "")
    )
    return 0


def _moment(text: str) -> datetime.datetime:
    """``--as-of``: an ISO 8601 date-time, or a date (its midnight); local time without an offset."""
    try:
        return datetime.datetime.fromisoformat(text.strip())
    except ValueError:
        raise UserError(
            f"--as-of takes an ISO 8601 date-time such as '2026-11-27 08:00' or '2026-11-27T08:00:00+01:00',"
            f" got {text!r}"
        ) from None


def cmd_compact(args: argparse.Namespace) -> int:
    table = open_table(args.path, args.warehouse)
    kind = "full" if args.full else "partial"
    with Progress() as progress:
        progress.show(f"{kind} compaction: merging buckets")
        result = table.compact(full=args.full)
        seconds = progress.elapsed()
    merged, written, snapshot = result["files_merged"], result["files_written"], result["snapshot"]
    if not merged:
        print(f"{kind} compaction: nothing to compact (snapshot {snapshot})")
        return 0
    print(f"{kind} compaction: {plural(merged, 'file')} -> {written} in {seconds:.2f}s (snapshot {snapshot})")
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    info = open_table(args.path, args.warehouse).info()
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    print(describe(info))
    return 0


def describe(info: dict[str, Any]) -> str:
    """``table info``'s summary for people: what the table is and what it holds."""
    merge = info["merge"]
    columns = ", ".join(f"{name} {kind}" for name, kind in info["columns"].items())
    lines = [
        f"table {info['path']} ({info['format']})",
        f"  columns:   {columns}",
        f"  key:       {', '.join(info['key']) or 'none (an append table: rows kept as written, never merged)'}",
        f"  partition: {', '.join(info['partition_by']) or 'none'}",
        "  buckets:   "
        + (
            "bucket-unaware (one per partition)"
            if not info["key"] and info["buckets"] == -1
            else f"{info['buckets']} per partition"
        ),
    ]
    if merge is not None:
        function = merge["function"]
        fields = merge.get("fields") or {}
        if fields:
            per_column = ", ".join(f"{c} {f.get('function', f)}" for c, f in fields.items())
            function += f" ({per_column}; others {merge.get('default', 'last_non_null_value')})"
        lines.append(
            f"  merge:     {function}" + (f", ordered by {', '.join(info['sequence'])}" if info["sequence"] else "")
        )
    if info["snapshot"] is None:
        lines.append("  snapshot:  none yet (the table is empty)")
        return "\n".join(lines)
    lines += [
        f"  snapshot:  {info['snapshot']} (latest; {plural(info['snapshots'], 'snapshot')} kept)",
        f"  data:      {plural(info['stored_rows'], 'stored row')} in {plural(info['files'], 'file')},"
        f" {human_bytes(info['bytes'])}, {plural(info['partitions'], 'partition')}",
        f"  runs:      at most {info['max_runs_per_bucket']} per bucket (what a read of the worst bucket merges)",
    ]
    return "\n".join(lines)


def cmd_expire(args: argparse.Namespace) -> int:
    table = open_table(args.path, args.warehouse)
    if args.keep is not None:
        check_positive(args.keep, "--keep")
    if args.orphan_age < 0:
        raise UserError(f"--orphan-age must be 0 or more seconds, got {args.orphan_age}")
    result = table.expire(keep_snapshots=args.keep, orphan_age=args.orphan_age)
    print(
        f"removed {plural(result['snapshots_removed'], 'snapshot')}, {plural(result['files_removed'], 'data file')}"
        f" and {plural(result['manifests_removed'], 'manifest file')} ({human_bytes(result['bytes_removed'])})"
    )
    return 0


def _key_value(item: str, usage: str) -> tuple[str, str]:
    key, sep, value = item.partition("=")
    if not sep or not key:
        option, form = usage.split()
        raise UserError(f"{option} takes {form}, got {item!r}")
    return key, value


def cmd_tag(args: argparse.Namespace) -> int:
    table = open_table(args.path, args.warehouse)
    if args.name is None:
        if args.delete or args.snapshot is not None:
            raise UserError("--delete and --snapshot need a tag NAME")
        tags = table.tags()
        for name, snapshot in sorted(tags.items(), key=lambda item: (item[1], item[0])):
            print(f"{name}\tsnapshot {snapshot}")
        if not tags:
            print(f"no tags in {args.path}")
        return 0
    if args.delete:
        if args.snapshot is not None:
            raise UserError("--delete removes a tag; --snapshot is for creating one")
        table.delete_tag(args.name)
        print(f"removed tag {args.name} (expire removes the files only it kept)")
        return 0
    snapshot = table.create_tag(args.name, args.snapshot)
    print(f"tagged snapshot {snapshot} of {args.path} as {args.name}")
    return 0


def cmd_rollback(args: argparse.Namespace) -> int:
    table = open_table(args.path, args.warehouse)
    as_of = None if args.as_of is None else _moment(args.as_of)
    result = table.rollback_to(snapshot=args.snapshot, tag=args.tag, as_of=as_of)
    tags = f", {plural(result['tags_removed'], 'tag')}" if result["tags_removed"] else ""
    print(
        f"rolled {args.path} back to snapshot {result['snapshot']}: removed"
        f" {plural(result['snapshots_removed'], 'snapshot')}{tags},"
        f" {plural(result['files_removed'], 'data file')} and {plural(result['manifests_removed'], 'manifest file')}"
        f" ({human_bytes(result['bytes_removed'])})"
    )
    return 0


def cmd_alter(args: argparse.Namespace) -> int:
    table = open_table(args.path, args.warehouse)
    _check_alter_flags(args)
    if args.add_column:
        name, type_ = args.add_column
        schema_id = table.add_column(name, type_, after=args.after, comment=args.comment)
        done = f"added column {name} {type_}"
    elif args.rename_column:
        name, new_name = args.rename_column
        schema_id = table.rename_column(name, new_name)
        done = f"renamed column {name} to {new_name}"
    elif args.drop_column:
        schema_id = table.drop_column(args.drop_column)
        done = f"dropped column {args.drop_column}"
    elif args.alter_column:
        schema_id = table.alter_column(args.alter_column, type=args.type, nullable=args.nullable, comment=args.comment)
        done = f"altered column {args.alter_column}"
    elif args.set:
        options = dict(_key_value(item, "--set KEY=VALUE") for item in args.set)
        schema_id = table.set_options(options)
        done = "set " + ", ".join(f"{key}={value}" for key, value in options.items())
    else:
        schema_id = table.remove_options(args.reset)
        done = "reset " + ", ".join(args.reset)
    print(f"{done}: {args.path} now has schema {schema_id}")
    return 0


def _check_alter_flags(args: argparse.Namespace) -> None:
    """The flags that refine one change are refused with another, rather than ignored."""
    allowed = {
        "--after": args.add_column,
        "--type": args.alter_column,
        "--nullable/--not-null": args.alter_column,
        "--comment": args.add_column or args.alter_column,
    }
    given = {
        "--after": args.after,
        "--type": args.type,
        "--nullable/--not-null": args.nullable,
        "--comment": args.comment,
    }
    for flag, value in given.items():
        if value is not None and not allowed[flag]:
            raise UserError(f"{flag} does not go with this change (see merge-core table alter --help)")
    if args.alter_column and args.type is None and args.nullable is None and args.comment is None:
        raise UserError("--alter-column NAME needs --type, --nullable, --not-null or --comment")
