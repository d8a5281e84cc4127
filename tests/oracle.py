"""A plain-Python model of the merge contract, written for clarity only: Paimon's read
path transcribed step by step (docs/semantics.md cites the Java classes it follows).

Rows are dicts; runs are lists of rows (oldest run first). The model sorts every row by
(key, version), groups by key, drops retracts under ``ignore_delete``, passes a lone
version through untouched, folds two versions or more with the merge function (one
aggregator object per column, reset per key, as Paimon's ``FieldAggregator``s), and
keeps only rows whose kind is an add, as ``+I`` (with ``drop_deletes=False``, what
Paimon's compaction below the top level writes: every row with the kind Paimon's
merge gives it, retracts included).
"""

from __future__ import annotations

import itertools
import math
import struct
from collections.abc import Callable
from typing import Any

KINDS = ["+I", "-U", "+U", "-D"]
INT64 = (-(2**63), 2**63 - 1)


class RetractError(Exception):
    """The merge function cannot take a retract: the real merge must raise."""


class OverflowError_(Exception):
    """An integer aggregate leaves its type: the real merge must raise."""


class DivisionError_(Exception):
    """A product retract divides by zero: the real merge must raise."""


def is_retract(kind: Any) -> bool:
    return kind in ("-U", "-D", 1, 3)


def is_delete(kind: Any) -> bool:
    return kind in ("-D", 3)


def total_order_f64(x: float) -> int:
    """IEEE 754 totalOrder of a double, as an int (what Rust's f64::total_cmp uses)."""
    (bits,) = struct.unpack("<q", struct.pack("<d", x))
    return bits ^ ((bits >> 63) & 0x7FFF_FFFF_FFFF_FFFF)


def total_order_f32(x: float) -> int:
    (bits,) = struct.unpack("<i", struct.pack("<f", x))
    return bits ^ ((bits >> 31) & 0x7FFF_FFFF)


def to_f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def java_order(v: Any) -> Any:
    """Java's order of keys and for min/max: floats by Double.compare (-0.0 < 0.0, every NaN
    one value, the largest)."""
    if isinstance(v, float):
        return (1, 0.0) if math.isnan(v) else (0, total_order_f64(v))
    return v


def merge(
    runs: list[list[dict]],
    key: list[str],
    sequence: list[str] = (),
    row_kind: str | None = None,
    merge: str = "deduplicate",
    key_order: Callable[[Any], Any] = lambda v: v,
    sequence_order: str = "ascending",
    system_sequence: str | None = None,
    **options: Any,
) -> list[dict]:
    """The expected output rows of merging ``runs`` (``options``: the merge function's)."""

    def kind(row: dict) -> Any:
        return row[row_kind] if row_kind else "+I"

    def seq_value(v: Any) -> tuple:
        # A null is older than any value, in either direction.
        if v is None:
            return (0, 0)
        return (1, -v if sequence_order == "descending" else v)

    def order(item: tuple[int, int, dict]) -> tuple:
        run, pos, row = item
        version = tuple(seq_value(row[s]) for s in sequence)
        if system_sequence:
            version += (row[system_sequence], not is_retract(kind(row)))
        return (tuple(key_order(row[c]) for c in key), version + (run, pos))

    items = [(r, p, row) for r, rows in enumerate(runs) for p, row in enumerate(rows)]
    items.sort(key=order)
    first = next((row for rows in runs for row in rows), {})
    value_columns = [c for c in first if c not in key and c != row_kind and c != system_sequence]
    out = []
    ignore_delete = options.pop("ignore_delete", False)
    keep_kinds = not options.pop("drop_deletes", True)
    for _, group in itertools.groupby(items, key=lambda it: order(it)[0]):
        rows = [row for _, _, row in group]
        if merge == "none":
            out.extend(rows)
            continue
        if ignore_delete:
            rows = [r for r in rows if not is_retract(kind(r))]
        if not rows:
            continue
        if len(rows) == 1:  # passed through untouched
            folded, folded_kind = rows[0], KINDS[_code(kind(rows[0]))]
        else:
            result = FOLDS[merge](rows, kind, value_columns, sequence=list(sequence), **options)
            if result is None:
                continue
            folded, folded_kind = result
            folded = {**rows[-1], **folded}
        if is_retract(folded_kind) and not keep_kinds:
            continue
        if not keep_kinds:
            folded_kind = "+I"
        folded = dict(folded)
        if row_kind:
            folded[row_kind] = _same_representation(kind(rows[0]), folded_kind)
        out.append(folded)
    return out


