"""``merge-core merge``: sorted Parquet runs merged into one file, each key's versions folded."""

from __future__ import annotations

import argparse

import pyarrow.parquet as pq

import merge_core as mc

from .common import (
    MERGE_FUNCTIONS,
    Progress,
    UserError,
    add_command,
    check_columns,
    check_no_null_keys,
    check_output,
    open_parquet,
    summary,
    write_stream,
)


def add_command_to(commands: argparse._SubParsersAction) -> None:
    p = add_command(
        commands,
        "merge",
        "merge sorted Parquet runs (oldest first) into one Parquet file, folding the versions of each key",
        """
merge-core merge day1.parquet day2.parquet -k id -o merged.parquet
merge-core merge a.parquet b.parquet -k id --merge first-row -o first.parquet
merge-core merge a.parquet b.parquet -k id --agg requests=sum --agg last_seen=max -o totals.parquet
""",
    )
    p.add_argument("runs", nargs="+", metavar="RUN", help="a Parquet file sorted by the key; oldest run first")
    p.add_argument("-k", "--key", required=True, action="append", help="key column (repeat for several)")
    p.add_argument(
        "--merge",
        default=None,
        choices=MERGE_FUNCTIONS,
        help="how the versions of a key fold (default: deduplicate, the newest wins; aggregate with --agg)",
    )
    p.add_argument(
        "--agg",
        action="append",
        default=[],
        metavar="COL=FUNC",
        help="aggregate column COL with FUNC (sum, product, min, max, last_value, last_non_null_value, first_value,"
        " first_non_null_value, listagg, bool_and, bool_or, collect, merge_map); repeat for several; implies"
        " --merge aggregate",
    )
    p.add_argument(
        "--agg-default",
        default="last_non_null_value",
        metavar="FUNC",
        help="with --agg: the function of the columns no --agg names",
    )
    p.add_argument(
        "--algorithm",
        default="loser-tree",
        choices=["loser-tree", "heap"],
        help="the k-way merge: a loser tree, or a binary heap (slower, kept to compare)",
    )
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="the Parquet file to write (replaced whole)")
    p.set_defaults(run=cmd_merge)


def merge_option(args: argparse.Namespace, schema_of: list[tuple[str, pq.ParquetFile]] | None = None) -> mc.MergeSpec:
    """--merge, or an aggregation built from --agg COL=FUNC options."""
    if not getattr(args, "agg", None):
        if getattr(args, "agg_default", None) not in (None, "last_non_null_value"):
            raise UserError("--agg-default needs --agg COL=FUNC options (or use --merge aggregate alone)")
        return args.merge or "deduplicate"
    if args.merge not in (None, "aggregate"):
        raise UserError(f"--agg sets per-column aggregate functions; it cannot be used with --merge {args.merge}")
    fields: dict[str, str] = {}
    for item in args.agg:
        column, sep, function = item.partition("=")
        if not sep or not column or not function:
            raise UserError(f"--agg takes COL=FUNC (like requests=sum), got {item!r}")
        fields[column] = function
    for path, parquet in schema_of or []:
        check_columns(fields, "--agg", parquet.schema_arrow, path)
    return mc.Aggregate(fields=fields, default=args.agg_default)


def cmd_merge(args: argparse.Namespace) -> int:
    files = [(p, open_parquet(p, "RUN")) for p in args.runs]
    for path, parquet in files:
        check_columns(args.key, "--key", parquet.schema_arrow, path)
        check_no_null_keys(parquet, args.key, path)
    check_output(args.output, args.runs)
    merge = merge_option(args, files)
    total = sum(f.metadata.num_rows for _, f in files)
    with Progress() as progress:
        progress.phase("merging", total)
        # Paths: the files are decoded in Rust, ahead of the merge; progress counts the
        # input rows the merge has taken in.
        runs = [path for path, _ in files]
        stream = mc.merge(runs, key=args.key, merge=merge, algorithm=args.algorithm, batch_size=65536)
        rows = write_stream(stream, args.output, progress, count_input=True)
        seconds = progress.elapsed()
    summary("merge", seconds, stream.stats, rows, args.output)
    return 0
