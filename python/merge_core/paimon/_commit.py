"""Committing to a Paimon table: what tasks wrote (:class:`CommitMessage`) becomes a
manifest, manifest lists and a new snapshot, created atomically.

A commit writes the *delta* manifest (this commit's ADD and DELETE entries), a base
manifest list (the previous snapshot's base and delta manifests, folded into one
manifest once there are many) and a delta manifest list, then claims ``snapshot-N``
by creating it only if absent (a hard link on a local disk, a conditional PUT on S3:
see ``merge_core.fs``), which fails if another writer claimed it first. Then it retries on
the new latest snapshot: an append always can; a compaction only if the files it
replaced are all still live, else :class:`CommitConflictError`. Files of a commit that
did not land are removed; ``LATEST`` and ``EARLIEST`` are hints, as in Paimon.

Changelog files (``changelog-producer``: a write's, a compaction's) go into a changelog
manifest of their own, named by the snapshot's ``changelogManifestList``, their rows
counted in ``changelogRecordCount``.

A write to a dynamic-bucket table also brings new HASH index files: the commit writes
a new index manifest naming them in place of their buckets' old ones (``_hash_index``),
refused as a conflict if another writer changed the partition's HASH files meanwhile.

An overwrite (``_overwrite``) commits through :meth:`Committer.commit_changes` too: its
changes, recomputed on each attempt's latest snapshot, delete what that snapshot holds in
the partitions it replaces.
"""

from __future__ import annotations

import io
import json
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import fastavro
import pyarrow as pa

from ..errors import CommitConflictError, CorruptTableError, TableIOError, TableNotFoundError
from ..fs import Location
from . import _binary, _dv, _hash_index, _key_order
from ._dv import DvUpdate
from ._hash_index import INDEX_MANIFEST_ENTRY, HashIndexUpdate
from ._meta import ADD, DELETE, MANIFEST_VERSIONS, Snapshot, latest_snapshot_id, live_entries, read_avro
from ._schema import TableSchema, schema_ids

BATCH_COMMIT_IDENTIFIER = (1 << 63) - 1  # what Paimon's batch writers use
MERGE_MIN_COUNT = 30  # manifests in a base list before they are folded into one
MAX_ATTEMPTS = 100


def _stats(name: str) -> dict[str, Any]:
    return {
        "type": "record",
        "name": name,
        "fields": [
            {"name": "_MIN_VALUES", "type": "bytes"},
            {"name": "_MAX_VALUES", "type": "bytes"},
            {"name": "_NULL_COUNTS", "type": ["null", {"type": "array", "items": ["null", "long"]}], "default": None},
        ],
    }


def _optional(name: str, type_: Any) -> dict[str, Any]:
    return {"name": name, "type": ["null", type_], "default": None}


def _java_record(fields: list[dict[str, Any]]) -> dict[str, Any]:
    """A top-level record as Java's Avro writer names it."""
    return fastavro.parse_schema(
        {"type": "record", "name": "record", "namespace": "org.apache.paimon.avro.generated", "fields": fields}
    )


