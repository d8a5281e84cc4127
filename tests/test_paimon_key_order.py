"""Keys in Paimon's order (paimon/_key_order.py): float keys as Java's ``Double.compare``
and ``Float.compare`` order them (-0.0 < 0.0, every NaN one key above +inf) through random
histories of writes and compactions, against a plain-Python oracle, and read back by
pypaimon and pypaimon-rust; the planner's and the writer's comparisons against Python's
own order of the same keys; a data file whose keys are out of order is never committed."""

from __future__ import annotations

import itertools
import math
import struct
from pathlib import Path
from unittest import mock

import merge_core as mc
import merge_core.paimon._plan as plan
import oracle
import pyarrow as pa
import pytest
from helpers import pypaimon_rust_rows
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from merge_core.paimon import _binary, _key_order
from merge_core.paimon._write import DataFileWriter


def from_bits(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


NAN = float("nan")
NEG_NAN = from_bits(0xFFF8_0000_0000_0000)  # sign bit set: IEEE's total order puts it first
ODD_NAN = from_bits(0x7FF0_0000_0000_0001)  # a signalling NaN with a payload
SPECIALS = [NAN, NEG_NAN, ODD_NAN, 0.0, -0.0, math.inf, -math.inf, 1.0, 2.0, -2.5, 1e-300]


def java_key(v: float) -> tuple:
    """The oracle's identity of a float key: Java's Double.compare (oracle.java_order)."""
    return oracle.java_order(v)


# -- the planner's and the writer's comparisons ------------------------------------------

TYPES = {
    "float64": (st.sampled_from(SPECIALS) | st.floats(), pa.float64()),
    "float32": (st.sampled_from(SPECIALS) | st.floats(width=32), pa.float32()),
    "string": (st.text(alphabet="aZé€\U0001f600\x00", max_size=3), pa.string()),
    "binary": (st.binary(max_size=3), pa.binary()),
    "int8": (st.integers(-128, 127), pa.int8()),
    "bool": (st.booleans(), pa.bool_()),
    "date": (st.dates(), pa.date32()),
    "decimal": (st.decimals(-(10**5), 10**5, places=2, allow_nan=False), pa.decimal128(9, 2)),
    "timestamp_ns": (st.integers(-(2**62), 2**62), pa.timestamp("ns")),
}


def java_value(value, t: pa.DataType):
    """Paimon's order of one value, written independently of the module under test:
    floats by Double.compare, strings by their UTF-8 bytes, the rest as Python orders them."""
    if pa.types.is_floating(t):
        return java_key(value)
    if pa.types.is_string(t):
        return value.encode()
    return value


@given(st.data())
def test_sort_key_and_the_vectorised_checks_order_as_java(data):
    """:func:`_key_order.sort_key` (the planner's and the writer's row comparisons),
    :func:`row_key` (a manifest's BinaryRow) and the vectorised :func:`ascending` and
    :func:`repeats` agree with Java's order on keys of two columns."""
    names = data.draw(st.lists(st.sampled_from(sorted(TYPES)), min_size=1, max_size=2))
    types = [TYPES[n][1] for n in names]
    rows = data.draw(st.lists(st.tuples(*(TYPES[n][0] for n in names)), min_size=1, max_size=8))
    columns = [pa.array([r[i] for r in rows], t) for i, t in enumerate(types)]
    as_python = [(c.cast(pa.int64()) if pa.types.is_timestamp(c.type) else c).to_pylist() for c in columns]
    values = list(zip(*as_python, strict=True))
    java = [tuple(java_value(v, t) for v, t in zip(row, types, strict=True)) for row in values]
    ours = [_key_order.sort_key(row) for row in values]
    stored = [_key_order.row_key(_binary.encode(row, types), types) for row in values]
    for a, b in itertools.product(range(len(rows)), repeat=2):
        assert (java[a] < java[b]) == (ours[a] < ours[b]) == (stored[a] < stored[b]), (values[a], values[b])
        assert (java[a] == java[b]) == (ours[a] == ours[b]) == (stored[a] == stored[b]), (values[a], values[b])
    ordered = [_key_order.ordered(c) for c in columns]
    assert _key_order.ascending(ordered) == all(java[i] < java[i + 1] for i in range(len(rows) - 1))
    assert list(_key_order.repeats(ordered)) == [False] + [java[i] == java[i + 1] for i in range(len(rows) - 1)]


def test_nulls_sort_first_as_in_paimons_comparator():
    assert _key_order.sort_key((None,)) < _key_order.sort_key((-math.inf,)) < _key_order.sort_key((NAN,))
    assert sorted([("b",), (None,), ("a",)], key=_key_order.sort_key) == [(None,), ("a",), ("b",)]


def test_timestamp_keys_compare_to_the_nanosecond_in_manifests():
    t = pa.timestamp("ns")
    a, b = _binary.encode([1_000_000_001], [t]), _binary.encode([1_000_000_002], [t])
    assert _key_order.row_key(a, [t]) < _key_order.row_key(b, [t])
    assert _binary.decode(a, [t]) == _binary.decode(b, [t]), "as datetimes they are one microsecond"


# -- the issue: two writes, NaN keys -----------------------------------------------------


def float_table(path: Path, float_type: pa.DataType | None = None, buckets: int = 1) -> mc.Table:
    schema = pa.schema([pa.field("k", float_type or pa.float64(), nullable=False), ("v", pa.int64())])
    return mc.Table.create(path, schema, key="k", buckets=buckets)


def read_rows(table: mc.Table) -> list[tuple]:
    return sorted((java_key(r["k"]), r["v"]) for r in table.read().read_all().to_pylist())


def test_two_writes_with_a_nan_key_read_one_row_per_key_and_compact_sorted(tmp_path):
    """The file [1.0, 2.0, NaN] and the file [2.0] overlap (NaN is above 2.0): they are
    merged, not read one after the other, and the full compaction writes one sorted file."""
    table = float_table(tmp_path / "db.db" / "t")
    table.write(pa.table({"k": [1.0, 2.0, NAN], "v": [1, 1, 1]}))
    table.write(pa.table({"k": [2.0], "v": [2]}))
    expected = [(java_key(1.0), 1), (java_key(2.0), 2), (java_key(NAN), 1)]
    assert read_rows(table) == expected
    table.compact(full=True)
    assert read_rows(table) == expected
    assert [f["level"] for f in table.files()] == [5]


# -- random histories ------------------------------------------------------------------


def history():
    key = st.sampled_from(SPECIALS)
    rows = st.lists(st.tuples(key, st.integers(0, 99)), min_size=1, max_size=10)
    step = st.tuples(st.just("write"), rows) | st.tuples(st.just("compact"), st.booleans())
    return st.lists(step, min_size=1, max_size=6)


def pypaimon_rows(root: Path) -> list[dict]:
    pypaimon = pytest.importorskip("pypaimon")
    table = pypaimon.CatalogFactory.create({"warehouse": str(root.parent.parent)}).get_table(f"db.{root.name}")
    builder = table.new_read_builder()
    return builder.new_read().to_arrow(builder.new_scan().plan().splits()).to_pylist()


names = itertools.count()


@pytest.mark.parametrize("float_type", [pa.float64(), pa.float32()], ids=str)
@pytest.mark.parametrize("buckets", [1, 3])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=history())
def test_float_key_histories_read_as_javas_order_says(tmp_path, float_type, buckets, steps):
    """Writes and compactions (full or by the trigger) of keys drawn among NaNs of both
    signs and with a payload, both zeros, both infinities: every read holds one row per
    key as Java's comparator tells keys apart, in its own bucket (Paimon's hash of the
    key's bits, so NaNs of different bits may sit in different buckets, as in Paimon)."""
    root = tmp_path / "db.db" / f"t{next(names)}"
    table = float_table(root, float_type, buckets)
    expected: dict[tuple, int] = {}
    for step, arg in steps:
        if step == "write":
            data = pa.table({"k": pa.array([k for k, _ in arg], float_type), "v": [v for _, v in arg]})
            table.write(data)
            buckets_of = table.bucket_ids(data.to_batches()[0]).to_pylist()
            keys, values = data.column("k").to_pylist(), data.column("v").to_pylist()
            for key, v, bucket in zip(keys, values, buckets_of, strict=True):
                expected[(bucket, java_key(key))] = v
        else:
            table.compact(full=arg)
        assert read_rows(table) == sorted((key, v) for (_, key), v in expected.items()), steps
    # The peers merge float keys in their own orders (pypaimon: -0.0 == 0.0; pypaimon-rust:
    # NaNs of different signs apart): they read as Java does once each bucket is one file.
    table.compact(full=True)
    want = sorted((key, v) for (_, key), v in expected.items())
    assert read_rows(table) == want
    assert sorted((java_key(r["k"]), r["v"]) for r in pypaimon_rust_rows(root)) == want, "pypaimon-rust"
    assert sorted((java_key(r["k"]), r["v"]) for r in pypaimon_rows(root)) == want, "pypaimon"


