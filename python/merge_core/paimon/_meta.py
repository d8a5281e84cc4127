"""A Paimon table's snapshots and manifests: which data files a snapshot holds.

A snapshot (``snapshot/snapshot-N``, JSON) names a base and a delta manifest list; each
list (Avro) names manifests; each manifest (Avro) adds or deletes data files. Folding
every entry in order (an ADD, then a DELETE of the same file, cancel) gives the live
files. The index manifest lists the deletion-vector files of the snapshot.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from typing import Any

import fastavro

from ..errors import CorruptTableError, TableNotFoundError, UnsupportedFeatureError
from ..fs import Location, resolve
from ._paths import ManifestPaths, file_name

SNAPSHOT_VERSIONS = (3,)
MANIFEST_VERSIONS = (1, 2)
INDEX_MANIFEST_VERSIONS = (1,)
ADD, DELETE = 0, 1


@dataclass(frozen=True)
class Snapshot:
    id: int
    schema_id: int
    base_manifest_list: str
    delta_manifest_list: str
    index_manifest: str | None
    commit_kind: str
    time_millis: int
    total_record_count: int
    changelog_manifest_list: str | None = None
    statistics: str | None = None
    commit_user: str = ""  # the writer that committed it, and that writer's number for the commit:
    commit_identifier: int = 0  # how a streaming writer finds what it already committed

    @classmethod
    def load(cls, root: Location, snapshot_id: int) -> Snapshot:
        path = root / "snapshot" / f"snapshot-{snapshot_id}"
        try:
            return cls.read(path)
        except FileNotFoundError as e:
            raise TableNotFoundError(f"no snapshot {snapshot_id} in the table at {root}") from e

    @classmethod
    def read(cls, path: Location) -> Snapshot:
        """The snapshot a file holds: ``snapshot-N``, a tag (``tag-NAME``) or a kept
        changelog (``changelog-N``), which Paimon writes in the same form. A missing file
        raises ``FileNotFoundError``."""
        return cls.parse(path.read_bytes(), path)

    @classmethod
    def parse(cls, content: bytes, path: Location) -> Snapshot:
        """The snapshot ``content`` (the file at ``path``) holds."""
        try:
            data = json.loads(content.decode())
        except (ValueError, UnicodeDecodeError) as e:
            raise CorruptTableError(f"{path} is not a snapshot's JSON ({e})") from e
        if not isinstance(data, dict):
            raise CorruptTableError(f"{path} is not a snapshot's JSON (not an object)")
        if data.get("version") not in SNAPSHOT_VERSIONS:
            raise UnsupportedFeatureError(f"{path}: snapshot format version {data.get('version')} is not supported")
        try:
            return cls(
                int(data["id"]),
                int(data["schemaId"]),
                file_name(data["baseManifestList"], path),
                file_name(data["deltaManifestList"], path),
                _optional_name(data.get("indexManifest"), path),
                str(data.get("commitKind", "")),
                int(data.get("timeMillis", 0)),
                int(data.get("totalRecordCount") or 0),
                _optional_name(data.get("changelogManifestList"), path),
                _optional_name(data.get("statistics"), path),
                str(data.get("commitUser") or ""),
                int(data.get("commitIdentifier") or 0),
            )
        except (KeyError, TypeError, ValueError) as e:
            raise CorruptTableError(f"{path} lacks a field of a snapshot ({e})") from e


def _optional_name(value: Any, where: Location) -> str | None:
    return None if value is None else file_name(value, where)


def snapshot_ids(root: Location) -> list[int]:
    """Every snapshot id stored, oldest first (the LATEST and EARLIEST files are only hints)."""
    names = (n.removeprefix("snapshot-") for n in (root / "snapshot").names("snapshot-"))
    return sorted(int(n) for n in names if n.isdigit())


def latest_snapshot_id(root: Location) -> int | None:
    """The newest snapshot: the LATEST hint if no newer snapshot exists, else the directory's."""
    hint = root / "snapshot" / "LATEST"
    try:
        latest = int(hint.read_text().strip())
        if (root / "snapshot" / f"snapshot-{latest}").exists() and not (
            root / "snapshot" / f"snapshot-{latest + 1}"
        ).exists():
            return latest
    except (FileNotFoundError, ValueError):
        pass
    ids = snapshot_ids(root)
    return ids[-1] if ids else None


