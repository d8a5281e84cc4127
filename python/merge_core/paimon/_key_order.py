"""Keys in Paimon's order: how Python compares what Paimon's Java comparator compares.

Paimon sorts a bucket's keys with a generated comparator of the key row: column by column,
nulls first, numbers by value, strings and binaries by their unsigned bytes, decimals and
timestamps by value (timestamps to the nanosecond), and floats by ``Double.compare`` /
``Float.compare``: ``-0.0 < 0.0``, and every NaN equal to every other and above
``+inf``. Python's own ``<`` agrees on everything but floats (a NaN compares false with
anything, ``-0.0 == 0.0``) and nulls (``None`` does not compare at all), so every place
that orders or compares keys goes through this module:

- :func:`sort_key` and :func:`row_key` turn a key (Python values, or a serialized
  BinaryRow from a manifest) into a tuple whose Python order is Paimon's;
- :func:`ordered` turns a key column into one whose Arrow comparisons are Paimon's, for
  checks over whole batches (:func:`ascending`, :func:`repeats`).
"""

from __future__ import annotations

import datetime
import struct
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import _binary

_NAN64 = 0x7FF8_0000_0000_0000  # Java's doubleToLongBits of every NaN
_NAN32 = 0x7FC0_0000  # Java's floatToIntBits of every NaN
_EPOCH = datetime.datetime(1970, 1, 1)


def float_order(value: float) -> int:
    """An integer that orders doubles as Java's ``Double.compare`` does (a float32 value,
    widened exactly, orders as ``Float.compare`` orders it): the NaN made canonical, then
    the bits of IEEE 754's total order."""
    (bits,) = struct.unpack("<q", struct.pack("<d", value))
    if value != value:
        bits = _NAN64
    return bits ^ ((bits >> 63) & 0x7FFF_FFFF_FFFF_FFFF)


def _value_order(value: Any) -> Any:
    if isinstance(value, float):
        return float_order(value)
    if isinstance(value, datetime.datetime):  # to microseconds: what a datetime holds
        if value.tzinfo is not None:
            value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        return (value - _EPOCH) // datetime.timedelta(microseconds=1)
    return value


def value_key(value: Any) -> tuple:
    """One value's place in Paimon's order (a column of :func:`sort_key`)."""
    return (0,) if value is None else (1, _value_order(value))


def sort_key(values: Sequence[Any]) -> tuple:
    """A key's values (as :func:`_binary.decode` gives them, raw or not, or ``as_py()``;
    a column's values all in one of these forms) as a tuple whose Python order is
    Paimon's order of the keys."""
    return tuple(value_key(v) for v in values)


def row_key(data: bytes, types: Sequence[pa.DataType]) -> tuple:
    """A serialized BinaryRow of ``types`` (a manifest's min or max key) as :func:`sort_key`
    of its values as Java holds them (timestamps as epoch milliseconds and nanoseconds,
    exact; dates as day numbers)."""
    return sort_key(_binary.decode(data, types, raw=True))


def ordered(column: pa.Array) -> pa.Array:
    """A key column whose Arrow comparisons (``pc.less``, ``pc.equal``, min and max)
    follow Paimon's order: floats as the integers of :func:`float_order`, timestamps as
    integers of their unit; other types already compare as Paimon's do."""
    t = column.type
    if pa.types.is_timestamp(t):
        return column.cast(pa.int64())
    if not pa.types.is_floating(t):
        return column
    widened = column.cast(pa.float64())
    values = (widened.fill_null(0.0) if column.null_count else widened).to_numpy()
    bits = np.where(np.isnan(values), np.int64(_NAN64), values.view(np.int64))
    keys = pa.array(bits ^ ((bits >> 63) & np.int64(0x7FFF_FFFF_FFFF_FFFF)))
    return keys if not column.null_count else pc.if_else(column.is_null(), pa.scalar(None, pa.int64()), keys)


def bounds(column: pa.Array, ordered_column: pa.Array | None = None) -> tuple[Any, Any]:
    """The least and greatest non-null value of ``column`` in Paimon's order, as Python
    values of ``column`` (``ordered_column``: :func:`ordered` of it, if already made)."""
    keys = ordered(column) if ordered_column is None else ordered_column
    found = pc.min_max(keys)
    if keys is column:
        return found["min"].as_py(), found["max"].as_py()
    low, high = pc.index(keys, found["min"]).as_py(), pc.index(keys, found["max"]).as_py()
    return column[low].as_py(), column[high].as_py()


def _neighbours(column: pa.Array, compare: Callable[[pa.Array, pa.Array], pa.Array]) -> pa.Array:
    """``compare`` of each row but the last with the next row."""
    n = len(column)
    return compare(column.slice(0, n - 1), column.slice(1))


def ascending(columns: Sequence[pa.Array], strict: bool = True) -> bool:
    """Whether the rows of key ``columns`` (:func:`ordered`, no nulls) are strictly
    ascending: each key above the one before, column by column (not ``strict``: or equal)."""
    if not columns or len(columns[0]) < 2:
        return True
    above = _neighbours(columns[-1], pc.less if strict else pc.less_equal)  # decides if all before tie
    for c in reversed(columns[:-1]):
        above = pc.or_(_neighbours(c, pc.less), pc.and_(_neighbours(c, pc.equal), above))
    return bool(pc.all(above).as_py())


def repeats(columns: Sequence[pa.Array]) -> np.ndarray:
    """For each row, whether it has the same key as the row before it (the first row:
    never), with key ``columns`` :func:`ordered`."""
    n = len(columns[0]) if columns else 0
    same = np.zeros(n, dtype=bool)
    if n > 1:
        both = _neighbours(columns[0], pc.equal)
        for c in columns[1:]:
            both = pc.and_(both, _neighbours(c, pc.equal))
        same[1:] = both.to_numpy(zero_copy_only=False)
    return same
