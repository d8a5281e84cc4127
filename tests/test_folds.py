"""First-row, partial-update and aggregate on both engines against the oracle, over
random version histories with random row kinds, nulls and sequence ties."""

from __future__ import annotations

import merge_core as mc
import oracle
import pyarrow as pa
import pytest
from helpers import cut, table_of
from hypothesis import given
from hypothesis import strategies as st

SCHEMA = pa.schema(
    [
        ("k", pa.int32()),
        ("seq", pa.int64()),
        ("op", pa.string()),
        ("n", pa.int64()),
        ("s", pa.string()),
        ("b", pa.bool_()),
    ]
)

AGGREGATES = [
    {"fields": {"n": "sum", "s": {"function": "listagg", "delimiter": ";"}, "b": "bool_or"}},
    {
        "fields": {
            "n": {"function": "sum", "ignore_retract": True},
            "s": "last_value",
            "b": {"function": "bool_and", "ignore_retract": True},
        }
    },
    {
        "fields": {
            "n": "max",
            "s": {"function": "min", "ignore_retract": True},
            "b": {"function": "first_non_null_value", "ignore_retract": True},
        },
        "remove_record_on_delete": True,
    },
    {
        "fields": {
            "n": {"function": "product", "ignore_retract": True},
            "s": {"function": "first_value", "ignore_retract": True},
            "b": "last_value",
        }
    },
    {"fields": {"n": {"function": "min", "ignore_retract": True}, "s": "last_non_null_value"}, "default": "last_value"},
    {
        "fields": {
            "s": {"function": "max", "ignore_retract": True},
            "b": {"function": "bool_or", "ignore_retract": True},
        },
        "default": "sum",
        "remove_record_on_delete": True,
    },
]

MERGES = (
    [("first-row", mc.FirstRow(ignore_delete=d), {"ignore_delete": d}) for d in (False, True)]
    + [
        (
            "partial-update",
            mc.PartialUpdate(ignore_delete=d, remove_record_on_delete=r),
            {"ignore_delete": d, "remove_record_on_delete": r},
        )
        for d in (False, True)
        for r in (False, True)
    ]
    + [("aggregate", mc.Aggregate(**a), a) for a in AGGREGATES]
)


def histories(max_runs=6, key_range=8):
    row = st.fixed_dictionaries(
        {
            "k": st.integers(0, key_range),
            "seq": st.integers(0, 3),
            "op": st.sampled_from(oracle.KINDS),
            "n": st.none() | st.integers(-5, 5),
            "s": st.none() | st.sampled_from(["a", "b", "null", "zz"]),
            "b": st.none() | st.booleans(),
        }
    )
    return st.lists(st.lists(row, max_size=20), max_size=max_runs).map(
        lambda runs: [sorted({r["k"]: r for r in rows}.values(), key=lambda r: r["k"]) for rows in runs]
    )


def expected(runs, name, options, with_sequence):
    try:
        return oracle.merge(runs, ["k"], ["seq"] if with_sequence else [], "op", merge=name, **options)
    except (oracle.RetractError, oracle.OverflowError_):
        return None


@given(
    runs=histories(),
    merge=st.sampled_from(MERGES),
    with_sequence=st.booleans(),
    cuts=st.lists(st.integers(0, 25), max_size=2),
    batch_size=st.sampled_from([1, 3, 8192]),
)
def test_folds_equal_oracle(runs, merge, with_sequence, cuts, batch_size):
    name, option, oracle_options = merge
    want = expected(runs, name, oracle_options, with_sequence)
    for algorithm in ("loser-tree", "heap"):
        stream = mc.merge(
            [cut(table_of(rows, SCHEMA), cuts) for rows in runs],
            key="k",
            sequence="seq" if with_sequence else None,
            row_kind="op",
            merge=option,
            algorithm=algorithm,
            batch_size=batch_size,
        )
        if want is None:
            with pytest.raises(mc.InvalidInputError, match="cannot take a retract|overflows"):
                stream.read_all()
        else:
            assert stream.read_all().to_pylist() == want, (name, option, algorithm)


