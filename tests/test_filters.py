"""``Table.read(filter=...)``: value statistics written as Paimon writes them, files and
partitions skipped by Paimon's rules, and the merged rows filtered exactly. The filtered
read equals the unfiltered read filtered afterwards, for every merge engine over random
histories; skipped files are never opened (they are removed from disk first); pypaimon
reads the statistics merge-core writes with its own filters, and writes the same bytes."""

from __future__ import annotations

import glob
import os
import subprocess
import sys
from pathlib import Path

import merge_core as mc
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from helpers import pypaimon_commit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from merge_core.errors import InvalidInputError

SCHEMA = pa.schema(
    [
        pa.field("k", pa.int64(), nullable=False),
        pa.field("p", pa.string(), nullable=False),
        ("v", pa.int64()),
        ("s", pa.string()),
    ]
)

ENGINES = {
    "deduplicate": ("deduplicate", {}),
    "partial-update": ("partial-update", {}),
    "aggregation": (mc.Aggregate({"v": "sum", "s": "max"}), {}),
}


def leaves():
    column = st.sampled_from(["k", "v", "s", "p"])
    numbers = st.integers(-3, 12)
    strings = st.sampled_from(["a", "b", "x", "zz", "a" * 20, "a" * 21])

    def compare(c):
        value = numbers if c in ("k", "v") else strings
        ops = st.sampled_from(["==", "!=", "<", "<=", ">", ">="])
        return st.tuples(ops, value).map(lambda t: _compare(pc.field(c), *t))

    def isin(c):
        value = numbers if c in ("k", "v") else strings
        return st.lists(value, min_size=1, max_size=3).map(lambda vs: pc.field(c).isin(vs))

    nulls = column.flatmap(lambda c: st.sampled_from([pc.field(c).is_null(), pc.field(c).is_valid()]))
    return column.flatmap(lambda c: st.one_of(compare(c), isin(c))) | nulls


def _compare(field, op, value):
    return {
        "==": field == value,
        "!=": field != value,
        "<": field < value,
        "<=": field <= value,
        ">": field > value,
        ">=": field >= value,
    }[op]


predicates = st.recursive(
    leaves(),
    lambda inner: st.one_of(
        st.tuples(inner, inner).map(lambda t: t[0] & t[1]),
        st.tuples(inner, inner).map(lambda t: t[0] | t[1]),
        inner.map(lambda e: ~e),
    ),
    max_leaves=4,
)

row = st.fixed_dictionaries(
    {
        "k": st.integers(0, 9),
        "p": st.sampled_from(["p1", "p2"]),
        "v": st.none() | st.integers(-2, 10),
        "s": st.none() | st.sampled_from(["a", "b", "x", "zz", "a" * 20, "a" * 25]),
    }
)
step = st.one_of(
    st.lists(row, min_size=1, max_size=8).map(lambda rows: ("write", rows)),
    st.lists(st.tuples(st.integers(0, 9), st.sampled_from(["p1", "p2"])), min_size=1, max_size=3).map(
        lambda keys: ("delete", keys)
    ),
    st.booleans().map(lambda full: ("compact", full)),
)


def build(path, engine, steps, buckets):
    merge, options = ENGINES[engine]
    table = mc.Table.create(path, SCHEMA, key="k", partition_by="p", buckets=buckets, merge=merge, options=options)
    for kind, arg in steps:
        if kind == "write":
            rows = list({(r["p"], r["k"]): r for r in arg}.values())
            table.write(pa.Table.from_pylist(rows, schema=SCHEMA))
        elif kind == "delete" and engine.startswith("deduplicate"):  # the others refuse retracts
            keys = list(set(arg))
            table.delete(pa.table({"k": [k for k, _ in keys], "p": [p for _, p in keys]}))
        elif kind == "compact":
            table.compact(full=arg)
    return table


def rows(table: pa.Table) -> list[dict]:
    return sorted(table.to_pylist(), key=lambda r: (r["p"], r["k"]))


