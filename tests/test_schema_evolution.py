"""Schema changes (``add_column``, ``rename_column``, ``drop_column``, ``alter_column``,
``set_options``, ``remove_options``): after each, merge-core, pypaimon and pypaimon-rust
read the same rows; merge-core reads and writes after pypaimon's changes; the schema files
equal pypaimon's field by field; what Paimon refuses is refused; random sequences of
changes and writes read as a plain-Python model says."""

from __future__ import annotations

import json
import shutil
from decimal import Decimal
from pathlib import Path

import merge_core as mc
import pyarrow as pa
import pytest
from helpers import pypaimon_commit, pypaimon_rust_rows
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from merge_core.fs import resolve
from merge_core.paimon import _alter
from merge_core.paimon._meta import latest_snapshot_id, live_files
from test_expire import catalog, identifier

pypaimon = pytest.importorskip("pypaimon")
pytest.importorskip("pypaimon_rust")
from pypaimon.schema.data_types import AtomicType, PyarrowFieldParser  # noqa: E402
from pypaimon.schema.schema_change import Move, SchemaChange  # noqa: E402

SCHEMA = pa.schema([pa.field("k", pa.int64(), False), ("a", pa.int32()), ("b", pa.string()), ("c", pa.string())])


def by_key(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: next(iter(r.values())) if "k" not in r else r["k"])


def pypaimon_rows(root: Path) -> list[dict]:
    table = catalog(root).get_table(identifier(root))
    builder = table.new_read_builder()
    return by_key(builder.new_read().to_arrow(builder.new_scan().plan().splits()).to_pylist())


def pypaimon_rows_at(root: Path, snapshot: int) -> list[dict]:
    table = catalog(root).get_table(identifier(root)).copy({"scan.snapshot-id": str(snapshot)})
    builder = table.new_read_builder()
    return by_key(builder.new_read().to_arrow(builder.new_scan().plan().splits()).to_pylist())


def our_rows(table: mc.Table, **kwargs) -> list[dict]:
    return by_key(table.read(**kwargs).read_all().to_pylist())


def assert_readers_agree(table: mc.Table, want: list[dict]) -> None:
    root = Path(table.path)
    assert our_rows(table) == want
    assert our_rows(mc.Table.open(root)) == want
    assert pypaimon_rows(root) == want
    assert by_key(pypaimon_rust_rows(root)) == want


def schema_ids_of_files(root: Path) -> set[int]:
    location = resolve(str(root))
    snapshot = mc.Table.open(root).snapshot(latest_snapshot_id(location))
    return {f.schema_id for f in live_files(location, snapshot)}


def stored_schema(root: Path, schema_id: int) -> dict:
    return json.loads((root / "schema" / f"schema-{schema_id}").read_text())


def as_java_writes(value):
    """pypaimon 2.1's schema JSON as Java writes it: Java leaves out a null ``comment``,
    and a nested row type has no ``nullable`` key (its type string says NOT NULL)."""
    if isinstance(value, dict):
        dropped = {"nullable"} | ({"comment"} if value.get("comment", 0) is None else set())
        return {k: as_java_writes(v) for k, v in value.items() if k not in dropped}
    if isinstance(value, list):
        return [as_java_writes(v) for v in value]
    return value


def new_table(tmp_path: Path, schema: pa.Schema = SCHEMA, **kwargs) -> mc.Table:
    return mc.Table.create(tmp_path / "db.db" / "t", schema, key="k", buckets=2, **kwargs)


# -- what every reader reads after each change ----------------------------------------------


