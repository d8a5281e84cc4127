"""Postponed-bucket tables (``bucket = -2``): rows whose bucket is decided later.

Each partition of such a table has, besides its real buckets, a bucket of its own,
``bucket-postpone/`` (bucket -2 in the manifests, ``totalBuckets`` -2), whose files hold
rows in the order they were written, neither sorted nor folded, with the row kinds they
came with. A batch read never sees them (Paimon's ``onlyReadRealBuckets``); a partition's
real buckets are as any table's, their number fixed when the partition first gets one.

- **Writes** (:func:`new_write`). Paimon's batch writers write straight to real buckets
  unless ``postpone.batch-write-fixed-bucket`` is false (its default is true): a
  partition keeps its number of buckets; a partition without real buckets gets
  ``postpone.default-bucket-num``, else one bucket (:class:`FixedBucketWrite`). With the
  option false, rows go to ``bucket-postpone/`` as Paimon's postpone writer puts them
  (:class:`PostponedWrite`).
- **Compaction** (:class:`PostponedCompaction`), as Paimon's postpone compaction (Flink's
  ``CompactAction`` with ``PostponeBucketCompactSplitSource``,
  ``PostponeBucketCompactOperator`` and ``PostponeBucketCommittableRewriter``): each
  partition's postponed files, oldest first (by creation time), are read row by row and
  written into its real buckets as a write would, later rows newer, numbered after the
  bucket's rows; the partition's number of buckets is the one it has, else
  ``postpone.default-bucket-num``, else estimated from the postponed files (their bytes
  per ``postpone.target-size-per-bucket``, or rows per
  ``postpone.target-row-num-per-bucket``). Buckets that then need it are compacted as
  :meth:`Table.compact` does, and one COMPACT commit removes the postponed files and adds
  the new ones: a compaction that does not commit leaves every row where it was.
"""

from __future__ import annotations

import datetime
import io
import math
import os
import random
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .. import _native
from ..errors import CorruptTableError, InvalidInputError, TableIOError, UnsupportedFeatureError
from ..fs import Location
from . import _binary
from ._commit import CommitMessage, summary
from ._compact import CompactTask, compaction_tasks
from ._merge_options import PaimonMerge
from ._meta import Snapshot, latest_snapshot_id, live_entries
from ._options import bool_option, int_option, long_option, memory_bytes
from ._paths import POSTPONE_BUCKET, Layout
from ._plan import SEQUENCE_NUMBER, VALUE_KIND
from ._schema import TableSchema, load_schema
from ._write import (
    DataFileWriter,
    Encoders,
    TableWrite,
    _comparable,
    _Partitions,
    conform,
    remove_data_file,
)

FIXED_BUCKET = "postpone.batch-write-fixed-bucket"
DEFAULT_BUCKETS = "postpone.default-bucket-num"
TARGET_ROWS = "postpone.target-row-num-per-bucket"
TARGET_SIZE = "postpone.target-size-per-bucket"
GROUP_WIDTH = 1 << 31  # a write's _group: partition number * GROUP_WIDTH + bucket
POSTPONED_SEQUENCE = -1  # Java's postpone writer stores KeyValue.UNKNOWN_SEQUENCE
AVRO_ROWS = 64 * 1024  # rows of an Avro file decoded at once


def is_postponed(schema: TableSchema) -> bool:
    return int_option(schema.options, "bucket", -1) == POSTPONE_BUCKET