@pytest.mark.parametrize("engine", sorted(ENGINES))
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    steps=st.lists(step, min_size=1, max_size=6), filters=st.lists(predicates, min_size=1, max_size=4), data=st.data()
)
def test_filtered_read_equals_read_then_filter(tmp_path_factory, engine, steps, filters, data):
    buckets = data.draw(st.sampled_from([1, 2]))
    table = build(tmp_path_factory.mktemp("t") / "t", engine, steps, buckets)
    whole = table.read().read_all()
    for expression in filters:
        expected = rows(whole.filter(expression))
        assert rows(table.read(filter=expression).read_all()) == expected, str(expression)
        planned = table.plan(filter=expression, columns=["k"])
        got = [r for split in planned for r in table.read_split(split).read_all().to_pylist()]
        assert sorted(r["k"] for r in got) == sorted(r["k"] for r in expected)


def test_skipped_files_are_never_opened(tmp_path):
    """Files the statistics exclude are removed from disk: the read still answers."""
    table = mc.Table.create(tmp_path / "t", SCHEMA, key="k", partition_by="p", buckets=1)
    table.write(pa.table({"k": [1, 2, 3], "p": ["p1"] * 3, "v": [1, 2, 3], "s": ["a", "b", "c"]}, schema=SCHEMA))
    table.compact(full=True)  # one file at the top level: tested by its own value statistics
    table.write(pa.table({"k": [1, 2], "p": ["p2"] * 2, "v": [50, 60], "s": ["x", "y"]}, schema=SCHEMA))
    files = {f["partition"]: f["path"] for f in table.files()}
    os.remove(table.path / files[("p1",)])
    stream = table.read(filter=pc.field("v") >= 40)
    assert rows(stream.read_all()) == [{"k": 1, "p": "p2", "v": 50, "s": "x"}, {"k": 2, "p": "p2", "v": 60, "s": "y"}]
    assert stream.stats["files_skipped_by_value_stats"] == 1 and stream.stats["files_read"] == 1
    by_partition = table.read(filter=(pc.field("p") == "p2") & (pc.field("k") < 5))
    assert by_partition.read_all().num_rows == 2 and by_partition.stats["partitions_skipped_by_filter"] == 1
    by_key = table.read(filter=pc.field("k") > 2)  # p1's file holds k 3: kept; p2's holds 1..2: skipped
    with pytest.raises(mc.errors.CorruptTableError):
        by_key.read_all()
    assert table.plan(filter=pc.field("k") > 2).stats["files_skipped_by_key_stats"] == 1


def test_overlapping_files_of_a_merging_engine_are_all_read(tmp_path):
    """Two level-0 files of an aggregation table: a sum can leave every file's range, so
    no file is skipped by value statistics (Paimon's rule)."""
    table = mc.Table.create(
        tmp_path / "t", SCHEMA, key="k", partition_by="p", buckets=1, merge=mc.Aggregate({"v": "sum"})
    )
    for v in (3, 4):
        table.write(pa.table({"k": [1], "p": ["p1"], "v": [v], "s": ["a"]}, schema=SCHEMA))
    stream = table.read(filter=pc.field("v") == 7)
    assert stream.read_all()["v"].to_pylist() == [7]
    assert stream.stats["files_skipped_by_value_stats"] == 0


def test_filters_refused_by_name(tmp_path):
    table = mc.Table.create(tmp_path / "t", SCHEMA, key="k", partition_by="p", buckets=1)
    with pytest.raises(InvalidInputError, match="add_checked"):
        table.read(filter=pc.field("v") + 1 > 2)
    with pytest.raises(InvalidInputError, match="nope"):
        table.read(filter=pc.field("nope") == 1)
    with pytest.raises(InvalidInputError, match="Expression"):
        table.read(filter="k = 1")
    with pytest.raises(InvalidInputError, match="compare a column with a value"):
        table.read(filter=pc.field("k") == pc.field("v"))
    table.write(pa.table({"k": [1, 2], "p": ["p1", "p1"], "v": [1, 2], "s": ["a", "b"]}, schema=SCHEMA))
    assert table.read(filter=pa.scalar(1) < pc.field("k")).read_all()["k"].to_pylist() == [2]


