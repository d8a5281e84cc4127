"""merge-core as a Spark data source: ``spark.read.format("merge_core")`` and
``df.write.format("merge_core")`` over a Paimon table (PySpark 4's Python Data Source API).

It is built on ``mc.Table``'s public seams, as Paimon's own Spark connector is built on
its ReadBuilder and BatchWriteBuilder::

    read    driver: schema()      the table's schema, as Spark's types (``_types``)
            driver: pushFilters   partition and key filters kept for planning (``_pushdown``)
            driver: partitions()  Table.plan -> one Spark input partition per Split
            task:   read(split)   Table.read_split -> Arrow batches, no row in Python

    write   task:   write(batches)  Table.new_write -> write -> prepare_commit -> messages
            driver: commit(all)     Table.commit: one snapshot for the whole job
                                    (an overwrite: one OVERWRITE snapshot, ``_Overwrite``)
            driver: abort(all)      Table.abort: every file of the job's tasks removed

    streams readStream and writeStream over the same steps, snapshot ids as offsets and
            each micro-batch committed once (``_stream``)

A task opens the table from its path and filesystem (picklable), so the driver and every
executor must reach the table at the same path (a local path in local mode, a shared
filesystem or an object store on a cluster).
"""

from __future__ import annotations

import datetime
import os
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from ..errors import InvalidInputError, UnsupportedFeatureError
from ..paimon import Catalog, CommitMessage, Table
from ._pushdown import PartitionFilter, key_filter, partition_filter
from ._stream import READ_STREAM, WRITE_STREAM, StreamReader, changelog_wanted, stream_schema, stream_writer
from ._types import arrow_form, spark_schema, spark_type, to_spark

#: The source's short name: ``format("merge_core")``, ``USING merge_core``.
NAME = "merge_core"
#: The Spark setting without which Spark refuses a Python source that takes filters.
PUSHDOWN_SETTING = "spark.sql.python.filterPushdown.enabled"

_WHERE = {
    "path": "the table's directory, or DB.TABLE with warehouse",
    "warehouse": "a catalog's warehouse",
    "branch": "a branch of the table (default: main)",
}
_READ = {"snapshot": "a snapshot id", "tag": "a tag's name", "as_of": "an ISO 8601 date and time"}
_WRITE = {
    "row_kind": "a column of row kinds",
    "memory_limit": "each task's sort memory, e.g. 256MiB",
    "partitionOverwriteMode": "mode overwrite replaces: static (default; the table, or the partition option) or"
    " dynamic (the partitions written)",
    "partition": "the partitions a mode overwrite replaces, e.g. day=2024-06-01,hour=1",
}
_WRITE_THREADS = 2  # each task sorts while another thread encodes its files (Spark runs a task per core)


def register(spark: Any, pushdown: bool = False) -> None:
    """Registers the source with ``spark`` under the name ``merge_core``.

    With ``pushdown=True`` the session's ``spark.sql.python.filterPushdown.enabled`` is
    turned on and filters on partition and key columns prune the read (docs/spark.md).
    It is off by default because Spark 4.3 keeps the splits a query with pushed filters
    planned on the DataFrame's source and reads them again for the next query of that
    DataFrame or view (of the rows that filter kept, as of that snapshot): turn it on
    only where each filtered query loads the table afresh. Without it the source takes
    no filters and Spark filters every row itself. Registering is per session, not on
    import: importing this module has no session to register with, and must not start one.

    >>> mcs.register(spark)  # doctest: +SKIP
    >>> spark.read.format("merge_core").load("/lake/db.db/orders").where("day = '2024-06-01'")  # doctest: +SKIP
    """
    if pushdown:
        spark.conf.set(PUSHDOWN_SETTING, "true")  # Spark refuses a source that takes filters without it
    spark.dataSource.register(Source if pushdown else SourceWithoutPushdown)


@dataclass(frozen=True)
class _Where:
    """Where a table is, as a task opens it: its path, pyarrow filesystem (both pickle)
    and branch."""

    path: str
    filesystem: pafs.FileSystem
    branch: str

    def open(self) -> Table:
        return Table.open(self.path, self.filesystem, self.branch)