def test_each_change_reads_alike_in_merge_core_pypaimon_and_pypaimon_rust(tmp_path):
    table = new_table(tmp_path)
    table.write(pa.table({"k": [1, 2], "a": pa.array([10, 20], pa.int32()), "b": ["x", "y"], "c": ["c1", "c2"]}))
    want = [{"k": 1, "a": 10, "b": "x", "c": "c1"}, {"k": 2, "a": 20, "b": "y", "c": "c2"}]
    assert_readers_agree(table, want)

    assert table.add_column("d", "DECIMAL(10, 2)", after="a", comment="money") == 1
    want = [{"k": r["k"], "a": r["a"], "d": None, "b": r["b"], "c": r["c"]} for r in want]
    assert table.schema.names == ["k", "a", "d", "b", "c"]
    assert_readers_agree(table, want)  # no commit since the change: the table's schema is read

    table.rename_column("b", "name")
    want = [{"k": r["k"], "a": r["a"], "d": r["d"], "name": r["b"], "c": r["c"]} for r in want]
    assert_readers_agree(table, want)

    table.drop_column("c")
    want = [{k: v for k, v in r.items() if k != "c"} for r in want]
    assert_readers_agree(table, want)

    table.alter_column("a", type=pa.int64())  # a widening: older files are read cast
    table.write(pa.table({"k": [2, 3], "a": [1 << 40, 30], "d": [Decimal("1.50"), None], "name": ["Y", "z"]}))
    want = [want[0], {"k": 2, "a": 1 << 40, "d": Decimal("1.50"), "name": "Y"}]
    want.append({"k": 3, "a": 30, "d": None, "name": "z"})
    assert_readers_agree(table, want)

    stale = mc.Table.open(table.path)
    table.add_column("c", pa.string())  # a new column under a dropped one's name: no old values
    want = [{**r, "c": None} for r in want]
    assert_readers_agree(table, want)
    stale.write(pa.table({"k": [4], "a": [4], "d": [None], "name": ["w"]}, schema=stale.schema))
    assert table.snapshot().schema_id == 5  # a writer of schema 4 commits the latest schema's id, as Paimon's
    want.append({"k": 4, "a": 4, "d": None, "name": "w", "c": None})
    assert_readers_agree(table, want)

    table.compact(full=True)
    assert schema_ids_of_files(Path(table.path)) == {5}  # a compaction writes the newest schema's files
    assert_readers_agree(table, want)


def test_every_type_change_merge_core_makes_reads_alike_in_every_reader(tmp_path):
    schema = pa.schema(
        [
            pa.field("k", pa.int64(), False),
            ("i", pa.int32()),
            ("f", pa.float32()),
            ("d", pa.decimal128(5, 2)),
            ("ts", pa.timestamp("ms")),
            ("n", pa.int8()),
            ("l", pa.int16()),
        ]
    )
    table = mc.Table.create(tmp_path / "db.db" / "t", schema, key="k", buckets=1)
    data = {
        "k": [1, 2],
        "i": [-7, 2147483647],
        "f": [1.1, None],
        "d": [Decimal("123.45"), Decimal("-1.00")],
        "ts": [1700000000123, 0],
        "n": [-128, 5],
        "l": [-32768, 7],
    }
    table.write(pa.table(data, schema=schema))
    changes = {
        "i": "STRING",
        "f": "DOUBLE",
        "d": "DECIMAL(12, 4)",
        "ts": "TIMESTAMP(9)",
        "n": "DECIMAL(4, 1)",
        "l": "FLOAT",
    }
    for column, kind in changes.items():
        table.alter_column(column, type=kind)
    got = our_rows(table)
    assert got[0]["i"] == "-7" and got[0]["d"] == Decimal("123.4500") and got[0]["n"] == Decimal("-128.0")
    assert got == pypaimon_rows(Path(table.path)) == by_key(pypaimon_rust_rows(Path(table.path)))


