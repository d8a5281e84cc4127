"""Turning whatever Arrow-tabular object a user passes into C-stream sources for Rust.

Nothing here touches rows: tables, readers and foreign objects are handed over through
the Arrow C stream interface without copying.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from .errors import InvalidInputError
from .merge_functions import merge_spec


class IterableRun:
    """A run given as a Python iterable of RecordBatches, schema taken from its first batch.

    Rust pulls its batches one by one (``_native`` reads ``schema`` and ``batches``), so
    each batch crosses with its own schema and is checked against the run's; a
    ``__arrow_c_stream__`` reader would reinterpret a batch of another type silently.
    An exception the iterable raises reaches the caller as itself.
    """

    def __init__(self, schema: pa.Schema, batches: Iterator[Any]) -> None:
        self.schema = schema
        self.batches = batches

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        """The batches, each checked against the schema (for consumers in Python)."""
        # Not `enumerate`: its reused result tuple holds the previous batch while the
        # next is made.
        number = 0
        for batch in self.batches:
            check_batch(batch, self.schema, number)
            yield batch
            del batch  # not held while the next batch is made either
            number += 1


def check_batch(batch: Any, schema: pa.Schema, number: int) -> None:
    """Fails unless ``batch`` is a RecordBatch of ``schema``'s column names and types."""
    if not isinstance(batch, pa.RecordBatch):
        raise InvalidInputError(f"batch {number} of an iterable run is a {type(batch).__name__}, not a RecordBatch")
    if batch.schema.names != schema.names or batch.schema.types != schema.types:
        raise InvalidInputError(
            f"batch {number} of an iterable run has schema ({_describe(batch.schema)}) but the run's first "
            f"batch has ({_describe(schema)}); every batch of a run must have the same columns and types"
        )


def _describe(schema: pa.Schema) -> str:
    return ", ".join(f"{f.name}: {f.type}" for f in schema)


def as_stream_source(obj: Any) -> Any:
    """An object with ``__arrow_c_stream__``, an :class:`IterableRun`, or ``None`` for an
    empty iterable (whose schema is not known yet)."""
    if isinstance(obj, pa.RecordBatch):
        return pa.Table.from_batches([obj])
    if hasattr(obj, "__arrow_c_stream__"):
        return obj
    if hasattr(obj, "__arrow_c_array__"):
        return pa.Table.from_batches([pa.record_batch(obj)])
    if isinstance(obj, (str, bytes)) or not isinstance(obj, Iterable):
        raise InvalidInputError(
            f"cannot read a run from {type(obj).__name__}: pass a pyarrow Table, RecordBatch, "
            "RecordBatchReader, an iterable of RecordBatches or any object with __arrow_c_stream__"
        )
    batches = iter(obj)
    first = next(batches, None)
    if first is None:
        return None
    if not isinstance(first, pa.RecordBatch):
        raise InvalidInputError(f"an iterable run must yield pyarrow RecordBatches, got {type(first).__name__}")
    return IterableRun(first.schema, _prepended(first, batches))


def _prepended(first: pa.RecordBatch, rest: Iterator[Any]) -> Iterator[Any]:
    """``first``, then ``rest``, holding ``first`` no longer than its consumer does
    (``itertools.chain`` keeps its arguments to the end: a sort of wide rows held its
    first input batch throughout)."""
    held = [first]
    del first
    yield held.pop()
    yield from rest


def batches_of(source: Any) -> tuple[pa.Schema, Iterable[pa.RecordBatch]]:
    """The schema and batches of a source made by :func:`as_stream_source` (not ``None``)."""
    if isinstance(source, IterableRun):
        return source.schema, source
    reader = pa.RecordBatchReader.from_stream(source)
    return reader.schema, reader


#: Rows per batch read from a remote Parquet run.
REMOTE_BATCH_ROWS = 65536


def as_stream_sources(runs: Any, filesystem: Any = None) -> list[Any]:
    """Normalises a list of runs; an empty iterable becomes an empty run of the others'
    schema; a local path (of a Parquet file, read in Rust) stays a path, as a ``str``; a
    remote one (a URI, or a path on ``filesystem``) becomes a reader of its batches."""
    if hasattr(runs, "__arrow_c_stream__") or isinstance(runs, pa.RecordBatch):
        raise InvalidInputError("runs must be a list of runs (got a single table; wrap it in a list)")
    if isinstance(runs, (str, os.PathLike)):
        raise InvalidInputError("runs must be a list of runs (got a single path; wrap it in a list)")
    sources = [
        parquet_path(run, filesystem) if isinstance(run, (str, os.PathLike)) else as_stream_source(run) for run in runs
    ]
    if all(s is not None for s in sources):
        return sources
    schema = next((_schema_of(s) for s in sources if s is not None), None)
    if schema is None:
        return []
    return [pa.RecordBatchReader.from_batches(schema, []) if s is None else s for s in sources]


