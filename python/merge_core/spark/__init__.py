"""merge-core on PySpark: upserts, sorts and table reads/writes done in Rust inside Spark tasks.

Tables first: :func:`register` makes merge-core a Spark data source, so that
``spark.read.format("merge_core").load(path)`` and ``df.write.format("merge_core")``
read and write a Paimon table (``_source``); :func:`read`, :func:`write` and
:func:`compact` do the same as functions.

Two upsert pipelines, same result:

- :func:`upsert` (DataFrames in, DataFrame out): Spark shuffles the rows to the task that
  owns their key; there ``mapInArrow`` hands the task's Arrow batches to merge-core
  through the Arrow C Data Interface. No row is touched by Python.
- :func:`upsert_files` (Parquet files in and out, the fastest): Spark only schedules one
  task per key range or bucket; the tasks read the files themselves, each input byte
  once, fold in Rust and write their parts. No shuffle, and no row passes through the JVM.

Running on a cluster: every executor needs ``merge_core`` importable by the Python it
runs. docs/spark.md ("On a cluster") packs a virtual environment with merge-core's wheel
and ships it with ``spark.archives`` (or, for a Spark Connect client, as an artifact of
its session); the cluster tests run that recipe as it is written.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
import uuid
from collections.abc import Iterable, Iterator, Sequence
from functools import reduce
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.fs as pafs

from .. import Deduplicate, DynamicFilter, FirstRow, MergeSpec, SortBuffer, sort
from ..errors import InvalidInputError, MergeCoreError, UnsupportedFeatureError
from ..fs import Location, resolve
from ..inputs import column_names
from ..paimon import Table, summary
from . import _upsert_files

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: The column that tags each row with the index of its version (dropped from the output).
VERSION_COLUMN = "__merge_core_version"


def default_log() -> str:
    """Where a JVM that merge-core starts writes its output: ``spark-<pid>.log`` in
    $MERGE_CORE_LOG_DIR, or in merge-core-logs in the system's temporary directory."""
    folder = os.environ.get("MERGE_CORE_LOG_DIR") or os.path.join(tempfile.gettempdir(), "merge-core-logs")
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, f"spark-{os.getpid()}.log")


def local_session(
    master: str = "local[2]", app_name: str = "merge-core", log: str | os.PathLike[str] | None = None, **settings: str
):
    """A Spark session for local work: bound to loopback only, no UI or console progress,
    Arrow enabled with large batches, executors running this Python (so they import this
    merge-core). ``log``: the file that gets the JVM's own output (its startup warnings and
    log4j lines), when this call starts the JVM (default: :func:`default_log`), so that
    nothing of it reaches stderr."""
    import sys

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    config = {
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.execution.arrow.maxRecordsPerBatch": "65536",
        "spark.sql.shuffle.partitions": str(os.cpu_count() or 2),
        **settings,
    }
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in config.items():
        builder = builder.config(key, value)
    if SparkContext._active_spark_context is None:
        # The JVM starts here and keeps these as its stdout and stderr.
        with _output_to(default_log() if log is None else log):
            session = builder.getOrCreate()
    else:
        session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


class SparkWorkerError(MergeCoreError):
    """Spark's Python workers cannot run merge-core (they cannot import it, or do not
    start): raised on the driver before any job of merge-core's runs."""


_CHECKED_APPLICATIONS: set[str] = set()


