"""A table's changes between two snapshots (``Table.changes``), as Paimon's incremental
read (``IncrementalDeltaStartingScanner``) returns them.

Which files: for each snapshot in ``(start, end]``, with ``changelog-producer`` =
``none`` the files its *delta* manifests add if it is an APPEND commit (Paimon's DELTA
scan mode, ``DeltaFollowUpScanner``: a compaction changes no row); with a producer the
files its *changelog* manifests add unless it is an OVERWRITE (the CHANGELOG mode,
``ChangelogFollowUpScanner``). A snapshot that expired while its changelog was kept
(``changelog/changelog-N``, ``changelog.num-retained.*``) is read from there.

How they are read: as Paimon's streaming splits are, each file's rows as stored, one
file after another, never merged: retracts (``-U``, ``-D``) included, each row with its
row kind in a first column ``_row_kind`` (``+I``, ``-U``, ``+U``, ``-D``, as pypaimon's
``with_include_row_kind``). Files come in snapshot order, then (partition, bucket) and
manifest order, so the changes of one key come in the order they were committed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ..errors import CorruptTableError, InvalidInputError, TableNotFoundError, UnsupportedFeatureError
from ..fs import Location
from . import _binary, _key_order
from ._batches import BatchStream
from ._changelog import producer
from ._meta import ADD, MANIFEST_VERSIONS, DataFile, Snapshot, read_avro, snapshot_ids
from ._paths import ManifestPaths, file_name
from ._plan import VALUE_KIND

ROW_KIND = "_row_kind"
KIND_NAMES = ("+I", "-U", "+U", "-D")


def kept_changelog_ids(root: Location) -> list[int]:
    """The ids of the changelogs kept apart from their snapshots (``changelog/changelog-N``)."""
    names = (n.removeprefix("changelog-") for n in (root / "changelog").names("changelog-"))
    return sorted(int(n) for n in names if n.isdigit())


def commit_of(root: Location, snapshot_id: int) -> Snapshot:
    """Snapshot ``snapshot_id``, or the changelog kept of it once it expired."""
    try:
        return Snapshot.read(root / "snapshot" / f"snapshot-{snapshot_id}")
    except FileNotFoundError:
        pass
    try:
        return Snapshot.read(root / "changelog" / f"changelog-{snapshot_id}")
    except FileNotFoundError as e:
        raise TableNotFoundError(f"snapshot {snapshot_id} of {root} is gone, and no changelog of it is kept") from e


def check_range(root: Location, start: Any, end: Any) -> tuple[int, int]:
    """``(start, end)`` checked as Paimon's ``betweenSnapshotIds`` checks them: ``start``
    (exclusive) from one before the earliest snapshot or kept changelog, ``end`` (inclusive,
    default the latest) at most the latest, and ``start`` at most ``end``."""
    for name, value in (("start", start), ("end", end)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            raise InvalidInputError(f"{name} must be a snapshot id (an integer, 0 or more), got {value!r}")
    ids = snapshot_ids(root)
    if not ids:
        raise TableNotFoundError(f"the table at {root} has no snapshot yet")
    earliest = min([ids[0], *kept_changelog_ids(root)])
    end = ids[-1] if end is None else end
    if start < earliest - 1 or end > ids[-1] or start > end:
        raise InvalidInputError(
            f"changes({start}, {end}) is out of the table's range: start from {earliest - 1} "
            f"(exclusive), end at most {ids[-1]}, and start at most end"
        )
    return start, end


@dataclass(frozen=True)
class ChangeFile:
    """A file of changes: the snapshot that committed it and the file."""

    snapshot: int
    file: DataFile


def change_files(root: Location, options: dict[str, str], start: int, end: int) -> list[ChangeFile]:
    """The files whose rows are the changes of ``(start, end]``, in the order they are read."""
    changelog = producer(options) != "none"
    paths = ManifestPaths(root)
    out: list[ChangeFile] = []
    for snapshot_id in range(start + 1, end + 1):
        snap = commit_of(root, snapshot_id)
        if changelog:
            listing = snap.changelog_manifest_list if snap.commit_kind != "OVERWRITE" else None
        else:
            listing = snap.delta_manifest_list if snap.commit_kind == "APPEND" else None
        if listing:
            files = [DataFile.of(e) for e in _added(root, paths, listing)]
            if any(f.bucket < 0 for f in files):
                raise UnsupportedFeatureError(
                    f"snapshot {snapshot_id} wrote rows into postponed buckets (bucket-postpone/, in the order "
                    "given, not sorted): merge-core does not read them as changes"
                )
            out += [ChangeFile(snapshot_id, f) for f in files]
    return out


def _added(root: Location, paths: ManifestPaths, listing: str) -> list[dict[str, Any]]:
    """The entries of the manifests ``listing`` names, all ADD (a delta or changelog
    manifest deletes nothing: a DELETE is damage, as Paimon's scan says)."""
    manifest_dir = root / "manifest"
    entries = []
    for meta in read_avro(manifest_dir / listing, MANIFEST_VERSIONS, ("_FILE_NAME",)):
        manifest = manifest_dir / file_name(meta["_FILE_NAME"], manifest_dir / listing)
        for entry in read_avro(manifest, MANIFEST_VERSIONS, ("_KIND", "_PARTITION", "_BUCKET", "_FILE")):
            if entry["_KIND"] != ADD:
                raise CorruptTableError(f"{manifest}: a delta or changelog manifest deletes a file")
            paths.data_file(entry["_FILE"], manifest)
            entries.append(entry)
    return entries


def ordered(files: list[ChangeFile], partition_types: list[pa.DataType]) -> list[ChangeFile]:
    """``files`` by snapshot, then partition and bucket, then as their manifests list them."""
    position = {id(f): i for i, f in enumerate(files)}
    rows = {f.file.partition for f in files}
    partition = {p: _key_order.sort_key(_binary.decode(p, partition_types)) for p in rows}
    return sorted(files, key=lambda f: (f.snapshot, partition[f.file.partition], f.file.bucket, position[id(f)]))


class ChangeStream(BatchStream):
    """The rows of change files as a read gives them (the table's columns and
    ``_VALUE_KIND``), turned into ``_row_kind`` then the columns asked for: a
    :class:`merge_core.Stream` in all it offers (``schema``, ``stats``, iteration,
    ``read_all``, the Arrow C stream)."""

    def __init__(self, stream: Any, columns: list[str]):
        self._stream = stream
        self._columns = columns
        self._names = pa.array(KIND_NAMES)
        fields = [stream.schema.field(c) for c in columns]
        self.schema = pa.schema([pa.field(ROW_KIND, pa.string(), False), *fields])
        self._batches = self._converted()

    @property
    def stats(self) -> dict[str, int]:
        """The read's: ``snapshots`` (in the range) and ``files_read``, among others."""
        return self._stream.stats

    def _converted(self) -> Iterator[pa.RecordBatch]:
        for batch in self._stream:
            kinds = self._names.take(batch.column(VALUE_KIND))
            yield pa.RecordBatch.from_arrays([kinds, *(batch.column(c) for c in self._columns)], schema=self.schema)
