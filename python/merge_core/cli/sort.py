"""``merge-core sort``: a Parquet file sorted by key within a memory budget, spilling to disk."""

from __future__ import annotations

import argparse

import merge_core as mc

from .common import (
    MERGE_FUNCTIONS,
    Progress,
    add_command,
    add_memory_option,
    check_columns,
    check_no_null_keys,
    check_output,
    check_spill_dir,
    open_parquet,
    parquet_batches,
    parse_memory,
    summary,
    write_stream,
)


def add_command_to(commands: argparse._SubParsersAction) -> None:
    p = add_command(
        commands,
        "sort",
        "sort a Parquet file by key within a memory budget, spilling sorted runs to disk",
        """
merge-core sort big.parquet -k id -o sorted.parquet
merge-core sort big.parquet -k id --memory 64MiB --spill-dir /mnt/scratch -o sorted.parquet
merge-core sort events.parquet -k user -k ts --merge deduplicate -o latest.parquet
""",
    )
    p.add_argument("input", metavar="IN", help="the Parquet file to sort")
    p.add_argument("-k", "--key", required=True, action="append", help="key column (repeat for several)")
    add_memory_option(p, "sort memory")
    p.add_argument(
        "--merge",
        default=None,
        choices=MERGE_FUNCTIONS,
        help="fold the rows of equal keys with this function (default: keep every row)",
    )
    p.add_argument(
        "--spill-dir", default=None, metavar="DIR", help="directory for spill files (default: the system's temp dir)"
    )
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="the Parquet file to write (replaced whole)")
    p.set_defaults(run=cmd_sort)


def cmd_sort(args: argparse.Namespace) -> int:
    parquet = open_parquet(args.input)
    check_columns(args.key, "--key", parquet.schema_arrow, args.input)
    check_no_null_keys(parquet, args.key, args.input)
    check_output(args.output, [args.input])
    check_spill_dir(args.spill_dir)
    memory = parse_memory(args.memory)
    total = parquet.metadata.num_rows
    with Progress() as progress:
        progress.phase("sorting: reading", total)
        stream = mc.sort(
            parquet_batches(parquet, progress),
            key=args.key,
            memory_limit=memory,
            merge=args.merge,
            spill_dir=args.spill_dir,
        )
        progress.phase("sorting: writing", None if args.merge else total)
        rows = write_stream(stream, args.output, progress)
        seconds = progress.elapsed()
    summary("sort", seconds, stream.stats, rows, args.output)
    return 0
