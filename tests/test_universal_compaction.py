"""Paimon's universal compaction in ``Table.compact()``: the pick (``_universal.pick``) on
cases worked out by hand from Paimon's rules and on random runs (its invariants), then
tables compacted after many commits: the files' levels are those the pick gives, deletes
stay below the top level, and merge-core, pypaimon and pypaimon-rust read the rows of a
plain-Python model; Paimon's Java-written fixtures too."""

from __future__ import annotations

import datetime
import shutil
from pathlib import Path

import merge_core as mc
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import pypaimon_commit, pypaimon_rust_rows
from hypothesis import given, settings
from hypothesis import strategies as st
from merge_core.paimon._universal import CompactUnit, EarlyFull, SortedRun, Universal, _unit, pick
from test_expire import catalog, identifier
from test_paimon_dv_write import _merged_rows

pypaimon = pytest.importorskip("pypaimon")
pytest.importorskip("pypaimon_rust")

FIXTURES = Path(__file__).resolve().parent.parent.parent / "shared" / "paimon-fixtures"
SCHEMA = pa.schema([pa.field("k", pa.int64(), False), ("v", pa.int64()), ("w", pa.string())])
KIND = "_kind"


def runs(*pairs: tuple[int, int]) -> list[SortedRun]:
    return [SortedRun(level, size) for level, size in pairs]


# -- the pick, by hand ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rules", "num_levels", "given_runs", "expected"),
    [
        # size amplification: the newer runs (3) exceed 50% of the oldest (5): all, to the top
        (Universal(50, 1, 3), 4, runs((0, 2), (0, 1), (3, 5)), CompactUnit(3, 3)),
        # fewer runs than the trigger: nothing, however amplified
        (Universal(50, 1, 4), 4, runs((0, 2), (0, 1), (3, 5)), None),
        # size ratio: runs of like size join the newest; the large top run stops it, and
        # the output is just below it
        (Universal(200, 1, 3), 4, runs((0, 2), (1, 2), (2, 2), (3, 40)), CompactUnit(2, 3)),
        # size ratio finds nothing (the next run is far larger); the run count then takes
        # 5 - 3 + 1 runs and the size ratio stops before level 3
        (Universal(200, 1, 3), 5, runs((0, 1), (1, 5), (2, 20), (3, 40), (4, 500)), CompactUnit(2, 3)),
        # once something is taken, level 0 and 1 runs always join, whatever their size
        (Universal(200, 1, 3), 4, runs((0, 1), (0, 1), (1, 100), (3, 1000)), CompactUnit(2, 3)),
        (Universal(200, 1, 3), 3, runs((0, 1), (0, 1), (0, 1000), (2, 5000)), CompactUnit(1, 3)),
        # a larger size ratio lets the next run in
        (Universal(200, 10, 2), 3, runs((0, 10), (1, 10), (2, 22)), CompactUnit(2, 3)),
        (Universal(200, 9, 2), 3, runs((0, 10), (1, 10), (2, 22)), CompactUnit(1, 2)),
        # off-peak hours add their ratio to the size ratio
        (Universal(200, 1, 2), 5, runs((0, 10), (4, 14)), None),
        (Universal(200, 1, 2, offpeak_ratio=50), 5, runs((0, 10), (4, 14)), CompactUnit(4, 2)),
        # forced level-0 pick (compaction.force-up-level-0, lookup tables): when nothing
        # else is picked, every level-0 run, then the next by size ratio
        (Universal(200, 1, 5, force_up_level_0=True), 6, runs((0, 1), (3, 3), (5, 100)), CompactUnit(2, 1)),
        (Universal(200, 1, 5, force_up_level_0=True), 6, runs((0, 5), (2, 5), (5, 100)), CompactUnit(4, 2)),
        (Universal(200, 1, 5, force_up_level_0=True), 6, runs((2, 5), (5, 100)), None),
        (Universal(200, 1, 5), 6, runs((0, 1), (3, 3), (5, 100)), None),
        # early full compaction: a bucket smaller than the total threshold ...
        (Universal(early_full=EarlyFull(total=100)), 6, runs((0, 10), (5, 50)), CompactUnit(5, 2)),
        (Universal(early_full=EarlyFull(total=60)), 6, runs((0, 10), (5, 50)), None),
        (Universal(early_full=EarlyFull(total=100)), 6, runs((5, 50)), None),  # one run: nothing to merge
        # ... more than the incremental threshold below the top ...
        (Universal(early_full=EarlyFull(incremental=10)), 6, runs((0, 6), (0, 5), (5, 1000)), CompactUnit(5, 3)),
        (Universal(early_full=EarlyFull(incremental=10)), 6, runs((0, 5), (0, 5), (5, 1000)), None),
        # ... or the optimization interval passed since the last full compaction (never: now)
        (Universal(early_full=EarlyFull(interval=1000, now=5)), 6, runs((0, 1), (5, 9)), CompactUnit(5, 2)),
        (Universal(early_full=EarlyFull(interval=1000, last=0, now=1000)), 6, runs((0, 1), (5, 9)), None),
        (Universal(early_full=EarlyFull(interval=1000, last=0, now=1001)), 6, runs((0, 1), (5, 9)), CompactUnit(5, 2)),
    ],
)
def test_pick_by_hand(rules, num_levels, given_runs, expected):
    assert pick(num_levels, given_runs, rules) == expected