def last_identifier(root: Location, commit_user: str) -> int | None:
    """The ``commitIdentifier`` of the newest snapshot ``commit_user`` committed (None: it
    committed none that is still there), found as Paimon's ``latestSnapshotOfUser`` finds
    it: from the latest snapshot back to the earliest."""
    for snapshot_id in reversed(snapshot_ids(root)):
        try:
            snap = Snapshot.read(root / "snapshot" / f"snapshot-{snapshot_id}")
        except FileNotFoundError:  # expired meanwhile: older ones are too
            break
        if snap.commit_user == commit_user:
            return snap.commit_identifier
    return None


def read_avro(path: Location, versions: tuple[int, ...], fields: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """The records of an Avro file of the table's metadata, each of a known ``_VERSION``
    and with ``fields``. A read that fails for another reason than a missing file (a
    disk, a network) raises the store's ``OSError``: the file may be whole."""
    try:
        data = path.read_bytes()
    except FileNotFoundError as e:
        raise CorruptTableError(f"the table's metadata file {path} is missing") from e
    try:
        records = list(fastavro.reader(io.BytesIO(data)))
    except Exception as e:  # fastavro raises many types for damaged files
        raise CorruptTableError(f"{path} is not a readable Avro file ({type(e).__name__}: {e})") from e
    for record in records:
        if not isinstance(record, dict):
            raise CorruptTableError(f"{path} holds a {type(record).__name__}, not a record of the table's metadata")
        version = record.get("_VERSION")
        if version not in versions:
            raise UnsupportedFeatureError(f"{path}: manifest format version {version} is not supported")
        missing = [f for f in fields if f not in record]
        if missing:
            raise CorruptTableError(f"{path}: a record lacks the fields {missing}")
    return records


@dataclass(frozen=True)
class DataFile:
    """A live data file of a snapshot, as its manifest entry describes it."""

    partition: bytes
    bucket: int
    total_buckets: int
    name: str
    size: int
    rows: int
    min_key: bytes
    max_key: bytes
    min_sequence: int
    max_sequence: int
    schema_id: int
    level: int
    delete_rows: int
    external_path: str | None
    # The manifest's record of the file (statistics included), for a filter's skipping.
    record: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of(cls, entry: dict[str, Any]) -> DataFile:
        f = entry["_FILE"]
        return cls(
            entry["_PARTITION"],
            entry["_BUCKET"],
            entry["_TOTAL_BUCKETS"],
            f["_FILE_NAME"],
            f["_FILE_SIZE"],
            f["_ROW_COUNT"],
            f["_MIN_KEY"],
            f["_MAX_KEY"],
            f["_MIN_SEQUENCE_NUMBER"],
            f["_MAX_SEQUENCE_NUMBER"],
            f["_SCHEMA_ID"],
            f["_LEVEL"],
            f.get("_DELETE_ROW_COUNT") or 0,  # null: written before Paimon counted them (none)
            f.get("_EXTERNAL_PATH"),
            f,
        )


def _identifier(entry: dict[str, Any]) -> tuple:
    """What makes a manifest entry one file: an ADD and a DELETE of it cancel."""
    f = entry["_FILE"]
    return (
        entry["_PARTITION"],
        entry["_BUCKET"],
        f["_LEVEL"],
        f["_FILE_NAME"],
        tuple(f.get("_EXTRA_FILES") or ()),
        f.get("_EMBEDDED_FILE_INDEX"),
        f.get("_EXTERNAL_PATH"),
    )


# The fields of a manifest entry and of its file that the table reads.
ENTRY_FIELDS = ("_KIND", "_PARTITION", "_BUCKET", "_TOTAL_BUCKETS", "_FILE")
FILE_FIELDS = (
    "_FILE_NAME",
    "_FILE_SIZE",
    "_ROW_COUNT",
    "_MIN_KEY",
    "_MAX_KEY",
    "_MIN_SEQUENCE_NUMBER",
    "_MAX_SEQUENCE_NUMBER",
    "_SCHEMA_ID",
    "_LEVEL",
)


def live_entries(root: Location, snapshot: Snapshot) -> list[dict[str, Any]]:
    """The ADD entries of ``snapshot``'s live files: every manifest entry of its base then
    delta lists, folded (an ADD and a later DELETE of the same file cancel)."""
    live: dict[tuple, dict[str, Any]] = {}
    manifest_dir = root / "manifest"
    paths = ManifestPaths(root)
    for listing in (snapshot.base_manifest_list, snapshot.delta_manifest_list):
        for meta in read_avro(manifest_dir / listing, MANIFEST_VERSIONS, ("_FILE_NAME",)):
            manifest = manifest_dir / file_name(meta["_FILE_NAME"], manifest_dir / listing)
            for entry in read_avro(manifest, MANIFEST_VERSIONS, ENTRY_FIELDS):
                missing = [f for f in FILE_FIELDS if f not in (entry["_FILE"] or {})]
                if missing:
                    raise CorruptTableError(f"{manifest}: an entry's file lacks the fields {missing}")
                paths.data_file(entry["_FILE"], manifest)
                key = _identifier(entry)
                if entry["_KIND"] == ADD:
                    if key in live:
                        raise CorruptTableError(f"snapshot {snapshot.id} adds file {key[3]} twice")
                    live[key] = entry
                elif entry["_KIND"] == DELETE and key in live:
                    del live[key]
                elif entry["_KIND"] == DELETE:
                    raise CorruptTableError(f"snapshot {snapshot.id} deletes file {key[3]}, which it never added")
                else:
                    raise CorruptTableError(f"manifest {meta['_FILE_NAME']}: unknown entry kind {entry['_KIND']}")
    return list(live.values())


class LiveEntries:
    """The live entries of the snapshot read last, kept while it stays the one asked for:
    a snapshot is known by its id and manifest lists (whose names are never reused), so
    a write's sequence numbers, its compaction's plan and its commit's first attempt,
    all on the same latest snapshot, read its manifests once."""

    def __init__(self) -> None:
        self._known: tuple[tuple[int, str, str], list[dict[str, Any]], list[DataFile]] | None = None

    def entries(self, root: Location, snapshot: Snapshot) -> list[dict[str, Any]]:
        return list(self._of(root, snapshot)[1])

    def files(self, root: Location, snapshot: Snapshot) -> list[DataFile]:
        return list(self._of(root, snapshot)[2])

    def _of(self, root: Location, snapshot: Snapshot) -> tuple[Any, list[dict[str, Any]], list[DataFile]]:
        key = (snapshot.id, snapshot.base_manifest_list, snapshot.delta_manifest_list)
        if self._known is None or self._known[0] != key:
            entries = live_entries(root, snapshot)
            self._known = (key, entries, [DataFile.of(e) for e in entries])
        return self._known


def live_files(root: Location, snapshot: Snapshot) -> list[DataFile]:
    """The data files of ``snapshot``."""
    return [DataFile.of(e) for e in live_entries(root, snapshot)]


@dataclass(frozen=True)
class DeletionVector:
    """Where a data file's deleted row positions are stored: a range of an index file."""

    path: Location
    offset: int
    length: int


def deletion_vectors(
    root: Location, snapshot: Snapshot, in_data_dir: Any
) -> dict[tuple[bytes, int, str], DeletionVector]:
    """The deletion vectors of ``snapshot`` by (partition, bucket, data file name).
    ``in_data_dir(partition, bucket)`` is the bucket's directory, where index files live
    when the table keeps them beside its data (``index-file-in-data-file-dir``)."""
    if not snapshot.index_manifest:
        return {}
    out = {}
    paths = ManifestPaths(root)
    index_manifest = root / "manifest" / snapshot.index_manifest
    fields = ("_KIND", "_PARTITION", "_BUCKET", "_INDEX_TYPE", "_FILE_NAME")
    for entry in read_avro(index_manifest, INDEX_MANIFEST_VERSIONS, fields):
        if entry["_INDEX_TYPE"] != "DELETION_VECTORS" or entry["_KIND"] != ADD:
            continue
        paths.index_file(entry, index_manifest)
        partition, bucket = entry["_PARTITION"], entry["_BUCKET"]
        directory = in_data_dir(partition, bucket)
        external = paths.external(entry.get("_EXTERNAL_PATH"), index_manifest)
        path = resolve(external) if external else (directory or root / "index") / entry["_FILE_NAME"]
        for r in entry.get("_DELETIONS_VECTORS_RANGES") or ():
            if r is None:
                continue
            if not isinstance(r, dict) or any(f not in r for f in ("f0", "f1", "f2")):
                raise CorruptTableError(f"{index_manifest}: a deletion-vector range lacks its file, offset or length")
            out[(partition, bucket, r["f0"])] = DeletionVector(path, r["f1"], r["f2"])
    return out