def test_value_stats_modes(tmp_path):
    """truncate(N) cuts strings and rounds the max up; none leaves columns out (dense
    store); counts keeps null counts only, as Paimon's collectors do."""
    from merge_core.paimon import _binary
    from merge_core.paimon._meta import Snapshot, live_entries
    from merge_core.paimon._stats import _round_up

    assert _round_up("abcdef", 3) == "abd" and _round_up("ab\U0010ffff\U0010ffffz", 4) == "ac"
    assert _round_up(b"a\xff\xffz", 3) == b"b" and _round_up(b"\xff\xff\xff", 2) is None
    options = {"fields.v.stats-mode": "counts", "fields.k.stats-mode": "none", "metadata.stats-mode": "truncate(3)"}
    table = mc.Table.create(tmp_path / "t", SCHEMA, key="k", partition_by="p", buckets=1, options=options)
    table.write(pa.table({"k": [1, 2], "p": ["p1"] * 2, "v": [5, None], "s": ["abcdef", "abc"]}, schema=SCHEMA))
    root = mc.fs.resolve(tmp_path / "t")
    f = live_entries(root, Snapshot.load(root, 1))[0]["_FILE"]
    assert f["_VALUE_STATS_COLS"] == ["p", "v", "s"]
    types = [pa.string(), pa.int64(), pa.string()]
    assert _binary.decode(f["_VALUE_STATS"]["_MIN_VALUES"], types) == ("p1", None, "abc")
    assert _binary.decode(f["_VALUE_STATS"]["_MAX_VALUES"], types) == ("p1", None, "abd")
    assert f["_VALUE_STATS"]["_NULL_COUNTS"] == [0, 1, 0]


pypaimon = pytest.importorskip("pypaimon")


def _file_record(root_path, snapshot):
    from merge_core.paimon._meta import Snapshot, live_entries

    root = mc.fs.resolve(root_path)
    return live_entries(root, Snapshot.load(root, snapshot))[0]["_FILE"]


def test_value_stats_bytes_equal_pypaimons(tmp_path):
    """pypaimon writes value statistics in mode full: the same rows give the same bytes."""
    schema = pa.schema([pa.field("k", pa.int64(), False), ("v", pa.int64()), ("s", pa.string()), ("d", pa.float64())])
    data = [
        {"k": 1, "v": 5, "s": "hello", "d": 1.5},
        {"k": 2, "v": None, "s": "a" * 30, "d": -2.0},
        {"k": 3, "v": -7, "s": None, "d": None},
    ]
    catalog = pypaimon.CatalogFactory.create({"warehouse": str(tmp_path)})
    catalog.create_database("db", True)
    options = {"bucket": "1", "metadata.stats-mode": "full", "data-file.thin-mode": "true"}
    catalog.create_table(
        "db.theirs", pypaimon.Schema.from_pyarrow_schema(schema, primary_keys=["k"], options=options), False
    )
    pypaimon_commit(catalog.get_table("db.theirs"), data, schema)
    ours = mc.Table.create(
        tmp_path / "db.db" / "ours", schema, key="k", buckets=1, options={"metadata.stats-mode": "full"}
    )
    ours.write(pa.Table.from_pylist(data, schema=schema))
    theirs_file, ours_file = (
        _file_record(tmp_path / "db.db" / "theirs", 1),
        _file_record(tmp_path / "db.db" / "ours", 1),
    )
    for field in ("_VALUE_STATS", "_VALUE_STATS_COLS", "_KEY_STATS"):
        assert ours_file[field] == theirs_file[field], field


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data_rows=st.lists(row, min_size=1, max_size=20),
    op=st.sampled_from(["greater_than", "less_or_equal", "equal", "is_null", "is_not_null", "startswith"]),
    bound=st.integers(-2, 10),
)
def test_pypaimon_skips_by_merge_cores_stats(tmp_path_factory, data_rows, op, bound):
    """A compacted merge-core table read as a deletion-vector table (whose batch reads
    test each file by its value statistics, in pypaimon as in Java): pypaimon's scan,
    with its own predicates over the statistics merge-core wrote, skips what merge-core
    skips, and the rows agree."""
    warehouse = tmp_path_factory.mktemp("w")
    table = build(warehouse / "db.db" / "t", "deduplicate", [("write", data_rows), ("compact", True)], 2)
    table.set_options({"deletion-vectors.modifiable": "true"})
    table.set_options({"deletion-vectors.enabled": "true"})
    theirs = pypaimon.CatalogFactory.create({"warehouse": str(warehouse)}).get_table("db.t")
    builder = theirs.new_read_builder()
    p = builder.new_predicate_builder()
    predicate, expression = {
        "greater_than": (lambda: p.greater_than("v", bound), pc.field("v") > bound),
        "less_or_equal": (lambda: p.less_or_equal("v", bound), pc.field("v") <= bound),
        "equal": (lambda: p.equal("v", bound), pc.field("v") == bound),
        "is_null": (lambda: p.is_null("s"), pc.field("s").is_null()),
        "is_not_null": (lambda: p.is_not_null("v"), pc.field("v").is_valid()),
        "startswith": (lambda: p.greater_or_equal("s", "a" * 20), pc.field("s") >= "a" * 20),
    }[op]
    builder = builder.with_filter(predicate())
    splits = builder.new_scan().plan().splits()
    their_files = sorted(f.file_name for s in splits for f in s.files)
    plan = table.plan(filter=expression)
    our_files = sorted(
        os.path.basename(f.path) for split in plan for section in split.sections for run in section.runs for f in run
    )
    # The files each must read, from the files' own values: those whose min and max
    # (null count) admit the predicate. A comparison on a column null in every row:
    # merge-core skips the file, as Java's LeafPredicate does; pypaimon keeps it.
    column = "s" if op in ("is_null", "startswith") else "v"
    must, all_null = set(), set()
    for f in table.files():
        values = pq.ParquetFile(table.path / f["path"]).read(columns=[column])[column]
        if values.null_count == len(values) and op not in ("is_null", "is_not_null"):
            all_null.add(os.path.basename(f["path"]))
        elif _admits(op, values, bound):
            must.add(os.path.basename(f["path"]))
    assert set(our_files) == must and set(their_files) == must | all_null
    read = builder.new_read().to_arrow(splits) if splits else pa.Table.from_pylist([], schema=SCHEMA)
    assert rows(read.filter(expression)) == rows(table.read(filter=expression).read_all())