def deduplicate(rows, kind, _columns, sequence=()):
    newest = rows[-1]
    return newest, KINDS[_code(kind(newest))]


def first_row(rows, kind, _columns, sequence=()):
    if any(is_retract(kind(r)) for r in rows):
        raise RetractError
    return rows[0], KINDS[_code(kind(rows[0]))]


# -- aggregators (Paimon's FieldAggregator: agg, retract, agg_reversed, reset per key) --


class Aggregator:
    retracts = False

    def __init__(self, delimiter=",", distinct=False, int_range=INT64, float32=False, set_semantics=True):
        self.delimiter, self.distinct = delimiter, distinct
        self.int_range, self.float32, self.set_semantics = int_range, float32, set_semantics
        self.initialized = False

    def agg(self, acc, x):
        raise NotImplementedError

    def agg_reversed(self, acc, x):
        return self.agg(x, acc)

    def retract(self, acc, x):
        raise RetractError

    def number(self, v):
        if isinstance(v, float):
            return to_f32(v) if self.float32 else v
        if not self.int_range[0] <= v <= self.int_range[1]:
            raise OverflowError_
        return v


class Sum(Aggregator):
    def agg(self, acc, x):
        if acc is None or x is None:
            return x if acc is None else acc
        return self.number(acc + x)

    def retract(self, acc, x):
        if acc is None:
            return None if x is None else self.number(-x)
        if x is None:
            return acc
        return self.number(acc - x)


class Product(Aggregator):
    def agg(self, acc, x):
        if acc is None or x is None:
            return x if acc is None else acc
        return self.number(acc * x)

    def retract(self, acc, x):
        if acc is None or x is None:
            return acc
        if isinstance(acc, float):
            return self.number(acc / x)
        if x == 0:
            raise DivisionError_
        q = abs(acc) // abs(x)  # truncating division, as Java's
        return self.number(q if (acc >= 0) == (x >= 0) else -q)


class Min(Aggregator):
    def agg(self, acc, x):
        if acc is None or x is None:
            return x if acc is None else acc
        return acc if java_order(acc) < java_order(x) else x


class Max(Aggregator):
    def agg(self, acc, x):
        if acc is None or x is None:
            return x if acc is None else acc
        return x if java_order(acc) < java_order(x) else acc


class LastValue(Aggregator):
    def agg(self, acc, x):
        return x

    def retract(self, acc, x):
        return None


class LastNonNullValue(Aggregator):
    def agg(self, acc, x):
        return acc if x is None else x

    def retract(self, acc, x):
        return None if x is not None else acc


class FirstValue(Aggregator):
    def agg(self, acc, x):
        if not self.initialized:
            self.initialized = True
            return x
        return acc


class FirstNonNullValue(Aggregator):
    def agg(self, acc, x):
        if not self.initialized and x is not None:
            self.initialized = True
            return x
        return acc


def _blank(s: str) -> bool:
    return all(c in " \t\n\x0b\x0c\r\x1c\x1d\x1e\x1f" or (c.isspace() and c not in "\xa0\u2007\u202f\x85") for c in s)


