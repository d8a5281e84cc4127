"""``mc.Table``: a primary-key table of sorted runs on a filesystem, merged on read."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pyarrow as pa

from .. import _native
from .._inputs import as_stream_source, batches_of, column_names
from .._native import Stream
from .._options import MergeSpec, merge_spec
from .._sort import _native_options
from ..errors import CommitConflictError, InvalidInputError, TableExistsError
from . import _format as fmt
from ._files import RunWriter, open_run
from ._format import KIND, SEQ, DataFile, Snapshot, TableMeta
from ._prune import DynamicFilter, select_files
from ._write import GROUP, remove_files, write_runs

PARTITION_TYPES = (
    pa.types.is_integer,
    pa.types.is_string,
    pa.types.is_large_string,
    pa.types.is_date,
    pa.types.is_boolean,
)
RESERVED = (SEQ, KIND, GROUP)
READ_BATCH_ROWS = 64 * 1024


@dataclass(frozen=True)
class ReadPlan:
    groups: list[list[DataFile]]  # each bucket's runs, oldest first
    schema: pa.Schema  # the file columns read
    columns: list[str]  # the output columns
    stats: dict[str, int]  # what was pruned


class Table:
    """A primary-key table: each write adds one sorted run per (partition, bucket) it
    touches, and a read merges the runs of each bucket with the table's merge function.

    >>> import pyarrow as pa, merge_core as mc, tempfile
    >>> path = tempfile.mkdtemp() + "/t"
    >>> schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    >>> t = mc.Table.create(path, schema, key="id", buckets=2)
    >>> t.write(pa.table({"id": [1, 2], "name": ["a", "b"]}))["snapshot"]
    1
    >>> t.delete(pa.table({"id": [1]}))["snapshot"]
    2
    >>> t.write(pa.table({"id": [2, 3], "name": ["B", "c"]}))["snapshot"]
    3
    >>> t.read().read_all().sort_by("id").to_pydict()
    {'id': [2, 3], 'name': ['B', 'c']}
    >>> t.read(snapshot=1).read_all().sort_by("id").to_pydict()
    {'id': [1, 2], 'name': ['a', 'b']}
    """

    def __init__(self, path: Path, meta: TableMeta) -> None:
        self._root = path
        self._meta = meta

    # -- creating and opening -------------------------------------------------------

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        schema: pa.Schema,
        key: str | Iterable[str],
        partition_by: str | Iterable[str] = (),
        buckets: int = 4,
        merge: MergeSpec = "deduplicate",
        sequence: str | Iterable[str] | None = None,
    ) -> Table:
        """Creates an empty table at ``path`` (a new or empty directory).

        Args:
            schema: the table's columns (key columns become non-nullable, others nullable).
            key: the primary key; each key has at most one row per partition.
            partition_by: columns whose values split the table into directories
                (integer, string, date or boolean columns).
            buckets: runs per partition; a key's bucket is a stable hash of the key.
            merge: how the versions of a key fold (as in :func:`merge_core.merge`).
            sequence: columns ordering the versions of a key (default: write order).
        """
        if not isinstance(schema, pa.Schema):
            raise InvalidInputError(f"schema must be a pyarrow.Schema, got {type(schema).__name__}")
        keys, partitions, sequences = (
            column_names(v, w) for v, w in ((key, "key"), (partition_by, "partition_by"), (sequence, "sequence"))
        )
        _check_columns(schema, keys, partitions, sequences)
        if not isinstance(buckets, int) or isinstance(buckets, bool) or not 1 <= buckets <= 1 << 16:
            raise InvalidInputError(f"buckets must be an integer from 1 to 65536, got {buckets!r}")
        fields = [f.with_nullable(f.name not in keys) for f in schema]
        meta = TableMeta(
            pa.schema(fields, metadata=schema.metadata), keys, partitions, buckets, merge_spec(merge), sequences
        )
        _check_merge(meta)
        root = Path(path)
        if (fmt.meta_dir(root) / "table.json").exists():
            raise TableExistsError(f"a table already exists at {root}")
        if root.exists() and any(p.name != "_meta" for p in root.iterdir()):
            raise InvalidInputError(f"{root} is not empty; a table needs a new or empty directory")
        fmt.create_meta(root, meta)
        return cls(root, meta)

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> Any:
        """Opens the table at ``path``: a Paimon table directory (``<warehouse>/<db>.db/<table>``,
        read as a :class:`merge_core.paimon.PaimonTable`) or a merge-core table."""
        root = Path(path)
        if (root / "schema").is_dir():
            from ..paimon import PaimonTable

            return PaimonTable.open(root)
        return cls(root, fmt.load_meta(root))

    # -- what the table is ----------------------------------------------------------

    @property
    def path(self) -> Path:
        return self._root

    @property
    def schema(self) -> pa.Schema:
        return self._meta.schema

    @property
    def key(self) -> list[str]:
        return list(self._meta.key)

    @property
    def partition_by(self) -> list[str]:
        return list(self._meta.partition_by)

    @property
    def buckets(self) -> int:
        return self._meta.buckets

    @property
    def merge(self) -> dict[str, Any]:
        """The merge function's spec."""
        return dict(self._meta.merge)

    @property
    def sequence(self) -> list[str]:
        return list(self._meta.sequence)

    def snapshot(self, snapshot: int | None = None) -> Snapshot:
        """A committed snapshot (the latest by default): its id and live files."""
        return fmt.load_snapshot(self._root, snapshot)

    def snapshots(self) -> list[int]:
        """The ids of the snapshots kept, oldest first."""
        return fmt.snapshot_ids(self._root)

    def info(self) -> dict[str, Any]:
        """What the table holds now: its definition, snapshot, files, rows and runs."""
        snap = self.snapshot()
        runs_per_bucket: dict[tuple[Any, int], int] = {}
        for f in snap.files:
            runs_per_bucket[(f.partition, f.bucket)] = runs_per_bucket.get((f.partition, f.bucket), 0) + 1
        return {
            "path": str(self._root),
            "columns": {f.name: str(f.type) for f in self.schema},
            "key": self.key,
            "partition_by": self.partition_by,
            "buckets": self.buckets,
            "merge": self.merge,
            "sequence": self.sequence,
            "snapshot": snap.id,
            "snapshots": len(self.snapshots()),
            "partitions": len({f.partition for f in snap.files}),
            "files": len(snap.files),
            "stored_rows": sum(f.rows for f in snap.files),
            "bytes": sum(f.bytes for f in snap.files),
            "max_runs_per_bucket": max(runs_per_bucket.values(), default=0),
        }

    # -- writing --------------------------------------------------------------------

    def write(
        self,
        data: Any,
        row_kind: str | None = None,
        memory_limit: int | str = "256MiB",
        spill_dir: str | os.PathLike[str] | None = None,
    ) -> dict[str, int]:
        """Writes ``data`` (any Arrow-tabular object with the table's columns) as one commit.

        Rows are hashed to buckets by key, sorted and folded within ``memory_limit``
        (spilling to ``spill_dir`` if they must), and written as one new run per
        (partition, bucket). ``row_kind`` names a column of row kinds (``+I``, ``-U``,
        ``+U``, ``-D`` or 0..3), which is not stored as a column. Nothing is visible to
        readers until the commit; if the write fails, its files are removed.

        Returns the new snapshot's id, the rows stored and the files written.
        """
        return self._commit_written(self._write_runs(data, row_kind, memory_limit, spill_dir))

    def _write_runs(self, data: Any, row_kind: str | None, memory_limit: int | str, spill_dir: Any) -> list[DataFile]:
        """Writes new runs without committing them (Spark tasks do this; the driver commits)."""
        return write_runs(self._root, self._meta, data, row_kind, memory_limit, spill_dir)

    def _commit_written(self, files: list[DataFile]) -> dict[str, int]:
        """Commits runs written by :meth:`_write_runs` as one snapshot."""

        def make(latest: Snapshot) -> Snapshot:
            numbered, next_sequence = fmt.with_sequences(files, latest.next_sequence)
            return Snapshot(latest.id + 1, latest.id, "write", latest.files + tuple(numbered), next_sequence)

        snapshot = self._commit(make, files)
        return {"snapshot": snapshot.id, "rows": sum(f.rows for f in files), "files": len(files)}

    def delete(self, keys: Any, memory_limit: int | str = "256MiB") -> dict[str, int]:
        """Deletes the rows of the given keys: ``keys`` holds the key (and partition) columns."""
        source = as_stream_source(keys)
        reader = batches_of(source)[1] if source is not None else iter(())
        needed = [*self._meta.partition_by, *self._meta.key]

        def as_deletes(batch: pa.RecordBatch) -> pa.RecordBatch:
            missing = [c for c in needed if c not in batch.schema.names]
            if missing:
                raise InvalidInputError(f"deleting needs the key and partition columns; missing {missing}")
            n = batch.num_rows
            columns = [batch.column(f.name) if f.name in needed else pa.nulls(n, f.type) for f in self.schema]
            kinds = pa.nulls(n, pa.int8()).fill_null(3)  # -D
            return pa.RecordBatch.from_arrays([*columns, kinds], names=[*self.schema.names, KIND])

        schema = self.schema.append(pa.field(KIND, pa.int8()))
        deletes = pa.RecordBatchReader.from_batches(schema, (as_deletes(b) for b in reader))
        return self.write(deletes, row_kind=KIND, memory_limit=memory_limit)

    def compact(self, full: bool = False) -> dict[str, int]:
        """Merges runs of each bucket into one, as one commit.

        A partial compaction (the default) merges the runs written since the last
        compaction and keeps deletes, since older runs may still hold the deleted keys.
        A full compaction merges every run of a bucket and drops deletes, except in a
        table with sequence columns: there a later write may carry an older sequence
        number, and only the kept delete stops it from bringing a deleted key back.
        """
        keep_deletes = not full or bool(self._meta.sequence)
        base = self.snapshot()
        added: list[DataFile] = []
        removed: list[DataFile] = []
        try:
            for files in _bucket_groups(base.files):
                inputs = files if full else [f for f in files if f.level == 0]
                if full and len(files) == 1 and files[0].level == 2 and (keep_deletes or not files[0].retracts):
                    continue
                if not full and len(inputs) < 2:
                    continue
                added.extend(self._merge_into_run(inputs, level=2 if full else 1, keep_deletes=keep_deletes))
                removed.extend(inputs)
        except BaseException:
            remove_files(self._root, added)
            raise
        gone = {f.path for f in removed}

        def make(latest: Snapshot) -> Snapshot:
            live = {f.path for f in latest.files}
            if not gone <= live:
                raise CommitConflictError("another compaction replaced some of these runs first; compact again")
            kept = tuple(f for f in latest.files if f.path not in gone)
            return Snapshot(latest.id + 1, latest.id, "compact", kept + tuple(added), latest.next_sequence)

        if not removed:
            return {"snapshot": base.id, "runs_merged": 0, "files_written": 0}
        snapshot = self._commit(make, added)
        return {"snapshot": snapshot.id, "runs_merged": len(removed), "files_written": len(added)}

    def _merge_into_run(self, inputs: list[DataFile], level: int, keep_deletes: bool) -> list[DataFile]:
        """One bucket's ``inputs`` merged into one run (none if every row was deleted)."""
        schema = self._meta.file_schema()
        stream = self._merge([inputs], schema, None, partial=keep_deletes, stats={})
        first = inputs[0]
        writer = RunWriter(self._root, self._meta, first.partition, first.bucket, level)
        try:
            for batch in stream:
                writer.write(batch)
            written = writer.close()
        except BaseException:
            writer.abort()
            raise
        if written.rows == 0:
            remove_files(self._root, [written])
            return []
        return [replace(written, max_sequence=max(f.max_sequence for f in inputs))]

    def _commit(self, make: Any, written: list[DataFile]) -> Snapshot:
        try:
            return fmt.commit(self._root, make)
        except BaseException:
            remove_files(self._root, written)  # never committed: nobody can see them
            raise

    # -- reading --------------------------------------------------------------------

    def read(
        self,
        columns: Sequence[str] | None = None,
        partitions: Mapping[str, Any] | None = None,
        dynamic_filter: DynamicFilter | Sequence[DynamicFilter] | None = None,
        snapshot: int | None = None,
        batch_size: int = READ_BATCH_ROWS,
        threads: int | None = None,
    ) -> Stream:
        """The table's rows as a lazy :class:`Stream`, one row per live key.

        Args:
            columns: the columns to return (all by default).
            partitions: a static filter, ``{column: value or list of values}``.
            dynamic_filter: one or more :class:`DynamicFilter` pruning partitions by the
                values of a build side.
            snapshot: an older snapshot's id (the latest by default).
            threads: buckets merged at once (default: one per CPU); the output keeps
                bucket order whatever the number.

        The stream's ``stats`` add what was pruned: ``partitions_total``,
        ``partitions_read``, ``partitions_pruned``, ``files_total``, ``files_read``,
        ``files_pruned``, ``dynamic_filters_applied``, and the ``snapshot`` read.
        """
        if not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidInputError(f"batch_size must be a positive integer, got {batch_size!r}")
        if threads is not None and (not isinstance(threads, int) or threads < 1):
            raise InvalidInputError(f"threads must be a positive integer, got {threads!r}")
        plan = self._plan_read(columns, partitions, dynamic_filter, snapshot)
        threads = threads or os.cpu_count() or 1
        return self._merge(plan.groups, plan.schema, plan.columns, False, plan.stats, batch_size, threads)

    def _plan_read(
        self,
        columns: Sequence[str] | None,
        partitions: Mapping[str, Any] | None,
        dynamic_filter: DynamicFilter | Sequence[DynamicFilter] | None,
        snapshot: int | None,
    ) -> ReadPlan:
        """What a read merges: the groups of runs left after pruning, and the columns."""
        wanted = self.schema.names if columns is None else column_names(columns, "columns")
        unknown = [c for c in wanted if c not in self.schema.names]
        if unknown:
            raise InvalidInputError(f"no columns {unknown} in the table (it has {self.schema.names})")
        snap = self.snapshot(snapshot)
        files, stats = select_files(self._meta, snap.files, partitions, dynamic_filter)
        needed = {*self._meta.key, *self._meta.sequence, *wanted, *self._meta.merge.get("fields", {}), SEQ, KIND}
        schema = pa.schema([f for f in self._meta.file_schema() if f.name in needed])
        return ReadPlan(list(_bucket_groups(files)), schema, wanted, {**stats, "snapshot": snap.id})

    def _merge(
        self,
        groups: list[list[DataFile]],
        schema: pa.Schema,
        columns: list[str] | None,
        partial: bool,
        stats: dict[str, int],
        batch_size: int = READ_BATCH_ROWS,
        threads: int = 1,
    ) -> Stream:
        """Each group's runs (one bucket's, oldest first) merged by the table's merge function."""
        runs = [[open_run(self._root, f, schema) for f in files] for files in groups]
        meta = self._meta
        extra = list(stats.items())
        # `_seq` orders versions after the user's sequence columns, as Paimon's _SEQUENCE_NUMBER.
        return _native.merge_groups(
            schema,
            runs,
            meta.key,
            meta.sequence,
            False,
            SEQ,
            KIND,
            meta.merge,
            batch_size,
            columns,
            partial,
            extra,
            threads,
        )

    # -- housekeeping ---------------------------------------------------------------

    def expire(self, keep_snapshots: int = 1, orphan_age: float = 3600.0) -> dict[str, int]:
        """Removes snapshots older than the newest ``keep_snapshots`` and the data files
        no kept snapshot uses: at once if an expired snapshot used them, else (files of
        failed writes) once they are ``orphan_age`` seconds old, so that the files of a
        write still in progress are never taken."""
        if not isinstance(keep_snapshots, int) or keep_snapshots < 1:
            raise InvalidInputError(f"keep_snapshots must be at least 1, got {keep_snapshots!r}")
        ids = self.snapshots()
        kept, expired = ids[-keep_snapshots:], ids[:-keep_snapshots]
        live = {f.path for i in kept for f in self.snapshot(i).files}
        once_live = {f.path for i in expired for f in self.snapshot(i).files}
        now = time.time()
        removed = removed_bytes = 0
        for path in sorted((self._root / "data").rglob("*.parquet")):
            relative = path.relative_to(self._root).as_posix()
            stat = path.stat()
            if relative not in live and (relative in once_live or now - stat.st_mtime > orphan_age):
                path.unlink(missing_ok=True)
                removed += 1
                removed_bytes += stat.st_size
        for i in expired:
            fmt.snapshot_path(self._root, i).unlink(missing_ok=True)
        for tmp in fmt.meta_dir(self._root).glob(".*.tmp"):
            if now - tmp.stat().st_mtime > orphan_age:
                tmp.unlink(missing_ok=True)
        _remove_empty_dirs(self._root / "data")
        return {"snapshots_removed": len(expired), "files_removed": removed, "bytes_removed": removed_bytes}

    def __repr__(self) -> str:
        return f"<merge_core.Table {self._root} key={self.key} partition_by={self.partition_by} buckets={self.buckets}>"


