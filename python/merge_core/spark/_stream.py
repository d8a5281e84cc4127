"""Streaming through the ``merge_core`` source: ``spark.readStream`` follows a table's
snapshots, ``df.writeStream`` commits each micro-batch exactly once.

Reading, with snapshot ids as offsets (``Position``)::

    driver: initialOffset()          where ``scan.mode`` starts (Paimon's streaming modes)
    driver: latestOffset(start)      the latest snapshot
    driver: partitions(start, end)   the starting snapshot's splits (a ``*-full`` mode's
                                     first batch), then the change files of (start, end]
                                     planned once (Table.plan_changes): a partition per
                                     snapshot that wrote any, holding its splits
    task:   read(partition)          Table.read_split, or Table.read_changes(its splits):
                                     the task opens the data files and nothing else

A restarted query goes on from the last offset Spark committed in its checkpoint: the
offsets say everything, the reader keeps no state of its own.

Writing: each task writes as the batch writer's tasks do and returns its commit messages;
the driver commits them as one snapshot marked with the query's commit user and the
micro-batch id as Paimon's commit identifier. A batch Spark runs again after a restart
(its snapshot landed, Spark's commit log did not) finds that identifier already committed
(``Table.last_commit_identifier``, Paimon's ``filterCommitted``) and removes its files
instead of committing them twice.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.types import StringType, StructField, StructType

from ..errors import InvalidInputError, UnsupportedFeatureError
from ..paimon import ROW_KIND, Split, Table
from ._types import arrow_form, to_spark

try:  # PySpark 4.1 or later
    from pyspark.sql.datasource import DataSourceStreamArrowWriter
except ImportError:  # pragma: no cover (PySpark 4.0)
    DataSourceStreamArrowWriter = None  # type: ignore[assignment,misc]

#: The column of row kinds a ``read.changelog`` stream starts with (Paimon's audit log's name).
ROWKIND = "rowkind"
READ_STREAM = {
    "scan.mode": "where a stream starts: latest-full (default), latest, from-snapshot, from-snapshot-full",
    "scan.snapshot-id": "the snapshot a from-snapshot(-full) stream starts at",
    "read.changelog": "true: every change with its row kind in a first column rowkind (default false: +I and +U)",
}
WRITE_STREAM = {
    "checkpointLocation": "Spark's; it names the query's commit user unless commit.user does",
    "commit.user": "the commit user of the query's snapshots (kept across restarts)",
}
_MODES = ("latest-full", "full", "latest", "from-snapshot", "from-snapshot-full", "default")
_KEPT = pa.array(["+I", "+U"])  # what a stream without read.changelog gives: the rows that are now


@dataclass(frozen=True)
class Position:
    """A stream's offset: every change up to and including ``snapshot`` was given, or,
    with ``full``, not even the full contents of ``snapshot``. ``snapshot`` -1 stands
    for the end of the first range: ``latest-full`` reads the contents of the
    snapshot the first batch ends at, ``latest`` nothing before it. Only initial offsets
    are ``full`` or -1, so a restart planning its first batch again plans the same."""

    snapshot: int
    full: bool = False

    def offset(self) -> dict[str, Any]:
        return {"snapshot": self.snapshot, "full": self.full}

    @classmethod
    def of(cls, offset: Mapping[str, Any]) -> Position:
        try:
            return cls(int(offset["snapshot"]), bool(offset.get("full", False)))
        except (KeyError, TypeError, ValueError):
            raise InvalidInputError(f"not an offset of the merge_core source: {offset!r}") from None


def starting_position(options: Mapping[str, str]) -> Position:
    """The initial offset ``scan.mode`` and ``scan.snapshot-id`` ask for, with Paimon's
    defaults: ``from-snapshot`` if a snapshot id is given, else ``latest-full``."""
    mode = options.get("scan.mode", "default").strip().lower()
    if mode not in _MODES:
        raise UnsupportedFeatureError(
            f"scan.mode {mode!r} for a stream: the merge_core source starts {', '.join(_MODES[:-1])}"
        )
    snapshot = _snapshot_id(options.get("scan.snapshot-id"))
    if mode == "default":
        mode = "latest-full" if snapshot is None else "from-snapshot"
    if mode.startswith("from-snapshot"):
        if snapshot is None:
            raise InvalidInputError(f"scan.mode {mode} needs scan.snapshot-id")
        return Position(snapshot, full=True) if mode == "from-snapshot-full" else Position(snapshot - 1)
    if snapshot is not None:
        raise InvalidInputError(f"scan.snapshot-id is for scan.mode from-snapshot(-full), not {mode}")
    return Position(-1, full=mode in ("latest-full", "full"))


def _snapshot_id(text: str | None) -> int | None:
    if text is None:
        return None
    if not text.strip().isdigit() or int(text) < 1:
        raise InvalidInputError(f"scan.snapshot-id must be a snapshot id (1 or more), got {text!r}")
    return int(text)


def changelog_wanted(options: Mapping[str, str]) -> bool:
    value = options.get("read.changelog", "false").strip().lower()
    if value not in ("true", "false"):
        raise InvalidInputError(f"option read.changelog is true or false, not {value!r}")
    return value == "true"


def stream_schema(table_schema: StructType, changelog: bool) -> StructType:
    """A stream's columns: the table's, after ``rowkind`` with ``read.changelog``."""
    if not changelog:
        return table_schema
    return StructType([StructField(ROWKIND, StringType(), False), *table_schema.fields])


@dataclass(frozen=True)
class _Full:
    """A task of a ``*-full`` stream's first batch: one split of the starting snapshot."""

    split: Any


