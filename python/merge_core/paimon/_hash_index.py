"""A dynamic-bucket table's HASH index: which keys live in which bucket of a partition.

For each (partition, bucket) that holds keys, a HASH index file lists the hashes of the
bucket's keys (Java's ``BinaryRow.hashCode`` of the trimmed primary key), each once, as
bare big-endian int32 values: no header, no checksum, 4 bytes a key. It lives in the
table's ``index/`` directory as ``index-<uuid>-<n>`` (in the bucket's directory with
``index-file-in-data-file-dir``).

A snapshot names its index files in its ``indexManifest`` (Avro, every entry an ADD):
one HASH entry per (partition, bucket), beside the deletion-vector and global-index
entries other writers make. A commit that rewrites buckets' HASH files writes a new
index manifest in which each new entry replaces its bucket's old one, as Paimon's
``BucketedCombiner`` does; every other entry is kept as it was. The old files stay
until ``expire`` finds nothing names them.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import fastavro
import numpy as np

from ..errors import CommitConflictError, CorruptTableError, InvalidInputError, TableIOError
from ..fs import Location, resolve
from ._meta import ADD, INDEX_MANIFEST_VERSIONS, Snapshot, read_avro
from ._options import bool_option
from ._paths import Layout, ManifestPaths, file_name
from ._schema import TableSchema

HASH_INDEX = "HASH"
HASH_BYTES = np.dtype(">i4")  # one key's hash in an index file

# The index manifest record as Java writes it (Paimon 1.3+), field by field.
INDEX_MANIFEST_ENTRY = fastavro.parse_schema(
    {
        "type": "record",
        "name": "record",
        "namespace": "org.apache.paimon.avro.generated",
        "fields": [
            {"name": "_VERSION", "type": "int"},
            {"name": "_KIND", "type": "int"},
            {"name": "_PARTITION", "type": "bytes"},
            {"name": "_BUCKET", "type": "int"},
            {"name": "_INDEX_TYPE", "type": "string"},
            {"name": "_FILE_NAME", "type": "string"},
            {"name": "_FILE_SIZE", "type": "long"},
            {"name": "_ROW_COUNT", "type": "long"},
            {
                "name": "_DELETIONS_VECTORS_RANGES",
                "type": [
                    "null",
                    {
                        "type": "array",
                        "items": [
                            "null",
                            {
                                "type": "record",
                                "name": "record__DELETIONS_VECTORS_RANGES",
                                "fields": [
                                    {"name": "f0", "type": "string"},
                                    {"name": "f1", "type": "int"},
                                    {"name": "f2", "type": "int"},
                                    {"name": "_CARDINALITY", "type": ["null", "long"], "default": None},
                                ],
                            },
                        ],
                    },
                ],
                "default": None,
            },
            {"name": "_EXTERNAL_PATH", "type": ["null", "string"], "default": None},
            {
                "name": "_GLOBAL_INDEX",
                "type": [
                    "null",
                    {
                        "type": "record",
                        "name": "record__GLOBAL_INDEX",
                        "fields": [
                            {"name": "_ROW_RANGE_START", "type": "long"},
                            {"name": "_ROW_RANGE_END", "type": "long"},
                            {"name": "_INDEX_FIELD_ID", "type": "int"},
                            {"name": "_EXTRA_FIELD_IDS", "type": ["null", {"type": "array", "items": "int"}]},
                            {"name": "_INDEX_META", "type": ["null", "bytes"]},
                            {"name": "_SOURCE_META", "type": ["null", "bytes"]},
                        ],
                    },
                ],
                "default": None,
            },
        ],
    }
)
ENTRY_FIELDS = ("_KIND", "_PARTITION", "_BUCKET", "_INDEX_TYPE", "_FILE_NAME")


@dataclass(frozen=True)
class HashIndexUpdate:
    """A bucket's new HASH index file (``entry``, its index manifest record) and the
    names of its partition's HASH files that the write's bucket assignment read
    (``read``): if the partition's files differ when the write commits, another writer
    placed keys meanwhile and the assignment may clash with it. Picklable."""

    entry: dict[str, Any]
    read: tuple[str, ...]


def index_entries(root: Location, snapshot: Snapshot | None) -> list[dict[str, Any]]:
    """The entries of ``snapshot``'s index manifest (every index file of the table), in
    the manifest's order."""
    if snapshot is None or not snapshot.index_manifest:
        return []
    path = root / "manifest" / snapshot.index_manifest
    entries = read_avro(path, INDEX_MANIFEST_VERSIONS, ENTRY_FIELDS)
    paths = ManifestPaths(root)
    for entry in entries:
        if entry["_KIND"] != ADD:
            raise CorruptTableError(f"{path}: an index manifest entry is not an ADD (kind {entry['_KIND']})")
        paths.index_file(entry, path)
    return entries


