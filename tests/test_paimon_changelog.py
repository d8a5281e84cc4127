"""Changes and changelog files: ``Table.changes(start, end)`` against pypaimon's streaming
read of the same snapshots (on tables merge-core and pypaimon wrote) and against a
plain-Python oracle of the rows each producer writes (``none``: each commit's folded
rows; ``input``: each write's input rows, sorted by key, every row kind kept;
``full-compaction`` and ``lookup``: the change of each key a compaction merged)."""

from __future__ import annotations

import functools
from pathlib import Path

import merge_core as mc
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import pypaimon_commit, pypaimon_table, referenced_files
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_paimon_dv_write import ENGINES, KIND, as_tuples, fold, peers_read
from test_paimon_dv_write import SCHEMA as DV_SCHEMA
from test_paimon_dv_write import commits as dv_commits

pypaimon = pytest.importorskip("pypaimon")

SCHEMA = pa.schema([pa.field("k", pa.int64(), False), ("v", pa.string())])
KINDS = ["+I", "-U", "+U", "-D"]


def table(tmp_path: Path, options: dict[str, str], buckets: int = 2) -> mc.Table:
    return mc.Table.create(tmp_path / "db.db" / "t", SCHEMA, key="k", buckets=buckets, options=options)


def commit(t: mc.Table, rows: list[tuple[int, str | None, str]]) -> None:
    data = pa.table({"k": [r[0] for r in rows], "v": [r[1] for r in rows], "op": [r[2] for r in rows]})
    t.write(data, row_kind="op")


def pypaimon_changes(root: Path, start: int, end: int) -> list[dict]:
    """The rows pypaimon's streaming read returns for snapshots ``start + 1`` to ``end``,
    one follow-up plan per snapshot its scanner picks (the table's changelog producer
    decides: APPEND commits' delta files, or changelog files)."""
    table = pypaimon_table(root)
    builder = table.new_stream_read_builder().with_include_row_kind(True)
    scan, read = builder.new_streaming_scan(), builder.new_read()
    rows = []
    for i in range(start + 1, end + 1):
        snapshot = table.snapshot_manager().get_snapshot_by_id(i)
        if scan.follow_up_scanner.should_scan(snapshot):
            rows += read.to_arrow(scan._create_follow_up_plan(snapshot).splits()).to_pylist()
    return rows


def by_key(rows: list[dict]) -> dict[int, list[tuple]]:
    """Each key's changes in the order given (the order between keys is the plan's)."""
    out: dict[int, list[tuple]] = {}
    for r in rows:
        out.setdefault(r["k"], []).append((r["_row_kind"], r["v"]))
    return out


def input_oracle(commits: list[list[tuple]], ignore_update_before: bool = False) -> dict[int, list[tuple]]:
    """changelog-producer = input: every input row, in the order written."""
    out: dict[int, list[tuple]] = {}
    for rows in commits:
        for k, v, kind in rows:
            if not (ignore_update_before and kind == "-U"):
                out.setdefault(k, []).append((kind, v))
    return out


def delta_oracle(commits: list[list[tuple]]) -> dict[int, list[tuple]]:
    """changelog-producer = none (deduplicate): each commit's newest version of a key with
    its own kind, as Paimon's write buffer keeps it (a retract too: it must delete the
    key's older rows)."""
    out: dict[int, list[tuple]] = {}
    for rows in commits:
        newest = {k: (v, kind) for k, v, kind in rows}
        for k, (v, kind) in newest.items():
            out.setdefault(k, []).append((kind, v))
    return out


COMMITS = [
    [(1, "a", "+I"), (2, "b", "+I"), (3, "c", "+I")],
    [(1, "a", "-U"), (1, "A", "+U"), (2, "b", "-D"), (4, "d", "+I")],
    [(3, "c", "-U"), (3, "C", "+U"), (3, "C", "-U"), (3, "CC", "+U"), (5, "e", "+I")],
]


def test_changes_without_producer_are_the_appends_delta_rows(tmp_path):
    t = table(tmp_path, {})
    for rows in COMMITS[:2]:
        commit(t, rows)
    t.compact(full=True)  # snapshot 3, COMPACT: no changes
    commit(t, COMMITS[2])
    assert t.snapshot(3).commit_kind == "COMPACT"
    changes = t.changes(0).read_all()
    assert changes.schema.names == ["_row_kind", "k", "v"]
    assert by_key(changes.to_pylist()) == delta_oracle(COMMITS)
    assert by_key(changes.to_pylist()) == by_key(pypaimon_changes(t.path, 0, 4))
    assert by_key(t.changes(1, 2).read_all().to_pylist()) == delta_oracle(COMMITS[1:2])
    assert t.changes(2, 3).read_all().num_rows == 0
    assert t.snapshot(4).changelog_manifest_list is None  # none writes no changelog


def test_input_changelog_is_the_written_rows(tmp_path):
    t = table(tmp_path, {"changelog-producer": "input"})
    for rows in COMMITS:
        commit(t, rows)
    t.compact(full=True)  # no changelog: a compaction of an input table changes nothing for readers
    snap = t.snapshot(3)
    assert snap.changelog_manifest_list is not None
    changes = t.changes(0).read_all().to_pylist()
    assert by_key(changes) == input_oracle(COMMITS)
    assert by_key(changes) == by_key(pypaimon_changes(t.path, 0, 4))
    assert by_key(t.changes(2).read_all().to_pylist()) == input_oracle(COMMITS[2:])
    assert t.read().read_all().sort_by("k").to_pydict() == {"k": [1, 3, 4, 5], "v": ["A", "CC", "d", "e"]}