def check_workers(spark: SparkSession) -> None:
    """Fails fast, on the driver and in one line, if Spark's Python workers cannot import
    ``merge_core`` (a plain ``SparkSession`` started by a Python whose workers run another
    interpreter). One tiny job, once per application; every merge-core Spark function
    calls it first. A ``mapInArrow`` job, as the functions themselves run, so it works
    for Spark Connect sessions too."""
    application = spark.conf.get("spark.app.id")
    if application in _CHECKED_APPLICATIONS:
        return

    def probe(batches: Iterator[Any]) -> Iterator[Any]:  # defined here: shipped by value, needs no import
        import sys

        import pyarrow

        problem = ""
        try:
            import merge_core  # noqa: F401
        except Exception as e:
            problem = f"{type(e).__name__}: {e} (worker Python: {sys.executable})"
        for _ in batches:
            pass
        yield pyarrow.record_batch({"problem": [problem]})

    hint = (
        "start Spark with merge_core.spark.local_session(), or set PYSPARK_PYTHON (spark.pyspark.python) to a"
        " Python that has merge-core installed"
    )
    try:
        with _quiet_logs(spark):
            answer = spark.range(1, numPartitions=1).mapInArrow(probe, "problem string").collect()[0].problem
    except Exception as e:
        text = str(e)
        found = re.search(r"\b(\w+(?:Error|Exception): [^\n]+)", text.split("\n", 1)[-1])
        cause = found.group(1) if found else next((s for s in text.splitlines() if s.strip()), type(e).__name__)
        raise SparkWorkerError(
            f"Spark's Python workers did not run a probe job ({cause.strip()[:300]}); {hint}"
        ) from None
    if answer:
        raise SparkWorkerError(f"Spark's Python workers cannot import merge_core ({answer}); {hint}")
    _CHECKED_APPLICATIONS.add(application)


def register(spark: SparkSession, pushdown: bool = False) -> None:
    """Registers merge-core's data source with ``spark`` as ``merge_core``; with
    ``pushdown=True``, filters on partition and key columns prune its reads, which Spark
    4.3 gets wrong for a DataFrame queried twice (see ``merge_core.spark._source.register``).
    PySpark is imported only here."""
    from ._source import register as register_source

    register_source(spark, pushdown)


def _is_connect(spark: SparkSession) -> bool:
    """A Spark Connect session: a client of a remote driver, without a SparkContext."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def _parallelism(spark: SparkSession) -> int:
    """How many tasks to run when the caller does not say: the cluster's cores, or, for a
    Connect client (which cannot see them), the session's shuffle partitions."""
    if _is_connect(spark):
        return int(spark.conf.get("spark.sql.shuffle.partitions"))
    return spark.sparkContext.defaultParallelism


def _one_task_each(spark: SparkSession, rows: list[tuple], schema: str) -> DataFrame:
    """A DataFrame of ``rows`` in one partition per row (the driver's planned tasks). A
    Connect client has no SparkContext to parallelize with: its rows are spread round
    robin, which may put two in one task (each task runs every row it gets)."""
    if _is_connect(spark):
        return spark.createDataFrame(rows, schema).repartition(len(rows))
    return spark.sparkContext.parallelize(rows, len(rows)).toDF(schema)


@contextlib.contextmanager
def _output_to(log: str | os.PathLike[str]) -> Iterator[None]:
    """File descriptors 1 and 2 point at ``log`` inside the block (so a process started
    there writes into it), and back at what they were after."""
    import sys

    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        with open(log, "ab") as f:
            os.dup2(f.fileno(), 1)
            os.dup2(f.fileno(), 2)
        yield
    finally:
        for fd, copy in zip((1, 2), saved, strict=True):
            os.dup2(copy, fd)
            os.close(copy)


@contextlib.contextmanager
def _quiet_logs(spark: SparkSession) -> Iterator[None]:
    """Spark logs nothing inside the block (a failing probe would log its task's stack
    trace), then logs at the level it had, when that can be read (not from a Connect
    client: its server's logs are the server's)."""
    if _is_connect(spark):
        yield
        return
    context = spark.sparkContext
    try:
        root = context._jvm.org.apache.logging.log4j.LogManager.getRootLogger()
        level = root.getLevel().toString()
        context.setLogLevel("OFF")
    except Exception:
        yield
        return
    try:
        yield
    finally:
        context.setLogLevel(level)