def hash_entries(entries: Iterable[dict[str, Any]]) -> dict[bytes, list[dict[str, Any]]]:
    """The HASH entries of ``entries`` by partition (serialized row), in order."""
    out: dict[bytes, list[dict[str, Any]]] = {}
    for entry in entries:
        if entry["_INDEX_TYPE"] == HASH_INDEX:
            out.setdefault(entry["_PARTITION"], []).append(entry)
    return out


def index_file(root: Location, schema: TableSchema, entry: dict[str, Any]) -> Location:
    """Where an index manifest entry's file is: its external path, the bucket's
    directory (``index-file-in-data-file-dir``) or the table's ``index/``."""
    external = ManifestPaths(root).external(entry.get("_EXTERNAL_PATH"), f"index file {entry['_FILE_NAME']}")
    if external:
        return resolve(external)
    name = file_name(entry["_FILE_NAME"], "an index manifest")
    if bool_option(schema.options, "index-file-in-data-file-dir"):
        return root / Layout(schema).bucket_dir(entry["_PARTITION"], entry["_BUCKET"]) / name
    return root / "index" / name


def read_hashes(path: Location) -> np.ndarray:
    """The key hashes of a HASH index file (int32, in the file's order)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError as e:
        raise CorruptTableError(f"the HASH index file {path} is missing") from e
    if len(data) % HASH_BYTES.itemsize:
        raise CorruptTableError(f"{path} is not a HASH index file ({len(data)} bytes, not 4 a key)")
    return np.frombuffer(data, HASH_BYTES).astype(np.int32)


def write_hashes(root: Location, schema: TableSchema, partition: bytes, bucket: int, hashes: np.ndarray) -> dict:
    """Writes a bucket's HASH index file holding ``hashes`` (distinct); returns its index
    manifest record."""
    name = f"index-{uuid.uuid4()}-0"
    entry = {
        "_VERSION": 1,
        "_KIND": ADD,
        "_PARTITION": partition,
        "_BUCKET": bucket,
        "_INDEX_TYPE": HASH_INDEX,
        "_FILE_NAME": name,
        "_FILE_SIZE": len(hashes) * HASH_BYTES.itemsize,
        "_ROW_COUNT": len(hashes),
        "_DELETIONS_VECTORS_RANGES": None,
        "_EXTERNAL_PATH": None,
        "_GLOBAL_INDEX": None,
    }
    path = index_file(root, schema, entry)
    try:
        with path.store.open_output(path.path) as out:
            out.write(np.asarray(hashes, HASH_BYTES).tobytes())
    except OSError as e:
        path.delete()
        raise TableIOError(f"writing {path} failed: {e}") from e
    return entry


def remove(root: Location, schema: TableSchema, update: HashIndexUpdate) -> None:
    """Removes the index file of an update that will not be committed."""
    index_file(root, schema, update.entry).delete()


def check_names(updates: Iterable[HashIndexUpdate]) -> None:
    """Refuses updates naming an index file by a path rather than a name."""
    for update in updates:
        file_name(update.entry.get("_FILE_NAME"), "a commit message", InvalidInputError)


def updated_entries(
    root: Location, latest: Snapshot | None, updates: Sequence[HashIndexUpdate]
) -> list[dict[str, Any]]:
    """The index manifest of a commit of ``updates`` on top of ``latest``: its entries,
    each bucket's HASH entry replaced by its update's. A partition whose HASH files
    changed since the write read them is a :class:`CommitConflictError`."""
    previous = index_entries(root, latest)
    current = hash_entries(previous)
    for update in updates:
        partition = update.entry["_PARTITION"]
        now = sorted(e["_FILE_NAME"] for e in current.get(partition, ()))
        if now != sorted(update.read):
            raise CommitConflictError(
                "another writer placed keys in a partition of this dynamic-bucket write since it assigned "
                f"buckets (its HASH index files changed, bucket {update.entry['_BUCKET']}); write again"
            )
    replaced = {(u.entry["_PARTITION"], u.entry["_BUCKET"]) for u in updates}
    kept = [e for e in previous if e["_INDEX_TYPE"] != HASH_INDEX or (e["_PARTITION"], e["_BUCKET"]) not in replaced]
    return kept + [u.entry for u in updates]
