"""Planning a read: a snapshot's live files grouped into splits, the units a task reads.

The files of one (partition, bucket) fall into *sections* (Paimon's IntervalPartition):
files whose key ranges overlap, directly or through others, form a section, and
sections do not overlap each other, so each is merged on its own and their outputs are
concatenated in key order. Inside a section, files that do not overlap are chained into
sorted runs. Sections are packed into splits of about ``source.split.target-size``.

A read that sees compacted files only (deletion vectors, first-row: each key at most
once among their live rows) makes each file a section of its own, as Paimon's batch
read reads each such file on its own: nothing to merge across files, so no loser tree
over overlapping files; a bucket's rows then come file after file, each file's in key
order.
"""

from __future__ import annotations

import functools
import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import UnsupportedFeatureError
from ..fs import Location
from . import _binary, _key_order
from ._casts import reads_exactly
from ._dv import deleted_positions
from ._meta import DataFile, Snapshot, deletion_vectors
from ._options import bool_option, memory_bytes
from ._paths import Layout, ManifestPaths
from ._schema import TableSchema, load_schema
from ._snapshot_memo import SnapshotMemo

SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
VALUE_KIND = "_VALUE_KIND"
TARGET_SPLIT_BYTES = 128 << 20
OPEN_FILE_COST = 4 << 20


@dataclass(frozen=True)
class FileRead:
    """One data file as a read takes it: its path on the table's store, which of its
    columns give each column of the read (``None``: the file predates the column, which
    reads as null), and the positions of its deleted rows. ``content``: the file's rows
    held in memory as a Parquet file of their own (a lookup compaction's rows found in a
    file it keeps decoded, ``_file_rows``), read instead of ``path``."""

    path: str
    columns: tuple[str | None, ...]
    deleted: np.ndarray | None
    rows: int
    content: bytes | None = None


@dataclass(frozen=True)
class Section:
    """Files of one bucket whose key ranges overlap: sorted runs merged together."""

    runs: tuple[tuple[FileRead, ...], ...]


@dataclass(frozen=True)
class Split:
    """Sections of one partition and bucket, in key order: the unit of work of a task,
    read with the columns it was planned for. Picklable, so a driver can plan and hand
    splits to workers."""

    snapshot: int
    schema_id: int
    columns: tuple[str, ...]
    partition: tuple[Any, ...]
    bucket: int
    sections: tuple[Section, ...]
    filter: Any = None  # a _predicate.Predicate the read applies to the merged rows

    @property
    def files(self) -> int:
        return sum(len(run) for section in self.sections for run in section.runs)


class Plan(list):
    """The splits of a read (a list of :class:`Split`), with ``stats`` on what was
    planned: the snapshot, files and partitions read of total, splits."""

    def __init__(self, splits: Sequence[Split], stats: dict[str, int]):
        super().__init__(splits)
        self.stats = stats


def sections(files: Sequence[DataFile], key: Callable[[bytes], tuple]) -> list[list[list[DataFile]]]:
    """Paimon's IntervalPartition: ``files`` as sections of sorted runs, in key order.
    ``key`` decodes a serialized key row into a tuple whose Python order is Paimon's key
    order (:func:`_key_order.row_key`): every comparison here is of such tuples. Ranges
    are inclusive: touching ranges share a section."""
    ranges = {id(f): (key(f.min_key), key(f.max_key)) for f in files}  # decoded once per file
    ordered = sorted(files, key=lambda f: ranges[id(f)])
    out: list[list[DataFile]] = []
    bound = None
    for f in ordered:
        low, high = ranges[id(f)]
        if out and low <= bound:
            out[-1].append(f)
            bound = max(bound, high)
        else:
            out.append([f])
            bound = high
    return [_sorted_runs(section, ranges) for section in out]


def apart(files: Sequence[DataFile], key: Callable[[bytes], tuple]) -> list[list[list[DataFile]]]:
    """``files`` as sections of one file each, by key range (module docstring)."""
    ranges = {id(f): (key(f.min_key), key(f.max_key)) for f in files}
    return [[[f]] for f in sorted(files, key=lambda f: ranges[id(f)])]


def _sorted_runs(files: list[DataFile], ranges: dict[int, tuple[tuple, tuple]]) -> list[list[DataFile]]:
    """Chains a section's files (sorted by min key) into as few runs as it greedily can:
    a file joins the run that ends lowest, if it starts after that run's end."""
    runs: list[list[DataFile]] = [[files[0]]]
    heap = [(ranges[id(files[0])][1], 0)]
    for f in files[1:]:
        low, high = ranges[id(f)]
        end, r = heapq.heappop(heap)
        if low > end:
            runs[r].append(f)
            heapq.heappush(heap, (high, r))
        else:
            heapq.heappush(heap, (end, r))
            runs.append([f])
            heapq.heappush(heap, (high, len(runs) - 1))
    # Older runs first: the merge takes equal versions in run order only after sequence
    # numbers, which decide; a stable order keeps the output deterministic.
    return sorted(runs, key=lambda run: min(f.min_sequence for f in run))


def pack(weights: Sequence[int], target: int = TARGET_SPLIT_BYTES, open_cost: int = OPEN_FILE_COST) -> list[list[int]]:
    """Consecutive items grouped so that each group weighs at most ``target`` (an item
    heavier than that alone); each item weighs at least ``open_cost``, the cost of
    opening a file (Paimon's ``source.split.target-size`` and ``open-file-cost``)."""
    groups: list[list[int]] = []
    total = 0
    for i, w in enumerate(weights):
        w = max(w, open_cost)
        if groups and total + w <= target:
            groups[-1].append(i)
            total += w
        else:
            groups.append([i])
            total = w
    return groups


