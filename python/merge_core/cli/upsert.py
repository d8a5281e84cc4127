"""``merge-core upsert``: versioned Parquet files upserted on Spark into Parquet parts."""

from __future__ import annotations

import argparse
import os
import shutil

import pyarrow as pa

import merge_core as mc

from .. import contest
from .common import (
    MERGE_FUNCTIONS,
    Progress,
    UserError,
    add_command,
    add_memory_option,
    add_merge_options,
    add_null_string_option,
    check_columns,
    check_no_null_keys,
    check_positive,
    merge_option,
    open_parquet,
    parse_memory,
    plural,
    spark_error,
    spark_progress,
    start_spark,
)


def add_command_to(commands: argparse._SubParsersAction) -> None:
    p = add_command(
        commands,
        "upsert",
        "upsert versioned Parquet files (oldest first) on Spark with merge-core, into Parquet parts",
        """
merge-core upsert data/*.parquet -o merged/ --key uuid --preset contest
merge-core upsert v1.parquet v2.parquet -o merged/ -k id --agg clicks=sum --master 'local[4]'
""",
    )
    p.add_argument("inputs", nargs="+", metavar="IN", help="Parquet files, oldest version first")
    p.add_argument(
        "-o", "--output", required=True, metavar="OUT", help="output directory (one Parquet part per bucket)"
    )
    p.add_argument("-k", "--key", required=True, action="append", help="key column (repeat for several)")
    p.add_argument("--preset", choices=["contest"], help="the contest's rules: requests summed, others newest non-null")
    add_merge_options(p, MERGE_FUNCTIONS[:-1])
    add_null_string_option(p, "versions after the first")
    add_memory_option(p, "sort memory of each Spark task")
    p.add_argument(
        "--buckets", type=int, default=None, help="key buckets, one Spark task each (default: Spark's cores)"
    )
    p.add_argument("--overwrite", action="store_true", help="replace OUT if it is not empty")
    p.add_argument("--master", default="local[*]", help="Spark master URL")
    p.set_defaults(run=cmd_upsert)


def _upsert_options(args: argparse.Namespace, first: tuple[str, pa.Schema]) -> dict:
    if args.preset == "contest":
        missing = [c for c in ("requests", "name") if c not in first[1].names]
        if missing:
            raise UserError(f"--preset contest needs the contest's columns; the inputs lack {', '.join(missing)}")
        return dict(contest.CONTEST)
    return {"merge": merge_option(args, [first]), "null_strings": args.null_string}


def cmd_upsert(args: argparse.Namespace) -> int:
    import merge_core.spark  # noqa: F401  (mc.spark)

    # Every check before OUT is replaced or Spark starts.
    parquets = [(p, open_parquet(p, "IN")) for p in args.inputs]
    first_path, first = parquets[0][0], parquets[0][1].schema_arrow
    for path, parquet in parquets:
        schema = parquet.schema_arrow
        check_columns(args.key, "--key", schema, path)
        check_no_null_keys(parquet, args.key, path)
        check_columns(args.null_string, "--null-string", schema, path)
        if sorted(schema.names) != sorted(first.names):
            raise UserError(
                f"{path} has columns {', '.join(schema.names)}; {first_path} has {', '.join(first.names)}:"
                " every version needs the same columns"
            )
    memory = parse_memory(args.memory)
    if args.buckets is not None:
        check_positive(args.buckets, "--buckets", 65536)
    if any(os.path.realpath(p).startswith(os.path.realpath(args.output) + os.sep) for p in args.inputs):
        raise UserError(f"-o {args.output} holds inputs: choose another output directory")
    if os.path.exists(args.output) and not os.path.isdir(args.output):
        raise UserError(f"-o {args.output} is a file: give a directory for the output's Parquet parts")
    options = _upsert_options(args, (first_path, first))
    if os.path.isdir(args.output) and os.listdir(args.output):
        if not args.overwrite:
            raise UserError(f"-o {args.output} is not empty (pass --overwrite to replace it)")
        shutil.rmtree(args.output)
    with Progress() as progress:
        spark = start_spark(args.master, progress)
        with spark_progress(progress, spark, "upserting"):
            try:
                counts = mc.spark.upsert_files(
                    spark, args.inputs, args.output, key=args.key, memory_limit=memory, buckets=args.buckets, **options
                )
            except Exception as e:
                raise (spark_error(e, spark) or e) from None
        seconds = progress.elapsed()
    print(
        f"upsert: {plural(len(args.inputs), 'version')}, {plural(counts['rows_in'], 'row')}"
        f" -> {plural(counts['rows_out'], 'row')}"
        f" in {seconds:.1f}s ({plural(counts['buckets'], 'bucket')}, one Spark task each) -> {args.output}"
    )
    return 0
