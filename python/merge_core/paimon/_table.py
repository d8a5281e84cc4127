"""``mc.Table``: an Apache Paimon primary-key table, read and written natively.

Reads go ``plan`` (the splits of a snapshot) -> ``read_split`` (merged in Rust); writes go
``new_write`` -> ``write`` -> ``prepare_commit`` (commit messages) -> ``commit``. ``read``,
``write``, ``compact``, Spark and the CLI all use these same steps."""

from __future__ import annotations

import dataclasses
import datetime
import functools
import os
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs

from .. import DynamicFilter, Stream, _native
from ..errors import (
    CommitConflictError,
    CorruptTableError,
    InvalidInputError,
    TableExistsError,
    TableIOError,
    TableNotFoundError,
    UnsupportedFeatureError,
)
from ..fs import Location, Store, resolve
from ..inputs import as_stream_source, batches_of, check_threads, column_names
from ..merge_functions import merge_spec
from . import _alter, _append, _binary, _hash_index, _key_order, _predicate
from ._branch import MAIN, BranchRoot, branch_root, branches, refuse_on_branch
from ._changelog import (
    FULL_COMPACTION,
    LOOKUP,
    as_schema,
    first_of_each_key,
    full_compaction_changes,
    lookup_changes,
    merged_rows,
)
from ._changelog import producer as changelog_producer
from ._changes import ChangeStream, change_files, check_range, commit_of
from ._changes import ordered as ordered_changes
from ._commit import CommitMessage, Committer, summary
from ._compact import CompactTask, compaction_tasks, top_level, write_only, written_tasks
from ._core_options import READ, SNAPSHOT_CHOICE, WRITE, check_options, refuse
from ._dv import DvUpdate, bucket_index_files, deleted_positions, write_index
from ._expire import expire_snapshots
from ._file_rows import LOOKUP_CACHE_MEMORY, FileRows
from ._hash_index import index_file
from ._key_filter import first_key_bounds
from ._lookup import ChangelogIo, LookupCompaction, needs_lookup
from ._merge_options import PaimonMerge, merge_from_paimon_options, paimon_options
from ._meta import (
    DataFile,
    LiveEntries,
    Snapshot,
    deletion_vectors,
    last_identifier,
    latest_snapshot_id,
    live_entries,
    live_files,
    snapshot_ids,
)
from ._options import bool_option, int_option, memory_bytes
from ._overwrite import commit_overwrite, drop_partitions, overwrite_spec, truncate
from ._paths import POSTPONE_BUCKET, Layout, file_name
from ._plan import SEQUENCE_NUMBER, VALUE_KIND, FileRead, Plan, Planner, Section, Split
from ._postpone import PostponedCompaction, is_postponed, postponed_entries
from ._postpone import bucket_ids as postponed_bucket_ids
from ._postpone import new_write as postponed_table_write
from ._rollback import rollback
from ._schema import THIN_MODE, TableSchema, load_schema, schema_ids, schema_json
from ._skipping import Skipping
from ._snapshot_memo import SnapshotMemo, snapshot_key
from ._travel import TRAVEL_KEYS, load_tag, snapshot_to_read, tag_path
from ._validation import check_new, check_stored
from ._write import (
    DataFileWriter,
    Encoders,
    RollingDataFiles,
    TableWrite,
    bucket_ids,
    conform,
    parquet_compression,
    remove_data_file,
    target_file_size,
)

READ_BATCH_ROWS = 64 * 1024
# A compaction's merge reads and outputs batches of this many rows, and hands the file's
# writer one batch at a time: it holds a batch or two of every run and a few output
# batches, whatever the rows (docs/memory.md). With reads' 65,536-row batches and 128 MiB
# of output ready ahead of the writer, 1 GiB of 141-byte rows in 8 runs peaked 318 MiB.
COMPACT_BATCH_ROWS = 8 * 1024
AS_STORED = {"function": "none"}  # a read that merges nothing: each row as its file holds it
TRAVEL_OPTIONS = (*TRAVEL_KEYS, "scan.version")


