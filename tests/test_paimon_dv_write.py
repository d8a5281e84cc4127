"""Writes to deletion-vector and first-row tables, visible the moment they commit: each
write's level-0 files are compacted by lookup into a level above, the rows they replace
marked in deletion vectors (``_lookup``). After every commit merge-core, pypaimon and
pypaimon-rust read the rows of a plain-Python model, on tables merge-core made, on
Paimon's Java-written fixtures and between pypaimon's writes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import fastavro
import merge_core as mc
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import pypaimon_commit, pypaimon_rust_rows
from merge_core.paimon._lookup import Run, pick
from merge_core.paimon._schema import TableSchema
from test_expire import catalog, identifier

pypaimon = pytest.importorskip("pypaimon")
pytest.importorskip("pypaimon_rust")

FIXTURES = Path(__file__).resolve().parent.parent.parent / "shared" / "paimon-fixtures"
SCHEMA = pa.schema(
    [pa.field("k", pa.int64(), False), pa.field("p", pa.string(), False), ("v", pa.int64()), ("w", pa.string())]
)
KIND = "_kind"

# merge engine -> (Table.create's merge, table options)
# (pypaimon reads neither with 'remove-record-on-delete': their commits take no deletes)
ENGINES = {
    "deduplicate": ("deduplicate", {}),
    "partial-update": ("partial-update", {}),
    "aggregation": (mc.Aggregate({"v": "sum"}), {}),
}


def fold(engine: str, old: dict | None, new: dict) -> dict | None:
    """The model's row for a key after ``new`` (a row with its kind) lands on ``old``."""
    if new[KIND] == "-D":
        return None
    row = {c: new[c] for c in ("k", "p", "v", "w")}
    if old is None or engine == "deduplicate":
        return row
    if engine == "partial-update":
        return {c: old[c] if row[c] is None else row[c] for c in row}
    # aggregation: v sums (nulls skipped), w keeps its last non-null value
    v = row["v"] if old["v"] is None else old["v"] + (row["v"] or 0)
    return {**row, "v": v, "w": old["w"] if row["w"] is None else row["w"]}


def commits(partitioned: bool) -> list[list[dict]]:
    """Five commits over keys 0..11 (two partitions, or one): inserts, updates with
    nulls, deletes of keys written before, of keys in the same commit and of keys never
    written."""
    parts = ["a", "b"] if partitioned else ["a"]
    out = []
    for c in range(5):
        rows = []
        for k in range(12):
            if (k + c) % 3 == 0:
                continue
            p = parts[k % len(parts)]
            kind = "-D" if (k * 7 + c) % 5 == 0 and c > 0 else "+I"
            v = None if (k + c) % 4 == 0 else k * 10 + c
            w = None if (k + 2 * c) % 3 == 0 else f"w{k}.{c}"
            rows.append({"k": k, "p": p, "v": v, "w": w, KIND: kind})
        if c == 2:
            rows.append({"k": 99, "p": parts[0], "v": 1, "w": "x", KIND: "-D"})  # never written
        out.append(rows)
    return out


def as_tuples(rows: list[dict]) -> list[tuple]:
    return sorted((r["k"], r["p"], r["v"], r["w"]) for r in rows)


def peers_read(root: Path, pypaimon_too: bool = True) -> tuple[list[tuple], list[tuple], list[tuple]]:
    """What merge-core, pypaimon and pypaimon-rust read (``pypaimon_too`` False: pypaimon,
    which does not read 64-bit deletion vectors, is given merge-core's rows)."""
    mine = as_tuples(mc.Table.open(root).read().read_all().to_pylist())
    theirs = mine
    if pypaimon_too:
        table = catalog(root).get_table(identifier(root))
        builder = table.new_read_builder()
        theirs = as_tuples(builder.new_read().to_arrow(builder.new_scan().plan().splits()).to_pylist())
    return mine, theirs, as_tuples(pypaimon_rust_rows(root))


