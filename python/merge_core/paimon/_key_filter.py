"""What a read's filter fixes of a table's key, so that the read opens less:

- the buckets of a fixed-bucket table that can hold its rows (:func:`bucket_selector`),
  as Paimon's ``BucketSelector`` decides: when the filter's top-level conjuncts fix every
  bucket-key column to a few values (``=``, ``is_in``, or an ``|`` of those on one
  column), only the buckets those keys hash to can hold a matching row, so a point
  lookup opens one bucket. As in Paimon: a conjunct of any other shape is passed over (it
  cannot widen the set), a column fixed by two conjuncts takes the values both allow,
  nulls never match, and past 1000 key combinations no bucket is skipped. Each file is
  tested against its own bucket count (``_TOTAL_BUCKETS``: a partition rescaled since
  keeps its files' numbers). Where merge-core differs on purpose: contradictory
  conjuncts (``k = 1 and k = 2``) skip every bucket, where Paimon reads them all; both
  return no row.
- the range of the key's first column its conjuncts allow (:func:`first_key_bounds`),
  which the Rust read uses to decode of each file only the pages (or row groups) whose
  statistics may hold such keys. Paimon's reader filters a file's row groups by the
  whole predicate instead; the answer is the same, as the merged rows are filtered
  exactly afterwards.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from itertools import product
from typing import Any

import pyarrow as pa

from .. import _native
from ._predicate import COMPARISONS, Node, Predicate
from ._schema import TableSchema

# Paimon's BucketSelector.MAX_VALUES: more key combinations than this select every bucket.
MAX_KEYS = 1000


def bucket_selector(node: Node | None, schema: TableSchema) -> Callable[[int, int], bool] | None:
    """``selects(bucket, total_buckets)``, or None when the filter selects no bucket in
    particular (no filter, a table without fixed buckets, a bucket key not fixed)."""
    if node is None or not _fixed_buckets(schema):
        return None
    keys = list(schema.bucket_keys)
    values = _values_per_column(node, keys)
    if values is None:
        return None
    combinations = 1
    for column in keys:
        combinations *= len(values[column])
    if combinations > MAX_KEYS:
        return None
    rows = _key_rows(schema, keys, values)
    if rows is None:
        return None
    chosen: dict[int, frozenset[int]] = {}

    def selects(bucket: int, total_buckets: int) -> bool:
        if total_buckets < 1:
            return True  # a file that does not say how many buckets its partition had
        if total_buckets not in chosen:
            ids = _native.paimon_bucket_ids(rows, keys, total_buckets) if rows.num_rows else pa.array([], pa.int32())
            chosen[total_buckets] = frozenset(ids.to_pylist())
        return bucket in chosen[total_buckets]

    return selects


def _fixed_buckets(schema: TableSchema) -> bool:
    """Whether rows go to buckets by Paimon's default hash: fixed buckets, or the real
    buckets a postponed table's compaction made."""
    bucket = int(schema.options.get("bucket", "-1"))
    function = schema.options.get("bucket-function.type", "default").strip().lower()
    return (bucket > 0 or bucket == -2) and function == "default" and bool(schema.bucket_keys)


def _values_per_column(node: Node, keys: list[str]) -> dict[str, list[Any]] | None:
    """Each bucket-key column's possible values (None: some column is not fixed)."""
    found: dict[str, list[Any]] = {}
    for conjunct in _conjuncts(node):
        fixed = _fixed_values(conjunct)
        if fixed is None or fixed[0] not in keys:
            continue
        column, values = fixed
        if column in found:
            found[column] = [v for v in found[column] if v in values]
        else:
            found[column] = list(dict.fromkeys(values))
    if any(column not in found for column in keys):
        return None
    return found


def _conjuncts(node: Node) -> list[Node]:
    """``node``'s conjuncts, nested ``&`` taken apart (Paimon's ``splitAnd``)."""
    if node.op != "and":
        return [node]
    return [part for child in node.children for part in _conjuncts(child)]


def _fixed_values(node: Node) -> tuple[str, list[Any]] | None:
    """(column, values) when ``node`` is true only where one column takes one of a few
    values: ``=``, ``is_in``, or an ``|`` of those on the same column."""
    if node.op == "equal":
        value = _plain(node.value)
        return node.column, [] if value is None else [value]
    if node.op == "in":
        return node.column, [v for v in map(_plain, node.values) if v is not None]
    if node.op == "or":
        parts = [_fixed_values(child) for child in node.children]
        if any(p is None for p in parts) or len({p[0] for p in parts}) != 1:
            return None
        return parts[0][0], [v for _, values in parts for v in values]
    return None