class Table:
    """A Paimon primary-key table at ``path`` (``<warehouse>/<db>.db/<table>``): each
    commit adds level-0 files per (partition, bucket) it touches, a read merges the files
    of each bucket with the table's merge function, and Flink, Spark, pypaimon or
    pypaimon-rust read and write the same table.

    >>> import pyarrow as pa, merge_core as mc, tempfile
    >>> path = tempfile.mkdtemp() + "/db.db/t"
    >>> schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    >>> t = mc.Table.create(path, schema, key="id", buckets=2)
    >>> t.write(pa.table({"id": [1, 2], "name": ["a", "b"]}))["snapshot"]
    1
    >>> t.delete(pa.table({"id": [1]}))["snapshot"]
    2
    >>> t.write(pa.table({"id": [2, 3], "name": ["B", "c"]}))["snapshot"]
    3
    >>> t.read().read_all().sort_by("id").to_pydict()
    {'id': [2, 3], 'name': ['B', 'c']}
    >>> t.read(snapshot=1).read_all().sort_by("id").to_pydict()
    {'id': [1, 2], 'name': ['a', 'b']}
    """

    def __init__(self, root: Location, schema: TableSchema) -> None:
        self._root = root
        # The live files of the snapshot planned last, by its manifest lists (whose names
        # are never reused): a table read again and again, as by point lookups, reads
        # its manifests once per snapshot, and so do a write, its compaction and its commit.
        self._live = LiveEntries()
        # The rows of files above level 0 that writes' lookup compactions met (``_lookup``).
        self._file_rows = FileRows()
        # What planning derived from the snapshot planned last (_snapshot_memo): the next
        # lookup of the same snapshot decodes no file statistics and plans no bucket again.
        self._memo: SnapshotMemo | None = None
        self._use(schema)

    def _use(self, schema: TableSchema) -> None:
        """Takes ``schema`` as the table's (on opening, and after a schema change)."""
        self._schema = schema
        self._append = _append.is_append(schema)  # no primary key: nothing merges
        self._definition = merge_from_paimon_options(schema.options)  # as the options say
        self._setup: PaimonMerge = table_merge(schema, schema.options)  # as the fold runs it
        self._layout = Layout(schema)  # refuses options that would put files where Paimon does not
        self._planner: Planner | None = None  # the last compaction's
        self._postponed_buckets: Callable[[pa.RecordBatch], pa.Int32Array] | None = None

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        schema: pa.Schema,
        key: str | Sequence[str] | None,
        partition_by: str | Sequence[str] = (),
        buckets: int | None = None,
        merge: Any = "deduplicate",
        sequence: str | Sequence[str] | None = None,
        sequence_order: str = "ascending",
        options: Mapping[str, str] | None = None,
        filesystem: pafs.FileSystem | None = None,
    ) -> Table:
        """Creates an empty table at ``path`` (a new or empty directory): its
        ``schema/schema-0``, with the Paimon options that make Paimon merge as ``merge``.

        Args:
            path: a local path, a ``file://`` or ``s3://`` URI (S3 configured by the
                ``AWS_*`` variables, ``AWS_ENDPOINT_URL`` included), or a path on
                ``filesystem``.
            schema: the table's columns (key and partition columns become NOT NULL).
            key: the primary key; each key has at most one row per partition.
                ``None`` (or ``[]``) makes an append table: rows are kept as written,
                never merged (docs/table-format.md, "Append tables").
            partition_by: columns whose values split the table into directories.
            buckets: files per partition written by each commit (default 4); a key's
                bucket is Paimon's hash of the key, so Paimon's writers agree on it.
                -1 makes a dynamic-bucket table and -2 a postponed-bucket one (Paimon's
                ``bucket`` option; docs/table-format.md, "Buckets"). An
                append table's default is -1 (bucket-unaware: one bucket per
                partition); N buckets need the option ``bucket-key``, the columns
                whose hash picks a row's bucket.
            merge: how the versions of a key fold (as in :func:`merge_core.merge`).
            sequence: columns ordering the versions of a key (default: write order).
            sequence_order: ``"descending"`` makes a lower sequence value newer.
            options: further Paimon table options, parsed and checked as Paimon does;
                an option merge-core would not honour in reads or writes is refused by
                name (docs/table-format.md, "Table options").
            filesystem: a ``pyarrow.fs.FileSystem`` holding the table (default: the one
                ``path`` names). Commits need a filesystem that can create a file only
                if absent: a local one or S3.
        """
        root = resolve(path, filesystem)
        return cls(*_create(root, schema, key, partition_by, buckets, merge, sequence, sequence_order, options))

    @classmethod
    def open(
        cls, path: str | os.PathLike[str], filesystem: pafs.FileSystem | None = None, branch: str | None = None
    ) -> Table:
        """The table at ``path`` (see :meth:`create` for ``path`` and ``filesystem``), or
        its branch ``branch`` (made by Paimon's ``createBranch``): its own snapshots,
        schemas and tags, read and committed where Paimon keeps them."""
        root = branch_root(resolve(path, filesystem), branch)
        ids = schema_ids(root)
        if not ids:
            raise TableNotFoundError(f"no Paimon table at {root} (it has no schema/schema-N file)")
        return cls(root, _checked_schema(root, ids[-1]))

    # -- what the table is ----------------------------------------------------------

    @property
    def path(self) -> Path | str:
        """Where the table is: a ``Path`` on the local disk, else its URI (``s3://...``,
        or the path on the filesystem it was opened with)."""
        return Path(self._root.path) if self._root.store.local else str(self._root)

    @property
    def filesystem(self) -> pafs.FileSystem:
        """The pyarrow filesystem the table is on: with :attr:`path`, what opens the same
        table elsewhere (a Spark executor) without relying on its environment."""
        return self._root.store.fs

    @property
    def branch(self) -> str:
        """The branch this object reads and writes (``"main"``: the table itself)."""
        return self._root.branch if isinstance(self._root, BranchRoot) else MAIN

    def branches(self) -> list[str]:
        """The table's branches, whichever writer made them (``main`` not included)."""
        return branches(self._root)

    @property
    def schema(self) -> pa.Schema:
        """The table's columns (the latest schema), each with its Paimon field id."""
        return self._schema.arrow

    @property
    def key(self) -> list[str]:
        return list(self._schema.primary_keys)

    @property
    def partition_by(self) -> list[str]:
        return list(self._schema.partition_keys)

    @property
    def buckets(self) -> int:
        """The fixed number of buckets (-1: dynamic buckets, -2: postponed)."""
        return int_option(self._schema.options, "bucket", -1)

    @property
    def merge(self) -> Any:
        """The merge function the table's options define."""
        return self._definition.merge

    @property
    def sequence(self) -> list[str]:
        return list(self._setup.sequence)

    @property
    def options(self) -> dict[str, str]:
        return dict(self._schema.options)

    def snapshots(self) -> list[int]:
        """The ids of the snapshots kept, oldest first."""
        return snapshot_ids(self._root)

    def snapshot(self, snapshot: int | None = None) -> Snapshot:
        """A committed snapshot (the latest by default): its id, schema, commit kind and
        manifest lists."""
        if snapshot is None:
            snapshot = latest_snapshot_id(self._root)
            if snapshot is None:
                raise TableNotFoundError(f"the table at {self._root} has no snapshot yet")
        return Snapshot.load(self._root, snapshot)

    def files(self, snapshot: int | None = None) -> list[dict[str, Any]]:
        """The data files of a snapshot (the latest by default), in (partition, bucket,
        level) order: ``path`` (relative to the table), ``partition`` (its values),
        ``bucket``, ``level``, ``rows``, ``bytes``, ``min_sequence``, ``max_sequence`` and
        ``delete_rows`` (the retracts it stores)."""
        snap = None if snapshot is None and latest_snapshot_id(self._root) is None else self.snapshot(snapshot)
        types = [self._schema.field(k).type for k in self._schema.partition_keys]
        out = []
        for f in live_files(self._root, snap) if snap else []:
            values = _binary.decode(f.partition, types)
            folder = self._layout.bucket_dir(f.partition, f.bucket)
            out.append(
                {
                    "path": f.external_path or f"{folder}/{f.name}",
                    "partition": values,
                    "bucket": f.bucket,
                    "level": f.level,
                    "rows": f.rows,
                    "bytes": f.size,
                    "min_sequence": f.min_sequence,
                    "max_sequence": f.max_sequence,
                    "delete_rows": f.delete_rows,
                }
            )
        out.sort(key=lambda f: (_key_order.sort_key(f["partition"]), f["bucket"], f["level"], f["path"]))
        return out

    def partitions(self, snapshot: int | None = None) -> list[dict[str, Any]]:
        """The partitions of a snapshot (the latest by default), as Paimon's partition
        entries count them: ``partition`` (column -> value), ``rows`` (stored rows, the
        versions not yet merged away included; Paimon's ``recordCount``), ``files`` and
        ``bytes`` of its data files (``fileCount``, ``fileSizeInBytes``), ``buckets`` (its
        ``totalBuckets``: -1 for a dynamic-bucket table's) and
        ``last_file_creation_time`` (its newest file's creation, a local-time
        ``datetime``; ``None`` if no file records one), in partition order. A table
        without partition columns has one, ``{}``, once written.

        >>> import pyarrow as pa, merge_core as mc, tempfile
        >>> schema = pa.schema([pa.field("k", pa.int64(), False), pa.field("day", pa.string(), False)])
        >>> t = mc.Table.create(tempfile.mkdtemp() + "/t", schema, key=["k", "day"], partition_by="day", buckets=1)
        >>> _ = t.write(pa.table({"k": [1, 2, 1], "day": ["d1", "d1", "d2"]}, schema=schema))
        >>> [(p["partition"], p["rows"], p["files"], p["buckets"]) for p in t.partitions()]
        [({'day': 'd1'}, 2, 1, 1), ({'day': 'd2'}, 1, 1, 1)]
        """
        latest = latest_snapshot_id(self._root)
        entries = [] if snapshot is None and latest is None else live_entries(self._root, self.snapshot(snapshot))
        names = self.partition_by
        types = [self._schema.field(k).type for k in names]
        out: dict[bytes, dict[str, Any]] = {}
        for e in entries:
            entry = out.get(e["_PARTITION"])
            if entry is None:
                values = dict(zip(names, _binary.decode(e["_PARTITION"], types), strict=True))
                entry = out[e["_PARTITION"]] = {
                    "partition": values,
                    "rows": 0,
                    "files": 0,
                    "bytes": 0,
                    "buckets": e["_TOTAL_BUCKETS"],
                    "last_file_creation_time": None,
                }
            f = e["_FILE"]
            entry["rows"] += f["_ROW_COUNT"]
            entry["files"] += 1
            entry["bytes"] += f["_FILE_SIZE"]
            created = _local_time(f.get("_CREATION_TIME"))
            if created is not None and (entry["last_file_creation_time"] or created) <= created:
                entry["last_file_creation_time"] = created
        return sorted(out.values(), key=lambda p: _key_order.sort_key(tuple(p["partition"].values())))

    def info(self) -> dict[str, Any]:
        """What the table holds now: its definition, snapshot, files, rows and sorted
        runs (``max_runs_per_bucket``: what a read of the worst bucket merges), all of
        one snapshot even while others commit."""
        ids = self.snapshots()
        files = self.files(ids[-1]) if ids else []
        runs: dict[tuple[Any, int], set[Any]] = {}
        for f in files:  # level-0 files are one run each; a higher level is one run
            runs.setdefault((f["partition"], f["bucket"]), set()).add(f["path"] if f["level"] == 0 else f["level"])
        return {
            "format": "paimon",
            "path": str(self.path),
            "columns": {f.name: str(f.type) for f in self.schema},
            "key": self.key,
            "partition_by": self.partition_by,
            "buckets": self.buckets,
            "merge": None if self._append else merge_spec(self.merge),
            "sequence": self.sequence,
            "options": self.options,
            "snapshot": ids[-1] if ids else None,
            "snapshots": len(ids),
            "partitions": len({f["partition"] for f in files}),
            "files": len(files),
            "stored_rows": sum(f["rows"] for f in files),
            "bytes": sum(f["bytes"] for f in files),
            "max_runs_per_bucket": max(map(len, runs.values()), default=0),
        }

    def __repr__(self) -> str:
        branch = "" if self.branch == MAIN else f" branch={self.branch}"
        return (
            f"<merge_core.Table {self._root}{branch} key={self.key} partition_by={self.partition_by} "
            f"buckets={self.buckets}>"
        )

    # -- schema changes ---------------------------------------------------------------

    def add_column(self, name: str, type: Any, after: str | None = None, comment: str | None = None) -> int:
        """Adds a nullable column (``type``: a pyarrow type or a Paimon type string such as
        ``"DECIMAL(10, 2)"``) at the end, or after column ``after``; older files read it as
        null. Each change writes the table's next schema, as Paimon's ``ALTER TABLE``
        does, and returns its id; Paimon's readers and writers follow it.

        >>> import pyarrow as pa, merge_core as mc, tempfile
        >>> t = mc.Table.create(tempfile.mkdtemp() + "/t", pa.schema([pa.field("k", pa.int64(), False)]), key="k")
        >>> _ = t.write(pa.table({"k": [1]}))
        >>> t.add_column("v", pa.string()), t.rename_column("v", "name")
        (1, 2)
        >>> _ = t.write(pa.table({"k": [2], "name": ["b"]}))
        >>> t.read().read_all().sort_by("k").to_pydict()
        {'k': [1, 2], 'name': [None, 'b']}
        """
        return self._change(_alter.AddColumn(name, type, after, comment))

    def rename_column(self, name: str, new_name: str) -> int:
        """Renames a column (not a partition column); older files find it by its field id."""
        return self._change(_alter.RenameColumn(name, new_name))

    def drop_column(self, name: str) -> int:
        """Drops a column (not a key or partition column); its values in older files are
        no longer read, and a column added later under its name is a new column."""
        return self._change(_alter.DropColumn(name))

    def alter_column(
        self, name: str, type: Any = None, nullable: bool | None = None, comment: str | None = None
    ) -> int:
        """Changes a column's type (keeping its nullability), nullability or comment, as
        one schema change. Paimon refuses to change a key or partition column's type, to
        make a key nullable, and (unless 'alter-column-null-to-not-null.disabled' is
        false) to make a column NOT NULL; of the type changes Paimon allows, merge-core
        makes those whose older files it reads exactly as Paimon does: widenings
        (docs/table-format.md, "Schema changes")."""
        changes: list[Any] = []
        if type is not None:
            changes.append(_alter.UpdateColumnType(name, type))
        if nullable is not None:
            changes.append(_alter.UpdateColumnNullability(name, nullable))
        if comment is not None:
            changes.append(_alter.UpdateColumnComment(name, comment))
        if not changes:
            raise InvalidInputError("alter_column needs a type, nullable or comment to change")
        return self._change(*changes)

    def set_options(self, options: Mapping[str, str]) -> int:
        """Sets table options, as Paimon's ``ALTER TABLE SET``: once the table has a
        snapshot, options such as 'merge-engine', 'bucket-key' or 'rowkind.field' cannot
        change, and every option is checked as :meth:`create` checks it."""
        if not isinstance(options, Mapping):
            raise InvalidInputError(f"options must be a mapping of option to value, got {options!r}")
        return self._change(*(_alter.SetOption(k, v) for k, v in options.items()))

    def remove_options(self, keys: Sequence[str]) -> int:
        """Removes table options (their defaults apply), as Paimon's ``ALTER TABLE RESET``."""
        if isinstance(keys, str):
            keys = [keys]
        return self._change(*(_alter.RemoveOption(k) for k in keys))

    def _change(self, *changes: Any) -> int:
        schema = _alter.commit_changes(self._root, changes, _check_definition)
        self._use(schema)
        return schema.id

    # -- writing --------------------------------------------------------------------

    def new_write(
        self,
        row_kind: str | None = None,
        memory_limit: int | str = "256MiB",
        spill_dir: str | os.PathLike[str] | None = None,
        threads: int | None = None,
        overwrite: bool = False,
    ) -> TableWrite:
        """A write of any number of batches, sorted within ``memory_limit`` (spilling to
        ``spill_dir``): ``write(data)`` as often as needed, then ``prepare_commit()``
        gives the messages for :meth:`commit`. ``row_kind`` names a column of row kinds.
        With ``threads`` > 1 (default: one per core), the calling thread sorts while the
        others encode the data files; 1 does everything on the calling thread.
        ``overwrite=True`` makes the write of an overwrite, as Paimon's overwrite writers
        (sequence numbers and dynamic buckets start afresh): commit its messages with
        ``commit(messages, overwrite=...)``."""
        refuse(self._schema.options, WRITE, append=self._append)  # before anything is written
        if not isinstance(overwrite, bool):
            raise InvalidInputError(f"new_write takes overwrite=True or False (commit takes a spec), not {overwrite!r}")
        if self._append:
            write = _append.AppendWrite(self._root, self._schema, row_kind, memory_limit, threads)
        elif is_postponed(self._schema):
            _refuse_postponed_lookup(self._schema)
            _refuse_postponed_changelog(self._schema)
            write = postponed_table_write(
                self._root, self._schema, self._setup, row_kind, memory_limit, spill_dir, threads
            )
        else:
            write = TableWrite(self._root, self._schema, self._setup, row_kind, memory_limit, spill_dir, threads)
            write.live_entries = self._live.entries
            if write_only(self._schema.options):
                pass  # Paimon's writers then never compact (its NoopCompactManager): compact() does
            elif needs_lookup(self._schema.options):
                write.level_zero_compaction = functools.partial(self._compact_level_zero, threads=write.threads)
            else:
                write.level_zero_compaction = functools.partial(self._compact_written, threads=write.threads)
        return write.ignore_previous_files() if overwrite else write

    def _compact_written(self, messages: list[CommitMessage], overwrite: bool, threads: int) -> list[CommitMessage]:
        """A write's messages with the universal compaction of each bucket it touched, once
        its level-0 files are added (``_compact.written_tasks``), as Paimon's batch writes
        do; the commit adds the files, then compacts. An overwrite's buckets start empty
        (nothing to compact with). If a compaction fails, every file of the messages goes."""
        written = [e for m in messages for e in m.append_entries()]
        if overwrite or not written:
            return messages
        latest = latest_snapshot_id(self._root)
        snap = self.snapshot(latest) if latest is not None else _no_snapshot(self._schema)
        live = [] if latest is None else self._live.entries(self._root, snap)
        tasks = written_tasks(live, written, snap.id, self._schema)
        if not tasks:
            return messages
        planner = self._full_planner(snap, self._schema)
        done: dict[tuple[bytes, int], CommitMessage] = {}
        try:
            for task in tasks:
                done[(task.partition, task.bucket)] = self._compact_task(planner, task, threads)
        except BaseException:
            self.abort([*messages, *done.values()])
            raise
        out = []
        for m in messages:
            c = done.get((m.partition, m.bucket))
            if c is not None and m.new_files:
                m = dataclasses.replace(
                    m,
                    compact_before=c.compact_before,
                    compact_after=c.compact_after,
                    compact_changelog=c.compact_changelog,
                )
            out.append(m)
        return out

    def _compact_level_zero(
        self, messages: list[CommitMessage], overwrite: bool, threads: int = 1
    ) -> list[CommitMessage]:
        """A write's messages with its level-0 files compacted by lookup (``_lookup``), on
        the latest snapshot, ``threads`` buckets at once; an overwrite's go to the top
        level in their place. If that fails, every file of the messages is removed."""
        latest = None if overwrite else latest_snapshot_id(self._root)
        snap = None if latest is None else self.snapshot(latest)
        planner = self._full_planner(snap or _no_snapshot(self._schema), self._schema)
        live = [] if snap is None else self._live_files(snap)
        changelog = None
        if not overwrite:  # an overwrite's writer makes no changelog, as Paimon's (ignorePreviousFiles)
            changelog = ChangelogIo(
                functools.partial(self._stored_rows, planner),
                functools.partial(self._changelog_file, planner.schema),
                functools.partial(remove_data_file, self._root, planner.schema),
            )
        merge_into = functools.partial(self._merge_into, planner)
        budget = memory_bytes(planner.schema.options, "lookup.cache-max-memory-size", LOOKUP_CACHE_MEMORY)
        self._file_rows.retain({f.name for f in live}, budget)
        compaction = LookupCompaction(planner, snap, live, merge_into, changelog, self._file_rows, not overwrite)
        with ThreadPoolExecutor(max(1, min(threads, len(messages))), "merge-core-lookup") as pool:
            running = [pool.submit(compaction.compacted, m) for m in messages]
            try:
                out = [future.result() for future in running]
            except BaseException:
                for future in running:
                    future.cancel()
                wait(running)  # then each bucket's files go: compacted or not
                done = [
                    f.result() if f.done() and not f.cancelled() and f.exception() is None else None for f in running
                ]
                self.abort([d if d is not None else m for d, m in zip(done, messages, strict=True)])
                raise
        if not overwrite:
            return out
        for m in out:  # nothing to look up: the compacted files replace the level-0 ones
            for f in m.new_files:
                remove_data_file(self._root, self._schema, m.partition, m.bucket, f)
        # The compacted files replace the level-0 ones; ``dv_index`` (nothing to check or
        # change) marks the bucket as compacted by lookup for ``_one_lookup_per_bucket``.
        marked = [DvUpdate(m.partition, m.bucket, None, (), (), False) for m in out]
        return [
            dataclasses.replace(m, new_files=m.compact_after, compact_before=(), compact_after=(), dv_index=d)
            for m, d in zip(out, marked, strict=True)
        ]

    def _one_lookup_per_bucket(self, messages: Sequence[CommitMessage]) -> Sequence[CommitMessage]:
        """The messages, where several writes (the tasks of one Spark job, say) compacted
        the same bucket by lookup, with those compactions undone and the bucket's written
        files compacted again, together, on the latest snapshot: two would each mark and
        replace rows of the same files, unaware of the other."""
        counts = Counter((m.partition, m.bucket) for m in messages if m.dv_index is not None)
        shared = {bucket for bucket, n in counts.items() if n > 1}
        if not shared:
            return messages
        again = [m for m in messages if (m.partition, m.bucket) in shared]
        if any(m.hash_index is not None for m in again):
            raise UnsupportedFeatureError(
                "writes of one commit that placed new keys in the same bucket of a dynamic-bucket table with "
                "deletion vectors or first-row: write each bucket's rows in one write"
            )
        overwrite = again[0].overwrite
        combined: dict[tuple[bytes, int], CommitMessage] = {}
        for m in again:
            # An overwrite's compacted files are its only copy of the rows: compacted again as new ones.
            files = tuple({**f, "_LEVEL": 0} for f in m.new_files) if overwrite else m.new_files
            if not overwrite:  # the compaction's file and vectors
                self.abort([dataclasses.replace(m, new_files=(), changelog_files=())])
            first = combined.get((m.partition, m.bucket))
            combined[(m.partition, m.bucket)] = CommitMessage(
                m.partition,
                m.bucket,
                m.total_buckets,
                (*(first.new_files if first else ()), *files),
                overwrite=overwrite,
                changelog_files=(*(first.changelog_files if first else ()), *m.changelog_files),
            )
        kept = [m for m in messages if (m.partition, m.bucket) not in shared]
        return kept + self._compact_level_zero(list(combined.values()), overwrite)

    def _one_compaction_per_bucket(self, messages: Sequence[CommitMessage]) -> Sequence[CommitMessage]:
        """The messages, where several writes of one commit (the tasks of one Spark job)
        compacted the same bucket (``_compact_written``), without those compactions: each
        picked without the others' files, and two may replace the same file. Their files
        stay at level 0, for the next write's or ``compact()``'s pick."""
        written = [m for m in messages if _written_compaction(m)]
        counts = Counter((m.partition, m.bucket) for m in written)
        shared = {bucket for bucket, n in counts.items() if n > 1}
        if not shared:
            return messages
        out = []
        for m in messages:
            if _written_compaction(m) and (m.partition, m.bucket) in shared:
                self.abort([_compaction_part(m)])
                m = dataclasses.replace(m, compact_before=(), compact_after=(), compact_changelog=())
            out.append(m)
        return out

    def _merge_into(
        self,
        planner: Planner,
        sections: list[list[list[FileRead]]],
        picked: list[DataFile],
        level: int,
        merged: list[pa.RecordBatch] | None = None,
        stored: dict[str, list[pa.RecordBatch]] | None = None,
    ) -> tuple[dict[str, Any], ...]:
        """Merges ``sections`` (of the bucket of the ``picked`` files), deletes dropped, into
        one run at ``level``, each row keeping its sequence number; returns its files'
        records (none: no row left). The merged rows are also kept in ``merged``, if given,
        and each file's rows as stored in ``stored``, by file name (while they fit the
        table's ``FileRows``)."""
        schema, first = planner.schema, picked[0]
        columns = list(schema.arrow.names)
        parts = tuple(Section(tuple(tuple(run) for run in section)) for section in sections)
        whole = Split(planner.snapshot.id, schema.id, tuple(columns), (), first.bucket, parts)
        stream = self._compaction_stream(whole, schema, [*columns, SEQUENCE_NUMBER])
        lowest = min(f.min_sequence for f in picked)
        return self._write_merged(stream, schema, first.partition, first.bucket, level, lowest, 1, merged, stored)

    def bucket_ids(self, data: pa.RecordBatch, row_kind: str | None = None) -> pa.Int32Array:
        """Each row's bucket, as a write assigns it (Paimon's bucket function over the
        row in the table's types): what a distributed write partitions rows by. A
        postponed-bucket table's rows get their partition's number of buckets (as at the
        first call), or -2 when its writes go to ``bucket-postpone/``."""
        if is_postponed(self._schema):
            if self._postponed_buckets is None:  # one look at the snapshot for every batch
                self._postponed_buckets = postponed_bucket_ids(self._root, self._schema)
            return self._postponed_buckets(conform(data, self._schema.arrow, row_kind))
        if self.buckets < 1:
            raise UnsupportedFeatureError(f"the table has no fixed buckets ('bucket' = {self.buckets})")
        return bucket_ids(self._schema, conform(data, self._schema.arrow, row_kind))

    def commit(
        self,
        messages: Sequence[CommitMessage],
        overwrite: bool | Mapping[str, Any] = False,
        dynamic_overwrite: bool | None = None,
        commit_user: str | None = None,
        commit_identifier: int | None = None,
    ) -> int | None:
        """Commits what writes and compactions prepared, as Paimon does: the appends as
        one snapshot, the compactions as the next; returns the last snapshot's id (None
        if there was nothing to commit). If the commit fails, its files are removed.

        ``commit_user`` and ``commit_identifier`` (an integer, 0 or more) mark the
        snapshots as Paimon's streaming writers do (default: a new user, and Paimon's
        batch identifier): a writer that keeps its user across restarts and numbers its
        commits finds with :meth:`last_commit_identifier` which it already committed.

        ``overwrite`` (True, or a partition spec ``{column: value}`` naming some or all
        partition columns) commits the messages of ``new_write(overwrite=True)`` as
        Paimon's ``INSERT OVERWRITE``: one OVERWRITE snapshot in which the partitions it
        replaces lose every file they had (see :meth:`write`). ``dynamic_overwrite``
        (True or False) replaces the table's ``dynamic-partition-overwrite`` for this
        commit, as Paimon's Spark connector does with the mode Spark resolved."""
        _check_names(messages)
        identifier = _identifier(commit_identifier)
        committer = None
        try:
            messages = self._one_lookup_per_bucket(self._one_compaction_per_bucket(messages))
            spec = overwrite_spec(self._schema, overwrite)
            _check_dynamic(dynamic_overwrite, spec is not None)
            if spec is not None and (commit_user is not None or commit_identifier is not None):
                raise UnsupportedFeatureError("commit_user and commit_identifier for an overwrite")
            if spec is not None:
                return commit_overwrite(self._root, self._schema, messages, spec, dynamic_overwrite)
            if any(m.overwrite for m in messages):
                raise InvalidInputError("these messages come from an overwrite write: commit them with overwrite=")
            committer = Committer(self._root, self._schema, commit_user, *identifier, live_of=self._live.entries)
            try:
                return committer.commit(messages)
            except CommitConflictError:
                if not committer.appended or not all(map(_written_compaction, _compactions(messages))):
                    raise
                # Only writes' own compactions lost the race (another compaction of their
                # bucket landed first): the write stands, its level-0 files wait for the next pick.
                self.abort([_compaction_part(m) for m in messages])
                return committer.append_snapshot
        except BaseException:
            if committer is not None and committer.appended:  # the appended files stay: a later compaction takes them
                messages = [dataclasses.replace(m, new_files=(), changelog_files=(), hash_index=None) for m in messages]
            self.abort(messages)
            raise

    def write(
        self,
        data: Any,
        row_kind: str | None = None,
        memory_limit: int | str = "256MiB",
        spill_dir: str | os.PathLike[str] | None = None,
        threads: int | None = None,
        overwrite: bool | Mapping[str, Any] = False,
        dynamic_overwrite: bool | None = None,
    ) -> dict[str, int | None]:
        """Writes ``data`` (any Arrow-tabular object with the table's columns) as one
        commit: rows go to their buckets by Paimon's bucket function and become one
        level-0 file per (partition, bucket). Returns the snapshot, rows and files.

        ``overwrite`` is Paimon's ``INSERT OVERWRITE``: ``True`` replaces the table, a
        spec such as ``{"day": "2024-01-01"}`` (some or all partition columns) the
        partitions it matches, and every row must be in it. With the table option
        ``dynamic-partition-overwrite`` (true by default) only the partitions the rows
        are in are replaced (no rows: nothing); ``dynamic_overwrite`` (True or False)
        decides that for this write instead of the option. The replaced files stay for
        older snapshots and tags until ``expire`` (docs/table-format.md, "Overwrites").

        >>> import pyarrow as pa, merge_core as mc, tempfile
        >>> schema = pa.schema([pa.field("k", pa.int64(), False), pa.field("day", pa.string(), False)])
        >>> t = mc.Table.create(tempfile.mkdtemp() + "/t", schema, key="k", partition_by="day", buckets=1)
        >>> _ = t.write(pa.table({"k": [1, 2, 3], "day": ["d1", "d1", "d2"]}, schema=schema))
        >>> _ = t.write(pa.table({"k": [9], "day": ["d1"]}, schema=schema), overwrite={"day": "d1"})
        >>> t.read().read_all().sort_by("k").to_pydict(), t.snapshot().commit_kind
        ({'k': [3, 9], 'day': ['d2', 'd1']}, 'OVERWRITE')
        """
        replaces = overwrite_spec(self._schema, overwrite) is not None  # a spec that does not parse fails here
        _check_dynamic(dynamic_overwrite, replaces)
        with self.new_write(row_kind, memory_limit, spill_dir, threads, overwrite=replaces) as write:
            write.write(data)
            messages = write.prepare_commit()
        snapshot = self.commit(messages, overwrite, dynamic_overwrite)
        return summary(snapshot, messages, compaction=False)

    def drop_partitions(self, partitions: Sequence[Mapping[str, Any]]) -> dict[str, int | None]:
        """Drops partitions, as Paimon's ``dropPartitions`` (``ALTER TABLE ... DROP
        PARTITION``): one OVERWRITE snapshot without any file of the partitions a spec
        matches (a spec names some or all partition columns; a partition with no file is
        no error). Returns the snapshot and the partitions, files and stored rows
        dropped. The files stay for older snapshots and tags until ``expire``."""
        refuse(self._schema.options, WRITE, append=self._append)
        return drop_partitions(self._root, self._schema, partitions)

    def truncate(self) -> dict[str, int | None]:
        """Empties the table, as Paimon's ``truncateTable``: one OVERWRITE snapshot
        without any file. Returns what :meth:`drop_partitions` returns."""
        refuse(self._schema.options, WRITE, append=self._append)
        return truncate(self._root, self._schema)

    def delete(self, keys: Any, memory_limit: int | str = "256MiB") -> dict[str, int | None]:
        """Deletes the rows of the given keys: ``keys`` holds the primary key columns."""
        if self._append:
            raise _append.refuse_keyed("deleting rows by key")
        source = as_stream_source(keys)
        reader = batches_of(source)[1] if source is not None else iter(())
        schema = self.schema
        needed = set(self.key)

        def as_deletes(batch: pa.RecordBatch) -> pa.RecordBatch:
            missing = [c for c in self.key if c not in batch.schema.names]
            if missing:
                raise InvalidInputError(f"deleting needs the primary key columns; missing {missing}")
            required = [f.name for f in schema if f.name not in needed and not f.nullable]
            if required:
                raise InvalidInputError(f"deleting from a table whose value columns {required} are NOT NULL")
            n = batch.num_rows
            columns = [batch.column(f.name) if f.name in needed else pa.nulls(n, f.type) for f in schema]
            kinds = pa.array(np.full(n, 3, np.int8))  # -D
            return pa.RecordBatch.from_arrays([*columns, kinds], names=[*schema.names, VALUE_KIND])

        out_schema = pa.schema([f.remove_metadata() for f in schema]).append(pa.field(VALUE_KIND, pa.int8()))
        deletes = pa.RecordBatchReader.from_batches(out_schema, (as_deletes(b) for b in reader))
        return self.write(deletes, row_kind=VALUE_KIND, memory_limit=memory_limit)

    def compact(self, full: bool = False, threads: int | None = None) -> dict[str, int | None]:
        """Merges, in each bucket, the sorted runs Paimon's universal compaction picks
        into one file at the level it picks (``full``: every file of a bucket, into the
        top level), as one COMPACT commit (:meth:`plan_compaction`, :meth:`compact_bucket`
        per bucket on ``threads`` threads, default one per core, then :meth:`commit`). Returns the
        snapshot, files merged and files written. A postponed-bucket table's compaction
        first moves the rows waiting in its partitions' ``bucket-postpone/`` into real
        buckets, in the same commit (docs/table-format.md, "Postponed buckets")."""
        threads = check_threads(threads)
        if is_postponed(self._schema) and not self._append:
            refuse(self._schema.options, WRITE)
            _refuse_postponed_lookup(self._schema)
            _refuse_postponed_changelog(self._schema)
            compaction = PostponedCompaction(
                self._root, self._schema, self._setup, self.compact_bucket, self.commit, self.abort
            )
            return compaction.run(full, threads)
        tasks = self.plan_compaction(full)
        workers = max(1, min(threads, len(tasks)))
        each = max(1, threads // workers)  # a lone bucket's file is encoded beside its merge
        with ThreadPoolExecutor(workers, "merge-core-compact") as pool:
            running = [pool.submit(self.compact_bucket, task, each) for task in tasks]
            try:
                messages = [future.result() for future in running]
            except BaseException:
                for future in running:
                    future.cancel()
                wait(running)  # every file written goes, whichever task failed
                self.abort([f.result() for f in running if not f.cancelled() and f.exception() is None])
                raise
        snapshot = self.commit(messages) if messages else latest_snapshot_id(self._root)
        return summary(snapshot, messages, compaction=True)

    def plan_compaction(self, full: bool = False) -> list[CompactTask]:
        """The buckets a compaction merges, one picklable task each: ``full``, every
        bucket not already one file at the top level without retracts; otherwise, in
        each bucket, the sorted runs Paimon's universal compaction picks and the level it
        puts them in (``_compact``; Paimon's forced level-0 pick too on deletion-vector
        and first-row tables, as Paimon's lookup tables do)."""
        refuse(self._schema.options, WRITE, append=self._append)
        latest = latest_snapshot_id(self._root)
        if latest is None:
            return []
        snap = self.snapshot(latest)
        entries = live_entries(self._root, snap)
        if self._append:
            return _append.compaction_tasks(entries, snap.id, self._schema_of(snap), full)
        if postponed_entries(entries):
            raise UnsupportedFeatureError(
                "the table has rows waiting in postponed buckets, which Table.compact() moves into real buckets "
                "(a compaction planned bucket by bucket does not)"
            )
        vectors = deletion_vectors(self._root, snap, lambda p, b: None) if full else {}
        marked = frozenset((p, b) for p, b, _ in vectors)
        schema = self._schema_of(snap)
        return compaction_tasks(entries, snap.id, schema, full, marked, lookup=needs_lookup(schema.options))

    def compact_bucket(self, task: CompactTask, threads: int = 1) -> CommitMessage:
        """Runs one task of :meth:`plan_compaction`: its files merged (deletes dropped
        unless the task keeps them) into one new file at its level; the message replaces
        them when committed.
        With ``threads`` > 1 the file is encoded on other threads while the merge goes on."""
        refuse(self._schema.options, WRITE, append=self._append)
        planner = self._compaction_planner(task.snapshot)
        if isinstance(task, _append.AppendCompactTask):
            return _append.compact_bucket(self._root, planner.schema, planner, task, threads)
        return self._compact_task(planner, task, threads)

    def _compact_task(self, planner: Planner, task: CompactTask, threads: int) -> CommitMessage:
        """Runs a compaction task of a primary-key table with ``planner`` (its snapshot's,
        or the latest's for the files a write is about to commit)."""
        snap, schema, columns = planner.snapshot, planner.schema, planner.columns
        files = [DataFile.of(e) for e in task.entries]
        splits = planner.splits(files, None)
        sections = tuple(section for split in splits for section in split.sections)
        values = splits[0].partition
        whole = Split(snap.id, schema.id, columns, values, task.bucket, sections)
        # Each row keeps its sequence number; below the top, row kinds and retracts stay too.
        wanted, merge = [*columns, SEQUENCE_NUMBER], None
        if not task.drop_deletes:
            wanted.append(VALUE_KIND)
            merge = _keeping_deletes(self._setup_for(schema).merge)
        stream = self._compaction_stream(whole, schema, wanted, merge)
        lowest = min(f.min_sequence for f in files)
        # A full-compaction table's compaction to the top level (the options', as Paimon's
        # rewriter takes it, not the bucket's) also writes what it changed, as does a lookup
        # table's of level-0 files (Paimon's rewriteLookupChangelog).
        merged: list[pa.RecordBatch] | None = None
        producer = changelog_producer(schema.options)
        if (producer == FULL_COMPACTION and task.level == top_level(schema)) or (
            producer == LOOKUP and any(f.level == 0 for f in files)
        ):
            merged = []
        after = self._write_merged(stream, schema, task.partition, task.bucket, task.level, lowest, threads, merged)
        changelog: tuple[dict[str, Any], ...] = ()
        if merged is not None:
            try:
                with Encoders(check_threads(threads)) as encoders:
                    changelog = self._full_changelog(task, planner, files, merged, encoders)
            except BaseException:
                for f in after:
                    remove_data_file(self._root, schema, task.partition, task.bucket, f)
                raise
        before = tuple(e["_FILE"] for e in task.entries)
        dv = None
        if bool_option(schema.options, "deletion-vectors.enabled"):  # the picked files go, and their vectors
            try:
                dv = self._vectors_after(planner, task, files)
            except BaseException:
                for f in after:
                    remove_data_file(self._root, schema, task.partition, task.bucket, f)
                raise
        return CommitMessage(
            task.partition,
            task.bucket,
            task.total_buckets,
            compact_before=before,
            compact_after=after,
            dv_index=dv,
            compact_changelog=changelog,
        )

    def _vectors_after(self, planner: Planner, task: CompactTask, files: list[DataFile]) -> DvUpdate:
        """A deletion-vector table's bucket once the compaction of ``files`` commits: the
        vectors of the files it leaves (``task.kept``), in a new index file if the picked
        files had any (none left: no index file)."""
        snap = planner.snapshot
        seen = tuple(sorted({*(f.name for f in files if f.level > 0), *task.kept}))
        replaced = bucket_index_files(self._root, snap, task.partition, task.bucket)
        update = DvUpdate(task.partition, task.bucket, None, replaced, seen, False)
        bucket = (task.partition, task.bucket)
        old = {name: dv for (p, b, name), dv in planner.deletion_vectors.items() if (p, b) == bucket}
        kept = {name: deleted_positions(dv) for name, dv in old.items() if name in task.kept}
        if len(kept) == len(old):
            return update
        entry = None
        if kept:
            path_of = functools.partial(index_file, self._root, planner.schema)
            entry = write_index(
                path_of,
                task.partition,
                task.bucket,
                kept,
                bool_option(planner.schema.options, "deletion-vectors.bitmap64"),
            )
        return dataclasses.replace(update, entry=entry, rewrite=True)

    def _compaction_stream(
        self, split: Split, schema: TableSchema, columns: list[str], merge: dict[str, Any] | None = None
    ) -> Stream:
        """The merged rows of ``split`` a compaction writes, on one thread, in batches of
        ``COMPACT_BATCH_ROWS``, with one batch at most kept ready for the writer: bounded
        by the runs and the batch size, since the writer is slower than the merge and would
        otherwise let a reader's whole read-ahead fill."""
        return self._read([split], schema, columns, COMPACT_BATCH_ROWS, 1, {}, merge=merge, read_ahead=0)

    def _write_merged(
        self,
        stream: Stream,
        schema: TableSchema,
        partition: bytes,
        bucket: int,
        level: int,
        lowest: int,
        threads: int,
        merged: list[pa.RecordBatch] | None = None,
        stored: dict[str, list[pa.RecordBatch]] | None = None,
    ) -> tuple[dict[str, Any], ...]:
        """Writes merged rows as one run at ``level``, its files rolled at
        ``target-file-size`` (rows without sequence numbers are numbered from ``lowest``);
        returns their records, or nothing if no row was left. The rows are also kept in
        ``merged``, if given, and each file's as stored in ``stored``, by file name."""
        with Encoders(check_threads(threads)) as encoders:

            def open_file(first_sequence: int) -> DataFileWriter:
                keep = None if stored is None else []
                budget = self._file_rows.budget
                f = DataFileWriter(
                    self._root, schema, partition, bucket, level, first_sequence, encoders, keep=keep, keep_bytes=budget
                )
                if keep is not None:
                    stored[f.name] = keep
                return f

            writer = RollingDataFiles(open_file, lowest, target_file_size(schema))
            try:
                for batch in stream:
                    writer.write(batch)
                    if merged is not None:
                        merged.append(batch.drop_columns([SEQUENCE_NUMBER]))
                if writer.rows == 0:  # every key deleted
                    writer.abort()
                    return ()
                return tuple(writer.close())
            except BaseException:
                writer.abort()
                raise

    def _full_changelog(
        self, task: CompactTask, planner: Planner, files: list[DataFile], merged: list[pa.RecordBatch], encoders: Any
    ) -> tuple[dict[str, Any], ...]:
        """The changelog file of a full-compaction table's compaction of ``files`` into
        the ``merged`` rows (none if nothing changed): see ``_changelog``."""
        schema = planner.schema
        keys = list(schema.trimmed_keys)
        if changelog_producer(schema.options) == LOOKUP:
            rows = self._lookup_changes(planner, files, merged)
        else:
            top = [f for f in files if f.level == task.level]
            before = self._as_stored(planner, top)
            touched = self._as_stored(planner, [f for f in files if f.level != task.level]).select(keys)
            after = pa.Table.from_batches(merged, before.schema)
            rows = full_compaction_changes(before, after, touched, keys, schema.options)
        first = min(f.min_sequence for f in files)
        return self._changelog_file(schema, rows, task.partition, task.bucket, task.level, first, encoders)

    def _lookup_changes(self, planner: Planner, files: list[DataFile], merged: list[pa.RecordBatch]) -> pa.Table:
        """A lookup table's changelog of a compaction of ``files`` (level 0 among them) into
        the ``merged`` rows: the keys of the level-0 files, between their row in the
        lowest level above 0 and their merged row (``_changelog.lookup_changes``). A
        compaction of a lookup table's level-0 files takes the whole bucket into the top
        level (``_compact``): nothing above it to look up."""
        schema, arrow = planner.schema, planner.schema.arrow
        keys = list(schema.trimmed_keys)
        levels = sorted({f.level for f in files if f.level > 0})
        stored = [as_schema(self._as_stored(planner, [f for f in files if f.level == lv]), arrow) for lv in levels]
        before = first_of_each_key(stored, keys, arrow)
        touched = self._as_stored(planner, [f for f in files if f.level == 0]).select(keys)
        after = merged_rows(merged, arrow)
        first_row = schema.options.get("merge-engine", "deduplicate").strip().lower() == "first-row"
        return lookup_changes(before, after, touched, keys, schema.options, first_row)

    def _changelog_file(
        self,
        schema: TableSchema,
        rows: pa.Table,
        partition: bytes,
        bucket: int,
        level: int,
        first: int,
        encoders: Any = None,
    ) -> tuple[dict[str, Any], ...]:
        """Writes changelog ``rows`` (with ``_VALUE_KIND``) as one changelog file of the
        bucket at ``level``, numbered from sequence number ``first``; none if no row."""
        if rows.num_rows == 0:
            return ()
        if encoders is None:
            with Encoders(1) as own:
                return self._changelog_file(schema, rows, partition, bucket, level, first, own)
        writer = DataFileWriter(self._root, schema, partition, bucket, level, first, encoders, changelog=True)
        try:
            for batch in rows.to_batches(READ_BATCH_ROWS):
                writer.write(batch)
            return (writer.close(),)
        except BaseException:
            writer.abort()
            raise

    def _as_stored(self, planner: Planner, files: list[DataFile]) -> pa.Table:
        """The rows of ``files`` (one bucket's, all columns of ``planner``) as they hold them."""
        if not files:
            return self._stored_rows(planner, [], 0)
        reads = [planner.file_read(f, f.partition, f.bucket) for f in files]
        return self._stored_rows(planner, reads, files[0].bucket)

    def _stored_rows(self, planner: Planner, reads: list[FileRead], bucket: int) -> pa.Table:
        """The rows of files of ``bucket`` (all columns of ``planner``; each read without
        the positions it skips) as they hold them."""
        schema, columns = planner.schema, planner.columns
        splits = [Split(planner.snapshot.id, schema.id, columns, (), bucket, (Section(((r,),)),)) for r in reads]
        return self._read(splits, schema, list(columns), READ_BATCH_ROWS, 1, {}, merge=AS_STORED).read_all()

    def _compaction_planner(self, snapshot: int) -> Planner:
        """A planner of all columns at ``snapshot``, made once for all the buckets a
        compaction (or a worker's share of one) merges."""
        if self._planner is None or self._planner.snapshot.id != snapshot:
            snap = self.snapshot(snapshot)
            self._planner = self._full_planner(snap, self._schema_of(snap))
        return self._planner

    def _full_planner(self, snap: Snapshot, schema: TableSchema) -> Planner:
        """A planner of every column of ``schema`` at ``snap``."""
        columns = tuple(schema.arrow.names)
        planner = _append.AppendPlanner if _append.is_append(schema) else Planner
        return planner(self._root, snap, schema, columns, _read_columns(schema, self._setup_for(schema), list(columns)))

    def last_commit_identifier(self, commit_user: str) -> int | None:
        """The ``commit_identifier`` of the newest snapshot of this branch that
        ``commit_user`` committed (None: none is left), as Paimon's ``filterCommitted``
        looks it up: a commit numbered at most this one has landed already."""
        return last_identifier(self._root, commit_user)

    def abort(self, messages: Sequence[CommitMessage]) -> None:
        """Removes the files of messages that will not be committed."""
        _check_names(messages)
        for m in messages:
            for f in m.data_files():
                remove_data_file(self._root, self._schema, m.partition, m.bucket, f)
            if m.hash_index is not None:
                _hash_index.remove(self._root, self._schema, m.hash_index)
            if m.dv_index is not None and m.dv_index.entry is not None:
                _hash_index.index_file(self._root, self._schema, m.dv_index.entry).delete()

    def expire(self, keep_snapshots: int | None = None, orphan_age: float = 3600.0) -> dict[str, int]:
        """Expires old snapshots as Paimon does, then removes the files nothing kept uses.

        By default the table's options decide which snapshots expire, as in Paimon: every
        snapshot beyond ``snapshot.num-retained.max``, and those beyond the newest
        ``snapshot.num-retained.min`` (10) older than ``snapshot.time-retained`` (1 h), at
        most ``snapshot.expire.limit`` (50) a call, never one a consumer still reads.
        ``keep_snapshots=N`` keeps exactly the newest N instead. A table that keeps
        changelogs longer (``changelog.num-retained.*``, ``changelog.time-retained``)
        keeps each expiring snapshot's changelog as ``changelog/changelog-N``, read by
        :meth:`changes`, and expires those by the changelog options, as Paimon does.

        Files are kept while a kept snapshot, a tag, a branch or a kept changelog names
        them; files only expired snapshots named go at once, and files nothing names (a
        failed write's) once they are ``orphan_age`` seconds old, so that the files of a
        write in progress are never taken. Returns what was removed."""
        if keep_snapshots is not None and (
            not isinstance(keep_snapshots, int) or isinstance(keep_snapshots, bool) or keep_snapshots < 1
        ):
            raise InvalidInputError(f"keep_snapshots must be at least 1, got {keep_snapshots!r}")
        if not isinstance(orphan_age, (int, float)) or isinstance(orphan_age, bool) or orphan_age < 0:
            raise InvalidInputError(f"orphan_age must be a number of seconds (0 or more), got {orphan_age!r}")
        refuse_on_branch(self._root, "expire")
        return expire_snapshots(self._root, self._schema.options, keep_snapshots, orphan_age)

    def rollback_to(
        self, snapshot: int | None = None, tag: str | None = None, as_of: datetime.datetime | None = None
    ) -> dict[str, int]:
        """Rolls the table back to ``snapshot`` (an id), ``tag`` (a tag's name) or the
        snapshot current ``as_of`` a time (as :meth:`read` picks it), as Paimon's
        ``rollbackTo`` and ``rollback_to_timestamp`` do: the later snapshots, kept changelogs and the tags of
        later snapshots are removed, then the files only they used (never one the target,
        an earlier snapshot, a remaining tag or any branch uses). A tag whose snapshot has
        expired has its snapshot restored; a snapshot id that expired but a tag holds
        rolls back to that tag. Run it while no writer commits to the table. Returns the
        ``snapshot`` rolled back to and the counts removed (``snapshots_removed``,
        ``tags_removed``, ``changelogs_removed``, ``files_removed``,
        ``manifests_removed``, ``bytes_removed``).

        >>> import pyarrow as pa, merge_core as mc, tempfile
        >>> t = mc.Table.create(tempfile.mkdtemp() + "/t", pa.schema([pa.field("k", pa.int64(), False)]), key="k")
        >>> _ = t.write(pa.table({"k": [1]})); _ = t.write(pa.table({"k": [2]}))
        >>> t.rollback_to(snapshot=1)["snapshots_removed"], t.snapshots()
        (1, [1])
        >>> t.read().read_all().to_pydict()
        {'k': [1]}
        """
        refuse_on_branch(self._root, "rollback")
        self._planner = None  # a compaction planned before may name a removed snapshot's id
        return rollback(self._root, self._schema.options, snapshot, tag, as_of)

    # -- reading --------------------------------------------------------------------

    def plan(
        self,
        columns: Sequence[str] | None = None,
        partitions: Mapping[str, Any] | None = None,
        snapshot: int | None = None,
        dynamic_filter: DynamicFilter | Sequence[DynamicFilter] | None = None,
        tag: str | None = None,
        as_of: datetime.datetime | None = None,
        filter: pc.Expression | None = None,
    ) -> Plan:
        """The splits a read of ``columns`` takes, in (partition, bucket, key) order; the
        list's ``stats`` say what was pruned. ``snapshot``, ``tag`` and ``as_of`` pick
        the snapshot, and ``filter`` skips and filters, as for :meth:`read`; each split
        carries the filter to :meth:`read_split`."""
        snap = self._snapshot_read(snapshot, tag, as_of)
        return self._plan(snap, self._travels(snapshot, tag, as_of), columns, partitions, dynamic_filter, filter)

    def _plan(
        self,
        snap: Snapshot | None,
        travels: bool,
        columns: Sequence[str] | None,
        partitions: Mapping[str, Any] | None,
        dynamic_filter: DynamicFilter | Sequence[DynamicFilter] | None,
        filter: pc.Expression | None = None,
    ) -> Plan:
        schema = self._schema_of(snap, travels)
        wanted = _wanted(schema, columns)
        predicate = None if filter is None else _predicate.parse(filter, schema.arrow.names)
        refuse(schema.options, READ, [key for key in schema.options if key not in SNAPSHOT_CHOICE], self._append)
        chosen, dynamic_filters = _partition_filter(schema, partitions, dynamic_filter)
        memo = self._snapshot_memo(snap) if snap else None
        files = list(memo.files) if memo else []
        compacted_only = not self._append and _skips_level_zero(schema)  # an append table's files are all level 0
        if compacted_only:
            files = [f for f in files if f.level > 0]
        if is_postponed(schema):  # postponed rows wait for a compaction, as in Paimon's batch scan
            files = [f for f in files if f.bucket >= 0]
        listed, skipped = files, {}
        if predicate is not None:
            each_file = self._append or compacted_only  # nothing merges: each file tested alone
            skipping = Skipping(predicate, schema, _schemas(self._root, schema), each_file, memo)
            files, skipped = skipping.files(files), skipping.stats
        splits = []
        if snap:
            needed = _with_filter_columns(schema, wanted, predicate)
            read_columns = _read_columns(schema, self._setup_for(schema), needed)
            if self._append:
                planner = _append.AppendPlanner(self._root, snap, schema, tuple(wanted), read_columns, memo)
            else:
                planner = Planner(self._root, snap, schema, tuple(wanted), read_columns, memo, compacted_only)
            splits = [dataclasses.replace(s, filter=predicate) for s in planner.splits(files, chosen)]
        files = listed
        files_read = sum(s.files for s in splits)
        partitions = len({f.partition for f in files})
        partitions_read = len({s.partition for s in splits})
        stats = {
            "snapshot": snap.id if snap else 0,
            "files_total": len(files),
            "files_read": files_read,
            "files_pruned": len(files) - files_read,
            "partitions_total": partitions,
            "partitions_read": partitions_read,
            "partitions_pruned": partitions - partitions_read,
            "splits": len(splits),
            "dynamic_filters_applied": dynamic_filters,
            **skipped,
        }
        return Plan(splits, stats)

    def _live_files(self, snap: Snapshot) -> list[DataFile]:
        """``snap``'s live files, read from its manifests once while it stays the one planned."""
        return self._live.files(self._root, snap)

    def _snapshot_memo(self, snap: Snapshot) -> SnapshotMemo:
        """What planning learns of ``snap``, kept while it stays the snapshot planned."""
        key = snapshot_key(snap)
        if self._memo is None or self._memo.key != key:
            self._memo = SnapshotMemo(key, self._live.files(self._root, snap))
        return self._memo

    def read_split(self, split: Split, batch_size: int = READ_BATCH_ROWS, threads: int = 1) -> Stream:
        """The merged rows of one split, with the columns it was planned for."""
        schema = self._schema if split.schema_id == self._schema.id else load_schema(self._root, split.schema_id)
        stats = {"snapshot": split.snapshot, "files_read": split.files}
        return self._read([split], schema, list(split.columns), batch_size, threads, stats, split.filter)

    def read(
        self,
        columns: Sequence[str] | None = None,
        partitions: Mapping[str, Any] | None = None,
        dynamic_filter: DynamicFilter | Sequence[DynamicFilter] | None = None,
        snapshot: int | None = None,
        batch_size: int = READ_BATCH_ROWS,
        threads: int | None = None,
        tag: str | None = None,
        as_of: datetime.datetime | None = None,
        filter: pc.Expression | None = None,
    ) -> Stream:
        """The table's rows as a lazy :class:`Stream`, one row per live key, as Paimon's
        batch read returns them. The snapshot read is the latest, or (at most one of)
        ``snapshot`` (an id), ``tag`` (a tag's name) or ``as_of`` (the newest snapshot
        committed at or before a ``datetime``; a naive one is local time); without them,
        the table's own ``scan.*`` options pick it as in Paimon (``scan.snapshot-id``,
        ``scan.tag-name``, ``scan.timestamp-millis``, ``scan.timestamp``, ``scan.mode``).
        ``partitions`` and ``dynamic_filter`` prune partitions as for
        :class:`merge_core.Table`. The stream's ``stats`` add the ``snapshot`` read (0:
        the table has no commit yet), and ``files``, ``partitions`` (each ``_total``,
        ``_read`` and ``_pruned``), ``splits`` and ``dynamic_filters_applied``.
        ``threads`` (default: one per core) merge buckets at once; with fewer buckets
        than threads, each is cut into key ranges merged in parallel (docs/memory.md,
        "Reading a table").

        ``filter`` (a ``pyarrow.compute.Expression`` of ``==``, ``!=``, ``<``, ``<=``,
        ``>``, ``>=``, ``isin``, ``is_null``, ``is_valid``, ``&``, ``|``, ``~``) keeps the
        merged rows for which it is true; partitions and files whose statistics exclude
        it are not read, by Paimon's rules (docs/table-format.md, "Filters"), and the
        stats count them (``partitions_skipped_by_filter``, ``buckets_skipped_by_filter``,
        ``files_skipped_by_key_stats``, ``files_skipped_by_value_stats``,
        ``rows_filtered_out``; ``files_skipped``: files whose key column, decoded first,
        held no key the filter allows, so no other column of theirs was read;
        ``bytes_read``: the bytes taken of the data files).

        >>> import pyarrow as pa, pyarrow.compute as pc, merge_core as mc, tempfile
        >>> t = mc.Table.create(tempfile.mkdtemp() + "/t", pa.schema([("k", pa.int64()), ("v", pa.int64())]), key="k")
        >>> _ = t.write(pa.table({"k": [1, 2, 3], "v": [10, 20, 30]}))
        >>> t.read(filter=(pc.field("v") > 15) & (pc.field("k") != 3)).read_all().to_pydict()
        {'k': [2], 'v': [20]}
        """
        threads = check_threads(threads)
        snap = self._snapshot_read(snapshot, tag, as_of)
        travels = self._travels(snapshot, tag, as_of)
        schema = self._schema_of(snap, travels)
        plan = self._plan(snap, travels, columns, partitions, dynamic_filter, filter)
        predicate = plan[0].filter if plan else None
        if predicate is None and filter is not None:
            predicate = _predicate.parse(filter, schema.arrow.names)
        wanted = _wanted(schema, columns)
        return self._read(plan, schema, wanted, batch_size, threads, plan.stats, predicate)

    def read_schema(
        self,
        columns: Sequence[str] | None = None,
        snapshot: int | None = None,
        tag: str | None = None,
        as_of: datetime.datetime | None = None,
    ) -> pa.Schema:
        """The schema of a read of ``columns`` (what :meth:`read` returns), without reading."""
        schema = self._schema_of(self._snapshot_read(snapshot, tag, as_of), self._travels(snapshot, tag, as_of))
        return self._read([], schema, _wanted(schema, columns), 1, 1, {}).schema

    def changes(
        self,
        start: int,
        end: int | None = None,
        columns: Sequence[str] | None = None,
        batch_size: int = READ_BATCH_ROWS,
        threads: int | None = None,
    ) -> Stream:
        """The changes committed after snapshot ``start`` up to snapshot ``end`` (the
        latest by default), as Paimon's incremental read between two snapshots returns
        them: a lazy :class:`Stream` whose first column ``_row_kind`` says what each row
        is (``+I``, ``-U``, ``+U``, ``-D``), then ``columns`` (default: all) in the table's
        latest schema. With ``changelog-producer`` = ``none`` the rows are those each
        APPEND commit wrote, as written (compactions change no row); with a producer,
        the changelog files the commits wrote. Rows are never merged: a key changed
        twice has both changes, in commit order (docs/table-format.md, "Changes").

        >>> import pyarrow as pa, merge_core as mc, tempfile
        >>> t = mc.Table.create(tempfile.mkdtemp() + "/t", pa.schema([("k", pa.int64()), ("v", pa.string())]),
        ...                     key="k", options={"changelog-producer": "input"})
        >>> _ = t.write(pa.table({"k": [1, 2], "v": ["a", "b"]}))
        >>> _ = t.write(pa.table({"k": [1, 1], "v": ["a", "A"], "op": ["-U", "+U"]}), row_kind="op")
        >>> t.changes(1).read_all().to_pydict()
        {'_row_kind': ['-U', '+U'], 'k': [1, 1], 'v': ['a', 'A']}
        """
        plan = self.plan_changes(start, end, columns)
        return self._read_changes(plan, _wanted(self._schema, columns), plan.stats, batch_size, threads)

    def plan_changes(self, start: int, end: int | None = None, columns: Sequence[str] | None = None) -> Plan:
        """The files :meth:`changes` would read, planned without reading one: a
        :class:`Plan` of one picklable :class:`Split` per change file, in the order the
        changes come, each split's ``snapshot`` the one that committed it (a snapshot
        that changed no row has none). Its ``stats``: ``snapshots`` (in the range) and
        ``files_read``. :meth:`read_changes` reads them, on this process or another,
        without opening a snapshot or manifest again."""
        start, end = check_range(self._root, start, end)
        schema = self._schema  # files of older schemas read in the latest, as Paimon's incremental read
        wanted = _wanted(schema, columns)
        types = [schema.field(k).type for k in schema.partition_keys]
        files = ordered_changes(change_files(self._root, schema.options, start, end), types)
        planner = Planner(
            self._root, commit_of(self._root, end), schema, tuple(wanted), _read_columns(schema, self._setup, wanted)
        )
        splits = []
        for change in files:
            f = change.file
            read = dataclasses.replace(planner.file_read(f, f.partition, f.bucket), deleted=None)  # rows as stored
            values = _binary.decode(f.partition, types)
            splits.append(Split(change.snapshot, schema.id, tuple(wanted), values, f.bucket, (Section(((read,),)),)))
        return Plan(splits, {"snapshots": end - start, "files_read": len(files)})

    def read_changes(
        self, splits: Sequence[Split], batch_size: int = READ_BATCH_ROWS, threads: int | None = None
    ) -> Stream:
        """The changes in ``splits`` (of :meth:`plan_changes`, all of one plan), as
        :meth:`changes` gives them: ``_row_kind``, then the columns planned."""
        if len({s.columns for s in splits}) > 1:
            raise InvalidInputError("read_changes reads splits planned for the same columns (of one plan_changes)")
        columns = list(splits[0].columns) if splits else list(self._schema.arrow.names)
        stats = {"snapshots": len({s.snapshot for s in splits}), "files_read": len(splits)}
        return self._read_changes(splits, columns, stats, batch_size, threads)

    def _read_changes(
        self, splits: Sequence[Split], wanted: list[str], stats: dict[str, int], batch_size: int, threads: int | None
    ) -> Stream:
        threads = check_threads(threads)
        schema_id = splits[0].schema_id if splits else self._schema.id
        schema = self._schema if schema_id == self._schema.id else load_schema(self._root, schema_id)
        stream = self._read(list(splits), schema, [*wanted, VALUE_KIND], batch_size, threads, stats, merge=AS_STORED)
        return ChangeStream(stream, wanted)  # type: ignore[return-value]

    def tags(self) -> dict[str, int]:
        """The table's tags (by whichever writer made them): name -> snapshot id."""
        return {
            name.removeprefix("tag-"): load_tag(self._root, name.removeprefix("tag-")).id
            for name in (self._root / "tag").names("tag-")
        }

    def create_tag(self, name: str, snapshot: int | None = None) -> int:
        """Tags ``snapshot`` (the latest by default) as ``name`` and returns its id. As
        Paimon's ``createTag`` without a retention time, ``tag/tag-NAME`` holds the
        snapshot's JSON; its files then stay while the tag does (``expire`` keeps them),
        and ``read(tag=name)`` reads it, here and in every Paimon reader.

        The tag is created only if absent (atomically, on S3 too): a tag of that name, by
        any writer, is an error, as Paimon's is. On a branch, the tag is the branch's.

        >>> import pyarrow as pa, merge_core as mc, tempfile
        >>> t = mc.Table.create(tempfile.mkdtemp() + "/t", pa.schema([pa.field("k", pa.int64(), False)]), key="k")
        >>> _ = t.write(pa.table({"k": [1]})); _ = t.write(pa.table({"k": [2]}))
        >>> t.create_tag("first", snapshot=1), t.tags()
        (1, {'first': 1})
        >>> t.read(tag="first").read_all().to_pydict()
        {'k': [1]}
        """
        path = tag_path(self._root, name)
        if not name.strip():
            raise InvalidInputError("a tag's name must not be blank")
        if snapshot is None:
            snapshot = latest_snapshot_id(self._root)
            if snapshot is None:
                raise InvalidInputError(f"the table at {self.path} has no snapshot to tag yet")
        source = self._root / "snapshot" / f"snapshot-{snapshot}"
        try:
            content = source.read_bytes()
        except FileNotFoundError:
            kept = self.snapshots()
            raise InvalidInputError(f"no snapshot {snapshot} to tag (the snapshots kept: {kept})") from None
        Snapshot.parse(content, source)  # a damaged snapshot is not copied into a tag
        if not path.create_new(content.decode()):
            raise TableExistsError(f"tag {name!r} already exists (on snapshot {load_tag(self._root, name).id})")
        return snapshot

    def delete_tag(self, name: str) -> None:
        """Removes the tag ``name``. Paimon's ``deleteTag`` also removes at once the files
        only that tag kept; merge-core leaves them to ``expire``, which removes every file
        nothing kept names (after ``orphan_age``), whichever writer made it."""
        load_tag(self._root, name)  # a TableNotFoundError naming the tags there are
        tag_path(self._root, name).delete()

    def _snapshot_read(
        self, snapshot: int | None, tag: str | None = None, as_of: datetime.datetime | None = None
    ) -> Snapshot | None:
        """The snapshot a read takes (None: no commit yet, which reads as an empty table).
        A read that names none takes the table's scan options, refused by name if they ask
        for what merge-core does not read."""
        snap = snapshot_to_read(self._root, self._schema.options, snapshot, tag, as_of)
        if snapshot is None and tag is None and as_of is None:
            options = self._schema.options
            refuse(options, READ, [key for key in options if key in SNAPSHOT_CHOICE])
        return snap

    def _travels(self, snapshot: int | None, tag: str | None, as_of: datetime.datetime | None) -> bool:
        """Whether a read travels to a snapshot: by its arguments, or the table's options."""
        options = self._schema.options
        return any(x is not None for x in (snapshot, tag, as_of)) or any(k in options for k in TRAVEL_OPTIONS)

    def _schema_of(self, snap: Snapshot | None, travels: bool = False) -> TableSchema:
        """The schema of a read or compaction of ``snap``. As in Paimon, a read that
        travels to a snapshot takes the snapshot's schema; otherwise the table's latest
        (after a schema change, files of older schemas are read in the newest), or the
        snapshot's if another writer changed the schema since this table was opened."""
        if snap is None or snap.schema_id == self._schema.id:
            return self._schema
        if travels or snap.schema_id > self._schema.id:
            return _checked_schema(self._root, snap.schema_id)
        return self._schema

    def _setup_for(self, schema: TableSchema) -> PaimonMerge:
        """The merge of a read in ``schema``. As in Paimon, a read of an older schema (a
        travelling read) merges by the table's current options over the older columns;
        per-column options of columns that schema lacks (renamed or added since) do not
        apply to it, as Paimon's merge functions look their options up by column."""
        if schema.id == self._schema.id:
            return self._setup
        names = {f.name for f in schema.fields}
        options = {k: v for k, v in self._schema.options.items() if _columns_known(k, names)}
        return table_merge(schema, options)

    def _read(
        self,
        splits: list[Split],
        schema: TableSchema,
        columns: list[str],
        batch_size: int,
        threads: int,
        stats: dict[str, int],
        predicate: _predicate.Predicate | None = None,
        key_range: tuple[pa.Array | None, pa.Array | None] | None = None,
        merge: dict[str, Any] | None = None,
        read_ahead: int | None = None,
    ) -> Stream:
        """The splits' sections merged in Rust, each on its own, output in order (the
        rows for which ``predicate`` is true, if given; files read only where their
        statistics let the first key column lie in ``key_range``, which the predicate's
        bounds on it give), by the table's merge function or ``merge`` (a spec:
        ``{"function": "none"}`` keeps every row as stored). ``read_ahead``: the bytes of
        merged batches each merge may keep ready (one batch at least; default a share of
        128 MiB, docs/memory.md)."""
        if not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidInputError(f"batch_size must be a positive integer, got {batch_size!r}")
        if predicate is not None:
            needed = _with_filter_columns(schema, columns, predicate)
            bounds = first_key_bounds(predicate, schema)
            merged = self._read(splits, schema, needed, batch_size, threads, stats, key_range=bounds)
            return _predicate.FilteredStream(merged, predicate, columns)  # type: ignore[return-value]
        setup = self._setup_for(schema)
        read = _read_columns(schema, setup, columns)
        if _append.is_append(schema):
            return _append.AppendStream(self._root, schema, splits, read, columns, batch_size, threads, stats)
        # A partition column may be null (the default partition), even in a primary key.
        read_schema = pa.schema(
            [
                schema.field(c).arrow().with_nullable(c in schema.partition_keys or schema.field(c).nullable)
                for c in read
            ]
            + [pa.field(SEQUENCE_NUMBER, pa.int64(), False), pa.field(VALUE_KIND, pa.int8(), False)]
        )
        store = self._root.store
        sections = [
            [[_planned(store, f) for f in run] for run in section.runs]
            for split in splits
            for section in split.sections
        ]
        options = {
            "key": list(schema.trimmed_keys),
            "sequence": list(setup.sequence),
            "descending": setup.sequence_order == "descending",
            "merge": merge_spec(setup.merge) if merge is None else merge,
            "batch_size": batch_size,
            "columns": columns,
            "threads": threads,
            "stats": list(stats.items()),
            "key_range": key_range,
            "read_ahead": read_ahead,
            # Files above level 0 of a table that reads nothing else hold each key once
            # among their live rows: a section of one file is its rows as stored.
            "lone_runs_as_stored": merge is None and _skips_level_zero(schema),
        }
        return _native.read_paimon(read_schema, sections, options)


def _written_compaction(m: CommitMessage) -> bool:
    """Whether a message is a write's with its own universal compaction (``_compact_written``;
    a lookup compaction carries the bucket's ``dv_index``)."""
    return bool(m.new_files) and m.is_compaction and m.dv_index is None


def _compactions(messages: Sequence[CommitMessage]) -> list[CommitMessage]:
    return [m for m in messages if m.is_compaction]


def _compaction_part(m: CommitMessage) -> CommitMessage:
    """The files a message's compaction wrote, as a message to abort (not those it only
    moved to another level: see ``CommitMessage.data_files``)."""
    return CommitMessage(
        m.partition,
        m.bucket,
        m.total_buckets,
        compact_before=m.compact_before,
        compact_after=m.compact_after,
        compact_changelog=m.compact_changelog,
    )


def _no_snapshot(schema: TableSchema) -> Snapshot:
    """The snapshot a first write's compaction plans on: none, so no file."""
    return Snapshot(0, schema.id, "", "", None, "APPEND", 0, 0)


def _keeping_deletes(merge: Any) -> dict[str, Any]:
    """The merge of a compaction below the top level: the table's, keeping retracts and
    row kinds as Paimon's compaction does there (``dropDelete`` false), since older rows
    of the key may lie below: a lone version with its own kind, a fold with the kind
    Paimon's merge function gives it (a removed row as ``-D``)."""
    return {**merge_spec(merge), "drop_deletes": False}


def _identifier(commit_identifier: int | None) -> tuple[int, ...]:
    """``commit_identifier`` checked, as ``Committer`` takes it (nothing: its default)."""
    if commit_identifier is None:
        return ()
    if not isinstance(commit_identifier, int) or isinstance(commit_identifier, bool) or commit_identifier < 0:
        raise InvalidInputError(f"commit_identifier must be an integer, 0 or more, got {commit_identifier!r}")
    return (commit_identifier,)


def _refuse_postponed_changelog(schema: TableSchema) -> None:
    """merge-core writes no changelog into a postponed-bucket table (its writes nor the
    compaction that moves its rows into buckets)."""
    if changelog_producer(schema.options) != "none":
        raise UnsupportedFeatureError(
            "merge-core does not write a changelog ('changelog-producer') into a postponed-bucket table"
        )


def _with_filter_columns(
    schema: TableSchema, columns: Sequence[str], predicate: _predicate.Predicate | None
) -> list[str]:
    """``columns``, then the other columns ``predicate`` reads (in table order)."""
    extra = predicate.columns - set(columns) if predicate is not None else set()
    return [*columns, *(f.name for f in schema.fields if f.name in extra)]


def _schemas(root: Location, schema: TableSchema) -> Callable[[int], TableSchema]:
    """The table's schemas by id, each loaded once."""
    known = {schema.id: schema}

    def schema_of(schema_id: int) -> TableSchema:
        if schema_id not in known:
            known[schema_id] = load_schema(root, schema_id)
        return known[schema_id]

    return schema_of


def _columns_known(option: str, names: set[str]) -> bool:
    """Whether a ``fields.<columns>.<option>`` option (any other option: yes) names only
    columns of ``names``."""
    parts = option.split(".")
    if parts[0] != "fields" or len(parts) < 3:
        return True
    return all(c in names or c == "default-aggregate-function" for c in parts[1].split(",") if c)


def _local_time(value: Any) -> datetime.datetime | None:
    """A data file's creation time as a local ``datetime``: Paimon stores the writer's
    local clock time without a zone (``creationTimeEpochMillis`` reads it in the local
    zone), which an Avro reader hands back as that clock time in UTC."""
    if value is None:
        return None
    if isinstance(value, datetime.datetime):
        return value.replace(tzinfo=None)
    return datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=int(value))


