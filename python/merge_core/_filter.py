"""Dynamic partition pruning (Flink's FLIP-248): the distinct join keys of a filtered
build side (a dimension table) decide which partitions of the probe side (the fact
table) a read plans at all (``Table.plan`` applies them)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from .errors import InvalidInputError
from .inputs import as_stream_source, batches_of, parse_size


class DynamicFilter:
    """The distinct values of ``column`` of a build side, pruning the partitions of a
    read by ``partition_column``.

    ``source`` is Arrow-tabular data or a Spark DataFrame (already filtered, e.g. the
    dates of one year). If the distinct values take more than ``threshold`` bytes the
    filter gives up and the read prunes nothing (``applies`` is False, ``reason`` says
    why). An empty build side prunes every partition. Null values never match.

    >>> import pyarrow as pa, merge_core as mc
    >>> dates = pa.table({"d_date": ["2024-01-01", "2024-01-02", "2024-01-01", None]})
    >>> f = mc.DynamicFilter(dates, "d_date", partition_column="dt")
    >>> f.applies, f.values.to_pylist()
    (True, ['2024-01-01', '2024-01-02'])
    """

    def __init__(self, source: Any, column: str, partition_column: str, threshold: int | str = "8MiB") -> None:
        self.column = column
        self.partition_column = partition_column
        self.threshold = parse_size(threshold, "threshold")
        self.reason = ""
        self.values: pa.Array | None = None
        collect = _distinct_spark if _is_spark(source) else _distinct_arrow
        values = collect(source, column, self.threshold)
        if values is None:
            self.reason = f"the build side's distinct values exceed the threshold of {self.threshold} bytes"
        else:
            self.values = values.drop_null()

    @property
    def applies(self) -> bool:
        """Whether the filter prunes (it gives up on a build side above the threshold)."""
        return self.values is not None

    def __repr__(self) -> str:
        found = f"{len(self.values)} values" if self.values is not None else "no pruning: " + self.reason
        return f"DynamicFilter({self.column!r} -> {self.partition_column!r}, {found})"


def _is_spark(source: Any) -> bool:
    return hasattr(source, "sparkSession") and hasattr(source, "toArrow")


def _distinct_arrow(source: Any, column: str, threshold: int) -> pa.Array | None:
    stream = as_stream_source(source)
    if stream is None:
        raise InvalidInputError("cannot build a dynamic filter from an empty iterable: its schema is unknown")
    schema, batches = batches_of(stream)
    if column not in schema.names:
        raise InvalidInputError(f"no column '{column}' in the build side (it has {schema.names})")
    distinct = pa.array([], schema.field(column).type)
    for batch in batches:
        distinct = pc.unique(pa.concat_arrays([distinct, pc.unique(batch.column(column))]))
        if distinct.nbytes > threshold:
            return None
    return distinct


def _distinct_spark(df: Any, column: str, threshold: int) -> pa.Array | None:
    if column not in df.columns:
        raise InvalidInputError(f"no column '{column}' in the build side (it has {df.columns})")
    # Every value takes at least a byte in Arrow, so more distinct values than the
    # threshold cannot fit: the driver never collects more than that many rows.
    limit = threshold + 1
    table = df.select(column).distinct().limit(limit).toArrow()
    values = table.column(column).combine_chunks() if table.num_rows else pa.array([], table.schema.field(0).type)
    return None if values.nbytes > threshold else values
