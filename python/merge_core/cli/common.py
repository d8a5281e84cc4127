"""What every ``merge-core`` command shares: its errors, argument checks, progress line,
help layout, Parquet output and summary. Each command's module imports this one (and
not each other)."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import re
import sys
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TextIO

import pyarrow as pa
import pyarrow.parquet as pq

import merge_core as mc

from ..inputs import parse_size

MERGE_FUNCTIONS = ["deduplicate", "first-row", "partial-update", "aggregate", "none"]
AGGREGATE_FUNCTIONS = (
    "sum, product, min, max, last_value, last_non_null_value, first_value, first_non_null_value, listagg,"
    " bool_and, bool_or, collect, merge_map"
)


def add_merge_options(p: argparse.ArgumentParser, functions: list[str]) -> None:
    """--merge, --agg COL=FUNC and --agg-default: how every command that folds says how
    (read back by :func:`merge_option`)."""
    p.add_argument(
        "--merge",
        default=None,
        choices=functions,
        help="how the versions of a key fold (default: deduplicate, the newest wins; aggregate with --agg)",
    )
    p.add_argument(
        "--agg",
        action="append",
        default=[],
        metavar="COL=FUNC",
        help=f"aggregate column COL with FUNC ({AGGREGATE_FUNCTIONS}); repeat for several; implies --merge aggregate",
    )
    p.add_argument(
        "--agg-default",
        default="last_non_null_value",
        metavar="FUNC",
        help="with --merge aggregate or --agg: the function of the columns no --agg names",
    )


def merge_option(args: argparse.Namespace, schemas: Iterable[tuple[str, pa.Schema]]) -> mc.MergeSpec:
    """The merge the options of :func:`add_merge_options` ask for, its columns checked
    against each (file, schema) of ``schemas``."""
    if not args.agg:
        if args.agg_default != "last_non_null_value" and args.merge != "aggregate":
            raise UserError("--agg-default needs --merge aggregate or --agg COL=FUNC options")
        if args.merge == "aggregate":
            return mc.Aggregate(default=args.agg_default)
        return args.merge or "deduplicate"
    if args.merge not in (None, "aggregate"):
        raise UserError(f"--agg sets per-column aggregate functions; it cannot be used with --merge {args.merge}")
    fields: dict[str, str] = {}
    for item in args.agg:
        column, sep, function = item.partition("=")
        if not sep or not column or not function:
            raise UserError(f"--agg takes COL=FUNC (like requests=sum), got {item!r}")
        fields[column] = function
    for path, schema in schemas:
        check_columns(fields, "--agg", schema, path)
    return mc.Aggregate(fields=fields, default=args.agg_default)


#: The smallest --memory a command accepts: below it a sort spills a run every few rows.
MIN_MEMORY = 2**20


class UserError(Exception):
    """A mistake in the command line or its inputs: one clear message, exit status 2."""


# -- help -------------------------------------------------------------------------------


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Examples kept as written; each option's default shown after its help (when it has
    one worth showing)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        shown = (
            default is not None and default is not argparse.SUPPRESS and default != [] and not isinstance(default, bool)
        )
        if shown and "%(default)" not in text and "default" not in text:
            text += " (default: %(default)s)"
        return text


class Parser(argparse.ArgumentParser):
    """An argument parser whose mistakes are one line (and exit status 2), naming the
    command's --help instead of printing its whole usage."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def add_command(commands: argparse._SubParsersAction, name: str, help: str, examples: str) -> argparse.ArgumentParser:
    """A (sub)command whose help shows `help` and its own examples below it."""
    epilog = "examples:\n" + "\n".join(f"  {line}" for line in examples.strip().splitlines())
    return commands.add_parser(name, help=help, description=help, epilog=epilog, formatter_class=HelpFormatter)


def add_null_string_option(p: argparse.ArgumentParser, after: str) -> None:
    """`--null-string COL`: the contest's rule that the string 'null' in COL is a null."""
    p.add_argument(
        "--null-string",
        action="append",
        default=[],
        metavar="COL",
        help=f"in {after}, the string 'null' in column COL means null (repeat for several columns)",
    )


MEMORY_HELP = (
    "at least 1MiB: a byte count or a size with a unit; binary units are powers of 2 "
    "(64MiB = 67,108,864 bytes, also KiB, GiB), decimal ones powers of 10 (64MB = 64,000,000 bytes, also KB, GB);"
    " units in any case"
)


