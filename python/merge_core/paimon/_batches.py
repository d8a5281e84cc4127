"""The stream protocol of the reads Python shapes itself (filtered, append-table and
change reads): iteration over record batches, ``read_all`` and the Arrow C stream, as
``mc.Stream`` offers them. A subclass sets ``schema`` and ``_batches`` (an iterator)."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from .. import Stream


class BatchStream(Stream):
    """Batches of ``schema`` from the iterator ``_batches``, read once: a
    :class:`merge_core.Stream` whose subclass gives its own ``stats``."""

    schema: pa.Schema
    _batches: Iterator[pa.RecordBatch]

    def __iter__(self) -> BatchStream:
        return self

    def __next__(self) -> pa.RecordBatch:
        return next(self._batches)

    def read_all(self) -> pa.Table:
        return pa.Table.from_batches(list(self), self.schema)

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        reader = pa.RecordBatchReader.from_batches(self.schema, self)
        return reader.__arrow_c_stream__(requested_schema)