# -- never an unsorted file ---------------------------------------------------------------


def writer(table: mc.Table) -> DataFileWriter:
    from merge_core.paimon._schema import load_schema

    return DataFileWriter(table._root, load_schema(table._root, 0), _binary.encode([], []), 0, 0, 0)


@pytest.mark.parametrize(
    "batches",
    [
        [[2.0, 1.0]],
        [[1.0, NAN], [2.0]],
        [[0.0], [-0.0]],
        [[NAN, NEG_NAN]],
        [[1.0], [1.0]],
    ],
    ids=str,
)
def test_a_data_file_refuses_keys_out_of_paimons_order(tmp_path, batches):
    table = float_table(tmp_path / "t")
    w = writer(table)
    with pytest.raises(mc.errors.InternalError, match="ascending order"):
        for keys in batches:
            w.write(pa.record_batch({"k": pa.array(keys), "v": pa.array(range(len(keys)), pa.int64())}))
    w.abort()


def test_a_data_file_takes_keys_in_paimons_order(tmp_path):
    table = float_table(tmp_path / "t")
    w = writer(table)
    for keys in [[-math.inf, -0.0], [0.0, 1.0], [math.inf, NEG_NAN]]:
        w.write(pa.record_batch({"k": pa.array(keys), "v": pa.array(range(len(keys)), pa.int64())}))
    record = w.close()
    low, high = (_binary.decode(record["_KEY_STATS"][s], [pa.float64()])[0] for s in ("_MIN_VALUES", "_MAX_VALUES"))
    assert low == -math.inf and math.isnan(high), "key statistics in Java's order: NaN is the greatest"