def test_time_travel_reads_a_snapshot_with_its_own_schema(tmp_path):
    table = new_table(tmp_path)
    table.write(pa.table({"k": [1], "a": pa.array([1], pa.int32()), "b": ["x"], "c": ["y"]}))
    table.rename_column("b", "name")
    table.drop_column("c")
    table.write(pa.table({"k": [2], "a": pa.array([2], pa.int32()), "name": ["z"]}))
    old = table.read(snapshot=1).read_all()
    assert old.schema.names == ["k", "a", "b", "c"]  # Paimon: a travelling read takes the snapshot's schema
    assert old.to_pylist() == [{"k": 1, "a": 1, "b": "x", "c": "y"}]
    assert by_key(pypaimon_rust_rows(Path(table.path), snapshot=1)) == old.to_pylist()
    assert our_rows(table) == [{"k": 1, "a": 1, "name": "x"}, {"k": 2, "a": 2, "name": "z"}]


def test_a_travelling_read_merges_by_the_current_options_as_paimon_does(tmp_path):
    """Paimon reads an older snapshot's columns with the table's current options: after
    ``v`` (summed) is renamed ``w``, the option names ``w`` and the old ``v`` takes the
    default function (the newest non-null value), in pypaimon and pypaimon-rust alike."""
    schema = pa.schema([pa.field("k", pa.int64(), False), ("v", pa.int64())])
    table = mc.Table.create(tmp_path / "db.db" / "t", schema, key="k", merge=mc.Aggregate({"v": "sum"}), buckets=1)
    table.write(pa.table({"k": [1], "v": [1]}))
    table.write(pa.table({"k": [1], "v": [2]}))
    table.rename_column("v", "w")
    table.write(pa.table({"k": [1], "w": [4]}))
    assert our_rows(table) == [{"k": 1, "w": 7}]
    old = our_rows(table, snapshot=2)
    assert old == [{"k": 1, "v": 2}]
    assert old == pypaimon_rows_at(Path(table.path), 2) == by_key(pypaimon_rust_rows(Path(table.path), snapshot=2))


def test_merge_core_reads_and_writes_after_pypaimons_changes(tmp_path):
    root = tmp_path / "db.db" / "t"
    table = new_table(tmp_path)
    table.write(pa.table({"k": [1, 2], "a": pa.array([1, 2], pa.int32()), "b": ["x", "y"], "c": ["p", "q"]}))
    catalog(root).alter_table(
        identifier(root),
        [
            SchemaChange.add_column("d", AtomicType("DOUBLE"), move=Move.first("d")),
            SchemaChange.rename_column("b", "b2"),
            SchemaChange.drop_column("c"),
            SchemaChange.update_column_type("a", AtomicType("BIGINT"), keep_nullability=True),
        ],
    )
    evolved = pa.schema([("d", pa.float64()), pa.field("k", pa.int64(), False), ("a", pa.int64()), ("b2", pa.string())])
    pypaimon_commit(catalog(root).get_table(identifier(root)), [{"d": 0.5, "k": 2, "a": 20, "b2": "Y"}], evolved)
    stale = table  # opened before pypaimon's change: it takes the newer schema from the snapshot
    want = [{"d": None, "k": 1, "a": 1, "b2": "x"}, {"d": 0.5, "k": 2, "a": 20, "b2": "Y"}]
    assert our_rows(stale) == want
    table = mc.Table.open(root)
    assert table.schema.names == ["d", "k", "a", "b2"]
    table.write(pa.table({"d": [1.5], "k": [3], "a": [3], "b2": ["z"]}))
    table.add_column("e", pa.int32())
    want = [{**r, "e": None} for r in [*want, {"d": 1.5, "k": 3, "a": 3, "b2": "z"}]]
    assert_readers_agree(table, want)
    table.compact(full=True)
    assert_readers_agree(table, want)


# -- the schema files, against pypaimon's ------------------------------------------------------


def _pa_row() -> pa.DataType:
    return pa.struct([("x", pa.int32()), ("y", pa.list_(pa.string()))])