def add_memory_option(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--memory", default="256MiB", metavar="SIZE", help=f"{what}, {MEMORY_HELP}")


# -- argument checks, before any work starts -----------------------------------------


def parse_memory(text: str, flag: str = "--memory") -> int:
    """Bytes from ``--memory`` (``64MiB`` is 2^26, ``64MB`` 64,000,000), at least 1 MiB."""
    try:
        size = parse_size(text, flag)
    except mc.InvalidInputError:
        raise UserError(
            f"{flag} takes a size like 256MiB (2^20 bytes per MiB) or 256MB (10^6 bytes per MB), got {text!r}"
        ) from None
    assert size is not None
    if size < MIN_MEMORY:
        raise UserError(f"{flag} {text} is too small to sort in: give at least 1MiB (1,048,576 bytes)")
    return size


def check_positive(value: int, flag: str, most: int | None = None) -> None:
    if value < 1 or (most is not None and value > most):
        upper = f" and at most {most:,}" if most is not None else ""
        raise UserError(f"{flag} must be at least 1{upper}, got {value}")


def open_parquet(path: str, what: str = "input") -> pq.ParquetFile:
    """The Parquet file at ``path``, or a UserError saying why it cannot be read."""
    if not os.path.exists(path):
        raise UserError(f"no such file: {path}")
    if os.path.isdir(path):
        raise UserError(f"{what} {path} is a directory, not a Parquet file")
    try:
        return pq.ParquetFile(path)
    except (pa.ArrowInvalid, OSError) as e:
        raise UserError(f"{path} is not a readable Parquet file ({one_line(str(e))})") from e


def check_columns(names: Iterable[str], flag: str, schema: pa.Schema, where: str) -> None:
    """Every column named by ``flag`` is one of ``schema``'s (the file ``where``'s)."""
    missing = [n for n in names if n not in schema.names]
    if missing:
        listed = ", ".join(missing)
        raise UserError(f"{flag} {listed}: no such column in {where} (its columns: {', '.join(schema.names)})")


def check_no_null_keys(parquet: pq.ParquetFile, keys: Iterable[str], where: str) -> None:
    """Refuses, from the file's statistics (no data read), a key column holding nulls."""
    metadata = parquet.metadata
    leaves = {metadata.schema.column(i).path: i for i in range(metadata.num_columns)}
    for key in keys:
        leaf = leaves.get(key)
        if leaf is None:
            continue
        nulls = 0
        for group in range(metadata.num_row_groups):
            stats = metadata.row_group(group).column(leaf).statistics
            if stats is not None and stats.has_null_count:
                nulls += stats.null_count
        if nulls:
            raise UserError(f"{where}: key column {key} has {plural(nulls, 'null')} (a key cannot be null)")


def check_output(out: str, inputs: Iterable[str], flag: str = "-o") -> None:
    """Refuses an output that is also an input (writing it would destroy the input), a
    directory, or a file in a directory that does not exist."""
    target = os.path.realpath(out)
    if any(os.path.realpath(i) == target for i in inputs):
        raise UserError(f"the output {out} is also an input: choose another output file")
    if os.path.isdir(out):
        raise UserError(f"{flag} {out} is a directory: give a Parquet file's name")
    folder = os.path.dirname(os.path.abspath(out))
    existing = folder
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise UserError(f"{flag} {out}: {existing} is a file, not a directory")
    if existing != folder:
        raise UserError(f"{flag} {out}: the directory {os.path.dirname(out) or folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UserError(f"{flag} {out}: cannot write into {os.path.dirname(out) or folder} (permission denied)")


def check_spill_dir(path: str | None) -> None:
    """A --spill-dir must be a writable directory now, not once the first spill fails."""
    if path is None:
        return
    if not os.path.exists(path):
        raise UserError(f"--spill-dir {path}: no such directory")
    if not os.path.isdir(path):
        raise UserError(f"--spill-dir {path} is a file, not a directory")
    if not os.access(path, os.W_OK | os.X_OK):
        raise UserError(f"--spill-dir {path}: cannot write into it (permission denied)")


# -- TABLE: a table's directory, or DB.TABLE in a warehouse ---------------------------


def add_warehouse_option(p: argparse.ArgumentParser, required: bool = False) -> None:
    """``--warehouse W``: where DB.TABLE names live (read back by :func:`table_ref`)."""
    p.add_argument(
        "-w",
        "--warehouse",
        default=None,
        required=required,
        metavar="W",
        help="a warehouse (a directory or s3:// URI) laid out as Paimon's filesystem catalog, <W>/<DB>.db/<TABLE>;"
        " TABLE is then DB.TABLE",
    )


def is_remote(path: str) -> bool:
    """Whether ``path`` is a URI of a remote store (``s3://``), where there is no local
    file to check first."""
    return "://" in path and not path.startswith("file://")


@dataclasses.dataclass(frozen=True)
class TableRef:
    """TABLE as the command line gave it: a table's directory, or (with ``catalog``) the
    DB.TABLE of a warehouse."""

    text: str
    catalog: mc.Catalog | None = None

    def open(self) -> mc.Table:
        """The table, or a UserError naming what is there instead."""
        if self.catalog is not None:
            return self.catalog.get_table(self.text)
        if not is_remote(self.text) and os.path.exists(self.text) and not os.path.isdir(self.text):
            raise UserError(f"TABLE {self.text} is a file, not a table's directory")
        try:
            return mc.Table.open(self.text)
        except (mc.TableNotFoundError, NotADirectoryError):
            raise UserError(
                f"no table at {self.text} (create one with: merge-core table create {self.text} --like FILE.parquet"
                " -k KEY)"
            ) from None

    def create(self, schema: pa.Schema, **options: Any) -> mc.Table:
        """A new table (``options`` as ``mc.Table.create`` takes them)."""
        if self.catalog is not None:
            return self.catalog.create_table(self.text, schema, **options)
        if not is_remote(self.text):
            check_local_parent(self.text)
        return mc.Table.create(self.text, schema, **options)


def table_ref(text: str, warehouse: str | None) -> TableRef:
    """TABLE resolved: with ``--warehouse``, DB.TABLE of the warehouse's catalog; without,
    a table's directory. A DB.TABLE given without ``--warehouse`` is named as such."""
    if warehouse is not None:
        if "/" in text or os.sep in text or "." not in text:
            raise UserError(f"with --warehouse, TABLE is DB.TABLE (a database and a table of {warehouse}), got {text}")
        return TableRef(text, mc.Catalog(warehouse))
    if "." in text.strip(".") and "/" not in text and os.sep not in text and not os.path.exists(text):
        raise UserError(
            f"TABLE {text} reads as DB.TABLE: give its warehouse with --warehouse W (for a directory of that name,"
            f" write ./{text})"
        )
    return TableRef(text)


def check_local_parent(path: str) -> None:
    """Fails if ``path`` or the nearest existing directory above it is a file."""
    parent = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent) or (os.path.exists(path) and not os.path.isdir(path)):
        raise UserError(f"TABLE {path}: {parent if not os.path.isdir(parent) else path} is a file")


# -- output ---------------------------------------------------------------------------


def write_stream(stream: mc.Stream, out: str, progress: Progress | None = None, count_input: bool = False) -> int:
    """Writes ``stream`` to the Parquet file ``out`` whole or not at all: into a temporary
    file beside it, renamed over ``out`` only once every row is written (a failed or
    interrupted run leaves ``out`` as it was and no temporary file). ``progress`` counts
    the rows written, or with ``count_input`` the rows the stream has taken in."""
    folder, name = os.path.split(os.path.abspath(out))
    temporary = os.path.join(folder, f".{name}.{uuid.uuid4().hex}.tmp")
    rows = 0
    try:
        with pq.ParquetWriter(temporary, stream.schema) as writer:
            for batch in stream:
                writer.write_batch(batch)
                rows += batch.num_rows
                if progress is not None:
                    progress.advance(stream.stats["rows_in"] - progress.done if count_input else batch.num_rows)
        os.replace(temporary, out)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(temporary)
        raise
    return rows


def parquet_batches(parquet: pq.ParquetFile, progress: Progress | None = None, **options) -> Iterator[pa.RecordBatch]:
    """The file's batches (65,536 rows), counted on ``progress``."""
    for batch in parquet.iter_batches(batch_size=65536, **options):
        if progress is not None:
            progress.advance(batch.num_rows)
        yield batch


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 file``, ``2 files``, ``1,000 rows``."""
    return f"{n:,} {word if n == 1 else many or word + 's'}"


def human_bytes(n: int) -> str:
    """``20844979`` -> ``19.9 MiB``."""
    size = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{n:,} bytes" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def rate(rows: int, seconds: float) -> str:
    return f"{rows / max(seconds, 1e-9) / 1e6:.2f} M rows/s"


# -- progress -------------------------------------------------------------------------


class Progress:
    """The one progress line of every command: on stderr, redrawn in place, and only
    when stderr is a terminal (nothing at all otherwise: logs and pipes stay clean).

    A command goes through phases (``phase("sorting", total)``), counts work in each
    (``advance(n)``) and the line is cleared when it ends, leaving only the summary. Times
    are counted from the command's start, the clock its summary uses too."""

    def __init__(self, stream: TextIO | None = None, enabled: bool | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.start = time.perf_counter()
        self.label, self.total, self.done, self.unit = "", None, 0, "rows"
        self._last = 0.0
        self._shown = False
        self._lock = threading.Lock()

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def phase(self, label: str, total: int | None = None, unit: str = "rows") -> None:
        self.label, self.total, self.done, self.unit = label, total, 0, unit
        self.show()

    def advance(self, n: int = 1) -> None:
        self.done += n
        if self.enabled and time.perf_counter() - self._last >= 0.2:
            self.show()

    def show(self, text: str | None = None) -> None:
        """Draws the current phase, or ``text`` in its place."""
        if not self.enabled:
            return
        if text is None:
            counted = f"{self.done:,}" + (f" of {self.total:,}" if self.total is not None else "")
            share = f" ({100 * self.done / self.total:.0f}%)" if self.total else ""
            text = f"{self.label}: {counted} {self.unit}{share}"
        with self._lock:
            self._last = time.perf_counter()
            self.stream.write(f"\r\x1b[K{text} · {self.elapsed():.1f} s")
            self.stream.flush()
            self._shown = True

    def clear(self) -> None:
        with self._lock:
            if self.enabled and self._shown:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
                self._shown = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.clear()


@contextlib.contextmanager
def spark_progress(progress: Progress, spark: Any, label: str) -> Iterator[None]:
    """While the block runs, shows the running Spark stages' task counts (from Spark's
    status tracker) on ``progress``."""
    if not progress.enabled:
        yield
        return
    stop = threading.Event()

    def watch() -> None:
        tracker = spark.sparkContext.statusTracker()
        while not stop.wait(0.5):
            try:
                stages = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
            except Exception:  # the context is stopping: nothing more to show
                return
            parts = [f"stage {s.stageId}: {s.numCompletedTasks} of {plural(s.numTasks, 'task')}" for s in stages if s]
            progress.show(f"{label}: {', '.join(parts) or 'waiting for Spark'}")

    watcher = threading.Thread(target=watch, name="merge-core-progress", daemon=True)
    progress.show(f"{label}: starting")
    watcher.start()
    try:
        yield
    finally:
        stop.set()
        watcher.join()
        progress.clear()


# -- Spark ------------------------------------------------------------------------------


def start_spark(master: str, progress: Progress | None = None):
    """A local Spark session whose JVM writes its log to a file (named if Spark fails),
    checked to run merge-core in its Python workers."""
    try:
        import pyspark  # noqa: F401
    except ImportError as e:
        raise UserError("this command needs pyspark: pip install 'merge-core[spark]'") from e
    import merge_core.spark as mcs

    log = mcs.default_log()
    if progress is not None:
        progress.show(f"starting Spark ({master})")
    try:
        spark = mcs.local_session(master, log=log)
        mcs.check_workers(spark)
    except mcs.SparkWorkerError:
        raise
    except Exception as e:
        raise SparkFailure(f"Spark did not start: {one_line(str(e))} (Spark's log: {log})") from e
    finally:
        if progress is not None:
            progress.clear()
    spark.merge_core_log = log
    return spark


class SparkFailure(Exception):
    """Spark failed (not merge-core, not the user): exit status 1, naming Spark's log."""


def spark_error(e: BaseException, spark: Any) -> Exception | None:
    """A one-line failure for an exception Spark raised (a failed job), or None: a
    UserError if a task found a mistake in the inputs, else a SparkFailure."""
    kind = type(e).__module__ or ""
    if not (kind.startswith("py4j") or kind.startswith("pyspark")):
        return None
    text = str(e)
    found = re.search(r"(?:merge_core\.errors\.)?(\w+Error): ([^\n]+)", text)
    if found and found.group(1) == "InvalidInputError":  # a task found a mistake in the inputs
        return UserError(f"{found.group(2)} (found by a Spark task)")
    cause = f"{found.group(1)}: {found.group(2)}" if found else one_line(text)
    return SparkFailure(f"the Spark job failed: {cause} (Spark's log: {getattr(spark, 'merge_core_log', '?')})")


# -- errors -----------------------------------------------------------------------------

# Library argument names, as the CLI spells them.
_FLAGS = [
    (r"\bmemory_limit\b", "--memory"),
    (r"\bpartition_by\b", "--partition-by"),
    (r"\bkeep_snapshots\b", "--keep"),
    (r"\bspill_dir\b", "--spill-dir"),
    (r"\bpass it as row_kind\b", "pass it as --row-kind"),
    (r"\bmerge must be\b", "--merge must be"),
    (r"\bkey names columns\b", "--key names columns"),
    (r"\bsequence names columns\b", "--sequence names columns"),
    (r"\bbuckets must be\b", "--buckets must be"),
    (r"\bmc\.Table\.create\b|\bTable\.create\b", "merge-core table create"),
    (r"\bpass cascade=True\b", "pass --cascade"),
]
_LOCATION = re.compile(r"\brun (\d+), (row|batch) (\d+)")
_IN_RUN = re.compile(r"\bin run (\d+)\b")
_RUN = re.compile(r"\brun (\d+)\b")
#: Arrow's names of types (as Rust prints them) in the SQL names Paimon gives them.
_TYPE_NAMES = {
    "Utf8": "STRING",
    "LargeUtf8": "STRING",
    "Utf8View": "STRING",
    "Binary": "BYTES",
    "LargeBinary": "BYTES",
    "BinaryView": "BYTES",
    "Boolean": "BOOLEAN",
    "Int8": "TINYINT",
    "Int16": "SMALLINT",
    "Int32": "INT",
    "Int64": "BIGINT",
    "Float32": "FLOAT",
    "Float64": "DOUBLE",
    "Date32": "DATE",
}
_TYPE = re.compile(r"\b(" + "|".join(_TYPE_NAMES) + r")\b")
_INPUT_ROW = re.compile(r"\binput row (\d+)\b")


def one_line(text: str, limit: int = 400) -> str:
    """The first non-empty line of ``text``, cut at ``limit`` characters."""
    line = next((s.strip() for s in text.splitlines() if s.strip()), "")
    return line if len(line) <= limit else line[: limit - 3] + "..."


def cli_message(text: str, runs: Sequence[str] | None = None) -> str:
    """A library message in the command line's words: its flags instead of Python's
    argument names, "run 1, row 1" as the file and row counted from 1, and types by their
    SQL names (BIGINT, not Int64)."""
    text = _TYPE.sub(lambda m: _TYPE_NAMES[m.group(1)], text)
    for pattern, flag in _FLAGS:
        text = re.sub(rf"(?<!-){pattern}", flag, text)  # never a flag twice: "----buckets"
    if runs:

        def located(m: re.Match[str]) -> str:
            run, what, number = int(m.group(1)), m.group(2), int(m.group(3))
            where = runs[run] if run < len(runs) else f"input {run + 1}"
            return f"{where}, {what} {number + 1:,}"

        text = _LOCATION.sub(located, text)
        text = _IN_RUN.sub(lambda m: f"in {runs[int(m.group(1))] if int(m.group(1)) < len(runs) else m.group(0)}", text)
        text = _RUN.sub(lambda m: runs[int(m.group(1))] if int(m.group(1)) < len(runs) else m.group(0), text)
        if len(runs) == 1:
            text = _INPUT_ROW.sub(lambda m: f"{runs[0]}, row {int(m.group(1)) + 1:,}", text)
        if "run is not sorted by key" in text:
            text = text.replace("run is not sorted by key", "the file is not sorted by key")
            text += " (merge takes sorted runs: sort a file first with merge-core sort)"
    return text


USER_ERRORS: tuple[type[BaseException], ...] = (
    UserError,
    mc.InvalidInputError,
    mc.TableNotFoundError,
    mc.TableExistsError,
    FileNotFoundError,
    NotADirectoryError,
    IsADirectoryError,
    PermissionError,
    FileExistsError,
)


def report(e: BaseException, runs: Sequence[str] | None = None) -> int:
    """Prints ``e`` as one line on stderr; returns the exit status: 2 for a user's
    mistake, 3 for what merge-core does not do (yet), 1 for a failure of merge-core,
    Spark or the machine."""
    if isinstance(e, mc.UnsupportedFeatureError):
        message, status, prefix = str(e), 3, "unsupported"
    elif isinstance(e, USER_ERRORS) and not isinstance(e, (mc.TableIOError, mc.SpillError)):
        message, status, prefix = str(e), 2, "error"
        if isinstance(e, OSError) and not isinstance(e, mc.MergeCoreError) and e.filename:
            message = f"{e.filename}: {e.strerror}"
    elif isinstance(e, (mc.MergeCoreError, SparkFailure, OSError)):
        message, status, prefix = str(e), 1, "failed"
    else:
        message, status, prefix = f"{type(e).__name__}: {e}", 1, "internal error"
        message += " (a bug in merge-core: run with MERGE_CORE_DEBUG=1 for the traceback)"
    print(f"merge-core: {prefix}: {one_line(cli_message(message, runs), 600)}", file=sys.stderr)
    return status


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