def _check_dynamic(dynamic_overwrite: Any, overwrites: bool) -> None:
    if dynamic_overwrite is not None and not isinstance(dynamic_overwrite, bool):
        raise InvalidInputError(f"dynamic_overwrite must be True, False or None, got {dynamic_overwrite!r}")
    if dynamic_overwrite is not None and not overwrites:
        raise InvalidInputError("dynamic_overwrite applies to an overwrite (overwrite=True or a partition spec)")


def _check_names(messages: Sequence[CommitMessage]) -> None:
    """Refuses messages naming a data file by a path rather than a name (a manifest
    naming it would send readers, and a removal, outside the bucket's directory)."""
    for m in messages:
        for f in (*m.new_files, *m.compact_before, *m.compact_after):
            file_name(f.get("_FILE_NAME"), "a commit message", InvalidInputError)
    _hash_index.check_names(m.hash_index for m in messages if m.hash_index is not None)


def _checked_schema(root: Location, schema_id: int) -> TableSchema:
    """Schema ``schema_id`` of the table, refused if it breaks Paimon's schema rules."""
    schema = load_schema(root, schema_id)
    check_stored(schema, str(root / "schema" / f"schema-{schema_id}"))
    return schema


def _planned(store: Store, f: FileRead) -> _native.PlannedFile:
    fetch = _fetcher(store, f.path) if f.content is None else functools.partial(bytes, f.content)
    return _native.PlannedFile(store.display(f.path), list(f.columns), _positions(f.deleted), fetch)


