"""The ``merge-core`` command line: merge, sort, upsert on Spark, contest data, demo."""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Iterable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq

import merge_core as mc
import merge_core.spark  # noqa: F401  (mc.spark)

from .bench import SUITES

EXAMPLES = """examples:
  merge-core demo                                   contest upsert on Spark: merge-core vs Spark SQL
  merge-core gen data/ --rows 2000000 --increments 10
  merge-core upsert data/*.parquet -o merged/ --key uuid --preset contest
  merge-core merge run1.parquet run2.parquet -k id --merge deduplicate -o merged.parquet
  merge-core sort big.parquet -k id --memory 256MiB -o sorted.parquet
  merge-core bench --scale small                    merge-core vs DuckDB, Polars, DataFusion, Spark, pypaimon
  merge-core table --help                           merge-on-read tables: create, write, read, compact
"""


class UserError(Exception):
    """A mistake in the command line or its inputs: one clear message, exit status 2."""


class Progress:
    """A one-line progress report on stderr (redrawn on a terminal, sparse otherwise)."""

    def __init__(self, what: str, total: int | None = None) -> None:
        self.what, self.total, self.done = what, total, 0
        self.start = self.last = time.perf_counter()
        self.tty = sys.stderr.isatty()

    def advance(self, n: int) -> None:
        self.done += n
        now = time.perf_counter()
        if now - self.last >= (0.2 if self.tty else 5.0):
            self.last = now
            self._draw(end="\r" if self.tty else "\n")

    def finish(self) -> None:
        self._draw(end="\n")

    def _draw(self, end: str) -> None:
        rate = self.done / max(time.perf_counter() - self.start, 1e-9)
        share = f" {100 * self.done / self.total:5.1f}%" if self.total else ""
        print(f"{self.what}: {self.done:,} rows{share} ({rate / 1e6:.2f} M rows/s)", end=end, file=sys.stderr)


def _parquet_batches(path: str, progress: Progress) -> Iterator[pa.RecordBatch]:
    for batch in _open_parquet(path).iter_batches(batch_size=65536):
        progress.advance(batch.num_rows)
        yield batch


def _open_parquet(path: str) -> pq.ParquetFile:
    if not os.path.exists(path):
        raise UserError(f"no such file: {path}")
    try:
        return pq.ParquetFile(path)
    except (pa.ArrowInvalid, OSError) as e:
        raise UserError(f"{path} is not a readable Parquet file ({e})") from e


def check_output(out: str, inputs: Iterable[str]) -> None:
    """Refuses an output that is also an input (writing it would destroy the input)."""
    target = os.path.realpath(out)
    if any(os.path.realpath(i) == target for i in inputs):
        raise UserError(f"the output {out} is also an input: choose another output file")


def write_stream(stream: mc.Stream, out: str) -> int:
    """Writes ``stream`` to the Parquet file ``out`` whole or not at all: into a temporary
    file beside it, renamed over ``out`` only once every row is written (a failed or
    interrupted run leaves ``out`` as it was and no temporary file)."""
    folder, name = os.path.split(os.path.abspath(out))
    temporary = os.path.join(folder, f".{name}.{uuid.uuid4().hex}.tmp")
    rows = 0
    try:
        with pq.ParquetWriter(temporary, stream.schema) as writer:
            for batch in stream:
                writer.write_batch(batch)
                rows += batch.num_rows
        os.replace(temporary, out)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(temporary)
        raise
    return rows


def cmd_merge(args: argparse.Namespace) -> int:
    files = [_open_parquet(p) for p in args.runs]
    total = sum(f.metadata.num_rows for f in files)
    progress = Progress("merging", total)
    check_output(args.output, args.runs)
    runs = [_parquet_batches(p, progress) for p in args.runs]
    stream = mc.merge(runs, key=args.key, merge=args.merge, algorithm=args.algorithm)
    start = time.perf_counter()
    rows = write_stream(stream, args.output)
    progress.finish()
    _summary("merge", start, stream.stats, rows, args.output)
    return 0


def cmd_sort(args: argparse.Namespace) -> int:
    total = _open_parquet(args.input).metadata.num_rows
    check_output(args.output, [args.input])
    progress = Progress("sorting", total)
    start = time.perf_counter()
    stream = mc.sort(
        _parquet_batches(args.input, progress),
        key=args.key,
        memory_limit=args.memory,
        merge=args.merge,
        spill_dir=args.spill_dir,
    )
    progress.finish()
    rows = write_stream(stream, args.output)
    _summary("sort", start, stream.stats, rows, args.output)
    return 0