@dataclass(frozen=True)
class _Changes:
    """A task reading the changes one snapshot committed: the splits the driver planned
    for its change files (a path and a few numbers each), so the task reads no snapshot
    or manifest."""

    splits: tuple[Split, ...]


class StreamReader(DataSourceStreamReader):
    """A table's changes as a stream (see the module's docstring). Without
    ``read.changelog`` a row that retracts (``-U``, ``-D``) is left out: Spark's rows
    carry no row kind, and a retraction given as a plain row would read as its opposite."""

    def __init__(self, where: Any, options: Mapping[str, str], schema: StructType):
        self.where = where
        self.start = starting_position(options)
        self.changelog = changelog_wanted(options)
        self.columns = [name for name in schema.fieldNames() if not (self.changelog and name == ROWKIND)]
        self.arrow = arrow_form(schema)
        if self.start.full and self.start.snapshot > 0:
            where.open().snapshot(self.start.snapshot)  # a missing starting snapshot is refused now

    def initialOffset(self) -> dict[str, Any]:  # noqa: N802 (Spark's name)
        return self.start.offset()

    def latestOffset(self, start: dict[str, Any] | None = None, limit: Any = None) -> dict[str, Any]:  # noqa: N802
        """The latest snapshot (0 while there is none); never behind ``start``."""
        latest = max(self.where.open().snapshots(), default=0)
        if start is not None:
            at = Position.of(start)
            if at.full and at.snapshot == -1 and latest == 0:
                return start  # latest-full on a table with no snapshot yet: wait for its first
            if not at.full:
                latest = max(latest, at.snapshot)
        return Position(latest).offset()

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        begin, finish = Position.of(start), Position.of(end)
        if begin == finish or begin.snapshot == -1 and not begin.full:
            return []  # latest: the first batch only sets where the changes start
        table = self.where.open()
        parts: list[InputPartition] = []
        after = begin.snapshot
        if begin.full:
            after = finish.snapshot if begin.snapshot == -1 else begin.snapshot
            if after > 0:
                parts += [InputPartition(_Full(split)) for split in table.plan(self.columns, snapshot=after)]
        if finish.snapshot > after:
            by_snapshot: dict[int, list[Split]] = {}
            for split in table.plan_changes(after, finish.snapshot, self.columns):
                by_snapshot.setdefault(split.snapshot, []).append(split)
            parts += [InputPartition(_Changes(tuple(splits))) for splits in by_snapshot.values()]
        return parts

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        task = partition.value
        table = self.where.open()
        if isinstance(task, _Full):
            for batch in table.read_split(task.split):
                if self.changelog:
                    kinds = pa.array(["+I"] * batch.num_rows, pa.string())
                    batch = pa.RecordBatch.from_arrays([kinds, *batch.columns], [ROWKIND, *batch.schema.names])
                yield to_spark(batch, self.arrow)
            return
        for batch in table.read_changes(task.splits):
            if self.changelog:
                batch = batch.rename_columns([ROWKIND, *batch.schema.names[1:]])
            else:
                batch = batch.filter(pc.is_in(batch.column(ROW_KIND), _KEPT)).drop_columns([ROW_KIND])
            if batch.num_rows:
                yield to_spark(batch, self.arrow)


def commit_user(options: Mapping[str, str]) -> str:
    """The query's commit user: ``commit.user``, else one derived from the query's
    checkpoint (the same on every restart of the query), else a new one (then a restart
    cannot recognise what the query committed before)."""
    if options.get("commit.user"):
        return options["commit.user"]
    checkpoint = options.get("checkpointLocation")
    if checkpoint:
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"merge_core:{os.path.abspath(checkpoint)}"))
    return str(uuid.uuid4())


if DataSourceStreamArrowWriter is not None:

    class StreamWriter(DataSourceStreamArrowWriter):
        """Each task of a micro-batch writes as a batch write's tasks do (``write``, the
        batch writer's); the driver commits the batch once, under its id."""

        def __init__(self, writer: Any, user: str):
            self.writer, self.user = writer, user  # the batch writer: its tasks' write and its table

        def write(self, iterator: Iterator[pa.RecordBatch]) -> Any:
            return self.writer.write(iterator)

        def commit(self, messages: Sequence[Any], batchId: int) -> None:  # noqa: N803 (Spark's name)
            table: Table = self.writer.where.open()
            flat = [m for task in messages if task is not None for m in task.messages]
            self.writer.check_bucket_assignment(table, messages)
            done = table.last_commit_identifier(self.user)
            if done is not None and done >= batchId:
                table.abort(flat)  # a batch run again after it landed: its first run's files are the table's
                return
            table.commit(flat, commit_user=self.user, commit_identifier=batchId)

        def abort(self, messages: Sequence[Any], batchId: int) -> None:  # noqa: N803 (Spark's name)
            self.writer.abort(messages)


def stream_writer(writer: Any, options: Mapping[str, str], overwrite: bool) -> Any:
    """The stream writer over ``writer`` (the batch writer the same options make)."""
    if DataSourceStreamArrowWriter is None:
        raise UnsupportedFeatureError("writeStream into the merge_core source needs PySpark 4.1 or later")
    if overwrite:
        raise UnsupportedFeatureError("writeStream outputMode complete (an overwrite per micro-batch); use append")
    return StreamWriter(writer, commit_user(options))