def _fetcher(store: Store, path: str) -> Callable[[], bytes] | None:
    """How the read gets a data file off the local disk: fetched whole when its run
    reaches it (``None``: Rust opens the local file itself)."""
    return None if store.local else functools.partial(_fetch, store, path)


def _fetch(store: Store, path: str) -> bytes:
    try:
        return store.read_bytes(path)
    except FileNotFoundError as e:
        raise CorruptTableError(f"data file {store.display(path)} is missing") from e
    except OSError as e:
        raise TableIOError(f"reading data file {store.display(path)} failed: {e}") from e


def _positions(deleted: np.ndarray | None) -> bytes | None:
    return None if deleted is None else deleted.astype("<u8").tobytes()


def _wanted(schema: TableSchema, columns: Sequence[str] | None) -> list[str]:
    names = schema.arrow.names
    wanted = list(names) if columns is None else column_names(columns, "columns")
    unknown = [c for c in wanted if c not in names]
    if unknown:
        raise InvalidInputError(f"no columns {unknown} in the table (it has {names})")
    return wanted


def _read_columns(schema: TableSchema, setup: PaimonMerge, wanted: list[str]) -> list[str]:
    """The table columns a read of ``wanted`` decodes: those, the key, the sequence
    columns and every column the merge function names, in table order."""
    if _append.is_append(schema):  # nothing merges: the columns asked for
        return [f.name for f in schema.fields if f.name in set(wanted)]
    spec = merge_spec(setup.merge)
    named = set(spec.get("fields", {}))
    for ordering, protected in spec.get("sequence_groups", []):
        named |= {*ordering, *protected}
    if spec.get("default") and spec["function"] == "partial-update":
        named |= {f.name for f in schema.fields}  # a default function applies to every column
    needed = {*wanted, *schema.trimmed_keys, *setup.sequence, *named}
    return [f.name for f in schema.fields if f.name in needed]