def check_layout(root: Path) -> None:
    """What every reader of a deletion-vector table relies on: the latest snapshot's files
    are all above level 0, and no key is twice among their rows no deletion vector hides."""
    table = mc.Table.open(root)
    files = table.files()
    assert all(f["level"] > 0 for f in files), [f["level"] for f in files]
    deleted = deletion_vectors(root)
    seen = set()
    for f in files:
        keys = pq.ParquetFile(root / f["path"]).read(columns=["k", "p"]).to_pylist()
        for i, row in enumerate(keys):
            if i in deleted.get(f["path"].split("/")[-1], set()):
                continue
            assert (row["p"], row["k"]) not in seen, f"key {row} twice"
            seen.add((row["p"], row["k"]))


def deletion_vectors(root: Path) -> dict[str, set[int]]:
    """The latest snapshot's deletion vectors by data file name, read as merge-core's
    reader does."""
    from merge_core.fs import resolve
    from merge_core.paimon._dv import deleted_positions
    from merge_core.paimon._meta import Snapshot, deletion_vectors, latest_snapshot_id

    location = resolve(root)
    snap = Snapshot.load(location, latest_snapshot_id(location))
    return {
        name: set(deleted_positions(dv).tolist())
        for (_, _, name), dv in deletion_vectors(location, snap, lambda p, b: None).items()
    }


def index_entries(root: Path) -> list[dict]:
    snapshot = json.loads(max(root.glob("snapshot/snapshot-*"), key=lambda p: int(p.name[9:])).read_text())
    if not snapshot.get("indexManifest"):
        return []
    with open(root / "manifest" / snapshot["indexManifest"], "rb") as f:
        return list(fastavro.reader(f))


def write_rows(table: mc.Table, rows: list[dict]) -> dict:
    data = pa.Table.from_pylist(rows, schema=SCHEMA.append(pa.field(KIND, pa.string())))
    return table.write(data, row_kind=KIND)


@pytest.mark.parametrize("engine", list(ENGINES))
@pytest.mark.parametrize("partitioned", [False, True])
@pytest.mark.parametrize("bitmap64", [False, True])
def test_writes_are_visible_at_commit_to_every_reader(tmp_path, engine, partitioned, bitmap64):
    merge, options = ENGINES[engine]
    root = tmp_path / "db.db" / "t"
    options = {**options, "deletion-vectors.enabled": "true", "deletion-vectors.bitmap64": str(bitmap64).lower()}
    key = ["k", "p"] if partitioned else ["k"]
    table = mc.Table.create(
        root, SCHEMA, key=key, partition_by=["p"] if partitioned else [], buckets=2, merge=merge, options=options
    )
    model: dict[tuple, dict] = {}
    for rows in commits(partitioned):
        if engine != "deduplicate":
            rows = [r for r in rows if r[KIND] == "+I"]
        write_rows(table, rows)
        for row in rows:
            got = fold(engine, model.get((row["p"], row["k"])), row)
            if got is None:
                model.pop((row["p"], row["k"]), None)
            else:
                model[(row["p"], row["k"])] = got
        mine, theirs, rust = peers_read(root, pypaimon_too=not bitmap64)
        assert mine == theirs == rust == as_tuples(list(model.values()))
        check_layout(root)
    entries = [e for e in index_entries(root) if e["_INDEX_TYPE"] == "DELETION_VECTORS"]
    assert entries, "later writes replaced rows: some are marked"
    assert len({(e["_PARTITION"], e["_BUCKET"]) for e in entries}) == len(entries), "one index file per bucket"
    magic = bytes.fromhex("d1d33964") if bitmap64 else bytes.fromhex("5e43f2d0")
    for e in entries:
        data = (root / "index" / e["_FILE_NAME"]).read_bytes()
        assert len(data) == e["_FILE_SIZE"] and data[0] == 1
        for r in e["_DELETIONS_VECTORS_RANGES"]:
            assert data[r["f1"] + 4 : r["f1"] + 8] == magic
    assert table.read(snapshot=2).read_all().num_rows > 0  # older snapshots keep their files


