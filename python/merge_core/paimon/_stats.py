"""A data file's column statistics as Paimon's manifests keep them: per column the least
and greatest value and the count of nulls (``SimpleStats``: two BinaryRows and an array of
longs): min and max taken from the written file's Parquet footer, as Paimon's writer
takes them (``ParquetSimpleStatsExtractor``), but for floats and timestamps, gathered
batch by batch (see ``ColumnStats``); null counts gathered batch by batch.

What each column keeps is its *stats mode*, read as Paimon's writer reads it
(``StatsCollectorFactories``): ``fields.<column>.stats-mode`` first, then
``metadata.stats-mode.per.level`` for the file's level, then ``metadata.stats-mode``
(default ``truncate(16)``); ``metadata.stats-keep-first-n-columns`` gives the columns
after the first N mode ``none``. The modes:

- ``full``: min, max and null count;
- ``truncate(N)``: the same, strings and binaries cut to N characters (bytes), the max
  then rounded up (its last character that can be incremented is, the rest dropped) so
  that it stays an upper bound; a max that cannot be rounded up leaves min and max null;
- ``counts``: the null count only; ``none``: nothing.

Key columns of a thin-mode file are system columns to Paimon, kept at ``truncate(128)``
unless their own mode says otherwise. (The key's own statistics, ``_KEY_STATS``, are the
data file writer's: whole values; Paimon's writer cuts strings beyond 128 characters.)
With ``metadata.stats-dense-store`` (default true), columns of mode ``none`` are left
out of the rows and ``_VALUE_STATS_COLS`` names those kept (null: all of them).

Floats: a column holding a NaN keeps no min and max (Paimon's writers take them from the
Parquet footer, where a NaN makes them unreliable), so no reader prunes by them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidInputError
from . import _binary, _key_order
from ._options import bool_option, int_option
from ._schema import TableSchema

DEFAULT_MODE = "truncate(16)"
KEY_MODE = "truncate(128)"  # Paimon's mode for its system columns, the key's among them
_TRUNCATE = re.compile(r"TRUNCATE\((\d+)\)")


@dataclass(frozen=True)
class Mode:
    """A column's stats mode: ``kind`` is none, counts, full or truncate (``length``)."""

    kind: str
    length: int = 0

    @classmethod
    def parse(cls, text: str, option: str) -> Mode:
        upper = text.strip().upper()
        if upper in ("NONE", "COUNTS", "FULL"):
            return cls(upper.lower())
        match = _TRUNCATE.fullmatch(upper)
        if match and int(match.group(1)) > 0:
            return cls("truncate", int(match.group(1)))
        raise InvalidInputError(f"option {option!r}: {text!r} is not a stats mode (none, counts, full, truncate(N))")


def _level_modes(options: dict[str, str]) -> dict[int, str]:
    """``metadata.stats-mode.per.level`` (``"0:none,1:full"``) as level -> mode."""
    text = options.get("metadata.stats-mode.per.level", "").strip()
    out = {}
    for item in filter(None, (p.strip() for p in text.split(","))):
        level, _, mode = item.partition(":")
        try:
            out[int(level)] = mode.strip()
        except ValueError:
            raise InvalidInputError(f"option 'metadata.stats-mode.per.level': {item!r} is not LEVEL:MODE") from None
    return out


def value_modes(schema: TableSchema, level: int) -> list[Mode]:
    """Each table column's stats mode in a data file of ``level``, as Paimon's writer
    picks it (key columns of a thin-mode file as system columns: ``truncate(128)``)."""
    options = schema.options
    default = _level_modes(options).get(level, options.get("metadata.stats-mode", DEFAULT_MODE))
    keep = int_option(options, "metadata.stats-keep-first-n-columns", -1)
    keys = set(schema.trimmed_keys) if schema.thin_mode else set()
    counted = 0
    out = []
    for f in schema.fields:
        own = options.get(f"fields.{f.name}.stats-mode")
        if own is not None:
            out.append(Mode.parse(own, f"fields.{f.name}.stats-mode"))
            counted += 1
        elif f.name in keys:
            out.append(Mode.parse(KEY_MODE, "key"))
        else:
            none = 0 <= keep <= counted
            out.append(Mode("none") if none else Mode.parse(default, "metadata.stats-mode"))
            counted += 1
    return out


class ColumnStats:
    """Min, max and null count of one column: the null count gathered batch by batch, min
    and max too for floats and timestamps, and taken from the written file's Parquet
    footer (``add_footer``) for every other type, as Paimon's writer takes them
    (``ParquetSimpleStatsExtractor``): the encoder finds them anyway. ``values``: a value
    column, whose NaN leaves it without min and max; a key column keeps NaN as the
    greatest value, in Paimon's order."""

    def __init__(self, type: pa.DataType, values: bool = True):
        self.type = type
        self.bounded = _bounded(type)
        self.footer = self.bounded and _footer_kept(type)
        self.values = values
        self.nulls = 0
        self.low: Any = None
        self.high: Any = None
        self.nan = False

    def add(self, column: pa.Array) -> None:
        self.nulls += column.null_count
        if not self.bounded or self.footer or self.nan or column.null_count == len(column):
            return
        if self.values and pa.types.is_floating(column.type) and pc.any(pc.is_nan(column)).as_py():
            self.nan, self.low, self.high = True, None, None
            return
        values = column.cast(pa.int64()) if pa.types.is_timestamp(column.type) else column
        self._widen(*_key_order.bounds(values))

    def add_footer(self, chunks: Sequence[tuple[Any, int]]) -> None:
        """Min and max from the file's Parquet statistics of the column: ``(statistics,
        rows)`` per row group. A row group holding a value but no min and max (Parquet
        leaves out a string's past 4 KiB, as Java's writer does) leaves the file's unknown."""
        if not self.footer:
            return
        for stats, rows in chunks:
            if stats is not None and stats.has_null_count and stats.null_count >= rows:
                continue  # nulls only
            if stats is None or not stats.has_min_max:
                self.low = self.high = None
                return
            self._widen(stats.min, stats.max)

    def _widen(self, low: Any, high: Any) -> None:
        order = _key_order.value_key
        if self.low is None or order(low) < order(self.low):
            self.low = low
        if self.high is None or order(high) > order(self.high):
            self.high = high

    def result(self, mode: Mode) -> tuple[Any, Any, int | None]:
        """``(min, max, null count)`` as ``mode`` keeps them."""
        if mode.kind == "none":
            return None, None, None
        if mode.kind == "counts" or self.low is None:
            return None, None, self.nulls
        if mode.kind == "full":
            return self.low, self.high, self.nulls
        high = _round_up(self.high, mode.length)
        if high is None:
            return None, None, self.nulls
        return _cut(self.low, mode.length), high, self.nulls