class ListAgg(Aggregator):
    def agg(self, acc, x):
        if x is None or _blank(x):
            return acc
        if acc is None or _blank(acc):
            return x
        if not self.distinct:
            return acc + self.delimiter + x
        seen = acc.split(self.delimiter)
        for token in x.split(self.delimiter):
            if not _blank(token) and token not in seen:
                seen.append(token)
                acc += self.delimiter + token
        return acc


class BoolAnd(Aggregator):
    def agg(self, acc, x):
        return (x if acc is None else acc) if acc is None or x is None else acc and x


class BoolOr(Aggregator):
    def agg(self, acc, x):
        return (x if acc is None else acc) if acc is None or x is None else acc or x


class Collect(Aggregator):
    def agg(self, acc, x):
        if acc is None and x is None:
            return None
        if (acc is None or x is None) and not self.distinct:
            return x if acc is None else acc
        if not self.distinct:
            return list(acc) + list(x)
        out = []
        for e in acc or []:
            if not self.set_semantics or e not in out:
                out.append(e)
        for e in x or []:
            if e not in out:
                out.append(e)
        return out

    def retract(self, acc, x):
        if acc is None:
            return None
        if not x:
            return acc
        out = list(acc)
        for e in x:
            if e in out:
                out.remove(e)
        return out


class MergeMap(Aggregator):
    def agg(self, acc, x):
        if acc is None or x is None:
            return x if acc is None else acc
        return _map_put(_map_put([], acc), x)

    def retract(self, acc, x):
        if acc is None:
            return None
        if not x:
            return acc
        gone = {k for k, _ in x}
        return _map_put([], [(k, v) for k, v in acc if k not in gone])


def _map_put(entries: list, more: list) -> list:
    """Map entries as (key, value) pairs; a later entry replaces an equal key's in place."""
    out = list(entries)
    for k, v in more:
        at = next((i for i, (have, _) in enumerate(out) if have == k), None)
        if at is None:
            out.append((k, v))
        else:
            out[at] = (k, v)
    return out


class IgnoreRetract(Aggregator):
    def __init__(self, inner: Aggregator):
        super().__init__()
        self.inner = inner

    def agg(self, acc, x):
        return self.inner.agg(acc, x)

    def retract(self, acc, x):
        return acc


class_of = {
    "sum": Sum,
    "product": Product,
    "min": Min,
    "max": Max,
    "last_value": LastValue,
    "last_non_null_value": LastNonNullValue,
    "first_value": FirstValue,
    "first_non_null_value": FirstNonNullValue,
    "listagg": ListAgg,
    "bool_and": BoolAnd,
    "bool_or": BoolOr,
    "collect": Collect,
    "merge_map": MergeMap,
}


def aggregator(spec: Any, int_range=INT64, float32=False) -> Aggregator:
    spec = {"function": spec} if isinstance(spec, str) else dict(spec)
    made = class_of[spec["function"]](
        spec.get("delimiter", ","), spec.get("distinct", False), int_range, float32, spec.get("set_semantics", True)
    )
    return IgnoreRetract(made) if spec.get("ignore_retract") else made


def _ranges(columns, int_range, int_ranges):
    return {c: (int_ranges or {}).get(c, int_range) for c in columns}


def aggregate(
    rows,
    kind,
    columns,
    fields=None,
    default="last_non_null_value",
    remove_record_on_delete=False,
    sequence=(),
    int_range=INT64,
    int_ranges=None,
    float32=(),
):
    """Paimon's AggregateMergeFunction: every column folded, retracts included."""
    fields = dict(fields or {})
    ranges = _ranges(columns, int_range, int_ranges)
    aggs = {
        c: aggregator("last_value" if c in sequence else fields.get(c, default), ranges[c], c in float32)
        for c in columns
    }
    row = dict.fromkeys(columns)
    deleted = False
    for r in rows:
        deleted = remove_record_on_delete and is_delete(kind(r))
        if deleted:
            row = {c: r[c] for c in columns}
            continue
        for c, agg in aggs.items():
            row[c] = agg.retract(row[c], r[c]) if is_retract(kind(r)) else agg.agg(row[c], r[c])
    return row, ("-D" if deleted else "+I")