@pytest.mark.parametrize("merge_on_read", [False, True])
def test_a_read_of_compacted_files_only_reads_each_file_on_its_own(tmp_path, merge_on_read):
    """Each key is at most once among the live rows above level 0: the read makes each
    file a section of its own (no merge across files), as Paimon's batch read reads each
    on its own; a table merged on read keeps Paimon's sections of overlapping files."""
    root = tmp_path / "db.db" / "t"
    options = {"deletion-vectors.enabled": "true", "deletion-vectors.merge-on-read": str(merge_on_read).lower()}
    table = mc.Table.create(root, SCHEMA, key=["k"], buckets=1, options=options)
    model: dict[tuple, dict] = {}
    for keys in (range(0, 300), range(0, 300, 3), range(1, 400, 7), range(0, 300, 2)):
        rows = [{"k": k, "p": "a", "v": k * 10 + len(model), "w": f"w{k}", KIND: "+I"} for k in keys]
        write_rows(table, rows)
        model.update({("a", r["k"]): {x: r[x] for x in ("k", "p", "v", "w")} for r in rows})
    runs = [len(section.runs) for split in table.plan() for section in split.sections]
    files = [len(run) for split in table.plan() for section in split.sections for run in section.runs]
    levels = {f["level"] for f in table.files()}
    assert len(files) > 1 and (merge_on_read or 0 not in levels), "several files above level 0 to read"
    if merge_on_read:  # overlapping files of the levels merge in one section
        assert max(runs) > 1
    else:
        assert runs == [1] * len(runs) and files == [1] * len(files)
    mine, theirs, rust = peers_read(root)
    assert mine == theirs == rust == as_tuples(list(model.values()))


def test_first_row_writes_are_visible_at_commit(tmp_path):
    root = tmp_path / "db.db" / "t"
    table = mc.Table.create(root, SCHEMA, key=["k", "p"], partition_by=["p"], buckets=2, merge="first-row")
    model: dict[tuple, dict] = {}
    for c, rows in enumerate(commits(True)):
        rows = [r for r in rows if r[KIND] == "+I"]  # first-row takes no retracts
        write_rows(table, rows)
        for row in rows:
            model.setdefault((row["p"], row["k"]), {k: row[k] for k in ("k", "p", "v", "w")})
        mine, theirs, rust = peers_read(root)
        assert mine == theirs == rust == as_tuples(list(model.values())), f"after commit {c}"
        check_layout(root)
    assert not index_entries(root), "first-row writes no deletion vectors"


def test_a_pypaimon_write_between_two_merge_core_writes(tmp_path):
    root = tmp_path / "db.db" / "t"
    table = mc.Table.create(
        root, SCHEMA, key=["k", "p"], partition_by=["p"], buckets=2, options={"deletion-vectors.enabled": "true"}
    )
    # Many rows first, so that the later writes land below them and mark rows in them.
    first = [{"k": k, "p": "a", "v": k, "w": f"mc1-{k * k}", KIND: "+I"} for k in range(3000)]
    write_rows(table, first)
    theirs = [{"k": k, "p": "a", "v": 100 + k, "w": "py"} for k in range(4, 12)]
    pypaimon_commit(catalog(root).get_table(identifier(root)), theirs, SCHEMA)
    last = [{"k": k, "p": "a", "v": 200 + k, "w": "mc2", KIND: "+I"} for k in range(6, 10)]
    write_rows(table, last)
    model = {r["k"]: r for r in [*first, *theirs, *last]}  # later writes win
    mine, py, rust = peers_read(root)
    assert mine == py == rust == as_tuples(list(model.values()))
    check_layout(root)
    assert any(e["_INDEX_TYPE"] == "DELETION_VECTORS" for e in index_entries(root))