def upsert(
    versions: Sequence[DataFrame],
    key: str | Iterable[str],
    merge: MergeSpec = "deduplicate",
    num_partitions: int | None = None,
    memory_limit: int | str = "256MiB",
    null_strings: Iterable[str] = (),
    row_kind: str | None = None,
) -> DataFrame:
    """Upsert ``versions`` (oldest first) into one DataFrame with one row per key.

    Columns are matched by name (versions may order them differently). Rows are
    partitioned by key; in each task the rows, tagged with their version index, go
    through a :class:`~merge_core.SortBuffer` (sorting, spilling past ``memory_limit``,
    merging its runs with the loser tree) that folds each key with ``merge``.
    ``null_strings``: columns in which, in versions after the first, the string
    ``'null'`` stands for a null.

    >>> merged = upsert([base, increment], key="uuid", **contest.CONTEST)  # doctest: +SKIP
    """

    keys = column_names(key, "key")
    columns = _check_versions([list(df.columns) for df in versions], keys, null_strings)
    check_workers(versions[0].sparkSession)
    union = tagged_union(versions, columns, null_strings)
    partitions = num_partitions or _parallelism(union.sparkSession)
    shuffled = union.repartition(partitions, *keys)
    output = _output_schema(versions[0].select(*columns).schema, keys, merge)

    def fold_task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        buffer = None
        for batch in batches:
            if buffer is None:
                buffer = _versions_buffer(batch.schema, keys, row_kind, merge, memory_limit)
            buffer.write(batch)
        if buffer is None:
            return
        for batch in buffer.finish():
            yield batch.select(columns)

    return shuffled.mapInArrow(fold_task, output)


def upsert_files(
    spark: SparkSession,
    inputs: Sequence[str],
    output: str,
    key: str | Iterable[str],
    merge: MergeSpec = "deduplicate",
    null_strings: Iterable[str] = (),
    row_kind: str | None = None,
    buckets: int | None = None,
    memory_limit: int | str = "256MiB",
    filesystem: pafs.FileSystem | None = None,
) -> dict[str, int]:
    """Upsert versioned Parquet files (oldest first) into Parquet files in ``output``,
    folding with ``merge`` as :func:`upsert` does, without a Spark shuffle.

    Spark only schedules; each input byte is read once (see ``_upsert_files``). The driver
    reads the footers and gives each of ``buckets`` tasks (default: the session's
    parallelism) a key range when the inputs are sorted by a single key with statistics,
    or a hash bucket of the keys otherwise. A task reads the row groups lying inside its
    range; the other row groups (all of them with hash buckets) are read once by a first
    stage that writes each row into its task's exchange file. Each task folds its rows
    through a :class:`~merge_core.SortBuffer` ordered by (key, version) and writes
    ``part-NNNNN.parquet``. No row passes through the JVM. Parts and exchange files are
    written to a staging folder; the parts are moved into ``output`` (which must be new or
    empty) once every task has succeeded, so a failed job leaves no partial output.
    ``inputs`` and ``output`` are local paths, ``file://`` or ``s3://`` URIs (S3 configured
    by the ``AWS_*`` variables, ``AWS_ENDPOINT_URL`` included), or paths on ``filesystem``;
    the driver and every executor must reach them alike (local mode, a shared file
    system, or an object store). Returns counts: ``rows_in``, ``rows_out``,
    ``buckets``, ``input_bytes`` (the inputs' column chunks), ``bytes_read`` (what the
    tasks read from the inputs) and ``exchanged_bytes`` (the exchange files written).
    """
    import pyarrow.parquet as pq
    from pyspark.sql.types import LongType, StructField, StructType

    keys = column_names(key, "key")
    null_strings = list(null_strings)
    sources = [resolve(path, filesystem) for path in inputs]
    target = resolve(output, filesystem)
    footers = [_parquet_footer(source) for source in sources]  # read once: the plan reuses them
    schemas = [footer.schema.to_arrow_schema() for footer in footers]
    columns = _check_versions([s.names for s in schemas], keys, null_strings)
    for i, schema in enumerate(schemas[1:], 1):
        for name in columns:
            if schema.field(name).type != schemas[0].field(name).type:
                raise InvalidInputError(
                    f"column '{name}' is {schema.field(name).type} in {inputs[i]}, {schemas[0].field(name).type} in"
                    f" {inputs[0]}"
                )
    found = target.store.info(target.path)
    if found is not None and (found.type != pafs.FileType.Directory or target.names()):
        raise InvalidInputError(f"output {target} exists and is not an empty folder")
    buckets = buckets or _parallelism(spark)
    if buckets < 1:
        raise InvalidInputError(f"buckets must be at least 1, got {buckets}")
    check_workers(spark)
    staging = target / f"_staging-{uuid.uuid4().hex}"
    schema = pa.schema([schemas[0].field(c) for c in columns])
    tagged_schema = schema.append(pa.field(VERSION_COLUMN, pa.int32(), False))
    plan = _upsert_files.plan(sources, columns, keys, tagged_schema, null_strings, buckets, footers)
    exchange = staging / "_exchange"

    def exchange_task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            # its rows are counted by the buckets that fold them
            counts = [
                {"rows_in": 0, "rows_out": 0, **_upsert_files.exchange(plan, t, exchange)}
                for t in batch.column(0).to_pylist()
            ]
            yield pa.RecordBatch.from_pylist(counts, counts_schema)

    def upsert_bucket(bucket: int) -> dict[str, int]:
        reader = _upsert_files.Reader(plan)
        buffer, rows_in, rows_out = _versions_buffer(tagged_schema, keys, row_kind, merge, memory_limit), 0, 0
        with buffer:
            for batch in _upsert_files.destination_rows(plan, bucket, exchange, reader):
                buffer.write(batch)
                rows_in += batch.num_rows
            part = staging / f"part-{bucket:05d}.parquet"
            with part.store.open_output(part.path) as sink, pq.ParquetWriter(sink, schema) as writer:
                for batch in buffer.finish():
                    writer.write_batch(batch.select(columns))
                    rows_out += batch.num_rows
        return {"rows_in": rows_in, "rows_out": rows_out, "bytes_read": reader.bytes_read, "exchanged_bytes": 0}

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield pa.RecordBatch.from_pylist([upsert_bucket(b) for b in batch.column(0).to_pylist()], counts_schema)

    names = ["rows_in", "rows_out", "bytes_read", "exchanged_bytes"]
    counts_schema = pa.schema([pa.field(name, pa.int64()) for name in names])
    spark_counts = StructType([StructField(name, LongType()) for name in names])
    try:
        rows = []
        if plan.exchanged:  # the first stage: row groups that no single task owns, read once
            stage = len(plan.exchanged)
            rows += spark.range(stage, numPartitions=stage).mapInArrow(exchange_task, spark_counts).collect()
        rows += spark.range(buckets, numPartitions=buckets).mapInArrow(task, spark_counts).collect()
        for name in staging.names("part-"):
            target.store.move((staging / name).path, (target / name).path)
    finally:
        staging.store.delete_tree(staging.path)
    counts = {name: sum(getattr(r, name) for r in rows) for name in names}
    return {
        "rows_in": counts["rows_in"],
        "rows_out": counts["rows_out"],
        "buckets": buckets,
        "input_bytes": plan.input_bytes,
        "bytes_read": counts["bytes_read"],
        "exchanged_bytes": counts["exchanged_bytes"],
    }


