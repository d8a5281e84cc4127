"""Append tables: Paimon tables without a primary key, whose rows are never merged.

Paimon's layout (``AppendOnlyFileStoreTable``, ``AppendOnlyWriter``,
``AppendOnlySplitGenerator``), which merge-core follows:

- **Buckets.** ``bucket = -1`` makes the table *bucket-unaware*
  (``BucketMode.BUCKET_UNAWARE``): every row goes to bucket 0 of its partition, each
  write numbers its rows from sequence 0 (Paimon's unaware writers ignore the files
  before them), and the manifests say ``totalBuckets = -1``. ``bucket = N`` needs a
  ``bucket-key``: a row's bucket is Paimon's hash of those columns, as for a key, and a
  bucket's numbering continues after its files' greatest sequence number.
- **Files.** A data file holds the table's columns only (no ``_KEY_``, sequence or row
  kind columns), at level 0; its manifest record has empty key bounds and key
  statistics, the value statistics of every column, and the sequence numbers of its
  first and last row.
- **Rows.** Only additions: ``+I`` and ``+U`` rows are written as they are; a ``-U`` or
  ``-D`` row is refused by name, as Paimon's append writer refuses it, unless
  ``ignore-delete`` (or, for ``-U``, ``ignore-update-before``) drops it first.
- **Reads.** Nothing merges: a bucket's files are read in the order of their first
  sequence number (files that tie keep the manifest's order, as Java's stable sort
  does), each file's rows in file order. Splits pack consecutive files up to
  ``source.split.target-size``; the files are decoded in parallel and handed out in
  that order.
- **Compaction** (Paimon's ``AppendCompactCoordinator`` and
  ``BucketedAppendCompactManager``): a bucket's small files (under
  ``target-file-size`` * ``compaction.small-file-ratio``) are rewritten, in order, into one file once there are
  ``compaction.min.file-num`` of them (5); a full compaction rewrites every bucket of
  more than one file. The new file's rows are numbered from the first old file's
  sequence number.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import CorruptTableError, InvalidInputError, TableIOError, UnsupportedFeatureError, as_invalid_input
from ..fs import Location
from ..inputs import as_stream_source, batches_of, check_threads, parse_size
from . import _binary, _key_order
from ._batches import BatchStream
from ._commit import CommitMessage
from ._meta import DataFile
from ._options import bool_option, double_option, int_option, memory_bytes
from ._plan import VALUE_KIND, FileRead, Planner, Section, Split, pack
from ._schema import TableSchema
from ._write import (
    ENCODE_SHARE,
    KIND_NAMES,
    DataFileWriter,
    Encoders,
    _next_sequences,
    _Partitions,
    bucket_ids,
    conform,
    remove_data_file,
)

UNAWARE = -1
APPEND_SOURCE, COMPACT_SOURCE = 0, 1  # a file's _FILE_SOURCE
TARGET_FILE_SIZE = "256 mb"  # Paimon's target-file-size of an append table
MIN_FILES = 5  # compaction.min.file-num
SMALL_FILE_RATIO = 0.7  # compaction.small-file-ratio


def is_append(schema: TableSchema) -> bool:
    """Whether the table has no primary key (Paimon's append table)."""
    return not schema.primary_keys


def buckets_of(schema: TableSchema) -> int:
    """The table's ``bucket``: a number of buckets, or -1 (bucket-unaware)."""
    return int_option(schema.options, "bucket", UNAWARE)


class AppendFileWriter(DataFileWriter):
    """One data file of an append table: the table's columns only, rows numbered in order
    from ``first_sequence``, no key bounds. ``source`` is the file's ``_FILE_SOURCE``
    (0: written, 1: compacted)."""

    def __init__(self, *args: Any, source: int = APPEND_SOURCE, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.file_schema = self.schema.arrow
        self.keys, self.key_types, self.key_stats = [], [], []
        self.source = source

    def write(self, batch: pa.RecordBatch) -> None:
        n = batch.num_rows
        if n == 0:
            return
        out = pa.RecordBatch.from_arrays([batch.column(f.name) for f in self.schema.fields], schema=self.file_schema)
        self.sequences += [self.next_sequence, self.next_sequence + n - 1]
        self.next_sequence += n
        self.rows += n
        self.value_stats.add(out)
        self._gather(out)

    def _finish(self, encoded: Future[Any] | None) -> dict[str, Any]:
        record = super()._finish(encoded)
        record["_FILE_SOURCE"] = self.source
        return record


class AppendWrite:
    """Rows in, commit messages out, for an append table: each batch's rows go to their
    (partition, bucket) file in the order they came, one file per (partition, bucket)
    and write. ``row_kind`` names a column of row kinds (not stored); without it, the
    table's ``rowkind.field`` column gives them. The same use as ``TableWrite``."""

    def __init__(
        self,
        root: Location,
        schema: TableSchema,
        row_kind: str | None = None,
        memory_limit: int | str = "256MiB",
        threads: int | None = None,
    ):
        self.root, self.schema = root, schema
        self.row_kind = row_kind or schema.options.get("rowkind.field", "").strip() or None
        self.buckets = buckets_of(schema)
        self.ignore_delete = bool_option(schema.options, "ignore-delete")
        self.ignore_update_before = bool_option(schema.options, "ignore-update-before")
        self.table_schema = schema.arrow
        self.partitions = _Partitions(self.table_schema, list(schema.partition_keys))
        memory = parse_size(memory_limit, "memory_limit") or 256 << 20
        self.encoders = Encoders(check_threads(threads), max(memory // ENCODE_SHARE, 1))
        self.files: dict[tuple[int, int], AppendFileWriter] = {}
        self.overwrite = False
        self._next: dict[tuple[bytes, int], int] | None = None
        self._done = False

    def ignore_previous_files(self) -> AppendWrite:
        """Makes this the write of an overwrite: each bucket is numbered from 0."""
        if self._done:
            raise InvalidInputError("this write was already prepared for commit; start a new one")
        self.overwrite = True
        return self

    def write(self, data: Any) -> None:
        """Adds ``data`` (any Arrow-tabular object with the table's columns, in any order)."""
        if self._done:
            raise InvalidInputError("this write was already prepared for commit; start a new one")
        source = as_stream_source(data)
        if source is None:
            return
        try:
            for batch in batches_of(source)[1]:
                self._add(batch)
                del batch
        except ValueError as e:
            self._abort()
            raise as_invalid_input(e) from e
        except BaseException:
            self._abort()
            raise

    def _add(self, batch: pa.RecordBatch) -> None:
        batch = self._additions(conform(batch, self.table_schema, self.row_kind))
        if batch.num_rows == 0:
            return
        numbers = self.partitions.numbers(batch)
        if self.buckets == UNAWARE:
            buckets = np.zeros(batch.num_rows, np.int64)
        else:
            buckets = bucket_ids(self.schema, batch).to_numpy(zero_copy_only=False).astype(np.int64)
        width = max(self.buckets, 1)
        groups = numbers * width + buckets
        order = np.argsort(groups, kind="stable")  # each group's rows in the order they came
        ordered = groups[order]
        starts = np.concatenate(([0], np.flatnonzero(ordered[1:] != ordered[:-1]) + 1))
        ends = np.append(starts[1:], len(ordered))
        rows = batch.take(pa.array(order)) if len(starts) > 1 else batch
        for start, end in zip(starts, ends, strict=True):
            number, bucket = divmod(int(ordered[start]), width)
            self._file(number, bucket).write(rows.slice(int(start), int(end - start)))

    def _additions(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """The rows to store: +I and +U; -U and -D dropped where the options say so, else
        refused (Paimon's append writer takes additions only)."""
        if VALUE_KIND not in batch.schema.names:
            return batch
        kinds = batch.column(VALUE_KIND)
        dropped = [3, 1] if self.ignore_delete else [1] if self.ignore_update_before else []
        if dropped:
            batch = batch.filter(pc.invert(pc.is_in(kinds, pa.array(dropped, pa.int8()))))
            kinds = batch.column(VALUE_KIND)
        retracts = sorted(set(pc.unique(kinds).to_pylist()) & {1, 3})
        if retracts:
            names = " and ".join(KIND_NAMES[k] for k in retracts)
            raise InvalidInputError(
                f"an append table (no primary key) takes +I and +U rows only, as Paimon's append writer does; "
                f"this write has {names} rows (table option 'ignore-delete' = 'true' drops -U and -D rows, "
                "'ignore-update-before' = 'true' drops -U rows)"
            )
        return batch.drop_columns([VALUE_KIND])

    def _file(self, number: int, bucket: int) -> AppendFileWriter:
        found = self.files.get((number, bucket))
        if found is None:
            partition = self.partition_row(number)
            first = 0 if self.buckets == UNAWARE else self._next_sequence(partition, bucket)
            found = AppendFileWriter(self.root, self.schema, partition, bucket, 0, first, self.encoders)
            self.files[(number, bucket)] = found
        return found

    def _next_sequence(self, partition: bytes, bucket: int) -> int:
        """A fixed bucket's next sequence number: one past its files' greatest (0 in an
        overwrite, whose files replace them)."""
        if self.overwrite:
            return 0
        if self._next is None:
            self._next = _next_sequences(self.root)
        return self._next.get((partition, bucket), 0)

    def partition_row(self, number: int) -> bytes:
        return _binary.encode(self.partitions.values(number), self.partitions.types)

    def prepare_commit(self) -> list[CommitMessage]:
        """Finishes the data files; one message per (partition, bucket) written. If a file
        fails, every file of the write is removed."""
        if self._done:
            raise InvalidInputError("this write was already prepared for commit; start a new one")
        self._done = True
        writers = list(self.files.values())
        pending = []
        try:
            for w in writers:
                pending.append((w, w.close_later()))
            written = [(w, future.result()) for w, future in pending]
        except BaseException:
            for w, future in pending:
                if future.exception() is None:
                    remove_data_file(self.root, self.schema, w.partition, w.bucket, future.result())
            for w in writers[len(pending) :]:
                w.abort()
            raise
        finally:
            self.encoders.close()
            self.files = {}
        total = self.buckets
        messages = [CommitMessage(w.partition, w.bucket, total, new_files=(f,)) for w, f in written]
        return [dataclasses.replace(m, overwrite=True) for m in messages] if self.overwrite else messages

    def _abort(self) -> None:
        for w in self.files.values():
            w.abort()
        self.files = {}
        self._done = True
        self.encoders.close()

    def close(self) -> None:
        if not self._done:
            self._abort()

    def __enter__(self) -> AppendWrite:
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()


# -- reading ------------------------------------------------------------------------------


class AppendPlanner(Planner):
    """The splits of an append table: each bucket's files in the order of their first
    sequence number, packed into splits of consecutive files (each file a section of its
    own: nothing merges)."""

    def splits(self, files: Sequence[DataFile], chosen: Any) -> list[Split]:
        by_bucket: dict[tuple[bytes, int], list[DataFile]] = {}
        for f in files:
            by_bucket.setdefault((f.partition, f.bucket), []).append(f)
        buckets = [(_binary.decode(p, self.partition_types), b, p, group) for (p, b), group in by_bucket.items()]
        buckets.sort(key=lambda item: (_key_order.sort_key(item[0]), item[1]))
        out = []
        for values, bucket, partition, group in buckets:
            if chosen is not None and not chosen(values):
                continue
            group = sorted(group, key=lambda f: f.min_sequence)  # stable: ties keep the manifest's order
            for chunk in pack([f.size for f in group], self.target, self.open_cost):
                sections = tuple(Section(((self.file_read(group[i], partition, bucket),),)) for i in chunk)
                out.append(Split(self.snapshot.id, self.schema.id, self.columns, values, bucket, sections))
        return out

    def file_columns(self, written: TableSchema) -> tuple[str | None, ...]:
        return super().file_columns(written)[:-2]  # no system columns in an append file


def read_schema(schema: TableSchema, columns: Sequence[str]) -> pa.Schema:
    return pa.schema([schema.field(c).arrow() for c in columns])


class AppendStream(BatchStream):
    """The rows of an append table's splits, file after file in plan order, the files
    decoded ``threads`` at a time ahead of the reader: each file's ``read`` columns (those
    its :class:`FileRead` maps), given as ``columns``. Iterable, with ``schema``,
    ``stats`` (``rows_in`` = ``rows_out``: nothing merges), ``read_all`` and the Arrow
    stream interface, as a merged read's :class:`merge_core.Stream`."""

    def __init__(
        self,
        root: Location,
        schema: TableSchema,
        splits: Sequence[Split],
        read: Sequence[str],
        columns: Sequence[str],
        batch_size: int,
        threads: int,
        stats: dict[str, int],
    ):
        self.store = root.store
        self.decoded = read_schema(schema, read)
        self.columns = list(columns)
        self.schema = read_schema(schema, columns)
        self.files = [f for split in splits for section in split.sections for run in section.runs for f in run]
        self.batch_size, self.threads = batch_size, max(1, threads)
        self._stats = dict(stats)
        self._rows = 0
        self._batches = self._read()

    @property
    def stats(self) -> dict[str, int]:
        return {**self._stats, "rows_in": self._rows, "rows_out": self._rows}

    def _read(self) -> Iterator[pa.RecordBatch]:
        if not self.files:
            return
        with ThreadPoolExecutor(self.threads, "merge-core-append-read") as pool:
            ahead: deque[Future[pa.Table]] = deque()
            todo = iter(self.files)
            try:
                for f in todo:
                    ahead.append(pool.submit(self._decode, f))
                    if len(ahead) >= self.threads:
                        break
                while ahead:
                    table = ahead.popleft().result()
                    nxt = next(todo, None)
                    if nxt is not None:
                        ahead.append(pool.submit(self._decode, nxt))
                    for batch in table.to_batches(max_chunksize=self.batch_size):
                        if batch.num_rows:
                            self._rows += batch.num_rows
                            yield batch
            finally:
                for future in ahead:
                    future.cancel()

    def _decode(self, f: FileRead) -> pa.Table:
        """One file's rows in the read's columns (a column the file predates: nulls)."""
        display = self.store.display(f.path)
        try:
            with self.store.fs.open_input_file(f.path) as source:
                parquet = pq.ParquetFile(source)
                stored = [c for c in f.columns if c is not None]
                table = parquet.read(columns=stored)
        except FileNotFoundError as e:
            raise CorruptTableError(f"data file {display} is missing") from e
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise CorruptTableError(f"data file {display} is not a readable Parquet file: {e}") from e
        except OSError as e:
            raise TableIOError(f"reading data file {display} failed: {e}") from e
        if table.num_rows != f.rows:
            raise CorruptTableError(f"data file {display} holds {table.num_rows} rows; its manifest says {f.rows}")
        arrays = []
        for target, column in zip(self.decoded, f.columns, strict=True):
            if column is None:
                arrays.append(pa.nulls(table.num_rows, target.type))
                continue
            try:
                arrays.append(table.column(column).cast(target.type))
            except (KeyError, pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                raise CorruptTableError(f"data file {display}: column {column!r} does not read as {target.type}") from e
        out = pa.Table.from_arrays(arrays, schema=self.decoded)
        if f.deleted is not None and len(f.deleted):
            keep = np.ones(out.num_rows, bool)
            keep[f.deleted.astype(np.int64)] = False
            out = out.filter(pa.array(keep))
        return out.select(self.columns)


# -- compaction ------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class AppendCompactTask:
    """One bucket's files (manifest entries, in read order) to rewrite into one file.
    Picklable, as :class:`_compact.CompactTask`."""

    snapshot: int
    partition: bytes
    bucket: int
    total_buckets: int
    entries: tuple[dict[str, Any], ...]


def compaction_tasks(entries: list[dict[str, Any]], snapshot: int, schema: TableSchema, full: bool) -> list:
    """The buckets to compact: ``full``, every bucket of more than one file; otherwise the
    small files (under ``target-file-size`` * ``compaction.small-file-ratio``, Paimon's
    ``compactionFileSize``) of buckets holding ``compaction.min.file-num`` of them, in
    read order."""
    options = schema.options
    target = memory_bytes(options, "target-file-size", TARGET_FILE_SIZE)
    target *= double_option(options, "compaction.small-file-ratio", SMALL_FILE_RATIO)
    least = int_option(options, "compaction.min.file-num", MIN_FILES)
    by_bucket: dict[tuple[bytes, int], list[dict[str, Any]]] = {}
    for e in entries:
        by_bucket.setdefault((e["_PARTITION"], e["_BUCKET"]), []).append(e)
    tasks = []
    for (partition, bucket), group in sorted(by_bucket.items()):
        group = sorted(group, key=lambda e: e["_FILE"]["_MIN_SEQUENCE_NUMBER"])
        picked = group if full else [e for e in group if e["_FILE"]["_FILE_SIZE"] < target]
        if len(picked) > 1 and (full or len(picked) >= least):
            tasks.append(AppendCompactTask(snapshot, partition, bucket, group[0]["_TOTAL_BUCKETS"], tuple(picked)))
    return tasks


def compact_bucket(
    root: Location, schema: TableSchema, planner: Planner, task: AppendCompactTask, threads: int
) -> CommitMessage:
    """Rewrites a task's files, in order, as one level-0 file (``_FILE_SOURCE`` COMPACT)."""
    files = [DataFile.of(e) for e in task.entries]
    reads = [planner.file_read(f, task.partition, task.bucket) for f in files]
    split = Split(planner.snapshot.id, schema.id, planner.columns, (), task.bucket, (Section((tuple(reads),)),))
    columns = list(planner.columns)
    stream = AppendStream(root, schema, [split], columns, columns, 64 * 1024, threads, {})
    first = files[0].min_sequence
    with Encoders(check_threads(threads)) as encoders:
        writer = AppendFileWriter(root, schema, task.partition, task.bucket, 0, first, encoders, source=COMPACT_SOURCE)
        try:
            for batch in stream:
                writer.write(batch)
            after: tuple[dict[str, Any], ...] = (writer.close(),) if writer.rows else ()
            if not writer.rows:
                writer.abort()
        except BaseException:
            writer.abort()
            raise
    before = tuple(e["_FILE"] for e in task.entries)
    return CommitMessage(task.partition, task.bucket, task.total_buckets, compact_before=before, compact_after=after)


def check_unmerged(merge: Any, sequence: Sequence[str]) -> None:
    """Refuses a merge function or sequence columns for a table without a key."""
    if sequence:
        raise InvalidInputError(f"an append table (no key) has no versions to order: sequence={list(sequence)}")
    if not (isinstance(merge, str) and merge == "deduplicate"):
        raise InvalidInputError(f"an append table (no key) merges nothing: merge={merge!r} needs a key")


def refuse_keyed(what: str) -> UnsupportedFeatureError:
    return UnsupportedFeatureError(f"{what} needs a primary key; this is an append table (no primary key)")
