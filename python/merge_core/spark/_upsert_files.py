"""How :func:`merge_core.spark.upsert_files` shares its Parquet inputs among tasks so that
each input byte is read once.

The driver reads every input's footer once and makes a :class:`Plan`, which the tasks
receive as it is (with the footers, so no task reads one again):

1. **Destinations.** With one key column of an integer or string type, files sorted by it
   and row groups that all have min/max statistics and no null keys, each task owns a
   half-open *key range*; the ranges are cut at row-group minimums so that they hold
   similar byte counts. Otherwise each task owns a *hash bucket* of the keys (a hash
   computed in Rust).
2. **Who reads a row group.** A row group whose statistics fall inside one range is
   *direct*: that range's task reads it. Every other row group (one that spans a cut, and
   all of them in hash mode) is *exchanged*: a first stage reads it once and writes each
   row into an exchange file of its destination, which that destination's task reads.

Every version of a key has the same key, so it reaches the same task whichever way it
comes. Sorted inputs with row groups much smaller than a range are mostly direct; unsorted
inputs have row groups that span every cut, so they go through the exchange, which reads
each file once as well. Statistics are checked, not trusted: a direct row group holding a
key outside its range is an error.

Bytes read are counted at the file object (:class:`CountingFile`): what the tasks really
read from the inputs, against ``input_bytes``, the compressed size of the row groups'
column chunks (what a full read of the inputs reads, footers aside).
"""

from __future__ import annotations

import bisect
import io
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import InvalidInputError
from ..fs import Location

#: Rows per batch read from the inputs.
BATCH_ROWS = 65536


@dataclass(frozen=True)
class Group:
    """One row group of one input: its version (the input's index), its index in the
    file, the compressed bytes of the columns read, and its key statistics."""

    version: int
    index: int
    bytes: int
    low: Any = None
    high: Any = None


@dataclass(frozen=True)
class Plan:
    """What every task of one ``upsert_files`` does (made once, on the driver)."""

    inputs: list[Location]
    footers: list[pq.FileMetaData]
    columns: list[str]
    keys: list[str]
    schema: pa.Schema  # the columns, then the version column
    null_strings: list[str]
    destinations: int
    cuts: list[Any] | None  # the ranges' lower bounds after the first; None: hash buckets
    direct: list[list[Group]]  # per destination
    exchanged: list[list[Group]]  # per first-stage task

    @property
    def input_bytes(self) -> int:
        return sum(g.bytes for groups in [*self.direct, *self.exchanged] for g in groups)

    def destination_of(self, key: Any) -> int:
        """The range holding ``key`` (range mode only)."""
        return bisect.bisect_right(self.cuts, key)


def plan(
    inputs: list[Location],
    columns: list[str],
    keys: list[str],
    schema: pa.Schema,
    null_strings: list[str],
    destinations: int,
    footers: list[pq.FileMetaData] | None = None,
) -> Plan:
    """Shares the inputs' row groups among ``destinations``; ``footers``: the inputs'
    footers, when the caller has read them already (else they are read here)."""
    if footers is None:
        footers = []
        for source in inputs:
            with source.store.open_input(source.path) as file:
                footers.append(pq.read_metadata(file))
    groups = [g for version, footer in enumerate(footers) for g in _groups(version, footer, keys)]
    cuts = _cuts(groups, destinations) if _rangeable(schema, keys, groups) else None
    direct: list[list[Group]] = [[] for _ in range(destinations)]
    exchanged = []
    for group in groups:
        if destinations == 1:  # one task owns every key: nothing to exchange
            direct[0].append(group)
        elif cuts is not None and bisect.bisect_right(cuts, group.low) == bisect.bisect_right(cuts, group.high):
            direct[bisect.bisect_right(cuts, group.low)].append(group)
        else:
            exchanged.append(group)
    return Plan(
        inputs,
        footers,
        columns,
        keys,
        schema,
        null_strings,
        destinations,
        cuts,
        direct,
        _balanced(exchanged, destinations),
    )


def _groups(version: int, footer: pq.FileMetaData, keys: list[str]) -> Iterator[Group]:
    """The file's row groups that hold rows, with the key's statistics when usable. Every
    column is read (versions have the same columns), so a group's bytes are all of its
    column chunks'."""
    paths = [footer.schema.column(i).path for i in range(footer.num_columns)]
    key = paths.index(keys[0]) if keys[0] in paths else None  # a nested column has no statistics
    for index in range(footer.num_row_groups):
        row_group = footer.row_group(index)
        if row_group.num_rows == 0:
            continue
        size = sum(row_group.column(i).total_compressed_size for i in range(footer.num_columns))
        stats = None if key is None else row_group.column(key).statistics
        usable = stats is not None and stats.has_min_max and stats.has_null_count and stats.null_count == 0
        yield Group(version, index, size, stats.min, stats.max) if usable else Group(version, index, size)