def _summary(what: str, start: float, stats: dict, rows: int, out: str) -> None:
    seconds = time.perf_counter() - start
    print(
        f"{what}: {stats['rows_in']:,} rows in, {rows:,} rows out in {seconds:.2f}s "
        f"({stats['rows_in'] / max(seconds, 1e-9) / 1e6:.2f} M rows/s) -> {out}"
    )
    if "spilled_runs" in stats:
        print(
            f"  spilled {stats['spilled_runs']} runs, {stats['spilled_bytes'] / 2**20:.1f} MiB, "
            f"{stats['merge_passes']} merge passes, peak memory {stats['peak_memory_bytes'] / 2**20:.1f} MiB"
        )


def cmd_gen(args: argparse.Namespace) -> int:
    from . import contest

    start = time.perf_counter()
    paths = contest.generate(args.output, args.rows, args.increments, args.seed)
    rows = contest.total_rows(paths)
    print(f"wrote {len(paths)} files, {rows:,} rows, to {args.output} in {time.perf_counter() - start:.1f}s")
    return 0


def _spark(master: str):
    try:
        import pyspark  # noqa: F401
    except ImportError as e:
        raise UserError("this command needs pyspark: pip install 'merge-core[spark]'") from e
    return mc.spark.local_session(master)


def _upsert_options(args: argparse.Namespace) -> dict:
    if args.preset == "contest":
        return dict(mc.spark.CONTEST)
    merge: mc.MergeSpec = args.merge
    if args.sum or args.newest_non_null:
        fields = {c: "sum" for c in args.sum}
        merge = mc.Aggregate(fields=fields, default="last_non_null_value")
    return {"merge": merge, "null_strings": args.null_string}


def cmd_upsert(args: argparse.Namespace) -> int:
    for path in args.inputs:  # before OUT is replaced or Spark starts
        _open_parquet(path)
    if os.path.isdir(args.output) and os.listdir(args.output):
        if not args.overwrite:
            raise UserError(f"output {args.output} is not empty (pass --overwrite to replace it)")
        shutil.rmtree(args.output)
    spark = _spark(args.master)
    start = time.perf_counter()
    counts = mc.spark.upsert_files(
        spark,
        args.inputs,
        args.output,
        key=args.key,
        memory_limit=args.memory,
        buckets=args.buckets,
        **_upsert_options(args),
    )
    seconds = time.perf_counter() - start
    print(
        f"upsert: {len(args.inputs)} versions, {counts['rows_in']:,} rows -> {counts['rows_out']:,} rows"
        f" in {seconds:.1f}s ({counts['buckets']} buckets) -> {args.output}"
    )
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from . import contest
    from .bench._spark import compare_pipelines

    rows = args.rows
    with tempfile.TemporaryDirectory(prefix="merge-core-demo-") as tmp:
        print(f"generating contest data: {rows:,} base rows + {args.increments} increments of {rows // 5:,} ...")
        paths = contest.generate(os.path.join(tmp, "data"), rows, args.increments, args.seed)
        spark = _spark(args.master)
        runs = compare_pipelines(spark, paths, tmp, args.repeat)
        where = f"Spark {spark.version}, {args.master}"
        print(f"\ncontest upsert of {len(paths)} files, {runs[0].rows:,} rows ({where}):\n")
        print(f"{'pipeline':<42}{'best s':>8}{'M rows/s':>10}{'vs merge-core':>15}")
        for run in runs:
            speed = run.rows / run.seconds / 1e6
            print(f"{run.tool:<42}{run.seconds:>8.2f}{speed:>10.2f}{run.seconds / runs[0].seconds:>14.2f}x")
        same = all(run.same for run in runs)
        print(f"\nresults equal: {'yes' if same else 'NO'}")
        spark.stop()
        return 0 if same else 1


def cmd_bench(args: argparse.Namespace) -> int:
    from .bench import run

    command = " ".join(["merge-core bench", f"--scale {args.scale}", *(f"--only {s}" for s in args.only or [])])
    report = run(args.scale, args.out, args.only, args.master, args.repeat, command)
    print(f"report: {report}")
    return 0


def add_command(commands: argparse._SubParsersAction, name: str, help: str, examples: str) -> argparse.ArgumentParser:
    """A (sub)command whose help shows `help` and the examples below it."""
    return commands.add_parser(
        name, help=help, description=help, epilog=examples, formatter_class=argparse.RawDescriptionHelpFormatter
    )


