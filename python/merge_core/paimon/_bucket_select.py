"""Which buckets of a fixed-bucket table can hold a filter's rows, as Paimon's
``BucketSelector`` decides: when the filter's top-level conjuncts fix every bucket-key
column to a few values (``=``, ``is_in``, or an ``|`` of those on one column), only the
buckets those keys hash to can hold a matching row, so a point lookup opens one bucket.

As in Paimon: a conjunct of any other shape is passed over (it cannot widen the set), a
column fixed by two conjuncts takes the values both allow, nulls never match, and past
1000 key combinations no bucket is skipped. Each file is tested against its own bucket
count (``_TOTAL_BUCKETS``: a partition rescaled since keeps its files' numbers).

Where merge-core differs on purpose: contradictory conjuncts (``k = 1 and k = 2``) skip
every bucket, where Paimon reads them all; both return no row.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import product
from typing import Any

import pyarrow as pa

from .. import _native
from ._predicate import Node
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