def test_input_changelog_in_the_snapshot_as_pypaimon_reads_it(tmp_path):
    t = table(
        tmp_path,
        {"changelog-producer": "input", "changelog-file.prefix": "cl-", "changelog-file.compression": "snappy"},
    )
    commit(t, COMMITS[0])
    snap = pypaimon_table(t.path).snapshot_manager().get_snapshot_by_id(1)
    assert snap.changelog_record_count == 3 and snap.changelog_manifest_list_size > 0
    names = sorted(p.name for p in Path(t.path).glob("bucket-*/*.parquet"))
    changelog_files = [n for n in names if n.startswith("cl-")]
    assert len(changelog_files) == 2 and len(names) == 4  # a data file and a changelog file per bucket
    codec = pq.ParquetFile(next(Path(t.path).glob("bucket-*/cl-*"))).metadata.row_group(0).column(0).compression
    assert codec == "SNAPPY"


def test_changes_of_a_table_pypaimon_wrote(tmp_path):
    catalog = pypaimon.CatalogFactory.create({"warehouse": str(tmp_path)})
    catalog.create_database("db", True)
    options = {"bucket": "2", "changelog-producer": "input", "rowkind.field": "op"}
    schema = pa.schema([pa.field("k", pa.int64(), False), ("v", pa.string()), ("op", pa.string())])
    catalog.create_table(
        "db.t", pypaimon.Schema.from_pyarrow_schema(schema, primary_keys=["k"], options=options), False
    )
    commits = [COMMITS[0], [(1, "A", "+U"), (2, "b", "-D"), (4, "d", "+I")]]  # one version of a key per commit
    for rows in commits:
        pypaimon_commit(catalog.get_table("db.t"), [{"k": k, "v": v, "op": kind} for k, v, kind in rows], schema)
    t = mc.Table.open(tmp_path / "db.db" / "t")
    changes = t.changes(0, columns=["k", "v"]).read_all().to_pylist()
    assert by_key(changes) == input_oracle(commits)
    assert by_key(changes) == by_key(pypaimon_changes(t.path, 0, 2))


def test_changes_range_is_checked(tmp_path):
    t = table(tmp_path, {})
    with pytest.raises(mc.errors.TableNotFoundError):
        t.changes(0)
    commit(t, COMMITS[0])
    commit(t, COMMITS[1])
    for start, end in ((0, 3), (2, 1), (-1, None), ("0", None)):
        with pytest.raises(mc.errors.InvalidInputError):
            t.changes(start, end)
    assert t.changes(2).read_all().num_rows == 0
    t.expire(keep_snapshots=1)
    with pytest.raises(mc.errors.InvalidInputError, match="start from 1"):
        t.changes(0)


ROWS = st.lists(
    st.tuples(st.integers(0, 5), st.none() | st.sampled_from(["x", "y"]), st.sampled_from(KINDS)),
    min_size=1,
    max_size=8,
)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(commits=st.lists(ROWS, min_size=1, max_size=4), ignore_update_before=st.booleans())
def test_input_changelog_of_random_writes(tmp_path_factory, commits, ignore_update_before):
    options = {"changelog-producer": "input", "ignore-update-before": str(ignore_update_before).lower()}
    t = table(tmp_path_factory.mktemp("t"), options)
    for rows in commits:
        commit(t, rows)
    expected = input_oracle(commits, ignore_update_before)
    if not t.snapshots():  # every row was a -U the table ignores: nothing was committed
        assert expected == {}
        return
    changes = t.changes(0).read_all().to_pylist()
    assert by_key(changes) == expected
    assert by_key(changes) == by_key(pypaimon_changes(t.path, 0, t.snapshots()[-1]))


def full_compaction_oracle(steps: list, row_deduplicate: bool = False) -> dict[int, list[tuple]]:
    """changelog-producer = full-compaction on a deduplicate table: each compaction's
    changes, per key written since the last one, between the view the last compaction
    left (``old``) and the new one: -U/+U, -D or +I (an update to an equal value left
    out with ``row_deduplicate``). ``steps``: lists of rows (a commit) or ``"compact"``."""
    model: dict[int, str | None] = {}
    old: dict[int, str | None] = {}
    touched: list[int] = []
    out: dict[int, list[tuple]] = {}
    for step in steps:
        if step == "compact":
            for k in sorted(set(touched)):
                if k in old and k in model and not (row_deduplicate and old[k] == model[k]):
                    out.setdefault(k, []).extend([("-U", old[k]), ("+U", model[k])])
                elif k in old and k not in model:
                    out.setdefault(k, []).append(("-D", old[k]))
                elif k in model and k not in old:
                    out.setdefault(k, []).append(("+I", model[k]))
            old, touched = dict(model), []
            continue
        for k, v, kind in step:
            touched.append(k)
            if kind in ("+I", "+U"):
                model[k] = v
            else:
                model.pop(k, None)
    return out


def run(t: mc.Table, steps: list) -> None:
    for step in steps:
        if step == "compact":
            t.compact(full=True)
        else:
            commit(t, step)