@pytest.mark.parametrize(
    ("levels", "count", "expected"),
    [
        ([0, 0, 2, 4], 1, CompactUnit(2, 3)),  # level 0 next: the runs up to level 2 join, output there
        ([0, 0, 2, 4], 2, CompactUnit(1, 2)),
        ([0, 0, 2, 4], 4, CompactUnit(4, 4)),
        ([0, 0, 1], 1, CompactUnit(3, 3)),  # pushed to the end: the top level
    ],
)
def test_output_level_is_never_zero(levels, count, expected):
    assert _unit(3 if levels[-1] < 3 else 4, [SortedRun(lv, 1) for lv in levels], count) == expected


def test_options_make_the_rules():
    options = {
        "compaction.max-size-amplification-percent": "150",
        "compaction.size-ratio": "7",
        "num-sorted-run.compaction-trigger": "4",
        "compaction.offpeak.start.hour": "22",
        "compaction.offpeak.end.hour": "6",
        "compaction.offpeak-ratio": "30",
        "compaction.total-size-threshold": "1 kb",
    }
    night = Universal.of(options, last_full=7, now=datetime.datetime(2026, 1, 1, 23))
    assert (night.max_size_amp, night.size_ratio, night.trigger, night.offpeak_ratio) == (150, 7, 4, 30)
    assert night.early_full is not None and (night.early_full.total, night.early_full.last) == (1024, 7)
    assert Universal.of(options, now=datetime.datetime(2026, 1, 1, 12)).offpeak_ratio == 0
    assert Universal.of({}) == Universal()


@st.composite
def bucket_runs(draw):
    """A bucket's runs as ``Levels`` lists them: level-0 runs, then rising levels."""
    num_levels = draw(st.integers(2, 7))
    zero = draw(st.integers(0, 6))
    above = sorted(draw(st.sets(st.integers(1, num_levels - 1), max_size=num_levels - 1)))
    sizes = st.integers(1, 1 << 20)
    found = [SortedRun(0, draw(sizes)) for _ in range(zero)] + [SortedRun(lv, draw(sizes)) for lv in above]
    return num_levels, found