def sort_within_partitions(df: DataFrame, key: str | Iterable[str], memory_limit: int | str = "256MiB") -> DataFrame:
    """Spark's ``sortWithinPartitions``, done by merge-core's spillable sort."""
    keys = column_names(key, "key")
    missing = [k for k in keys if k not in df.columns]
    if missing:
        raise InvalidInputError(f"unknown key column(s) {missing} (columns: {', '.join(df.columns)})")
    check_workers(df.sparkSession)

    def sort_task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        first = next(batches, None)
        if first is None:
            return
        reader = pa.RecordBatchReader.from_batches(first.schema, _chain(first, batches))
        yield from sort(reader, key=keys, memory_limit=memory_limit)

    return df.mapInArrow(sort_task, df.schema)


def _check_versions(columns_of: list[list[str]], keys: list[str], null_strings: Iterable[str]) -> list[str]:
    """The columns of version 0, after checking every version has the same set and the
    named columns exist."""
    if not columns_of:
        raise InvalidInputError("upsert needs at least one version")
    columns = columns_of[0]
    for name in [*keys, *null_strings]:
        if name not in columns:
            raise InvalidInputError(f"unknown column '{name}' (version 0 has columns: {', '.join(columns)})")
    if VERSION_COLUMN in columns:
        raise InvalidInputError(f"column name '{VERSION_COLUMN}' is reserved")
    for i, names in enumerate(columns_of):
        if sorted(names) != sorted(columns):
            raise InvalidInputError(f"version {i} has columns {sorted(names)}, version 0 has {sorted(columns)}")
    return list(columns)


