"""Every key type of the contract, on both engines, against the oracle's ordering."""

from __future__ import annotations

import datetime
import decimal

import merge_core as mc
import oracle
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st


def _ints(lo, hi):
    return st.integers(lo, hi)


def _cast(arrow_type, storage):
    return lambda values: pa.array(values, storage).cast(arrow_type)


# name -> (strategy of Python values, array builder, oracle's order of a value)
KEY_TYPES = {
    "int8": (_ints(-128, 127), lambda v: pa.array(v, pa.int8()), None),
    "int16": (_ints(-(2**15), 2**15 - 1), lambda v: pa.array(v, pa.int16()), None),
    "int32": (_ints(-(2**31), 2**31 - 1), lambda v: pa.array(v, pa.int32()), None),
    "int64": (_ints(-(2**63), 2**63 - 1), lambda v: pa.array(v, pa.int64()), None),
    "uint8": (_ints(0, 255), lambda v: pa.array(v, pa.uint8()), None),
    "uint16": (_ints(0, 2**16 - 1), lambda v: pa.array(v, pa.uint16()), None),
    "uint32": (_ints(0, 2**32 - 1), lambda v: pa.array(v, pa.uint32()), None),
    "uint64": (_ints(0, 2**64 - 1), lambda v: pa.array(v, pa.uint64()), None),
    "float32": (st.floats(width=32), lambda v: pa.array(v, pa.float32()), oracle.java_order),
    "float64": (st.floats(), lambda v: pa.array(v, pa.float64()), oracle.java_order),
    "utf8": (st.text(max_size=6), lambda v: pa.array(v, pa.string()), None),
    "large_utf8": (st.text(max_size=6), lambda v: pa.array(v, pa.large_string()), None),
    "utf8_view": (st.text(max_size=20), lambda v: pa.array(v, pa.string_view()), None),
    "binary": (st.binary(max_size=6), lambda v: pa.array(v, pa.binary()), None),
    "large_binary": (st.binary(max_size=6), lambda v: pa.array(v, pa.large_binary()), None),
    "binary_view": (st.binary(max_size=20), lambda v: pa.array(v, pa.binary_view()), None),
    "fixed_size_binary": (st.binary(min_size=3, max_size=3), lambda v: pa.array(v, pa.binary(3)), None),
    "date32": (_ints(-100000, 100000), _cast(pa.date32(), pa.int32()), None),
    "date64": (_ints(-(2**50), 2**50), _cast(pa.date64(), pa.int64()), None),
    "timestamp_s": (_ints(-(2**40), 2**40), _cast(pa.timestamp("s"), pa.int64()), None),
    "timestamp_ms": (_ints(-(2**50), 2**50), _cast(pa.timestamp("ms"), pa.int64()), None),
    "timestamp_us_utc": (_ints(-(2**60), 2**60), _cast(pa.timestamp("us", tz="UTC"), pa.int64()), None),
    "timestamp_ns": (_ints(-(2**62), 2**62), _cast(pa.timestamp("ns"), pa.int64()), None),
    "decimal128": (
        st.decimals(min_value=-(10**6), max_value=10**6, places=2, allow_nan=False),
        lambda v: pa.array(v, pa.decimal128(10, 2)),
        None,
    ),
}


def _build_runs(name, runs_values):
    """Runs of (key, id) sorted by the oracle's order, one row per key; and those rows."""
    _, build, order = KEY_TYPES[name]
    order = order or (lambda v: v)
    tables, rows_per_run, next_id = [], [], 0
    for values in runs_values:
        unique = {order(v): v for v in values}
        values = [unique[k] for k in sorted(unique)]
        ids = list(range(next_id, next_id + len(values)))
        next_id += len(values)
        tables.append(pa.table({"key": build(values), "id": pa.array(ids, pa.int64())}))
        rows_per_run.append([{"key": order(v), "id": i} for v, i in zip(values, ids, strict=False)])
    return tables, rows_per_run


