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
from .._inputs import column_names
from .._native import Stream
from .._options import merge_spec
from .._paimon_options import PaimonMerge, merge_from_paimon_options
from ..errors import InvalidInputError, TableNotFoundError, UnsupportedFeatureError
from ..table._prune import DynamicFilter
from ._meta import Snapshot, latest_snapshot_id, live_files, snapshot_ids
from ._plan import SEQUENCE_NUMBER, VALUE_KIND, Plan, Planner, Split
from ._schema import TableSchema, load_schema, schema_ids

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
