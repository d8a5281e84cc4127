"""Writing to a Paimon table: rows are assigned their bucket by Paimon's bucket function,
sorted and folded by the spillable sort buffer, and each (partition, bucket) becomes one
level-0 data file laid out as Paimon's (``_KEY_`` columns, ``_SEQUENCE_NUMBER``,
``_VALUE_KIND``, the table's columns, Parquet field ids). Nothing is visible until the
:class:`CommitMessage` objects that :meth:`TableWrite.prepare_commit` returns are committed.

The sort key is ``(_group, key...)``, ``_group = partition number * group width + bucket``
(the width: the number of buckets; every bucket number a dynamic-bucket table may use;
2^31 for a postponed-bucket table, whose partitions differ in their number of buckets:
``_postpone``), so the sorted rows hold each group contiguously and a file is cut where
``_group`` changes. Folding within a write keeps retractions (the file lies above older
ones). A dynamic-bucket table's buckets come from ``_dynamic_bucket``, which also gives
each bucket that took new keys its new HASH index file.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import os
import threading
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .. import _native
from ..errors import InternalError, InvalidInputError, TableIOError, UnsupportedFeatureError, as_invalid_input
from ..fs import Location
from ..inputs import as_stream_source, batches_of, check_threads, sort_options
from . import _binary, _key_order
from ._changelog import INPUT, InputChangelog, producer
from ._commit import CommitMessage
from ._dynamic_bucket import DYNAMIC, MAX_BUCKETS, DynamicBuckets
from ._merge_options import PaimonMerge
from ._meta import Snapshot, latest_snapshot_id, live_entries
from ._options import bool_option, int_option, long_option, memory_bytes
from ._paths import Layout
from ._plan import SEQUENCE_NUMBER, VALUE_KIND
from ._schema import FIELD_ID, TableSchema
from ._stats import ColumnStats, FileStats, footer_chunks

GROUP = "_group"
KEY_PREFIX = "_KEY_"
KEY_FIELD_ID = (1 << 30) - 1  # a key column's id: this plus its field's id
SEQUENCE_FIELD_ID = (1 << 31) - 2
KIND_FIELD_ID = (1 << 31) - 3
KIND_NAMES = ["+I", "-U", "+U", "-D"]  # (Python lists: an Arrow array made at import imports pandas)
RETRACT_CODES = [1, 3]
SORT_BATCH_ROWS = 64 * 1024  # at most; the sort makes batches of wide rows smaller (by bytes)
ROW_GROUP_ROWS = 128 * 1024
PRIMARY_KEY_TARGET_FILE_SIZE = "128 mb"  # Paimon's target-file-size of a primary-key table
INT64_MAX = (1 << 63) - 1
ROW_GROUP_BYTES = 128 << 20  # at most: a row group takes a quarter of what its Encoders may hold
ENCODE_SHARE = 4  # a write's encoding holds at most memory_limit / ENCODE_SHARE bytes of rows
ENCODE_MEMORY = (256 << 20) // ENCODE_SHARE  # that of a write of the default memory_limit (compactions)
PAGE_ROWS = 8 * 1024  # rows in each data page, the same in every column (see _open)
PAGE_BYTES = 1 << 20  # fewer rows when the widest column would make pages larger (pyarrow's default)


def page_rows(table: pa.Table) -> int:
    """Rows per data page for a file that starts with ``table``: ``PAGE_ROWS``, halved
    while a page of its widest column (by average value size) would pass ``PAGE_BYTES``."""
    widest = max((column.nbytes for column in table.columns), default=0) / max(table.num_rows, 1)
    rows = PAGE_ROWS
    while rows > 64 and rows * widest > PAGE_BYTES:
        rows //= 2
    return rows


class TableWrite:
    """Rows in (any number of :meth:`write` calls), commit messages out. One use: after
    :meth:`prepare_commit` the write is spent. ``row_kind`` names a column of row kinds
    (``+I``, ``-U``, ``+U``, ``-D`` or 0..3) that is not stored as a column; without it,
    the table's ``rowkind.field`` column (stored) gives the row kinds, as in Paimon.
    (``Table.new_write`` refuses a table merge-core does not write, before this.)"""

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
        row_kind = row_kind or schema.options.get("rowkind.field", "").strip() or None
        self.root, self.schema, self.row_kind = root, schema, row_kind
        self.threads = check_threads(threads)
        self.buckets = int_option(schema.options, "bucket", -1)
        self.dynamic = DynamicBuckets(root, schema) if self.buckets == DYNAMIC else None
        # _group = partition number * group_width + bucket
        self.group_width = MAX_BUCKETS if self.dynamic else self.buckets
        self.layout = Layout(schema)  # refuses what would name a directory Paimon does not
        # Paimon's writers drop -U rows of such tables (and every retract with ignore-delete).
        self.ignore_update_before = bool_option(schema.options, "ignore-update-before")
        parquet_compression(schema.options)  # a codec pyarrow lacks fails before anything is written
        self.table_schema = schema.arrow
        self.partitions = _Partitions(self.table_schema, list(schema.partition_keys))
        sort_schema = self.table_schema
        if row_kind:
            sort_schema = sort_schema.append(pa.field(VALUE_KIND, pa.int8(), nullable=False))
        sort_schema = sort_schema.append(pa.field(GROUP, pa.int64(), nullable=False))
        options = sort_options(
            [GROUP, *schema.trimmed_keys],
            list(setup.sequence),
            VALUE_KIND if row_kind else None,  # without row kinds, aggregates may fold early
            setup.merge,
            memory_limit,
            spill_dir,
            "lz4",
            128,
            None,
            SORT_BATCH_ROWS,
            setup.sequence_order,
        )
        self._changelog: InputChangelog | None = None
        if producer(schema.options) == INPUT:  # the input rows are sorted twice: half the memory each
            options = {**options, "memory_limit": options["memory_limit"] // 2}
            self._changelog = InputChangelog(sort_schema, options)
        self._buffer = _native.SortBuffer(sort_schema, {**options, "partial": True})
        self._retracts = _RetractCheck(sort_schema, options)
        self._encode_memory = options["memory_limit"] // ENCODE_SHARE
        self._done = False
        self.overwrite = False
        # A snapshot's live entries (Table.new_write gives the Table's, which it keeps for the commit).
        self.live_entries: Callable[[Location, Snapshot], list[dict[str, Any]]] = live_entries
        # Set by Table.new_write where a write's level-0 files must be compacted at once (``_lookup``).
        self.level_zero_compaction: Callable[[list[CommitMessage], bool], list[CommitMessage]] | None = None

    def ignore_previous_files(self) -> TableWrite:
        """Makes this the write of an overwrite, as Paimon's overwrite writers are: each
        bucket's sequence numbers start at 0 and a dynamic-bucket table's keys are placed
        in empty buckets, since the files and index it replaces are gone once it commits.
        Its messages are committed only by ``Table.commit(messages, overwrite=...)``."""
        if self._done:
            raise InvalidInputError("this write was already prepared for commit; start a new one")
        self.overwrite = True
        if self.dynamic is not None:
            self.dynamic.ignore_existing = True
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
                del batch  # not held while the next batch is read
        except ValueError as e:
            raise as_invalid_input(e) from e

    def _add(self, batch: pa.RecordBatch) -> None:
        batch = conform(batch, self.table_schema, self.row_kind)
        if self.ignore_update_before and self.row_kind:
            batch = batch.filter(pc.not_equal(batch.column(VALUE_KIND), 1))
        self._retracts.check(batch)
        numbers = self.partitions.numbers(batch)
        groups = numbers * self.group_width + self._bucket_ids(batch, numbers)
        rows = pa.Table.from_batches([batch.append_column(GROUP, pa.array(groups))])
        self._buffer.write(rows)
        if self._changelog is not None:
            self._changelog.add(rows)

    def _bucket_ids(self, batch: pa.RecordBatch, numbers: np.ndarray) -> np.ndarray:
        """Each row's bucket (``numbers``: each row's partition number)."""
        if self.dynamic is not None:
            return self.dynamic.assign(batch, numbers, self.partition_row)
        return bucket_ids(self.schema, batch).to_numpy().astype(np.int64)

    def total_buckets(self, number: int) -> int:
        """The number of buckets of partition ``number`` (a commit message's ``totalBuckets``)."""
        return self.buckets

    def next_sequences(self) -> dict[tuple[bytes, int], int]:
        """Each bucket's next sequence number, by (partition, bucket) (none: from 0)."""
        return {} if self.overwrite else _next_sequences(self.root, self.live_entries)

    def prepare_commit(self) -> list[CommitMessage]:
        """Writes the data files and returns what to commit, one message per (partition,
        bucket); if writing fails, the files written are removed."""
        if self._done:
            raise InvalidInputError("this write was already prepared for commit; start a new one")
        self._done = True
        try:
            with Encoders(self.threads, self._encode_memory) as encoders:
                messages = _FileCutter(self, encoders).cut(self._buffer.finish())
                if self._changelog is not None:
                    messages = self._with_changelog(self._changelog, messages, encoders)
        except ValueError as e:
            raise as_invalid_input(e) from e
        finally:
            self.close()
        messages = messages if self.dynamic is None else self._with_index(messages)
        if self.level_zero_compaction is not None:
            messages = self.level_zero_compaction(messages, self.overwrite)
        return self.stamped(messages)

    def _with_changelog(
        self, changelog: InputChangelog, messages: list[CommitMessage], encoders: Encoders
    ) -> list[CommitMessage]:
        """The messages with their bucket's changelog file (changelog-producer = input);
        a bucket whose rows all folded away gets a message of its changelog alone. If the
        changelog fails, the data files go too."""
        first = self.next_sequences()
        totals: dict[tuple[bytes, int], int] = {}

        def file_for(group: int) -> DataFileWriter:
            number, bucket = divmod(group, self.group_width)
            partition = self.partition_row(number)
            totals[(partition, bucket)] = self.total_buckets(number)
            sequence = first.get((partition, bucket), 0)
            return DataFileWriter(
                self.root, self.schema, partition, bucket, 0, sequence, encoders, self.layout, changelog=True
            )

        def remove(partition: bytes, bucket: int, f: dict[str, Any]) -> None:
            remove_data_file(self.root, self.schema, partition, bucket, f)

        try:
            files = changelog.write_files(GROUP, group_boundaries, file_for, remove)
        except BaseException:
            for m in messages:
                for f in m.data_files():
                    remove(m.partition, m.bucket, f)
            raise
        out = [dataclasses.replace(m, changelog_files=_one(files.pop((m.partition, m.bucket), None))) for m in messages]
        return out + [CommitMessage(p, b, totals[(p, b)], changelog_files=(f,)) for (p, b), f in files.items()]

    def stamped(self, messages: list[CommitMessage]) -> list[CommitMessage]:
        """The messages, marked as an overwrite's if this write is one."""
        return [dataclasses.replace(m, overwrite=True) for m in messages] if self.overwrite else messages

    def partition_row(self, number: int) -> bytes:
        return _binary.encode(self.partitions.values(number), self.partitions.types)

    def _with_index(self, messages: list[CommitMessage]) -> list[CommitMessage]:
        """The messages with the new HASH index file of their bucket, if it took new
        keys; if the index files fail, the data files go too."""
        try:
            updates = self.dynamic.updates() if self.dynamic else {}
        except BaseException:
            for m in messages:
                for f in m.data_files():
                    remove_data_file(self.root, self.schema, m.partition, m.bucket, f)
            raise
        out = [dataclasses.replace(m, hash_index=updates.pop((m.partition, m.bucket), None)) for m in messages]
        # A bucket whose new keys' rows all folded away (deletes ignored) still keeps them, as in Paimon.
        return out + [CommitMessage(p, b, self.buckets, hash_index=u) for (p, b), u in updates.items()]

    def close(self) -> None:
        self._done = True
        self._buffer.close()
        if self._changelog is not None:
            self._changelog.close()

    def __enter__(self) -> TableWrite:
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()


class _RetractCheck:
    """Refuses retracts (``-U``, ``-D``) that the table's merge function cannot fold with
    a key's other versions (partial-update without a rule for them, an aggregate function
    that cannot take a value back, first-row): stored, they would make every later read
    of the key fail. Paimon's own merge fails on them the same way; the reason (asked of
    the Rust fold, once per kind a write meets) names the option that would allow them."""

    def __init__(self, sort_schema: pa.Schema, options: dict[str, Any]):
        self.sort_schema, self.options = sort_schema, options
        self.checked: set[int] = set()

    def check(self, batch: pa.RecordBatch) -> None:
        if VALUE_KIND not in batch.schema.names:
            return
        kinds = set(pc.unique(batch.column(VALUE_KIND)).to_pylist()) & set(RETRACT_CODES)
        for kind in sorted(kinds - self.checked):
            reason = _native.retract_refusal(self.sort_schema, self.options, kind)
            if reason:
                raise InvalidInputError(f"the table cannot take this write's {KIND_NAMES[kind]} rows: {reason}")
            self.checked.add(kind)


class _FileCutter:
    """Cuts the sorted rows into data files per (partition, bucket). A key whose
    versions a write could not fold (partial-update or aggregate with row kinds or a
    sequence field) has its k-th version in the bucket's k-th file: each file then
    holds a key once, and the versions read back as if written by k commits in turn."""

    def __init__(self, write: TableWrite, encoders: Encoders):
        self.write, self.encoders = write, encoders
        self.next_sequence = write.next_sequences()
        self.files: list[RollingDataFiles] = []  # the current bucket's, by version index
        self.target_size, self.target_rows = target_file_size(write.schema), target_file_rows(write.schema)
        self.done: list[tuple[bytes, int, Future[dict[str, Any]]]] = []
        self.totals: dict[tuple[bytes, int], int] = {}

    def cut(self, sorted_rows: Iterable[pa.RecordBatch]) -> list[CommitMessage]:
        w = self.write
        group, last_key, last_index = -1, None, -1
        try:
            for batch in sorted_rows:
                for g, start, end in group_boundaries(batch.column(GROUP)):
                    if g != group:
                        self._close_files()
                        group, last_key, last_index = g, None, -1
                        number, self.bucket = divmod(g, w.group_width)
                        self.partition = w.partition_row(number)
                        self.totals[(self.partition, self.bucket)] = w.total_buckets(number)
                        self.sequence = self.next_sequence.get((self.partition, self.bucket), 0)
                    rows = batch.slice(start, end - start)
                    keys = [_key_order.ordered(rows.column(k)) for k in w.schema.trimmed_keys]
                    index = _version_index(keys, last_key, last_index)
                    last_key = tuple(k[-1].as_py() for k in keys)
                    last_index = int(index[-1])
                    self._route(rows, index)
            self._close_files()
            written = [(partition, bucket, record.result()) for partition, bucket, record in self.done]
        except BaseException:
            for f in self.files:
                f.abort()
            for partition, bucket, record in self.done:
                if record.exception() is None:  # waits for it; a file that failed removed itself
                    remove_data_file(w.root, w.schema, partition, bucket, record.result())
            raise
        by_bucket: dict[tuple[bytes, int], list[dict[str, Any]]] = {}
        for partition, bucket, f in written:
            by_bucket.setdefault((partition, bucket), []).append(f)
        return [CommitMessage(p, b, self.totals[(p, b)], new_files=tuple(files)) for (p, b), files in by_bucket.items()]

    def _route(self, rows: pa.RecordBatch, index: np.ndarray) -> None:
        """Numbers the rows in order (a key's later version gets a higher number) and
        sends the rows of version index k to the bucket's k-th file."""
        n = rows.num_rows
        numbers = pa.array(np.arange(self.sequence, self.sequence + n, dtype=np.int64))
        self.sequence += n
        rows = rows.append_column(SEQUENCE_NUMBER, numbers)
        top = int(index.max())
        while len(self.files) <= top:
            self.files.append(RollingDataFiles(self._open_file, self.sequence, self.target_size, self.target_rows))
        if top == 0:
            self.files[0].write(rows)
            return
        for k in range(top + 1):
            self.files[k].write(rows.filter(pa.array(index == k)))

    def _open_file(self, first_sequence: int) -> DataFileWriter:
        w = self.write
        return DataFileWriter(w.root, w.schema, self.partition, self.bucket, 0, first_sequence, self.encoders, w.layout)

    def _close_files(self) -> None:
        files, self.files = self.files, []
        for i, f in enumerate(files):
            try:
                self.done += [(f.partition, f.bucket, record) for record in f.close_later()]
            except BaseException:
                for rest in files[i + 1 :]:
                    rest.abort()
                raise


def _one(f: dict[str, Any] | None) -> tuple[dict[str, Any], ...]:
    return () if f is None else (f,)


def _version_index(keys: list[pa.Array], last_key: tuple | None, last_index: int) -> np.ndarray:
    """For rows sorted by key (``keys``: the key columns, :func:`_key_order.ordered`),
    each row's index among its key's versions (0 for the first), continuing the previous
    slice's last key (``last_key``, of ordered values, at ``last_index``)."""
    n = len(keys[0])
    same = _key_order.repeats(keys)  # whether a row has the key of the row before it
    positions = np.arange(n)
    starts = np.maximum.accumulate(np.where(same, 0, positions))
    index = positions - starts
    if last_key is not None and tuple(k[0].as_py() for k in keys) == last_key:
        index[starts == 0] += last_index + 1
    return index


def _next_sequences(
    root: Location, live_of: Callable[[Location, Snapshot], list[dict[str, Any]]] = live_entries
) -> dict[tuple[bytes, int], int]:
    """Each bucket's next sequence number: one past the largest of its live files, as
    Paimon's writers continue a bucket (``live_of``: a snapshot's live entries)."""
    latest = latest_snapshot_id(root)
    if latest is None:
        return {}
    out: dict[tuple[bytes, int], int] = {}
    for e in live_of(root, Snapshot.load(root, latest)):
        key = (e["_PARTITION"], e["_BUCKET"])
        out[key] = max(out.get(key, 0), e["_FILE"]["_MAX_SEQUENCE_NUMBER"] + 1)
    return out


def data_file_schema(schema: TableSchema) -> pa.Schema:
    """A data file's columns: the key again as ``_KEY_`` columns (unless the table is in
    thin mode), the sequence number and row kind, then the table's columns, each with its
    Parquet field id."""
    keys = [] if schema.thin_mode else [schema.field(k) for k in schema.trimmed_keys]
    return pa.schema(
        [
            *(
                pa.field(KEY_PREFIX + k.name, k.type, False, metadata={FIELD_ID: str(KEY_FIELD_ID + k.id).encode()})
                for k in keys
            ),
            pa.field(SEQUENCE_NUMBER, pa.int64(), False, metadata={FIELD_ID: str(SEQUENCE_FIELD_ID).encode()}),
            pa.field(VALUE_KIND, pa.int8(), False, metadata={FIELD_ID: str(KIND_FIELD_ID).encode()}),
            *(f.arrow() for f in schema.fields),
        ]
    )


class DataFileWriter:
    """Writes one data file of sorted rows (one row per key) of the partition whose
    serialized row is ``partition``, and describes it as its manifest record. Rows
    without ``_SEQUENCE_NUMBER`` are numbered from ``first_sequence`` in order; rows
    without ``_VALUE_KIND`` are adds. The Parquet encoding runs on ``encoders`` (on the
    caller's thread by default), one step of a file after another, each step a row group
    of ``ROW_GROUP_ROWS`` rows or the encoders' ``row_group_bytes``, whichever is reached
    first. ``keep``: a list that gets the file's rows as stored, batch by batch, while
    they take at most ``keep_bytes`` (past that it is emptied and gets no more)."""

    def __init__(
        self,
        root: Location,
        schema: TableSchema,
        partition: bytes,
        bucket: int,
        level: int,
        first_sequence: int,
        encoders: Encoders | None = None,
        layout: Layout | None = None,
        changelog: bool = False,
        keep: list[pa.RecordBatch] | None = None,
        keep_bytes: int = 0,
    ):
        self.root, self.schema, self.level = root, schema, level
        self.keep, self._keep_room = keep, keep_bytes
        self.encoders = encoders or Encoders(1)
        self._last: Future[Any] | None = None  # this file's latest encoding step
        self.partition, self.bucket = partition, bucket
        # A changelog file (changelog-producer) holds a key's changes in order: a key repeats.
        self.changelog = changelog
        prefix = schema.options.get("changelog-file.prefix", "changelog-") if changelog else "data-"
        self.name = f"{prefix}{uuid.uuid4()}-0.parquet"
        self.path = root / (layout or Layout(schema)).bucket_dir(partition, bucket) / self.name
        self.file_schema = data_file_schema(schema)
        self.keys = list(schema.trimmed_keys)
        self.key_types = [schema.field(k).type for k in self.keys]
        self.next_sequence = first_sequence
        self.rows = self.retracts = 0
        self.min_key: tuple | None = None
        self.max_key: tuple | None = None
        self.key_stats = [ColumnStats(t, values=False) for t in self.key_types]
        self.value_stats = FileStats(schema, level)
        self.sequences: list[int] = []
        self._writer: pq.ParquetWriter | None = None  # opened by the first encoding step
        self._sink: Any = None  # the file's output stream, under _writer
        self._pending: list[pa.RecordBatch] = []
        self._pending_rows = self._pending_bytes = 0
        self._submitted_bytes = 0  # Arrow bytes handed to encoding
        self._encoded = (0, 0)  # Arrow bytes encoded, and the file's length after them

    def write(self, batch: pa.RecordBatch) -> None:
        n = batch.num_rows
        if n == 0:
            return
        names = batch.schema.names
        if SEQUENCE_NUMBER in names:
            sequence = batch.column(SEQUENCE_NUMBER)
        else:
            sequence = pa.array(np.arange(self.next_sequence, self.next_sequence + n, dtype=np.int64))
            self.next_sequence += n
        kinds = batch.column(VALUE_KIND) if VALUE_KIND in names else pa.array(np.zeros(n, np.int8))
        self.retracts += pc.sum(pc.is_in(kinds, pa.array(RETRACT_CODES, pa.int8()))).as_py() or 0
        columns = [
            *(batch.column(k) for k in self.keys if not self.schema.thin_mode),
            sequence,
            kinds,
            *(batch.column(f.name) for f in self.schema.fields),
        ]
        out = pa.RecordBatch.from_arrays(columns, schema=self.file_schema)
        self._track(out, n)
        self.value_stats.add(out)
        self._kept(out)
        self._gather(out)

    def size_ratio(self) -> float:
        """Bytes in the file per Arrow byte of its rows, as encoded so far (1 before any)."""
        arrow, encoded = self._encoded
        return encoded / arrow if arrow else 1.0

    def estimated_size(self) -> int:
        """The file's length once its rows so far are encoded: its length now, plus the
        rows not encoded yet at the ratio of those that are."""
        arrow, encoded = self._encoded
        waiting = self._submitted_bytes + self._pending_bytes - arrow
        return encoded + int(waiting * self.size_ratio())

    def encoded_size(self) -> int:
        """The file's length once every row written so far is encoded: waits for that."""
        self._flush()
        if self._last is not None:
            self._last.result()
        return self._encoded[1]

    def _kept(self, batch: pa.RecordBatch) -> None:
        if self.keep is None:
            return
        self._keep_room -= batch.nbytes
        if self._keep_room < 0:
            self.keep.clear()
            self.keep = None
        else:
            self.keep.append(batch)

    def _gather(self, batch: pa.RecordBatch) -> None:
        """Adds rows to the row group being gathered, handing each full one to encoding."""
        limit = self.encoders.row_group_bytes
        while batch.num_rows:
            row_bytes = max(batch.nbytes / batch.num_rows, 1.0)
            room = min(ROW_GROUP_ROWS - self._pending_rows, math.ceil((limit - self._pending_bytes) / row_bytes))
            part, batch = batch.slice(0, max(room, 1)), batch.slice(max(room, 1))
            self._pending.append(part)
            self._pending_rows += part.num_rows
            self._pending_bytes += part.nbytes
            if self._pending_rows >= ROW_GROUP_ROWS or self._pending_bytes >= limit:
                self._flush()

    def _track(self, batch: pa.RecordBatch, n: int) -> None:
        key_columns = [_comparable(batch.column(k)) for k in self.keys]
        ordered = [_key_order.ordered(c) for c in key_columns]
        first = tuple(c[0].as_py() for c in key_columns)
        after_last = self.max_key is None or _key_order.sort_key(first) > _key_order.sort_key(self.max_key)
        after_last = after_last or (self.changelog and _key_order.sort_key(first) == _key_order.sort_key(self.max_key))
        if not after_last or not _key_order.ascending(ordered, strict=not self.changelog):
            # Paimon reads a file as sorted, each key once: one that is not would be read
            # wrongly by every reader, so it is never written (nor committed).
            raise InternalError(f"data file {self.name} would not hold its keys in ascending order, each once")
        self.min_key = first if self.min_key is None else self.min_key
        self.max_key = tuple(c[n - 1].as_py() for c in key_columns)
        for stats, k in zip(self.key_stats, self.keys, strict=True):
            stats.add(batch.column(k))
        bounds = pc.min_max(batch.column(SEQUENCE_NUMBER))
        self.sequences += [bounds["min"].as_py(), bounds["max"].as_py()]
        self.rows += n

    def _flush(self) -> None:
        if not self._pending:
            return
        table = pa.Table.from_batches(self._pending, self.file_schema)
        size = self._pending_bytes
        self._pending, self._pending_rows, self._pending_bytes = [], 0, 0
        self._submitted_bytes += size
        self._last = self.encoders.submit(self._encode, self._last, table, size, size=size)

    def _encode(self, before: Future[Any] | None, table: pa.Table, size: int) -> None:
        """Encodes ``table`` (``size`` Arrow bytes) once the file's previous step is done
        (``before`` was submitted earlier, so it is running or done: the pool takes steps
        in order)."""
        if before is not None:
            before.result()
        try:
            self._open(table).write_table(table, row_group_size=max(table.num_rows, 1))
            self._encoded = (self._encoded[0] + size, self._sink.tell())
        except OSError as e:
            raise TableIOError(f"writing data file {self.path} failed: {e}") from e

    def _open(self, first: pa.Table) -> pq.ParquetWriter:
        """The file's writer, opened for a file starting with the rows of ``first``."""
        if self._writer is not None:
            return self._writer
        compression, level = parquet_compression(self.schema.options, self.changelog)
        store = self.root.store
        try:
            store.make_parent(self.path.path)
            # The file's own stream, whose position says how long the file is so far.
            self._sink = store.fs.open_output_stream(self.path.path, compression=None)
            self._writer = pq.ParquetWriter(
                self._sink,
                self.file_schema,
                compression=compression,
                compression_level=level,
                use_dictionary=_dictionary_columns(self.schema, self.file_schema),
                # Each page's key range: a read cuts a bucket into key ranges by it
                # (merged in parallel) and decodes of each file only the range's pages.
                write_page_index=True,
                # A CRC32 of every page, which every reader of the file verifies (merge-core's
                # Rust decoder, Java's): a flipped bit is an error, never a changed value.
                write_page_checksum=True,
                # Pages of the same rows in every column: the two ranges of a cut share
                # the key's pages around it, and so every column's. (pyarrow ends a page
                # after a write batch that fills data_page_size: at 1 byte, every batch.)
                write_batch_size=page_rows(first),
                data_page_size=1,
            )
        except OSError as e:
            self._remove()
            raise TableIOError(f"creating data file {self.path} failed: {e}") from e
        return self._writer

    def close(self) -> dict[str, Any]:
        """Finishes the file; returns its manifest record (``_FILE``)."""
        return self.close_later().result()

    def close_later(self) -> Future[dict[str, Any]]:
        """Finishes the file once its encoding is done; the future gives its manifest
        record (``_FILE``), or raises after removing the file."""
        self._flush()
        self._last = self.encoders.submit(self._finish, self._last)
        return self._last

    def _finish(self, encoded: Future[Any] | None) -> dict[str, Any]:
        try:
            if encoded is not None:
                encoded.result()
            writer = self._open(self.file_schema.empty_table())
            writer.close()
            self._sink.close()  # a stream handed in is the caller's to close
            size = self._size()
            self._add_footer(writer.writer.metadata)  # pyarrow's writer keeps the footer it wrote
        except OSError as e:
            self._remove()
            raise TableIOError(f"writing data file {self.path} failed: {e}") from e
        except BaseException:
            self._remove()
            raise
        lows = [stats.low for stats in self.key_stats]
        highs = [stats.high for stats in self.key_stats]
        value_stats, value_stats_columns = self.value_stats.value_stats()
        return {
            "_FILE_NAME": self.name,
            "_FILE_SIZE": size,
            "_ROW_COUNT": self.rows,
            "_MIN_KEY": _binary.encode(self.min_key or (), self.key_types),
            "_MAX_KEY": _binary.encode(self.max_key or (), self.key_types),
            "_KEY_STATS": {
                "_MIN_VALUES": _binary.encode(lows, self.key_types),
                "_MAX_VALUES": _binary.encode(highs, self.key_types),
                "_NULL_COUNTS": [0] * len(self.keys),
            },
            "_VALUE_STATS": value_stats,
            "_MIN_SEQUENCE_NUMBER": min(self.sequences),
            "_MAX_SEQUENCE_NUMBER": max(self.sequences),
            "_SCHEMA_ID": self.schema.id,
            "_LEVEL": self.level,
            "_EXTRA_FILES": [],
            "_CREATION_TIME": datetime.datetime.now(),
            "_DELETE_ROW_COUNT": self.retracts,
            "_EMBEDDED_FILE_INDEX": None,
            "_FILE_SOURCE": 0 if self.level == 0 else 1,
            "_VALUE_STATS_COLS": value_stats_columns,
            "_EXTERNAL_PATH": None,
            "_FIRST_ROW_ID": None,
            "_WRITE_COLS": None,
        }

    def _add_footer(self, metadata: pq.FileMetaData) -> None:
        """Min and max of the key and table columns, from the file's Parquet statistics."""
        chunks = footer_chunks(metadata)
        self.value_stats.add_footer(chunks)
        stored = self.keys if self.schema.thin_mode else [KEY_PREFIX + k for k in self.keys]
        for stats, name in zip(self.key_stats, stored, strict=True):
            stats.add_footer(chunks.get(name, ()))

    def _size(self) -> int:
        info = self.root.store.info(self.path.path)
        if info is None:
            raise OSError(f"{self.path} is missing once written")
        return info.size

    def abort(self) -> None:
        """Removes the file, once the encoding steps already begun are over."""
        if self._last is not None:
            self._last.exception()  # waits; the file goes whatever happened
        self._remove()

    def _remove(self) -> None:
        try:
            if self._writer is not None:
                self._writer.close()
        except Exception:  # noqa: BLE001 - the file goes anyway
            pass
        try:
            if self._sink is not None:
                self._sink.close()
        except Exception:  # noqa: BLE001 - the file goes anyway
            pass
        _delete_file(self.root, self.path)


class RollingDataFiles:
    """One run's data files, as Paimon's rolling writer cuts them: rows go to a file until
    it reaches ``target`` bytes (its encoded length, estimated while its last row groups
    are still being encoded: see ``DataFileWriter.estimated_size``) or ``max_rows`` rows,
    then to a new file, numbered on from the one before. ``open_file(first_sequence)``
    opens each file. Files hold their keys in order, each once, so any cut between rows
    keeps the run sorted."""

    def __init__(
        self, open_file: Callable[[int], DataFileWriter], first_sequence: int, target: int, max_rows: int = INT64_MAX
    ):
        self._open_file, self.target, self.max_rows = open_file, max(target, 1), max(max_rows, 1)
        self.files = [open_file(first_sequence)]
        self.partition, self.bucket = self.files[0].partition, self.files[0].bucket

    @property
    def rows(self) -> int:
        return sum(f.rows for f in self.files)

    def write(self, batch: pa.RecordBatch) -> None:
        while batch.num_rows:
            current = self.files[-1]
            if current.rows and (current.rows >= self.max_rows or self._full(current)):
                current = self._roll()
            row_bytes = max(batch.nbytes / batch.num_rows, 1.0) * current.size_ratio()
            room = min(math.ceil((self.target - current.estimated_size()) / row_bytes), self.max_rows - current.rows)
            part, batch = batch.slice(0, max(room, 1)), batch.slice(max(room, 1))
            current.write(part)

    def _full(self, file: DataFileWriter) -> bool:
        # Estimated full, it is waited for: before its first row group is encoded, the
        # estimate takes Arrow's bytes for the file's, several times too many.
        return file.estimated_size() >= self.target and file.encoded_size() >= self.target

    def _roll(self) -> DataFileWriter:
        self.files.append(self._open_file(self.files[-1].next_sequence))
        return self.files[-1]

    def close_later(self) -> list[Future[dict[str, Any]]]:
        """Finishes the files once encoded; each future gives a file's manifest record."""
        return [f.close_later() for f in self.files]

    def close(self) -> list[dict[str, Any]]:
        """Finishes the files; returns their manifest records, in key order."""
        try:
            return [record.result() for record in self.close_later()]
        except BaseException:
            self.abort()
            raise

    def abort(self) -> None:
        """Removes every file of the run, once its encoding steps are over."""
        for f in self.files:
            f.abort()


def target_file_size(schema: TableSchema) -> int:
    """Where a primary-key table's writes and compactions roll their data files
    (``target-file-size``, 128 MB by default as in Paimon)."""
    return memory_bytes(schema.options, "target-file-size", PRIMARY_KEY_TARGET_FILE_SIZE)


def target_file_rows(schema: TableSchema) -> int:
    """Where a write (not a compaction, as in Paimon) also rolls (``target-file-row-num``)."""
    return long_option(schema.options, "target-file-row-num", INT64_MAX, 1)


class Encoders:
    """The threads that encode data files: Parquet encoding releases the GIL, so files are
    encoded while the caller's thread sorts the next rows. Of ``threads``, the caller's is
    one: 1 runs every step on it.

    The rows held for encoding are counted in bytes, ``memory`` at most: a quarter for the
    row group a file is gathering (``row_group_bytes``), the rest for the steps waiting or
    encoding; a step that would pass that waits until earlier steps are done (a step
    larger than that runs alone). Rows counted (rather than bytes), four row groups of
    1 KiB rows held 512 MiB at any memory_limit."""

    def __init__(self, threads: int, memory: int = ENCODE_MEMORY):
        self.pool = ThreadPoolExecutor(threads - 1, "merge-core-encode") if threads > 1 else None
        self.row_group_bytes = max(min(memory // 4, ROW_GROUP_BYTES), 1)
        self._room = memory - self.row_group_bytes
        self._held = 0  # bytes of the steps submitted and not done
        self._changed = threading.Condition()

    def submit(self, step: Callable[..., Any], *args: Any, size: int = 0) -> Future[Any]:
        """Runs ``step(*args)``, a step holding ``size`` bytes of rows, once there is room."""
        if self.pool is None:
            done: Future[Any] = Future()
            try:
                done.set_result(step(*args))
            except BaseException as e:  # noqa: BLE001 - handed to whoever takes the result
                done.set_exception(e)
            return done
        with self._changed:
            self._changed.wait_for(lambda: self._held == 0 or self._held + size <= self._room)
            self._held += size
        future = self.pool.submit(step, *args)
        future.add_done_callback(lambda _: self._release(size))
        return future

    def _release(self, size: int) -> None:
        with self._changed:
            self._held -= size
            self._changed.notify_all()

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True)

    def __enter__(self) -> Encoders:
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()


# Paimon's Parquet codecs (parquet-mr's names, and none) as pyarrow names them; None:
# pyarrow's writer does not have it.
PARQUET_CODECS = {
    "none": "none",
    "uncompressed": "none",
    "snappy": "snappy",
    "gzip": "gzip",
    "brotli": "brotli",
    "lz4": "lz4",
    "zstd": "zstd",
    "lzo": None,
    "lz4_raw": None,
}


def parquet_compression(options: dict[str, str], changelog: bool = False) -> tuple[str, int | None]:
    """The codec of new data files (``file.compression``), or of changelog files
    (``changelog-file.compression``, by default the same), as pyarrow names it, and its
    level (``file.compression.zstd-level``, for zstd)."""
    key = "changelog-file.compression" if changelog and "changelog-file.compression" in options else "file.compression"
    name = options.get(key, "zstd").strip().lower()
    if name not in PARQUET_CODECS:
        raise InvalidInputError(
            f"option '{key}': {name!r} is not a Parquet codec (Paimon's: {', '.join(PARQUET_CODECS)})"
        )
    codec = PARQUET_CODECS[name]
    if codec is None:
        raise UnsupportedFeatureError(
            f"option '{key}' = {name!r}: merge-core's Parquet writer (pyarrow) has no such codec"
        )
    return codec, int_option(options, "file.compression.zstd-level", 1) if codec == "zstd" else None


def _dictionary_columns(schema: TableSchema, file_schema: pa.Schema) -> list[str] | bool:
    """The columns to dictionary-encode. Paimon's Java writer (parquet-mr) encodes every
    column so unless ``parquet.enable.dictionary`` is false; merge-core encodes none
    unless it is true: on the contest data the dictionaries cost a quarter of the
    encoding time and saved 6% of the bytes after zstd. Never worth it: the sequence
    numbers and a one-column key, distinct in every row of a file."""
    if not bool_option(schema.options, "parquet.enable.dictionary"):
        return False
    keys = list(schema.trimmed_keys)
    unique = {SEQUENCE_NUMBER, *(keys + [KEY_PREFIX + k for k in keys] if len(keys) == 1 else [])}
    return [n for n in file_schema.names if n not in unique]


def _comparable(column: pa.Array) -> pa.Array:
    """A key column whose Python values :func:`_binary.encode` takes exactly (timestamps
    as integers of their unit, which Python's datetime would cut to microseconds)."""
    return column.cast(pa.int64()) if pa.types.is_timestamp(column.type) else column


def remove_data_file(root: Location, schema: TableSchema, partition: bytes, bucket: int, f: dict[str, Any]) -> None:
    _delete_file(root, root / Layout(schema).bucket_dir(partition, bucket) / f["_FILE_NAME"])


def _delete_file(root: Location, path: Location) -> None:
    """Removes a data file and the directories it leaves empty."""
    root.store.delete(path.path)
    root.store.remove_empty_dirs(root.path, path.path)


def group_boundaries(groups: pa.Array) -> list[tuple[int, int, int]]:
    """``(group, start, end)`` of each stretch of equal values in a sorted int64 array."""
    values = groups.to_numpy(zero_copy_only=False)
    if len(values) == 0:
        return []
    starts = np.concatenate(([0], np.flatnonzero(values[1:] != values[:-1]) + 1))
    ends = np.append(starts[1:], len(values))
    return [(int(values[s]), int(s), int(e)) for s, e in zip(starts, ends, strict=True)]


class _Dictionary:
    """Numbers the distinct values of a column as batches arrive (vectorised per batch)."""

    def __init__(self, type: pa.DataType):
        self.values = pa.array([], type)

    def codes(self, column: pa.Array) -> pa.Array:
        new = pc.unique(column)
        if len(self.values):
            new = new.filter(pc.invert(pc.is_in(new, value_set=self.values, skip_nulls=False)))
        if len(new):
            self.values = pa.concat_arrays([self.values, new])
        return pc.index_in(column, value_set=self.values, skip_nulls=False)


class _Partitions:
    """Numbers the partitions met in one write and remembers their values."""

    def __init__(self, schema: pa.Schema, columns: list[str]):
        self.columns = columns
        self.types = [schema.field(c).type for c in columns]
        self.per_column = [_Dictionary(t) for t in self.types]
        self.combined = _Dictionary(pa.string())

    def numbers(self, batch: pa.RecordBatch) -> np.ndarray:
        if not self.columns:
            return np.zeros(batch.num_rows, dtype=np.int64)
        codes = [d.codes(batch.column(c)) for d, c in zip(self.per_column, self.columns, strict=True)]
        if len(codes) > 1:  # one number per combination of the columns' numbers
            codes = [self.combined.codes(pc.binary_join_element_wise(*[c.cast(pa.string()) for c in codes], "/"))]
        return codes[0].to_numpy(zero_copy_only=False).astype(np.int64)

    def codes(self, number: int) -> list[int]:
        """Each column's code in partition ``number``."""
        if len(self.columns) == 1:
            return [number]
        return [int(c) for c in self.combined.values[number].as_py().split("/")]

    def values(self, number: int) -> tuple[Any, ...]:
        """The partition values of partition ``number``."""
        if not self.columns:
            return ()
        return tuple(_comparable(d.values)[c].as_py() for d, c in zip(self.per_column, self.codes(number), strict=True))


# Widenings a write accepts without asking: every value of the source type has exactly one
# value of the target type. Anything else is refused, never cast.
def _widens(source: pa.DataType, target: pa.DataType) -> bool:
    if source == target or pa.types.is_null(source):
        return True
    t = pa.types
    ints = [pa.int8(), pa.int16(), pa.int32(), pa.int64()]
    if t.is_signed_integer(source) and t.is_signed_integer(target):
        return ints.index(source) <= ints.index(target)
    if t.is_unsigned_integer(source) and t.is_signed_integer(target):
        return source.bit_width < target.bit_width
    if t.is_float32(source) and t.is_float64(target):
        return True
    strings = (t.is_string, t.is_large_string, t.is_string_view)
    binaries = (t.is_binary, t.is_large_binary, t.is_binary_view)
    for family in (strings, binaries):
        if any(f(source) for f in family) and any(f(target) for f in family):
            return True
    if t.is_timestamp(source) and t.is_timestamp(target):
        units = ["s", "ms", "us", "ns"]
        return source.tz == target.tz and units.index(source.unit) <= units.index(target.unit)
    if t.is_decimal(source) and t.is_decimal(target):
        return source.scale == target.scale and source.precision <= target.precision
    if t.is_dictionary(source):
        return _widens(source.value_type, target)
    return False


def bucket_ids(schema: TableSchema, batch: pa.RecordBatch) -> pa.Int32Array:
    """Each row's bucket: Paimon's hash of its bucket key (``batch`` in the table's types)."""
    return _native.paimon_bucket_ids(batch, list(schema.bucket_keys), int(schema.options["bucket"]))


def conform(batch: pa.RecordBatch, schema: pa.Schema, row_kind: str | None) -> pa.RecordBatch:
    """The table's columns of ``batch`` (any order) in the table's types, plus
    ``_VALUE_KIND`` when the data has row kinds. Only lossless widenings are made."""
    names = set(batch.schema.names)
    missing = [n for n in schema.names if n not in names]
    extra = sorted(names - set(schema.names) - {row_kind})
    if missing or extra:
        problems = [f"lacks the table's columns {', '.join(missing)}"] if missing else []
        if extra:
            hint = " (a column of row kinds? pass it as row_kind)" if row_kind is None else ""
            problems.append(f"has columns the table does not: {', '.join(extra)}{hint}")
        raise InvalidInputError(f"the data does not match the table: it {' and '.join(problems)}")
    if row_kind is not None and row_kind not in names:
        raise InvalidInputError(f"no row kind column '{row_kind}' in the data")
    columns = []
    for f in schema:
        column = batch.column(f.name)
        if column.type != f.type:
            if not _widens(column.type, f.type) and not _same_nested(column.type, f.type):
                raise InvalidInputError(
                    f"column '{f.name}' has type {column.type}, the table's is {f.type}; "
                    "only lossless widenings are made (cast the data first)"
                )
            column = column.cast(f.type)
        if not f.nullable and column.null_count:
            raise InvalidInputError(f"column '{f.name}' is NOT NULL in the table (a key) but the data has nulls")
        columns.append(column)
    out = pa.RecordBatch.from_arrays(columns, schema=schema.remove_metadata())
    if row_kind is None:
        return out
    return out.append_column(pa.field(VALUE_KIND, pa.int8(), nullable=False), kind_codes(batch.column(row_kind)))


def _same_nested(source: pa.DataType, target: pa.DataType) -> bool:
    """Nested types that differ only in field names or nullability (``item`` vs ``element``)."""
    nested = (pa.types.is_list, pa.types.is_large_list, pa.types.is_map, pa.types.is_struct)
    if not any(f(source) for f in nested) or type(source) is not type(target):
        return False
    if source.num_fields != target.num_fields:
        return False
    return all(
        _widens(source.field(i).type, target.field(i).type) or _same_nested(source.field(i).type, target.field(i).type)
        for i in range(source.num_fields)
    )


def kind_codes(column: pa.Array) -> pa.Array:
    """Row kinds (``+I``, ``-U``, ``+U``, ``-D`` or codes 0..3) as int8 codes."""
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        codes = pc.index_in(column, value_set=pa.array(KIND_NAMES))
    elif pa.types.is_integer(column.type):
        codes = column
    else:
        raise InvalidInputError(f"row kinds must be strings like '+I' or codes 0..3, got type {column.type}")
    if codes.null_count or (len(codes) and (pc.min(codes).as_py() < 0 or pc.max(codes).as_py() > 3)):
        raise InvalidInputError("row kinds must be '+I', '-U', '+U', '-D' or codes 0..3 (and not null)")
    return codes.cast(pa.int8())