@pytest.mark.parametrize("name", sorted(KEY_TYPES))
@pytest.mark.parametrize("algorithm", ["loser-tree", "heap"])
@given(data=st.data())
def test_key_type(name, algorithm, data):
    strategy = KEY_TYPES[name][0]
    runs_values = data.draw(st.lists(st.lists(strategy, max_size=25), min_size=1, max_size=6))
    # Keys shared between runs, so that groups form.
    shared = data.draw(st.lists(strategy, max_size=5))
    runs_values = [values + shared for values in runs_values]
    tables, rows = _build_runs(name, runs_values)
    for merge in ("deduplicate", "none"):
        want = [r["id"] for r in oracle.merge(rows, ["key"], merge=merge)]
        out = mc.merge(tables, key="key", merge=merge, algorithm=algorithm, batch_size=16).read_all()
        assert out.column("id").to_pylist() == want
        assert out.schema.field("key").type == tables[0].schema.field("key").type


@given(
    runs=st.lists(
        st.lists(st.tuples(st.sampled_from(["a", "b", "ab", ""]), st.integers(-2, 2), st.booleans()), max_size=20),
        max_size=6,
    )
)
def test_composite_key(runs):
    tables, rows, next_id = [], [], 0
    for values in runs:
        values = sorted(set(values))
        ids = list(range(next_id, next_id + len(values)))
        next_id += len(values)
        tables.append(
            pa.table(
                {
                    "s": pa.array([v[0] for v in values], pa.string()),
                    "i": pa.array([v[1] for v in values], pa.int32()),
                    "b": pa.array([v[2] for v in values], pa.bool_()),
                    "id": pa.array(ids, pa.int64()),
                }
            )
        )
        rows.append([{"s": v[0], "i": v[1], "b": v[2], "id": i} for v, i in zip(values, ids, strict=False)])
    want = [r["id"] for r in oracle.merge(rows, ["s", "i", "b"])]
    for algorithm in ("loser-tree", "heap"):
        out = mc.merge(tables, key=["s", "i", "b"], algorithm=algorithm).read_all() if tables else None
        assert (out.column("id").to_pylist() if out is not None else []) == want


def test_dates_and_decimals_round_trip_values():
    a = pa.table(
        {
            "d": pa.array([datetime.date(2020, 1, 1), datetime.date(2021, 1, 1)]),
            "x": pa.array([decimal.Decimal("1.50"), decimal.Decimal("2.25")], pa.decimal128(5, 2)),
        }
    )
    b = pa.table(
        {"d": pa.array([datetime.date(2020, 6, 1)]), "x": pa.array([decimal.Decimal("9.99")], pa.decimal128(5, 2))}
    )
    out = mc.merge([a, b], key="d").read_all()
    assert out.column("d").to_pylist() == [
        datetime.date(2020, 1, 1),
        datetime.date(2020, 6, 1),
        datetime.date(2021, 1, 1),
    ]
    assert out.column("x").to_pylist() == [decimal.Decimal("1.50"), decimal.Decimal("9.99"), decimal.Decimal("2.25")]


def test_float_keys_follow_javas_order():
    """As docs/semantics.md says: -inf < -0.0 < 0.0 < inf < NaN, every NaN one key."""
    import math
    import struct

    neg_nan = struct.unpack("<d", struct.pack("<Q", 0xFFF8_0000_0000_0000))[0]
    keys = [float("nan"), 1.0, -0.0, float("inf"), neg_nan, 0.0, float("-inf")]
    for merge in ("none", "deduplicate"):
        out = mc.sort(pa.table({"k": keys}), key="k", merge=merge).read_all()["k"].to_pylist()
        signs = [math.copysign(1, v) for v in out]
        assert out[:5] == [float("-inf"), -0.0, 0.0, 1.0, float("inf")] and signs[1] < 0 < signs[2], out
        nans = out[5:]
        assert all(math.isnan(v) for v in nans), out
        # Without folding both NaNs stay, in arrival order; deduplicate keeps the newer.
        assert [math.copysign(1, v) for v in nans] == ([1, -1] if merge == "none" else [-1]), out