@settings(max_examples=500, deadline=None)
@given(
    bucket_runs(),
    st.builds(
        Universal,
        max_size_amp=st.integers(1, 400),
        size_ratio=st.integers(0, 100),
        trigger=st.integers(1, 8),
        force_up_level_0=st.booleans(),
        offpeak_ratio=st.integers(0, 50),
    ),
)
def test_pick_invariants(bucket, rules):
    num_levels, given_runs = bucket
    unit = pick(num_levels, given_runs, rules)
    zero = sum(r.level == 0 for r in given_runs)
    if unit is None:
        # nothing: too few runs for the triggers, and no level-0 run to force up
        assert len(given_runs) <= rules.trigger or not given_runs
        assert not (rules.force_up_level_0 and zero)
        return
    taken, left = given_runs[: unit.runs], given_runs[unit.runs :]
    assert taken, "a pick takes the newest run at least"
    assert unit.level >= 1, "never into level 0"
    if not left:
        assert unit.level == num_levels - 1, "every run: the top level"
    # the LSM order holds: the output lies above every run taken and below every run left
    assert all(r.level <= unit.level for r in taken)
    assert all(r.level > unit.level for r in left)
    if rules.force_up_level_0:
        assert unit.runs >= zero, "every level-0 run goes up"
    if len(given_runs) < rules.trigger and not rules.force_up_level_0:
        raise AssertionError("no trigger without enough runs")
    if unit.runs < len(given_runs) and not rules.force_up_level_0 and len(given_runs) <= rules.trigger:
        # by size ratio from the newest run: each run taken after the first was within
        # the ratio of those before it, or at level 0 or 1
        size = taken[0].size
        for r in taken[1:]:
            assert r.level <= 1 or size * (100 + rules.size_ratio + rules.offpeak_ratio) / 100 >= r.size
            size += r.size


# -- tables ---------------------------------------------------------------------------


def expected_after(
    table: mc.Table, snapshot: int | None = None
) -> tuple[dict[tuple, set[str]], dict[tuple, int | None]]:
    """For each (partition, bucket): the files a compaction keeps and the level of the
    file it writes (None: nothing to compact), by the pick over the files
    ``table.files(snapshot)`` lists (the levels as Paimon's ``Levels`` counts them: at
    least one above the highest file's)."""
    options = table.options
    top = int(options.get("num-levels", int(options.get("num-sorted-run.compaction-trigger", 5)) + 1)) - 1
    kept, levels = {}, {}
    by_bucket: dict[tuple, list[dict]] = {}
    for f in table.files(snapshot):
        by_bucket.setdefault((str(f["partition"]), f["bucket"]), []).append(f)
    for bucket, files in by_bucket.items():
        zero = sorted((f for f in files if f["level"] == 0), key=lambda f: (-f["max_sequence"], f["min_sequence"]))
        above = sorted({f["level"] for f in files} - {0})
        grouped = [[f] for f in zero] + [[f for f in files if f["level"] == lv] for lv in above]
        num_levels = max(top + 1, max(f["level"] for f in files) + 1)
        sizes = [SortedRun(g[0]["level"], sum(f["bytes"] for f in g)) for g in grouped]
        unit = pick(num_levels, sizes, Universal.of(options))
        picked = [] if unit is None else [f for g in grouped[: unit.runs] for f in g]
        kept[bucket] = {f["path"] for f in files} - {f["path"] for f in picked}
        levels[bucket] = None if unit is None else unit.level
    return kept, levels


def check_levels(table: mc.Table, kept: dict[tuple, set[str]], levels: dict[tuple, int | None]) -> set[int]:
    """That each bucket kept the files it should and wrote at most one file, at its
    level; the levels written."""
    written_levels = set()
    after = table.files()
    for bucket, level in levels.items():
        files = [f for f in after if (str(f["partition"]), f["bucket"]) == bucket]
        assert {f["path"] for f in files} >= kept[bucket]
        written = [f["level"] for f in files if f["path"] not in kept[bucket]]
        assert written in ([], [level] if level is not None else []), (bucket, written, level)
        written_levels |= set(written)
    return written_levels


def peers(root: Path) -> tuple[list[tuple], list[tuple], list[tuple]]:
    """The rows merge-core, pypaimon and pypaimon-rust read."""
    mine = tuples(mc.Table.open(root).read().read_all().to_pylist())
    builder = catalog(root).get_table(identifier(root)).new_read_builder()
    theirs = tuples(builder.new_read().to_arrow(builder.new_scan().plan().splits()).to_pylist())
    return mine, theirs, tuples(pypaimon_rust_rows(root))


def tuples(rows) -> list[tuple]:
    return sorted((r["k"], r["v"], r["w"]) for r in rows)


