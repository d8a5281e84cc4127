"""Changelog files (``changelog-producer``): the changes a commit makes, written beside
its data files for streaming readers and ``Table.changes``, listed in the snapshot's
changelog manifest list.

``input``: a write's changelog is its input rows, every one with its own row kind
(``-U`` and ``-D`` included), after nothing but the write's sort: by bucket, key and
version order, as Paimon's ``MergeTreeWriter`` hands the raw rows of its sort buffer
to the changelog writer before folding them. merge-core sorts them in a second sort
buffer that does not fold (the write's own folds as it sorts), so an input write holds
half its ``memory_limit`` for each. Each (partition, bucket) gets one changelog file at
level 0, named with ``changelog-file.prefix`` and compressed by
``changelog-file.compression``; its rows are numbered from the bucket's first sequence
number in this write, as its data file's are.

``full-compaction`` (:func:`full_compaction_changes`) and ``lookup``
(:func:`lookup_changes`, written by ``_lookup``'s compaction of a write's level-0
files) compare a key's row before a compaction with its merged row after.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import _native
from . import _key_order
from ._options import bool_option
from ._plan import VALUE_KIND

INPUT, FULL_COMPACTION, LOOKUP = "input", "full-compaction", "lookup"
INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = 0, 1, 2, 3


def producer(options: Mapping[str, str]) -> str:
    """A table's ``changelog-producer`` (``none`` by default), lower case."""
    return options.get("changelog-producer", "none").strip().lower()


class InputChangelog:
    """The input rows of one write, sorted but not folded, cut into one changelog file
    per (partition, bucket) when the write prepares its commit."""

    def __init__(self, sort_schema: pa.Schema, options: dict[str, Any]):
        self._buffer = _native.SortBuffer(sort_schema, {**options, "merge": None})

    def add(self, rows: pa.Table) -> None:
        self._buffer.write(rows)

    def write_files(
        self,
        group_column: str,
        boundaries: Callable[[pa.Array], list[tuple[int, int, int]]],
        file_for: Callable[[int], Any],
        remove: Callable[[bytes, int, dict[str, Any]], None],
    ) -> dict[tuple[bytes, int], dict[str, Any]]:
        """Writes a changelog file per group of the sorted rows (``boundaries`` cuts the
        ``group_column`` into groups, ``file_for(group)`` opens the group's file, a
        ``_write.DataFileWriter``); returns each (partition, bucket)'s file record. If
        one fails, those written are removed (``remove``)."""
        done: list[tuple[bytes, int, Future[dict[str, Any]]]] = []
        current: Any = None
        group = -1
        try:
            for batch in self._buffer.finish():
                for g, start, end in boundaries(batch.column(group_column)):
                    if g != group:
                        if current is not None:
                            done.append((current.partition, current.bucket, current.close_later()))
                        group, current = g, file_for(g)
                    current.write(batch.slice(start, end - start).drop_columns([group_column]))
            if current is not None:
                done.append((current.partition, current.bucket, current.close_later()))
                current = None
            return {(partition, bucket): record.result() for partition, bucket, record in done}
        except BaseException:
            if current is not None:
                current.abort()
            for partition, bucket, record in done:
                if record.exception() is None:  # waits for it; a file that failed removed itself
                    remove(partition, bucket, record.result())
            raise
        finally:
            self._buffer.close()

    def close(self) -> None:
        self._buffer.close()


def full_compaction_changes(
    before: pa.Table, after: pa.Table, touched: pa.Table, keys: list[str], options: Mapping[str, str]
) -> pa.Table:
    """The changelog of a full compaction (``FullChangelogMergeFunctionWrapper``), in key
    order, with ``_VALUE_KIND``: ``before`` is the top level as stored (the last full
    compaction's view), ``after`` the merged rows the compaction writes, ``touched`` the
    keys of the files below the top level (a key found only at the top did not change).
    A touched key that was at the top gives ``-U`` (its old row) and ``+U`` (its new one),
    or ``-D`` if it is gone; one that was not gives ``+I`` if it now has a row. With
    ``changelog-producer.row-deduplicate``, an update that changes no value (but the
    ``...row-deduplicate-ignore-fields``) gives nothing."""
    touched = touched.select(keys).group_by(keys).aggregate([])
    old = _semi(before, touched, keys, keep=True)
    new = _semi(after, touched, keys, keep=True)
    updated_old, deleted = _semi(old, new, keys, keep=True), _semi(old, new, keys, keep=False)
    updated_new, inserted = _semi(new, old, keys, keep=True), _semi(new, old, keys, keep=False)
    updated_old, updated_new = _by_key(updated_old, keys), _by_key(updated_new, keys)  # aligned: one row per key
    if bool_option(options, "changelog-producer.row-deduplicate"):
        ignored = {c.strip() for c in options.get("changelog-producer.row-deduplicate-ignore-fields", "").split(",")}
        changed = _differs(updated_old, updated_new, [c for c in before.schema.names if c not in ignored])
        updated_old, updated_new = updated_old.filter(changed), updated_new.filter(changed)
    parts = [
        (updated_old, UPDATE_BEFORE, 0),
        (updated_new, UPDATE_AFTER, 1),
        (deleted, DELETE, 0),
        (inserted, INSERT, 0),
    ]
    out = pa.concat_tables(
        [
            rows.append_column(VALUE_KIND, pa.array(np.full(rows.num_rows, kind, np.int8))).append_column(
                "_rank", pa.array(np.full(rows.num_rows, rank, np.int8))
            )
            for rows, kind, rank in parts
        ]
    )
    return _by_key(out, [*keys, "_rank"]).drop_columns(["_rank"])


