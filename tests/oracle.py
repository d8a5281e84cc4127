"""A plain-Python model of the merge contract in DESIGN.md, written for clarity only.

Rows are dicts; runs are lists of rows (oldest run first). The model sorts every row by
(key, version), groups by key and folds each group, exactly as the contract reads.
"""

from __future__ import annotations

import functools
import itertools
import struct
from collections.abc import Callable
from typing import Any

KINDS = ["+I", "-U", "+U", "-D"]


def is_retract(kind: Any) -> bool:
    return kind in ("-U", "-D", 1, 3)


def total_order_f64(x: float) -> int:
    """IEEE 754 totalOrder of a double, as an int (what Rust's f64::total_cmp uses)."""
    (bits,) = struct.unpack("<q", struct.pack("<d", x))
    return bits ^ ((bits >> 63) & 0x7FFF_FFFF_FFFF_FFFF)


def total_order_f32(x: float) -> int:
    (bits,) = struct.unpack("<i", struct.pack("<f", x))
    return bits ^ ((bits >> 31) & 0x7FFF_FFFF)


def merge(
    runs: list[list[dict]],
    key: list[str],
    sequence: list[str] = (),
    row_kind: str | None = None,
    merge: str = "deduplicate",
    key_order: Callable[[Any], Any] = lambda v: v,
    **options: Any,
) -> list[dict]:
    """The expected output rows of merging ``runs`` (``options``: the merge function's)."""

    def kind(row: dict) -> Any:
        return row[row_kind] if row_kind else "+I"

    def order(item: tuple[int, int, dict]) -> tuple:
        run, pos, row = item
        k = tuple(key_order(row[c]) for c in key)
        if sequence:
            version = (tuple(row[s] for s in sequence), not is_retract(kind(row)), run, pos)
        else:
            version = (run, pos)
        return (k, version)

    items = [(r, p, row) for r, rows in enumerate(runs) for p, row in enumerate(rows)]
    items.sort(key=order)
    first = next((row for rows in runs for row in rows), {})
    value_columns = [c for c in first if c not in key and c != row_kind]
    if merge == "aggregate":
        options = {"sequence": list(sequence), **options}
    out = []
    for _, group in itertools.groupby(items, key=lambda it: order(it)[0]):
        rows = [row for _, _, row in group]
        if merge == "none":
            out.extend(rows)
            continue
        folded = FOLDS[merge](rows, kind, value_columns, **options)
        if folded is None:
            continue
        folded = dict(folded)
        if row_kind:
            folded[row_kind] = _same_representation(kind(rows[0]), folded.pop("__kind__", "+I"))
        folded.pop("__kind__", None)
        out.append(folded)
    return out


class RetractError(Exception):
    """The merge function cannot take a retract: the real merge must raise."""


class OverflowError_(Exception):
    """An integer aggregate leaves its type: the real merge must raise."""


def deduplicate(rows, kind, _columns, ignore_delete=False, drop_deletes=True):
    if ignore_delete:
        rows = [r for r in rows if not is_retract(kind(r))]
    if not rows:
        return None
    newest = rows[-1]
    if is_retract(kind(newest)):
        return None if drop_deletes else {**newest, "__kind__": "-D"}
    return newest


def first_row(rows, kind, _columns, ignore_delete=False):
    if not ignore_delete and any(is_retract(kind(r)) for r in rows):
        raise RetractError
    adds = [r for r in rows if not is_retract(kind(r))]
    return adds[0] if adds else None


def after_last_delete(rows, kind):
    deletes = [i for i, r in enumerate(rows) if kind(r) in ("-D", 3)]
    return rows[deletes[-1] + 1 :] if deletes else rows


def partial_update(rows, kind, columns, ignore_delete=False, remove_record_on_delete=False):
    if not ignore_delete and not remove_record_on_delete and any(is_retract(kind(r)) for r in rows):
        raise RetractError
    if remove_record_on_delete and not ignore_delete:
        rows = after_last_delete(rows, kind)
    adds = [r for r in rows if not is_retract(kind(r))]
    if not adds:
        return None
    out = dict(adds[-1])
    for c in columns:
        out[c] = next((r[c] for r in reversed(adds) if r[c] is not None), None)
    return out


RETRACTABLE = {"sum", "last_value", "last_non_null_value"}


def aggregate(
    rows,
    kind,
    columns,
    fields=None,
    default="last_non_null_value",
    remove_record_on_delete=False,
    sequence=(),
    int_range=(-(2**63), 2**63 - 1),
):
    fields = {c: (f if isinstance(f, dict) else {"function": f}) for c, f in (fields or {}).items()}
    # A sequence column is not aggregated: it takes the newest version's value, retract or not.
    spec = {c: fields.get(c, {"function": default}) for c in columns if c not in sequence}
    if remove_record_on_delete:
        rows = after_last_delete(rows, kind)
    for f in spec.values():
        if f["function"] not in RETRACTABLE and not f.get("ignore_retract") and any(is_retract(kind(r)) for r in rows):
            raise RetractError
    adds = [r for r in rows if not is_retract(kind(r))]
    if not adds:
        return None
    out = dict(adds[-1])
    for c, f in spec.items():
        out[c] = _aggregate_column(c, f, rows, kind, int_range)
    for c in sequence:
        out[c] = rows[-1][c]
    return out


def _aggregate_column(c, f, rows, kind, int_range):
    name, ignore = f["function"], f.get("ignore_retract", False)
    live = [r for r in rows if not (ignore and is_retract(kind(r)))]
    adds = [r for r in live if not is_retract(kind(r))]
    values = [r[c] for r in adds if r[c] is not None]
    result = None
    if name == "sum":
        signed = [(-r[c] if is_retract(kind(r)) else r[c]) for r in live if r[c] is not None]
        result = sum(signed) if signed else None
    elif name == "product":
        result = None if not values else functools.reduce(lambda a, b: a * b, values)
    elif name in ("min", "max"):
        result = (min if name == "min" else max)(values) if values else None
    elif name == "first_value":
        result = adds[0][c]
    elif name == "first_non_null_value":
        result = values[0] if values else None
    elif name == "last_value":
        for r in live:
            result = None if is_retract(kind(r)) else r[c]
    elif name == "last_non_null_value":
        for r in live:
            if r[c] is not None:
                result = None if is_retract(kind(r)) else r[c]
    elif name == "listagg":
        result = f.get("delimiter", ",").join(values) if values else None
    elif name == "bool_and":
        result = all(values) if values else None
    elif name == "bool_or":
        result = any(values) if values else None
    if isinstance(result, int) and not isinstance(result, bool) and not int_range[0] <= result <= int_range[1]:
        raise OverflowError_
    return result


FOLDS = {"deduplicate": deduplicate, "first-row": first_row, "partial-update": partial_update, "aggregate": aggregate}


def _same_representation(example: Any, kind: str) -> Any:
    return kind if isinstance(example, str) else KINDS.index(kind)
