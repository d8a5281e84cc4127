"""Choosing what a compaction merges: the buckets to rewrite, as tasks a driver plans
and any worker runs (``Table.compact_bucket``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import InvalidInputError
from ._options import int_option
from ._schema import TableSchema


@dataclass(frozen=True)
class CompactTask:
    """One bucket's files (their manifest entries) to merge into one file at ``level``,
    deletes dropped. Picklable: the unit of work of a compaction."""

    snapshot: int
    partition: bytes
    bucket: int
    total_buckets: int
    level: int
    entries: tuple[dict[str, Any], ...]


def compaction_tasks(
    entries: list[dict[str, Any]],
    snapshot: int,
    schema: TableSchema,
    full: bool,
    marked: frozenset[tuple[bytes, int]] = frozenset(),
) -> list[CompactTask]:
    """A task for each bucket of the live ``entries`` that needs compacting, in
    (partition, bucket) order; a full compaction also rewrites the buckets whose rows
    deletion vectors hide (``marked``: their (partition, bucket))."""
    top = top_level(schema)
    trigger = int_option(schema.options, "num-sorted-run.compaction-trigger", 5)
    by_bucket: dict[tuple[bytes, int], list[dict[str, Any]]] = {}
    for e in entries:
        by_bucket.setdefault((e["_PARTITION"], e["_BUCKET"]), []).append(e)
    return [
        CompactTask(snapshot, partition, bucket, group[0]["_TOTAL_BUCKETS"], top, tuple(group))
        for (partition, bucket), group in sorted(by_bucket.items())
        if _needs_compaction([e["_FILE"] for e in group], top, full, trigger)
        or (full and (partition, bucket) in marked)
    ]


def top_level(schema: TableSchema) -> int:
    """The highest level of the table's LSM tree: ``num-levels`` - 1, by default one more
    level than ``num-sorted-run.compaction-trigger`` runs (5), as in Paimon, whose
    levels start at 0 and number two at least."""
    options = schema.options
    trigger = int_option(options, "num-sorted-run.compaction-trigger", 5)
    if "num-levels" in options:
        return int_option(options, "num-levels", 0, minimum=2) - 1
    if trigger < 1:
        raise InvalidInputError(
            f"option 'num-sorted-run.compaction-trigger' must be at least 1 without 'num-levels' (the table then "
            f"has that many levels plus one, and needs two), got {trigger}"
        )
    return trigger


def _needs_compaction(files: list[dict[str, Any]], top: int, full: bool, trigger: int) -> bool:
    if full:
        return len(files) > 1 or files[0]["_LEVEL"] != top or bool(files[0].get("_DELETE_ROW_COUNT"))
    runs = sum(f["_LEVEL"] == 0 for f in files) + len({f["_LEVEL"] for f in files if f["_LEVEL"] > 0})
    return runs >= trigger
