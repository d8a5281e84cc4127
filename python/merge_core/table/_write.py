"""A table write: rows go to (partition, bucket) groups, are sorted and folded by the
spillable sort buffer, and each group becomes one new run.

The sort key is ``(_group, key...)`` where ``_group = partition number * buckets + bucket``,
so the sorted output holds each group's rows contiguously and a run is cut wherever
``_group`` changes. Folding is the table's merge function as far as is sound for a run
that lies above older runs (deletes are kept; see ``MergeFunction::for_partial_run``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from .. import _native
from .._inputs import as_stream_source, batches_of
from .._sort import _native_options, _reraise
from ..errors import InvalidInputError
from ..paimon._write import _Partitions, group_boundaries, kind_codes
from ._files import RunWriter
from ._format import KIND, DataFile, TableMeta

GROUP = "_group"
SORT_BATCH_ROWS = 64 * 1024


class PartitionNumbers(_Partitions):
    """Numbers the partitions met in one write and remembers their values as strings."""

    def __init__(self, meta: TableMeta):
        super().__init__(meta.schema, list(meta.partition_by))

    def values(self, number: int) -> tuple[str | None, ...]:
        """The partition values (cast to string) of partition ``number``."""
        if not self.columns:
            return ()
        codes = self.codes(number)
        return tuple(d.values[c].cast(pa.string()).as_py() for d, c in zip(self.per_column, codes, strict=True))


def conform(batch: pa.RecordBatch, meta: TableMeta, row_kind: str | None) -> pa.RecordBatch:
    """The table's columns of ``batch`` (any order) cast to the table's types, plus
    ``_kind`` when the data has row kinds."""
    names = set(batch.schema.names)
    missing = [n for n in meta.schema.names if n not in names]
    extra = sorted(names - set(meta.schema.names) - {row_kind})
    if missing or extra:
        raise InvalidInputError(f"the data does not match the table: missing columns {missing}, unknown {extra}")
    if row_kind is not None and row_kind not in names:
        raise InvalidInputError(f"no row kind column '{row_kind}' in the data")
    try:
        data = batch.select(meta.schema.names).cast(meta.schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise InvalidInputError(f"the data does not fit the table's schema: {e}") from e
    if row_kind is None:
        return data
    return data.append_column(pa.field(KIND, pa.int8(), nullable=False), kind_codes(batch.column(row_kind)))


def write_runs(
    root: Path,
    meta: TableMeta,
    data: Any,
    row_kind: str | None,
    memory_limit: int | str,
    spill_dir: str | os.PathLike[str] | None,
) -> list[DataFile]:
    """Writes ``data`` as new level-0 runs (not committed); on error nothing is left."""
    source = as_stream_source(data)
    batches: Iterable[pa.RecordBatch] = [] if source is None else batches_of(source)[1]
    partitions = PartitionNumbers(meta)
    # Without row kinds every row is an add, and `_kind` is left out of the sort so that
    # no merge function folds it as a value; the run writer adds it.
    sort_schema = meta.schema
    if row_kind:
        sort_schema = sort_schema.append(pa.field(KIND, pa.int8(), nullable=False))
    sort_schema = sort_schema.append(pa.field(GROUP, pa.int64()))
    options = _native_options(
        [GROUP, *meta.key],
        meta.sequence,
        KIND if row_kind else None,  # without row kinds, aggregates may fold early
        meta.merge,
        memory_limit,
        spill_dir,
        "lz4",
        128,
        None,
        SORT_BATCH_ROWS,
    )
    buffer = _native.SortBuffer(sort_schema, {**options, "partial": True})
    try:
        for batch in batches:
            batch = conform(batch, meta, row_kind)
            buckets = np.asarray(_native.bucket_ids(batch, meta.key, meta.buckets), dtype=np.int64)
            groups = partitions.numbers(batch) * meta.buckets + buckets
            buffer.write(pa.Table.from_batches([batch.append_column(GROUP, pa.array(groups))]))
        return _cut_runs(root, meta, buffer.finish(), partitions)
    except ValueError as e:
        raise _reraise(e) from e
    finally:
        buffer.close()


def _cut_runs(root: Path, meta: TableMeta, sorted_rows: Any, partitions: PartitionNumbers) -> list[DataFile]:
    written: list[DataFile] = []
    writer: RunWriter | None = None
    group = -1
    try:
        for batch in sorted_rows:
            for g, start, end in group_boundaries(batch.column(GROUP)):
                if g != group:
                    if writer is not None:
                        written.append(writer.close())
                    group = g
                    writer = RunWriter(root, meta, partitions.values(g // meta.buckets), g % meta.buckets, level=0)
                writer.write(batch.slice(start, end - start))
        if writer is not None:
            written.append(writer.close())
            writer = None
        return written
    except BaseException:
        if writer is not None:
            writer.abort()
        remove_files(root, written)
        raise


def remove_files(root: Path, files: Iterable[DataFile]) -> None:
    for f in files:
        (root / f.path).unlink(missing_ok=True)