def parquet_path(path: str | os.PathLike[str], filesystem: Any = None) -> Any:
    """A local file's path, or a reader of a remote file's batches (opened now, so that
    a missing file is named before the merge starts)."""
    import pyarrow.parquet as pq

    from .fs import resolve

    location = resolve(path, filesystem)
    if location.store.local:
        if not os.path.isfile(location.path):
            raise InvalidInputError(f"no such file: {location} (a run given as a path is a Parquet file)")
        return location.path
    try:
        parquet = pq.ParquetFile(location.store.open_input(location.path))
    except FileNotFoundError:
        raise InvalidInputError(f"no such file: {location} (a run given as a path is a Parquet file)") from None
    except (OSError, pa.ArrowException) as e:
        raise InvalidInputError(f"{location}: not a readable Parquet file ({e})") from e
    return pa.RecordBatchReader.from_batches(parquet.schema_arrow, parquet.iter_batches(REMOTE_BATCH_ROWS))


def _schema_of(source: Any) -> pa.Schema:
    if isinstance(source, str):
        import pyarrow.parquet as pq

        try:
            return pq.read_schema(source)
        except (OSError, pa.ArrowException) as e:
            raise InvalidInputError(f"{source}: not a readable Parquet file ({e})") from e
    schema = getattr(source, "schema", None)
    if isinstance(schema, pa.Schema):
        return schema
    return pa.RecordBatchReader.from_stream(source).schema


def column_names(value: str | Iterable[str] | None, what: str) -> list[str]:
    """One column name or several, as a list."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    names = list(value)
    if not all(isinstance(n, str) for n in names):
        raise InvalidInputError(f"{what} must be a column name or a list of column names")
    return names


def is_descending(sequence_order: str) -> bool:
    """``sequence_order`` checked: ``"ascending"`` (a higher sequence is newer) or ``"descending"``."""
    if sequence_order not in ("ascending", "descending"):
        raise InvalidInputError(f"sequence_order must be 'ascending' or 'descending', got {sequence_order!r}")
    return sequence_order == "descending"


def check_threads(threads: int | None) -> int:
    """A thread count: a positive integer, or None for one per core."""
    if threads is None:
        return os.cpu_count() or 1
    if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
        raise InvalidInputError(f"threads must be a positive integer, got {threads!r}")
    return threads


def null_strings_as_null(data: pa.Table | pa.RecordBatch, columns: list[str]) -> pa.Table | pa.RecordBatch:
    """``data`` with the string 'null' in ``columns`` made a null (one vectorised kernel
    per column): the ``null_strings`` rule of an upsert's later versions (the contest's)."""
    for name in columns:
        i = data.schema.get_field_index(name)
        data = data.set_column(i, data.schema.field(i), _null_for_null_string(data.column(i)))
    return data


def _null_for_null_string(values: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    if isinstance(values, pa.ChunkedArray):
        return pa.chunked_array([_null_for_null_string(chunk) for chunk in values.chunks], values.type)
    # Not if_else: pyarrow 19's if_else writes broken offsets for a sliced string array
    # (the chunks of a column read from Parquet are slices of one buffer).
    mask = pc.fill_null(pc.equal(values, "null"), False)
    return pc.replace_with_mask(values, mask, pa.nulls(len(values), values.type))


_UNITS = {
    "": 1,
    "b": 1,
    "k": 1000,
    "kb": 1000,
    "kib": 1024,
    "m": 1000**2,
    "mb": 1000**2,
    "mib": 1024**2,
    "g": 1000**3,
    "gb": 1000**3,
    "gib": 1024**3,
    "t": 1000**4,
    "tb": 1000**4,
    "tib": 1024**4,
}


def parse_size(value: int | str | None, what: str) -> int | None:
    """Bytes from ``123``, ``"64MiB"``, ``"1.5 GB"`` (``None`` stays ``None``). A byte
    count is a whole number: ``1.5`` (not a string with a unit) is refused."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        if isinstance(value, int) and value <= 0:
            raise InvalidInputError(f"{what} must be positive, got {value}")
        return value
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", value) if isinstance(value, str) else None
    fraction_of_a_byte = match is not None and "." in match.group(1) and match.group(2).lower() in ("", "b")
    if not match or match.group(2).lower() not in _UNITS or fraction_of_a_byte:
        raise InvalidInputError(f"{what} must be a byte count like 268435456 or '256MiB', got {value!r}")
    size = int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    if size <= 0:
        raise InvalidInputError(f"{what} must be positive, got {value!r}")
    return size


def sort_options(
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
    sequence_order="ascending",
    system_sequence=None,
) -> dict[str, Any]:
    """The options checked and normalised, as the dict the native module reads."""
    if not isinstance(batch_size, int) or batch_size < 1:
        raise InvalidInputError(f"batch_size must be a positive integer, got {batch_size!r}")
    if not isinstance(max_fan_in, int) or max_fan_in < 2:
        raise InvalidInputError(f"max_fan_in must be an integer of at least 2, got {max_fan_in!r}")
    return {
        "key": column_names(key, "key"),
        "sequence": column_names(sequence, "sequence"),
        "descending": is_descending(sequence_order),
        "system_sequence": system_sequence,
        "row_kind": row_kind,
        "merge": None if merge is None else merge_spec(merge),
        "memory_limit": parse_size(memory_limit, "memory_limit"),
        "spill_dir": None if spill_dir is None else os.fspath(spill_dir),
        "spill_compression": spill_compression,
        "max_fan_in": max_fan_in,
        "max_disk_size": parse_size(max_disk_size, "max_disk_size"),
        "batch_size": batch_size,
    }
