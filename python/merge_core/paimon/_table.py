"""A Paimon primary-key table opened for reading: ``plan`` picks the files of a snapshot
and groups them into splits, ``read_split`` merges one split in Rust, ``read`` does both.
Spark, the CLI and ``read`` use the same two steps."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from .. import _native
from .._inputs import as_stream_source, batches_of, column_names
from .._native import Stream
from .._options import merge_spec
from .._paimon_options import PaimonMerge, merge_from_paimon_options, paimon_options
from ..errors import InvalidInputError, TableExistsError, TableIOError, TableNotFoundError, UnsupportedFeatureError
from ..table._prune import DynamicFilter
from ._commit import CommitMessage, Committer
from ._expire import expire_snapshots
from ._meta import DataFile, Snapshot, latest_snapshot_id, live_entries, live_files, snapshot_ids, write_new
from ._plan import SEQUENCE_NUMBER, VALUE_KIND, Plan, Planner, Split
from ._schema import TableSchema, load_schema, schema_ids, schema_json
from ._write import DataFileWriter, TableWrite, remove_data_file

READ_BATCH_ROWS = 64 * 1024


class PaimonTable:
    """A Paimon primary-key table at ``path`` (``<warehouse>/<db>.db/<table>``)."""

    def __init__(self, root: Path, schema: TableSchema) -> None:
        self._root = root
        self._schema = schema
        if not schema.primary_keys:
            raise UnsupportedFeatureError(f"{root} is an append table: merge-core reads primary-key tables")
        self._setup: PaimonMerge = merge_from_paimon_options(schema.options)

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        schema: pa.Schema,
        key: str | Sequence[str],
        partition_by: str | Sequence[str] = (),
        buckets: int = 4,
        merge: Any = "deduplicate",
        sequence: str | Sequence[str] | None = None,
        sequence_order: str = "ascending",
        options: Mapping[str, str] | None = None,
    ) -> PaimonTable:
        """Creates an empty Paimon table at ``path`` (a new or empty directory): its
        ``schema/schema-0`` with the options that make Paimon merge as ``merge`` does."""
        return cls(*_create(Path(path), schema, key, partition_by, buckets, merge, sequence, sequence_order, options))

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> PaimonTable:
        root = Path(path)
        ids = schema_ids(root)
        if not ids:
            raise TableNotFoundError(f"no Paimon table at {root} (it has no schema/schema-N file)")
        return cls(root, load_schema(root, ids[-1]))

    # -- what the table is ----------------------------------------------------------

    @property
    def path(self) -> Path:
        return self._root

    @property
    def schema(self) -> pa.Schema:
        """The table's columns (the latest schema), each with its Paimon field id."""
        return self._schema.arrow

    @property
    def key(self) -> list[str]:
        return list(self._schema.primary_keys)

    @property
    def partition_by(self) -> list[str]:
        return list(self._schema.partition_keys)

    @property
    def buckets(self) -> int:
        """The fixed number of buckets (-1: dynamic buckets, -2: postponed)."""
        return int(self._schema.options.get("bucket", "-1"))

    @property
    def merge(self) -> Any:
        return self._setup.merge

    @property
    def sequence(self) -> list[str]:
        return list(self._setup.sequence)

    @property
    def options(self) -> dict[str, str]:
        return dict(self._schema.options)

    def snapshots(self) -> list[int]:
        return snapshot_ids(self._root)

    def snapshot(self, snapshot: int | None = None) -> Snapshot:
        if snapshot is None:
            snapshot = latest_snapshot_id(self._root)
            if snapshot is None:
                raise TableNotFoundError(f"the table at {self._root} has no snapshot yet")
        return Snapshot.load(self._root, snapshot)

    def info(self) -> dict[str, Any]:
        latest = latest_snapshot_id(self._root)
        files = live_files(self._root, self.snapshot()) if latest is not None else []
        return {
            "format": "paimon",
            "path": str(self._root),
            "schema": {f.name: str(f.type) for f in self.schema},
            "key": self.key,
            "partition_by": self.partition_by,
            "buckets": self.buckets,
            "merge": merge_spec(self.merge),
            "sequence": self.sequence,
            "snapshot": latest,
            "snapshots": len(self.snapshots()),
            "files": len(files),
            "rows": sum(f.rows for f in files),
            "bytes": sum(f.size for f in files),
        }

    def __repr__(self) -> str:
        return f"<merge_core Paimon table {self._root} key={self.key} partition_by={self.partition_by}>"

    # -- writing --------------------------------------------------------------------

    def new_write(
        self,
        row_kind: str | None = None,
        memory_limit: int | str = "256MiB",
        spill_dir: str | os.PathLike[str] | None = None,
    ) -> TableWrite:
        """A write of any number of batches, sorted within ``memory_limit`` (spilling to
        ``spill_dir``): ``write(data)`` as often as needed, then ``prepare_commit()``
        gives the messages for :meth:`commit`. ``row_kind`` names a column of row kinds."""
        return TableWrite(self._root, self._schema, self._setup, row_kind, memory_limit, spill_dir)

    def commit(self, messages: Sequence[CommitMessage]) -> int | None:
        """Commits what writes and compactions prepared, as Paimon does: the appends as
        one snapshot, the compactions as the next; returns the last snapshot's id (None
        if there was nothing to commit). If the commit fails, its files are removed."""
        try:
            return Committer(self._root, self._schema).commit(messages)
        except BaseException:
            for m in messages:
                for f in m.data_files():
                    remove_data_file(self._root, self._schema, m.partition, m.bucket, f)
            raise

    def write(
        self,
        data: Any,
        row_kind: str | None = None,
        memory_limit: int | str = "256MiB",
        spill_dir: str | os.PathLike[str] | None = None,
    ) -> dict[str, int | None]:
        """Writes ``data`` (any Arrow-tabular object with the table's columns) as one
        commit: rows go to their buckets by Paimon's bucket function and become one
        level-0 file per (partition, bucket). Returns the snapshot, rows and files."""
        with self.new_write(row_kind, memory_limit, spill_dir) as write:
            write.write(data)
            messages = write.prepare_commit()
        snapshot = self.commit(messages)
        rows = sum(f["_ROW_COUNT"] for m in messages for f in m.new_files)
        return {"snapshot": snapshot, "rows": rows, "files": len(messages)}

    def delete(self, keys: Any, memory_limit: int | str = "256MiB") -> dict[str, int | None]:
        """Deletes the rows of the given keys: ``keys`` holds the primary key columns."""
        source = as_stream_source(keys)
        reader = batches_of(source)[1] if source is not None else iter(())
        schema = self.schema
        needed = set(self.key)

        def as_deletes(batch: pa.RecordBatch) -> pa.RecordBatch:
            missing = [c for c in self.key if c not in batch.schema.names]
            if missing:
                raise InvalidInputError(f"deleting needs the primary key columns; missing {missing}")
            required = [f.name for f in schema if f.name not in needed and not f.nullable]
            if required:
                raise InvalidInputError(f"deleting from a table whose value columns {required} are NOT NULL")
            n = batch.num_rows
            columns = [batch.column(f.name) if f.name in needed else pa.nulls(n, f.type) for f in schema]
            kinds = pa.array(np.full(n, 3, np.int8))  # -D
            return pa.RecordBatch.from_arrays([*columns, kinds], names=[*schema.names, VALUE_KIND])

        out_schema = pa.schema([f.remove_metadata() for f in schema]).append(pa.field(VALUE_KIND, pa.int8()))
        deletes = pa.RecordBatchReader.from_batches(out_schema, (as_deletes(b) for b in reader))
        return self.write(deletes, row_kind=VALUE_KIND, memory_limit=memory_limit)

    def compact(self, full: bool = False, memory_limit: int | str = "256MiB") -> dict[str, int | None]:
        """Merges the files of each bucket into one sorted run at the top level, as one
        COMPACT commit. ``full``: every bucket not already one file at the top level;
        otherwise only buckets with at least ``num-sorted-run.compaction-trigger`` (5)
        sorted runs. Deleted keys are dropped, as Paimon's full compaction drops them."""
        if _deletion_vectors(self._schema):
            raise UnsupportedFeatureError("compacting a table with deletion vectors is not supported yet")
        latest = latest_snapshot_id(self._root)
        if latest is None:
            return {"snapshot": None, "files_merged": 0, "files_written": 0}
        snap = self.snapshot(latest)
        schema = self._schema_of(snap)
        top = _top_level(schema)
        entries = live_entries(self._root, snap)
        by_bucket: dict[tuple[bytes, int], list[dict[str, Any]]] = {}
        for e in entries:
            by_bucket.setdefault((e["_PARTITION"], e["_BUCKET"]), []).append(e)
        trigger = int(schema.options.get("num-sorted-run.compaction-trigger", "5"))
        chosen = {k: v for k, v in by_bucket.items() if _needs_compaction(v, top, full, trigger)}
        columns = tuple(schema.arrow.names)
        planner = Planner(self._root, snap, schema, columns, _read_columns(schema, self._setup, list(columns)))
        messages: list[CommitMessage] = []
        try:
            for (partition, bucket), group in sorted(chosen.items()):
                after = self._merge_bucket(planner, [DataFile.of(e) for e in group], top)
                before = tuple(e["_FILE"] for e in group)
                total = group[0]["_TOTAL_BUCKETS"]
                messages.append(CommitMessage(partition, bucket, total, compact_before=before, compact_after=after))
            snapshot = self.commit(messages) if messages else None
        except BaseException:
            for m in messages:
                for f in m.compact_after:
                    remove_data_file(self._root, self._schema, m.partition, m.bucket, f)
            raise
        merged = sum(len(m.compact_before) for m in messages)
        return {
            "snapshot": snapshot or latest,
            "files_merged": merged,
            "files_written": sum(len(m.compact_after) for m in messages),
        }

    def _merge_bucket(self, planner: Planner, files: list[DataFile], level: int) -> tuple[dict[str, Any], ...]:
        """One bucket's files merged (deletes dropped) into one new file at ``level``."""
        snap, schema, columns = planner.snapshot, planner.schema, planner.columns
        splits = planner.splits(files, None)
        sections = tuple(section for split in splits for section in split.sections)
        first = splits[0]
        whole = Split(snap.id, schema.id, columns, first.partition, first.bucket, sections)
        stream = self._read([whole], schema, list(columns), READ_BATCH_ROWS, 1, {})
        lowest = min(f.min_sequence for f in files)
        writer = DataFileWriter(self._root, schema, first.partition, first.bucket, level, lowest)
        try:
            for batch in stream:
                writer.write(batch)
            if writer.rows == 0:  # every key deleted
                writer.abort()
                return ()
            written = writer.close()
        except BaseException:
            writer.abort()
            raise
        return (written,)

    def expire(self, keep_snapshots: int = 1, orphan_age: float = 3600.0) -> dict[str, int]:
        """Removes snapshots older than the newest ``keep_snapshots``, then the data and
        manifest files no kept snapshot uses: at once if an expired snapshot used them,
        else (files of failed writes) once they are ``orphan_age`` seconds old, so that
        the files of a write in progress are never taken. Index files are kept."""
        if not isinstance(keep_snapshots, int) or isinstance(keep_snapshots, bool) or keep_snapshots < 1:
            raise InvalidInputError(f"keep_snapshots must be at least 1, got {keep_snapshots!r}")
        return expire_snapshots(self._root, self._schema, keep_snapshots, orphan_age)

    # -- reading --------------------------------------------------------------------

    def plan(
        self,
        columns: Sequence[str] | None = None,
        partitions: Mapping[str, Any] | None = None,
        snapshot: int | None = None,
        dynamic_filter: DynamicFilter | Sequence[DynamicFilter] | None = None,
    ) -> Plan:
        """The splits a read of ``columns`` takes, in (partition, bucket, key) order; the
        list's ``stats`` say what was pruned."""
        snap = self.snapshot(snapshot)
        schema = self._schema_of(snap)
        wanted = _wanted(schema, columns)
        if self.buckets == -2:
            raise UnsupportedFeatureError("tables with postponed buckets ('bucket' = -2) are not supported")
        files = live_files(self._root, snap)
        if _skips_level_zero(schema):
            files = [f for f in files if f.level > 0]
        planner = Planner(self._root, snap, schema, tuple(wanted), _read_columns(schema, self._setup, wanted))
        chosen, dynamic_filters = _partition_filter(schema, partitions, dynamic_filter)
        splits = planner.splits(files, chosen)
        stats = {
            "snapshot": snap.id,
            "files_total": len(files),
            "files_read": sum(s.files for s in splits),
            "partitions_total": len({f.partition for f in files}),
            "partitions_read": len({s.partition for s in splits}),
            "splits": len(splits),
            "dynamic_filters_applied": dynamic_filters,
        }
        return Plan(splits, stats)

    def read_split(self, split: Split, batch_size: int = READ_BATCH_ROWS, threads: int = 1) -> Stream:
        """The merged rows of one split, with the columns it was planned for."""
        schema = self._schema if split.schema_id == self._schema.id else load_schema(self._root, split.schema_id)
        stats = {"snapshot": split.snapshot, "files_read": split.files}
        return self._read([split], schema, list(split.columns), batch_size, threads, stats)

    def read(
        self,
        columns: Sequence[str] | None = None,
        partitions: Mapping[str, Any] | None = None,
        dynamic_filter: DynamicFilter | Sequence[DynamicFilter] | None = None,
        snapshot: int | None = None,
        batch_size: int = READ_BATCH_ROWS,
        threads: int | None = None,
    ) -> Stream:
        """The table's rows as a lazy :class:`Stream`, one row per live key, as Paimon's
        batch read returns them (``snapshot``: an older snapshot's id; ``partitions`` and
        ``dynamic_filter`` prune partitions as for :class:`merge_core.Table`). The stream's
        ``stats`` add the ``snapshot`` read, ``files_total``, ``files_read``,
        ``partitions_total``, ``partitions_read`` and ``splits``."""
        if threads is not None and (not isinstance(threads, int) or threads < 1):
            raise InvalidInputError(f"threads must be a positive integer, got {threads!r}")
        snap = self.snapshot(snapshot)
        schema = self._schema_of(snap)
        plan = self.plan(columns, partitions, snap.id, dynamic_filter)
        threads = threads or os.cpu_count() or 1
        return self._read(plan, schema, _wanted(schema, columns), batch_size, threads, plan.stats)

    def read_schema(self, columns: Sequence[str] | None = None, snapshot: int | None = None) -> pa.Schema:
        """The schema of a read of ``columns`` (what :meth:`read` returns), without reading."""
        schema = self._schema_of(self.snapshot(snapshot))
        return self._read([], schema, _wanted(schema, columns), 1, 1, {}).schema

    def _schema_of(self, snap: Snapshot) -> TableSchema:
        return self._schema if snap.schema_id == self._schema.id else load_schema(self._root, snap.schema_id)

    def _read(
        self,
        splits: list[Split],
        schema: TableSchema,
        columns: list[str],
        batch_size: int,
        threads: int,
        stats: dict[str, int],
    ) -> Stream:
        """The splits' sections merged in Rust, each on its own, output in order."""
        if not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidInputError(f"batch_size must be a positive integer, got {batch_size!r}")
        read = _read_columns(schema, self._setup, columns)
        # A partition column may be null (the default partition), even in a primary key.
        read_schema = pa.schema(
            [
                schema.field(c).arrow().with_nullable(c in schema.partition_keys or schema.field(c).nullable)
                for c in read
            ]
            + [pa.field(SEQUENCE_NUMBER, pa.int64(), False), pa.field(VALUE_KIND, pa.int8(), False)]
        )
        groups = [
            [[(f.path, list(f.columns), _positions(f.deleted)) for f in run] for run in section.runs]
            for split in splits
            for section in split.sections
        ]
        setup = self._setup
        return _native.read_paimon(
            read_schema,
            groups,
            list(schema.trimmed_keys),
            list(setup.sequence),
            setup.sequence_order == "descending",
            merge_spec(setup.merge),
            batch_size,
            columns,
            threads,
            list(stats.items()),
        )