def test_compaction_of_a_deletion_vector_table(tmp_path):
    root = tmp_path / "db.db" / "t"
    table = mc.Table.create(
        root, SCHEMA, key=["k", "p"], partition_by=["p"], buckets=2, options={"deletion-vectors.enabled": "true"}
    )
    for rows in commits(True):
        write_rows(table, rows)
    before = peers_read(root)[0]
    assert any(e["_INDEX_TYPE"] == "DELETION_VECTORS" for e in index_entries(root))
    table.compact(full=True)
    mine, py, rust = peers_read(root)
    assert mine == py == rust == before
    assert not index_entries(root), "every marked file was compacted away, and its vectors"
    top = 5
    assert {f["level"] for f in table.files()} == {top}
    write_rows(table, [{"k": 3, "p": "b", "v": -1, "w": "after", KIND: "+I"}])
    mine, py, rust = peers_read(root)
    expected = sorted([r for r in before if (r[0], r[1]) != (3, "b")] + [(3, "b", -1, "after")])
    assert mine == py == rust == expected


FIXTURE_TABLES = ["pk_table_scan_and_read_dv", "pk_dv_index_in_data_no_external", "pk_with_bitmap_dv"]


@pytest.mark.skipif(not FIXTURES.is_dir(), reason="the shared Paimon fixtures are not beside this checkout")
@pytest.mark.parametrize("name", FIXTURE_TABLES)
def test_java_written_deletion_vector_tables_take_appends(tmp_path, name):
    warehouse = tmp_path / "w"
    shutil.copytree(FIXTURES / f"{name}.db", warehouse / f"{name}.db")
    root = warehouse / f"{name}.db" / name
    table = mc.Table.open(root)
    keys = table.key
    # What Java's writer makes visible once it compacts a bucket: all its files merged, level 0 too.
    visible = {tuple(r[k] for k in keys): r for r in _merged_rows(root)}
    # One update in each group of the key's other columns (the partition and bucket key:
    # every bucket holding rows is written), a delete and a new key.
    groups: dict[tuple, list[dict]] = {}
    for r in sorted(visible.values(), key=lambda r: tuple(str(r[k]) for k in keys)):
        groups.setdefault(tuple(r[k] for k in keys[1:]), []).append(r)
    double = next(c for c in table.schema.names if table.schema.field(c).type == pa.float64())
    updates = [{**g[0], double: (g[0][double] or 0) + 1000.0} for g in groups.values()]
    delete = max(groups.values(), key=len)[-1]
    new = {**updates[0], double: 1.5, keys[0]: "Zed" if table.schema.field(keys[0]).type == pa.string() else 12345}
    data = pa.Table.from_pylist(
        [*({**u, KIND: "+I"} for u in updates), {**delete, KIND: "-D"}, {**new, KIND: "+I"}],
        schema=table.schema.append(pa.field(KIND, pa.string())),
    )
    table.write(data, row_kind=KIND)
    for row in [*updates, new]:
        visible[tuple(row[k] for k in keys)] = row
    del visible[tuple(delete[k] for k in keys)]
    expected = _canonical(visible.values())
    _all_read(table, warehouse, name, expected)
    assert all(f["level"] > 0 for f in table.files())