def test_a_compaction_whose_plan_is_out_of_order_commits_nothing(tmp_path):
    """Planned with Python's own order of the keys (NaN compares false), the compaction's
    sections come out of order: its file is refused before anything is committed."""
    table = float_table(tmp_path / "t")
    table.write(pa.table({"k": [1.0, 2.0, NAN], "v": [1, 1, 1]}))
    table.write(pa.table({"k": [2.0], "v": [2]}))
    naive = lambda self, row: _binary.decode(row, self.key_types)  # noqa: E731
    with mock.patch.object(plan.Planner, "key", naive), pytest.raises(mc.errors.InternalError, match="ascending"):
        table.compact(full=True)
    assert table.snapshots() == [1, 2]
    assert len(table.files()) == 2
    assert read_rows(table) == [(java_key(1.0), 1), (java_key(2.0), 2), (java_key(NAN), 1)]


def test_float_partitions_are_listed_in_javas_order(tmp_path):
    schema = pa.schema([("k", pa.int64()), ("p", pa.float64())])
    table = mc.Table.create(tmp_path / "t", schema, key="k", partition_by="p", buckets=1)
    table.write(pa.table({"k": [1, 2, 3], "p": [NAN, 0.0, -0.0]}))
    assert [f["partition"][0] for f in table.files()][:2] == [-0.0, 0.0]
    assert math.copysign(1, table.files()[0]["partition"][0]) < 0 and math.isnan(table.files()[2]["partition"][0])
