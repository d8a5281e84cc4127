"""Lookup compaction: a write's level-0 files compacted at once into a level above, as
Paimon's writers do for tables whose batch reads skip level 0 (deletion vectors,
first-row), so that the write is visible the moment it commits.

For each (partition, bucket) a write touched:

1. **Pick** (Paimon's ``ForceUpLevel0Compaction`` falling back to
   ``UniversalCompaction.forcePickL0``): the sorted runs are the level-0 files, newest
   first, then one run per non-empty level. Every level-0 run is taken, then the runs
   after it while their size is within ``compaction.size-ratio`` percent of what is
   taken (level 1 always). The output level is the next run's level less one (the top
   level if every run is taken); never 0 (then the next run above 0 is taken too and
   its level is the output's).
2. **Look up** each key of the picked files in the files of the levels above the
   output (the rows no deletion vector hides). Every reader's invariant is kept: a key
   is at most once among the live rows of levels 1 and up.
3. **Merge**: with deletion vectors, the picked files and the rows found merge as one
   read (the table's merge function, found rows being older), deletes dropped, into one
   file at the output level; each row found is marked in its file's deletion vector
   (the bucket's index file is written anew, Paimon's ``BucketedDvMaintainer``). For
   first-row, whose found rows must stay as they are, the picked rows with a key found
   above are left out instead.

The result is a compaction in the write's commit message: Paimon commits the level-0
files (APPEND), then the compaction (COMPACT), so does ``Committer.commit``. Files other
snapshots, tags or branches name are never touched: the rows they hold are hidden by
deletion vectors, the files stay.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import CorruptTableError
from ._commit import CommitMessage
from ._compact import top_level
from ._dv import DvUpdate, bucket_index_files, deleted_positions, write_index
from ._hash_index import index_file
from ._meta import DataFile, Snapshot
from ._options import bool_option, int_option
from ._plan import FileRead, Planner
from ._plan import sections as sections_of

POSITION = "_POSITION"

# Reads the merged rows of sections of runs of files (each with the positions it skips)
# and writes them as one file at a level: returns its manifest record, None if no row.
MergeInto = Callable[[list[list[list[FileRead]]], list[DataFile], int], dict[str, Any] | None]


def needs_lookup(options: dict[str, str]) -> bool:
    """Whether a write must compact its level-0 files by lookup before readers see them:
    batch reads of deletion-vector and first-row tables skip level 0."""
    engine = options.get("merge-engine", "deduplicate").strip().lower()
    return bool_option(options, "deletion-vectors.enabled") or engine == "first-row"


@dataclass(frozen=True)
class Run:
    """A sorted run of a bucket: one level-0 file, or a level's files."""

    level: int
    files: tuple[DataFile, ...]

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)


def sorted_runs(files: Iterable[DataFile]) -> list[Run]:
    """A bucket's files as Paimon's ``Levels`` orders its runs: each level-0 file alone,
    newest (largest sequence number) first, then one run per level, lowest first."""
    files = list(files)
    zero = sorted((f for f in files if f.level == 0), key=lambda f: (-f.max_sequence, -f.min_sequence, f.name))
    levels = sorted({f.level for f in files if f.level > 0})
    return [Run(0, (f,)) for f in zero] + [Run(lv, tuple(f for f in files if f.level == lv)) for lv in levels]


def pick(runs: Sequence[Run], top: int, size_ratio: int) -> tuple[int, int]:
    """How many of ``runs`` a forced level-0 compaction takes, and its output level."""
    count = sum(1 for r in runs if r.level == 0)
    size = sum(r.size for r in runs[:count])
    for run in runs[count:]:
        if size * (100 + size_ratio) / 100 < run.size and run.level > 1:
            break
        size += run.size
        count += 1
    level = top if count == len(runs) else max(0, runs[count].level - 1)
    if level == 0:  # never output to level 0: take runs up to the next one above it
        for run in runs[count:]:
            count += 1
            if run.level != 0:
                level = run.level
                break
    return count, top if count == len(runs) else level