def test_full_compaction_changelog_is_the_change_of_the_merged_view(tmp_path):
    t = table(tmp_path, {"changelog-producer": "full-compaction"})
    steps = [COMMITS[0], "compact", COMMITS[1], [(2, "b2", "+I"), (5, "e", "+I"), (5, "e", "-D")], "compact"]
    run(t, steps)
    assert [t.snapshot(i).changelog_manifest_list is None for i in t.snapshots()] == [
        True,  # a write of a full-compaction table writes no changelog
        False,
        True,
        True,
        False,
    ]
    changes = t.changes(0).read_all().to_pylist()
    assert by_key(changes) == full_compaction_oracle(steps)
    assert by_key(changes) == by_key(pypaimon_changes(t.path, 0, 5))
    assert by_key(changes)[1] == [("+I", "a"), ("-U", "a"), ("+U", "A")]
    assert by_key(changes)[2] == [("+I", "b"), ("-U", "b"), ("+U", "b2")]  # deleted and added again: an update


def test_full_compaction_changelog_with_row_deduplicate(tmp_path):
    options = {"changelog-producer": "full-compaction", "changelog-producer.row-deduplicate": "true"}
    t = table(tmp_path, options)
    steps = [COMMITS[0], "compact", [(1, "a", "+U"), (2, "B", "+U")], "compact"]
    run(t, steps)
    changes = by_key(t.changes(2).read_all().to_pylist())
    assert changes == {2: [("-U", "b"), ("+U", "B")]}  # key 1 was written its same value
    assert changes == by_key(pypaimon_changes(t.path, 2, 4))


STEPS = st.lists(ROWS | st.just("compact"), min_size=1, max_size=6)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=STEPS, row_deduplicate=st.booleans())
@example(steps=[[(0, None, "+I")]] * 5, row_deduplicate=False)  # the fifth write's pick reaches the top level
def test_full_compaction_changelog_of_random_histories(tmp_path_factory, steps, row_deduplicate):
    # write-only: the oracle's full compactions are its compact steps (a write's own pick
    # compacts into the top level once its bucket has num-sorted-run.compaction-trigger
    # runs, and then makes a changelog too, as Paimon's writer does)
    options = {
        "changelog-producer": "full-compaction",
        "changelog-producer.row-deduplicate": str(row_deduplicate),
        "write-only": "true",
    }
    t = table(tmp_path_factory.mktemp("t"), options)
    run(t, steps)
    expected = full_compaction_oracle(steps, row_deduplicate)
    if not t.snapshots():
        assert expected == {}
        return
    changes = t.changes(0).read_all().to_pylist()
    assert by_key(changes) == expected
    assert by_key(changes) == by_key(pypaimon_changes(t.path, 0, t.snapshots()[-1]))


def test_expire_keeps_the_changelogs_of_expired_snapshots(tmp_path):
    options = {"changelog-producer": "input", "changelog.num-retained.min": "3", "changelog.num-retained.max": "3"}
    options["write-only"] = "true"  # one snapshot per write (no write's own COMPACT): the numbers below count them
    t = table(tmp_path, options)
    commits = [[(i, f"v{i}", "+I"), (0, f"z{i}", "+U")] for i in range(1, 6)]
    for rows in commits:
        commit(t, rows)
    t.compact(full=True)  # snapshot 6: the level-0 data files leave the live set
    before = by_key(t.changes(0).read_all().to_pylist())
    result = t.expire(keep_snapshots=1, orphan_age=0)
    # Snapshots 1..5 expire; their changelogs are kept, then the changelogs beyond the
    # newest 3 snapshots (4, 5, 6) expire: 1, 2 and 3 go, 4 and 5 stay.
    assert result["snapshots_removed"] == 5 and result["changelogs_removed"] == 3
    root = Path(t.path)
    assert sorted(p.name for p in (root / "changelog").glob("changelog-*")) == ["changelog-4", "changelog-5"]
    assert (root / "changelog" / "LATEST").read_text() == "5" and (root / "changelog" / "EARLIEST").read_text() == "4"
    assert by_key(t.changes(3).read_all().to_pylist()) == input_oracle(commits[3:])
    with pytest.raises(mc.errors.InvalidInputError):
        t.changes(2)
    assert before == input_oracle(commits)
    # Nothing a kept snapshot or changelog names went; the level-0 data files did.
    on_disk = {p.name for p in root.glob("bucket-*/*.parquet")}
    assert on_disk == referenced_files(root)
    assert sum(p.startswith("changelog-") for p in on_disk) == 2 * 2  # changelogs 4 and 5, 2 buckets each
    assert t.read().read_all().sort_by("k").to_pydict()["k"] == [0, 1, 2, 3, 4, 5]


def test_expire_without_decoupled_changelogs_keeps_none(tmp_path):
    t = table(tmp_path, {"changelog-producer": "input"})
    for rows in COMMITS:
        commit(t, rows)
    assert t.expire(keep_snapshots=1, orphan_age=0)["changelogs_removed"] == 0
    assert not (Path(t.path) / "changelog").exists()
    assert by_key(t.changes(2).read_all().to_pylist()) == input_oracle(COMMITS[2:])


def test_expire_keeps_the_delta_files_of_kept_changelogs_without_a_producer(tmp_path):
    # write-only: one snapshot per write (no write's own COMPACT), as the numbers below count them
    t = table(tmp_path, {"changelog.num-retained.min": "3", "changelog.num-retained.max": "3", "write-only": "true"})
    commits = [[(i, f"v{i}", "+I"), (0, f"z{i}", "+U")] for i in range(1, 6)]
    for rows in commits:
        commit(t, rows)
    t.compact(full=True)
    names = {i: {Path(f["path"]).name for f in t.files(i)} for i in t.snapshots()}
    added = {i: names[i] - names.get(i - 1, set()) for i in range(1, 6)}
    t.expire(keep_snapshots=1, orphan_age=0)
    root = Path(t.path)
    assert by_key(t.changes(3).read_all().to_pylist()) == delta_oracle(commits[3:])
    on_disk = {p.name for p in root.glob("bucket-*/*.parquet")}
    assert on_disk == referenced_files(root) == names[6] | added[4] | added[5]  # commits 1 to 3's files went