def _positions(deleted: np.ndarray | None) -> bytes | None:
    return None if deleted is None else deleted.astype("<u8").tobytes()


def _wanted(schema: TableSchema, columns: Sequence[str] | None) -> list[str]:
    names = schema.arrow.names
    wanted = list(names) if columns is None else column_names(columns, "columns")
    unknown = [c for c in wanted if c not in names]
    if unknown:
        raise InvalidInputError(f"no columns {unknown} in the table (it has {names})")
    return wanted


def _read_columns(schema: TableSchema, setup: PaimonMerge, wanted: list[str]) -> list[str]:
    """The table columns a read of ``wanted`` decodes: those, the key, the sequence
    columns and every column the merge function names, in table order."""
    spec = merge_spec(setup.merge)
    named = set(spec.get("fields", {}))
    for ordering, protected in spec.get("sequence_groups", []):
        named |= {*ordering, *protected}
    if spec.get("default") and spec["function"] == "partial-update":
        named |= {f.name for f in schema.fields}  # a default function applies to every column
    needed = {*wanted, *schema.trimmed_keys, *setup.sequence, *named}
    return [f.name for f in schema.fields if f.name in needed]


def _skips_level_zero(schema: TableSchema) -> bool:
    """A batch read of a table with deletion vectors (unless merged on read), or of a
    first-row table, sees only compacted files: level-0 files become visible once
    compacted, as in Paimon's batch scan."""
    options = {k: v.lower() for k, v in schema.options.items()}
    if options.get("deletion-vectors.enabled", "false") == "true":
        return options.get("deletion-vectors.merge-on-read", "false") != "true"
    return options.get("merge-engine", "deduplicate") == "first-row"


