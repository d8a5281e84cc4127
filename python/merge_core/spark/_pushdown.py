"""Which of Spark's pushed filters prune a merge-core read, and how.

Filters on partition columns prune partitions: every version of a key lies in one
partition, so skipping a partition whose values fail a filter drops only rows the filter
drops anyway, and the merged answer of every other key is unchanged. ``=`` and ``IN`` go
to :meth:`merge_core.Table.plan` as ``partitions``, so that the planner skips those
partitions' files; every pushed filter is then checked against each planned split's
partition values.

Filters on key columns (``=``, ``<=>``, ``IN``, ``<``, ``<=``, ``>``, ``>=``) go to
``Table.plan`` as its ``filter``: a file whose key range (the manifest's key statistics)
cannot hold a key the filter keeps is skipped, as Paimon's ``KeyValueFileStoreScan``
skips it; every version of a key has that key, so the merge never needed the file
(``=`` and ``IN`` also pick the buckets their keys hash to). A bucket left with no file
is no split. The split carries the filter to ``read_split``,
which keeps the merged rows it admits. A filter on a value column never goes there: an
older version of a key may pass it where the newer one that replaces it fails.

Pruning is a superset: Spark still applies every filter after the scan (the source hands
all of them back), so a filter that cannot be judged (another type, a literal the column
cannot hold exactly) prunes nothing.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

# Partition column types whose values Spark's filter literals give as the same Python
# values the table decodes (ints, str, bool, datetime.date, Decimal). Floats and
# timestamps (whose literals carry a zone, or not) are left to Spark.
_PRUNABLE = (
    pa.types.is_integer,
    pa.types.is_string,
    pa.types.is_boolean,
    pa.types.is_date32,
    pa.types.is_decimal,
)


@dataclass(frozen=True)
class PartitionFilter:
    """The pushed filters that prune partitions: ``tests`` pairs a partition column's
    position with a filter on it; ``values``: the values ``=``/``IN`` allow per column."""

    tests: tuple[tuple[int, Any], ...] = ()
    values: dict[str, set[Any]] = field(default_factory=dict)

    def admits(self, partition: Sequence[Any]) -> bool:
        """Whether a split of these partition values may hold rows the filters keep."""
        return all(_may_hold(f, partition[i]) for i, f in self.tests)


def partition_filter(filters: Sequence[Any], partition_by: Sequence[str], schema: pa.Schema) -> PartitionFilter:
    """The filters of ``filters`` (Spark's, ANDed) that prune by partition."""
    from pyspark.sql.datasource import EqualNullSafe, EqualTo, In

    tests, values = [], {}
    for f in filters:
        path = getattr(f, "attribute", None)
        if path is None or len(path) != 1 or path[0] not in partition_by:
            continue
        column = path[0]
        if not any(test(schema.field(column).type) for test in _PRUNABLE):
            continue
        tests.append((list(partition_by).index(column), f))
        allowed = None  # null is equal only null-safely
        if isinstance(f, EqualNullSafe):
            allowed = {f.value}
        elif isinstance(f, EqualTo):
            allowed = {f.value} - {None}
        elif isinstance(f, In):
            allowed = set(f.value) - {None}
        if allowed is not None:  # several filters on one column: only values all allow
            values[column] = values[column] & allowed if column in values else allowed
    return PartitionFilter(tuple(tests), values)


def _may_hold(f: Any, value: Any) -> bool:
    """Whether filter ``f`` can be true of a row whose column holds ``value``."""
    from pyspark.sql import datasource as ds

    try:
        if isinstance(f, ds.IsNull):
            return value is None
        if isinstance(f, ds.IsNotNull):
            return value is not None
        if isinstance(f, ds.EqualNullSafe):
            return value == f.value
        if value is None:  # every other comparison with null is not true
            return False
        if isinstance(f, ds.EqualTo):
            return value == f.value
        if isinstance(f, ds.In):
            return value in f.value
        if isinstance(f, ds.GreaterThan):
            return value > f.value
        if isinstance(f, ds.GreaterThanOrEqual):
            return value >= f.value
        if isinstance(f, ds.LessThan):
            return value < f.value
        if isinstance(f, ds.LessThanOrEqual):
            return value <= f.value
        if isinstance(f, ds.StringStartsWith):
            return value.startswith(f.value)
        if isinstance(f, ds.StringEndsWith):
            return value.endswith(f.value)
        if isinstance(f, ds.StringContains):
            return f.value in value
    except (TypeError, AttributeError):  # a literal of another type: keep the split
        return True
    return True


def key_filter(filters: Sequence[Any], key: Sequence[str], schema: pa.Schema) -> pc.Expression | None:
    """The AND of the filters of ``filters`` (Spark's, ANDed) that compare a key column
    with values, as a ``Table.plan`` filter (None: none do)."""
    from pyspark.sql import datasource as ds

    comparisons = {
        ds.EqualTo: operator.eq,
        ds.EqualNullSafe: operator.eq,  # a key is never null
        ds.GreaterThan: operator.gt,
        ds.GreaterThanOrEqual: operator.ge,
        ds.LessThan: operator.lt,
        ds.LessThanOrEqual: operator.le,
    }
    parts = []
    for f in filters:
        path = getattr(f, "attribute", None)
        if path is None or len(path) != 1 or path[0] not in key:
            continue
        t = schema.field(path[0]).type
        if not any(test(t) for test in _PRUNABLE):
            continue
        column = pc.field(path[0])
        if type(f) in comparisons:
            value = _exactly(f.value, t)
            if value is not None:
                parts.append(comparisons[type(f)](column, value))
        elif isinstance(f, ds.In):
            values = [_exactly(v, t) for v in f.value if v is not None]  # a null in IN never matches
            if values and None not in values:  # a value the column cannot hold: Spark's alone
                parts.append(column.isin(pa.array([v.as_py() for v in values], t)))
    return functools.reduce(operator.and_, parts) if parts else None


def _exactly(value: Any, t: pa.DataType) -> pa.Scalar | None:
    """``value`` as a scalar of type ``t``, or None if it is null or ``t`` cannot hold it
    exactly (5.5 for an integer column, a decimal of more digits)."""
    if value is None:
        return None
    try:
        scalar = pa.scalar(value)
        cast = scalar.cast(t, safe=True)
        if not cast.cast(scalar.type, safe=True).equals(scalar):
            return None
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, OverflowError):
        return None
    return cast
