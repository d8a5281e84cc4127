"""``merge-core merge``: sorted Parquet runs merged into one file, each key's versions folded."""

from __future__ import annotations

import argparse

import merge_core as mc

from .common import (
    MERGE_FUNCTIONS,
    Progress,
    add_command,
    add_merge_options,
    check_columns,
    check_no_null_keys,
    check_output,
    merge_option,
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
    add_merge_options(p, MERGE_FUNCTIONS)
    p.add_argument(
        "--algorithm",
        default="loser-tree",
        choices=["loser-tree", "heap"],
        help="the k-way merge: a loser tree, or a binary heap (slower, kept to compare)",
    )
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="the Parquet file to write (replaced whole)")
    p.set_defaults(run=cmd_merge)


def cmd_merge(args: argparse.Namespace) -> int:
    files = [(p, open_parquet(p, "RUN")) for p in args.runs]
    for path, parquet in files:
        check_columns(args.key, "--key", parquet.schema_arrow, path)
        check_no_null_keys(parquet, args.key, path)
    check_output(args.output, args.runs)
    merge = merge_option(args, [(path, parquet.schema_arrow) for path, parquet in files])
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