def _partition_filter(
    schema: TableSchema, partitions: Mapping[str, Any] | None, dynamic_filter: Any
) -> tuple[Callable[[tuple], bool] | None, int]:
    """A predicate on partition values for ``{column: value or values}`` and dynamic
    filters (``None``: read every partition), and how many dynamic filters apply."""
    tests = []
    for column, values in (partitions or {}).items():
        values = values if isinstance(values, (list, tuple, set, frozenset)) else [values]
        tests.append((column, _values(schema, column, pa.array(list(values)), strict=True)))
    applied = 0
    filters = [dynamic_filter] if isinstance(dynamic_filter, DynamicFilter) else list(dynamic_filter or [])
    for f in filters:
        values = None if f.values is None else _values(schema, f.partition_column, f.values, strict=False)
        if values is not None:  # a filter that gave up, or whose values do not cast, prunes nothing
            tests.append((f.partition_column, values - {None}))
            applied += 1
    if not tests:
        return None, applied
    tests = [(schema.partition_keys.index(column), allowed) for column, allowed in tests]
    return (lambda row: all(row[i] in allowed for i, allowed in tests)), applied


def _values(schema: TableSchema, column: str, values: pa.Array, strict: bool) -> set | None:
    """``values`` as Python values of partition column ``column`` (as the table decodes
    them), or ``None`` when they do not cast and ``strict`` is off."""
    if column not in schema.partition_keys:
        raise InvalidInputError(f"{column!r} is not a partition column (they are {list(schema.partition_keys)})")
    target = schema.field(column).type
    try:
        return set(values.cast(target).to_pylist())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        if strict:
            raise InvalidInputError(f"partition values {values.to_pylist()!r} do not fit column {column!r}: {e}") from e
        return None


