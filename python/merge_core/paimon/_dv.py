"""Deletion vectors: the positions of a data file's deleted rows, stored in an index file.

An index file starts with a version byte (1), then holds one entry per data file: a
big-endian length, a magic number, a serialized roaring bitmap and a big-endian CRC32 of
magic and bitmap. The 32-bit form has magic 0x5E43F2D0 (big-endian) and the manifest's
length is the entry's; the 64-bit form (Iceberg's) has magic 0x6439D3D1 written
little-endian and the manifest's length also covers the length and CRC fields.

A writer keeps one index file per (partition, bucket), holding the vectors of all the
bucket's files that have deleted rows, as Paimon's ``BucketedDvMaintainer`` does; a
change to any of them writes the bucket's file anew (:func:`write_index`).
"""

from __future__ import annotations

import struct
import uuid
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pyroaring import BitMap, BitMap64

from ..errors import CommitConflictError, CorruptTableError, TableIOError, UnsupportedFeatureError
from ..fs import Location
from ._hash_index import index_entries
from ._meta import ADD, DeletionVector, Snapshot

INDEX_FILE_VERSION = 1
MAGIC_32 = 0x5E43F2D0
MAGIC_64 = 0x6439D3D1
DELETION_VECTORS = "DELETION_VECTORS"  # the index type of deletion-vector files


def deleted_positions(dv: DeletionVector) -> np.ndarray:
    """The deleted row positions (0-based, ascending) that ``dv`` points at."""
    try:
        with dv.path.store.open_input(dv.path.path) as f:
            version = f.read(1)
            f.seek(dv.offset)
            head = f.read(8)
            if len(head) < 8:
                raise CorruptTableError(f"deletion vector at {dv.path}:{dv.offset} is cut short")
            size, magic_be = struct.unpack(">iI", head)
            body = f.read(size - 4)
            crc = f.read(4)
    except FileNotFoundError as e:
        raise CorruptTableError(f"the deletion vector file {dv.path} is missing") from e
    if version != bytes([INDEX_FILE_VERSION]):
        raise UnsupportedFeatureError(f"{dv.path}: deletion vector file version {version!r} is not supported")
    (magic_le,) = struct.unpack("<I", head[4:])
    if magic_be == MAGIC_32 and size == dv.length:
        wide = False
    elif magic_le == MAGIC_64 and size == dv.length - 8:
        wide = True
    else:
        raise CorruptTableError(f"{dv.path}:{dv.offset} is not a deletion vector (length or magic number differ)")
    if len(body) != size - 4 or len(crc) != 4 or zlib.crc32(head[4:] + body) != struct.unpack(">I", crc)[0]:
        raise CorruptTableError(f"deletion vector at {dv.path}:{dv.offset} fails its checksum")
    try:
        bitmap = BitMap64.deserialize(body) if wide else BitMap.deserialize(body)
    except Exception as e:
        raise CorruptTableError(f"deletion vector at {dv.path}:{dv.offset} is not a roaring bitmap ({e})") from e
    return np.frombuffer(bitmap.to_array(), dtype=np.uint64 if wide else np.uint32).astype(np.uint64)


def serialized(positions: np.ndarray, wide: bool) -> bytes:
    """One deletion vector as an index file holds it (see the module docstring)."""
    if wide:
        bitmap = BitMap64(positions.astype(np.uint64))
        bitmap.run_optimize()  # as Paimon's writer run-length encodes before serializing
        data = struct.pack("<I", MAGIC_64) + bitmap.serialize()
        return struct.pack(">i", len(data)) + data + struct.pack(">I", zlib.crc32(data))
    if len(positions) and int(positions.max()) > 0x7FFFFFFF:
        raise UnsupportedFeatureError(
            "a data file of more than 2^31 rows needs 64-bit deletion vectors ('deletion-vectors.bitmap64' = true)"
        )
    data = struct.pack(">I", MAGIC_32) + BitMap(positions.astype(np.uint32)).serialize()
    return struct.pack(">i", len(data)) + data + struct.pack(">I", zlib.crc32(data))


