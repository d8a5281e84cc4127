"""Which files a filtered read can leave unread, by Paimon's rules for a primary-key
table (``KeyValueFileStoreScan``), so that a read skips exactly what Paimon's skips:

1. partitions whose values fail the filter's conjuncts on partition columns;
   buckets the filter's bucket-key values do not hash to (``_key_filter``);
2. files whose key statistics fail the conjuncts on key columns (every version of a key
   has the same key, so the merge never needs them);
3. by value statistics, only where no version is shadowed by another: in a batch read
   that sees compacted files only (deletion vectors, first-row: what ``_skips_level_zero``
   decides), every file on its own; otherwise per bucket, whose files are tested one by
   one if they cannot overlap (one file, or all at one level above 0), else kept or
   dropped together: kept if any file may match, always kept for partial-update and
   aggregation tables (a merged row is not any one version), unless deletion vectors.

The merged rows are filtered exactly afterwards, so a skip changes no answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..errors import CorruptTableError, UnsupportedFeatureError
from . import _binary
from ._key_filter import bucket_selector
from ._meta import DataFile
from ._options import bool_option
from ._predicate import Node, Predicate, Stats, may_match, stats_value
from ._schema import TableSchema
from ._snapshot_memo import SnapshotMemo


class Skipping:
    """Files of a read's snapshot tested against a filter; ``stats`` count the skips."""

    def __init__(
        self,
        predicate: Predicate,
        schema: TableSchema,
        schema_of: Callable[[int], TableSchema],
        compacted_only: bool,
        memo: SnapshotMemo | None = None,
    ):
        self.schema, self.schema_of = schema, schema_of
        self.memo = memo if memo is not None else SnapshotMemo(None, [])
        self.compacted_only = compacted_only
        self.fields = {f.name: f for f in schema.fields}
        self.types = {name: f.type for name, f in self.fields.items()}
        self.partition_filter = predicate.conjuncts(schema.partition_keys)
        self.key_filter = predicate.conjuncts(schema.trimmed_keys)
        self.value_filter = predicate.node
        engine = schema.options.get("merge-engine", "deduplicate").strip().lower()
        dv = bool_option(schema.options, "deletion-vectors.enabled")
        self.keeps_overlapping = not dv and engine in ("partial-update", "aggregation")
        self.partition_types = [self.types[k] for k in schema.partition_keys]
        self.selects_bucket = bucket_selector(predicate.node, schema)
        self.stats = {"partitions_skipped_by_filter": 0, "buckets_skipped_by_filter": 0}
        self.stats["files_skipped_by_key_stats"] = 0
        self.stats["files_skipped_by_value_stats"] = 0

    def files(self, files: Sequence[DataFile]) -> list[DataFile]:
        """The files a read of ``files`` must open."""
        by_bucket: dict[tuple[bytes, int], list[DataFile]] = {}
        for f in files:
            by_bucket.setdefault((f.partition, f.bucket), []).append(f)
        out: list[DataFile] = []
        skipped_partitions: set[bytes] = set()
        for (partition, _), group in by_bucket.items():
            if not self._partition_may_match(partition):
                skipped_partitions.add(partition)
                continue
            if self.selects_bucket is not None:
                group = [f for f in group if self.selects_bucket(f.bucket, f.total_buckets)]
                if not group:
                    self.stats["buckets_skipped_by_filter"] += 1
                    continue
            kept = [f for f in group if self._file_may_match(f)]
            out += self._bucket(kept)
        self.stats["partitions_skipped_by_filter"] = len(skipped_partitions)
        return out

    def _partition_may_match(self, partition: bytes) -> bool:
        if self.partition_filter is None:
            return True
        decoded = _binary.decode(partition, self.partition_types, raw=True)
        values = dict(zip(self.schema.partition_keys, decoded, strict=True))

        def stats_of(column: str) -> Stats:
            value = stats_value(values[column], self.types[column])
            return value, value, int(value is None), 1

        return may_match(self.partition_filter, stats_of, self.types)

    def _file_may_match(self, f: DataFile) -> bool:
        if self.key_filter is not None and not self._test(self.key_filter, f, "_KEY_STATS"):
            self.stats["files_skipped_by_key_stats"] += 1
            return False
        if self.compacted_only and not self._test(self.value_filter, f, "_VALUE_STATS"):
            self.stats["files_skipped_by_value_stats"] += 1
            return False
        return True

    def _bucket(self, files: list[DataFile]) -> list[DataFile]:
        if self.compacted_only or not files:
            return files  # tested file by file already
        levels = {f.level for f in files}
        if len(files) == 1 or (len(levels) == 1 and 0 not in levels):
            kept = [f for f in files if self._test(self.value_filter, f, "_VALUE_STATS")]
            self.stats["files_skipped_by_value_stats"] += len(files) - len(kept)
            return kept
        if self.keeps_overlapping or any(self._test(self.value_filter, f, "_VALUE_STATS") for f in files):
            return files
        self.stats["files_skipped_by_value_stats"] += len(files)
        return []

    def _test(self, node: Node, f: DataFile, which: str) -> bool:
        """Whether ``f``'s statistics (``_KEY_STATS`` or ``_VALUE_STATS``) let ``node`` match."""
        record = f.record
        if record is None or not record.get(which):
            return True
        written = self.schema_of(f.schema_id)
        # A file's statistics decode the same for every filter: once per snapshot.
        stats = self.memo.once(
            ("stats", which, f.partition, f.bucket, f.name),
            lambda: _decoded(record[which], written, _stats_columns(record, which, written), f.rows),
        )
        if stats is None:
            return True
        then = written.fields_by_id

        def stats_of(column: str) -> Stats | None:
            field = self.fields.get(column)
            old = then.get(field.id) if field is not None else None
            if old is None:  # added since the file was written: null in every row
                return (None, None, f.rows, f.rows) if which == "_VALUE_STATS" else None
            if old.paimon_type != field.paimon_type:
                return None  # its type changed: the file's statistics are of another type
            return stats.get(old.name)

        return may_match(node, stats_of, self.types)


def _stats_columns(record: dict[str, Any], which: str, schema: TableSchema) -> Sequence[str]:
    """The columns a file's ``_KEY_STATS`` or ``_VALUE_STATS`` cover, in their order."""
    if which == "_KEY_STATS":
        return list(schema.trimmed_keys)
    names = record.get("_VALUE_STATS_COLS")
    return [x.name for x in schema.fields] if names is None else names


def _decoded(record: dict[str, Any], schema: TableSchema, names: Sequence[str], rows: int) -> dict[str, Stats] | None:
    """Column name -> (min, max, null count, rows) of a ``SimpleStats`` record over
    ``names`` of ``schema`` (None: a column type the statistics cannot be decoded in)."""
    by_name = {f.name: f for f in schema.fields}
    if any(n not in by_name for n in names):
        return None
    types = [by_name[n].arrow().type for n in names]
    try:
        lows = _binary.decode(record["_MIN_VALUES"], types, raw=True)
        highs = _binary.decode(record["_MAX_VALUES"], types, raw=True)
    except (CorruptTableError, UnsupportedFeatureError):  # statistics merge-core cannot read prove nothing
        return None
    nulls = list(record.get("_NULL_COUNTS") or [None] * len(names))
    if len(nulls) != len(names):
        return None
    return {
        n: (stats_value(lo, t), stats_value(hi, t), c, rows)
        for n, t, lo, hi, c in zip(names, types, lows, highs, nulls, strict=True)
    }