def _deletion_vectors(schema: TableSchema) -> bool:
    return schema.options.get("deletion-vectors.enabled", "false").lower() == "true"


def _top_level(schema: TableSchema) -> int:
    """The highest level of the table's LSM tree (Paimon: ``num-levels`` - 1, by default
    one more level than ``num-sorted-run.compaction-trigger`` runs)."""
    levels = schema.options.get("num-levels")
    trigger = int(schema.options.get("num-sorted-run.compaction-trigger", "5"))
    return (int(levels) if levels else trigger + 1) - 1


def _needs_compaction(entries: list[dict[str, Any]], top: int, full: bool, trigger: int) -> bool:
    files = [e["_FILE"] for e in entries]
    if full:
        return len(files) > 1 or files[0]["_LEVEL"] != top or bool(files[0].get("_DELETE_ROW_COUNT"))
    runs = sum(f["_LEVEL"] == 0 for f in files) + len({f["_LEVEL"] for f in files if f["_LEVEL"] > 0})
    return runs >= trigger


def _create(
    root: Path,
    schema: pa.Schema,
    key: Any,
    partition_by: Any,
    buckets: int,
    merge: Any,
    sequence: Any,
    sequence_order: str,
    options: Mapping[str, str] | None,
) -> tuple[Path, TableSchema]:
    """Writes schema 0 of a new table; returns the root and the schema as read back."""
    if not isinstance(schema, pa.Schema):
        raise InvalidInputError(f"schema must be a pyarrow.Schema, got {type(schema).__name__}")
    keys, partitions = column_names(key, "key"), column_names(partition_by, "partition_by")
    sequences = column_names(sequence, "sequence")
    if not keys:
        raise InvalidInputError("a table needs a key")
    names = schema.names
    if len(set(names)) != len(names):
        raise InvalidInputError("the schema has duplicate column names")
    system = [n for n in names if n.startswith("_KEY_") or n in (SEQUENCE_NUMBER, VALUE_KIND)]
    if system:
        raise InvalidInputError(f"column names {system} are reserved by Paimon")
    for what, cols in (("key", keys), ("partition_by", partitions), ("sequence", sequences)):
        unknown = [c for c in cols if c not in names]
        if unknown:
            raise InvalidInputError(f"{what} names columns {unknown} that the schema does not have ({names})")
    if not isinstance(buckets, int) or isinstance(buckets, bool) or not 1 <= buckets <= 1 << 16:
        raise InvalidInputError(f"buckets must be an integer from 1 to 65536, got {buckets!r}")
    table_options = {**paimon_options(merge, sequences, sequence_order), "bucket": str(buckets)}
    table_options.update({str(k): str(v) for k, v in (options or {}).items()})
    # Paimon's primary key includes the partition columns.
    primary = [*[p for p in partitions if p not in keys], *keys]
    text = schema_json(schema, primary, partitions, table_options)
    parsed = TableSchema.parse(text, "the new schema")
    merge_from_paimon_options(parsed.options)  # the options must read back
    _check_merge(parsed)
    folder = root / "schema"
    if schema_ids(root):
        raise TableExistsError(f"a table already exists at {root}")
    if root.exists() and any(root.iterdir()):
        raise InvalidInputError(f"{root} is not empty; a table needs a new or empty directory")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        created = write_new(folder / "schema-0", text)
    except OSError as e:
        raise TableIOError(f"creating the table at {root} failed: {e}") from e
    if not created:
        raise TableExistsError(f"a table already exists at {root}")
    return root, parsed


def _check_merge(schema: TableSchema) -> None:
    """Fails now, not at the first write, if the merge function does not fit the schema."""
    root = Path(os.devnull)
    setup = merge_from_paimon_options(schema.options)
    try:
        TableWrite(root, schema, setup, None, "1MiB", None).close()
    except ValueError as e:
        raise InvalidInputError(f"the merge function does not fit the table: {e}") from e
