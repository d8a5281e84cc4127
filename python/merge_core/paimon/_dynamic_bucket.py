"""Writes to a dynamic-bucket table (``bucket = -1``): each key's bucket comes from the
table's HASH index (``_hash_index``), new keys are placed as Paimon's hash bucket
assigner places them, and the buckets that took new keys get new HASH index files.

A key is known by its hash (Java's ``BinaryRow.hashCode`` of its trimmed primary key,
computed in Rust); a hash the partition's index files hold keeps its bucket, whichever
writer put it there. New hashes, in the order the write first meets them, go as
Paimon's ``HashBucketAssigner`` and ``PartitionIndex`` send them:

1. to the buckets of the index that hold fewer than ``dynamic-bucket.target-row-num``
   hashes, in the order Java's ``HashMap`` of bucket numbers iterates them, each until
   it is full;
2. then to new buckets, each the lowest number the partition does not use, while the
   partition has fewer than ``dynamic-bucket.max-buckets`` (-1: up to 32767);
3. past that, to one of the partition's buckets. Paimon picks it at random; merge-core
   takes the hash modulo their number, so the same write places keys the same way.

Everything runs over arrays: the partition's hashes are kept sorted beside their
buckets, looked up with ``searchsorted``, and a batch's new hashes are handed out in
runs, one ``repeat`` per bucket they fill. The assignment reads the snapshot that is
latest when the write meets its first rows, as Paimon's assigner reads the one latest
when it starts (one assigner: ``dynamic-bucket.assigner-parallelism`` and
``initial-buckets`` shape Flink jobs, not where keys live).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from .. import _native
from ..errors import CorruptTableError, InvalidInputError, UnsupportedFeatureError
from ..fs import Location
from . import _hash_index
from ._hash_index import HashIndexUpdate
from ._meta import Snapshot, latest_snapshot_id, live_entries
from ._options import int_option, long_option
from ._schema import TableSchema

DYNAMIC = -1
MAX_BUCKETS = 1 << 15  # bucket numbers are Java shorts: 0 ..= 32767 (Paimon stops at 32766)
TARGET_ROWS = 2_000_000


def check_writable(schema: TableSchema) -> None:
    """Refuses a dynamic-bucket table merge-core cannot write: a primary key without
    every partition column makes Paimon move keys between partitions (its cross-partition
    update, with an index of every key of the table), which merge-core does not do."""
    outside = [p for p in schema.partition_keys if p not in schema.primary_keys]
    if outside:
        raise UnsupportedFeatureError(
            f"cross-partition updates: the primary key {list(schema.primary_keys)} of this dynamic-bucket table "
            f"leaves out the partition columns {outside}, so a key may move between partitions; merge-core does "
            "not write such tables"
        )


class DynamicBuckets:
    """The bucket assigner and index maintainer of one write to a dynamic-bucket table."""

    def __init__(self, root: Location, schema: TableSchema):
        check_writable(schema)
        self.root, self.schema = root, schema
        self.keys = list(schema.trimmed_keys)
        self.target = long_option(schema.options, "dynamic-bucket.target-row-num", TARGET_ROWS)
        self.max_buckets = int_option(schema.options, "dynamic-bucket.max-buckets", -1)
        self.ignore_existing = False  # an overwrite's: every partition starts with no buckets
        self._loaded = False
        self._snapshot: Snapshot | None = None
        self._entries: dict[bytes, list[dict[str, Any]]] = {}
        self._data_buckets: dict[bytes, set[int]] | None = None
        self._partitions: dict[int, _PartitionIndex] = {}

    def assign(self, batch: pa.RecordBatch, numbers: np.ndarray, partition_row: Callable[[int], bytes]) -> np.ndarray:
        """Each row's bucket (int64): ``numbers`` are the rows' partition numbers in this
        write, ``partition_row(number)`` a partition's serialized row."""
        self._load()
        hashes = _native.paimon_row_hashes(batch, self.keys).to_numpy(zero_copy_only=False)
        if len(numbers) and numbers.min() == numbers.max():  # one partition
            return self._partition(int(numbers[0]), partition_row).assign(hashes).astype(np.int64)
        out = np.empty(len(hashes), np.int64)
        order = np.argsort(numbers, kind="stable")  # each partition's rows, in row order
        ordered = numbers[order]
        starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]]) if len(order) else []
        for start, end in zip(starts, [*starts[1:], len(order)], strict=True):
            rows = order[start:end]
            out[rows] = self._partition(int(ordered[start]), partition_row).assign(hashes[rows])
        return out

    def updates(self) -> dict[tuple[bytes, int], HashIndexUpdate]:
        """Writes the new HASH index file of each bucket that took new keys (its old
        hashes and the new ones, ascending) and returns them by (partition, bucket).
        If a file fails, those written are removed."""
        out: dict[tuple[bytes, int], HashIndexUpdate] = {}
        try:
            for index in self._partitions.values():
                read = tuple(e["_FILE_NAME"] for e in index.entries)
                for bucket, hashes in index.new_hashes().items():
                    combined = np.sort(np.concatenate([index.stored.get(bucket, hashes[:0]), hashes]))
                    written = _hash_index.write_hashes(self.root, self.schema, index.partition, bucket, combined)
                    out[(index.partition, bucket)] = HashIndexUpdate(written, read)
        except BaseException:
            for update in out.values():
                _hash_index.remove(self.root, self.schema, update)
            raise
        return out

    def _load(self) -> None:
        """Checks the options and reads the latest snapshot's HASH entries, once (at the
        first rows: a table's creation checks its merge with a write that takes none)."""
        if self._loaded:
            return
        if self.max_buckets != -1 and not 1 <= self.max_buckets <= MAX_BUCKETS:  # Paimon's writers would fail
            raise InvalidInputError(
                f"option 'dynamic-bucket.max-buckets' must be -1 (no limit) or 1 to {MAX_BUCKETS}, "
                f"got {self.max_buckets}"
            )
        latest = None if self.ignore_existing else latest_snapshot_id(self.root)
        self._snapshot = None if latest is None else Snapshot.load(self.root, latest)
        self._entries = _hash_index.hash_entries(_hash_index.index_entries(self.root, self._snapshot))
        self._loaded = True

    def _partition(self, number: int, partition_row: Callable[[int], bytes]) -> _PartitionIndex:
        found = self._partitions.get(number)
        if found is None:
            partition = partition_row(number)
            entries = self._entries.get(partition, [])
            self._check_indexed(partition, entries)
            found = self._partitions[number] = _PartitionIndex.load(self, partition, entries)
        return found

    def _check_indexed(self, partition: bytes, entries: list[dict[str, Any]]) -> None:
        """Refuses a partition with data in buckets its HASH index does not cover: their
        keys' buckets are unknown, so a write could put a key in a second bucket."""
        if self._snapshot is None:
            return
        if self._data_buckets is None:
            self._data_buckets = {}
            for e in live_entries(self.root, self._snapshot):
                self._data_buckets.setdefault(e["_PARTITION"], set()).add(e["_BUCKET"])
        missing = self._data_buckets.get(partition, set()) - {e["_BUCKET"] for e in entries}
        if missing:
            raise CorruptTableError(
                f"snapshot {self._snapshot.id} of the dynamic-bucket table at {self.root} has data files in buckets "
                f"{sorted(missing)} of a partition that its HASH index does not cover; no writer can tell which "
                "bucket their keys are in"
            )


