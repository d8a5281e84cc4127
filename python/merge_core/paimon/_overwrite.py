"""Overwrites: Paimon's ``INSERT OVERWRITE``, ``dropPartitions`` and ``truncateTable``.

Each is one ``OVERWRITE`` snapshot (Paimon's ``FileStoreCommitImpl.overwritePartition``
and ``tryOverwritePartition``, with ``OverwriteChangesProvider``): a DELETE entry for
every live file of the partitions it replaces, the ADD entries of the files it wrote, and
an index manifest without the replaced partitions' index entries (HASH, deletion
vectors), the write's new HASH files added. The deletes are recomputed on every attempt's
latest snapshot, so a write that commits into a replaced partition before the overwrite
is replaced with it, as in Paimon; a compaction of a replaced file that commits after it
finds the file gone and fails (``CommitConflictError``). The files replaced stay on disk:
older snapshots, tags and branches still name them, and only ``expire`` removes them.

Which partitions an overwrite replaces (Paimon's rules):

- a table without partition columns: all of it;
- with ``dynamic-partition-overwrite`` (true by default): those the written files are in
  (no files: nothing is replaced and nothing committed);
- otherwise those the static spec matches (``{}``: every partition), even with no rows.

A commit may decide the mode itself (``dynamic``), as Paimon's Spark connector copies
the table with the option set to the mode Spark resolved (static unless Spark says
dynamic), whatever the table's own option says.

A static spec must hold every row written (Paimon refuses a write outside it; merge-core
also in dynamic mode, where Paimon's engines fill the spec's columns into every row).
With ``overwrite-upgrade`` (true by default) a bucket's new files, when their key ranges
do not overlap, go to the top level, as Paimon's ``tryUpgrade`` puts them: they are then
the bucket's only files, compacted already.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from ..errors import InvalidInputError
from ..fs import Location
from . import _binary, _hash_index, _key_order
from ._commit import Changes, CommitMessage, Committer
from ._compact import top_level
from ._meta import DELETE, Snapshot
from ._options import bool_option, int_option
from ._paths import POSTPONE_BUCKET, Layout
from ._schema import TableSchema

DEFAULT_PARTITION = "__DEFAULT_PARTITION__"


class PartitionSpec:
    """A partition spec as Paimon takes one (``{column: value}``, its values strings or
    values of the columns' types), naming some or all of the partition columns: it
    matches the partitions with those values. A value ``None`` or the table's
    ``partition.default-name`` matches a null."""

    def __init__(self, schema: TableSchema, spec: Mapping[str, Any]):
        if not isinstance(spec, Mapping):
            raise InvalidInputError(f"a partition spec is a mapping of partition column to value, got {spec!r}")
        columns = list(schema.partition_keys)
        default = schema.options.get("partition.default-name", DEFAULT_PARTITION)
        self.spec = dict(spec)
        self.tests: list[tuple[int, Any]] = []
        for column, value in spec.items():
            if column not in columns:
                raise InvalidInputError(
                    f"{column!r} is not a partition column"
                    + (f" (they are {columns})" if columns else " (the table has none)")
                )
            if value is None or value == default:
                self.tests.append((columns.index(column), None))
                continue
            target = schema.field(column).type
            try:
                typed = pa.array([value]).cast(target).to_pylist()[0]
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
                raise InvalidInputError(f"partition value {value!r} does not fit column {column!r} ({target})") from e
            self.tests.append((columns.index(column), typed))

    def matches(self, values: tuple) -> bool:
        return all(values[i] == value for i, value in self.tests)

    def __str__(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.spec.items()) or "every partition"


def overwrite_spec(schema: TableSchema, overwrite: Any) -> PartitionSpec | None:
    """What ``overwrite`` (as ``Table.commit`` takes it) asks: ``None`` (False, None) an
    append, else the static spec (``True``: ``{}``, the whole table)."""
    if overwrite is None or overwrite is False:
        return None
    if overwrite is True:
        return PartitionSpec(schema, {})
    if isinstance(overwrite, Mapping):
        return PartitionSpec(schema, overwrite)
    raise InvalidInputError(f"overwrite must be True, False or a partition spec {{column: value}}, got {overwrite!r}")


class _Partitions:
    """Decodes serialized partition rows of one table, each once."""

    def __init__(self, schema: TableSchema):
        self.types = [schema.field(k).type for k in schema.partition_keys]
        self.decoded: dict[bytes, tuple] = {}

    def values(self, partition: bytes) -> tuple:
        if partition not in self.decoded:
            self.decoded[partition] = _binary.decode(partition, self.types)
        return self.decoded[partition]


class Overwrite:
    """The changes of one OVERWRITE commit: the live files (and index entries) of the
    partitions ``chosen`` picks (``None``: every partition) deleted, ``added`` (ADD
    manifest entries) and ``new_index`` (index manifest entries) added."""

    def __init__(
        self,
        root: Location,
        schema: TableSchema,
        chosen: Callable[[tuple], bool] | None,
        added: Sequence[dict[str, Any]] = (),
        new_index: Sequence[dict[str, Any]] = (),
    ):
        self.root, self.schema, self.chosen = root, schema, chosen
        self.added, self.new_index = list(added), list(new_index)
        self.partitions = _Partitions(schema)
        # Paimon's overwrite scan takes real buckets only, unless the table is postponed.
        self.every_bucket = int_option(schema.options, "bucket", -1) == POSTPONE_BUCKET
        self.deleted: list[dict[str, Any]] = []  # the last attempt's

    def _replaces(self, partition: bytes) -> bool:
        return self.chosen is None or self.chosen(self.partitions.values(partition))

    def changes(self, latest: Snapshot | None, live: list[dict[str, Any]]) -> Changes:
        self.deleted = [
            _entry(DELETE, e)
            for e in live
            if (self.every_bucket or e["_BUCKET"] >= 0) and self._replaces(e["_PARTITION"])
        ]
        previous = _hash_index.index_entries(self.root, latest)
        kept = [e for e in previous if not self._replaces(e["_PARTITION"])]
        index = None if len(kept) == len(previous) and not self.new_index else kept + self.new_index
        return Changes(self.deleted + self.added, index)

    def summary(self, snapshot: int | None) -> dict[str, int | None]:
        """What the last attempt replaced: partitions, files and stored rows."""
        return {
            "snapshot": snapshot,
            "partitions": len({e["_PARTITION"] for e in self.deleted}),
            "files": len(self.deleted),
            "rows": sum(e["_FILE"]["_ROW_COUNT"] for e in self.deleted),
        }


def commit_overwrite(
    root: Location,
    schema: TableSchema,
    messages: Sequence[CommitMessage],
    spec: PartitionSpec,
    dynamic: bool | None = None,
) -> int | None:
    """Commits the messages of an overwrite write (``Table.new_write(overwrite=True)``)
    as one OVERWRITE snapshot replacing what ``spec`` and ``dynamic`` (``None``: the
    table's ``dynamic-partition-overwrite``) say; returns its id (``None``: a dynamic
    overwrite of no rows, which commits nothing)."""
    _check_messages(messages)
    _remove_changelog_files(root, schema, messages)
    partitions = _Partitions(schema)
    for m in messages:
        if not spec.matches(partitions.values(m.partition)):
            values = dict(zip(schema.partition_keys, partitions.values(m.partition), strict=True))
            raise InvalidInputError(f"the overwrite of {spec} was given rows of another partition, {values}")
    written = [m for m in messages if m.new_files]
    if not schema.partition_keys:
        chosen = None
    elif bool_option(schema.options, "dynamic-partition-overwrite", True) if dynamic is None else dynamic:
        touched = {partitions.values(m.partition) for m in written}
        if not touched:
            _remove_index_files(root, schema, messages)
            return None
        chosen = touched.__contains__
    else:
        chosen = spec.matches
    # A bucket whose new keys all folded away has an index file but no data file: in a
    # partition not replaced, it would stand for the bucket's keys without holding them.
    kept: list[CommitMessage] = []
    dropped: list[CommitMessage] = []
    for m in messages:
        (kept if chosen is None or chosen(partitions.values(m.partition)) else dropped).append(m)
    _remove_index_files(root, schema, dropped)
    added = _upgraded(schema, [e for m in written for e in m.append_entries()])
    index = [m.hash_index.entry for m in kept if m.hash_index is not None]
    plan = Overwrite(root, schema, chosen, added, index)
    return Committer(root, schema).commit_changes("OVERWRITE", plan.changes)


def drop_partitions(root: Location, schema: TableSchema, specs: Sequence[Mapping[str, Any]]) -> dict[str, int | None]:
    """Paimon's ``dropPartitions``: one OVERWRITE snapshot deleting every file of the
    partitions any spec matches (a partition no file is in is no error)."""
    if isinstance(specs, Mapping) or not isinstance(specs, Sequence) or not specs:
        raise InvalidInputError(f"drop_partitions takes a non-empty list of partition specs, got {specs!r}")
    if not schema.partition_keys:
        raise InvalidInputError("the table has no partition columns: truncate() empties it")
    parsed = [PartitionSpec(schema, spec) for spec in specs]
    if any(not spec.tests for spec in parsed):
        raise InvalidInputError("a partition spec to drop names at least one partition column (truncate() drops all)")
    plan = Overwrite(root, schema, lambda values: any(spec.matches(values) for spec in parsed))
    return plan.summary(Committer(root, schema).commit_changes("OVERWRITE", plan.changes))


def truncate(root: Location, schema: TableSchema) -> dict[str, int | None]:
    """Paimon's ``truncateTable``: one OVERWRITE snapshot deleting every file."""
    plan = Overwrite(root, schema, None)
    return plan.summary(Committer(root, schema).commit_changes("OVERWRITE", plan.changes))


def _check_messages(messages: Sequence[CommitMessage]) -> None:
    appends = [m for m in messages if not m.overwrite]
    if appends:
        raise InvalidInputError(
            "an overwrite commits the messages of an overwrite write (Table.new_write(overwrite=True)); "
            "these come from a write that continued the table's files"
        )
    if any(m.is_compaction for m in messages):
        raise InvalidInputError("an overwrite commits writes, not compactions")


def _remove_changelog_files(root: Location, schema: TableSchema, messages: Sequence[CommitMessage]) -> None:
    """The changelog files an overwrite's write made (changelog-producer = input) go: as
    Paimon's ("Overwrite mode currently does not commit any changelog"), an OVERWRITE
    snapshot has none."""
    layout = Layout(schema)
    for m in messages:
        for f in m.changelog_files:
            (root / layout.bucket_dir(m.partition, m.bucket) / f["_FILE_NAME"]).delete()


def _remove_index_files(root: Location, schema: TableSchema, messages: Sequence[CommitMessage]) -> None:
    for m in messages:
        if m.hash_index is not None:
            _hash_index.remove(root, schema, m.hash_index)


def _entry(kind: int, e: dict[str, Any]) -> dict[str, Any]:
    return {
        "_VERSION": 2,
        "_KIND": kind,
        "_PARTITION": e["_PARTITION"],
        "_BUCKET": e["_BUCKET"],
        "_TOTAL_BUCKETS": e["_TOTAL_BUCKETS"],
        "_FILE": e["_FILE"],
    }


def _upgraded(schema: TableSchema, added: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The new files, each bucket's moved to the top level when their key ranges do not
    overlap (Paimon's ``tryUpgrade``, with ``overwrite-upgrade``): none of a postponed
    bucket's, nor when a file is above level 0."""
    options = schema.options
    if not bool_option(options, "overwrite-upgrade", True) or bool_option(options, "pk-clustering-override"):
        return added
    if any(e["_FILE"]["_LEVEL"] > 0 or e["_BUCKET"] < 0 for e in added):
        return added
    types = [schema.field(k).type for k in schema.trimmed_keys]
    buckets: dict[tuple[bytes, int], list[dict[str, Any]]] = {}
    for e in added:
        buckets.setdefault((e["_PARTITION"], e["_BUCKET"]), []).append(e)
    top = top_level(schema)
    out = []
    for entries in buckets.values():
        ranges = sorted(
            (_key_order.row_key(e["_FILE"]["_MIN_KEY"], types), _key_order.row_key(e["_FILE"]["_MAX_KEY"], types))
            for e in entries
        )
        if any(high >= low for (_, high), (low, _) in zip(ranges, ranges[1:], strict=False)):
            out += entries
        else:
            out += [{**e, "_FILE": {**e["_FILE"], "_LEVEL": top}} for e in entries]
    return out