def _admits(op: str, values: pa.ChunkedArray, bound: int) -> bool:
    """Whether a column of these values, known by min, max and null count, may match."""
    low, high = pc.min(values).as_py(), pc.max(values).as_py()
    if op == "is_null":
        return values.null_count > 0
    if op == "is_not_null":
        return values.null_count < len(values)
    if op == "startswith":
        return high[:16] >= "a" * 16  # the max cut to 16 characters, rounded up
    return {"greater_than": high > bound, "less_or_equal": low <= bound, "equal": low <= bound <= high}[op]


def test_cli_filter(tmp_path):
    table = mc.Table.create(tmp_path / "t", SCHEMA, key="k", partition_by="p", buckets=1)
    table.write(
        pa.table({"k": [1, 2, 3], "p": ["p1", "p1", "p2"], "v": [1, None, 3], "s": ["a", "b", "c"]}, schema=SCHEMA)
    )
    out = tmp_path / "o.parquet"
    cli = [sys.executable, "-c", "import sys; from merge_core.cli import main; sys.exit(main(sys.argv[1:]))"]
    ok = subprocess.run(
        [
            *cli,
            "table",
            "read",
            str(tmp_path / "t"),
            "-o",
            str(out),
            "--filter",
            "p = 'p1' and not v is null or k in (3)",
        ],
        capture_output=True,
        text=True,
    )
    assert ok.returncode == 0, ok.stderr
    assert sorted(pq.read_table(out)["k"].to_pylist()) == [1, 3]
    bad = subprocess.run(
        [*cli, "table", "read", str(tmp_path / "t"), "-o", str(out), "--filter", "k = "], capture_output=True, text=True
    )
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--filter" in bad.stderr


FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "paimon-fixtures"


@pytest.mark.skipif(not FIXTURES.is_dir(), reason="Paimon's Java-written fixtures are not here")
def test_java_written_statistics_skip_only_what_they_exclude():
    """Tables Paimon's Java writer wrote (value statistics at truncate(16); deletion
    vectors and first-row, whose reads test every file by its values): for a comparison
    with every value of every column, the filtered read equals the read filtered after,
    and Java's statistics skip files."""
    skipped = 0
    for path in sorted(glob.glob(f"{FIXTURES}/*.db/*")):
        table = mc.Table.open(path)
        whole = table.read().read_all()
        for column in whole.column_names:
            values = whole[column].drop_null().unique().to_pylist()
            for value in values[:4]:
                for expression in (pc.field(column) == value, pc.field(column) > value, pc.field(column) <= value):
                    stream = table.read(filter=expression)
                    got = stream.read_all()
                    assert rows_any(got) == rows_any(whole.filter(expression)), (path, str(expression))
                    skipped += stream.stats["files_skipped_by_value_stats"] + stream.stats["files_skipped_by_key_stats"]
    assert skipped > 0


