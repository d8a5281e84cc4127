"""The on-disk format of a merge-core table (documented in docs/table-format.md).

    <table>/_meta/table.json             schema, key, partitioning, buckets, merge function
    <table>/_meta/snapshot-00000001.json  one per commit: the complete list of live files
    <table>/data/<col>=<value>/.../bucket-<b>/<uuid>.parquet   one sorted run each

A commit writes its snapshot to a temporary file, syncs it, and publishes it with
``os.link`` under the next number: the link fails if that number is taken, so two
committers can never both publish snapshot N, and a reader only ever sees whole
snapshots. Data files are written before the snapshot that names them; a writer that
dies leaves only unreferenced files, which ``Table.expire`` removes.
"""

from __future__ import annotations

import base64
import json
import os
import re
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pyarrow as pa

from ..errors import TableExistsError, TableNotFoundError

FORMAT_VERSION = 1
SEQ = "_seq"
KIND = "_kind"
SYSTEM_COLUMNS = (SEQ, KIND)
NULL_PARTITION = "__null__"
_SNAPSHOT = re.compile(r"snapshot-(\d+)\.json")


@dataclass(frozen=True)
class TableMeta:
    """What a table remembers about itself."""

    schema: pa.Schema
    key: list[str]
    partition_by: list[str]
    buckets: int
    merge: dict[str, Any]
    sequence: list[str]

    def file_schema(self) -> pa.Schema:
        """The schema of every data file: the table's columns, then ``_seq`` and ``_kind``."""
        return self.schema.append(pa.field(SEQ, pa.int64(), nullable=False)).append(
            pa.field(KIND, pa.int8(), nullable=False)
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT_VERSION,
            "schema": base64.b64encode(self.schema.serialize().to_pybytes()).decode(),
            "columns": {f.name: str(f.type) for f in self.schema},  # for people; `schema` is read
            "key": self.key,
            "partition_by": self.partition_by,
            "buckets": self.buckets,
            "merge": self.merge,
            "sequence": self.sequence,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TableMeta:
        if data.get("format") != FORMAT_VERSION:
            raise TableNotFoundError(f"unsupported table format {data.get('format')!r}")
        schema = pa.ipc.read_schema(pa.py_buffer(base64.b64decode(data["schema"])))
        return cls(schema, data["key"], data["partition_by"], data["buckets"], data["merge"], data["sequence"])


@dataclass(frozen=True)
class DataFile:
    """One sorted run of one (partition, bucket).

    A written run numbers its rows ``_seq`` = 0, 1, ... and the commit gives it
    ``sequence_base``: a row's sequence number is ``sequence_base + _seq``. Compaction
    outputs hold absolute numbers (``sequence_base`` 0). ``max_sequence`` is set by the
    commit (or, for a compaction output, taken from its inputs); runs of a bucket merge
    in its order.
    """

    path: str  # relative to the table, with '/'
    partition: tuple[str | None, ...]  # values as Arrow casts them to string
    bucket: int
    rows: int
    retracts: int  # rows whose kind is -U or -D
    level: int  # 0: written; 1: partial compaction (keeps deletes); 2: full compaction
    sequence_base: int = 0
    max_sequence: int = -1
    bytes: int = 0

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DataFile:
        return cls(**{**data, "partition": tuple(data["partition"])})


@dataclass(frozen=True)
class Snapshot:
    """A committed state of the table: the complete list of its live files."""

    id: int
    parent: int
    operation: str
    files: tuple[DataFile, ...]
    next_sequence: int
    committed_at: float = field(default_factory=time.time)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "files": [asdict(f) for f in self.files]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Snapshot:
        files = tuple(DataFile.from_json(f) for f in data["files"])
        return cls(data["id"], data["parent"], data["operation"], files, data["next_sequence"], data["committed_at"])

    @staticmethod
    def empty() -> Snapshot:
        return Snapshot(0, 0, "create", (), 0, 0.0)


def meta_dir(root: Path) -> Path:
    return root / "_meta"


def snapshot_path(root: Path, snapshot_id: int) -> Path:
    return meta_dir(root) / f"snapshot-{snapshot_id:08d}.json"


def create_meta(root: Path, meta: TableMeta) -> None:
    """Creates the table's metadata; fails if a table exists at ``root``."""
    meta_dir(root).mkdir(parents=True, exist_ok=True)
    if not _publish(meta_dir(root) / "table.json", meta.to_json()):
        raise TableExistsError(f"a table already exists at {root}")


def load_meta(root: Path) -> TableMeta:
    try:
        text = (meta_dir(root) / "table.json").read_text()
    except FileNotFoundError:
        raise TableNotFoundError(f"no merge-core table at {root} (create it with Table.create)") from None
    return TableMeta.from_json(json.loads(text))


def snapshot_ids(root: Path) -> list[int]:
    """The ids of the snapshots present, ascending."""
    names = os.listdir(meta_dir(root))
    return sorted(int(m.group(1)) for m in map(_SNAPSHOT.fullmatch, names) if m)


def load_snapshot(root: Path, snapshot_id: int | None = None) -> Snapshot:
    """Snapshot ``snapshot_id``, or the latest (an empty one for a table never written)."""
    if snapshot_id is None:
        ids = snapshot_ids(root)
        if not ids:
            return Snapshot.empty()
        snapshot_id = ids[-1]
    try:
        text = snapshot_path(root, snapshot_id).read_text()
    except FileNotFoundError:
        raise TableNotFoundError(f"the table at {root} has no snapshot {snapshot_id} (expired?)") from None
    return Snapshot.from_json(json.loads(text))


def commit(root: Path, make: Callable[[Snapshot], Snapshot]) -> Snapshot:
    """Publishes ``make(latest)`` as the next snapshot, calling ``make`` again on the new
    latest snapshot whenever another committer got there first. ``make`` raises
    ``CommitConflictError`` when the race cannot be resolved."""
    while True:
        latest = load_snapshot(root)
        snapshot = make(latest)
        if _publish(snapshot_path(root, snapshot.id), snapshot.to_json()):
            return snapshot


def _publish(path: Path, data: dict[str, Any]) -> bool:
    """Writes ``data`` as JSON to ``path`` atomically, only if ``path`` does not exist."""
    from ..paimon._meta import write_new  # here: the Paimon package imports this one

    return write_new(path, json.dumps(data, indent=1))


def partition_dir(names: Iterable[str], values: Iterable[str | None]) -> str:
    """``col=value/...`` with each value percent-encoded."""
    parts = [f"{n}={NULL_PARTITION if v is None else quote(v, safe='')}" for n, v in zip(names, values, strict=True)]
    return "/".join(parts)


def new_data_path(meta: TableMeta, partition: tuple[str | None, ...], bucket: int) -> str:
    prefix = partition_dir(meta.partition_by, partition)
    return "/".join(p for p in ("data", prefix, f"bucket-{bucket}", f"{uuid.uuid4().hex}.parquet") if p)


def with_sequences(files: Iterable[DataFile], next_sequence: int) -> tuple[list[DataFile], int]:
    """Gives each newly written file its sequence numbers, from ``next_sequence`` on."""
    numbered = []
    for f in files:
        numbered.append(replace(f, sequence_base=next_sequence, max_sequence=next_sequence + f.rows - 1))
        next_sequence += f.rows
    return numbered, next_sequence