def test_an_overwrite_commits_no_changelog(tmp_path):
    """As Paimon's overwrite ("Overwrite mode currently does not commit any changelog"):
    the write's changelog files go, and changes() skips the OVERWRITE snapshot."""
    t = table(tmp_path, {"changelog-producer": "input"})
    commit(t, COMMITS[0])
    t.write(pa.table({"k": [7], "v": ["g"]}), overwrite=True)
    assert t.snapshot(2).commit_kind == "OVERWRITE" and t.snapshot(2).changelog_manifest_list is None
    assert by_key(t.changes(0).read_all().to_pylist()) == input_oracle(COMMITS[:1])
    on_disk = {p.name for p in Path(t.path).glob("bucket-*/*.parquet")}
    assert on_disk == referenced_files(Path(t.path))


MIXED_STEP = st.tuples(st.sampled_from(["merge-core", "pypaimon"]), ROWS) | st.just("compact")
KIND_SCHEMA = pa.schema([*SCHEMA, ("op", pa.string())])  # rowkind.field: how pypaimon takes row kinds


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(MIXED_STEP, min_size=1, max_size=6), producer=st.sampled_from(["none", "input"]))
def test_changes_of_histories_both_writers_made_equal_pypaimons_streaming_read(tmp_path_factory, steps, producer):
    """Commits by merge-core and pypaimon in random order, compactions by merge-core:
    changes() between two snapshots equals pypaimon's streaming read of them."""
    options = {"changelog-producer": producer, "rowkind.field": "op"}
    root = tmp_path_factory.mktemp("t") / "db.db" / "t"
    t = mc.Table.create(root, KIND_SCHEMA, key="k", buckets=2, options=options)
    for step in steps:
        if step == "compact":
            t.compact(full=True)
            continue
        writer_name, rows = step
        if writer_name == "pypaimon":  # pypaimon folds a commit's versions of a key itself: one version each
            rows = list({k: (k, v, kind) for k, v, kind in rows}.values())
        data = pa.table({"k": [r[0] for r in rows], "v": [r[1] for r in rows], "op": [r[2] for r in rows]})
        if writer_name == "merge-core":
            t.write(data)
        else:
            pypaimon_commit(pypaimon_table(root), data.to_pylist(), KIND_SCHEMA)
    ids = t.snapshots()
    if not ids:
        return
    for start in (0, ids[len(ids) // 2]):
        assert by_key(t.changes(start).read_all().to_pylist()) == by_key(pypaimon_changes(root, start, ids[-1]))


def test_input_changelog_orders_a_keys_rows_as_the_write_sorts_them(tmp_path):
    """Paimon's write buffer sorts by key, then sequence.field, then write order: the
    changelog holds a key's rows in that order (all of them, whatever the merge engine
    folds them into)."""
    schema = pa.schema([pa.field("k", pa.int64(), False), ("v", pa.string()), ("ts", pa.int64())])
    options = {"changelog-producer": "input", "merge-engine": "partial-update", "sequence.field": "ts"}
    t = mc.Table.create(tmp_path / "db.db" / "t", schema, key="k", buckets=1, options=options)
    t.write(pa.table({"k": [2, 1, 1, 1], "v": ["x", "a", None, "c"], "ts": [1, 5, 2, 5]}, schema=schema))
    changes = t.changes(0).read_all().to_pydict()
    assert changes == {"_row_kind": ["+I"] * 4, "k": [1, 1, 1, 2], "v": [None, "a", "c", "x"], "ts": [2, 5, 5, 1]}
    assert changes == pa.Table.from_pylist(pypaimon_changes(t.path, 0, 1)).select(list(changes)).to_pydict()
    assert t.read().read_all().to_pydict() == {"k": [1, 2], "v": ["c", "x"], "ts": [5, 1]}


def test_changes_of_postponed_rows_are_refused_by_name(tmp_path):
    """A postponed-bucket table's writes wait in bucket-postpone/ unsorted: changes() says
    so rather than take the file for a damaged one; the compaction's rows it reads."""
    options = {"bucket": "-2", "postpone.batch-write-fixed-bucket": "false"}
    t = mc.Table.create(tmp_path / "db.db" / "t", SCHEMA, key="k", options=options)
    t.write(pa.table({"k": [3, 1, 2], "v": ["c", "a", "b"]}))
    with pytest.raises(mc.errors.UnsupportedFeatureError, match="postponed buckets"):
        t.changes(0)
    t.compact()
    assert t.changes(1).read_all().num_rows == 0  # a COMPACT commit: no changes without a producer


def test_a_changelog_producer_on_a_postponed_table_is_refused_by_name(tmp_path):
    options = {"bucket": "-2", "changelog-producer": "full-compaction"}
    t = mc.Table.create(tmp_path / "db.db" / "t", SCHEMA, key="k", options=options)
    for act in (lambda: t.write(pa.table({"k": [1], "v": ["a"]})), t.compact):
        with pytest.raises(mc.errors.UnsupportedFeatureError, match="postponed-bucket"):
            act()


def test_expire_removes_changelog_files_of_the_tables_own_prefix(tmp_path):
    t = table(tmp_path, {"changelog-producer": "input", "changelog-file.prefix": "cl-"})
    for rows in COMMITS:
        commit(t, rows)
    t.expire(keep_snapshots=1, orphan_age=0)
    on_disk = {p.name for p in Path(t.path).glob("bucket-*/*.parquet")}
    assert on_disk == referenced_files(Path(t.path))  # the expired snapshots' cl- files went


def test_input_changelog_of_a_deletion_vector_table(tmp_path):
    """Writes to a deletion-vector table are compacted by lookup before they commit; their
    changelog is still the input rows, in the APPEND snapshot. Two writes of one bucket
    committed together (a Spark job's tasks) are compacted again, together: both
    changelogs stay."""
    t = table(tmp_path, {"changelog-producer": "input", "deletion-vectors.enabled": "true"}, buckets=1)
    commit(t, COMMITS[0])
    writes = []
    for rows in COMMITS[1:]:
        with t.new_write(row_kind="op") as w:
            w.write(pa.table({"k": [r[0] for r in rows], "v": [r[1] for r in rows], "op": [r[2] for r in rows]}))
            writes += w.prepare_commit()
    t.commit(writes)
    changes = by_key(t.changes(0).read_all().to_pylist())
    assert changes == input_oracle(COMMITS)
    assert changes == by_key(pypaimon_changes(t.path, 0, t.snapshots()[-1]))
    assert {p.name for p in Path(t.path).glob("bucket-*/*.parquet")} == referenced_files(Path(t.path))


# -- changelog-producer = lookup ----------------------------------------------------------

LOOKUP_ENGINES = [  # (merge engine, deletion vectors): Paimon refuses first-row with them
    ("deduplicate", False),
    ("deduplicate", True),
    ("partial-update", False),
    ("partial-update", True),
    ("aggregation", False),
    ("aggregation", True),
    ("first-row", False),
]


def lookup_table(root: Path, engine: str, dv: bool, options: dict[str, str] | None = None) -> mc.Table:
    merge = dict(ENGINES).get(engine, (engine, {}))[0]
    options = {"changelog-producer": "lookup", "deletion-vectors.enabled": str(dv).lower(), **(options or {})}
    return mc.Table.create(root, DV_SCHEMA, key="k", buckets=2, merge=merge, options=options)


def fold_row(engine: str, old: dict | None, new: dict) -> dict | None:
    if engine == "first-row":
        return old or {c: new[c] for c in ("k", "p", "v", "w")}
    if new[KIND] == "-U":  # deduplicate's newest version a retract: the key is deleted
        return None
    return fold(engine, old, new)


def lookup_oracle(
    engine: str, dv: bool, steps: list, row_deduplicate: bool = False, bucket_of=lambda k: 0
) -> tuple[dict, list[dict]]:
    """changelog-producer = lookup, as Paimon's ``LookupChangelogMergeFunctionWrapper`` (and
    ``FirstRowMergeFunctionWrapper``) make it: each merge-core write compacts the level-0
    rows waiting in the buckets it writes (pypaimon's writes, which do not compact, and its
    own; ``compact`` takes every bucket) onto the merged view; for each key they hold,
    between its row before and after: ``-U``/``+U`` (left out with ``row_deduplicate`` if
    the values are equal), ``-D`` if deleted, ``+I`` if new, nothing if it was not there
    and is not now; first-row: ``+I`` for a new key only. Returns each key's changes and
    the rows readers see after each step (a deletion-vector or first-row table's readers
    skip the rows waiting at level 0)."""
    view: dict[int, dict] = {}
    waiting: list[dict] = []
    out: dict[int, list[tuple]] = {}
    seen = []

    def folded(rows: dict[int, dict], more: list[dict]) -> dict[int, dict]:
        rows = dict(rows)
        for row in more:
            got = fold_row(engine, rows.get(row["k"]), row)
            rows.pop(row["k"], None) if got is None else rows.__setitem__(row["k"], got)
        return rows

    for writer, rows in steps:
        waiting += rows
        if writer in ("merge-core", "compact"):
            buckets = {bucket_of(r["k"]) for r in rows} if writer == "merge-core" else None
            taken = [r for r in waiting if buckets is None or bucket_of(r["k"]) in buckets]
            waiting = [r for r in waiting if not (buckets is None or bucket_of(r["k"]) in buckets)]
            new = folded(view, taken)
            for k in sorted({r["k"] for r in taken}):
                old, now = view.get(k), new.get(k)
                if engine == "first-row":
                    changes = [("+I", now)] if old is None and now is not None else []
                elif old is None:
                    changes = [] if now is None else [("+I", now)]
                elif now is None:
                    changes = [("-D", old)]
                elif row_deduplicate and old == now:
                    changes = []
                else:
                    changes = [("-U", old), ("+U", now)]
                if changes:
                    out.setdefault(k, []).extend((kind, r["v"], r["w"]) for kind, r in changes)
            view = new
        seen.append(view if engine == "first-row" or dv else folded(view, waiting))
    return out, seen


@functools.cache
def bucket_of(t: mc.Table, k: int) -> int:
    return t.bucket_ids(pa.RecordBatch.from_pylist([{"k": k, "p": "a", "v": None, "w": None}], schema=DV_SCHEMA))[
        0
    ].as_py()


def lookup_changes_by_key(rows: list[dict]) -> dict[int, list[tuple]]:
    out: dict[int, list[tuple]] = {}
    for r in rows:
        out.setdefault(r["k"], []).append((r["_row_kind"], r["v"], r["w"]))
    return out


def lookup_history(engine: str) -> list:
    """Five merge-core commits (inserts, updates with nulls, deletes of keys written, of
    keys of the same commit and of a key never written) and a pypaimon commit between the
    third and the fourth; retracts only where the engine takes them."""
    steps: list = [("merge-core", rows) for rows in dv_commits(False)]
    if engine != "deduplicate":
        steps = [(w, [r for r in rows if r[KIND] == "+I"]) for w, rows in steps]
    theirs = [{"k": k, "p": "a", "v": 100 + k, "w": None if k % 2 else "py", KIND: "+I"} for k in range(2, 9)]
    return [*steps[:3], ("pypaimon", theirs), *steps[3:]]


def run_lookup(t: mc.Table, steps: list, check=None) -> None:
    for i, (writer, rows) in enumerate(steps):
        if writer == "compact":
            t.compact(full=True)
        elif writer == "merge-core":
            data = pa.Table.from_pylist(rows, schema=DV_SCHEMA.append(pa.field(KIND, pa.string())))
            t.write(data, row_kind=KIND)
        else:
            plain = [{c: r[c] for c in DV_SCHEMA.names} for r in rows]
            pypaimon_commit(pypaimon_table(Path(t.path)), plain, DV_SCHEMA)
        if check is not None:
            check(i)


@pytest.mark.parametrize(("engine", "dv"), LOOKUP_ENGINES)
def test_lookup_changelog_of_a_history_with_a_pypaimon_write(tmp_path, engine, dv):
    """Each merge-core write compacts its bucket's level-0 files by lookup and writes the
    changes they make as a changelog file in the compaction's snapshot; pypaimon's write
    (level 0, no changelog) is compacted by the next one. changes(), pypaimon's streaming
    read and the oracle agree; merge-core, pypaimon and pypaimon-rust read the model's
    rows after each commit."""
    root = tmp_path / "db.db" / "t"
    t = lookup_table(root, engine, dv)
    steps = lookup_history(engine)
    expected, views = lookup_oracle(engine, dv, steps, bucket_of=functools.partial(bucket_of, t))

    def check(i: int) -> None:
        mine, theirs, rust = peers_read(root)
        assert mine == theirs == rust == as_tuples(list(views[i].values())), f"after step {i}"

    run_lookup(t, steps, check)
    kinds = [t.snapshot(i).commit_kind for i in t.snapshots()]
    with_changelog = [t.snapshot(i).changelog_manifest_list is not None for i in t.snapshots()]
    assert any(with_changelog) and all(kind == "COMPACT" for kind, c in zip(kinds, with_changelog, strict=True) if c)
    latest = t.snapshots()[-1]
    changes = lookup_changes_by_key(t.changes(0).read_all().to_pylist())
    assert changes == expected
    assert changes == lookup_changes_by_key(pypaimon_changes(root, 0, latest))
    middle = t.snapshots()[len(kinds) // 2]
    assert lookup_changes_by_key(t.changes(middle).read_all().to_pylist()) == lookup_changes_by_key(
        pypaimon_changes(root, middle, latest)
    )
    assert {p.name for p in root.glob("bucket-*/*.parquet")} == referenced_files(root)
    if engine == "first-row":
        assert all(kind == "+I" for rows in changes.values() for kind, _, _ in rows)
    else:
        assert {kind for rows in changes.values() for kind, _, _ in rows} == {"+I", "-U", "+U"} | (
            {"-D"} if engine == "deduplicate" else set()
        )
        assert 99 not in changes  # a delete of a key never written changes nothing


@pytest.mark.parametrize("dv", [False, True])
def test_lookup_changelog_with_row_deduplicate(tmp_path, dv):
    root = tmp_path / "db.db" / "t"
    t = lookup_table(root, "deduplicate", dv, {"changelog-producer.row-deduplicate": "true"})
    first = [{"k": k, "p": "a", "v": k, "w": "x", KIND: "+I"} for k in range(4)]
    again = [{**first[0], KIND: "+U"}, {**first[1], "w": "changed", KIND: "+U"}, {**first[2], KIND: "-D"}]
    steps = [("merge-core", first), ("merge-core", again)]
    expected, _ = lookup_oracle("deduplicate", dv, steps, row_deduplicate=True)
    run_lookup(t, steps)
    changes = lookup_changes_by_key(t.changes(2).read_all().to_pylist())
    assert changes == {1: [("-U", 1, "x"), ("+U", 1, "changed")], 2: [("-D", 2, "x")]}  # key 0 kept its values
    assert lookup_changes_by_key(t.changes(0).read_all().to_pylist()) == expected
    assert changes == lookup_changes_by_key(pypaimon_changes(root, 2, t.snapshots()[-1]))


@pytest.mark.parametrize(("engine", "dv"), [("aggregation", True), ("aggregation", False), ("first-row", False)])
def test_lookup_changelog_of_a_write_below_the_top_level(tmp_path, engine, dv):
    """A small write onto a large top-level file: the forced level-0 pick stops below it.
    With deletion vectors the rows before are looked up above the output level and
    marked; first-row leaves out the rows whose key is above; a table with neither
    cannot hide the rows found, so the write's compaction takes the whole bucket (an
    aggregate stored twice above level 0 would be summed twice by every reader)."""
    root = tmp_path / "db.db" / "t"
    t = lookup_table(root, engine, dv)
    many = [{"k": k, "p": "a", "v": k, "w": f"w{k * k}", KIND: "+I"} for k in range(3000)]
    few = [{"k": k, "p": "a", "v": 1, "w": None, KIND: "+I"} for k in (5, 7, 5000)]
    steps = [("merge-core", many), ("merge-core", few)]
    expected, views = lookup_oracle(engine, dv, steps)
    run_lookup(t, steps)
    assert sorted({f["level"] for f in t.files()}) == ([5] if engine == "aggregation" and not dv else [4, 5])
    changes = lookup_changes_by_key(t.changes(2).read_all().to_pylist())
    assert changes == {
        **({} if engine == "first-row" else {5: [("-U", 5, "w25"), ("+U", 6, "w25")]}),
        **({} if engine == "first-row" else {7: [("-U", 7, "w49"), ("+U", 8, "w49")]}),
        5000: [("+I", 1, None)],
    }
    assert lookup_changes_by_key(t.changes(0).read_all().to_pylist()) == expected
    assert changes == lookup_changes_by_key(pypaimon_changes(root, 2, t.snapshots()[-1]))
    mine, theirs, rust = peers_read(root)
    assert mine == theirs == rust == as_tuples(list(views[-1].values()))


@pytest.mark.parametrize(("engine", "dv"), [("aggregation", True), ("deduplicate", True), ("first-row", False)])
def test_lookup_changelog_of_a_universal_pick(tmp_path, engine, dv):
    """Trigger 2, 6 levels: a large write (to level 5), a middling one (two runs far apart:
    nothing for the universal pick, level 0 forced up just below, to 4), then a small one:
    three runs, more than the trigger, so the universal pick (run count) merges level 0
    with level 4 into level 4, as Paimon's ``ForceUpLevel0Compaction`` tries it first;
    the forced pick would have taken level 0 alone, into level 3. The changelog is the
    small write's change all the same."""
    root = tmp_path / "db.db" / "t"
    t = lookup_table(root, engine, dv, {"num-levels": "6", "num-sorted-run.compaction-trigger": "2"})
    many = [{"k": k, "p": "a", "v": k, "w": f"w{k}", KIND: "+I"} for k in range(3000)]
    middling = [{"k": k, "p": "a", "v": 2, "w": None, KIND: "+I"} for k in range(2000, 3500)]  # 500 new keys
    few = [{"k": k, "p": "a", "v": 1, "w": None, KIND: "+I"} for k in (3, 5, 5000)]
    steps = [("merge-core", many), ("merge-core", middling), ("merge-core", few)]
    expected, views = lookup_oracle(engine, dv, steps)
    levels = []
    run_lookup(t, steps, lambda i: levels.append(sorted({f["level"] for f in t.files()})))
    assert levels == [[5], [4, 5], [4, 5]]
    assert lookup_changes_by_key(t.changes(0).read_all().to_pylist()) == expected
    latest = t.snapshots()[-1]
    assert lookup_changes_by_key(t.changes(latest - 1).read_all().to_pylist()) == lookup_changes_by_key(
        pypaimon_changes(root, latest - 1, latest)
    )
    mine, theirs, rust = peers_read(root)
    assert mine == theirs == rust == as_tuples(list(views[-1].values()))


def test_an_overwrite_of_a_lookup_table_commits_no_changelog(tmp_path):
    root = tmp_path / "db.db" / "t"
    t = lookup_table(root, "deduplicate", False)
    run_lookup(t, [("merge-core", [{"k": 1, "p": "a", "v": 1, "w": "x", KIND: "+I"}])])
    t.write(pa.table({"k": [2], "p": ["a"], "v": [2], "w": ["y"]}, schema=DV_SCHEMA), overwrite=True)
    assert t.snapshot(t.snapshots()[-1]).changelog_manifest_list is None
    assert lookup_changes_by_key(t.changes(0).read_all().to_pylist()) == {1: [("+I", 1, "x")]}
    assert {p.name for p in root.glob("bucket-*/*.parquet")} == referenced_files(root)


@pytest.mark.parametrize(("engine", "dv"), [("deduplicate", False), ("aggregation", True), ("first-row", False)])
def test_lookup_changelog_of_a_compaction_of_pypaimons_level_zero_files(tmp_path, engine, dv):
    """pypaimon's writes stay at level 0 without a changelog; compact() takes them, and
    its changelog is their change (Paimon's rewriteLookupChangelog: a compaction of level-0
    files of a lookup table makes one). A compaction without level-0 files makes none."""
    root = tmp_path / "db.db" / "t"
    t = lookup_table(root, engine, dv)
    mine = [{"k": k, "p": "a", "v": k, "w": "mc", KIND: "+I"} for k in range(6)]
    theirs = [{"k": k, "p": "a", "v": 10 * k, "w": None, KIND: "+I"} for k in range(3, 9)]
    steps = [("merge-core", mine), ("pypaimon", theirs), ("compact", []), ("compact", [])]
    expected, views = lookup_oracle(engine, dv, steps)
    run_lookup(t, steps)
    ids = t.snapshots()
    assert [t.snapshot(i).commit_kind for i in ids] == ["APPEND", "COMPACT", "APPEND", "COMPACT"]
    assert t.snapshot(ids[-1]).changelog_manifest_list is not None
    changes = lookup_changes_by_key(t.changes(0).read_all().to_pylist())
    assert changes == expected
    assert changes == lookup_changes_by_key(pypaimon_changes(root, 0, ids[-1]))
    assert changes[8] == [("+I", 80, None)]
    mine_read, pypaimon_read, rust_read = peers_read(root)
    assert mine_read == pypaimon_read == rust_read == as_tuples(list(views[-1].values()))


LOOKUP_ROW = st.fixed_dictionaries(
    {
        "k": st.integers(0, 4),
        "p": st.just("a"),
        "v": st.none() | st.integers(0, 1),  # few values: updates to an equal row (row-deduplicate) are common
        "w": st.none() | st.just("x"),
        KIND: st.sampled_from(KINDS),
    }
)
LOOKUP_STEP = st.tuples(
    st.sampled_from(["merge-core", "merge-core", "pypaimon"]), st.lists(LOOKUP_ROW, min_size=1, max_size=6)
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    engine_dv=st.sampled_from(LOOKUP_ENGINES),
    steps=st.lists(LOOKUP_STEP, min_size=2, max_size=5),
    row_deduplicate=st.booleans(),
)
def test_lookup_changelog_of_random_histories(tmp_path_factory, engine_dv, steps, row_deduplicate):
    """Random writes by merge-core and pypaimon on a lookup table of every engine, with
    deletion vectors and without: after every commit the three readers read the oracle's
    rows; changes() equals the oracle and pypaimon's streaming read."""
    engine, dv = engine_dv
    if engine != "deduplicate":  # the other engines' retracts are refused, or read differently by each reader
        steps = [(w, [{**r, KIND: "+I"} for r in rows]) for w, rows in steps]
    # pypaimon folds a commit's versions of a key itself, and takes no row kinds here: one +I per key
    steps = [
        (w, list({r["k"]: {**r, KIND: "+I"} for r in rows}.values()) if w == "pypaimon" else rows) for w, rows in steps
    ]
    steps = [(w, rows) for w, rows in steps if rows]
    root = tmp_path_factory.mktemp("t") / "db.db" / "t"
    t = lookup_table(root, engine, dv, {"changelog-producer.row-deduplicate": str(row_deduplicate).lower()})
    expected, views = lookup_oracle(engine, dv, steps, row_deduplicate, functools.partial(bucket_of, t))

    def check(i: int) -> None:
        if t.snapshots():
            mine, theirs, rust = peers_read(root)
            assert mine == theirs == rust == as_tuples(list(views[i].values())), f"after step {i}"

    run_lookup(t, steps, check)
    if not t.snapshots():
        assert expected == {}
        return
    changes = lookup_changes_by_key(t.changes(0).read_all().to_pylist())
    assert changes == expected
    assert changes == lookup_changes_by_key(pypaimon_changes(root, 0, t.snapshots()[-1]))


@pytest.mark.parametrize("dv", [False, True])
def test_lookup_changelog_of_two_writes_committed_together(tmp_path, dv):
    """Two writes of the same buckets committed together (a Spark job's tasks): each
    compacted its buckets alone; the commit undoes those compactions (their changelog
    files go with them) and compacts the buckets' level-0 files again, together, with one
    changelog of both writes."""
    root = tmp_path / "db.db" / "t"
    t = lookup_table(root, "aggregation", dv)
    first = [{"k": k, "p": "a", "v": k, "w": "x", KIND: "+I"} for k in range(6)]
    ours = [{"k": k, "p": "a", "v": 10, "w": "ours", KIND: "+I"} for k in (0, 2, 4, 6)]
    theirs = [{"k": k, "p": "a", "v": 20, "w": None, KIND: "+I"} for k in (1, 3, 7)]
    run_lookup(t, [("merge-core", first)])
    messages = []
    for rows in (ours, theirs):
        with t.new_write(row_kind=KIND) as w:
            w.write(pa.Table.from_pylist(rows, schema=DV_SCHEMA.append(pa.field(KIND, pa.string()))))
            messages += w.prepare_commit()
    assert len({(m.partition, m.bucket) for m in messages}) < len(messages)  # both wrote a bucket
    t.commit(messages)
    expected, views = lookup_oracle("aggregation", dv, [("merge-core", first), ("merge-core", ours + theirs)])
    changes = lookup_changes_by_key(t.changes(0).read_all().to_pylist())
    assert changes == expected
    assert changes == lookup_changes_by_key(pypaimon_changes(root, 0, t.snapshots()[-1]))
    mine, pypaimon_read, rust = peers_read(root)
    assert mine == pypaimon_read == rust == as_tuples(list(views[-1].values()))
    assert {p.name for p in root.glob("bucket-*/*.parquet")} == referenced_files(root)


def test_lookup_changelog_of_a_retract_of_a_key_found_above(tmp_path):
    """A write that retracts a key the level above holds, on a deletion-vector table: the
    compaction takes only the level-0 file and finds the key above; the merge deletes it,
    so the merged rows lack it, and its -D must come from the level-0 file's keys (found
    by the random histories: the changelog had no -D)."""
    row = {"p": "a", "v": None, "w": None}
    steps = [
        ("merge-core", [{"k": 0, **row, KIND: "+I"}, {"k": 3, **row, KIND: "+I"}]),
        ("merge-core", [{"k": 0, **row, KIND: "-U"}]),
    ]
    root = tmp_path / "db.db" / "t"
    t = lookup_table(root, "deduplicate", True)
    expected, _ = lookup_oracle("deduplicate", True, steps, False, functools.partial(bucket_of, t))
    run_lookup(t, steps)
    changes = lookup_changes_by_key(t.changes(0).read_all().to_pylist())
    assert changes == expected
    assert changes[0] == [("+I", None, None), ("-D", None, None)]