def commit_rows(c: int, keys: int) -> list[dict]:
    """Commit ``c``'s rows: updates of a third of the keys, some deletes (of keys written
    before and never written), a new key."""
    rows = [
        {"k": k, "v": k * 100 + c, "w": None if (k + c) % 4 == 0 else f"w{c}", KIND: "+I"}
        for k in range(c % 3, keys, 3)
    ]
    rows += [{"k": (c * 7) % keys, "v": None, "w": None, KIND: "-D"}, {"k": 1000 + c, "v": c, "w": "new", KIND: "+I"}]
    if c % 4 == 0:
        rows.append({"k": 5000 + c, "v": None, "w": None, KIND: "-D"})
    dedup = {}
    for r in rows:
        dedup[r["k"]] = r  # one version per key and commit
    return list(dedup.values())


def apply(model: dict, rows: list[dict], engine: str) -> None:
    for r in rows:
        if r[KIND] == "-D":
            model.pop(r["k"], None)
        elif engine == "aggregation" and r["k"] in model:
            old = model[r["k"]]
            v = r["v"] if old["v"] is None else old["v"] + (r["v"] or 0)
            model[r["k"]] = {"k": r["k"], "v": v, "w": old["w"] if r["w"] is None else r["w"]}
        else:
            model[r["k"]] = {c: r[c] for c in ("k", "v", "w")}


@pytest.mark.parametrize(
    ("engine", "deletes"),
    [("deduplicate", True), ("deduplicate", False), ("aggregation", False)],
)
def test_commits_then_compactions_follow_the_pick(tmp_path, engine, deletes):
    root = tmp_path / "db.db" / "t"
    merge = mc.Aggregate({"v": "sum"}) if engine == "aggregation" else "deduplicate"
    # write-only: the writes leave their runs to compact(), whose pick this checks (a
    # write's own pick is test_write_compaction's)
    options = {"num-sorted-run.compaction-trigger": "3", "write-only": "true"}
    table = mc.Table.create(root, SCHEMA, key="k", buckets=2, merge=merge, options=options)
    model: dict = {}
    base = [{"k": k, "v": k, "w": "base", KIND: "+I"} for k in range(3000)]
    kind_schema = SCHEMA.append(pa.field(KIND, pa.string()))
    table.write(pa.Table.from_pylist(base, schema=kind_schema), row_kind=KIND)
    apply(model, base, engine)
    table.compact(full=True)
    levels_seen: set[int] = set()
    for c in range(1, 13):
        rows = commit_rows(c, 60)
        if not deletes:
            rows = [r for r in rows if r[KIND] == "+I"]
        table.write(pa.Table.from_pylist(rows, schema=kind_schema), row_kind=KIND)
        apply(model, rows, engine)
        kept, levels = expected_after(table)
        table.compact()
        levels_seen |= check_levels(table, kept, levels)
        mine, theirs, rust = peers(root)
        assert mine == theirs == rust == tuples(model.values()), c
    top = int(options["num-sorted-run.compaction-trigger"])
    assert levels_seen - {top}, "some compaction stopped below the top level"
    if deletes:  # deletes kept below the top, as -D rows
        middle = [f for f in table.files() if 0 < f["level"] < top]
        stored = [pq.read_table(root / f["path"], columns=["_VALUE_KIND"]) for f in middle]
        assert any(3 in t.column(0).to_pylist() for t in stored)