def _refuse_postponed_lookup(schema: TableSchema) -> None:
    """merge-core moves postponed rows into buckets without the lookup that deletion
    vectors and first-row need (``_lookup``)."""
    if needs_lookup(schema.options):
        raise UnsupportedFeatureError(
            "merge-core does not write postponed-bucket tables ('bucket' = -2) with deletion vectors or the "
            "first-row merge engine"
        )


def _skips_level_zero(schema: TableSchema) -> bool:
    """A batch read of a table with deletion vectors (unless merged on read), or of a
    first-row table, sees only compacted files: level-0 files become visible once
    compacted, as in Paimon's batch scan."""
    options = schema.options
    if bool_option(options, "deletion-vectors.enabled"):
        return not bool_option(options, "deletion-vectors.merge-on-read")
    return options.get("merge-engine", "deduplicate").strip().lower() == "first-row"


def _partition_filter(
    schema: TableSchema, partitions: Mapping[str, Any] | None, dynamic_filter: Any
) -> tuple[Callable[[tuple], bool] | None, int]:
    """A predicate on partition values for ``{column: value or values}`` and dynamic
    filters (``None``: read every partition), and how many dynamic filters apply."""
    tests = []
    for column, values in (partitions or {}).items():
        values = values if isinstance(values, (list, tuple, set, frozenset)) else [values]
        tests.append((column, _values(schema, column, pa.array(list(values)), strict=True)))
    applied = 0
    filters = [dynamic_filter] if isinstance(dynamic_filter, DynamicFilter) else list(dynamic_filter or [])
    for f in filters:
        values = None if f.values is None else _values(schema, f.partition_column, f.values, strict=False)
        if values is not None:  # a filter that gave up, or whose values do not cast, prunes nothing
            tests.append((f.partition_column, values - {None}))
            applied += 1
    if not tests:
        return None, applied
    tests = [(schema.partition_keys.index(column), allowed) for column, allowed in tests]
    return (lambda row: all(row[i] in allowed for i, allowed in tests)), applied