class Source(DataSource):
    """The ``merge_core`` source. Options: ``path`` (``load(path)``, ``save(path)``): the
    table's directory, or ``DB.TABLE`` with ``warehouse``; ``branch``; reads: one of ``snapshot``,
    ``tag`` or ``as_of``; writes: ``row_kind``, ``memory_limit``, and for ``mode("overwrite")``
    ``partitionOverwriteMode`` and ``partition`` (``_overwrite``); streams (``_stream``):
    ``scan.mode``, ``scan.snapshot-id`` and ``read.changelog`` to read, ``commit.user`` to
    write."""

    pushes_filters = True

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        _check_options(self.options, {**_WHERE, **_READ, **_WRITE, **READ_STREAM, **WRITE_STREAM}, "")
        table = spark_schema(_where(self.options).open().read_schema(None, **_travel(self.options)))
        return stream_schema(table, changelog_wanted(self.options))

    def reader(self, schema: StructType) -> DataSourceReader:
        _check_options(self.options, {**_WHERE, **_READ}, "reading ")
        kind = FilteringReader if self.pushes_filters else Reader
        return kind(_where(self.options), _travel(self.options), schema)

    def streamReader(self, schema: StructType) -> StreamReader:  # noqa: N802 (Spark's name)
        _check_options(self.options, {**_WHERE, **READ_STREAM}, "streaming from ")
        return StreamReader(_where(self.options), self.options, schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> Any:  # noqa: N802 (Spark's name)
        _check_options(self.options, {**_WHERE, **_WRITE, **WRITE_STREAM}, "streaming into ")
        return stream_writer(self._writer(schema, False), self.options, overwrite)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceArrowWriter:
        _check_options(self.options, {**_WHERE, **_WRITE}, "writing ")
        return self._writer(schema, overwrite)

    def _writer(self, schema: StructType, overwrite: bool) -> Writer:
        where = _where(self.options)
        table = where.open()
        replace = _overwrite(self.options, table) if overwrite else None
        if not overwrite and "partition" in self.options:
            raise InvalidInputError("option partition names what mode 'overwrite' replaces; this write appends")
        row_kind = self.options.get("row_kind")
        memory_limit = self.options.get("memory_limit", "256MiB")
        # A table merge-core cannot write is refused here, before any task starts.
        table.new_write(row_kind, memory_limit, overwrite=replace is not None).close()
        _check_columns(schema, table, row_kind)
        return Writer(where, row_kind, memory_limit, replace)


class SourceWithoutPushdown(Source):
    """The source ``register`` registers by default: the same reads, every filter left
    to Spark (whatever ``spark.sql.python.filterPushdown.enabled`` says)."""

    pushes_filters = False


class Reader(DataSourceReader):
    """Plans on the driver (one input partition per split), reads a split per task."""

    def __init__(self, where: _Where, travel: dict[str, Any], schema: StructType):
        self.where, self.travel = where, travel
        self.columns = schema.fieldNames()
        self.schema, self.arrow = schema, arrow_form(schema)
        self.pushed = PartitionFilter()
        self.keys: pc.Expression | None = None
        self.stats: dict[str, Any] = {}  # the last plan's (what it skipped), on the process that planned
        _check_schema(schema, where.open(), travel)

    def partitions(self) -> list[InputPartition]:
        table = self.where.open()
        plan = table.plan(self.columns, self.pushed.values or None, filter=self.keys, **self.travel)
        self.stats = plan.stats
        read = spark_schema(table.read_schema(self.columns, snapshot=plan.stats["snapshot"] or None))
        if [f.dataType for f in read] != [f.dataType for f in self.schema]:
            raise InvalidInputError(
                f"the table at {self.where.path} changed its schema to {read.simpleString()} since the"
                " DataFrame was loaded; load it again"
            )
        return [InputPartition(split) for split in plan if self.pushed.admits(split.partition)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        split = partition.value
        if split is None:  # Spark's single partition of an empty plan
            return
        for batch in self.where.open().read_split(split):
            yield to_spark(batch, self.arrow)


class FilteringReader(Reader):
    """A reader that prunes partitions, and files by key range, by the filters Spark
    pushes (see ``_pushdown``)."""

    def pushFilters(self, filters: list[Any]) -> Any:  # noqa: N802 (Spark's name)
        table = self.where.open()
        self.pushed = partition_filter(filters, table.partition_by, table.schema)
        self.keys = key_filter(filters, table.key, table.schema)
        return filters  # all of them: Spark applies each after the scan


@dataclass(frozen=True)
class _Overwrite:
    """What a ``mode("overwrite")`` replaces, as ``Table.commit`` takes it: ``spec``
    (True: every partition, else ``{column: value}``) and ``dynamic`` (only the partitions
    the job wrote, within the spec)."""

    spec: bool | dict[str, str]
    dynamic: bool


@dataclass
class Messages(WriterCommitMessage):
    """What one write task prepared: its commit messages (one per partition and bucket)."""

    messages: list[CommitMessage]


class Writer(DataSourceArrowWriter):
    """Each task writes what Spark gives it as level-0 files per (partition, bucket) it
    meets; the driver commits every task's messages as one snapshot (an overwrite's as
    one OVERWRITE snapshot), or removes them all."""

    def __init__(self, where: _Where, row_kind: str | None, memory_limit: int | str, replace: _Overwrite | None):
        self.where, self.row_kind, self.memory_limit = where, row_kind, memory_limit
        self.replace = replace

    def write(self, iterator: Iterator[pa.RecordBatch]) -> Messages:
        table = self.where.open()
        overwrite = self.replace is not None
        with table.new_write(self.row_kind, self.memory_limit, threads=_WRITE_THREADS, overwrite=overwrite) as write:
            for batch in iterator:
                write.write(_table_timestamps(batch, table.schema))
            return Messages(write.prepare_commit())

    def commit(self, messages: Sequence[Messages | None]) -> None:
        table = self.where.open()
        self.check_bucket_assignment(table, messages)
        if self.replace is None:
            table.commit(_flat(messages))
        else:
            table.commit(_flat(messages), self.replace.spec, self.replace.dynamic)

    def abort(self, messages: Sequence[Messages | None]) -> None:
        self.where.open().abort(_flat(messages))

    @staticmethod
    def check_bucket_assignment(table: Table, messages: Sequence[Messages | None]) -> None:
        """Refuses (and removes the files of) a job in which two tasks assigned new keys
        to the buckets of one partition of a dynamic-bucket table: each assigned them
        from the partition's hash index as it was, on its own, so one key could land in
        two buckets and the partition's index files would each miss the other's keys. A
        single task, or tasks that only update keys the index holds, commit as
        ``Table.write``'s do."""
        if not (table.key and table.buckets == -1):
            return
        assigners: Counter[bytes] = Counter()
        for task in messages:
            if task is not None:
                assigners.update({m.partition for m in task.messages if m.hash_index is not None})
        if any(n > 1 for n in assigners.values()):
            table.abort(_flat(messages))
            raise UnsupportedFeatureError(
                f"writing a table with dynamic buckets ('bucket' = -1) through the merge_core source ({table.path}):"
                f" {max(assigners.values())} tasks assigned new keys to one partition's buckets, each on its own;"
                " write it from one task (df.coalesce(1)) or with Table.write"
            )


def _flat(messages: Sequence[Messages | None]) -> list[CommitMessage]:
    """The messages of the tasks that succeeded (a failed task's entry is None)."""
    return [m for task in messages if task is not None for m in task.messages]


def _check_options(options: Mapping[str, str], known: dict[str, str], doing: str) -> None:
    unknown = sorted({name.lower() for name in options} - {name.lower() for name in known})  # Spark's are any case
    if unknown:
        listed = ", ".join(f"{name} ({what})" for name, what in known.items())
        raise InvalidInputError(f"unknown option(s) {unknown} for {doing}the merge_core source; it takes: {listed}")


def _where(options: Mapping[str, str]) -> _Where:
    """The table the options name: ``path`` alone, or ``DB.TABLE`` (``DB.TABLE$branch_B``)
    of ``warehouse``; ``branch`` picks a branch of either."""
    path = options.get("path")
    if not path:
        raise InvalidInputError(
            "the merge_core source needs a table: load(path) / save(path), or option('warehouse', W) with"
            " load('db.table')"
        )
    warehouse = options.get("warehouse")
    table = Catalog(warehouse).get_table(path) if warehouse else Table.open(path)
    if "branch" in options:
        table = Table.open(table.path, table.filesystem, options["branch"])
    return _Where(os.fspath(table.path), table.filesystem, table.branch)


def _overwrite(options: Mapping[str, str], table: Table) -> _Overwrite:
    """What ``mode("overwrite")`` replaces. Static by default, as Paimon's Spark connector
    overwrites for ``save`` whatever the table's ``dynamic-partition-overwrite`` says:
    the whole table, or the partitions ``partition`` names (``day=2024-06-01,hour=1``,
    Paimon's action syntax), which every row written must be in. With
    ``partitionOverwriteMode`` ``dynamic`` (Spark's write option for its file sources; a
    Python source is not shown the session's setting) only the partitions written."""
    mode = options.get("partitionOverwriteMode", "static").strip().lower()
    if mode not in ("static", "dynamic"):
        raise InvalidInputError(f"option partitionOverwriteMode is static or dynamic, not {mode!r}")
    spec: bool | dict[str, str] = True
    if "partition" in options:
        spec = {}
        for part in options["partition"].split(","):
            column, equals, value = part.partition("=")
            if not equals or not column.strip():
                raise InvalidInputError(
                    f"option partition takes column=value pairs separated by commas (day=2024-06-01,hour=1),"
                    f" got {options['partition']!r}"
                )
            spec[column.strip()] = value.strip()
        strangers = sorted(set(spec) - set(table.partition_by))
        if strangers:
            raise InvalidInputError(
                f"option partition names {strangers}, not partition columns of the table ({table.partition_by})"
            )
    return _Overwrite(spec, mode == "dynamic")


def _travel(options: Mapping[str, str]) -> dict[str, Any]:
    """The snapshot a read takes, as ``Table.plan``'s ``snapshot``/``tag``/``as_of``."""
    out: dict[str, Any] = {}
    if "snapshot" in options:
        text = options["snapshot"].strip()
        if not text.isdigit() or int(text) < 1:
            raise InvalidInputError(f"option snapshot must be a snapshot id (1 or more), got {options['snapshot']!r}")
        out["snapshot"] = int(text)
    if "tag" in options:
        out["tag"] = options["tag"]
    if "as_of" in options:
        try:
            out["as_of"] = datetime.datetime.fromisoformat(options["as_of"].strip())
        except ValueError:
            raise InvalidInputError(
                f"option as_of must be an ISO 8601 date and time (2024-06-01 12:00:00, local time without a zone),"
                f" got {options['as_of']!r}"
            ) from None
    return out


def _check_schema(schema: StructType, table: Table, travel: dict[str, Any]) -> None:
    """A schema given with ``spark.read.schema(...)`` selects columns of the table; each
    must be there, with the type the source would give it."""
    available = {f.name: f for f in table.read_schema(None, **travel)}
    for f in schema:
        if f.name not in available:
            raise InvalidInputError(f"no column {f.name!r} in the table (it has {list(available)})")
        have = spark_type(available[f.name].type)
        if f.dataType != have:
            raise InvalidInputError(
                f"column {f.name!r} is {have.simpleString()} in the table, not {f.dataType.simpleString()}"
            )


def _check_columns(schema: StructType, table: Table, row_kind: str | None) -> None:
    """The DataFrame written must have the table's columns (and the row kind column)."""
    given, wanted = set(schema.fieldNames()), set(table.schema.names)
    missing, extra = sorted(wanted - given), sorted(given - wanted - {row_kind})
    if missing or extra:
        raise InvalidInputError(
            f"the DataFrame does not match the table's columns {table.schema.names}: missing {missing}, extra {extra}"
        )


def _table_timestamps(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """Spark's timestamps (microseconds, in the session's zone) in the table's unit and
    zone, refused if a value would lose precision; other columns go as they are (the
    write takes only lossless widenings)."""
    for i, f in enumerate(batch.schema):
        if not pa.types.is_timestamp(f.type) or f.name not in schema.names:
            continue
        want = schema.field(f.name).type
        if want == f.type or not pa.types.is_timestamp(want) or (want.tz is None) != (f.type.tz is None):
            continue
        try:
            column = batch.column(i).cast(want)
        except pa.ArrowInvalid:
            raise InvalidInputError(f"column {f.name!r} holds timestamps finer than the table's {want}") from None
        batch = batch.set_column(i, pa.field(f.name, want, f.nullable), column)
    return batch