@pytest.mark.skipif(not FIXTURES.is_dir(), reason="the shared Paimon fixtures are not beside this checkout")
@pytest.mark.parametrize("name", ["pk_table_scan_and_read_dv", "pk_dv_index_in_data_no_external"])
def test_java_written_levels_above_the_configured_top_stay_the_trees(tmp_path, name):
    """Java left partition 10's bucket 0 at levels 4 and 5; with a trigger of 2 the table's
    options make 3 levels, but Paimon's ``Levels`` grows to hold the files (6 levels).
    A one-row write to that bucket: three runs, more than the trigger; once run count
    takes the first two, the level-0 file (a one-row Parquet file of this schema: over
    1,000 bytes) with level 4's reaches level 5's by size ratio, so every run merges,
    into level 5, not 2. The level-0 files Java left in bucket 1 stay unread, as in
    Paimon: the model is what pypaimon-rust reads before the write, and the new row."""
    warehouse = tmp_path / "w"
    shutil.copytree(FIXTURES / f"{name}.db", warehouse / f"{name}.db")
    root = warehouse / f"{name}.db" / name
    visible = {(r["f0"], r["f1"], r["f2"]): r for r in pypaimon_rust_rows(root)}
    table = mc.Table.open(root)
    table.set_options({"num-sorted-run.compaction-trigger": "2"})
    sizes = sorted((f["level"], f["bytes"]) for f in table.files() if (f["partition"], f["bucket"]) == ((10,), 0))
    assert [level for level, _ in sizes] == [4, 5]
    assert (1000 + sizes[0][1]) * 1.01 >= sizes[1][1]
    others = sorted((f["path"], f["level"]) for f in table.files() if (f["partition"], f["bucket"]) != ((10,), 0))
    row = {"f0": "Alice", "f1": 10, "f2": 1, "f3": 99.0}
    table.write(pa.Table.from_pylist([row], schema=table.schema))
    visible[("Alice", 10, 1)] = row
    bucket = [f for f in table.files() if (f["partition"], f["bucket"]) == ((10,), 0)]
    assert [f["level"] for f in bucket] == [5]
    assert sorted((f["path"], f["level"]) for f in table.files() if f not in bucket) == others
    expected = _canonical(visible.values())
    _all_read(table, warehouse, name, expected)


@pytest.mark.parametrize("engine", ["deduplicate", "first-row"])
def test_a_write_takes_the_universal_pick_before_forcing_level_zero_up(tmp_path, engine):
    """Trigger 2, 6 levels: a large base at level 5, a middling write (two runs, far
    apart: no universal pick, level 0 forced up, into level 4), then a small write: three
    runs, more than the trigger, so the universal pick merges the two newest (level 0 and
    4) into level 4, where the forced pick would take level 0 alone, into level 3."""
    root = tmp_path / "db.db" / "t"
    options = {"num-levels": "6", "num-sorted-run.compaction-trigger": "2"}
    if engine == "deduplicate":
        options["deletion-vectors.enabled"] = "true"
    schema = pa.schema([pa.field("k", pa.int64(), False), ("v", pa.int64()), ("w", pa.string())])
    table = mc.Table.create(root, schema, key="k", buckets=1, merge=engine, options=options)
    model: dict[int, tuple] = {}
    writes = [
        [(k, k, f"base{k}") for k in range(3000)],
        [(k, -k, "mid") for k in range(0, 3000, 3)] + [(5000 + k, k, "mid") for k in range(200)],
        [(k, 7, "small") for k in (1, 3, 2999, 9000)],
    ]
    for rows in writes:
        table.write(pa.Table.from_pylist([dict(zip(("k", "v", "w"), r, strict=True)) for r in rows], schema=schema))
        for r in rows:
            if engine == "deduplicate" or r[0] not in model:
                model[r[0]] = r
        if rows is writes[0]:
            assert [f["level"] for f in table.files()] == [5]
        if rows is writes[1]:
            assert sorted(f["level"] for f in table.files()) == [4, 5]
    sizes = sorted((f["level"], f["bytes"]) for f in table.files())
    assert [level for level, _ in sizes] == [4, 5], sizes
    mine = sorted(tuple(r.values()) for r in table.read().read_all().to_pylist())
    rust = sorted(tuple(r[c] for c in ("k", "v", "w")) for r in pypaimon_rust_rows(root))
    builder = catalog(root).get_table(identifier(root)).new_read_builder()
    theirs = sorted(
        tuple(r.values()) for r in builder.new_read().to_arrow(builder.new_scan().plan().splits()).to_pylist()
    )
    assert mine == theirs == rust == sorted(model.values())