class LookupCompaction:
    """Compacts the level-0 files of a write's messages by lookup (module docstring),
    on top of the latest snapshot that ``planner`` plans; ``merge_into`` merges and
    writes (``Table``'s read of sections)."""

    def __init__(self, planner: Planner, snapshot: Snapshot | None, live: list[DataFile], merge_into: MergeInto):
        self.planner, self.snapshot, self.merge_into = planner, snapshot, merge_into
        self.schema = planner.schema
        options = self.schema.options
        self.top = top_level(self.schema)
        self.size_ratio = int_option(options, "compaction.size-ratio", 1)
        self.dv = bool_option(options, "deletion-vectors.enabled")
        self.wide = bool_option(options, "deletion-vectors.bitmap64")
        self.keys = list(self.schema.trimmed_keys)
        self.live: dict[tuple[bytes, int], list[DataFile]] = {}
        for f in live:
            self.live.setdefault((f.partition, f.bucket), []).append(f)

    def compacted(self, m: CommitMessage) -> CommitMessage:
        """``m`` with the compaction of its bucket's level-0 files (its own included)."""
        if not m.new_files:
            return m
        bucket = {"_PARTITION": m.partition, "_BUCKET": m.bucket, "_TOTAL_BUCKETS": m.total_buckets}
        new = [DataFile.of({**bucket, "_FILE": f}) for f in m.new_files]
        existing = self.live.get((m.partition, m.bucket), [])
        runs = sorted_runs([*existing, *new])
        count, level = pick(runs, self.top, self.size_ratio)
        picked = [f for run in runs[:count] for f in run.files]
        above = [f for run in runs[count:] for f in run.files]
        reads = {f.name: self.planner.file_read(f, m.partition, m.bucket) for f in [*picked, *above]}
        found = self._look_up(picked, above, reads)
        inputs = self._merge_inputs(picked, above, reads, found)
        sections = sections_of(inputs, self.planner.key)
        written = self.merge_into([[[reads[f.name] for f in run] for run in s] for s in sections], picked, level)
        seen = tuple(sorted(f.name for f in existing if f.level > 0))
        replaced = bucket_index_files(self.planner.root, self.snapshot, m.partition, m.bucket)
        update = DvUpdate(m.partition, m.bucket, None, replaced, seen, False)
        if self.dv:
            update = self._vectors(m.partition, m.bucket, existing, picked, found, update)
        return dataclasses.replace(
            m,
            compact_before=tuple(f.record for f in picked),
            compact_after=() if written is None else (written,),
            dv_index=update,
        )

    def _merge_inputs(
        self, picked: list[DataFile], above: list[DataFile], reads: dict[str, FileRead], found: dict[str, np.ndarray]
    ) -> list[DataFile]:
        """The files the merge reads, their ``reads`` narrowed to the rows it takes: with
        deletion vectors, the picked files and, of each file above, only its rows found;
        for first-row, the picked files without their rows whose key is found above."""
        if not self.dv:
            for name, positions in found.items():
                reads[name] = dataclasses.replace(reads[name], deleted=_union(reads[name].deleted, positions))
            return picked
        marked = [f for f in above if f.name in found]
        for f in marked:
            others = np.ones(f.rows, dtype=bool)
            others[found[f.name]] = False
            reads[f.name] = dataclasses.replace(reads[f.name], deleted=np.flatnonzero(others).astype(np.uint64))
        return [*picked, *marked]

    def _look_up(
        self, picked: list[DataFile], above: list[DataFile], reads: dict[str, FileRead]
    ) -> dict[str, np.ndarray]:
        """For deletion vectors: each file above and the positions of its live rows whose
        key a picked file holds. For first-row: each picked level-0 file and the positions
        of its rows whose key a file above holds."""
        if not above:
            return {}
        picked_keys = {f.name: self._keys(reads[f.name], f) for f in picked}
        wanted = _distinct(pa.concat_tables(picked_keys.values()), self.keys)
        low = min(self.planner.key(f.min_key) for f in picked)
        high = max(self.planner.key(f.max_key) for f in picked)
        found: dict[str, np.ndarray] = {}
        hits = []
        for f in above:
            if self.planner.key(f.max_key) < low or self.planner.key(f.min_key) > high:
                continue
            match = self._keys(reads[f.name], f).join(wanted, self.keys, join_type="inner")
            if match.num_rows:
                found[f.name] = np.sort(match.column(POSITION).to_numpy())
                hits.append(match.select(self.keys))
        if self.dv or not hits:
            return found
        # first-row: the picked rows whose key is already above are left out
        taken = _distinct(pa.concat_tables(hits), self.keys)
        out = {}
        for f in picked:
            match = picked_keys[f.name].join(taken, self.keys, join_type="inner")
            if match.num_rows:
                out[f.name] = np.sort(match.column(POSITION).to_numpy())
        return out

    def _keys(self, read: FileRead, f: DataFile) -> pa.Table:
        """The key columns of a file's live rows, and each row's position."""
        names = [read.columns[self.planner.read.index(k)] for k in self.keys]
        store = self.planner.root.store
        try:
            with store.open_input(read.path) as source:
                table = pq.ParquetFile(source).read(columns=names)
        except FileNotFoundError as e:
            raise CorruptTableError(f"data file {store.display(read.path)} is missing") from e
        # In the table's types (a file of an older schema may differ in nullability), for joins.
        columns = [table.column(i).cast(self.schema.field(k).type) for i, k in enumerate(self.keys)]
        table = pa.table([*columns, pa.array(np.arange(table.num_rows))], names=[*self.keys, POSITION])
        if read.deleted is not None and len(read.deleted):
            alive = np.ones(table.num_rows, dtype=bool)
            alive[read.deleted.astype(np.int64)] = False
            table = table.filter(pa.array(alive))
        return table

    def _vectors(
        self,
        partition: bytes,
        bucket: int,
        existing: list[DataFile],
        picked: list[DataFile],
        found: dict[str, np.ndarray],
        update: DvUpdate,
    ) -> DvUpdate:
        """The bucket's deletion vectors once the rows found are marked and the picked
        files are gone: a new index file if they changed."""
        planner = self.planner
        live = {f.name for f in existing} - {f.name for f in picked}
        old = {name: dv for (p, b, name), dv in planner.deletion_vectors.items() if (p, b) == (partition, bucket)}
        vectors = {name: deleted_positions(dv) for name, dv in old.items() if name in live}
        changed = bool(found) or len(vectors) != len(old)
        for name, positions in found.items():
            vectors[name] = _union(vectors.get(name), positions)
        if not changed:
            return update
        entry = None
        if vectors:
            path_of = functools.partial(index_file, planner.root, self.schema)
            entry = write_index(path_of, partition, bucket, vectors, self.wide)
        return dataclasses.replace(update, entry=entry, rewrite=True)


def _union(a: np.ndarray | None, b: np.ndarray) -> np.ndarray:
    b = b.astype(np.uint64)
    return b if a is None else np.union1d(a.astype(np.uint64), b)


def _distinct(table: pa.Table, keys: list[str]) -> pa.Table:
    return table.group_by(keys).aggregate([]).select(keys)
