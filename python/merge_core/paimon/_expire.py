"""Expiring a Paimon table's old snapshots and the files only they use.

Snapshot files go first (oldest first, ``EARLIEST`` moved on), then the data files and
manifests that no kept snapshot references: a process killed midway leaves unused files
behind (removed by the next expire, as orphans), never a kept snapshot without its files.
"""

from __future__ import annotations

import time

from ..errors import TableIOError
from . import _binary
from ._fs import Location
from ._meta import INDEX_MANIFEST_VERSIONS, MANIFEST_VERSIONS, Snapshot, live_entries, read_avro, snapshot_ids
from ._paths import bucket_dir
from ._schema import TableSchema


def _metadata_files(root: Location, snap: Snapshot) -> set[str]:
    """The manifest directory's files that ``snap`` references."""
    names = {snap.base_manifest_list, snap.delta_manifest_list}
    for listing in (snap.base_manifest_list, snap.delta_manifest_list):
        names |= {m["_FILE_NAME"] for m in read_avro(root / "manifest" / listing, MANIFEST_VERSIONS)}
    if snap.index_manifest:
        names.add(snap.index_manifest)
        read_avro(root / "manifest" / snap.index_manifest, INDEX_MANIFEST_VERSIONS)
    return names


def _data_paths(root: Location, schema: TableSchema, snap: Snapshot) -> set[str]:
    """The paths (on the table's store) of the data files ``snap`` uses."""
    types = [schema.field(k).type for k in schema.partition_keys]
    out = set()
    for e in live_entries(root, snap):
        f = e["_FILE"]
        if f.get("_EXTERNAL_PATH"):
            continue  # files outside the table are never removed
        directory = root / bucket_dir(schema, _binary.decode(e["_PARTITION"], types), e["_BUCKET"])
        out.add((directory / f["_FILE_NAME"]).path)
        out |= {(directory / extra).path for extra in f.get("_EXTRA_FILES") or ()}
    return out


def expire_snapshots(root: Location, schema: TableSchema, keep: int, orphan_age: float) -> dict[str, int]:
    ids = snapshot_ids(root)
    kept, expired = ids[-keep:], ids[:-keep]
    kept_snaps = [Snapshot.load(root, i) for i in kept]
    expired_snaps = [Snapshot.load(root, i) for i in expired]
    live_data = set().union(*(_data_paths(root, schema, s) for s in kept_snaps))
    live_meta = set().union(*(_metadata_files(root, s) for s in kept_snaps))
    once_data = set().union(*(_data_paths(root, schema, s) for s in expired_snaps))
    once_meta = set().union(*(_metadata_files(root, s) for s in expired_snaps))
    store = root.store
    try:
        for i in expired:
            (root / "snapshot" / f"snapshot-{i}").delete()
        if kept:
            (root / "snapshot" / "EARLIEST").write_text(str(kept[0]))
        now = time.time()
        removed = {"files_removed": 0, "manifests_removed": 0, "bytes_removed": 0}

        def remove(path: str, used_before: bool, what: str) -> None:
            info = store.info(path)
            if info is not None and (used_before or now - info.mtime.timestamp() > orphan_age):
                store.delete(path)
                removed[what] += 1
                removed["bytes_removed"] += info.size

        for path in _table_data_files(root):
            if path not in live_data:
                remove(path, path in once_data, "files_removed")
                store.remove_empty_dirs(root.path, path)
        for name in (root / "manifest").names():
            if name not in live_meta and not name.startswith("index-manifest"):
                remove((root / "manifest" / name).path, name in once_meta, "manifests_removed")
        for name in (root / "snapshot").names("."):
            if name.endswith(".tmp"):
                remove((root / "snapshot" / name).path, False, "manifests_removed")
    except OSError as e:
        raise TableIOError(f"expiring snapshots of {root} failed: {e}") from e
    return {"snapshots_removed": len(expired), **removed}


def _table_data_files(root: Location) -> list[str]:
    """Data files in the table's bucket directories (``bucket-N/data-*``)."""
    return sorted(
        info.path
        for info in root.store.listing(root.path, recursive=True)
        if info.base_name.startswith("data-") and info.path.rpartition("/")[0].rpartition("/")[2].startswith("bucket-")
    )