class Planner:
    """Turns a snapshot's live files into splits for a read of ``columns``, whose files
    are decoded as the ``read`` columns (the table's, by name in ``schema``). ``memo``:
    the snapshot's, to take what an earlier plan of it derived (each bucket's splits,
    the deletion vectors) instead of deriving it again. ``files_apart``: each file its
    own section (a read of compacted files only: module docstring)."""

    def __init__(
        self,
        root: Location,
        snapshot: Snapshot,
        schema: TableSchema,
        columns: tuple[str, ...],
        read: list[str],
        memo: SnapshotMemo | None = None,
        files_apart: bool = False,
    ):
        self.root, self.snapshot, self.schema, self.columns, self.read = root, snapshot, schema, columns, read
        self.files_apart = files_apart
        self.memo = memo if memo is not None else SnapshotMemo(None, [])
        self.layout = Layout(schema)
        self.manifest_paths = ManifestPaths(root)
        self.partition_types = [schema.field(k).type for k in schema.partition_keys]
        self.key_types = [schema.field(k).type for k in schema.trimmed_keys]
        self.schemas: dict[int, TableSchema] = {schema.id: schema}
        in_data_dir = bool_option(schema.options, "index-file-in-data-file-dir")
        self.target = memory_bytes(schema.options, "source.split.target-size", "128 mb")
        self.open_cost = memory_bytes(schema.options, "source.split.open-file-cost", "4 mb")
        self.deletion_vectors = self.memo.once(
            ("deletion vectors", in_data_dir),
            lambda: deletion_vectors(root, snapshot, self.bucket_path if in_data_dir else lambda p, b: None),
        )

    def bucket_path(self, partition: bytes, bucket: int) -> Location:
        return self.root / self.layout.bucket_dir(partition, bucket)

    def key(self, row: bytes) -> tuple:
        """A file's min or max key, comparable in Paimon's order."""
        return _key_order.row_key(row, self.key_types)

    def splits(self, files: Sequence[DataFile], chosen: Callable[[tuple], bool] | None) -> list[Split]:
        by_bucket: dict[tuple[bytes, int], list[DataFile]] = {}
        for f in files:
            by_bucket.setdefault((f.partition, f.bucket), []).append(f)
        buckets = [(_binary.decode(p, self.partition_types), b, p, group) for (p, b), group in by_bucket.items()]
        buckets.sort(key=lambda item: (_key_order.sort_key(item[0]), item[1]))
        out = []
        for values, bucket, partition, group in buckets:
            if chosen is not None and not chosen(values):
                continue
            # The same files of a bucket make the same splits: a lookup's next key reuses them.
            planned = (type(self), self.schema.id, self.columns, tuple(self.read), self.files_apart, partition, bucket)
            planned += tuple(f.name for f in group)
            make = functools.partial(self.bucket_splits, values, partition, bucket, group)
            out += self.memo.once(("bucket splits", *planned), make)
        return out

    def bucket_splits(self, values: tuple, partition: bytes, bucket: int, group: list[DataFile]) -> list[Split]:
        """The splits of the files ``group`` of one bucket."""
        found = apart(group, self.key) if self.files_apart else sections(group, self.key)
        weights = [sum(f.size for run in section for f in run) for section in found]
        out = []
        for chunk in pack(weights, self.target, self.open_cost):
            parts = tuple(
                Section(tuple(tuple(self.file_read(f, partition, bucket) for f in run) for run in found[i]))
                for i in chunk
            )
            out.append(Split(self.snapshot.id, self.schema.id, self.columns, values, bucket, parts))
        return out

    def file_read(self, f: DataFile, partition: bytes, bucket: int) -> FileRead:
        if not f.name.endswith(".parquet"):
            raise UnsupportedFeatureError(f"data file {f.name}: only Parquet data files are supported")
        if f.schema_id not in self.schemas:
            self.schemas[f.schema_id] = load_schema(self.root, f.schema_id)
        external = self.manifest_paths.external(f.external_path, f"data file {f.name}")
        path = external or (self.bucket_path(partition, bucket) / f.name).path
        dv = self.deletion_vectors.get((partition, bucket, f.name))
        deleted = None if dv is None else deleted_positions(dv)
        return FileRead(path, self.file_columns(self.schemas[f.schema_id]), deleted, f.rows)

    def file_columns(self, written: TableSchema) -> tuple[str | None, ...]:
        """For each read column, then the two system columns, the column of a file written
        under schema ``written`` that holds it (matched by field id), or ``None``. A
        column whose type changed since is read cast, if merge-core casts it as Paimon does."""
        by_id = {f.id: f for f in written.fields}
        out: list[str | None] = []
        for column in self.read:
            now = self.schema.field(column)
            then = by_id.get(now.id)
            if then is not None and not reads_exactly(then.paimon_type, now.paimon_type):
                raise UnsupportedFeatureError(
                    f"column {column!r} changed type from {then.paimon_type} (schema {written.id}) to "
                    f"{now.paimon_type}: merge-core reads older files of changed columns only where it casts "
                    "them as Paimon does (widenings: docs/table-format.md, 'Schema changes')"
                )
            out.append(None if then is None else then.name)
        return (*out, SEQUENCE_NUMBER, VALUE_KIND)
