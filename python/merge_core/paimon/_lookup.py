"""Lookup compaction: a write's level-0 files compacted at once into a level above, as
Paimon's writers do for tables whose batch reads skip level 0 (deletion vectors,
first-row), so that the write is visible the moment it commits, and for tables whose
changelog is made by lookup (``changelog-producer = lookup``).

For each (partition, bucket) a write touched:

1. **Pick** (Paimon's ``ForceUpLevel0Compaction``, ``_universal.pick``): the sorted
   runs are the level-0 files, newest first, then one run per non-empty level. The
   universal pick comes first (with enough runs: size amplification, size ratio, run
   count; it always takes every level-0 run, as its output is never level 0); when it
   picks nothing, every level-0 run is taken, then the runs after it while their size
   is within ``compaction.size-ratio`` percent of what is taken (level 1 always). The
   output level is the next run's level less one (the top level if every run is
   taken); never 0 (then the next run above 0 is taken too and its level is the
   output's). The top level is the bucket's (``_compact.top_level``): the table's, or
   its highest file's if that is higher.
2. **Look up** each key of the picked files in the files of the levels above the
   output (the rows no deletion vector hides). Every reader's invariant is kept: a key
   is at most once among the live rows of levels 1 and up.
3. **Merge**: with deletion vectors, the picked files and the rows found merge as one
   read (the table's merge function, found rows being older), deletes dropped, into one
   file at the output level; each row found is marked in its file's deletion vector
   (the bucket's index file is written anew, Paimon's ``BucketedDvMaintainer``). For
   first-row, whose found rows must stay as they are, the picked rows with a key found
   above are left out instead. A lookup-changelog table without either has no vector
   to hide a row found: if any is found, every run is taken (a full compaction of the
   bucket, to the top level), so that the key is once above level 0 (see below).
4. **Changelog** (``changelog-producer = lookup``, Paimon's
   ``LookupChangelogMergeFunctionWrapper``): for each key of the picked level-0 files,
   its row above level 0 before (in the picked runs, else the row found above; of
   several, the lowest level's, which Paimon's ``LookupMergeFunction`` takes as the
   key's merged value) against its merged row after: ``_changelog.lookup_changes``.
   The changelog file is at the output level, in the compaction's part of the commit.

Files above level 0 are met by write after write: a table's ``FileRows`` keeps their
rows decoded (``_file_rows``), so that the keys are looked up and the rows found are
taken without decoding the files again; the compaction's own output is kept as it is
written. Which files are live, and which of their rows deletion vectors hide, comes from
the latest snapshot each time.

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
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import CorruptTableError
from ._changelog import LOOKUP, as_schema, first_of_each_key, lookup_changes, merged_rows, producer
from ._commit import CommitMessage
from ._compact import last_full_compaction, pick_rules, top_level
from ._dv import DvUpdate, bucket_index_files, deleted_positions, write_index
from ._file_rows import FileRows
from ._hash_index import index_file
from ._meta import DataFile, Snapshot
from ._options import bool_option
from ._plan import FileRead, Planner
from ._plan import sections as sections_of
from ._schema import TableSchema
from ._universal import CompactUnit, SortedRun
from ._universal import pick as universal_pick

POSITION = "_POSITION"
FILE = "_FILE_INDEX"

# Reads the merged rows of sections of runs of files (each with the positions it skips)
# and writes them as one run at a level: returns its files' manifest records, none if no
# row; the merged rows are also kept in the list given, if one is, and each file's rows
# as stored in the dict, by file name.
MergeInto = Callable[
    [
        list[list[list[FileRead]]],
        list[DataFile],
        int,
        list[pa.RecordBatch] | None,
        dict[str, list[pa.RecordBatch]] | None,
    ],
    tuple[dict[str, Any], ...],
]


@dataclass(frozen=True)
class ChangelogIo:
    """What a lookup changelog needs of the table: ``stored`` reads files' rows as they
    hold them (the table's columns), ``write`` writes changelog rows as a file of a
    (partition, bucket) at a level, numbered from a sequence number (its records), and
    ``remove`` removes a file written for a (partition, bucket)."""

    stored: Callable[[list[FileRead], int], pa.Table]
    write: Callable[[pa.Table, bytes, int, int, int], tuple[dict[str, Any], ...]]
    remove: Callable[[bytes, int, dict[str, Any]], None]


def needs_lookup(options: dict[str, str]) -> bool:
    """Whether a write must compact its level-0 files by lookup before it commits: batch
    reads of deletion-vector and first-row tables skip level 0, and the lookup producer's
    changelog is made by that compaction."""
    engine = options.get("merge-engine", "deduplicate").strip().lower()
    lookup = bool_option(options, "deletion-vectors.enabled") or engine == "first-row"
    return lookup or producer(options) == LOOKUP


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


def pick(schema: TableSchema, runs: Sequence[Run]) -> CompactUnit | None:
    """What Paimon's ``ForceUpLevel0Compaction`` picks from a bucket's ``runs``: the
    universal pick, else every level-0 run and the next ones by size ratio; in a tree of
    the levels its files need (``top_level``). ``None``: no level-0 run to compact."""
    files = [f for run in runs for f in run.files]
    top = top_level(schema, (f.level for f in files))
    created = ((f.level, (f.record or {}).get("_CREATION_TIME")) for f in files)
    rules = pick_rules(schema, last_full_compaction(schema, created), lookup=True)
    return universal_pick(top + 1, [SortedRun(run.level, run.size) for run in runs], rules)


class LookupCompaction:
    """Compacts the level-0 files of a write's messages by lookup (module docstring),
    on top of the latest snapshot that ``planner`` plans; ``merge_into`` merges and
    writes (``Table``'s read of sections)."""

    def __init__(
        self,
        planner: Planner,
        snapshot: Snapshot | None,
        live: list[DataFile],
        merge_into: MergeInto,
        changelog: ChangelogIo | None = None,
        held: FileRows | None = None,
        upgrades: bool = True,
    ):
        """``changelog``: given when the compaction writes the lookup producer's changelog
        (not for an overwrite, whose changelog Paimon's writer does not make); ``held``:
        the table's decoded files above level 0, kept from one write to the next;
        ``upgrades``: whether a level-0 file may move to the top level unchanged
        (``_upgrade``; not for an overwrite, whose output replaces its level-0 files)."""
        self.planner, self.snapshot, self.merge_into = planner, snapshot, merge_into
        self.held, self.upgrades = held, upgrades
        self.schema = planner.schema
        options = self.schema.options
        self.dv = bool_option(options, "deletion-vectors.enabled")
        self.first_row = options.get("merge-engine", "deduplicate").strip().lower() == "first-row"
        self.changelog = changelog if producer(options) == LOOKUP else None
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
        unit = pick(self.schema, runs)
        if unit is None:  # no level-0 file (the write's are level 0: not reached)
            return m
        count, level, top = unit.runs, unit.level, top_level(self.schema, (run.level for run in runs))
        picked = [f for run in runs[:count] for f in run.files]
        above = [f for run in runs[count:] for f in run.files]
        reads = {f.name: self.planner.file_read(f, m.partition, m.bucket) for f in [*picked, *above]}
        key_tables: dict[str, pa.Table] = {}

        def keys_of(f: DataFile) -> pa.Table:  # read once, before the merge narrows ``reads``
            if f.name not in key_tables:
                key_tables[f.name] = self._keys(reads[f.name], f)
            return key_tables[f.name]

        found, hits = self._look_up(picked, above, keys_of)
        if self._upgrade(picked, level, top):
            return self._upgraded(m, existing, picked[0], level, found)
        if found and not self.dv and not self.first_row:  # nothing could hide the rows found: take every run
            level, picked, above, found, hits = top, [f for run in runs for f in run.files], [], {}, []
        before = self._rows_before(picked, above, reads, found)
        # The keys of the level-0 files; None: every key merged is new (no file above level
        # 0 taken, no row found above). A key found above may be deleted by the merge, so
        # then the keys come from the level-0 files: the merged rows would lack its -D.
        zero = [f for f in picked if f.level == 0]
        touched = None
        if self.changelog and (len(zero) < len(picked) or found):
            touched = _distinct(pa.concat_tables([keys_of(f) for f in zero]), self.keys)
        if self.first_row:
            found = self._shadowed(picked, keys_of, hits)
        inputs = self._merge_inputs(picked, above, reads, found)
        sections = sections_of(inputs, self.planner.key)
        merged: list[pa.RecordBatch] | None = [] if self.changelog else None
        runs_read = [[[reads[f.name] for f in run] for run in s] for s in sections]
        stored: dict[str, list[pa.RecordBatch]] | None = {} if self.held is not None else None
        written = self.merge_into(runs_read, picked, level, merged, stored)
        for record in written if stored is not None else ():
            self._hold(DataFile.of({**bucket, "_FILE": record}), stored.get(record["_FILE_NAME"], []))
        changelog: tuple[dict[str, Any], ...] = ()
        if self.changelog is not None and merged is not None:
            changelog = self._changelog(self.changelog, m, picked, touched, before, merged, level, written)
        update = self._unchanged_vectors(m, existing)
        if self.dv:
            update = self._vectors(m.partition, m.bucket, existing, picked, found, update)
        return dataclasses.replace(
            m,
            compact_before=tuple(f.record for f in picked),
            compact_after=written,
            dv_index=update,
            compact_changelog=changelog,
        )

    def _upgrade(self, picked: list[DataFile], level: int, top: int) -> bool:
        """Whether the compaction moves its one level-0 file to ``level`` unchanged, as
        Paimon's ``LookupMergeTreeCompactRewriter`` upgrades a file (its upgrade strategy
        ``CHANGELOG_NO_REWRITE``) on a deletion-vector table: the file is the compaction's
        only run, has no delete rows (a rewrite would drop them: so would Paimon's), and
        either goes to the top level or is a deduplicate table's without a sequence field
        (its rows are the keys' newest whatever is above: the rows found above are only
        marked deleted). Rewritten instead, as Paimon would or to keep the code simple:
        when a changelog is made (Paimon upgrades with a changelog then, merge-core rewrites
        the file: the same rows), or record expiry, per-level formats or a forced rewrite
        are asked of the compaction."""
        if not (self.upgrades and self.dv and self.changelog is None):
            return False
        if len(picked) != 1 or picked[0].level != 0 or picked[0].record is None:
            return False
        options = self.schema.options
        rewrites = ("record-level.expire-time", "file.format.per.level", "pk-vector.index.columns")
        if any(options.get(k, "").strip() for k in rewrites):
            return False
        if bool_option(options, "compaction.force-rewrite-all-files"):
            return False
        if picked[0].record.get("_DELETE_ROW_COUNT") != 0:  # null: unknown, so rewritten
            return False
        engine = options.get("merge-engine", "deduplicate").strip().lower()
        return level == top or (engine == "deduplicate" and not options.get("sequence.field", "").strip())

    def _upgraded(
        self, m: CommitMessage, existing: list[DataFile], f: DataFile, level: int, found: dict[str, np.ndarray]
    ) -> CommitMessage:
        """``m`` with its level-0 file ``f`` moved to ``level`` as it is (same name and
        rows): the compaction deletes its level-0 entry and adds it at ``level``; the rows
        ``found`` above it are marked in the bucket's deletion vectors."""
        assert f.record is not None
        update = self._unchanged_vectors(m, existing)
        return dataclasses.replace(
            m,
            compact_before=(f.record,),
            compact_after=({**f.record, "_LEVEL": level},),
            dv_index=self._vectors(m.partition, m.bucket, existing, [f], found, update),
        )

    def _unchanged_vectors(self, m: CommitMessage, existing: list[DataFile]) -> DvUpdate:
        """The bucket's deletion-vector update before any row is marked: its index files
        as the snapshot holds them, and the files above level 0 it saw."""
        seen = tuple(sorted(f.name for f in existing if f.level > 0))
        replaced = bucket_index_files(self.planner.root, self.snapshot, m.partition, m.bucket)
        return DvUpdate(m.partition, m.bucket, None, replaced, seen, False)

    def _rows_before(
        self, picked: list[DataFile], above: list[DataFile], reads: dict[str, FileRead], found: dict[str, np.ndarray]
    ) -> list[tuple[int, FileRead]]:
        """The rows above level 0 that a changelog compares the merge with, as (level,
        read) in level order: the picked files above level 0 and the rows found above."""
        if self.changelog is None:
            return []
        out = [(f.level, reads[f.name]) for f in picked if f.level > 0]
        out += [(f.level, _only(reads[f.name], found[f.name])) for f in above if f.name in found]
        return sorted(out, key=lambda pair: pair[0])

    def _changelog(
        self,
        io: ChangelogIo,
        m: CommitMessage,
        picked: list[DataFile],
        touched: pa.Table | None,
        before: list[tuple[int, FileRead]],
        merged: list[pa.RecordBatch],
        level: int,
        written: tuple[dict[str, Any], ...],
    ) -> tuple[dict[str, Any], ...]:
        """The changelog file of the compaction (module docstring, step 4) of the keys of
        its level-0 files (``touched``; None: every key it merged), if it changed one. If
        that fails, the compaction's files (``written``) are removed."""
        try:
            schema = self.schema.arrow
            stored = [as_schema(io.stored([read], m.bucket).select(schema.names), schema) for _, read in before]
            old = first_of_each_key(stored, self.keys, schema)
            new = merged_rows(merged, schema)
            rows = lookup_changes(old, new, touched, self.keys, self.schema.options, self.first_row)
            if rows.num_rows == 0:
                return ()
            first = min(f.min_sequence for f in picked)
            return io.write(rows, m.partition, m.bucket, level, first)
        except BaseException:
            for f in written:
                io.remove(m.partition, m.bucket, f)
            raise

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
            held = self._held(f, reads[f.name])
            if held is not None:  # the rows found, without decoding the file again
                reads[f.name] = _in_memory(reads[f.name], held.take(pa.array(found[f.name])))
                continue
            others = np.ones(f.rows, dtype=bool)
            others[found[f.name]] = False
            reads[f.name] = dataclasses.replace(reads[f.name], deleted=np.flatnonzero(others).astype(np.uint64))
        return [*picked, *marked]

    def _held(self, f: DataFile, read: FileRead) -> pa.Table | None:
        """The rows of a file above level 0 as stored, kept decoded by ``held``; ``None``:
        a level-0 file (met once), or a file the cache does not hold (not on the local disk)."""
        if self.held is None or f.level == 0:
            return None
        return self.held.rows(self.planner.root.store, read.path)

    def _hold(self, f: DataFile, stored: list[pa.RecordBatch]) -> None:
        """Keeps the rows of the file the compaction wrote (``f``), for the next write's lookups."""
        if self.held is None or f.level == 0 or not stored:
            return
        read = self.planner.file_read(f, f.partition, f.bucket)
        self.held.put(self.planner.root.store, read.path, pa.Table.from_batches(stored))

    def _look_up(
        self, picked: list[DataFile], above: list[DataFile], keys_of: Callable[[DataFile], pa.Table]
    ) -> tuple[dict[str, np.ndarray], list[pa.Table]]:
        """Each file above and the positions of its live rows whose key a picked file
        holds, and those keys (a table per file); ``keys_of``: a file's live keys."""
        if not above:
            return {}, []
        wanted = pa.concat_tables([keys_of(f) for f in picked])
        low = min(self.planner.key(f.min_key) for f in picked)
        high = max(self.planner.key(f.max_key) for f in picked)
        met = [f for f in above if not (self.planner.key(f.max_key) < low or self.planner.key(f.min_key) > high)]
        if not met:
            return {}, []
        tables = [keys_of(f) for f in met]  # one probe of every file's keys: the wanted keys hashed once
        files = pa.concat_tables(
            [t.append_column(FILE, pa.array(np.full(t.num_rows, i, np.int32))) for i, t in enumerate(tables)]
        )
        match = _matching(files, wanted, self.keys)
        which = match.column(FILE).to_numpy()
        found: dict[str, np.ndarray] = {}
        hits = []
        for i in np.unique(which):  # the matches of each file, in file order
            mine = match.filter(pa.array(which == i))
            found[met[i].name] = mine.column(POSITION).to_numpy()
            hits.append(mine.select(self.keys))
        return found, hits

    def _shadowed(
        self, picked: list[DataFile], keys_of: Callable[[DataFile], pa.Table], hits: list[pa.Table]
    ) -> dict[str, np.ndarray]:
        """For first-row: each picked file and the positions of its rows whose key is
        already above (``hits``), which the compaction leaves out."""
        if not hits:
            return {}
        taken = pa.concat_tables(hits)
        out = {}
        for f in picked:
            match = _matching(keys_of(f), taken, self.keys)
            if match.num_rows:
                out[f.name] = match.column(POSITION).to_numpy()
        return out

    def _keys(self, read: FileRead, f: DataFile) -> pa.Table:
        """The key columns of a file's live rows, and each row's position."""
        names = [read.columns[self.planner.read.index(k)] for k in self.keys]
        store = self.planner.root.store
        held = self._held(f, read)
        if held is not None:
            table = held.select(names)
        else:
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
    """The ascending positions in ``a`` or ``b`` (each ascending), each once."""
    b = b.astype(np.uint64)
    if a is None:
        return b
    both = np.concatenate((a.astype(np.uint64), b))
    both.sort()  # (of two sorted runs: cheaper than np.union1d's hashing)
    return both[np.concatenate(([True], both[1:] != both[:-1]))]


def _matching(rows: pa.Table, wanted: pa.Table, keys: list[str]) -> pa.Table:
    """The rows of ``rows`` (files' keys and positions, in file order, the files numbered
    in ``FILE`` if several) whose key is among ``wanted``'s, in that order (so each
    file's positions ascend)."""
    if len(keys) == 1:  # a hash set of the wanted keys, probed by each row: no join
        (key,) = keys
        return rows.filter(pc.is_in(rows.column(key), value_set=wanted.column(key).combine_chunks()))
    match = rows.join(_distinct(wanted, keys), keys, join_type="inner")
    order = [(c, "ascending") for c in (FILE, POSITION) if c in match.column_names]
    return match.take(pc.sort_indices(match, sort_keys=order))


def _distinct(table: pa.Table, keys: list[str]) -> pa.Table:
    return table.group_by(keys).aggregate([]).select(keys)


def _in_memory(read: FileRead, rows: pa.Table) -> FileRead:
    """``read`` as ``rows`` alone (rows of its file, as stored), held as a Parquet file in
    memory: only the columns the read takes, written plainly (no compression, dictionary
    or statistics), as it is read once."""
    rows = rows.select([c for c in dict.fromkeys(read.columns) if c is not None])
    sink = pa.BufferOutputStream()
    pq.write_table(rows, sink, compression="none", use_dictionary=False, write_statistics=False)
    return dataclasses.replace(read, deleted=None, rows=rows.num_rows, content=sink.getvalue().to_pybytes())


def _only(read: FileRead, positions: np.ndarray) -> FileRead:
    """``read`` narrowed to the rows at ``positions``."""
    others = np.ones(read.rows, dtype=bool)
    others[positions.astype(np.int64)] = False
    return dataclasses.replace(read, deleted=np.flatnonzero(others).astype(np.uint64))
