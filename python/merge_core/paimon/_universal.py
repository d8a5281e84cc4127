"""Paimon's universal compaction pick: which of a bucket's sorted runs a compaction
merges, and into which level (``mergetree/compact/UniversalCompaction``, with
``EarlyFullCompaction``, ``OffPeakHours`` and ``ForceUpLevel0Compaction`` around it).

A bucket's runs, as Paimon's ``Levels`` lists them: each level-0 file alone, newest
first, then one run per non-empty level above, lowest first. A pick always takes a
prefix of that list (the newest runs) and tries, in order:

0. **Early full compaction** (only with ``compaction.optimization-interval``,
   ``compaction.total-size-threshold`` or ``compaction.incremental-size-threshold``):
   every run, into the top level, when the interval since the last full compaction has
   passed, the bucket is smaller than the total threshold, or its runs below the top
   level are larger than the incremental threshold.
1. **Size amplification**: with at least ``num-sorted-run.compaction-trigger`` runs,
   every run when the runs but the oldest exceed ``compaction.max-size-amplification-percent``
   percent of the oldest.
2. **Size ratio**: with that many runs, the newest run, then each next run while the
   size taken so far times (100 + ``compaction.size-ratio``)% reaches it.
3. **Run count**: with more runs than the trigger, the newest ``runs - trigger + 1``
   runs, then more by size ratio as in 2.

The output level is the level of the first run left out, less one; never 0 (a pick
that would output to level 0 takes the runs up to the next level above 0, and outputs
there); the top level (``num-levels`` - 1) when every run is taken.
``compaction.force-up-level-0`` (and Paimon's lookup tables) adds, when nothing was
picked, every level-0 run and those after it by size ratio (``forcePickL0``).

Everything here is a pure function of run sizes and levels; the clock (early full
compaction, off-peak hours) comes in as :class:`Universal` fields.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ._options import bool_option, duration_ms, int_option, memory_bytes


@dataclass(frozen=True)
class SortedRun:
    """A run of a bucket: its level and total file size in bytes."""

    level: int
    size: int


@dataclass(frozen=True)
class CompactUnit:
    """What a compaction merges: the newest ``runs`` runs, into ``level``."""

    level: int
    runs: int


@dataclass(frozen=True)
class EarlyFull:
    """``EarlyFullCompaction``'s thresholds (``None``: unset) and clock: ``last`` is when
    the bucket was last fully compacted (epoch ms, ``None``: never), ``now`` the time of
    the pick."""

    interval: int | None = None
    total: int | None = None
    incremental: int | None = None
    last: int | None = None
    now: int = 0


@dataclass(frozen=True)
class Universal:
    """The options of a universal pick, with Paimon's defaults. ``offpeak_ratio`` is the
    extra size ratio in effect at the hour of the pick (``compaction.offpeak-ratio`` in
    off-peak hours, else 0)."""

    max_size_amp: int = 200
    size_ratio: int = 1
    trigger: int = 5
    force_up_level_0: bool = False
    early_full: EarlyFull | None = None
    offpeak_ratio: int = 0

    @classmethod
    def of(
        cls, options: Mapping[str, str], last_full: int | None = None, now: datetime.datetime | None = None
    ) -> Universal:
        """The pick a table's ``options`` ask for, at ``now`` (local time; default: the
        clock), the bucket last fully compacted at ``last_full`` (epoch ms)."""
        now = now or datetime.datetime.now()
        thresholds = {
            "interval": duration_ms(options, "compaction.optimization-interval", "0")
            if "compaction.optimization-interval" in options
            else None,
            "total": _bytes(options, "compaction.total-size-threshold"),
            "incremental": _bytes(options, "compaction.incremental-size-threshold"),
        }
        early = None
        if any(v is not None for v in thresholds.values()):
            early = EarlyFull(**thresholds, last=last_full, now=int(now.timestamp() * 1000))
        return cls(
            max_size_amp=int_option(options, "compaction.max-size-amplification-percent", 200),
            size_ratio=int_option(options, "compaction.size-ratio", 1),
            trigger=int_option(options, "num-sorted-run.compaction-trigger", 5),
            force_up_level_0=bool_option(options, "compaction.force-up-level-0"),
            early_full=early,
            offpeak_ratio=_offpeak_ratio(options, now.hour),
        )


def pick(num_levels: int, runs: Sequence[SortedRun], rules: Universal = Universal()) -> CompactUnit | None:
    """The unit Paimon's universal compaction (``ForceUpLevel0Compaction`` around it when
    ``rules.force_up_level_0``) picks from a bucket's ``runs`` (newest first); ``None``:
    nothing to compact."""
    unit = _universal(num_levels, runs, rules)
    if unit is None and rules.force_up_level_0:
        unit = force_pick_level_0(num_levels, runs, rules)
    return unit


def force_pick_level_0(
    num_levels: int, runs: Sequence[SortedRun], rules: Universal = Universal()
) -> CompactUnit | None:
    """``forcePickL0``: every level-0 run, then the next runs by size ratio; ``None``
    without level-0 runs."""
    zero = next((i for i, run in enumerate(runs) if run.level > 0), len(runs))
    return None if zero == 0 else _by_size_ratio(num_levels - 1, runs, zero, rules, force=True)


def _universal(num_levels: int, runs: Sequence[SortedRun], rules: Universal) -> CompactUnit | None:
    top = num_levels - 1
    if rules.early_full is not None and _early_full(top, runs, rules.early_full):
        return CompactUnit(top, len(runs))
    if len(runs) < rules.trigger:
        return None
    # 1. size amplification: the newer runs against the oldest
    if sum(r.size for r in runs[:-1]) * 100 > rules.max_size_amp * runs[-1].size:
        return CompactUnit(top, len(runs))
    # 2. size ratio, from the newest run alone
    unit = _by_size_ratio(top, runs, 1, rules)
    if unit is not None:
        return unit
    # 3. run count: enough of the newest runs to bring the count under the trigger
    if len(runs) > rules.trigger:
        return _by_size_ratio(top, runs, len(runs) - rules.trigger + 1, rules)
    return None


def _early_full(top: int, runs: Sequence[SortedRun], early: EarlyFull) -> bool:
    """``EarlyFullCompaction.tryFullCompact``: whether every run goes to the top now."""
    if len(runs) == 1:
        return False
    if early.interval is not None and (early.last is None or early.now - early.last > early.interval):
        return True
    if early.total is not None and sum(r.size for r in runs) < early.total:
        return True
    return early.incremental is not None and sum(r.size for r in runs if r.level != top) > early.incremental


def _by_size_ratio(
    top: int, runs: Sequence[SortedRun], count: int, rules: Universal, force: bool = False
) -> CompactUnit | None:
    """``pickForSizeRatio``: the first ``count`` runs, then each next one while the size
    taken, grown by the size ratio, reaches it. Level 1 and below are taken anyway once
    something is (``force``, or more than one run); ``None`` if nothing but one run is."""
    size = sum(r.size for r in runs[:count])
    triggered = force or count > 1
    for run in runs[count:]:
        # Paimon compares in doubles: the same IEEE arithmetic as Python's floats.
        if size * (100.0 + rules.size_ratio + rules.offpeak_ratio) / 100.0 < run.size and (
            not triggered or run.level > 1
        ):
            break
        size += run.size
        count += 1
        triggered = True
    return _unit(top, runs, count) if triggered else None


def _unit(top: int, runs: Sequence[SortedRun], count: int) -> CompactUnit:
    """``createUnit``: the output level of the first ``count`` runs (more if it would
    be level 0)."""
    level = top if count == len(runs) else max(0, runs[count].level - 1)
    if level == 0:  # never to level 0: take the runs up to the next one above it
        for run in runs[count:]:
            count += 1
            if run.level != 0:
                level = run.level
                break
    return CompactUnit(top if count == len(runs) else level, count)


def _bytes(options: Mapping[str, str], key: str) -> int | None:
    return memory_bytes(options, key, "0") if key in options else None


def _offpeak_ratio(options: Mapping[str, str], hour: int) -> int:
    """``OffPeakHours.currentRatio``: the off-peak ratio if ``hour`` is off-peak, else 0."""
    start = int_option(options, "compaction.offpeak.start.hour", -1)
    end = int_option(options, "compaction.offpeak.end.hour", -1)
    if start == -1 or end == -1 or start == end:
        return 0
    off_peak = start <= hour < end if start <= end else hour < end or start <= hour
    return int_option(options, "compaction.offpeak-ratio", 0) if off_peak else 0