def _bounded(t: pa.DataType) -> bool:
    """Whether min and max of type ``t`` are kept (as BinaryRow fields merge-core encodes)."""
    checks = (
        pa.types.is_boolean,
        pa.types.is_integer,
        pa.types.is_floating,
        pa.types.is_string,
        pa.types.is_large_string,
        pa.types.is_binary,
        pa.types.is_decimal,
        pa.types.is_date32,
        pa.types.is_time32,
        pa.types.is_timestamp,
    )
    return any(check(t) for check in checks) and not pa.types.is_unsigned_integer(t)


def _footer_kept(t: pa.DataType) -> bool:
    """Whether a Parquet footer's min and max of type ``t`` are the column's in Paimon's
    order, as the Python values merge-core encodes: not for floats (Parquet skips NaN and
    orders -0.0 as 0.0) nor timestamps (Parquet keeps seconds as milliseconds)."""
    return not (pa.types.is_floating(t) or pa.types.is_timestamp(t))


def _cut(value: Any, length: int) -> Any:
    """A lower bound of ``value`` of at most ``length`` characters (bytes)."""
    return value[:length] if isinstance(value, (str, bytes)) else value


def _round_up(value: Any, length: int) -> Any:
    """An upper bound of ``value`` of at most ``length`` characters (bytes): ``value``
    itself if short enough, else its first ``length`` with the last one that can be
    incremented incremented and the rest dropped; ``None`` if none can be."""
    if isinstance(value, str) and len(value) > length:
        for i in range(length - 1, -1, -1):
            following = ord(value[i]) + 1
            if 0xD800 <= following <= 0xDFFF:  # a surrogate is no character: the next one is
                following = 0xE000
            if following <= 0x10FFFF:
                return value[:i] + chr(following)
        return None
    if isinstance(value, bytes) and len(value) > length:
        for i in range(length - 1, -1, -1):
            if value[i] != 0xFF:
                return value[:i] + bytes([value[i] + 1])
        return None
    return value


class FileStats:
    """The statistics of one data file's table columns, as its manifest record keeps them."""

    def __init__(self, schema: TableSchema, level: int):
        self.schema = schema
        self.columns = [ColumnStats(f.arrow().type) for f in schema.fields]
        self.modes = value_modes(schema, level)
        self.dense = bool_option(schema.options, "metadata.stats-dense-store", True)

    def add(self, batch: pa.RecordBatch) -> None:
        """Counts a batch holding the table's columns."""
        for f, stats in zip(self.schema.fields, self.columns, strict=True):
            stats.add(batch.column(f.name))

    def add_footer(self, chunks: dict[str, list[tuple[Any, int]]]) -> None:
        """Takes min and max from the written file's footer (``footer_chunks``)."""
        for f, stats in zip(self.schema.fields, self.columns, strict=True):
            stats.add_footer(chunks.get(f.name, ()))

    def value_stats(self) -> tuple[dict[str, Any], list[str] | None]:
        """``_VALUE_STATS`` and ``_VALUE_STATS_COLS`` of the file."""
        fields = self.schema.fields
        kept = [i for i, m in enumerate(self.modes) if not (self.dense and m.kind == "none")]
        names = None if len(kept) == len(fields) else [fields[i].name for i in kept]
        results = [self.columns[i].result(self.modes[i]) for i in kept]
        return simple_stats(results, [self.columns[i].type for i in kept]), names


def footer_chunks(metadata: Any) -> dict[str, list[tuple[Any, int]]]:
    """A Parquet file's column statistics (``pq.FileMetaData``) by top-level column name:
    ``(statistics or None, rows)`` of each row group."""
    out: dict[str, list[tuple[Any, int]]] = {}
    for g in range(metadata.num_row_groups):
        group = metadata.row_group(g)
        for c in range(group.num_columns):
            chunk = group.column(c)
            out.setdefault(chunk.path_in_schema, []).append((chunk.statistics, group.num_rows))
    return out


def simple_stats(results: Sequence[tuple[Any, Any, int | None]], types: Sequence[pa.DataType]) -> dict[str, Any]:
    """A manifest's ``SimpleStats`` record of ``(min, max, null count)`` per column."""
    return {
        "_MIN_VALUES": _binary.encode([r[0] for r in results], types),
        "_MAX_VALUES": _binary.encode([r[1] for r in results], types),
        "_NULL_COUNTS": [r[2] for r in results],
    }