# The record shapes Java writes (Paimon 1.3), field by field: Java maps fields by name but
# needs its own primitive types and ["null", T] unions.
MANIFEST_ENTRY = _java_record(
    [
        {"name": "_VERSION", "type": "int"},
        {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"},
        {"name": "_TOTAL_BUCKETS", "type": "int"},
        {
            "name": "_FILE",
            "type": {
                "type": "record",
                "name": "record__FILE",
                "fields": [
                    {"name": "_FILE_NAME", "type": "string"},
                    {"name": "_FILE_SIZE", "type": "long"},
                    {"name": "_ROW_COUNT", "type": "long"},
                    {"name": "_MIN_KEY", "type": "bytes"},
                    {"name": "_MAX_KEY", "type": "bytes"},
                    {"name": "_KEY_STATS", "type": _stats("record__FILE__KEY_STATS")},
                    {"name": "_VALUE_STATS", "type": _stats("record__FILE__VALUE_STATS")},
                    {"name": "_MIN_SEQUENCE_NUMBER", "type": "long"},
                    {"name": "_MAX_SEQUENCE_NUMBER", "type": "long"},
                    {"name": "_SCHEMA_ID", "type": "long"},
                    {"name": "_LEVEL", "type": "int"},
                    {"name": "_EXTRA_FILES", "type": {"type": "array", "items": "string"}},
                    _optional("_CREATION_TIME", {"type": "long", "logicalType": "timestamp-millis"}),
                    _optional("_DELETE_ROW_COUNT", "long"),
                    _optional("_EMBEDDED_FILE_INDEX", "bytes"),
                    _optional("_FILE_SOURCE", "int"),
                    _optional("_VALUE_STATS_COLS", {"type": "array", "items": "string"}),
                    _optional("_EXTERNAL_PATH", "string"),
                    _optional("_FIRST_ROW_ID", "long"),
                    _optional("_WRITE_COLS", {"type": "array", "items": "string"}),
                ],
            },
        },
    ]
)
MANIFEST_FILE_META = _java_record(
    [
        {"name": "_VERSION", "type": "int"},
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_NUM_ADDED_FILES", "type": "long"},
        {"name": "_NUM_DELETED_FILES", "type": "long"},
        {"name": "_PARTITION_STATS", "type": _stats("record__PARTITION_STATS")},
        {"name": "_SCHEMA_ID", "type": "long"},
        _optional("_MIN_BUCKET", "int"),
        _optional("_MAX_BUCKET", "int"),
        _optional("_MIN_LEVEL", "int"),
        _optional("_MAX_LEVEL", "int"),
    ]
)
AVRO_CODECS = {"zstd": "zstandard", "none": "null", "snappy": "snappy", "deflate": "deflate"}


@dataclass(frozen=True)
class CommitMessage:
    """What one task changed in one (partition, bucket): files it wrote (``new_files``,
    level 0) and, for a compaction, the files it replaced and their replacements. Files
    are their manifest records (``_FILE``). A write to a dynamic-bucket table adds the
    bucket's new HASH index file (``hash_index``) when the bucket took new keys; a
    compaction of a deletion-vector or first-row table (``_lookup``, ``Table.compact``)
    its bucket's deletion vectors and what it read of the bucket (``dv_index``).
    Picklable, so tasks can send it to a driver."""

    partition: bytes
    bucket: int
    total_buckets: int
    new_files: tuple[dict[str, Any], ...] = ()
    compact_before: tuple[dict[str, Any], ...] = ()
    compact_after: tuple[dict[str, Any], ...] = ()
    hash_index: HashIndexUpdate | None = None
    dv_index: DvUpdate | None = None
    overwrite: bool = False  # written for an overwrite: committed only by one (``_overwrite``)
    changelog_files: tuple[dict[str, Any], ...] = ()  # a write's changelog (changelog-producer = input)
    compact_changelog: tuple[dict[str, Any], ...] = ()  # a compaction's (full-compaction, lookup)

    @property
    def is_compaction(self) -> bool:
        return bool(self.compact_before or self.compact_after or self.compact_changelog)

    def data_files(self) -> list[dict[str, Any]]:
        """The files this message adds (removed again if its commit fails): not a file its
        compaction only moved to another level (an upgrade: in ``compact_before`` too)."""
        moved = {f["_FILE_NAME"] for f in self.compact_before}
        after = [f for f in self.compact_after if f["_FILE_NAME"] not in moved]
        return [*self.new_files, *after, *self.changelog_files, *self.compact_changelog]

    def append_entries(self) -> list[dict[str, Any]]:
        return [self._entry(ADD, f) for f in self.new_files]

    def changelog_entries(self) -> list[dict[str, Any]]:
        """The write's changelog files, as entries of the snapshot's changelog manifest."""
        return [self._entry(ADD, f) for f in self.changelog_files]

    def compact_changelog_entries(self) -> list[dict[str, Any]]:
        return [self._entry(ADD, f) for f in self.compact_changelog]

    def compact_entries(self) -> list[dict[str, Any]]:
        return [
            *(self._entry(DELETE, f) for f in self.compact_before),
            *(self._entry(ADD, f) for f in self.compact_after),
        ]

    def _entry(self, kind: int, f: dict[str, Any]) -> dict[str, Any]:
        return {
            "_VERSION": 2,
            "_KIND": kind,
            "_PARTITION": self.partition,
            "_BUCKET": self.bucket,
            "_TOTAL_BUCKETS": self.total_buckets,
            "_FILE": f,
        }


@dataclass(frozen=True)
class Changes:
    """What one commit attempt writes on top of the latest snapshot: its manifest entries,
    and the new snapshot's index manifest entries (``None``: the latest's, unchanged)."""

    entries: list[dict[str, Any]]
    index: list[dict[str, Any]] | None = None
    changelog: list[dict[str, Any]] = field(default_factory=list)  # the changelog manifest's entries


# The changes of a commit, given each attempt's latest snapshot and its live entries.
ChangesOf = Callable[[Snapshot | None, list[dict[str, Any]]], Changes]


@dataclass
class _Attempt:
    """The metadata files one commit attempt wrote: removed if its snapshot did not land."""

    written: list[Location] = field(default_factory=list)

    def remove(self) -> None:
        for path in self.written:
            path.delete()


def summary(snapshot: int | None, messages: Sequence[CommitMessage], compaction: bool) -> dict[str, int | None]:
    """What a commit of ``messages`` did, as ``write`` and ``compact`` report it: the
    snapshot, and the rows and files written or the files merged and written."""
    if compaction:
        merged = sum(len(m.compact_before) for m in messages)
        return {
            "snapshot": snapshot,
            "files_merged": merged,
            "files_written": sum(len(m.compact_after) for m in messages),
        }
    rows = sum(f["_ROW_COUNT"] for m in messages for f in m.new_files)
    return {"snapshot": snapshot, "rows": rows, "files": sum(1 for m in messages if m.new_files)}


class Committer:
    """Writes manifests and snapshots for one writer (``commit_user``), each snapshot
    marked with ``commit_identifier`` (a streaming writer's batch number; batch writers
    take Paimon's ``Long.MAX_VALUE``)."""

    def __init__(
        self,
        root: Location,
        schema: TableSchema,
        commit_user: str | None = None,
        commit_identifier: int = BATCH_COMMIT_IDENTIFIER,
        live_of: Callable[[Location, Snapshot], list[dict[str, Any]]] = live_entries,
    ):
        """``live_of``: a snapshot's live entries (a Table's, kept while it is the latest)."""
        self.root, self.schema, self.live_of = root, schema, live_of
        self.commit_user = commit_user or str(uuid.uuid4())
        self.commit_identifier = commit_identifier
        self.partition_types = [schema.field(k).type for k in schema.partition_keys]
        self.codec = AVRO_CODECS.get(schema.options.get("manifest.compression", "zstd").lower(), "zstandard")
        self._names = f"{uuid.uuid4()}-"
        self.appended = False
        self.append_snapshot: int | None = None  # the appends' snapshot, once committed
        self._counter = 0

    def commit(self, messages: Sequence[CommitMessage]) -> int | None:
        """Commits the appends of ``messages`` as one snapshot, then their compactions as
        another (as Paimon does); returns the last snapshot's id (``None``: nothing to commit).
        ``appended`` says afterwards whether the appends landed (if the compaction failed,
        their files stay: a later compaction takes them)."""
        last = None
        appends = [e for m in messages for e in m.append_entries()]
        changelog = [e for m in messages for e in m.changelog_entries()]
        index = [m.hash_index for m in messages if m.hash_index is not None]
        dv = [m.dv_index for m in messages if m.dv_index is not None]

        def append(latest: Snapshot | None, live: list[dict[str, Any]]) -> Changes:
            # A write compacted by lookup lands only if its compaction can follow it.
            _dv.check_unchanged(_hash_index.index_entries(self.root, latest) if dv else [], live, dv)
            return Changes(appends, self._hash_updates(latest, index), changelog)

        if appends or changelog or index:
            last = self.commit_changes("APPEND", append)
        self.appended, self.append_snapshot = last is not None, last
        compactions = [e for m in messages for e in m.compact_entries()]
        compact_changelog = [e for m in messages for e in m.compact_changelog_entries()]
        if compactions or compact_changelog or dv:
            last = self.commit_changes(
                "COMPACT",
                lambda latest, live: Changes(
                    compactions, _dv.updated_entries(self.root, latest, live, dv), compact_changelog
                ),
            )
        return last

    def _hash_updates(self, latest: Snapshot | None, index: list[HashIndexUpdate]) -> list[dict[str, Any]] | None:
        return _hash_index.updated_entries(self.root, latest, index) if index else None

    def commit_changes(self, kind: str, changes: ChangesOf) -> int:
        """Commits one snapshot of ``kind`` whose changes ``changes(latest, live)`` gives
        on top of each attempt's latest snapshot and its live entries."""
        for _ in range(MAX_ATTEMPTS):
            latest_id = latest_snapshot_id(self.root)
            attempt = _Attempt()
            try:
                latest = None if latest_id is None else Snapshot.load(self.root, latest_id)
                live = [] if latest is None else self.live_of(self.root, latest)
                change = changes(latest, live)
                _check(change.entries, live, kind)
                snapshot_id = self._try_commit(latest, live, change, kind, attempt)
            except (CorruptTableError, TableNotFoundError):
                attempt.remove()
                if latest_id is None or (self.root / "snapshot" / f"snapshot-{latest_id}").exists():
                    raise
                continue  # an expire took the snapshot this attempt built on: a newer one exists
            except BaseException:
                attempt.remove()
                raise
            if snapshot_id is not None:
                self._hint("LATEST", snapshot_id)
                if snapshot_id == 1:
                    self._hint("EARLIEST", 1)
                return snapshot_id
            attempt.remove()
            time.sleep(0.001)
        raise CommitConflictError(f"gave up committing to {self.root} after {MAX_ATTEMPTS} lost races")

    def _try_commit(
        self,
        latest: Snapshot | None,
        live: list[dict[str, Any]],
        change: Changes,
        kind: str,
        attempt: _Attempt,
    ) -> int | None:
        """Writes this attempt's metadata and claims the next snapshot id (``None``: lost)."""
        entries = change.entries
        if latest is None:
            base_metas: list[dict[str, Any]] = []
        else:
            base_metas = self._base(latest, live, attempt)
        delta_meta = self._manifest(entries, attempt)
        base_list, base_size = self._manifest_list(base_metas, attempt)
        delta_list, delta_size = self._manifest_list([delta_meta], attempt)
        index_manifest = self._index_manifest(latest, change.index, attempt)
        changelog_list, changelog_size = None, None
        if change.changelog:
            changelog_list, changelog_size = self._manifest_list([self._manifest(change.changelog, attempt)], attempt)
        added = sum(e["_FILE"]["_ROW_COUNT"] for e in entries if e["_KIND"] == ADD)
        deleted = sum(e["_FILE"]["_ROW_COUNT"] for e in entries if e["_KIND"] == DELETE)
        snapshot_id = 1 if latest is None else latest.id + 1
        document = {
            "version": 3,
            "id": snapshot_id,
            "schemaId": max([self.schema.id, *schema_ids(self.root)]),  # the latest, as Paimon's commit takes it
            "baseManifestList": base_list,
            "baseManifestListSize": base_size,
            "deltaManifestList": delta_list,
            "deltaManifestListSize": delta_size,
            "changelogManifestList": changelog_list,
            **({"changelogManifestListSize": changelog_size} if changelog_list else {}),
            **({"indexManifest": index_manifest} if index_manifest else {}),
            "commitUser": self.commit_user,
            "commitIdentifier": self.commit_identifier,
            "commitKind": kind,
            "timeMillis": int(time.time() * 1000),
            "logOffsets": {},
            "totalRecordCount": (latest.total_record_count if latest else 0) + added - deleted,
            "deltaRecordCount": added - deleted,
            "changelogRecordCount": sum(e["_FILE"]["_ROW_COUNT"] for e in change.changelog),
        }
        return snapshot_id if self._claim(snapshot_id, json.dumps(document, indent=2)) else None

    def _base(self, latest: Snapshot, live: list[dict[str, Any]], attempt: _Attempt) -> list[dict[str, Any]]:
        """The new base list: the latest snapshot's base and delta manifests, or, once they
        are many, one manifest of its live files."""
        manifest_dir = self.root / "manifest"
        metas = [
            *read_avro(manifest_dir / latest.base_manifest_list, MANIFEST_VERSIONS),
            *read_avro(manifest_dir / latest.delta_manifest_list, MANIFEST_VERSIONS),
        ]
        if len(metas) < MERGE_MIN_COUNT:
            return metas
        return [self._manifest(live, attempt)] if live else []

    def _new_name(self, prefix: str) -> str:
        self._counter += 1
        return f"{prefix}-{self._names}{self._counter - 1}"

    def _write_avro(
        self, prefix: str, schema: Any, records: list[dict[str, Any]], attempt: _Attempt
    ) -> tuple[str, int]:
        """Writes a new metadata file; returns its name and size."""
        path = self.root / "manifest" / self._new_name(prefix)
        attempt.written.append(path)
        encoded = io.BytesIO()
        try:
            fastavro.writer(encoded, schema, records, codec=self.codec)
            with path.store.open_output(path.path) as out:
                out.write(encoded.getbuffer())
        except OSError as e:
            raise TableIOError(f"writing {path} failed: {e}") from e
        return path.name, encoded.getbuffer().nbytes

    def _manifest(self, entries: list[dict[str, Any]], attempt: _Attempt) -> dict[str, Any]:
        """Writes ``entries`` as one manifest; returns its record for a manifest list."""
        name, size = self._write_avro("manifest", MANIFEST_ENTRY, entries, attempt)
        partitions = [_binary.decode(e["_PARTITION"], self.partition_types) for e in entries]
        buckets = [e["_BUCKET"] for e in entries]
        levels = [e["_FILE"]["_LEVEL"] for e in entries]
        return {
            "_VERSION": 2,
            "_FILE_NAME": name,
            "_FILE_SIZE": size,
            "_NUM_ADDED_FILES": sum(e["_KIND"] == ADD for e in entries),
            "_NUM_DELETED_FILES": sum(e["_KIND"] == DELETE for e in entries),
            "_PARTITION_STATS": value_stats(partitions, self.partition_types),
            "_SCHEMA_ID": max((e["_FILE"]["_SCHEMA_ID"] for e in entries), default=self.schema.id),
            "_MIN_BUCKET": min(buckets, default=None),
            "_MAX_BUCKET": max(buckets, default=None),
            "_MIN_LEVEL": min(levels, default=None),
            "_MAX_LEVEL": max(levels, default=None),
        }

    def _index_manifest(
        self, latest: Snapshot | None, entries: list[dict[str, Any]] | None, attempt: _Attempt
    ) -> str | None:
        """The index manifest of the new snapshot: the latest's (``entries`` None), none
        (no entries left), or a new one holding ``entries``."""
        if entries is None:
            return latest.index_manifest if latest else None
        if not entries:
            return None
        return self._write_avro("index-manifest", INDEX_MANIFEST_ENTRY, entries, attempt)[0]

    def _manifest_list(self, metas: list[dict[str, Any]], attempt: _Attempt) -> tuple[str, int]:
        return self._write_avro("manifest-list", MANIFEST_FILE_META, metas, attempt)

    def _claim(self, snapshot_id: int, text: str) -> bool:
        """Creates ``snapshot-N`` whole, unless another writer created it first."""
        target = self.root / "snapshot" / f"snapshot-{snapshot_id}"
        try:
            return target.create_new(text)
        except OSError as e:
            raise TableIOError(f"creating {target} failed: {e}") from e

    def _hint(self, name: str, snapshot_id: int) -> None:
        """Best effort, as in Paimon: readers check a hint before they trust it."""
        try:
            (self.root / "snapshot" / name).write_text(str(snapshot_id))
        except OSError:
            pass


def _file_id(entry: dict[str, Any]) -> tuple:
    f = entry["_FILE"]
    return entry["_PARTITION"], entry["_BUCKET"], f["_LEVEL"], f["_FILE_NAME"]


def _check(entries: list[dict[str, Any]], live: list[dict[str, Any]], kind: str) -> None:
    """Paimon's commit checks: a partition keeps its number of buckets (unless overwritten),
    and a compaction replaces only files that are still live. Files outside a real bucket
    (a postponed bucket's, whose total is -2) do not count, as in Paimon's ConflictDetection."""
    if kind == "OVERWRITE":  # its deletes are the live files of each attempt's latest snapshot
        return
    buckets = {e["_PARTITION"]: e["_TOTAL_BUCKETS"] for e in live if e["_TOTAL_BUCKETS"] > 0}
    for e in entries:
        known = buckets.get(e["_PARTITION"])
        if known is not None and e["_TOTAL_BUCKETS"] > 0 and known != e["_TOTAL_BUCKETS"]:
            raise CommitConflictError(
                f"the table's partition has {known} buckets; these files were written for {e['_TOTAL_BUCKETS']}"
            )
    if kind == "COMPACT":
        alive = {_file_id(e) for e in live}
        gone = [e["_FILE"]["_FILE_NAME"] for e in entries if e["_KIND"] == DELETE and _file_id(e) not in alive]
        if gone:
            raise CommitConflictError(
                f"another commit replaced files this compaction merged ({gone[:3]}...); compact again"
            )


def value_stats(rows: Iterable[Sequence[Any]], types: Sequence[pa.DataType]) -> dict[str, Any]:
    """Paimon's SimpleStats of ``rows`` (tuples of Python values of ``types``): the
    least and greatest non-null value of each column, and its null count."""
    n = len(types)
    lows: list[Any] = [None] * n
    highs: list[Any] = [None] * n
    nulls = [0] * n
    for row in rows:
        for i, v in enumerate(row):
            if v is None:
                nulls[i] += 1
            else:
                order = _key_order.value_key(v)  # Paimon's order (a NaN is largest)
                lows[i] = v if lows[i] is None or order < _key_order.value_key(lows[i]) else lows[i]
                highs[i] = v if highs[i] is None or order > _key_order.value_key(highs[i]) else highs[i]
    return {
        "_MIN_VALUES": _binary.encode(lows, types),
        "_MAX_VALUES": _binary.encode(highs, types),
        "_NULL_COUNTS": nulls,
    }