def add_null_string_option(p: argparse.ArgumentParser, after: str) -> None:
    """`--null-string COL`: the contest's rule that the string 'null' in COL is a null."""
    p.add_argument(
        "--null-string",
        action="append",
        default=[],
        metavar="COL",
        help=f"in {after}, the string 'null' in COL means null",
    )


def build_parser() -> argparse.ArgumentParser:
    def sub(name: str, help: str) -> argparse.ArgumentParser:
        return add_command(commands, name, help, EXAMPLES)

    parser = argparse.ArgumentParser(
        prog="merge-core",
        description="Merge and sort sorted Arrow runs the way LSM data lakes do.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"merge-core {mc.__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub("merge", "merge sorted Parquet runs (oldest first) into one Parquet file")
    p.add_argument("runs", nargs="+", metavar="RUN")
    p.add_argument("-k", "--key", required=True, action="append", help="key column (repeat for several)")
    p.add_argument(
        "--merge", default="deduplicate", help="deduplicate (default), first-row, partial-update, aggregate or none"
    )
    p.add_argument("--algorithm", default="loser-tree", choices=["loser-tree", "heap"])
    p.add_argument("-o", "--output", required=True)
    p.set_defaults(run=cmd_merge)

    p = sub("sort", "sort a Parquet file within a memory limit, spilling to disk")
    p.add_argument("input")
    p.add_argument("-k", "--key", required=True, action="append", help="key column (repeat for several)")
    p.add_argument("--memory", default="256MiB", help="memory limit (default 256MiB)")
    p.add_argument("--merge", default=None, help="fold equal keys with this merge function")
    p.add_argument("--spill-dir", default=None)
    p.add_argument("-o", "--output", required=True)
    p.set_defaults(run=cmd_sort)

    p = sub("gen", "write contest-shaped data: a base file and increments")
    p.add_argument("output", help="directory to write 0.parquet, 1.parquet, ... into")
    p.add_argument("--rows", type=int, default=200_000, help="rows of the base file (increments: rows/5)")
    p.add_argument("--increments", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(run=cmd_gen)

    p = sub("upsert", "upsert versioned Parquet files (oldest first) on Spark with merge-core")
    p.add_argument("inputs", nargs="+", metavar="IN")
    p.add_argument("-o", "--output", required=True, help="output directory (Parquet)")
    p.add_argument("-k", "--key", required=True, action="append")
    p.add_argument("--preset", choices=["contest"], help="the contest's column rules")
    p.add_argument("--merge", default="deduplicate", help="merge function when no preset or column rule is given")
    p.add_argument(
        "--sum", action="append", default=[], metavar="COL", help="sum this column (others: newest non-null)"
    )
    p.add_argument("--newest-non-null", action="store_true", help="all columns but --sum ones take the newest non-null")
    add_null_string_option(p, "versions after the first")
    p.add_argument("--memory", default="256MiB", help="sort memory per Spark task")
    p.add_argument("--buckets", type=int, default=None, help="key buckets, one Spark task each (default: cores)")
    p.add_argument("--overwrite", action="store_true", help="replace OUT if it is not empty")
    p.add_argument("--master", default="local[*]")
    p.set_defaults(run=cmd_upsert)

    p = sub("demo", "generate contest data, upsert it on Spark with merge-core and with Spark SQL, compare")
    p.add_argument("--rows", type=int, default=200_000, help="base rows (default 200000)")
    p.add_argument("--increments", type=int, default=10)
    p.add_argument("--repeat", type=int, default=2, help="runs of each pipeline; the best time is shown")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(run=cmd_demo)

    p = sub("bench", "run merge-core and its peers on the same generated data; write a report with charts")
    p.add_argument("--scale", default="small", choices=["tiny", "small", "full"], help="data size (default small)")
    p.add_argument("--out", default="docs/benchmarks", help="folder for README.md and the PNG charts")
    p.add_argument("--only", action="append", choices=SUITES, metavar="SUITE", help=f"run only these: {SUITES}")
    p.add_argument("--repeat", type=int, default=None, help="runs of each timing (default: by scale)")
    p.add_argument("--master", default="local[2]", help="Spark master for the Spark suites")
    p.set_defaults(run=cmd_bench)

    from ._cli_table import add_commands

    add_commands(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except (UserError, mc.InvalidInputError, mc.TableNotFoundError, mc.TableExistsError) as e:
        print(f"merge-core: error: {e}", file=sys.stderr)
        return 2
    except mc.MergeCoreError as e:
        print(f"merge-core: failed: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("merge-core: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