def test_retract_errors_name_the_function():
    runs = [
        table_of([{"k": 1, "seq": 0, "op": "+I", "n": 1, "s": "a", "b": True}], SCHEMA),
        table_of([{"k": 1, "seq": 1, "op": "-U", "n": 1, "s": "a", "b": True}], SCHEMA),
    ]
    with pytest.raises(mc.InvalidInputError, match=r"run 1, row 0: merge function 'first-row' cannot take a retract"):
        mc.merge(runs, key="k", row_kind="op", merge="first-row").read_all()
    with pytest.raises(mc.InvalidInputError, match="aggregate function 'product' of column 'n'"):
        mc.merge(runs, key="k", row_kind="op", merge=mc.Aggregate({"n": "product"}, default="last_value")).read_all()


@pytest.mark.parametrize("typ, big", [(pa.int64(), 2**62), (pa.int8(), 100), (pa.uint16(), 40000)])
def test_sum_overflow_is_an_error_naming_key_and_column(typ, big):
    run = pa.table({"k": pa.array([7], pa.int64()), "n": pa.array([big], typ)})
    with pytest.raises(mc.InvalidInputError, match=r"key \(7\): sum of column 'n' overflows"):
        mc.merge([run, run, run], key="k", merge=mc.Aggregate({"n": "sum"})).read_all()


@pytest.mark.parametrize("typ", [pa.int16(), pa.uint32(), pa.float32(), pa.float64(), pa.decimal128(12, 3)])
def test_sum_min_max_over_numeric_types(typ):
    import decimal

    def values(xs):
        return pa.array([decimal.Decimal(x) if pa.types.is_decimal(typ) else x for x in xs], typ)

    runs = [
        pa.table({"k": pa.array([1, 2], pa.int64()), "a": values([1, 5]), "lo": values([3, 4]), "hi": values([3, 4])}),
        pa.table({"k": pa.array([1], pa.int64()), "a": values([2]), "lo": values([1]), "hi": values([9])}),
    ]
    out = mc.merge(runs, key="k", merge=mc.Aggregate({"a": "sum", "lo": "min", "hi": "max"})).read_all()
    assert [float(x) for x in out.column("a").to_pylist()] == [3.0, 5.0]
    assert [float(x) for x in out.column("lo").to_pylist()] == [1.0, 4.0]
    assert [float(x) for x in out.column("hi").to_pylist()] == [9.0, 4.0]
    assert out.schema.field("a").type == typ


@pytest.mark.parametrize(
    "merge, message",
    [
        (mc.Aggregate({"nope": "sum"}), "unknown column 'nope'"),
        (mc.Aggregate({"k": "sum"}), "key column 'k'"),
        (mc.Aggregate({"seq": "sum"}), "sequence column 'seq'"),
        (mc.Aggregate({"s": "sum"}), "'sum' does not apply to column 's'"),
        (mc.Aggregate({"n": "listagg"}), "'listagg' does not apply to column 'n'"),
        (mc.Aggregate({"n": "bool_and"}), "'bool_and' does not apply"),
        (mc.Aggregate({"n": "median"}), "unknown aggregate function 'median'"),
        (mc.Aggregate(default="sum"), "the default; name a function for this column"),
        (mc.Aggregate({"n": {"function": "sum", "color": 1}}), "has no option 'color'"),
    ],
)
def test_bad_aggregate_specs_are_rejected_up_front(merge, message):
    run = table_of([{"k": 1, "seq": 0, "op": "+I", "n": 1, "s": "a", "b": True}], SCHEMA)
    with pytest.raises(mc.InvalidInputError, match=message):
        mc.merge([run], key="k", sequence="seq", row_kind="op", merge=merge)


def test_a_key_seen_once_passes_through_unchanged():
    run = table_of([{"k": 1, "seq": 0, "op": "+I", "n": None, "s": "x", "b": None}], SCHEMA)
    for merge in [mc.Aggregate({"n": "sum", "s": "listagg", "b": "bool_and"}), "partial-update", "first-row"]:
        assert mc.merge([run], key="k", row_kind="op", merge=merge).read_all().to_pylist() == run.to_pylist()