def _merged_rows(root: Path) -> list[dict]:
    """The fixture's rows as a merge of every file (level 0 too): what Paimon's writer
    makes visible once it compacts them."""
    shadow = root.parent / "shadow"
    shutil.copytree(root, shadow)
    schema = json.loads((shadow / "schema" / "schema-0").read_text())
    schema["options"]["deletion-vectors.merge-on-read"] = "true"
    (shadow / "schema" / "schema-0").write_text(json.dumps(schema))
    try:
        return mc.Table.open(shadow).read().read_all().to_pylist()
    finally:
        shutil.rmtree(shadow)


def _canonical(rows) -> list[tuple]:
    return sorted(tuple(sorted((k, str(v)) for k, v in r.items())) for r in rows)


def run(level: int, size: int) -> Run:
    from merge_core.paimon._meta import DataFile

    f = DataFile(b"", 0, 1, f"f{level}-{size}", size, 1, b"", b"", 0, 0, 0, level, 0, None)
    return Run(level, (f,))


@pytest.mark.parametrize(
    ("runs", "expected"),
    [
        ([run(0, 10)], (1, 5)),  # alone: the top level
        ([run(0, 10), run(5, 1000)], (1, 4)),  # far smaller than the top: just below it
        ([run(0, 10), run(4, 10), run(5, 1000)], (2, 4)),  # a run of like size joins
        ([run(0, 10), run(1, 1000), run(5, 5000)], (2, 4)),  # level 1 always joins
        ([run(0, 10), run(1, 1000), run(5, 1000)], (3, 5)),  # then the top, of like size
        ([run(0, 10), run(0, 10), run(3, 1000), run(5, 5)], (2, 2)),
        ([run(0, 10), run(4, 15), run(5, 30)], (1, 3)),
        ([run(0, 10), run(4, 10), run(5, 20)], (3, 5)),  # everything: the top
        ([run(0, 10), run(4, 10), run(7, 20)], (3, 7)),  # a file above the top: the tree's top is its level
        ([run(0, 10), run(6, 15), run(7, 30)], (1, 5)),
    ],
)
def test_the_pick_is_paimons_forced_level_zero_compaction(runs, expected):
    """Fewer runs than the trigger (5): the universal pick takes nothing, level 0 is forced up."""
    unit = pick(TableSchema(0, (), (), ("k",), {}), runs)
    assert (unit.runs, unit.level) == expected


@pytest.mark.parametrize(
    ("options", "runs", "expected"),
    [
        # Run count (3 runs, trigger 2): level 0 with the run after it, into its level;
        # the forced pick would take level 0 alone (10 * 1.01 < 15), into level 3.
        ({"num-levels": "6"}, [run(0, 10), run(4, 15), run(5, 30)], (2, 4)),
        # Size amplification: the newer runs exceed twice the oldest, every run to the top;
        # forced: level 0 alone, into level 3.
        ({"num-levels": "6"}, [run(0, 10), run(4, 100), run(5, 50)], (3, 5)),
        # Two runs, trigger 2, far apart in size: the universal pick takes nothing, forced.
        ({"num-levels": "6"}, [run(0, 10), run(5, 1000)], (1, 4)),
        # No num-levels: trigger 2 makes 3 levels, but the files at 4 and 5 make 6.
        ({}, [run(0, 10), run(4, 15), run(5, 30)], (2, 4)),
        ({}, [run(0, 10), run(4, 10), run(5, 20)], (3, 5)),
    ],
)
def test_the_pick_tries_the_universal_pick_first(options, runs, expected):
    """Paimon's ``ForceUpLevel0Compaction``: the universal pick (trigger 2), level 0 forced
    up only when it takes nothing."""
    schema = TableSchema(0, (), (), ("k",), {"num-sorted-run.compaction-trigger": "2", **options})
    unit = pick(schema, runs)
    assert (unit.runs, unit.level) == expected