def partial_update(
    rows,
    kind,
    columns,
    remove_record_on_delete=False,
    sequence_groups=None,
    fields=None,
    default=None,
    remove_record_on_sequence_group=(),
    sequence=(),
    int_range=INT64,
    int_ranges=None,
    float32=(),
):
    """Paimon's PartialUpdateMergeFunction, column loop and all."""
    groups = []  # (ordering columns, protected columns, removes the row)
    group_of = {}
    for ordering, protected in (sequence_groups or {}).items():
        ordering = [ordering] if isinstance(ordering, str) else list(ordering)
        groups.append((ordering, list(protected), any(o in remove_record_on_sequence_group for o in ordering)))
        for c in ordering + list(protected):
            group_of[c] = len(groups) - 1
    ranges = _ranges(columns, int_range, int_ranges)
    aggs = {}
    for c in columns:
        spec = (fields or {}).get(c, default)
        if spec is not None and not (c in group_of and c in groups[group_of[c]][0]):
            aggs[c] = aggregator(spec, ranges[c], c in float32)
    row = dict.fromkeys(columns)
    filled = inserted = deleted = False

    def turn(r, g):
        ordering = groups[g][0]
        if all(r[o] is None for o in ordering):
            return "skip"
        mine = tuple((0,) if r[o] is None else (1, java_order(r[o])) for o in ordering)
        have = tuple((0,) if row[o] is None else (1, java_order(row[o])) for o in ordering)
        return "newer" if mine >= have else "older"

    for r in rows:
        deleted = False
        if is_retract(kind(r)):
            if not filled:
                row, filled = {c: r[c] for c in columns}, True
            if groups:
                turns = [turn(r, g) for g in range(len(groups))]
                if is_delete(kind(r)) and any(g[2] and t == "newer" for g, t in zip(groups, turns, strict=True)):
                    row, deleted = {c: r[c] for c in columns}, True
                    continue
                for c in columns:
                    if c not in group_of or turns[group_of[c]] == "skip":
                        continue
                    t, ordering = turns[group_of[c]], c in groups[group_of[c]][0]
                    if c in aggs:
                        row[c] = aggs[c].retract(row[c], r[c])
                    elif t == "newer":
                        row[c] = r[c] if ordering else None
                continue
            if remove_record_on_delete:
                if is_delete(kind(r)):
                    row, deleted = {c: r[c] for c in columns}, True
                continue
            raise RetractError
        if not groups:
            row.update({c: r[c] for c in columns if r[c] is not None})
        else:
            turns = [turn(r, g) for g in range(len(groups))]
            for c in columns:
                if c not in group_of:
                    if r[c] is not None:
                        row[c] = r[c]
                    continue
                t = turns[group_of[c]]
                if t == "skip":
                    continue
                if c in aggs:
                    row[c] = aggs[c].agg(row[c], r[c]) if t == "newer" else aggs[c].agg_reversed(row[c], r[c])
                elif t == "newer":
                    row[c] = r[c]
        inserted = filled = True
    return row, ("-D" if deleted or not inserted else "+I")


FOLDS = {"deduplicate": deduplicate, "first-row": first_row, "partial-update": partial_update, "aggregate": aggregate}
ERRORS = (RetractError, OverflowError_, DivisionError_)


def expected_or_error(*args: Any, **kwargs: Any) -> list[dict] | None:
    """:func:`merge`, or ``None`` where the real merge must fail."""
    try:
        return merge(*args, **kwargs)
    except ERRORS:
        return None


def _code(kind: Any) -> int:
    """A row kind as its code (0..3), from either representation."""
    return KINDS.index(kind) if isinstance(kind, str) else int(kind)


def _same_representation(example: Any, kind: str) -> Any:
    return kind if isinstance(example, str) else KINDS.index(kind)