def write_index(
    path_of: Callable[[dict[str, Any]], Location],
    partition: bytes,
    bucket: int,
    vectors: Mapping[str, np.ndarray],
    wide: bool,
) -> dict[str, Any]:
    """Writes the index file of a bucket's deletion vectors (data file name -> deleted
    positions, each non-empty) and returns its index manifest record; ``path_of(record)``
    is where the file goes."""
    name = f"index-{uuid.uuid4()}-0"
    out = bytearray([INDEX_FILE_VERSION])
    ranges = []
    for file_name, positions in vectors.items():
        positions = np.asarray(positions, dtype=np.uint64)
        if len(positions) > 1 and not np.all(positions[1:] > positions[:-1]):
            positions = np.unique(positions)
        entry = serialized(positions, wide)
        # The manifest's length: the bitmap and its magic number (32-bit), all of it (64-bit).
        length = len(entry) if wide else len(entry) - 8
        ranges.append({"f0": file_name, "f1": len(out), "f2": length, "_CARDINALITY": len(positions)})
        out += entry
    record = {
        "_VERSION": 1,
        "_KIND": ADD,
        "_PARTITION": partition,
        "_BUCKET": bucket,
        "_INDEX_TYPE": DELETION_VECTORS,
        "_FILE_NAME": name,
        "_FILE_SIZE": len(out),
        "_ROW_COUNT": len(ranges),
        "_DELETIONS_VECTORS_RANGES": ranges,
        "_EXTERNAL_PATH": None,
        "_GLOBAL_INDEX": None,
    }
    path = path_of(record)
    try:
        with path.store.open_output(path.path) as f:
            f.write(bytes(out))
    except OSError as e:
        path.delete()
        raise TableIOError(f"writing {path} failed: {e}") from e
    return record


@dataclass(frozen=True)
class DvUpdate:
    """A compaction's change to its bucket. ``replaced``: the bucket's deletion-vector
    index files and ``seen``: its files above level 0, when it was planned; if either
    differs when it commits, another writer changed the bucket meanwhile. ``rewrite``:
    the bucket's deletion vectors are now those of ``entry`` (a new index file's record;
    ``None``: none left), in place of ``replaced``. Picklable."""

    partition: bytes
    bucket: int
    entry: dict[str, Any] | None
    replaced: tuple[str, ...]
    seen: tuple[str, ...]
    rewrite: bool


def bucket_index_files(root: Location, snapshot: Snapshot | None, partition: bytes, bucket: int) -> tuple[str, ...]:
    """The names of a bucket's deletion-vector index files in ``snapshot``."""
    return tuple(sorted(e["_FILE_NAME"] for e in _bucket_entries(index_entries(root, snapshot), partition, bucket)))


def _bucket_entries(entries: list[dict[str, Any]], partition: bytes, bucket: int) -> list[dict[str, Any]]:
    return [
        e
        for e in entries
        if e["_INDEX_TYPE"] == DELETION_VECTORS and e["_PARTITION"] == partition and e["_BUCKET"] == bucket
    ]


def check_unchanged(previous: list[dict[str, Any]], live: list[dict[str, Any]], updates: Sequence[DvUpdate]) -> None:
    """Raises :class:`CommitConflictError` if a bucket of ``updates`` changed since its
    compaction read it: its deletion-vector index files (among ``previous``, the latest
    snapshot's index entries) or its files above level 0 (among ``live``)."""
    for u in updates:
        now = tuple(sorted(e["_FILE_NAME"] for e in _bucket_entries(previous, u.partition, u.bucket)))
        above = tuple(
            sorted(
                e["_FILE"]["_FILE_NAME"]
                for e in live
                if e["_PARTITION"] == u.partition and e["_BUCKET"] == u.bucket and e["_FILE"]["_LEVEL"] > 0
            )
        )
        if now != u.replaced or above != u.seen:
            raise CommitConflictError(
                f"another writer changed bucket {u.bucket} (its files above level 0 or its deletion vectors) since "
                "this write or compaction read it; write or compact again"
            )


def updated_entries(
    root: Location, latest: Snapshot | None, live: list[dict[str, Any]], updates: Sequence[DvUpdate]
) -> list[dict[str, Any]] | None:
    """The index manifest of a commit of ``updates`` on top of ``latest`` (``None``:
    unchanged): each rewritten bucket's deletion-vector entries replaced by its new one,
    as Paimon's commit does; :func:`check_unchanged` first."""
    previous = index_entries(root, latest)
    check_unchanged(previous, live, updates)
    rewritten = [u for u in updates if u.rewrite]
    if not rewritten:
        return None
    buckets = {(u.partition, u.bucket) for u in rewritten}
    kept = [
        e for e in previous if e["_INDEX_TYPE"] != DELETION_VECTORS or (e["_PARTITION"], e["_BUCKET"]) not in buckets
    ]
    return kept + [u.entry for u in rewritten if u.entry is not None]