def rows_any(table: pa.Table) -> list:
    return sorted(map(repr, table.to_pylist()))


def test_files_of_older_schemas(tmp_path):
    """A column added since a file was written is null in all its rows; a renamed one is
    found by field id: the statistics of older files are read in the table's schema."""
    table = mc.Table.create(tmp_path / "t", SCHEMA, key="k", partition_by="p", buckets=2)
    table.write(pa.table({"k": [1, 2, 3], "p": ["p1"] * 3, "v": [1, 2, 3], "s": ["a", "b", "c"]}, schema=SCHEMA))
    table.compact(full=True)
    table.add_column("w", pa.int64())
    table.rename_column("v", "v2")
    table.write(pa.table({"k": [3, 4], "p": ["p1"] * 2, "v2": [30, 40], "s": ["c", "d"], "w": [7, None]}))
    whole = table.read().read_all()
    for expression in (
        pc.field("w") == 7,
        pc.field("w").is_null(),
        pc.field("v2") > 2,
        pc.field("v2") <= 2,
        (pc.field("w") > 0) | (pc.field("v2") == 1),
    ):
        assert rows(table.read(filter=expression).read_all()) == rows(whole.filter(expression)), str(expression)
    table.compact(full=True)
    stream = table.read(filter=pc.field("w") == 7)
    assert [r["k"] for r in stream.read_all().to_pylist()] == [3]
    assert stream.stats["files_skipped_by_value_stats"] >= 1


def _buckets_holding(table: mc.Table, column: str, value) -> set[int]:
    """The buckets whose files hold a row with ``column == value``, found by reading
    every file: independent of how a bucket is computed."""
    found = set()
    for f in table.files():
        if value in pq.read_table(table.path / f["path"], columns=[column])[column].to_pylist():
            found.add(f["bucket"])
    return found


@pytest.mark.parametrize("bucket_key", [None, "k"])
def test_point_lookups_open_only_the_buckets_of_their_keys(tmp_path, bucket_key):
    """pypaimon writes a table of 4 buckets (a composite key, or a bucket key of one of
    its columns); a filter fixing every bucket-key column reads only the buckets the
    files show those keys in (Paimon's BucketSelector), and answers as the whole read
    filtered does; filters that fix no bucket key skip no bucket."""
    schema = pa.schema([pa.field("k", pa.int64(), False), pa.field("s", pa.string(), False), ("v", pa.int64())])
    options = {"bucket": "4", **({"bucket-key": bucket_key} if bucket_key else {})}
    catalog = pypaimon.CatalogFactory.create({"warehouse": str(tmp_path)})
    catalog.create_database("db", True)
    catalog.create_table(
        "db.t", pypaimon.Schema.from_pyarrow_schema(schema, primary_keys=["k", "s"], options=options), False
    )
    data = [{"k": k, "s": f"s{k % 7}", "v": k * 10} for k in range(200)]
    pypaimon_commit(catalog.get_table("db.t"), data, schema)
    table = mc.Table.open(tmp_path / "db.db" / "t")
    whole = table.read().read_all()

    def key(k):
        return (pc.field("k") == k) & (pc.field("s") == f"s{k % 7}")

    lookups = {
        "one key": (key(17), {17}),
        "isin": ((pc.field("k").isin([3, 150])) & (pc.field("s").isin(["s3", "s3"])), {3, 150}),
        "or of keys": (key(5) | key(99), {5, 99}),
        "or on one column": (((pc.field("k") == 8) | (pc.field("k") == 15)) & (pc.field("s") == "s1"), {8, 15}),
        "with a value filter": (key(12) & (pc.field("v") > 0), {12}),
    }
    if bucket_key == "k":
        lookups["the bucket key alone"] = (pc.field("k") == 33, {33})
    for name, (expression, keys) in lookups.items():
        stream = table.read(filter=expression)
        assert rows_any(stream.read_all()) == rows_any(whole.filter(expression)), name
        if name == "or of keys":  # an | of whole keys is no conjunct fixing a column: nothing skipped
            assert stream.stats["buckets_skipped_by_filter"] == 0, name
            continue
        expected = set().union(*(_buckets_holding(table, "k", k) for k in keys))
        assert len(expected) < 4, name
        read = {s.bucket for s in table.plan(filter=expression)}
        assert read == expected, name
        assert stream.stats["buckets_skipped_by_filter"] == 4 - len(expected), name

    nothing = table.read(filter=(pc.field("k") == 1) & (pc.field("k") == 2) & (pc.field("s") == "s1"))
    assert nothing.read_all().num_rows == 0 and nothing.stats["buckets_skipped_by_filter"] == 4
    # a range, a column that is not all of the bucket key, more than 1000 keys: every bucket read
    for unselective in (pc.field("k") > 100, pc.field("s") == "s1", pc.field("k").isin(list(range(2000)))):
        stream = table.read(filter=unselective)
        assert rows_any(stream.read_all()) == rows_any(whole.filter(unselective))
        assert stream.stats["buckets_skipped_by_filter"] == 0, str(unselective)


