"""The ``merge-core`` command line: merge, sort, upsert on Spark, contest data, demo.

Every command checks its arguments (files, columns, sizes, directories) before it starts
work, shows one progress line on stderr when stderr is a terminal, ends with a summary on
stdout, and answers a failure with one line on stderr: exit status 2 for a mistake in the
command line or its inputs, 1 for a failure of merge-core, Spark or the machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import threading
import time
import traceback
from typing import Any

import pyarrow.parquet as pq

import merge_core as mc

from . import _cli_demo, _cli_table
from ._cli_common import (
    Parser,
    Progress,
    UserError,
    add_command,
    add_memory_option,
    add_null_string_option,
    check_columns,
    check_no_null_keys,
    check_output,
    check_positive,
    check_spill_dir,
    open_parquet,
    parquet_batches,
    parse_memory,
    plural,
    rate,
    report,
    spark_error,
    spark_progress,
    start_spark,
    write_stream,
)
from .bench import SUITES

EXAMPLES = """examples:
  merge-core demo                                   contest upsert on Spark: merge-core vs Spark SQL
  merge-core gen data/ --rows 2000000 --increments 10
  merge-core upsert data/*.parquet -o merged/ --key uuid --preset contest
  merge-core merge run1.parquet run2.parquet -k id --merge deduplicate -o merged.parquet
  merge-core sort big.parquet -k id --memory 256MiB -o sorted.parquet
  merge-core bench --scale small                    merge-core vs DuckDB, Polars, DataFusion, Spark, pypaimon
  merge-core table --help                           Paimon tables: create, write, read, compact, info, expire

Run 'merge-core COMMAND --help' for a command's options and examples.
"""

MERGE_FUNCTIONS = ["deduplicate", "first-row", "partial-update", "aggregate", "none"]


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


def summary(what: str, seconds: float, stats: dict, rows: int, out: str) -> None:
    speed = rate(stats["rows_in"], seconds)
    print(
        f"{what}: {plural(stats['rows_in'], 'row')} in, {plural(rows, 'row')} out in {seconds:.2f}s ({speed}) -> {out}"
    )
    if "spilled_runs" in stats:
        print(
            f"  spilled {plural(stats['spilled_runs'], 'run')}, {stats['spilled_bytes'] / 2**20:.1f} MiB, "
            f"{plural(stats['merge_passes'], 'merge pass', 'merge passes')}, "
            f"peak memory {stats['peak_memory_bytes'] / 2**20:.1f} MiB"
        )


def cmd_gen(args: argparse.Namespace) -> int:
    from . import contest

    check_positive(args.rows, "--rows")
    if args.increments < 0:
        raise UserError(f"--increments must be 0 or more, got {args.increments}")
    if os.path.exists(args.output) and not os.path.isdir(args.output):
        raise UserError(f"OUT {args.output} is a file, not a directory")
    start = time.perf_counter()
    paths = contest.generate(args.output, args.rows, args.increments, args.seed)
    rows = contest.total_rows(paths)
    seconds = time.perf_counter() - start
    print(f"wrote {plural(len(paths), 'file')}, {plural(rows, 'row')}, to {args.output} in {seconds:.1f}s")
    return 0


def _upsert_options(args: argparse.Namespace, columns: list[str]) -> dict:
    if args.preset == "contest":
        missing = [c for c in ("requests", "name") if c not in columns]
        if missing:
            raise UserError(f"--preset contest needs the contest's columns; the inputs lack {', '.join(missing)}")
        return dict(mc.spark.CONTEST)
    merge: mc.MergeSpec = args.merge
    if args.sum or args.newest_non_null:
        fields = {c: "sum" for c in args.sum}
        merge = mc.Aggregate(fields=fields, default="last_non_null_value")
    return {"merge": merge, "null_strings": args.null_string}


def cmd_upsert(args: argparse.Namespace) -> int:
    import merge_core.spark  # noqa: F401  (mc.spark)

    # Every check before OUT is replaced or Spark starts.
    parquets = [(p, open_parquet(p, "IN")) for p in args.inputs]
    first_path, first = parquets[0][0], parquets[0][1].schema_arrow
    for path, parquet in parquets:
        schema = parquet.schema_arrow
        check_columns(args.key, "--key", schema, path)
        check_no_null_keys(parquet, args.key, path)
        check_columns(args.sum, "--sum", schema, path)
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
    options = _upsert_options(args, first.names)
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


def cmd_bench(args: argparse.Namespace) -> int:
    from .bench import run

    if args.repeat is not None:
        check_positive(args.repeat, "--repeat")
    command = " ".join(["merge-core bench", f"--scale {args.scale}", *(f"--only {s}" for s in args.only or [])])
    report_path = run(args.scale, args.out, args.only, args.master, args.repeat, command)
    print(f"report: {report_path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="merge-core",
        description="Merge and sort sorted Arrow runs the way LSM data lakes do.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"merge-core {mc.__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

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

    p = add_command(
        commands,
        "gen",
        "write contest-shaped data: a base file and increments that update and add keys",
        """
merge-core gen data/
merge-core gen data/ --rows 2000000 --increments 10 --seed 7
""",
    )
    p.add_argument("output", metavar="OUT", help="directory to write 0.parquet, 1.parquet, ... into")
    p.add_argument("--rows", type=int, default=200_000, help="rows of the base file; each increment has rows/5")
    p.add_argument("--increments", type=int, default=10, help="increment files after the base file")
    p.add_argument("--seed", type=int, default=0, help="random seed: the same seed writes the same data")
    p.set_defaults(run=cmd_gen)

    p = add_command(
        commands,
        "upsert",
        "upsert versioned Parquet files (oldest first) on Spark with merge-core, into Parquet parts",
        """
merge-core upsert data/*.parquet -o merged/ --key uuid --preset contest
merge-core upsert v1.parquet v2.parquet -o merged/ -k id --sum clicks --newest-non-null --master 'local[4]'
""",
    )
    p.add_argument("inputs", nargs="+", metavar="IN", help="Parquet files, oldest version first")
    p.add_argument(
        "-o", "--output", required=True, metavar="OUT", help="output directory (one Parquet part per bucket)"
    )
    p.add_argument("-k", "--key", required=True, action="append", help="key column (repeat for several)")
    p.add_argument("--preset", choices=["contest"], help="the contest's rules: requests summed, others newest non-null")
    p.add_argument(
        "--merge",
        default="deduplicate",
        choices=MERGE_FUNCTIONS[:-1],
        help="how the versions of a key fold, when no --preset or column rule is given",
    )
    p.add_argument(
        "--sum", action="append", default=[], metavar="COL", help="sum column COL (others: newest non-null value)"
    )
    p.add_argument(
        "--newest-non-null", action="store_true", help="every column but --sum ones takes its newest non-null"
    )
    add_null_string_option(p, "versions after the first")
    add_memory_option(p, "sort memory of each Spark task")
    p.add_argument(
        "--buckets", type=int, default=None, help="key buckets, one Spark task each (default: Spark's cores)"
    )
    p.add_argument("--overwrite", action="store_true", help="replace OUT if it is not empty")
    p.add_argument("--master", default="local[*]", help="Spark master URL")
    p.set_defaults(run=cmd_upsert)

    p = add_command(
        commands,
        "demo",
        "generate contest data, upsert it on Spark with merge-core's two pipelines and with Spark SQL, compare",
        """
merge-core demo
merge-core demo --rows 1000000 --repeat 3 --master 'local[4]'
""",
    )
    p.add_argument("--rows", type=int, default=200_000, help="rows of the base file; each increment has rows/5")
    p.add_argument("--increments", type=int, default=10, help="increment files after the base file")
    p.add_argument("--repeat", type=int, default=2, help="runs of each pipeline; the best time is shown")
    p.add_argument("--master", default="local[2]", help="Spark master URL")
    p.add_argument("--seed", type=int, default=0, help="random seed of the generated data")
    p.set_defaults(run=_cli_demo.cmd_demo)

    p = add_command(
        commands,
        "bench",
        "run merge-core and its peers on the same generated data; write a report with charts",
        """
merge-core bench --scale small
merge-core bench --scale full --only sort --out /tmp/report
""",
    )
    p.add_argument("--scale", default="small", choices=["tiny", "small", "full"], help="data size")
    p.add_argument("--out", default="docs/benchmarks", metavar="DIR", help="folder for README.md and the PNG charts")
    p.add_argument("--only", action="append", choices=SUITES, metavar="SUITE", help=f"run only these: {SUITES}")
    p.add_argument("--repeat", type=int, default=None, help="runs of each timing (default: by scale)")
    p.add_argument("--master", default="local[2]", help="Spark master for the Spark suites")
    p.set_defaults(run=cmd_bench)

    _cli_table.add_commands(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    interrupted = _note_interrupts()
    try:
        args = build_parser().parse_args(argv)
        return args.run(args)
    except KeyboardInterrupt:
        print("merge-core: interrupted", file=sys.stderr)
        return 130
    except Exception as e:
        if interrupted.is_set():  # Ctrl-C in a Python callback, reported by pyarrow or Rust as their error
            print("merge-core: interrupted", file=sys.stderr)
            return 130
        if os.environ.get("MERGE_CORE_DEBUG"):
            traceback.print_exc()
        runs = getattr(args, "runs", None) or ([args.input] if getattr(args, "input", None) else None)
        return report(e, runs)


def _note_interrupts() -> threading.Event:
    """Ctrl-C raises KeyboardInterrupt as usual, and is also noted: raised inside a Python
    callback that pyarrow's C++ or merge-core's Rust called, it comes back as their error
    ("Unknown error: ... Python exception"), which must still end as an interrupt."""
    interrupted = threading.Event()

    def on_interrupt(signum: int, frame: Any) -> None:
        interrupted.set()
        signal.default_int_handler(signum, frame)

    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, on_interrupt)
    return interrupted


if __name__ == "__main__":
    sys.exit(main())
