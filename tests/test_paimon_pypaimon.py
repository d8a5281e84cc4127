"""Tables written by pypaimon (a real Paimon writer), read by merge-core: random histories
of commits with row kinds, sequence fields, partitions and buckets, for every merge
engine pypaimon writes; merge-core's read equals the plain-Python oracle and
pypaimon-rust's read, at every snapshot."""

from __future__ import annotations

import itertools

import merge_core as mc
import oracle
import pyarrow as pa
import pytest
from helpers import pypaimon_commit, pypaimon_rust_rows
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pypaimon = pytest.importorskip("pypaimon")
pytest.importorskip("pypaimon_rust")

SCHEMA = pa.schema(
    [
        pa.field("k", pa.int64(), nullable=False),
        pa.field("p", pa.string()),
        ("v", pa.int64()),
        ("s", pa.string()),
        ("ts", pa.int64()),
        ("op", pa.string()),
    ]
)
VALUE_COLUMNS = ["v", "s", "ts"]

# (table options, oracle merge name, oracle options, row kinds pypaimon accepts for it).
# Not here: first-row (a batch read skips level-0 files, the only ones pypaimon writes:
# the Java fixture covers it) and partial-update with retracts (pypaimon refuses them).
ENGINES = {
    "deduplicate": ({}, "deduplicate", {}, oracle.KINDS),
    "deduplicate-ignore-delete": ({"ignore-delete": "true"}, "deduplicate", {"ignore_delete": True}, oracle.KINDS),
    "partial-update": ({"merge-engine": "partial-update"}, "partial-update", {}, ["+I", "+U"]),
    "aggregation": (
        {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum", "fields.s.aggregate-function": "max"},
        "aggregate",
        {"fields": {"v": "sum", "s": "max"}},
        ["+I", "+U"],
    ),
}


def history(kinds):
    row = st.fixed_dictionaries(
        {
            "k": st.integers(0, 6),
            "p": st.sampled_from(["a", "b"]),
            "v": st.none() | st.integers(-9, 9),
            "s": st.none() | st.sampled_from(["x", "y", "zz"]),
            "ts": st.integers(0, 3),
            "op": st.sampled_from(kinds),
        }
    )
    # One version of a key per commit: pypaimon folds a commit's own versions itself.
    commit = st.lists(row, min_size=1, max_size=12).map(lambda rows: list({(r["p"], r["k"]): r for r in rows}.values()))
    return st.lists(commit, min_size=1, max_size=5)


def write(warehouse, name, options, commits, with_sequence, buckets):
    catalog = pypaimon.CatalogFactory.create({"warehouse": str(warehouse)})
    catalog.create_database("db", True)
    options = {**options, "bucket": str(buckets), "rowkind.field": "op"}
    if with_sequence:
        options["sequence.field"] = "ts"
    schema = pypaimon.Schema.from_pyarrow_schema(SCHEMA, partition_keys=["p"], primary_keys=["p", "k"], options=options)
    catalog.create_table(f"db.{name}", schema, False)
    for rows in commits:
        pypaimon_commit(catalog.get_table(f"db.{name}"), rows, SCHEMA)
    return warehouse / "db.db" / name


def comparable(rows):
    """Rows without the row-kind column (a plain column of the table, kept as written),
    in a stable order."""
    return sorted(
        tuple((r[c] is None, r[c] if r[c] is not None else 0) for c in ("p", "k", *VALUE_COLUMNS)) for r in rows
    )


names = itertools.count()


@pytest.mark.parametrize("engine", sorted(ENGINES))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), with_sequence=st.booleans(), buckets=st.sampled_from([1, 3]))
def test_pypaimon_histories_read_as_the_oracle_and_pypaimon_rust(tmp_path, engine, data, with_sequence, buckets):
    options, merge, oracle_options, kinds = ENGINES[engine]
    commits = data.draw(history(kinds))
    name = f"t{next(names)}"
    root = write(tmp_path, name, options, commits, with_sequence, buckets)
    table = mc.Table.open(root)
    # A commit whose rows pypaimon's writer drops all (ignore-delete) makes no snapshot.
    if oracle_options.get("ignore_delete"):
        commits = [c for c in commits if any(not oracle.is_retract(r["op"]) for r in c)]
    assert table.snapshots() == list(range(1, len(commits) + 1))
    # The oracle reads the commits as runs: a later commit is a later write.
    sequence = ["ts"] if with_sequence else []
    for snapshot in table.snapshots():
        runs = commits[:snapshot]
        want = oracle.merge(
            runs,
            ["p", "k"],
            sequence,
            "op",
            merge=merge,
            key_order=lambda v: (v is None, v if v is not None else 0),
            **oracle_options,
        )
        got = table.read(snapshot=snapshot).read_all().to_pylist()
        assert comparable(got) == comparable(want), snapshot
        # pypaimon counts no retracts in a file's metadata, so pypaimon-rust reads a file
        # alone as it is and returns a key's lone retract; Paimon's read drops retracts.
        theirs = [r for r in pypaimon_rust_rows(root, snapshot) if not oracle.is_retract(r["op"])]
        assert comparable(got) == comparable(theirs), snapshot


def test_files_of_older_schemas_read_through_field_ids(tmp_path):
    """A column added, one renamed, one dropped, one widened (int -> bigint) between
    commits: the older files are read by field id, the added column as null."""
    from pypaimon.schema.data_types import AtomicType
    from pypaimon.schema.schema_change import SchemaChange

    schema = pa.schema(
        [pa.field("k", pa.int64(), nullable=False), ("a", pa.int32()), ("b", pa.string()), ("c", pa.string())]
    )
    catalog = pypaimon.CatalogFactory.create({"warehouse": str(tmp_path)})
    catalog.create_database("db", True)
    catalog.create_table(
        "db.t", pypaimon.Schema.from_pyarrow_schema(schema, primary_keys=["k"], options={"bucket": "2"}), False
    )

    first = [{"k": 1, "a": 10, "b": "one", "c": "gone"}, {"k": 2, "a": 20, "b": "two", "c": "gone"}]
    pypaimon_commit(catalog.get_table("db.t"), first, schema)
    catalog.alter_table(
        "db.t",
        [
            SchemaChange.add_column("d", AtomicType("DOUBLE")),
            SchemaChange.rename_column("b", "b2"),
            SchemaChange.drop_column("c"),
            SchemaChange.update_column_type("a", AtomicType("BIGINT")),
        ],
    )
    evolved = pa.schema(
        [pa.field("k", pa.int64(), nullable=False), ("a", pa.int64()), ("b2", pa.string()), ("d", pa.float64())]
    )
    second = [{"k": 2, "a": 21, "b2": "TWO", "d": 2.5}, {"k": 3, "a": 30, "b2": "three", "d": None}]
    pypaimon_commit(catalog.get_table("db.t"), second, evolved)
    table = mc.Table.open(tmp_path / "db.db" / "t")
    assert table.schema.names == ["k", "a", "b2", "d"]
    got = sorted(table.read().read_all().to_pylist(), key=lambda r: r["k"])
    assert got == [
        {"k": 1, "a": 10, "b2": "one", "d": None},
        {"k": 2, "a": 21, "b2": "TWO", "d": 2.5},
        {"k": 3, "a": 30, "b2": "three", "d": None},
    ]
    old = mc.Table.open(tmp_path / "db.db" / "t").read(snapshot=1).read_all()
    assert old.schema.names == ["k", "a", "b", "c"]  # a snapshot is read with its own schema
    assert sorted(old.to_pylist(), key=lambda r: r["k"])[0] == {"k": 1, "a": 10, "b": "one", "c": "gone"}