def _versions_buffer(schema: pa.Schema, keys: list[str], row_kind: str | None, merge: MergeSpec, memory_limit):
    """The sort buffer of an upsert task: rows ordered by key, versions by their index."""
    return SortBuffer(
        schema, key=keys, sequence=VERSION_COLUMN, row_kind=row_kind, merge=merge, memory_limit=memory_limit
    )


def _parquet_footer(source: Location) -> Any:
    import pyarrow.parquet as pq

    try:
        with source.store.open_input(source.path) as file:
            return pq.read_metadata(file)
    except FileNotFoundError:
        raise InvalidInputError(f"no such file: {source}") from None
    except (OSError, pa.ArrowInvalid) as e:
        raise InvalidInputError(f"cannot read {source} as Parquet: {e}") from None


def tagged_union(versions: Sequence[DataFrame], columns: list[str], null_strings: Iterable[str]) -> DataFrame:
    """All versions' rows, columns in one order, tagged with their version index (in
    ``VERSION_COLUMN``); in versions after the first, the string 'null' in
    ``null_strings`` columns becomes null. What :func:`upsert` hands to Spark's exchange,
    and what :func:`merge_core.contest.spark_sql_upsert` groups."""
    from pyspark.sql import functions as F

    tagged = []
    for i, df in enumerate(versions):
        df = df.select(*columns)
        if i > 0:
            for name in null_strings:
                df = df.withColumn(name, F.when(F.col(name) == "null", F.lit(None)).otherwise(F.col(name)))
        tagged.append(df.withColumn(VERSION_COLUMN, F.lit(i).cast("int")))
    return reduce(lambda a, b: a.unionByName(b), tagged)


