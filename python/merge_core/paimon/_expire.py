"""Expiring a Paimon table's old snapshots, and removing the files nothing uses any more.

*Which snapshots expire* is Paimon's rule (``ExpireSnapshotsImpl``): from the earliest
on, every snapshot beyond the newest ``snapshot.num-retained.max``; then those older
than the newest ``snapshot.num-retained.min`` (10) whose successor is older than
``snapshot.time-retained`` (1 h), stopping at the first that is not. Never one a
consumer (``consumer/consumer-*``) still has to read, never more than
``snapshot.expire.limit`` (50) at a time. ``keep_snapshots=N`` asks for exactly the
newest N instead (no time protection), as Paimon's procedure does with
``retain_min = retain_max = N``.

*Which files go* is decided from the file names that metadata holds, never from a path
recomputed from a partition's values. A file stays while anything kept names it: a
kept snapshot, a tag, a branch's snapshot or tag, a kept changelog (their manifest
lists, manifests, index manifest, index and statistics files, and the data and
changelog files live in them). A file only expired snapshots named goes at once; a
file nothing names (a failed write's) once it is ``orphan_age`` seconds old. Files
outside the table (external paths) are never removed.

Order: the snapshot files go first (oldest first, ``EARLIEST`` moved on), then the
files: a process killed midway leaves unused files behind (taken by a later expire as
orphans), never a kept snapshot without its files. Another expire may run at the same
time: a metadata file missing while the snapshot (or tag) that names it is gone too
was removed by it and is skipped; missing while that snapshot is still there means the
table is damaged: nothing is removed, and :class:`CorruptTableError` says which file.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..errors import CorruptTableError, TableIOError, UnsupportedFeatureError
from ..fs import Location
from ._meta import ADD, INDEX_MANIFEST_VERSIONS, MANIFEST_VERSIONS, Snapshot, read_avro, snapshot_ids
from ._options import bool_option, duration_ms, int_option
from ._paths import file_name

# Directories at the table's root that hold metadata of their own kind: never searched
# for data files (a branch's data files live in the table's bucket directories).
METADATA_DIRS = ("snapshot", "tag", "branch", "schema", "consumer", "changelog", "manifest", "index", "statistics")
DATA_FILE_PREFIXES = ("data-", "changelog-", "index-")


@dataclass(frozen=True)
class Retention:
    """How many snapshots an expire keeps (Paimon's ``ExpireConfig``)."""

    retain_min: int
    retain_max: int
    time_retained_ms: int
    max_deletes: int

    @classmethod
    def of(cls, options: dict[str, str], keep_snapshots: int | None) -> Retention:
        limit = int_option(options, "snapshot.expire.limit", 50, minimum=1)
        if keep_snapshots is not None:
            return cls(keep_snapshots, keep_snapshots, 0, limit)
        low = int_option(options, "snapshot.num-retained.min", 10, minimum=1)
        high = int_option(options, "snapshot.num-retained.max", (1 << 31) - 1, minimum=1)
        if high < low:
            raise UnsupportedFeatureError(
                f"option 'snapshot.num-retained.max' ({high}) is less than 'snapshot.num-retained.min' ({low})"
            )
        return cls(low, high, duration_ms(options, "snapshot.time-retained", "1 h"), limit)


def expire_snapshots(
    root: Location, options: dict[str, str], keep_snapshots: int | None, orphan_age: float
) -> dict[str, int]:
    """Expires what :class:`Retention` says and removes the files nothing kept uses."""
    _refuse_decoupled_changelog(options)
    expired = _expired_snapshots(root, Retention.of(options, keep_snapshots), options)
    gone = {snap.id for snap in expired}
    references = References(root)
    references.add_kept([i for i in snapshot_ids(root) if i not in gone])
    for snap in expired:
        references.add_expired(snap)
    candidates = list(_candidates(root))
    references.check_layout(candidates)
    try:
        for snap in expired:
            (root / "snapshot" / f"snapshot-{snap.id}").delete()
        kept = snapshot_ids(root)
        if expired and kept:
            (root / "snapshot" / "EARLIEST").write_text(str(kept[0]))
        references.add_kept(kept)  # what was committed, tagged or branched meanwhile
        clean_dirs = bool_option(options, "snapshot.clean-empty-directories")
        removed = _remove_unused(root, candidates, references, orphan_age, clean_dirs)
    except OSError as e:
        raise TableIOError(f"expiring snapshots of {root} failed: {e}") from e
    return {"snapshots_removed": len(expired), **removed}


def _refuse_decoupled_changelog(options: dict[str, str]) -> None:
    """A changelog kept longer than its snapshots needs ``changelog/changelog-N`` files
    written as snapshots expire, which merge-core does not write yet."""
    for key in ("changelog.num-retained.min", "changelog.num-retained.max", "changelog.time-retained"):
        if key in options:
            raise UnsupportedFeatureError(
                f"expiring a table with option '{key}' (a changelog kept apart from its snapshots) "
                "is not supported by merge-core yet; use Paimon's expire_snapshots procedure"
            )


def _expired_snapshots(root: Location, retention: Retention, options: dict[str, str]) -> list[Snapshot]:
    """The snapshots that expire, oldest first (Paimon's ``ExpireSnapshotsImpl.expire``)."""
    ids = snapshot_ids(root)
    if not ids:
        return []
    earliest, latest = ids[0], ids[-1]
    low = max(latest - retention.retain_max + 1, earliest)
    end = latest - retention.retain_min + 1
    if not bool_option(options, "consumer.changelog-only"):
        end = min(end, *_consumers_next(root))
    end = min(end, earliest + retention.max_deletes)
    if retention.time_retained_ms:
        older_than = int(time.time() * 1000) - retention.time_retained_ms
        for i in range(low, end):
            successor = _try_load(root / "snapshot" / f"snapshot-{i + 1}")
            if successor is not None and older_than <= successor.time_millis:
                end = i
                break
    out = []
    for i in ids:
        if i >= end:
            break
        snap = _try_load(root / "snapshot" / f"snapshot-{i}")
        if snap is not None:  # None: another expire took it
            out.append(snap)
    return out


def _consumers_next(root: Location) -> Iterator[int]:
    """The next snapshot of each consumer (``consumer/consumer-ID``), which must stay."""
    yield 1 << 62
    for name in (root / "consumer").names("consumer-"):
        path = root / "consumer" / name
        try:
            data = json.loads(path.read_text())
            yield int(data["nextSnapshot"])
        except FileNotFoundError:
            continue  # the consumer was removed meanwhile
        except (ValueError, KeyError, TypeError) as e:
            raise CorruptTableError(f"{path} is not a consumer's JSON ({e}); nothing was expired") from e


def _try_load(path: Location) -> Snapshot | None:
    try:
        return Snapshot.read(path)
    except FileNotFoundError:
        return None


@dataclass
class References:
    """The file names that snapshots use, read from their metadata: ``kept`` (what must
    stay) and ``expired`` (what only expired snapshots used: removed at once unless kept)."""

    root: Location
    kept_meta: set[str] = field(default_factory=set)
    kept_data: set[str] = field(default_factory=set)
    expired_names: set[str] = field(default_factory=set)
    latest: tuple[Location, set[str]] | None = None  # the latest snapshot's file and data files
    _avro: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def add_expired(self, snap: Snapshot, path: Location | None = None) -> None:
        """Every file ``snap`` names (held by ``path``, default its snapshot file) may go."""
        path = path or self.root / "snapshot" / f"snapshot-{snap.id}"
        meta, data = self._names(snap, path.exists, every_entry=True)
        self.expired_names |= meta | data

    def add_kept(self, snapshot_ids_of_main: list[int]) -> None:
        """Everything kept: main's remaining snapshots (the latest first), its tags and
        changelogs, and every branch's snapshots, tags and changelogs."""
        for path in self._kept_files(snapshot_ids_of_main):
            self.add_kept_file(path)

    def add_kept_file(self, path: Location) -> None:
        """The files the snapshot in ``path`` (a snapshot, tag or changelog file) uses stay;
        the first one added is the one :meth:`check_layout` checks."""
        snap = _try_load(path)
        if snap is None:
            return  # expired or deleted by another process meanwhile
        meta, data = self._names(snap, path.exists, every_entry=False)
        self.kept_meta |= meta
        self.kept_data |= data
        if self.latest is None:
            self.latest = (path, data)

    def check_layout(self, candidates: list[tuple[Any, str]]) -> None:
        """Refuses to go on unless every data file of the latest snapshot is where the
        expire looks for files: otherwise the table keeps its files where merge-core does
        not know to look, or has lost one, and deciding what is unused would be a guess."""
        if self.latest is None:
            return
        path, names = self.latest
        found = {info.base_name for info, what in candidates if what == "files_removed"}
        missing = sorted(names - found)
        if missing and path.exists():
            raise UnsupportedFeatureError(
                f"expire found no data file {missing[0]} (of {len(missing)} the latest snapshot uses) in the "
                f"bucket directories of {self.root}: the file is missing, or the table keeps its files where "
                "merge-core does not look; nothing was removed"
            )

    def _kept_files(self, main_ids: list[int]) -> Iterator[Location]:
        root = self.root
        yield from (root / "snapshot" / f"snapshot-{i}" for i in reversed(main_ids))
        yield from _listed(root / "tag", "tag-")
        yield from _listed(root / "changelog", "changelog-")
        for branch in (root / "branch").names("branch-"):
            base = root / "branch" / branch
            for directory, prefix in (("snapshot", "snapshot-"), ("tag", "tag-"), ("changelog", "changelog-")):
                yield from _listed(base / directory, prefix)

    def _names(self, snap: Snapshot, still_there: Any, every_entry: bool) -> tuple[set[str], set[str]]:
        """The metadata and data file names ``snap`` uses (``every_entry``: also the files
        its manifests delete). A metadata file gone while ``still_there()`` is damage."""
        meta: set[str] = set()
        data: set[str] = set()
        lists = [snap.base_manifest_list, snap.delta_manifest_list, snap.changelog_manifest_list]
        live: dict[tuple, str] = {}
        for listing in filter(None, lists):
            meta.add(listing)
            for manifest in self._read(listing, MANIFEST_VERSIONS, still_there):
                name = file_name(manifest["_FILE_NAME"], listing)
                meta.add(name)
                for entry in self._read(name, MANIFEST_VERSIONS, still_there):
                    names = _entry_names(entry, name)
                    key = _entry_key(entry)
                    if every_entry or listing == snap.changelog_manifest_list:
                        data |= names
                    elif entry["_KIND"] == ADD:
                        live[key] = names
                    else:
                        live.pop(key, None)
        for names in live.values():
            data |= names
        if snap.index_manifest:
            meta.add(snap.index_manifest)
            for entry in self._read(snap.index_manifest, INDEX_MANIFEST_VERSIONS, still_there):
                meta.add(file_name(entry["_FILE_NAME"], snap.index_manifest))
        if snap.statistics:
            meta.add(snap.statistics)
        return meta, data

    def _read(self, name: str, versions: tuple[int, ...], still_there: Any) -> list[dict[str, Any]]:
        """A metadata file's records (read once per expire); ``[]`` if it went with the
        snapshot that named it."""
        if name not in self._avro:
            try:
                self._avro[name] = read_avro(self.root / "manifest" / name, versions)
            except CorruptTableError:
                if (self.root / "manifest" / name).exists() or still_there():
                    raise
                return []  # its snapshot was expired by another process meanwhile
        return self._avro[name]


def _listed(directory: Location, prefix: str) -> Iterable[Location]:
    return (directory / name for name in directory.names(prefix))


def _entry_key(entry: dict[str, Any]) -> tuple:
    f = entry["_FILE"]
    return entry["_PARTITION"], entry["_BUCKET"], f["_LEVEL"], f["_FILE_NAME"]


def _entry_names(entry: dict[str, Any], manifest: str) -> set[str]:
    """The names of a manifest entry's files inside the table (a file at an external
    path is never removed, so it needs no name here)."""
    f = entry["_FILE"]
    if f.get("_EXTERNAL_PATH"):
        return set()
    return {file_name(f["_FILE_NAME"], manifest), *(file_name(x, manifest) for x in f.get("_EXTRA_FILES") or ())}


def _remove_unused(
    root: Location, candidates: list[tuple[Any, str]], references: References, orphan_age: float, clean_dirs: bool
) -> dict[str, int]:
    store = root.store
    now = time.time()
    removed = {"files_removed": 0, "manifests_removed": 0, "bytes_removed": 0}
    for info, what in candidates:
        name = info.base_name
        if name in references.kept_data or name in references.kept_meta:
            continue
        if name in references.expired_names or now - info.mtime.timestamp() > orphan_age:
            store.delete(info.path)
            removed[what] += 1
            removed["bytes_removed"] += info.size
            if clean_dirs and what == "files_removed":
                store.remove_empty_dirs(root.path, info.path)
    return removed


def _candidates(root: Location) -> Iterator[tuple[Any, str]]:
    """The files an expire may remove: the metadata directories' files, and Paimon's
    files in bucket directories (``data-``, ``changelog-``, ``index-``) wherever those
    sit below the root (partition directories, ``bucket-postpone``, a path directory)."""
    store = root.store
    for directory in ("manifest", "index", "statistics"):
        for info in store.listing((root / directory).path):
            if info.is_file:
                yield info, "manifests_removed"
    for info in store.listing(root.path):
        if info.is_file or info.base_name in METADATA_DIRS:
            continue
        for found in store.listing(info.path, recursive=True):
            parent = found.path.rpartition("/")[0].rpartition("/")[2]
            if found.is_file and parent.startswith("bucket-") and found.base_name.startswith(DATA_FILE_PREFIXES):
                yield found, "files_removed"
    for info in store.listing((root / "snapshot").path):
        if info.is_file and info.base_name.endswith(".tmp"):
            yield info, "manifests_removed"