@pytest.mark.skipif(not FIXTURES.is_dir(), reason="the shared Paimon fixtures are not beside this checkout")
@pytest.mark.parametrize("name", ["pk_table_scan_and_read_mor", "pk_table_scan_and_read_dv"])
def test_java_written_tables_compacted_by_the_pick(tmp_path, name):
    """Paimon's tables (f0 string, f1 int partition, f2 int bucket key, f3 double) take
    a large write, compacted fully, then a middling and a small one: the size ratio
    then stops short of the large run, and the newer runs merge just below it, at the
    small write, as Paimon's writer compacts (with deletion vectors, by lookup: the
    vectors of the large run's file stay)."""
    warehouse = tmp_path / "w"
    shutil.copytree(FIXTURES / f"{name}.db", warehouse / f"{name}.db")
    root = warehouse / f"{name}.db" / name
    visible = {(r["f0"], r["f1"], r["f2"]): r for r in _merged_rows(root)}  # of schema-0: first
    table = mc.Table.open(root)
    table.set_options({"num-levels": "6", "num-sorted-run.compaction-trigger": "2"})
    names = table.schema.names

    def write(rows: list[dict]) -> None:
        table.write(pa.Table.from_pylist(rows, schema=table.schema))
        visible.update({(r["f0"], r["f1"], r["f2"]): r for r in rows})

    write([{"f0": f"n{i}", "f1": 10 + 10 * (i % 2), "f2": i % 3 % 2, "f3": float(i)} for i in range(3000)])
    table.compact(full=True)
    write([{"f0": f"n{i}", "f1": 10 + 10 * (i % 2), "f2": i % 3 % 2, "f3": -1.0} for i in range(0, 3000, 3)])
    write([{"f0": "n6", "f1": 10, "f2": 0, "f3": -2.0}, {"f0": "Bob", "f1": 10, "f2": 0, "f3": -2.0}])
    kept, levels = expected_after(table)
    # Each write compacted (with deletion vectors by lookup, the universal pick first:
    # Paimon's ForceUpLevel0Compaction): in the small one's bucket, its run count took
    # level 0 with level 4's middling run into level 4 already, leaving compact() nothing.
    assert set(levels.values()) == {None}
    files = table.files()
    layout = sorted(sorted({f["level"] for f in files if (str(f["partition"]), f["bucket"]) == pb}) for pb in levels)
    # The middling write (f2 = 0: two of the four buckets) and the small one (one of those):
    # with deletion vectors, each bucket they touched went up to level 4 by lookup. Without,
    # the middling write alone picked nothing (two runs, far apart) and stays at level 0
    # where the small write did not come.
    if name == "pk_table_scan_and_read_dv":
        assert layout == [[4, 5], [4, 5], [5], [5]], layout
    else:
        kinds = [table.snapshot(s).commit_kind for s in table.snapshots()[-3:]]
        assert kinds == ["APPEND", "APPEND", "COMPACT"], kinds
        assert layout == [[0, 5], [4, 5], [5], [5]], layout
    table.compact()
    check_levels(table, kept, levels)

    def canonical(rows):
        return sorted(tuple(str(r[c]) for c in names) for r in rows)

    expected = canonical(visible.values())
    assert canonical(table.read().read_all().to_pylist()) == expected
    assert canonical(pypaimon_rust_rows(root)) == expected
    theirs = pypaimon.CatalogFactory.create({"warehouse": str(warehouse)}).get_table(f"{name}.{name}")
    builder = theirs.new_read_builder()
    assert canonical(builder.new_read().to_arrow(builder.new_scan().plan().splits()).to_pylist()) == expected


def test_level_zero_files_of_a_deletion_vector_table_go_up_with_the_whole_bucket(tmp_path):
    """A level-0 file pypaimon wrote into a deletion-vector table goes up only by lookup
    in Paimon (the rows it replaces above are marked); compact() does not look up, so a
    pick that takes it below the top takes the whole bucket to the top instead."""
    root = tmp_path / "db.db" / "t"
    options = {"deletion-vectors.enabled": "true", "num-levels": "6", "num-sorted-run.compaction-trigger": "2"}
    table = mc.Table.create(root, SCHEMA, key="k", buckets=1, options=options)
    model: dict = {}
    for rows in (
        [{"k": k, "v": k, "w": "base"} for k in range(3000)],
        [{"k": k, "v": -k, "w": "mid"} for k in range(0, 3000, 3)],
    ):
        table.write(pa.Table.from_pylist(rows, schema=SCHEMA))
        model.update({r["k"]: r for r in rows})
        if len(model) == 3000 and rows[0]["w"] == "base":
            table.compact(full=True)
    small = [{"k": k, "v": 7, "w": "pypaimon"} for k in (1, 3, 2999)]
    pypaimon_commit(catalog(root).get_table(identifier(root)), small, SCHEMA)
    model.update({r["k"]: r for r in small})
    assert sorted(f["level"] for f in table.files()) == [0, 4, 5]
    kept, levels = expected_after(table)
    assert list(levels.values()) == [4]  # the pick: level 0 and 4, into 4
    table.compact()
    mine, theirs, rust = peers(root)
    assert mine == theirs == rust == tuples(model.values())
    assert [f["level"] for f in table.files()] == [5]


