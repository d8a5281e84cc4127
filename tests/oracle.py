"""A plain-Python model of the merge contract in DESIGN.md, written for clarity only.

Rows are dicts; runs are lists of rows (oldest run first). The model sorts every row by
(key, version), groups by key and folds each group, exactly as the contract reads.
"""

from __future__ import annotations

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
    ignore_delete: bool = False,
    drop_deletes: bool = True,
    key_order: Callable[[Any], Any] = lambda v: v,
) -> list[dict]:
    """The expected output rows of merging ``runs``."""

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
    out = []
    for _, group in itertools.groupby(items, key=lambda it: order(it)[0]):
        rows = [row for _, _, row in group]
        if merge == "none":
            out.extend(rows)
            continue
        if ignore_delete:
            rows = [r for r in rows if not is_retract(kind(r))]
        if not rows:
            continue
        newest = dict(rows[-1])
        if is_retract(kind(newest)):
            if drop_deletes:
                continue
            newest[row_kind] = _same_representation(kind(newest), "-D")
        elif row_kind:
            newest[row_kind] = _same_representation(kind(newest), "+I")
        out.append(newest)
    return out


def _same_representation(example: Any, kind: str) -> Any:
    return kind if isinstance(example, str) else KINDS.index(kind)
