"""Choosing what a compaction merges: in each bucket, the sorted runs Paimon's universal
compaction picks (``_universal``), as tasks a driver plans and any worker runs
(``Table.compact_bucket``); a full compaction takes every bucket whole, into the top
level."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidInputError
from ._options import bool_option, int_option
from ._schema import TableSchema
from ._universal import SortedRun, Universal, pick


@dataclass(frozen=True)
class CompactTask:
    """One bucket's files (their manifest entries) to merge into one file at ``level``,
    deletes dropped if ``drop_deletes`` (else kept, with their sequence numbers, for the
    older rows below). ``kept``: the names of the bucket's other files above level 0,
    which the compaction leaves. Picklable: the unit of work of a compaction."""

    snapshot: int
    partition: bytes
    bucket: int
    total_buckets: int
    level: int
    entries: tuple[dict[str, Any], ...]
    drop_deletes: bool = True
    kept: tuple[str, ...] = ()


def compaction_tasks(
    entries: list[dict[str, Any]],
    snapshot: int,
    schema: TableSchema,
    full: bool,
    marked: frozenset[tuple[bytes, int]] = frozenset(),
    lookup: bool = False,
) -> list[CompactTask]:
    """A task for each bucket of the live ``entries`` that needs compacting, in
    (partition, bucket) order: ``full``, the whole bucket into the top level unless it
    is one top-level file without retracts (or its rows are hidden by deletion vectors:
    ``marked``, the (partition, bucket) of each); otherwise the runs Paimon's universal
    compaction picks (``lookup``: a deletion-vector or first-row table, see
    :func:`_universal_task`)."""
    by_bucket: dict[tuple[bytes, int], list[dict[str, Any]]] = {}
    for e in entries:
        by_bucket.setdefault((e["_PARTITION"], e["_BUCKET"]), []).append(e)
    if full:
        tasks = []
        for (partition, bucket), group in sorted(by_bucket.items()):
            top = top_level(schema, (e["_FILE"]["_LEVEL"] for e in group))
            if _needs_full_compaction([e["_FILE"] for e in group], top) or (partition, bucket) in marked:
                tasks.append(CompactTask(snapshot, partition, bucket, group[0]["_TOTAL_BUCKETS"], top, tuple(group)))
        return tasks
    picked = (_universal_task(snapshot, schema, group, lookup) for _, group in sorted(by_bucket.items()))
    return [task for task in picked if task is not None]


def written_tasks(
    live: list[dict[str, Any]], written: list[dict[str, Any]], snapshot: int, schema: TableSchema
) -> list[CompactTask]:
    """What a write compacts before it commits, as Paimon's ``MergeTreeWriter`` does once
    its level-0 files are flushed (``triggerCompaction``, then a batch write waits for it):
    in each bucket the write touched, the universal pick of its ``live`` files (manifest
    entries) with the ``written`` ones added. The pick may take the written files: the
    commit adds them (APPEND), then replaces them (COMPACT)."""
    touched = {(e["_PARTITION"], e["_BUCKET"]) for e in written}
    entries = [e for e in live if (e["_PARTITION"], e["_BUCKET"]) in touched] + written
    return compaction_tasks(entries, snapshot, schema, full=False)


def write_only(options: dict[str, str]) -> bool:
    """Paimon's ``write-only`` (older name ``write.compaction-skip``): writes never compact,
    a dedicated compaction job (``Table.compact``) does."""
    return bool_option(options, "write-only", bool_option(options, "write.compaction-skip"))


def bucket_runs(group: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """A bucket's files (manifest entries) as Paimon's ``Levels`` lists its sorted runs:
    each level-0 file alone, newest (largest maximum sequence number) first, then the
    files of each level above, lowest level first."""
    zero = sorted((e for e in group if e["_FILE"]["_LEVEL"] == 0), key=_level_zero_order)
    levels = sorted({e["_FILE"]["_LEVEL"] for e in group} - {0})
    return [[e] for e in zero] + [[e for e in group if e["_FILE"]["_LEVEL"] == lv] for lv in levels]


def _level_zero_order(entry: dict[str, Any]) -> tuple:
    """``Levels``' order of level-0 files: maximum sequence number descending, then
    minimum sequence number, creation time and name ascending."""
    f = entry["_FILE"]
    created = f.get("_CREATION_TIME")
    return (-f["_MAX_SEQUENCE_NUMBER"], f["_MIN_SEQUENCE_NUMBER"], _epoch_ms(created) or 0, f["_FILE_NAME"])


def _universal_task(
    snapshot: int, schema: TableSchema, group: list[dict[str, Any]], lookup: bool
) -> CompactTask | None:
    """The task of a bucket's universal pick (None: nothing to compact), with Paimon's
    ``MergeTreeCompactManager`` rules: a pick of one file already at its output level is
    no compaction; deletes are dropped when the output is the bucket's highest level (or
    any level above 0 with deletion vectors). ``lookup``: a deletion-vector or first-row
    table, whose level-0 runs are forced up when nothing else is picked."""
    runs = bucket_runs(group)
    num_levels = top_level(schema, (e["_FILE"]["_LEVEL"] for e in group)) + 1
    last_full = last_full_compaction(schema, ((e["_FILE"]["_LEVEL"], e["_FILE"].get("_CREATION_TIME")) for e in group))
    unit = pick(num_levels, [_sorted_run(run) for run in runs], pick_rules(schema, last_full, lookup))
    if unit is None:
        return None
    picked = [e for run in runs[: unit.runs] for e in run]
    if len(picked) == 1 and picked[0]["_FILE"]["_LEVEL"] == unit.level:
        return None
    highest = runs[-1][0]["_FILE"]["_LEVEL"]
    drop = unit.level != 0 and (unit.level >= highest or bool_option(schema.options, "deletion-vectors.enabled"))
    level = unit.level
    if unit.runs < len(runs) and _needs_whole_bucket(picked, lookup):
        picked, level, drop = group, num_levels - 1, True
    names = {e["_FILE"]["_FILE_NAME"] for e in picked}
    kept = sorted(
        e["_FILE"]["_FILE_NAME"] for e in group if e["_FILE"]["_LEVEL"] > 0 and e["_FILE"]["_FILE_NAME"] not in names
    )
    first = group[0]
    return CompactTask(
        snapshot,
        first["_PARTITION"],
        first["_BUCKET"],
        first["_TOTAL_BUCKETS"],
        level,
        tuple(picked),
        drop,
        tuple(kept),
    )


def _sorted_run(run: list[dict[str, Any]]) -> SortedRun:
    return SortedRun(run[0]["_FILE"]["_LEVEL"], sum(e["_FILE"]["_FILE_SIZE"] for e in run))


def pick_rules(schema: TableSchema, last_full: int | None, lookup: bool) -> Universal:
    """The rules of a bucket's pick, last fully compacted at ``last_full`` (epoch ms);
    ``lookup``: a lookup table's, whose level-0 runs are forced up when nothing else is
    picked (Paimon's ``ForceUpLevel0Compaction``)."""
    rules = Universal.of(schema.options, last_full=last_full)
    return dataclasses.replace(rules, force_up_level_0=True) if lookup else rules


def last_full_compaction(schema: TableSchema, files: Iterable[tuple[int, Any]]) -> int | None:
    """When a bucket was last fully compacted, as Paimon's writer estimates it when it
    starts: the newest creation time (epoch ms) of its ``files`` (level, creation time)
    at the table's top level. Paimon takes that level from the options alone, not from
    the bucket's files as its ``Levels`` does."""
    top = top_level(schema)
    times = [_epoch_ms(created) for level, created in files if level == top]
    return max((t for t in times if t is not None), default=None)


def _needs_whole_bucket(picked: list[dict[str, Any]], lookup: bool) -> bool:
    """Whether a pick that leaves runs out must take the whole bucket into the top level
    instead, because merge-core's merge of it would not be Paimon's: on a lookup table,
    level-0 files go up only by lookup (Paimon's ``LookupMergeTreeCompactRewriter`` marks
    or drops the rows they replace above), which ``compact()`` does not do: the whole
    bucket leaves nothing above to look up. (Below the top level, retracts and row kinds
    are kept as Paimon keeps them: ``Table._compact_task``.)"""
    return lookup and any(e["_FILE"]["_LEVEL"] == 0 for e in picked)


def _epoch_ms(created: Any) -> int | None:
    """A file's creation time (Paimon's local timestamp) in epoch milliseconds, as
    Paimon's ``creationTimeEpochMillis`` reads it in the local time zone."""
    if created is None:
        return None
    if not isinstance(created, datetime.datetime):
        created = datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=int(created))
    return int(created.replace(tzinfo=None).timestamp() * 1000)


def top_level(schema: TableSchema, levels: Iterable[int] = ()) -> int:
    """The highest level of a bucket's LSM tree, as Paimon's ``Levels`` counts it: the
    table's, ``num-levels`` - 1 (by default one more level than
    ``num-sorted-run.compaction-trigger`` runs, 5), unless a file of the bucket
    (``levels``: its files' levels) is higher. A writer with more levels (an earlier
    ``num-levels`` or trigger, pypaimon, Java) may have left files there; the tree then
    grows to hold them, and its compactions to the top write at their level."""
    options = schema.options
    trigger = int_option(options, "num-sorted-run.compaction-trigger", 5)
    if "num-levels" in options:
        configured = int_option(options, "num-levels", 0, minimum=2) - 1
    elif trigger < 1:
        raise InvalidInputError(
            f"option 'num-sorted-run.compaction-trigger' must be at least 1 without 'num-levels' (the table then "
            f"has that many levels plus one, and needs two), got {trigger}"
        )
    else:
        configured = trigger
    return max([configured, *levels])


def _needs_full_compaction(files: list[dict[str, Any]], top: int) -> bool:
    return len(files) > 1 or files[0]["_LEVEL"] != top or bool(files[0].get("_DELETE_ROW_COUNT"))