def _values(schema: TableSchema, column: str, values: pa.Array, strict: bool) -> set | None:
    """``values`` as Python values of partition column ``column`` (as the table decodes
    them), or ``None`` when they do not cast and ``strict`` is off."""
    if column not in schema.partition_keys:
        raise InvalidInputError(f"{column!r} is not a partition column (they are {list(schema.partition_keys)})")
    target = schema.field(column).type
    try:
        return set(values.cast(target).to_pylist())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        if strict:
            raise InvalidInputError(f"partition values {values.to_pylist()!r} do not fit column {column!r}: {e}") from e
        return None


def _create(
    root: Location,
    schema: pa.Schema,
    key: Any,
    partition_by: Any,
    buckets: int | None,
    merge: Any,
    sequence: Any,
    sequence_order: str,
    options: Mapping[str, str] | None,
) -> tuple[Location, TableSchema]:
    """Writes schema 0 of a new table; returns the root and the schema as read back."""
    if not isinstance(schema, pa.Schema):
        raise InvalidInputError(f"schema must be a pyarrow.Schema, got {type(schema).__name__}")
    keys, partitions = column_names(key, "key"), column_names(partition_by, "partition_by")
    sequences = column_names(sequence, "sequence")
    names = schema.names
    for what, cols in (("key", keys), ("partition_by", partitions), ("sequence", sequences)):
        unknown = [c for c in cols if c not in names]
        if unknown:
            raise InvalidInputError(f"{what} names columns {unknown} that the schema does not have ({names})")
    if buckets is None:
        buckets = 4 if keys else _append.UNAWARE
    lowest = POSTPONE_BUCKET if keys else _append.UNAWARE
    if not isinstance(buckets, int) or isinstance(buckets, bool) or not lowest <= buckets <= 1 << 16 or buckets == 0:
        kinds = ", -1 (dynamic) or -2 (postponed)" if keys else " (or -1, bucket-unaware, for an append table)"
        raise InvalidInputError(f"buckets must be an integer from 1 to 65536{kinds}, got {buckets!r}")
    if keys:
        table_options = {**paimon_options(merge, sequences, sequence_order), "bucket": str(buckets), THIN_MODE: "true"}
    else:
        _append.check_unmerged(merge, sequences)
        table_options = {"bucket": str(buckets)}
    table_options.update({str(k): str(v) for k, v in (options or {}).items()})
    # Paimon's primary key includes the partition columns.
    primary = [*[p for p in partitions if p not in keys], *keys] if keys else []
    text = schema_json(schema, primary, partitions, table_options)
    parsed = TableSchema.parse(text, "the new schema")
    _check_definition(parsed)
    if schema_ids(root):
        raise TableExistsError(f"a table already exists at {root}")
    if root.names():
        raise InvalidInputError(f"{root} is not empty; a table needs a new or empty directory")
    try:
        created = (root / "schema" / "schema-0").create_new(text)
    except OSError as e:
        raise TableIOError(f"creating the table at {root} failed: {e}") from e
    if not created:
        raise TableExistsError(f"a table already exists at {root}")
    return root, parsed


def _check_definition(schema: TableSchema) -> None:
    """Refuses a new schema (of a new table, or a schema change) that breaks Paimon's
    schema rules, or whose options merge-core would not read, before it is written."""
    check_new(schema)
    merge_from_paimon_options(schema.options)  # the options must read back
    Layout(schema)  # and place every file inside the table, where Paimon would
    check_options(schema)
    parquet_compression(schema.options)
    if not _append.is_append(schema):
        _check_merge(schema)


def table_merge(schema: TableSchema, options: Mapping[str, str]) -> PaimonMerge:
    """The merge of a table of ``schema`` under ``options``: its partition columns of the
    key fold as Paimon's primary-key function folds them (the merge keys on the rest)."""
    key_values = [k for k in schema.primary_keys if k in schema.partition_keys]
    return merge_from_paimon_options(options, key_values)


def _check_merge(schema: TableSchema) -> None:
    """Fails now, not at the first write, if the merge function does not fit the schema."""
    root = resolve(os.devnull)
    setup = table_merge(schema, schema.options)
    try:
        TableWrite(root, schema, setup, None, "1MiB", None).close()
    except ValueError as e:
        raise InvalidInputError(f"the merge function does not fit the table: {e}") from e