def _plain(value: Any) -> Any:
    return value.as_py() if isinstance(value, pa.Scalar) else value


def _key_rows(schema: TableSchema, keys: list[str], values: dict[str, list[Any]]) -> pa.RecordBatch | None:
    """Every combination of the columns' values as rows of the bucket key's types (None:
    a value that is not of its column's type, which then matches nothing hashed)."""
    types = {f.name: f.arrow() for f in schema.fields}
    combos = list(product(*(values[k] for k in keys)))
    try:
        arrays = [pa.array([c[i] for c in combos], types[k].type) for i, k in enumerate(keys)]
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError):
        return None
    return pa.RecordBatch.from_arrays(arrays, schema=pa.schema([types[k] for k in keys]))


# Types whose Parquet statistics order as the merge orders keys, with the least value
# above a value (for an inclusive bound): the Rust read narrows only these.
_INTEGERS = (pa.types.is_integer, pa.types.is_date32)


def first_key_bounds(predicate: Predicate, schema: TableSchema) -> tuple[pa.Array | None, pa.Array | None] | None:
    """(lower, upper) of the first key column the filter's conjuncts allow: one-value
    arrays of its type, lower inclusive, upper exclusive, None where unbounded; None
    when the filter bounds it nowhere (or for a type the read cannot narrow by)."""
    keys = schema.trimmed_keys
    if not keys:
        return None
    field = schema.field(keys[0]).arrow()
    successor = _successor(field.type)
    if successor is None:
        return None
    lower = upper = None
    for conjunct in _conjuncts(predicate.node):
        if conjunct.columns() != {keys[0]}:
            continue
        bounds = _bounds(conjunct, field.type, successor)
        if bounds is None:
            continue
        low, high = bounds
        if low is not None and (lower is None or low > lower):
            lower = low
        if high is not None and (upper is None or high < upper):
            upper = high
    if lower is None and upper is None:
        return None
    if lower is not None and upper is not None and upper < lower:
        upper = lower  # an empty range
    return tuple(None if v is None else pa.array([v], field.type) for v in (lower, upper))  # type: ignore[return-value]


def _successor(data_type: pa.DataType) -> Callable[[Any], Any] | None:
    """The least value above a value of this type, in the order of keys (None: a type
    the read does not narrow by)."""
    if any(test(data_type) for test in _INTEGERS):
        return lambda v: v + 1 if not isinstance(v, datetime.date) else v + datetime.timedelta(days=1)
    if pa.types.is_string(data_type) or pa.types.is_large_string(data_type):
        return lambda v: v + "\0"
    if pa.types.is_binary(data_type) or pa.types.is_large_binary(data_type):
        return lambda v: v + b"\0"
    return None


def _bounds(node: Node, data_type: pa.DataType, successor: Callable[[Any], Any]) -> tuple[Any, Any] | None:
    """(lower inclusive, upper exclusive) that ``node`` (on the one column) allows,
    values in the column's type (None: a node that bounds nothing, or of another type);
    an ``|`` allows what any of its parts does."""
    if node.op == "or":
        parts = [_bounds(child, data_type, successor) for child in node.children]
        if any(p is None for p in parts):
            return None
        lows, highs = [p[0] for p in parts], [p[1] for p in parts]  # type: ignore[index]
        return (None if None in lows else min(lows)), (None if None in highs else max(highs))
    values = [_plain(node.value)] if node.op in COMPARISONS else [_plain(v) for v in node.values]
    if node.op not in (*COMPARISONS, "in") or node.op == "not_equal" or not values or None in values:
        return None
    try:
        values = pa.array(values, data_type).to_pylist()
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError):
        return None
    low, high = min(values), max(values)
    if node.op == "greater":
        above = _above(data_type, low, successor)
        return None if above is None else (above, None)  # above the greatest value: left to the exact filter
    above = _above(data_type, high, successor)  # None: the greatest value, nothing above it
    return {
        "equal": (low, above),
        "in": (low, above),
        "less": (None, high),
        "less_equal": (None, above),
        "greater_equal": (low, None),
    }[node.op]


def _above(data_type: pa.DataType, value: Any, successor: Callable[[Any], Any]) -> Any:
    """``successor(value)``, or None when it would not fit the type (the type's greatest)."""
    above = successor(value)
    try:
        pa.array([above], data_type)
    except (pa.ArrowInvalid, OverflowError):
        return None
    return above