@dataclass
class _PartitionIndex:
    """One partition's keys by hash (``hashes`` ascending, ``buckets`` beside them) and
    the state of Paimon's assigner: the not-yet-full buckets in the order it tries them,
    every bucket in the order it picks from, and each bucket's number of hashes."""

    partition: bytes
    entries: list[dict[str, Any]]
    stored: dict[int, np.ndarray]  # the hashes of each bucket's HASH file, as read
    hashes: np.ndarray
    buckets: np.ndarray
    counts: dict[int, int]
    open: list[int]
    every: list[int]
    target: int
    max_buckets: int
    full: bool = False  # every bucket number allowed is taken
    placed: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)  # (new hashes, their buckets)
    _next: int = 0  # no bucket number below it is free

    @classmethod
    def load(cls, owner: DynamicBuckets, partition: bytes, entries: list[dict[str, Any]]) -> _PartitionIndex:
        """The index of ``partition`` from its HASH ``entries`` (in manifest order)."""
        stored: dict[int, np.ndarray] = {}
        counts: dict[int, int] = {}
        parts, owners = [], []
        for entry in entries:
            bucket = entry["_BUCKET"]
            if not 0 <= bucket < MAX_BUCKETS:
                raise CorruptTableError(f"a HASH index entry names bucket {bucket}, not a dynamic bucket number")
            hashes = _hash_index.read_hashes(_hash_index.index_file(owner.root, owner.schema, entry))
            stored[bucket] = np.concatenate([stored[bucket], hashes]) if bucket in stored else hashes
            if len(hashes):  # Java counts a bucket once it has read a hash of it
                counts[bucket] = counts.get(bucket, 0) + len(hashes)
            parts.append(hashes)
            owners.append(np.full(len(hashes), bucket, np.int32))
        hashes, buckets = _latest_per_hash(parts, owners)
        order = _java_hash_map_order(list(counts))
        return cls(
            partition, entries, stored, hashes, buckets, counts, order, list(order), owner.target, owner.max_buckets
        )

    def assign(self, hashes: np.ndarray) -> np.ndarray:
        """The bucket of each of ``hashes`` (one per row, in row order). The hashes are
        sorted first: sorted lookups into the index, and equal new hashes side by side."""
        order = np.argsort(hashes)
        ordered = hashes[order]
        at = np.searchsorted(self.hashes, ordered)
        known = np.zeros(len(ordered), bool)
        inside = at < len(self.hashes)
        known[inside] = self.hashes[at[inside]] == ordered[inside]
        found = np.empty(len(ordered), np.int32)
        found[known] = self.buckets[at[known]]
        if not known.all():
            fresh = ~known
            values, rows, where = ordered[fresh], order[fresh], at[fresh]
            first = np.r_[True, values[1:] != values[:-1]]  # the first row of each distinct new hash
            starts = np.flatnonzero(first)
            distinct = values[starts]
            arrival = np.argsort(np.minimum.reduceat(rows, starts))  # by the row that first has it
            placed = np.empty(len(distinct), np.int32)
            placed[arrival] = self._place(distinct[arrival])
            found[fresh] = placed[np.cumsum(first) - 1]
            self.hashes = np.insert(self.hashes, where[starts], distinct)
            self.buckets = np.insert(self.buckets, where[starts], placed)
            self.placed.append((distinct, placed))
        out = np.empty(len(hashes), np.int32)
        out[order] = found
        return out

    def _place(self, arrival: np.ndarray) -> np.ndarray:
        """The buckets of new hashes (distinct, in arrival order), as Paimon's
        ``PartitionIndex.assign`` gives them one by one."""
        runs: list[tuple[int, int]] = []  # (bucket, hashes it takes), in order
        left = len(arrival)
        while left and self.open:  # 1. buckets with room
            bucket = self.open[0]
            take = min(max(self.target - self.counts[bucket], 0), left)
            if take:
                runs.append((bucket, take))
                self.counts[bucket] += take
                left -= take
            if self.counts[bucket] >= self.target:
                self.open.pop(0)
        while left and not self.full:  # 2. new buckets
            bucket = self._free_bucket()
            if bucket is None:
                self.full = True
                break
            take = min(max(self.target, 1), left)  # a new bucket starts with one hash, even at target 0
            self.every.append(bucket)
            self.counts[bucket] = take
            runs.append((bucket, take))
            left -= take
            self.open = [bucket] if take < self.target else []
        buckets, takes = np.array([b for b, _ in runs], np.int32), np.array([n for _, n in runs], np.int64)
        placed = np.repeat(buckets, takes).astype(np.int32)
        if left:  # 3. past the last bucket allowed
            every = np.array(self.every, np.int32)
            picks = every[np.mod(arrival[len(placed) :].astype(np.int64), len(every))]
            placed = np.concatenate([placed, picks])
        return placed

    def _free_bucket(self) -> int | None:
        """The lowest bucket number the partition does not use (``None``: none allowed)."""
        top = (MAX_BUCKETS - 1 if self.max_buckets == -1 else self.max_buckets) - 1
        while self._next <= top and self._next in self.counts:
            self._next += 1
        if self._next > top:
            if self.max_buckets == -1:
                raise InvalidInputError(
                    f"a partition of this dynamic-bucket table would need more than {top + 1} buckets; raise "
                    f"'dynamic-bucket.target-row-num' (now {self.target})"
                )
            return None
        return self._next

    def new_hashes(self) -> dict[int, np.ndarray]:
        """The hashes this write placed, by bucket."""
        if not self.placed:
            return {}
        hashes = np.concatenate([h for h, _ in self.placed])
        buckets = np.concatenate([b for _, b in self.placed])
        order = np.argsort(buckets, kind="stable")
        buckets = buckets[order]
        starts = np.flatnonzero(np.r_[True, buckets[1:] != buckets[:-1]])
        return {int(buckets[s]): part for s, part in zip(starts, np.split(hashes[order], starts[1:]), strict=True)}


def _latest_per_hash(parts: list[np.ndarray], owners: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The distinct hashes of the index files (ascending) and each one's bucket: the
    last file's that holds it, as Java's map keeps the last one it is given."""
    if not parts:
        return np.empty(0, np.int32), np.empty(0, np.int32)
    hashes, buckets = np.concatenate(parts), np.concatenate(owners)
    last = len(hashes) - 1 - np.unique(hashes[::-1], return_index=True)[1]
    return hashes[last], buckets[last]


def _java_hash_map_order(buckets: list[int]) -> list[int]:
    """The order a Java ``HashMap<Integer, ...>`` holding ``buckets`` (put in this
    order) iterates them: by slot (the number modulo its capacity, 16 doubled while more
    than three quarters full), then in the order they were put."""
    capacity = 16
    while len(buckets) > capacity * 3 // 4:
        capacity *= 2
    return sorted(buckets, key=lambda b: b & (capacity - 1))  # sorted() is stable: put order within a slot