def test_a_write_whose_bucket_changed_meanwhile_is_a_conflict_and_lands_nothing(tmp_path):
    root = tmp_path / "db.db" / "t"
    table = mc.Table.create(root, SCHEMA, key=["k", "p"], buckets=1, options={"deletion-vectors.enabled": "true"})
    write_rows(table, [{"k": k, "p": "a", "v": k, "w": "one", KIND: "+I"} for k in range(4)])
    slow = table.new_write(row_kind=KIND)
    slow.write(
        pa.Table.from_pylist(
            [{"k": 1, "p": "a", "v": -1, "w": "slow", KIND: "+I"}], schema=SCHEMA.append(pa.field(KIND, pa.string()))
        )
    )
    messages = slow.prepare_commit()
    write_rows(table, [{"k": 2, "p": "a", "v": -2, "w": "fast", KIND: "+I"}])
    snapshots = table.snapshots()
    with pytest.raises(mc.CommitConflictError):
        table.commit(messages)
    assert table.snapshots() == snapshots, "neither the append nor its compaction landed"
    expected = sorted([(0, "a", 0, "one"), (1, "a", 1, "one"), (2, "a", -2, "fast"), (3, "a", 3, "one")])
    mine, py, rust = peers_read(root)
    assert mine == py == rust == expected
    written = {p.name for p in root.rglob("data-*.parquet")}
    assert written == {f["path"].split("/")[-1] for s in table.snapshots() for f in table.files(s)}, "nothing left over"


def test_an_overwrite_of_a_deletion_vector_table_is_visible_and_drops_its_vectors(tmp_path):
    root = tmp_path / "db.db" / "t"
    table = mc.Table.create(
        root, SCHEMA, key=["k", "p"], partition_by=["p"], buckets=1, options={"deletion-vectors.enabled": "true"}
    )
    # Many rows first, so that the second write's file lands below them (of like size, they would merge).
    write_rows(table, [{"k": k, "p": p, "v": k, "w": "one" * 20, KIND: "+I"} for k in range(300) for p in "ab"])
    write_rows(table, [{"k": k, "p": p, "v": -k, "w": "two", KIND: "+I"} for k in range(2) for p in "ab"])
    assert len([e for e in index_entries(root) if e["_INDEX_TYPE"] == "DELETION_VECTORS"]) == 2
    again = pa.Table.from_pylist(
        [{"k": 7, "p": "a", "v": 7, "w": "new"}, {"k": 7, "p": "a", "v": 8, "w": "newer"}], schema=SCHEMA
    )
    table.write(again, overwrite={"p": "a"})
    expected = sorted(
        [(7, "a", 8, "newer"), (0, "b", 0, "two"), (1, "b", -1, "two")]
        + [(k, "b", k, "one" * 20) for k in range(2, 300)]
    )
    mine, py, rust = peers_read(root)
    assert mine == py == rust == expected
    check_layout(root)
    assert len([e for e in index_entries(root) if e["_INDEX_TYPE"] == "DELETION_VECTORS"]) == 1
    table.drop_partitions([{"p": "b"}])
    assert peers_read(root)[0] == [(7, "a", 8, "newer")]
    assert not index_entries(root)


def big_write(table: mc.Table) -> dict[int, tuple]:
    """3000 rows, so that a small write's file lands below theirs and marks rows in them."""
    rows = [{"k": k, "p": "a", "v": k, "w": f"x{k * k}"} for k in range(3000)]
    table.write(pa.Table.from_pylist(rows, schema=SCHEMA))
    return {r["k"]: (r["k"], "a", r["v"], r["w"]) for r in rows}