def _rangeable(schema: pa.Schema, keys: list[str], groups: list[Group]) -> bool:
    """Ranges need one key column, of a type whose Parquet statistics order as Arrow
    compares it (integers; strings and binaries, bytewise), statistics everywhere, and
    files sorted by key (each row group's keys at or above the previous one's): in an
    unsorted file every row group spans the key space, so the minimums would place no cut
    well and every row would be exchanged anyway, by a costlier test than a hash."""
    if len(keys) != 1:
        return False
    kind = schema.field(keys[0]).type
    types = pa.types
    ordered = types.is_integer(kind) or types.is_string(kind) or types.is_large_string(kind)
    ordered = ordered or types.is_binary(kind) or types.is_large_binary(kind)
    if not ordered or any(g.low is None for g in groups):
        return False
    pairs = zip(groups, groups[1:], strict=False)  # in file order
    return all(a.high <= b.low for a, b in pairs if a.version == b.version)


def _cuts(groups: list[Group], destinations: int) -> list[Any]:
    """Up to ``destinations - 1`` increasing cuts, at row-group minimums, so that the ranges
    between them hold similar byte counts. The bytes are those of the files split in
    several row groups: a file in one row group spans every cut, so it says nothing about
    where the keys lie (and is exchanged anyway)."""
    versions = [g.version for g in groups]
    split = [g for g in groups if versions.count(g.version) > 1] or groups
    total = sum(g.bytes for g in split)
    cuts: list[Any] = []
    done = 0
    for group in sorted(split, key=lambda g: g.low):
        # cut before this group when its start is nearer the next quantile than its end
        due = done > 0 and done + group.bytes / 2 >= total * (len(cuts) + 1) / destinations
        if len(cuts) < destinations - 1 and due and (not cuts or group.low > cuts[-1]):
            cuts.append(group.low)
        done += group.bytes
    return cuts


def _balanced(groups: list[Group], tasks: int) -> list[list[Group]]:
    """``groups`` shared among at most ``tasks`` lists of similar byte counts (largest
    first, each to the lightest list); each list in file order."""
    shares: list[list[Group]] = [[] for _ in range(min(tasks, len(groups)))]
    loads = [0] * len(shares)
    for group in sorted(groups, key=lambda g: -g.bytes):
        lightest = loads.index(min(loads))
        shares[lightest].append(group)
        loads[lightest] += group.bytes
    return [sorted(share, key=lambda g: (g.version, g.index)) for share in shares]


class CountingFile(io.RawIOBase):
    """A file of any store that counts the bytes read from it (what Arrow's Parquet
    reader asked for)."""

    def __init__(self, location: Location) -> None:
        self._file = location.store.open_input(location.path)
        self.bytes_read = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._file.read(len(buffer))
        buffer[: len(data)] = data
        self.bytes_read += len(data)
        return len(data)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self._file.seek(offset, whence)

    def tell(self) -> int:
        return self._file.tell()

    def close(self) -> None:
        self._file.close()
        super().close()


class Reader:
    """Reads row groups of a plan's inputs as tagged batches (the columns, 'null' strings
    of later versions as nulls, the version), counting the bytes read."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.bytes_read = 0

    def groups(self, groups: list[Group]) -> Iterator[tuple[Group, pa.RecordBatch]]:
        """Each group's batches, one file open at a time (``groups`` in file order)."""
        for version in sorted({g.version for g in groups}):
            mine = [g for g in groups if g.version == version]
            with CountingFile(self.plan.inputs[version]) as file:
                parquet = pq.ParquetFile(file, metadata=self.plan.footers[version])
                try:
                    for group in mine:
                        for batch in parquet.iter_batches(BATCH_ROWS, [group.index], self.plan.columns):
                            yield group, self.tagged(batch, version)
                finally:
                    self.bytes_read += file.bytes_read

    def tagged(self, batch: pa.RecordBatch, version: int) -> pa.RecordBatch:
        from ..inputs import null_strings_as_null

        batch = batch.select(self.plan.columns)
        if version > 0 and self.plan.null_strings:
            batch = null_strings_as_null(batch, self.plan.null_strings)
        tag = pa.array(np.full(batch.num_rows, version, np.int32))
        return pa.RecordBatch.from_arrays([*batch.columns, tag], schema=self.plan.schema)


