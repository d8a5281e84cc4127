"""The spillable sort: ``mc.sort`` and ``mc.SortBuffer`` (thin wrappers over Rust)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from . import _native
from ._native import Stream
from .errors import InvalidInputError, as_invalid_input
from .inputs import as_stream_source, parquet_path, sort_options
from .merge_functions import MergeSpec


class SortBuffer:
    """Sorts any amount of Arrow data within ``memory_limit``, spilling sorted runs to disk.

    Write batches or tables, then call :meth:`finish` for a :class:`Stream` of the sorted
    (and, with ``merge``, folded) rows. Spill files live in a private directory under
    ``spill_dir`` (the system temporary directory by default) that is removed when the
    stream is consumed or dropped, on error, on :meth:`close` and when the buffer is dropped.

    >>> import pyarrow as pa, merge_core as mc
    >>> schema = pa.schema([("k", pa.int64()), ("v", pa.string())])
    >>> with mc.SortBuffer(schema, key="k", memory_limit="64MiB") as buf:
    ...     buf.write(pa.table({"k": [3, 1], "v": ["c", "a"]}, schema=schema))
    ...     buf.write(pa.table({"k": [2], "v": ["b"]}, schema=schema))
    ...     buf.finish().read_all().to_pydict()
    {'k': [1, 2, 3], 'v': ['a', 'b', 'c']}
    """

    def __init__(
        self,
        schema: pa.Schema,
        key: str | Iterable[str],
        memory_limit: int | str = "256MiB",
        spill_dir: str | os.PathLike[str] | None = None,
        spill_compression: str = "lz4",
        max_fan_in: int = 128,
        max_disk_size: int | str | None = None,
        merge: MergeSpec | None = None,
        sequence: str | Iterable[str] | None = None,
        row_kind: str | None = None,
        batch_size: int = 8192,
        sequence_order: str = "ascending",
    ) -> None:
        options = sort_options(
            key,
            sequence,
            row_kind,
            merge,
            memory_limit,
            spill_dir,
            spill_compression,
            max_fan_in,
            max_disk_size,
            batch_size,
            sequence_order,
        )
        try:
            self._native = _native.SortBuffer(schema, options)
        except ValueError as e:
            raise as_invalid_input(e) from e

    def write(self, data: Any) -> None:
        """Adds a RecordBatch, Table, RecordBatchReader or any Arrow-tabular object."""
        source = as_stream_source(data)
        if source is None:
            return
        try:
            self._native.write(source)
        except ValueError as e:
            raise as_invalid_input(e) from e

    def finish(self) -> Stream:
        """Ends writing and returns the sorted rows as a lazy stream."""
        return self._native.finish()

    def close(self) -> None:
        """Discards the buffered rows and deletes any spill files now."""
        self._native.close()

    def __enter__(self) -> SortBuffer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def memory_bytes(self) -> int:
        """Bytes of memory the buffer accounts for now."""
        return self._native.memory_bytes

    @property
    def peak_memory_bytes(self) -> int:
        """Most bytes of memory accounted for at once."""
        return self._native.peak_memory_bytes

    @property
    def spilled_runs(self) -> int:
        """Sorted runs written to disk so far."""
        return self._native.spilled_runs

    @property
    def spilled_bytes(self) -> int:
        """Bytes written to spill files so far."""
        return self._native.spilled_bytes

    @property
    def rows_written(self) -> int:
        """Rows written so far."""
        return self._native.rows_written

    @property
    def spill_path(self) -> str | None:
        """The private spill directory, once the buffer has spilled."""
        path = self._native.spill_path
        return None if path is None else os.fspath(path)


def sort(
    source: Any,
    key: str | Iterable[str],
    memory_limit: int | str = "256MiB",
    spill_dir: str | os.PathLike[str] | None = None,
    spill_compression: str = "lz4",
    max_fan_in: int = 128,
    max_disk_size: int | str | None = None,
    merge: MergeSpec | None = None,
    sequence: str | Iterable[str] | None = None,
    row_kind: str | None = None,
    batch_size: int = 8192,
    sequence_order: str = "ascending",
) -> Stream:
    """Sort an Arrow-tabular ``source`` by ``key`` within ``memory_limit`` (see :class:`SortBuffer`).

    ``source`` is a table, batches, a reader, or the path of a Parquet file (a local one
    is decoded in Rust, in batches of ``batch_size`` rows; a URI is read with pyarrow).

    With ``merge`` (a merge function as in :func:`merge_core.merge`) the output has one row
    per key; without a sequence column, arrival order is the version order.

    >>> import pyarrow as pa, merge_core as mc
    >>> t = pa.table({"k": [2, 1, 2], "v": [1, 2, 3]})
    >>> mc.sort(t, key="k", merge="deduplicate").read_all().to_pydict()
    {'k': [1, 2], 'v': [2, 3]}
    """
    options = sort_options(
        key,
        sequence,
        row_kind,
        merge,
        memory_limit,
        spill_dir,
        spill_compression,
        max_fan_in,
        max_disk_size,
        batch_size,
        sequence_order,
    )
    # A local Parquet file is decoded in Rust; a remote one (a URI) is read by pyarrow.
    is_path = isinstance(source, (str, os.PathLike))
    stream_source = parquet_path(source) if is_path else as_stream_source(source)
    if stream_source is None:
        raise InvalidInputError("cannot sort an empty iterable: its schema is unknown (pass a table or reader)")
    try:
        return _native.sort(stream_source, options)
    except ValueError as e:
        raise as_invalid_input(e) from e