def lookup_changes(
    before: pa.Table,
    after: pa.Table,
    touched: pa.Table | None,
    keys: list[str],
    options: Mapping[str, str],
    first_row: bool,
) -> pa.Table:
    """The changelog of a compaction of level-0 files by lookup, in key order, with
    ``_VALUE_KIND``: ``before`` holds each key's row above level 0 (at most one), ``after``
    the merged rows the compaction writes, ``touched`` the keys of its level-0 files. As
    Paimon's ``LookupChangelogMergeFunctionWrapper``, a touched key gives ``+I`` if it had
    no row and now has one, ``-D`` (its old row) if it had one and is deleted, ``-U``/``+U``
    if both (nothing, with ``changelog-producer.row-deduplicate``, if no value changed),
    and nothing for a delete of a key it did not have. A first-row table's keep their
    first row (``FirstRowMergeFunctionWrapper``): only a key new to the table gives ``+I``.
    ``touched`` None: every key of ``after`` is touched (and ``after`` is in key order, as a
    merge gives it), so a compaction that found nothing above is all ``+I`` without a join."""
    if touched is None and before.num_rows == 0:
        return after.append_column(VALUE_KIND, pa.array(np.full(after.num_rows, INSERT, np.int8)))
    if touched is None:
        touched = after.select(keys)
    if not first_row:
        return full_compaction_changes(before, after, touched, keys, options)
    touched = touched.select(keys).group_by(keys).aggregate([])
    inserted = _semi(_semi(after, touched, keys, keep=True), before, keys, keep=False)
    inserted = inserted.append_column(VALUE_KIND, pa.array(np.full(inserted.num_rows, INSERT, np.int8)))
    return _by_key(inserted, keys)


def as_schema(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` (the columns of ``schema``, in its types) under ``schema``: reads of
    stored and merged rows may differ in nullability, which concatenation refuses."""
    return pa.Table.from_arrays([c.cast(f.type) for c, f in zip(table.columns, schema, strict=True)], schema=schema)


def merged_rows(merged: list[pa.RecordBatch], schema: pa.Schema) -> pa.Table:
    """A compaction's merged batches as a table of ``schema``'s columns (they may also
    carry system columns, and differ from it in nullability)."""
    if not merged:
        return schema.empty_table()
    return as_schema(pa.Table.from_batches(merged).select(schema.names), schema)


def first_of_each_key(tables: list[pa.Table], keys: list[str], schema: pa.Schema) -> pa.Table:
    """The rows of ``tables`` (each under ``schema``, lowest level first), of each key the
    first met: the key's row as Paimon's ``LookupMergeFunction`` picks it above level 0."""
    if not tables:
        return schema.empty_table()
    rows = pa.concat_tables(tables)
    numbered = rows.select(keys).append_column("_position", pa.array(np.arange(rows.num_rows, dtype=np.int64)))
    first = numbered.group_by(keys, use_threads=False).aggregate([("_position", "min")])
    return rows.take(first.column("_position_min"))


def _semi(rows: pa.Table, other: pa.Table, keys: list[str], keep: bool) -> pa.Table:
    """The rows of ``rows`` whose key ``other`` has (``keep``) or has not: joined on the
    keys alone, then taken by position, so that no value column goes through the join."""
    numbered = rows.select(keys).append_column("_position", pa.array(np.arange(rows.num_rows, dtype=np.int64)))
    found = numbered.join(other.select(keys), keys, join_type="left semi" if keep else "left anti")
    return rows.take(found.column("_position"))  # in no order: the caller sorts


def _by_key(rows: pa.Table, columns: list[str]) -> pa.Table:
    """``rows`` in Paimon's order of ``columns``."""
    ordered = pa.table({f"c{i}": _key_order.ordered(rows.column(c).combine_chunks()) for i, c in enumerate(columns)})
    return rows.take(pc.sort_indices(ordered, [(f"c{i}", "ascending") for i in range(len(columns))]))


def _differs(old: pa.Table, new: pa.Table, columns: list[str]) -> pa.Array:
    """For aligned rows, whether any of ``columns`` differs (two nulls are equal)."""
    changed = pa.array(np.zeros(old.num_rows, bool))
    for c in columns:
        a, b = old.column(c).combine_chunks(), new.column(c).combine_chunks()
        try:
            same = pc.fill_null(pc.equal(a, b), False)
        except (pa.ArrowNotImplementedError, pa.ArrowTypeError):  # nested values: compared as Python values
            same = pa.array([x == y for x, y in zip(a.to_pylist(), b.to_pylist(), strict=True)])
        same = pc.or_(same, pc.and_(a.is_null(), b.is_null()))
        changed = pc.or_(changed, pc.invert(same))
    return changed