#: Exchange files are Arrow IPC, zstd at level 1: written and read once, so encoding
#: must be cheap (Parquet's cost 7-10% of the whole upsert on the contest data), and
#: small on a shared filesystem (about Parquet's size; LZ4 frames made them 1.8x larger).
EXCHANGE_OPTIONS = pa.ipc.IpcWriteOptions(compression=pa.Codec("zstd", compression_level=1))


def exchange(plan: Plan, task: int, folder: Location) -> dict[str, int]:
    """The first stage's task ``task``: reads its row groups once and writes each row into
    ``folder/<destination>/``. Files are moved into place when all are written, so a
    failed attempt leaves only ``.tmp`` files, which the second stage does not read (and
    a retry replaces what an attempt that failed while moving left)."""
    reader, writers = Reader(plan), {}
    attempt = uuid.uuid4().hex
    try:
        for _, batch in reader.groups(plan.exchanged[task]):
            for destination, rows in _split(batch, _destinations(plan, batch)):
                if destination not in writers:
                    path = folder / f"{destination:05d}" / f"{task:05d}-{attempt}.tmp"
                    sink = path.store.open_output(path.path)
                    writers[destination] = (path, sink, pa.ipc.new_file(sink, plan.schema, options=EXCHANGE_OPTIONS))
                writers[destination][2].write_batch(rows)
    finally:
        for _, sink, writer in writers.values():
            writer.close()
            sink.close()
    written = 0
    for path, _, _ in writers.values():
        final = path.path[: -len(f"-{attempt}.tmp")] + ".arrow"
        path.store.move(path.path, final)
        written += path.store.info(final).size
    return {"bytes_read": reader.bytes_read, "exchanged_bytes": written}


def destination_rows(plan: Plan, destination: int, folder: Location, reader: Reader) -> Iterator[pa.RecordBatch]:
    """The second stage's input for ``destination``: its direct row groups (each checked
    against its range) and the rows the first stage wrote for it."""
    for group, batch in reader.groups(plan.direct[destination]):
        if plan.cuts is not None:  # (with hash buckets, only a lone bucket has direct row groups)
            _check_range(plan, destination, group, batch)
        yield batch
    mine = folder / f"{destination:05d}"
    for name in mine.names():
        if name.endswith(".arrow"):
            with mine.store.open_input((mine / name).path) as file, pa.ipc.open_file(file) as written:
                for i in range(written.num_record_batches):
                    yield written.get_batch(i)


def _destinations(plan: Plan, batch: pa.RecordBatch) -> np.ndarray:
    """Each row's destination: its hash bucket, or the number of cuts at or below its key."""
    if plan.cuts is None:
        from .. import _native

        return _native.bucket_ids(batch, plan.keys, plan.destinations).to_numpy().astype(np.int64)
    key = batch.column(plan.keys[0])
    if key.null_count:
        raise InvalidInputError(f"key column '{plan.keys[0]}' holds nulls its Parquet statistics do not count")
    found = np.zeros(batch.num_rows, np.int64)
    for cut in plan.cuts:
        found += pc.greater_equal(key, pa.scalar(cut, key.type)).to_numpy(zero_copy_only=False)
    return found


def _split(batch: pa.RecordBatch, destinations: np.ndarray) -> Iterator[tuple[int, pa.RecordBatch]]:
    """The batch's rows grouped by destination (one take, then slices), in arrival order."""
    order = np.argsort(destinations, kind="stable")
    ordered, rows = destinations[order], batch.take(pa.array(order))
    values, starts = np.unique(ordered, return_index=True)
    ends = [*starts[1:], len(ordered)]
    for value, start, end in zip(values, starts, ends, strict=True):
        yield int(value), rows.slice(start, end - start)


def _check_range(plan: Plan, destination: int, group: Group, batch: pa.RecordBatch) -> None:
    """Fails unless the batch's keys lie in the destination's range, as its row group's
    statistics said: a wrong statistic would otherwise split a key between two tasks."""
    key = batch.column(plan.keys[0])
    if batch.num_rows == 0:
        return
    found = pc.min_max(key)
    low, high = found["min"].as_py(), found["max"].as_py()
    if key.null_count or plan.destination_of(low) != destination or plan.destination_of(high) != destination:
        raise InvalidInputError(
            f"{plan.inputs[group.version]}: row group {group.index} holds keys from {low!r} to {high!r} (or nulls),"
            f" outside its statistics ({group.low!r} to {group.high!r})"
        )