@pytest.mark.parametrize("reset", [False, True])
def test_files_above_the_configured_top_keep_the_tree_that_tall(tmp_path, reset):
    """A bucket compacted to level 7 under ``num-levels`` 8, then the table's levels
    lowered to 6 (``reset``: to the default, the trigger's 2 + 1): Paimon's ``Levels``
    still counts 8, so the pick compacts just below level 7 and a full compaction writes
    at level 7, not at the options' top. pypaimon's level-0 file and merge-core's go
    with them."""
    root = tmp_path / "db.db" / "t"
    table = mc.Table.create(root, SCHEMA, key="k", buckets=1, options={"num-levels": "8"})
    base = [{"k": k, "v": k, "w": "base"} for k in range(3000)]
    table.write(pa.Table.from_pylist(base, schema=SCHEMA))
    table.compact(full=True)
    assert [f["level"] for f in table.files()] == [7]
    table.set_options({"num-sorted-run.compaction-trigger": "2", **({} if reset else {"num-levels": "6"})})
    if reset:
        table.remove_options(["num-levels"])
    model = {r["k"]: r for r in base}
    mine_rows = [{"k": k, "v": -k, "w": "merge-core"} for k in range(0, 3000, 7)]
    table.write(pa.Table.from_pylist(mine_rows, schema=SCHEMA))
    theirs_rows = [{"k": k, "v": 7, "w": "pypaimon"} for k in (1, 7, 2999, 4000)]
    pypaimon_commit(catalog(root).get_table(identifier(root)), theirs_rows, SCHEMA)
    for rows in (mine_rows, theirs_rows):
        model.update({r["k"]: r for r in rows})
    assert sorted(f["level"] for f in table.files()) == [0, 0, 7]
    kept, levels = expected_after(table)
    assert list(levels.values()) == [6]  # the two level-0 runs, far smaller than level 7: just below it
    table.compact()
    check_levels(table, kept, levels)
    assert sorted(f["level"] for f in table.files()) == [6, 7]
    assert peers(root) == (tuples(model.values()),) * 3
    table.compact(full=True)
    assert [f["level"] for f in table.files()] == [7]
    assert peers(root) == (tuples(model.values()),) * 3


def test_the_last_full_compaction_is_counted_at_the_options_top(tmp_path):
    """``compaction.optimization-interval`` counts from the newest file at the options'
    top level (Paimon's ``estimateLastFullCompactionTime`` takes ``num-levels`` alone):
    a bucket compacted to level 7 under ``num-levels`` 8, then lowered to 6, has none at
    level 5, so the interval has passed and its two runs merge at once into level 7: at
    the write that makes them two (its APPEND, then its COMPACT), and again by compact()
    once a write-only write left a level-0 file."""
    root = tmp_path / "db.db" / "t"
    table = mc.Table.create(root, SCHEMA, key="k", buckets=1, options={"num-levels": "8"})
    base = [{"k": k, "v": k, "w": "base"} for k in range(100)]
    table.write(pa.Table.from_pylist(base, schema=SCHEMA))
    table.compact(full=True)
    table.set_options({"num-levels": "6", "compaction.optimization-interval": "1 d"})
    update = [{"k": 1, "v": -1, "w": "new"}]
    table.write(pa.Table.from_pylist(update, schema=SCHEMA))
    assert [table.snapshot(s).commit_kind for s in table.snapshots()[-2:]] == ["APPEND", "COMPACT"]
    assert sorted(f["level"] for f in table.files(table.snapshots()[-2])) == [0, 7]
    assert [f["level"] for f in table.files()] == [7]
    table.set_options({"write-only": "true"})
    again = [{"k": 2, "v": -2, "w": "new"}]
    table.write(pa.Table.from_pylist(again, schema=SCHEMA))
    assert sorted(f["level"] for f in table.files()) == [0, 7]
    table.compact()
    assert [f["level"] for f in table.files()] == [7]
    model = {r["k"]: r for r in [*base, *update, *again]}
    assert peers(root) == (tuples(model.values()),) * 3
