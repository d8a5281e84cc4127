"""Expiring a Paimon table's old snapshots, and removing the files nothing uses any more.

*Which snapshots expire* is Paimon's rule (``ExpireSnapshotsImpl``): from the earliest
on, every snapshot beyond the newest ``snapshot.num-retained.max``; then those older
than the newest ``snapshot.num-retained.min`` (10) whose successor is older than
``snapshot.time-retained`` (1 h), stopping at the first that is not. Never one a
consumer (``consumer/consumer-*``) still has to read, never more than
``snapshot.expire.limit`` (50) at a time. ``keep_snapshots=N`` asks for exactly the
newest N instead (no time protection), as Paimon's procedure does with
``retain_min = retain_max = N``.

*Changelogs kept apart*: when the table keeps changelogs longer than snapshots
(``changelog.num-retained.min``/``max`` or ``changelog.time-retained`` above the
snapshots' own, Paimon's ``isChangelogDecoupled``), each expiring snapshot leaves its
JSON as ``changelog/changelog-N`` first, and kept changelogs expire by the same rules
with the changelog options (``ExpireChangelogImpl``), never the newest one. A kept
changelog needs only what a read of its changes reads: its changelog manifest list (or,
without a producer, its delta manifest list), their manifests and the files they add.

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

    @classmethod
    def of_changelogs(cls, options: dict[str, str], snapshots: Retention) -> Retention:
        """How many changelogs an expire keeps: ``changelog.num-retained.*`` and
        ``changelog.time-retained``, each by default what ``snapshots`` keeps (Paimon's
        ``ExpireConfig``)."""
        low = int_option(options, "changelog.num-retained.min", snapshots.retain_min, minimum=1)
        high = int_option(options, "changelog.num-retained.max", snapshots.retain_max, minimum=1)
        if high < low:
            raise UnsupportedFeatureError(
                f"option 'changelog.num-retained.max' ({high}) is less than 'changelog.num-retained.min' ({low})"
            )
        time_ms = snapshots.time_retained_ms
        if "changelog.time-retained" in options:
            time_ms = duration_ms(options, "changelog.time-retained", "0")
        return cls(low, high, time_ms, snapshots.max_deletes)

    def outlives(self, snapshots: Retention) -> bool:
        """Whether changelogs kept this way outlive ``snapshots`` kept that way: then a
        snapshot that expires leaves its changelog behind (Paimon's ``isChangelogDecoupled``)."""
        return (
            self.retain_max > snapshots.retain_max
            or self.retain_min > snapshots.retain_min
            or self.time_retained_ms > snapshots.time_retained_ms
        )


def expire_snapshots(
    root: Location, options: dict[str, str], keep_snapshots: int | None, orphan_age: float
) -> dict[str, int]:
    """Expires what :class:`Retention` says and removes the files nothing kept uses."""
    retention = Retention.of(options, keep_snapshots)
    changelogs = Retention.of_changelogs(options, retention)
    expired = _expired_snapshots(root, retention, options)
    gone = {snap.id for snap in expired}
    decoupled = changelogs.outlives(retention)  # as in Paimon, kept changelogs expire only then
    try:
        if decoupled:
            _keep_changelogs(root, expired)
    except OSError as e:
        raise TableIOError(f"keeping the changelogs of expiring snapshots of {root} failed: {e}") from e
    expired_changelogs = _expired_changelogs(root, changelogs) if decoupled else []
    references = References(root, skipped_changelogs={c.id for c in expired_changelogs})
    references.add_kept([i for i in snapshot_ids(root) if i not in gone])
    for snap in expired:
        references.add_expired(snap)
    for changelog in expired_changelogs:
        references.add_expired(changelog, root / "changelog" / f"changelog-{changelog.id}")
    candidates = list(_candidates(root, options.get("changelog-file.prefix", "changelog-")))
    references.check_layout(candidates)
    try:
        for snap in expired:
            (root / "snapshot" / f"snapshot-{snap.id}").delete()
        kept = snapshot_ids(root)
        if expired and kept:
            (root / "snapshot" / "EARLIEST").write_text(str(kept[0]))
        for changelog in expired_changelogs:
            (root / "changelog" / f"changelog-{changelog.id}").delete()
        if expired_changelogs:
            (root / "changelog" / "EARLIEST").write_text(str(expired_changelogs[-1].id + 1))
        references.add_kept(kept)  # what was committed, tagged or branched meanwhile
        clean_dirs = bool_option(options, "snapshot.clean-empty-directories")
        removed = _remove_unused(root, candidates, references, orphan_age, clean_dirs)
    except OSError as e:
        raise TableIOError(f"expiring snapshots of {root} failed: {e}") from e
    return {"snapshots_removed": len(expired), "changelogs_removed": len(expired_changelogs), **removed}


def _keep_changelogs(root: Location, expired: list[Snapshot]) -> None:
    """Keeps the changelog of each expiring snapshot as ``changelog/changelog-N`` (the
    snapshot's JSON, as Paimon's ``Changelog``), then moves the changelog's ``LATEST``
    hint on: a reader of changes finds it there once the snapshot is gone."""
    for snap in expired:
        source = root / "snapshot" / f"snapshot-{snap.id}"
        try:
            content = source.read_bytes()
        except FileNotFoundError:
            continue  # another expire took it (and kept its changelog)
        (root / "changelog" / f"changelog-{snap.id}").create_new(content.decode())
    if expired:
        (root / "changelog" / "LATEST").write_text(str(expired[-1].id))


def _changelog_ids(root: Location) -> list[int]:
    names = (n.removeprefix("changelog-") for n in (root / "changelog").names("changelog-"))
    return sorted(int(n) for n in names if n.isdigit())


def _expired_changelogs(root: Location, retention: Retention) -> list[Snapshot]:
    """The kept changelogs that expire, oldest first (Paimon's ``ExpireChangelogImpl``):
    those before the newest ``changelog.num-retained.max`` snapshots, then those before the
    newest ``changelog.num-retained.min`` whose changelog is older than
    ``changelog.time-retained``, never the newest kept changelog, never one a consumer still
    reads, at most ``snapshot.expire.limit`` at a time."""
    ids, kept = snapshot_ids(root), _changelog_ids(root)
    if not ids or not kept:
        return []
    earliest, latest = kept[0], ids[-1]
    low = max(latest - retention.retain_max + 1, earliest)
    end = min(latest - retention.retain_min + 1, *_consumers_next(root), earliest + retention.max_deletes, kept[-1])
    if end <= earliest:
        return []
    older_than = int(time.time() * 1000) - retention.time_retained_ms
    for i in range(low, end + 1):
        changelog = _try_load(root / "changelog" / f"changelog-{i}")
        if changelog is not None and older_than <= changelog.time_millis:
            end = i
            break
    out = []
    for i in kept:
        if i >= end:
            break
        changelog = _try_load(root / "changelog" / f"changelog-{i}")
        if changelog is not None:  # None: another expire took it
            out.append(changelog)
    return out


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
    skipped_changelogs: set[int] = field(default_factory=set)  # expiring: not kept
    kept_meta: set[str] = field(default_factory=set)
    kept_data: set[str] = field(default_factory=set)
    expired_names: set[str] = field(default_factory=set)
    latest: tuple[Location, set[str]] | None = None  # the latest snapshot's file and data files
    _avro: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def add_expired(self, snap: Snapshot, path: Location | None = None) -> None:
        """Every file ``snap`` names (held by ``path``, default its snapshot file) may go."""
        path = path or self.root / "snapshot" / f"snapshot-{snap.id}"
        meta, data = self._names(snap, path.exists, every_entry=True, changelog=_is_changelog(path))
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
        meta, data = self._names(snap, path.exists, every_entry=False, changelog=_is_changelog(path))
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
        for path in _listed(root / "changelog", "changelog-"):
            if path.name.removeprefix("changelog-") not in {str(i) for i in self.skipped_changelogs}:
                yield path
        for branch in (root / "branch").names("branch-"):
            base = root / "branch" / branch
            for directory, prefix in (("snapshot", "snapshot-"), ("tag", "tag-"), ("changelog", "changelog-")):
                yield from _listed(base / directory, prefix)

    def _names(
        self, snap: Snapshot, still_there: Any, every_entry: bool, changelog: bool = False
    ) -> tuple[set[str], set[str]]:
        """The metadata and data file names ``snap`` uses (``every_entry``: also the files
        its manifests delete). A metadata file gone while ``still_there()`` is damage. A
        kept changelog (``changelog``) uses only what a read of its changes reads: its
        changelog manifest list, or without one its delta manifest list, and the files
        they add (Paimon's ``ChangelogDeletion`` removes its base manifest list)."""
        meta: set[str] = set()
        data: set[str] = set()
        lists = [snap.base_manifest_list, snap.delta_manifest_list, snap.changelog_manifest_list]
        if changelog:
            lists = [snap.changelog_manifest_list or snap.delta_manifest_list]
        live: dict[tuple, str] = {}
        for listing in filter(None, lists):
            meta.add(listing)
            for manifest in self._read(listing, MANIFEST_VERSIONS, still_there):
                name = file_name(manifest["_FILE_NAME"], listing)
                meta.add(name)
                for entry in self._read(name, MANIFEST_VERSIONS, still_there):
                    names = _entry_names(entry, name)
                    key = _entry_key(entry)
                    if every_entry or listing == snap.changelog_manifest_list or (changelog and entry["_KIND"] == ADD):
                        data |= names
                    elif entry["_KIND"] == ADD:
                        live[key] = names
                    else:
                        live.pop(key, None)
        for names in live.values():
            data |= names
        if snap.index_manifest and not changelog:
            meta.add(snap.index_manifest)
            for entry in self._read(snap.index_manifest, INDEX_MANIFEST_VERSIONS, still_there):
                meta.add(file_name(entry["_FILE_NAME"], snap.index_manifest))
        if snap.statistics and not changelog:
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


def _is_changelog(path: Location) -> bool:
    """Whether ``path`` is a kept changelog (``changelog/changelog-N``)."""
    return path.name.startswith("changelog-") and path.path.rstrip("/").split("/")[-2] == "changelog"


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


def _candidates(root: Location, changelog_prefix: str = "changelog-") -> Iterator[tuple[Any, str]]:
    """The files an expire may remove: the metadata directories' files, and Paimon's
    files in bucket directories (``data-``, ``changelog-`` or the table's
    ``changelog-file.prefix``, ``index-``) wherever those sit below the root (partition
    directories, ``bucket-postpone``, a path directory)."""
    prefixes = (*DATA_FILE_PREFIXES, changelog_prefix) if changelog_prefix else DATA_FILE_PREFIXES
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
            if found.is_file and parent.startswith("bucket-") and found.base_name.startswith(prefixes):
                yield found, "files_removed"
    for info in store.listing((root / "snapshot").path):
        if info.is_file and info.base_name.endswith(".tmp"):
            yield info, "manifests_removed"