def _chain(first: pa.RecordBatch, rest: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    yield first
    yield from rest


def _output_schema(schema, keys: list[str], merge: MergeSpec):
    """The input's Spark schema; folds that can produce nulls make value columns nullable."""
    from pyspark.sql.types import StructField, StructType

    if merge in ("deduplicate", "first-row", "none") or isinstance(merge, (Deduplicate, FirstRow)):
        return schema
    return StructType([f if f.name in keys else StructField(f.name, f.dataType, True) for f in schema.fields])


#: The column carrying each row's bucket from the bucketing stage to the writing stage.
BUCKET_COLUMN = "__merge_core_bucket"


def write(
    df: DataFrame,
    table: Table | str | os.PathLike[str],
    row_kind: str | None = None,
    memory_limit: int | str = "256MiB",
    num_partitions: int | None = None,
) -> dict[str, int | None]:
    """Writes ``df`` into ``table`` as one commit (see :meth:`merge_core.Table.write`).

    Each row's bucket is Paimon's (computed in Rust), rows are partitioned by (partition
    columns, bucket) so that each bucket is written by one task, every task writes its
    buckets' files (``new_write`` -> ``write`` -> ``prepare_commit``) and sends back
    commit messages, and the driver commits them at once. The table's directory must be
    reachable at the same path by the driver and every executor (a local path in local
    mode, a shared filesystem on a cluster). Files of failed task attempts are never
    committed; ``table.expire`` removes them.
    """
    import pickle

    from pyspark.sql.types import BinaryType, IntegerType, StructField, StructType

    table = _open(table)
    table.new_write(row_kind, "1MiB").close()  # a table merge-core does not write is refused here, not in tasks
    if table.buckets == -1:  # postponed buckets (-2) are bucketed by the driver's plan, as fixed ones
        raise UnsupportedFeatureError(
            f"mcs.write of a table with dynamic buckets ('bucket' = {table.buckets}): its tasks would each place new "
            "keys in buckets, and could place them in the same ones; write it with Table.write"
        )
    check_workers(df.sparkSession)
    path, filesystem, branch = str(table.path), table.filesystem, table.branch
    buckets_schema = StructType([*df.schema.fields, StructField(BUCKET_COLUMN, IntegerType(), False)])

    def bucket_task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        opened = Table.open(path, filesystem, branch)
        for batch in batches:
            yield batch.append_column(BUCKET_COLUMN, opened.bucket_ids(batch, row_kind))

    def write_task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        first = next(batches, None)
        if first is None:
            return
        rows = (b.drop_columns([BUCKET_COLUMN]) for b in _chain(first, batches))
        # the sort, and one thread encoding files beside it (Spark runs a task per core)
        with Table.open(path, filesystem, branch).new_write(row_kind, memory_limit, threads=2) as writer:
            writer.write(rows)
            messages = writer.prepare_commit()
        yield pa.record_batch({"message": pa.array([pickle.dumps(m) for m in messages], pa.binary())})

    partitions = num_partitions or _parallelism(df.sparkSession)
    staged = df.mapInArrow(bucket_task, buckets_schema).repartition(partitions, *table.partition_by, BUCKET_COLUMN)
    sent = staged.mapInArrow(write_task, StructType([StructField("message", BinaryType(), False)])).collect()
    messages = [pickle.loads(row.message) for row in sent]
    return summary(table.commit(messages), messages, compaction=False)


def compact(spark: SparkSession, table: Table | str | os.PathLike[str], full: bool = False) -> dict[str, int | None]:
    """Compacts ``table`` (see :meth:`merge_core.Table.compact`) with one Spark task per
    bucket: the driver plans, each task merges its bucket into a new file, the driver
    commits all of them at once."""
    import pickle

    from pyspark.sql.types import BinaryType, StructField, StructType

    table = _open(table)
    tasks = table.plan_compaction(full)
    if not tasks:
        return summary(max(table.snapshots(), default=None), [], compaction=True)
    check_workers(spark)
    path, filesystem, branch = str(table.path), table.filesystem, table.branch

    def compact_task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        opened = Table.open(path, filesystem, branch)
        for batch in batches:
            tasks = [pickle.loads(t) for t in batch.column("task").to_pylist()]
            done = [pickle.dumps(opened.compact_bucket(t, threads=2)) for t in tasks]
            yield pa.record_batch({"message": pa.array(done, pa.binary())})

    blobs = [(i, pickle.dumps(t)) for i, t in enumerate(tasks)]
    task_df = _one_task_each(spark, blobs, "i int, task binary")
    sent = task_df.mapInArrow(compact_task, StructType([StructField("message", BinaryType(), False)])).collect()
    messages = [pickle.loads(row.message) for row in sent]
    return summary(table.commit(messages), messages, compaction=True)


def read(
    spark: SparkSession,
    table: Table | str | os.PathLike[str],
    columns: Sequence[str] | None = None,
    partitions: dict[str, Any] | None = None,
    dynamic_filter: DynamicFilter | Sequence[DynamicFilter] | None = None,
    snapshot: int | None = None,
    stats: dict[str, int] | None = None,
) -> DataFrame:
    """The table's rows as a DataFrame (see :meth:`merge_core.Table.read`): the driver
    plans the splits left after pruning, one Spark task reads each (pickled) split and
    merges it in Rust. ``table`` may be a path. ``dynamic_filter`` may be built from a
    Spark DataFrame (the filtered dimension); pass a dict as ``stats`` to receive what
    was pruned."""
    import pickle

    from pyspark.sql.pandas.types import from_arrow_schema

    table = _open(table)
    splits = table.plan(columns, partitions, snapshot, dynamic_filter)
    if stats is not None:
        stats.update(splits.stats)
    spark_schema = from_arrow_schema(table.read_schema(columns, splits.stats["snapshot"] or None))
    path, filesystem, branch = str(table.path), table.filesystem, table.branch

    def read_task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        opened = Table.open(path, filesystem, branch)
        for batch in batches:
            for blob in batch.column("split").to_pylist():
                yield from opened.read_split(pickle.loads(blob))

    if not splits:
        return spark.createDataFrame([], spark_schema)
    check_workers(spark)
    tasks = [(i, pickle.dumps(s)) for i, s in enumerate(splits)]
    task_df = _one_task_each(spark, tasks, "task int, split binary")
    return task_df.mapInArrow(read_task, spark_schema)


def _open(table: Table | str | os.PathLike[str]) -> Table:
    return Table.open(table) if isinstance(table, (str, os.PathLike)) else table
