"""Turning whatever Arrow-tabular object a user passes into C-stream sources for Rust.

Nothing here touches rows: tables, readers and foreign objects are handed over through
the Arrow C stream interface without copying.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from .errors import InvalidInputError


def as_stream_source(obj: Any) -> Any:
    """An object with ``__arrow_c_stream__`` (or ``None`` for an empty iterable, whose
    schema is not known yet)."""
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
    return pa.RecordBatchReader.from_batches(first.schema, itertools.chain([first], batches))


def as_stream_sources(runs: Any) -> list[Any]:
    """Normalises a list of runs; an empty iterable becomes an empty run of the others' schema."""
    if hasattr(runs, "__arrow_c_stream__") or isinstance(runs, pa.RecordBatch):
        raise InvalidInputError("runs must be a list of runs (got a single table; wrap it in a list)")
    sources = [as_stream_source(run) for run in runs]
    schema = next((_schema_of(s) for s in sources if s is not None), None)
    if schema is None:
        return []
    return [pa.RecordBatchReader.from_batches(schema, []) if s is None else s for s in sources]


def _schema_of(source: Any) -> pa.Schema:
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