def _check_columns(schema: pa.Schema, keys: list[str], partitions: list[str], sequences: list[str]) -> None:
    names = schema.names
    if not keys:
        raise InvalidInputError("a table needs a key")
    reserved = [n for n in names if n in RESERVED]
    if reserved:
        raise InvalidInputError(f"column names {reserved} are reserved by merge-core")
    if len(set(names)) != len(names):
        raise InvalidInputError("the schema has duplicate column names")
    for what, cols in (("key", keys), ("partition_by", partitions), ("sequence", sequences)):
        unknown = [c for c in cols if c not in names]
        if unknown:
            raise InvalidInputError(f"{what} names columns {unknown} that the schema does not have ({names})")
    for c in sequences:
        type_ = schema.field(c).type
        if not (pa.types.is_integer(type_) or pa.types.is_date(type_) or pa.types.is_timestamp(type_)):
            raise InvalidInputError(f"sequence column '{c}' has type {type_}; use an integer, date or timestamp")
    for c in partitions:
        type_ = schema.field(c).type
        if not any(check(type_) for check in PARTITION_TYPES):
            raise InvalidInputError(f"partition column '{c}' has type {type_}; use an integer, string, date or boolean")


def _check_merge(meta: TableMeta) -> None:
    """Fails now, not at the first write, if the merge function does not fit the schema."""
    options = _native_options(meta.key, meta.sequence, KIND, meta.merge, "1MiB", None, "none", 2, None, 1)
    try:
        _native.SortBuffer(meta.file_schema(), options).close()
    except ValueError as e:
        raise InvalidInputError(f"the merge function does not fit the table: {e}") from e


def _bucket_groups(files: Iterable[DataFile]) -> Iterable[list[DataFile]]:
    """The files of each (partition, bucket), oldest run first, in a stable order."""
    groups: dict[tuple[Any, int], list[DataFile]] = {}
    for f in files:
        groups.setdefault((f.partition, f.bucket), []).append(f)
    for _, group in sorted(groups.items(), key=lambda kv: (_sortable(kv[0][0]), kv[0][1])):
        yield sorted(group, key=lambda f: f.max_sequence)


def _sortable(partition: tuple[str | None, ...]) -> tuple[tuple[bool, str], ...]:
    return tuple((v is None, v or "") for v in partition)


def _remove_empty_dirs(top: Path) -> None:
    if not top.exists():
        return
    for directory in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        try:
            directory.rmdir()
        except OSError:
            pass  # not empty