def _paged_key(key_type: pa.DataType, i: int):
    return i * 3 if key_type == pa.int64() else f"key-{i * 3:09d}"


@pytest.fixture(scope="module")
def paged_tables(tmp_path_factory):
    """Per key type, a one-bucket table of many pages per file: three overlapping
    commits of 80,000 keys, then 100 deletes; and its whole read."""
    tables = {}
    for key_type in (pa.int64(), pa.string()):
        schema = pa.schema([pa.field("k", key_type, False), ("v", pa.int64())])
        table = mc.Table.create(tmp_path_factory.mktemp("paged") / "t", schema, key="k", buckets=1)
        for first in (0, 50_000, 100_000):
            ids = range(first, first + 80_000)
            table.write(pa.table({"k": [_paged_key(key_type, i) for i in ids], "v": list(ids)}, schema=schema))
        deleted = [_paged_key(key_type, i) for i in range(60_000, 60_100)]
        table.delete(pa.table({"k": deleted}, schema=pa.schema([schema.field("k")])))
        tables[str(key_type)] = (table, table.read().read_all())
    return tables


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_key_filters_decode_only_the_pages_that_may_hold_their_keys(paged_tables, data):
    """A filter bounding the key's first column (=, isin, ranges, with other conjuncts)
    answers as the whole read filtered, on one thread and on two, and decodes only a
    few pages' rows of each file (rows_in), where the bucket's files hold 240,100."""
    key_type = data.draw(st.sampled_from([pa.int64(), pa.string()]), label="key type")
    table, whole = paged_tables[str(key_type)]
    i, j = sorted(data.draw(st.lists(st.integers(0, 190_000), min_size=2, max_size=2), label="ids"))

    def key(n):
        return _paged_key(key_type, n)

    expression = data.draw(
        st.sampled_from(
            [
                pc.field("k") == key(i),
                pc.field("k").isin([key(i), key(i + 1)]),
                (pc.field("k") >= key(i)) & (pc.field("k") < key(i + 200)),
                (pc.field("k") > key(i)) & (pc.field("k") <= key(i + 200)) & (pc.field("v") > 1000),
                (pc.field("k") == key(i)) | (pc.field("k") == key(j)),  # an isin: the range between them
                (pc.field("k") == key(i)) | (pc.field("v") == j),  # no conjunct bounds k: nothing narrowed
                pc.field("k") == key(60_050),  # a deleted key
            ]
        ),
        label="filter",
    )
    narrowed = "v ==" not in str(expression)
    for threads in (1, 2):
        stream = table.read(filter=expression, threads=threads)
        assert rows_any(stream.read_all()) == rows_any(whole.filter(expression)), str(expression)
        if narrowed:
            most = 30_000 + (3 * (j - i) if " or " in str(expression) else 0)  # each key in up to 3 files
            assert stream.stats["rows_in"] < most, (str(expression), stream.stats)
        else:
            assert stream.stats["rows_in"] == 240_100, (str(expression), stream.stats)