def test_a_dynamic_bucket_table_with_deletion_vectors(tmp_path):
    root = tmp_path / "db.db" / "t"
    cat = catalog(root)
    cat.create_database("db", True)
    options = {"bucket": "-1", "deletion-vectors.enabled": "true"}
    schema = pypaimon.Schema.from_pyarrow_schema(SCHEMA, partition_keys=["p"], primary_keys=["p", "k"], options=options)
    cat.create_table(identifier(root), schema, False)
    table = mc.Table.open(root)
    model = big_write(table)
    table.write(pa.Table.from_pylist([{"k": k, "p": "a", "v": -k, "w": "y"} for k in range(0, 40, 3)], schema=SCHEMA))
    model.update({k: (k, "a", -k, "y") for k in range(0, 40, 3)})
    mine, py, rust = peers_read(root)
    assert mine == py == rust == sorted(model.values())
    check_layout(root)
    assert {e["_INDEX_TYPE"] for e in index_entries(root)} == {"HASH", "DELETION_VECTORS"}


def test_a_sequence_field_keeps_a_newer_version_found_above(tmp_path):
    root = tmp_path / "db.db" / "t"
    table = mc.Table.create(
        root, SCHEMA, key=["k", "p"], buckets=1, sequence="v", options={"deletion-vectors.enabled": "true"}
    )
    model = big_write(table)
    later = [{"k": k, "p": "a", "v": -1 if k % 2 else 10**6, "w": "y"} for k in range(6)]
    table.write(pa.Table.from_pylist(later, schema=SCHEMA))
    model.update({r["k"]: (r["k"], "a", r["v"], "y") for r in later if r["v"] > r["k"]})  # a lower v is older
    mine, py, rust = peers_read(root)
    assert mine == py == rust == sorted(model.values())
    check_layout(root)
    assert {f["level"] for f in table.files()} == {4, 5}


@pytest.mark.parametrize("overwrite", [False, True])
def test_two_writes_of_one_bucket_committed_together(tmp_path, overwrite):
    """As the tasks of one Spark job do: each write compacted the bucket on its own; the
    commit compacts the bucket's files of both again, together."""
    root = tmp_path / "db.db" / "t"
    table = mc.Table.create(root, SCHEMA, key=["k", "p"], buckets=1, options={"deletion-vectors.enabled": "true"})
    model = big_write(table)
    messages = []
    for task, keys in enumerate([range(0, 10), range(5, 15)]):
        write = table.new_write(overwrite=overwrite)
        write.write(pa.Table.from_pylist([{"k": k, "p": "a", "v": -k, "w": f"t{task}"} for k in keys], schema=SCHEMA))
        messages += write.prepare_commit()
    table.commit(messages, overwrite=overwrite)
    if overwrite:
        model = {}
    model.update({k: (k, "a", -k, "t0") for k in range(0, 10)})
    model.update({k: (k, "a", -k, "t1") for k in range(10, 15)})
    mine, py, rust = peers_read(root)
    assert [r[0] for r in mine] == sorted(model)
    # Which task's row a key both wrote keeps is not decided (the tasks' sequence numbers
    # overlap, as Paimon's writers' would); each such key is there once, from one of them.
    assert mine == py == rust
    assert [r for r in mine if not 5 <= r[0] < 10] == sorted(v for k, v in model.items() if not 5 <= k < 10)
    check_layout(root)
    written = {p.name for p in root.rglob("data-*.parquet")}
    assert written == {f["path"].split("/")[-1] for s in table.snapshots() for f in table.files(s)}, "nothing left over"


def _all_read(table: mc.Table, warehouse: Path, name: str, expected: list) -> None:
    """merge-core, pypaimon-rust and pypaimon read ``expected`` from the fixture table ``name``."""
    assert _canonical(table.read().read_all().to_pylist()) == expected
    assert _canonical(pypaimon_rust_rows(warehouse / f"{name}.db" / name)) == expected
    theirs = pypaimon.CatalogFactory.create({"warehouse": str(warehouse)}).get_table(f"{name}.{name}")
    builder = theirs.new_read_builder()
    assert _canonical(builder.new_read().to_arrow(builder.new_scan().plan().splits()).to_pylist()) == expected