CHANGES = {
    "add": (lambda t: t.add_column("d", "DOUBLE"), [SchemaChange.add_column("d", AtomicType("DOUBLE"))]),
    "add after, with a comment": (
        lambda t: t.add_column("d", pa.int64(), after="k", comment="new"),
        [SchemaChange.add_column("d", AtomicType("BIGINT"), comment="new", move=Move.after("d", "k"))],
    ),
    "add a row": (
        lambda t: t.add_column("r", _pa_row()),
        [SchemaChange.add_column("r", PyarrowFieldParser.to_paimon_type(_pa_row(), True))],
    ),
    "rename": (lambda t: t.rename_column("b", "b2"), [SchemaChange.rename_column("b", "b2")]),
    "rename a key": (lambda t: t.rename_column("k", "key"), [SchemaChange.rename_column("k", "key")]),
    "drop": (lambda t: t.drop_column("c"), [SchemaChange.drop_column("c")]),
    "widen": (
        lambda t: t.alter_column("a", type="BIGINT"),
        [SchemaChange.update_column_type("a", AtomicType("BIGINT"), keep_nullability=True)],
    ),
    "nullable": (
        lambda t: t.alter_column("n", nullable=True),
        [SchemaChange.update_column_nullability("n", True)],
    ),
    "comment": (lambda t: t.alter_column("b", comment="text"), [SchemaChange.update_column_comment("b", "text")]),
    "set options": (
        lambda t: t.set_options({"snapshot.num-retained.min": "5", "bucket": "4"}),
        [SchemaChange.set_option("snapshot.num-retained.min", "5"), SchemaChange.set_option("bucket", "4")],
    ),
    "remove an option": (
        lambda t: t.remove_options(["data-file.thin-mode"]),
        [SchemaChange.remove_option("data-file.thin-mode")],
    ),
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_schema_files_equal_pypaimons_field_by_field(tmp_path, change):
    ours, theirs = tmp_path / "a" / "db.db" / "t", tmp_path / "b" / "db.db" / "t"
    schema = SCHEMA.append(pa.field("n", pa.int64(), False))
    table = mc.Table.create(ours, schema, key="k", buckets=2)
    table.write(pa.table({"k": [1], "a": pa.array([1], pa.int32()), "b": ["x"], "c": ["y"], "n": [5]}, schema=schema))
    shutil.copytree(ours, theirs)
    make, pypaimon_changes = CHANGES[change]
    assert make(table) == 1
    catalog(theirs).alter_table(identifier(theirs), pypaimon_changes)
    mine, reference = stored_schema(ours, 1), as_java_writes(stored_schema(theirs, 1))
    assert abs(mine.pop("timeMillis") - reference.pop("timeMillis")) < 60_000
    assert mine == reference
    assert list(mine) == list(reference)  # and in Java's order of keys
    assert_readers_agree(mc.Table.open(ours), our_rows(mc.Table.open(theirs)))


# -- what Paimon refuses ------------------------------------------------------------------------

REFUSED = {
    "drop a key": (lambda t: t.drop_column("k"), mc.InvalidInputError, "cannot drop column 'k'"),
    "drop a partition column": (lambda t: t.drop_column("p"), mc.InvalidInputError, "cannot drop column 'p'"),
    "rename a partition column": (lambda t: t.rename_column("p", "q"), mc.InvalidInputError, "partition column 'p'"),
    "retype a key": (lambda t: t.alter_column("k", type="DECIMAL(20, 0)"), mc.InvalidInputError, "primary key"),
    "a key nullable": (lambda t: t.alter_column("k", nullable=True), mc.InvalidInputError, "primary key column 'k'"),
    "null to NOT NULL": (lambda t: t.alter_column("b", nullable=False), mc.InvalidInputError, "null-to-not-null"),
    "narrow (Paimon allows, merge-core would cast otherwise)": (
        lambda t: t.alter_column("a", type="TINYINT"),
        mc.UnsupportedFeatureError,
        "from INT to TINYINT",
    ),
    "a cast Paimon refuses": (lambda t: t.alter_column("a", type="DATE"), mc.InvalidInputError, "Paimon refuses"),
    "an unknown column": (lambda t: t.rename_column("zz", "y"), mc.InvalidInputError, "no column 'zz'"),
    "a name taken": (lambda t: t.rename_column("a", "b"), mc.InvalidInputError, "already has a column 'b'"),
    "a NOT NULL column added": (lambda t: t.add_column("q", "INT NOT NULL"), mc.InvalidInputError, "NOT NULL"),
    "a type that is no type": (lambda t: t.add_column("q", "NOTATYPE"), mc.InvalidInputError, "not a Paimon type"),
    "a composite type string": (
        lambda t: t.add_column("q", "ARRAY<INT>"),
        mc.UnsupportedFeatureError,
        "atomic types only",
    ),
    "bucket": (lambda t: t.set_options({"bucket": "-1"}), mc.InvalidInputError, "'bucket'"),
    "bucket removed": (lambda t: t.remove_options(["bucket"]), mc.InvalidInputError, "'bucket'"),
    "merge-engine": (lambda t: t.set_options({"merge-engine": "first-row"}), mc.InvalidInputError, "'merge-engine'"),
    "primary-key": (lambda t: t.set_options({"primary-key": "a"}), mc.InvalidInputError, "'primary-key'"),
    "rowkind.field removed": (lambda t: t.remove_options(["rowkind.field"]), mc.InvalidInputError, "'rowkind.field'"),
    "ignore-delete back to false": (
        lambda t: t.set_options({"ignore-delete": "false"}),
        mc.InvalidInputError,
        "'ignore-delete'",
    ),
    "a sequence column dropped": (lambda t: t.drop_column("s"), mc.InvalidInputError, "sequence.field"),
    "an option Paimon does not parse": (
        lambda t: t.set_options({"snapshot.num-retained.min": "many"}),
        mc.InvalidInputError,
        "snapshot.num-retained.min",
    ),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_changes_paimon_refuses_are_refused_and_write_nothing(tmp_path, case):
    schema = pa.schema(
        [
            pa.field("k", pa.int64(), False),
            pa.field("p", pa.string(), False),
            ("a", pa.int32()),
            ("b", pa.string()),
            ("s", pa.int64()),
        ]
    )
    options = {"rowkind.field": "b", "ignore-delete": "true"}
    table = mc.Table.create(tmp_path / "t", schema, key="k", partition_by="p", sequence="s", options=options)
    table.write(pa.table({"k": [1], "p": ["x"], "a": pa.array([1], pa.int32()), "b": ["+I"], "s": [1]}, schema=schema))
    make, error, words = REFUSED[case]
    with pytest.raises(error, match=words.replace("(", r"\(").replace(")", r"\)")):
        make(table)
    assert sorted(p.name for p in (tmp_path / "t" / "schema").iterdir()) == ["schema-0"]


def test_options_change_freely_before_the_first_snapshot(tmp_path):
    table = new_table(tmp_path)
    table.set_options({"merge-engine": "partial-update"})  # Paimon's immutable options are checked once written
    assert isinstance(table.merge, mc.PartialUpdate)


# -- concurrent changes -------------------------------------------------------------------------


def test_a_change_racing_another_applies_on_top_of_it_never_over_it(tmp_path, monkeypatch):
    first = new_table(tmp_path)
    second = mc.Table.open(first.path)
    real = _alter.schema_ids
    calls = []

    def stale_then_real(root):  # the second change lists schema/ before the first lands
        calls.append(1)
        return [0] if len(calls) == 1 else real(root)

    first.add_column("x", pa.int64())
    monkeypatch.setattr(_alter, "schema_ids", stale_then_real)
    assert second.add_column("y", pa.int64()) == 2
    assert [f["name"] for f in stored_schema(Path(first.path), 1)["fields"]][-1] == "x"
    assert [f["name"] for f in stored_schema(Path(first.path), 2)["fields"]][-2:] == ["x", "y"]
    assert second.schema.names[-2:] == ["x", "y"]


def test_a_damaged_latest_schema_is_named_not_changed(tmp_path):
    table = new_table(tmp_path)
    (Path(table.path) / "schema" / "schema-1").write_text(
        '{"version": 3, "id": 1, "fields": [{"id": 0}], "highestFieldId": 0}'
    )
    with pytest.raises(mc.CorruptTableError, match="schema-1"):
        table.add_column("x", pa.int64())
    assert sorted(p.name for p in (Path(table.path) / "schema").iterdir()) == ["schema-0", "schema-1"]


def test_a_table_altered_with_a_cast_merge_core_would_not_match_is_refused_on_read(tmp_path):
    root = tmp_path / "db.db" / "t"
    table = new_table(tmp_path)
    table.write(pa.table({"k": [1], "a": pa.array([300], pa.int32()), "b": ["x"], "c": ["y"]}))
    catalog(root).alter_table(identifier(root), [SchemaChange.update_column_type("a", AtomicType("TINYINT"), True)])
    with pytest.raises(mc.UnsupportedFeatureError, match="column 'a' changed type from INT"):
        mc.Table.open(root).read().read_all()


# -- random changes and writes, against a model -------------------------------------------------

TYPES = {"INT": pa.int32(), "BIGINT": pa.int64(), "STRING": pa.string()}
WIDER = {"INT": "BIGINT"}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_changes_and_writes_read_as_the_model_says(tmp_path_factory, data):
    root = tmp_path_factory.mktemp("evolve") / "db.db" / "t"
    columns = {"k": "BIGINT", "v": "INT"}  # name -> Paimon type
    rows: dict[int, dict] = {}
    table = mc.Table.create(root, pa.schema([pa.field("k", pa.int64(), False), ("v", pa.int32())]), key="k", buckets=2)
    fresh = iter(range(1000))
    for _ in range(data.draw(st.integers(3, 10))):
        values = [n for n in columns if n != "k"]
        step = data.draw(st.sampled_from(["write", "add", "rename", "drop", "widen", "compact"]))
        if step == "write":
            keys = data.draw(st.lists(st.integers(0, 6), min_size=1, max_size=5, unique=True))
            batch = {"k": keys}
            for n in values:
                batch[n] = [_value(columns[n], data) for _ in keys]
            schema = pa.schema([pa.field(n, TYPES[t], n != "k") for n, t in columns.items()])
            table.write(pa.table(batch, schema=schema))
            for i, key in enumerate(keys):
                rows[key] = {n: batch[n][i] for n in columns}
        elif step == "add":
            name, kind = f"n{next(fresh)}", data.draw(st.sampled_from(sorted(TYPES)))
            table.add_column(name, kind)
            columns[name] = kind
            for r in rows.values():
                r[name] = None
        elif step == "rename" and values:
            old, new = data.draw(st.sampled_from(values)), f"r{next(fresh)}"
            table.rename_column(old, new)
            columns = {new if n == old else n: t for n, t in columns.items()}
            rows = {key: {new if n == old else n: v for n, v in r.items()} for key, r in rows.items()}
        elif step == "drop" and values:
            gone = data.draw(st.sampled_from(values))
            table.drop_column(gone)
            del columns[gone]
            for r in rows.values():
                del r[gone]
        elif step == "widen" and any(columns[n] in WIDER for n in values):
            name = data.draw(st.sampled_from([n for n in values if columns[n] in WIDER]))
            table.alter_column(name, type=WIDER[columns[name]])
            columns[name] = WIDER[columns[name]]
        elif step == "compact":
            table.compact(full=True)
        got = our_rows(table)
        assert got == by_key(list(rows.values()))
        assert [f.name for f in table.schema] == list(columns)
    if rows:
        assert by_key(pypaimon_rust_rows(root)) == by_key(list(rows.values()))


def _value(kind: str, data) -> object:
    if kind == "STRING":
        return data.draw(st.one_of(st.none(), st.text(max_size=3)))
    bits = 31 if kind == "INT" else 63
    return data.draw(st.one_of(st.none(), st.integers(-(1 << bits), (1 << bits) - 1)))