def real_entries(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries of files in real buckets: what a batch read of the table reads."""
    return [e for e in entries if e["_BUCKET"] >= 0]


def postponed_entries(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in entries if e["_BUCKET"] == POSTPONE_BUCKET]


def known_buckets(entries: list[dict[str, Any]]) -> dict[bytes, int]:
    """Each partition's number of real buckets, from its live files in real buckets
    (Paimon's ``getKnownNumBuckets``)."""
    out: dict[bytes, int] = {}
    for e in real_entries(entries):
        total = e["_TOTAL_BUCKETS"]
        if total <= 0:
            continue
        if out.setdefault(e["_PARTITION"], total) != total:
            raise CorruptTableError(
                f"a partition's live files say both {out[e['_PARTITION']]} and {total} buckets "
                f"(file {e['_FILE']['_FILE_NAME']})"
            )
    return out


def default_buckets(options: dict[str, str]) -> int | None:
    """``postpone.default-bucket-num``, or ``None`` when unset."""
    if DEFAULT_BUCKETS not in options:
        return None
    return int_option(options, DEFAULT_BUCKETS, 0, minimum=1)


def write_counts(root: Location, schema: TableSchema) -> tuple[dict[bytes, int], int]:
    """What a fixed-bucket write gives each partition: the numbers of buckets of those
    that have real buckets at the latest snapshot, and the number for the others."""
    latest = latest_snapshot_id(root)
    counts = {} if latest is None else known_buckets(live_entries(root, Snapshot.load(root, latest)))
    return counts, default_buckets(schema.options) or 1


def writes_fixed_buckets(schema: TableSchema) -> bool:
    return bool_option(schema.options, FIXED_BUCKET, True)


class PartitionBuckets:
    """Each row's bucket in a postponed-bucket table's write: its partition's number of
    buckets (``counts``, by serialized partition row; ``fallback`` for a partition not in
    it) and Paimon's hash of its bucket key."""

    def __init__(self, schema: TableSchema, partitions: _Partitions, counts: dict[bytes, int], fallback: int):
        self.schema, self.partitions, self.fallback = schema, partitions, fallback
        # by the values the rows hold: another writer's bytes for them may differ in padding
        self.counts = {_binary.decode(p, partitions.types): n for p, n in counts.items()}
        self.by_number: list[int] = []  # the number of buckets of each partition number met

    def ids(self, batch: pa.RecordBatch, numbers: np.ndarray) -> np.ndarray:
        """The buckets of ``batch``'s rows (``numbers``: each row's partition number)."""
        while len(self.by_number) <= (int(numbers.max()) if len(numbers) else -1):
            types = self.partitions.types
            values = _binary.decode(_binary.encode(self.partitions.values(len(self.by_number)), types), types)
            self.by_number.append(self.counts.get(values, self.fallback))
        counts = np.asarray(self.by_number, np.int64)[numbers]
        out = np.empty(batch.num_rows, np.int64)
        keys = list(self.schema.bucket_keys)
        for n in np.unique(counts):
            chosen = counts == n
            rows = batch if chosen.all() else batch.filter(pa.array(chosen))
            out[chosen] = _native.paimon_bucket_ids(rows, keys, int(n)).to_numpy()
        return out


def bucket_ids(root: Location, schema: TableSchema) -> Callable[[pa.RecordBatch], pa.Int32Array]:
    """What ``Table.bucket_ids`` gives for a postponed-bucket table (rows in the table's
    types): each row's real bucket as a write picks it, or -2 for every row when writes
    go to ``bucket-postpone/``."""
    if not writes_fixed_buckets(schema):
        return lambda batch: pa.array(np.full(batch.num_rows, POSTPONE_BUCKET, np.int32))
    partitions = _Partitions(schema.arrow, list(schema.partition_keys))
    buckets = PartitionBuckets(schema, partitions, *write_counts(root, schema))
    return lambda batch: pa.array(buckets.ids(batch, partitions.numbers(batch)).astype(np.int32))


def new_write(
    root: Location,
    schema: TableSchema,
    setup: PaimonMerge,
    row_kind: str | None,
    memory_limit: int | str,
    spill_dir: str | os.PathLike[str] | None,
    threads: int | None,
) -> TableWrite:
    """The write of a batch into a postponed-bucket table, as Paimon's batch writers make it."""
    if not writes_fixed_buckets(schema):
        return PostponedWrite(root, schema, setup, row_kind, memory_limit, spill_dir, threads)
    counts, fallback = write_counts(root, schema)
    return FixedBucketWrite(root, schema, setup, counts, fallback, row_kind, memory_limit, spill_dir, threads)


class FixedBucketWrite(TableWrite):
    """A write into the real buckets of a postponed-bucket table: a partition in
    ``counts`` (its serialized row -> number of buckets) keeps its number, another gets
    ``fallback``. ``sequences`` (by (partition, bucket)) continue the buckets' sequence
    numbers (default: from the latest snapshot's files)."""

    def __init__(
        self,
        root: Location,
        schema: TableSchema,
        setup: PaimonMerge,
        counts: dict[bytes, int],
        fallback: int,
        row_kind: str | None = None,
        memory_limit: int | str = "256MiB",
        spill_dir: str | os.PathLike[str] | None = None,
        threads: int | None = None,
        sequences: dict[tuple[bytes, int], int] | None = None,
    ):
        super().__init__(root, schema, setup, row_kind, memory_limit, spill_dir, threads)
        self.group_width = GROUP_WIDTH
        self.sequences = sequences
        self._buckets = PartitionBuckets(schema, self.partitions, counts, fallback)

    def _bucket_ids(self, batch: pa.RecordBatch, numbers: np.ndarray) -> np.ndarray:
        return self._buckets.ids(batch, numbers)

    def total_buckets(self, number: int) -> int:
        return self._buckets.by_number[number]

    def next_sequences(self) -> dict[tuple[bytes, int], int]:
        return super().next_sequences() if self.sequences is None else self.sequences


class PostponedWrite(TableWrite):
    """A write into ``bucket-postpone/``, as Paimon's ``PostponeBucketWriter``: each
    partition's rows in the order given (neither sorted nor folded), with their row kinds,
    in level-0 files named after the writer (``data--u-<user>-s-<id>-w-<uuid>-0``), every
    sequence number -1 (compaction numbers the rows). Files are Parquet, as all of
    merge-core's (Paimon's writer picks Avro where Avro can hold the table's types)."""

    def __init__(
        self,
        root: Location,
        schema: TableSchema,
        setup: PaimonMerge,
        row_kind: str | None = None,
        memory_limit: int | str = "256MiB",
        spill_dir: str | os.PathLike[str] | None = None,
        threads: int | None = None,
    ):
        super().__init__(root, schema, setup, row_kind, memory_limit, spill_dir, threads)  # its sort unused
        # Java's prefix: the commit user and a writer id, so a compaction can tell writers apart
        self.prefix = f"data--u-{uuid.uuid4()}-s-{random.randrange(1 << 31)}-w-"
        self._encoders = Encoders(self.threads, self._encode_memory)
        self._files: dict[int, _PostponedFileWriter] = {}  # by partition number

    def _add(self, batch: pa.RecordBatch) -> None:
        batch = conform(batch, self.table_schema, self.row_kind)
        if self.ignore_update_before and self.row_kind:
            batch = batch.filter(pc.not_equal(batch.column(VALUE_KIND), 1))
        self._retracts.check(batch)
        numbers = self.partitions.numbers(batch)
        found, first = np.unique(numbers, return_index=True)
        for number in found[np.argsort(first)]:  # the partitions, in the order met
            rows = batch if len(found) == 1 else batch.filter(pa.array(numbers == number))
            self._file(int(number)).write(rows)

    def _file(self, number: int) -> _PostponedFileWriter:
        if number not in self._files:
            partition = _binary.encode(self.partitions.values(number), self.partitions.types)
            self._files[number] = _PostponedFileWriter(
                self.root, self.schema, partition, self.prefix, self._encoders, self.layout
            )
        return self._files[number]

    def prepare_commit(self) -> list[CommitMessage]:
        if self._done:
            raise InvalidInputError("this write was already prepared for commit; start a new one")
        self._done = True
        files = list(self._files.values())
        try:
            closing = [(f.partition, f.close_later()) for f in files]
            written = [(partition, future.result()) for partition, future in closing]
        except BaseException:
            self._abort(files)
            raise
        finally:
            self._encoders.close()
            self._buffer.close()
        return self.stamped([CommitMessage(p, POSTPONE_BUCKET, POSTPONE_BUCKET, new_files=(f,)) for p, f in written])

    def _abort(self, files: Sequence[_PostponedFileWriter]) -> None:
        for f in files:
            f.abort()

    def close(self) -> None:
        if not self._done:
            self._abort(list(self._files.values()))
            self._encoders.close()
        super().close()


class _PostponedFileWriter(DataFileWriter):
    """A postponed bucket's data file: rows in the order written, its min and max key
    those of its first and last rows (as Java's writer records them)."""

    def __init__(
        self, root: Location, schema: TableSchema, partition: bytes, prefix: str, encoders: Encoders, layout: Layout
    ):
        super().__init__(root, schema, partition, POSTPONE_BUCKET, 0, POSTPONED_SEQUENCE, encoders, layout)
        self.name = f"{prefix}{uuid.uuid4()}-0.parquet"
        self.path = root / layout.bucket_dir(partition, POSTPONE_BUCKET) / self.name

    def write(self, batch: pa.RecordBatch) -> None:
        sequence = pa.array(np.full(batch.num_rows, POSTPONED_SEQUENCE, np.int64))
        super().write(batch.append_column(SEQUENCE_NUMBER, sequence))

    def _track(self, batch: pa.RecordBatch, n: int) -> None:
        key_columns = [_comparable(batch.column(k)) for k in self.keys]
        if self.min_key is None:
            self.min_key = tuple(c[0].as_py() for c in key_columns)
        self.max_key = tuple(c[n - 1].as_py() for c in key_columns)
        for stats, k in zip(self.key_stats, self.keys, strict=True):
            stats.add(batch.column(k))
        self.sequences += [POSTPONED_SEQUENCE, POSTPONED_SEQUENCE]
        self.rows += n


# -- compaction -------------------------------------------------------------------------


def compaction_buckets(
    postponed: list[dict[str, Any]], known: dict[bytes, int], options: dict[str, str]
) -> dict[bytes, int]:
    """The number of real buckets of each partition holding postponed files, as Paimon's
    ``PostponeBucketNumResolver`` decides it: the partition's own, else
    ``postpone.default-bucket-num``, else estimated from its postponed files."""
    default = default_buckets(options)
    if TARGET_ROWS in options:
        per_bucket, measure = long_option(options, TARGET_ROWS, 0, minimum=1), "_ROW_COUNT"
    else:
        per_bucket, measure = memory_bytes(options, TARGET_SIZE, "1 gb"), "_FILE_SIZE"
        if per_bucket < 1:
            raise InvalidInputError(f"option '{TARGET_SIZE}' must be greater than 0")
    amounts: dict[bytes, int] = {}
    for e in postponed:
        amounts[e["_PARTITION"]] = amounts.get(e["_PARTITION"], 0) + e["_FILE"][measure]
    out = {}
    for partition, amount in amounts.items():
        if partition in known:
            out[partition] = known[partition]
        elif default is not None:
            out[partition] = default
        else:
            out[partition] = max(1, math.ceil(amount / per_bucket))
    return out


def replay_order(postponed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Postponed files in the order their rows were written: by creation time, files of
    the same time in the order the manifests list them (Paimon's ``groupPostponeFiles``)."""
    return sorted(postponed, key=lambda e: _creation_millis(e["_FILE"].get("_CREATION_TIME")))


def _creation_millis(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:  # a zone-less time: its order is that of the same clock time in UTC
            value = value.replace(tzinfo=datetime.timezone.utc)
        return int(value.timestamp() * 1000)
    return int(value)


class PostponedCompaction:
    """One compaction of a postponed-bucket table at its latest snapshot (see the module's
    description). ``compact_bucket``, ``commit`` and ``abort`` are the table's own."""

    def __init__(
        self,
        root: Location,
        schema: TableSchema,
        setup: PaimonMerge,
        compact_bucket: Callable[[CompactTask, int], CommitMessage],
        commit: Callable[[Sequence[CommitMessage]], int | None],
        abort: Callable[[Sequence[CommitMessage]], None],
    ):
        self.root, self.schema, self.setup = root, schema, setup
        self.compact_bucket, self.commit, self.abort = compact_bucket, commit, abort

    def run(self, full: bool, threads: int) -> dict[str, int | None]:
        latest = latest_snapshot_id(self.root)
        if latest is None:
            return summary(None, [], compaction=True)
        snap = Snapshot.load(self.root, latest)
        entries = live_entries(self.root, snap)
        postponed, real = postponed_entries(entries), real_entries(entries)
        moved = self._move(postponed, real)  # level-0 files of the postponed rows, not committed
        consumed: list[tuple[bytes, int, dict[str, Any]]] = []
        try:
            messages = self._compact(snap.id, real, moved, full, threads, consumed)
            messages += self._removals(postponed)
            if not any(m.is_compaction for m in messages):
                return summary(snap.id, [], compaction=True)
            snapshot = self.commit(messages)  # removes the messages' files if it fails
        except BaseException:
            self.abort(moved)
            raise
        finally:
            for partition, bucket, f in consumed:  # merged into a compacted file
                remove_data_file(self.root, self.schema, partition, bucket, f)
        return summary(snapshot, messages, compaction=True)

    def _move(self, postponed: list[dict[str, Any]], real: list[dict[str, Any]]) -> list[CommitMessage]:
        """Writes the postponed rows into their real buckets, as a write does: level-0
        files numbered after each bucket's live files."""
        if not postponed:
            return []
        known = known_buckets(real)
        counts = compaction_buckets(postponed, known, self.schema.options)
        sequences: dict[tuple[bytes, int], int] = {}
        for e in real:
            key = (e["_PARTITION"], e["_BUCKET"])
            sequences[key] = max(sequences.get(key, 0), e["_FILE"]["_MAX_SEQUENCE_NUMBER"] + 1)
        write = FixedBucketWrite(
            self.root, self.schema, self.setup, counts, 1, row_kind=VALUE_KIND, sequences=sequences
        )
        with write:
            for e in replay_order(postponed):
                for batch in postponed_rows(self.root, self.schema, e):
                    write.write(batch)
            return write.prepare_commit()

    def _compact(
        self,
        snapshot: int,
        real: list[dict[str, Any]],
        moved: list[CommitMessage],
        full: bool,
        threads: int,
        consumed: list[tuple[bytes, int, dict[str, Any]]],
    ) -> list[CommitMessage]:
        """The real buckets' messages: those that need it compacted as ``Table.compact``
        compacts (the moved files merged in), the moved files of the others added as they
        are (Paimon's rewriter turns a compaction's new files into its results)."""
        new_entries = [e for m in moved for e in m.append_entries()]
        new_names = {e["_FILE"]["_FILE_NAME"] for e in new_entries}
        tasks = compaction_tasks(real + new_entries, snapshot, self.schema, full)
        workers = max(1, min(threads, len(tasks)))
        with ThreadPoolExecutor(workers, "merge-core-compact") as pool:
            running = [pool.submit(self.compact_bucket, task, max(1, threads // workers)) for task in tasks]
            try:
                done = [future.result() for future in running]
            except BaseException:
                for future in running:
                    future.cancel()
                wait(running)
                self.abort([f.result() for f in running if not f.cancelled() and f.exception() is None])
                raise
        out = []
        compacted = set()
        for m in done:
            compacted.add((m.partition, m.bucket))
            before = tuple(f for f in m.compact_before if f["_FILE_NAME"] not in new_names)
            consumed += [(m.partition, m.bucket, f) for f in m.compact_before if f["_FILE_NAME"] in new_names]
            out.append(CommitMessage(m.partition, m.bucket, m.total_buckets, (), before, m.compact_after))
        for m in moved:
            if (m.partition, m.bucket) not in compacted:
                out.append(CommitMessage(m.partition, m.bucket, m.total_buckets, compact_after=m.new_files))
        return out

    def _removals(self, postponed: list[dict[str, Any]]) -> list[CommitMessage]:
        """The postponed files leave the snapshot in the same commit (Paimon's
        ``RemovePostponeBucketFilesOperator``)."""
        groups: dict[tuple[bytes, int], list[dict[str, Any]]] = {}
        for e in postponed:
            groups.setdefault((e["_PARTITION"], e["_TOTAL_BUCKETS"]), []).append(e["_FILE"])
        return [
            CommitMessage(partition, POSTPONE_BUCKET, total, compact_before=tuple(files))
            for (partition, total), files in groups.items()
        ]


# -- reading a postponed file -------------------------------------------------------------


def postponed_rows(root: Location, schema: TableSchema, entry: dict[str, Any]) -> Iterator[pa.RecordBatch]:
    """The rows of a postponed file in the order written: the table's columns (a column
    the file predates reads as null) and ``_VALUE_KIND``."""
    f = entry["_FILE"]
    name = f["_FILE_NAME"]
    if f.get("_EXTERNAL_PATH"):
        raise UnsupportedFeatureError(f"postponed file {name} at an external path: merge-core does not compact it")
    path = root / Layout(schema).bucket_dir(entry["_PARTITION"], POSTPONE_BUCKET) / name
    written = schema if f["_SCHEMA_ID"] == schema.id else load_schema(root, f["_SCHEMA_ID"])
    by_id = {field.id: field.name for field in written.fields}
    columns = [(field, by_id.get(field.id)) for field in schema.fields]
    try:
        if name.endswith(".parquet"):
            yield from _parquet_rows(path, columns)
        elif name.endswith(".avro"):
            yield from _avro_rows(path, columns)
        else:
            raise UnsupportedFeatureError(f"postponed file {name}: merge-core reads Parquet and Avro ones")
    except FileNotFoundError as e:
        raise CorruptTableError(f"postponed file {path} is missing") from e
    except OSError as e:
        raise TableIOError(f"reading postponed file {path} failed: {e}") from e


def _parquet_rows(path: Location, columns: list[tuple[Any, str | None]]) -> Iterator[pa.RecordBatch]:
    with path.store.fs.open_input_file(path.path) as source:
        reader = pq.ParquetFile(source)
        for batch in reader.iter_batches():
            yield _as_table_rows(
                batch.num_rows, columns, lambda name, b=batch: b.column(name), batch.column(VALUE_KIND)
            )


def _avro_rows(path: Location, columns: list[tuple[Any, str | None]]) -> Iterator[pa.RecordBatch]:
    try:
        records = fastavro.reader(io.BytesIO(path.read_bytes()))
        chunk: list[dict[str, Any]] = []
        for record in records:
            chunk.append(record)
            if len(chunk) == AVRO_ROWS:
                yield _avro_batch(chunk, columns)
                chunk = []
        if chunk:
            yield _avro_batch(chunk, columns)
    except (ValueError, EOFError, StopIteration, KeyError) as e:
        raise CorruptTableError(f"postponed file {path} is not a readable Avro data file ({e})") from e


def _avro_batch(records: list[dict[str, Any]], columns: list[tuple[Any, str | None]]) -> pa.RecordBatch:
    kinds = pa.array([r[VALUE_KIND] for r in records], pa.int8())
    types = {name: field.arrow().type for field, name in columns if name is not None}

    def column(name: str) -> pa.Array:
        values = [r[name] for r in records]
        try:  # fastavro's values (dates, datetimes, decimals, dicts) as the table's type
            return pa.array(values, types[name])
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            return pa.array(values)  # cast below, or refused there

    return _as_table_rows(len(records), columns, column, kinds)


def _as_table_rows(
    n: int, columns: list[tuple[Any, str | None]], column: Callable[[str], pa.Array], kinds: pa.Array
) -> pa.RecordBatch:
    arrays, fields = [], []
    for field, name in columns:
        target = field.arrow()
        values = pa.nulls(n, target.type) if name is None else column(name)
        if values.type != target.type:
            values = values.cast(target.type)
        arrays.append(values)
        fields.append(target.with_nullable(True).remove_metadata())
    arrays.append(kinds.cast(pa.int8()))
    fields.append(pa.field(VALUE_KIND, pa.int8(), False))
    return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))
