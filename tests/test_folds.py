"""First-row, partial-update and aggregate on both engines against the oracle, over
random version histories with random row kinds, nulls and sequence ties."""

from __future__ import annotations

import merge_core as mc
import oracle
import pyarrow as pa
import pytest
from helpers import cut, table_of
from hypothesis import given, settings
from hypothesis import strategies as st

SCHEMA = pa.schema(
    [
        ("k", pa.int32()),
        ("seq", pa.int64()),
        ("op", pa.string()),
        ("n", pa.int64()),
        ("s", pa.string()),
        ("b", pa.bool_()),
        ("g", pa.int32()),
        ("l", pa.list_(pa.int32())),
        ("m", pa.map_(pa.string(), pa.int32())),
    ]
)

# Every function, with and without ignore_retract, on the column types it takes.
AGGREGATES = [
    {"fields": {"n": "sum", "s": {"function": "listagg", "delimiter": ";"}, "b": "bool_or", "l": "collect"}},
    {
        "fields": {
            "n": {"function": "sum", "ignore_retract": True},
            "s": "last_value",
            "b": {"function": "bool_and", "ignore_retract": True},
            "l": {"function": "collect", "distinct": True},
            "m": "merge_map",
        }
    },
    {
        "fields": {"n": "sum", "s": "last_non_null_value", "b": "last_value", "l": "collect", "m": "merge_map"},
        "remove_record_on_delete": True,
    },
    {"fields": {"n": "max", "s": "min", "b": "first_non_null_value"}, "remove_record_on_delete": True},
    {
        "fields": {
            "n": "product",
            "s": {"function": "first_value", "ignore_retract": True},
            "b": "last_value",
            "l": {"function": "collect", "ignore_retract": True},
        }
    },
    {
        "fields": {"n": {"function": "min", "ignore_retract": True}, "s": "last_non_null_value"},
        "default": "last_value",
        "ignore_delete": True,
    },
    {
        "fields": {
            "s": {"function": "listagg", "distinct": True, "ignore_retract": True},
            "b": {"function": "bool_or", "ignore_retract": True},
            "l": "last_non_null_value",
            "m": "last_value",
        },
        "default": "sum",
    },
]

PARTIAL_UPDATES = [
    {"ignore_delete": d, "remove_record_on_delete": r} for d in (False, True) for r in (False, True) if not (d and r)
] + [
    {"sequence_groups": {"g": ["n", "s"]}},
    {"sequence_groups": {"g": ["n", "s", "l"]}, "fields": {"n": "sum", "l": "collect"}},
    {"sequence_groups": {("g", "b"): ["s", "n"]}, "remove_record_on_sequence_group": ["g"]},
    {
        "sequence_groups": {"g": ["n", "s", "b", "l", "m"]},
        "fields": {
            "n": {"function": "max", "ignore_retract": True},
            "m": "merge_map",
            "s": {"function": "first_value", "ignore_retract": True},
            "b": {"function": "first_non_null_value", "ignore_retract": True},
        },
        "default": "last_non_null_value",
    },
    {
        "sequence_groups": {"g": ["s"]},
        "fields": {"s": {"function": "listagg", "distinct": True}},
        "ignore_delete": True,
    },
]

MERGES = (
    [
        ("deduplicate", mc.Deduplicate(ignore_delete=d, drop_deletes=k), {"ignore_delete": d, "drop_deletes": k})
        for d in (False, True)
        for k in (False, True)
    ]
    + [
        ("first-row", mc.FirstRow(ignore_delete=d, drop_deletes=k), {"ignore_delete": d, "drop_deletes": k})
        for d in (False, True)
        for k in (False, True)
    ]
    # Each also keeping retracts and row kinds, as a compaction below the top level does.
    + [
        ("partial-update", mc.PartialUpdate(**p, drop_deletes=k), {**p, "drop_deletes": k})
        for p in PARTIAL_UPDATES
        for k in (True, False)
    ]
    + [
        ("aggregate", mc.Aggregate(**a, drop_deletes=k), {**a, "drop_deletes": k})
        for a in AGGREGATES
        for k in (True, False)
    ]
)


def histories(max_runs=6, key_range=8, null_sequences=False):
    maybe_null = st.none() if null_sequences else st.nothing()
    row = st.fixed_dictionaries(
        {
            "k": st.integers(0, key_range),
            "seq": st.integers(0, 3) | maybe_null,
            "op": st.sampled_from(oracle.KINDS),
            "n": st.none() | st.integers(-5, 5),
            "s": st.none() | st.sampled_from(["a", "b", "null", "zz", " ", "a;b"]),
            "b": st.none() | st.booleans(),
            "g": st.none() | st.integers(0, 3),
            "l": st.none() | st.lists(st.none() | st.integers(0, 3), max_size=3),
            "m": st.none() | st.dictionaries(st.sampled_from(["x", "y", "z"]), st.integers(0, 3), max_size=2),
        }
    )
    return st.lists(st.lists(row, max_size=20), max_size=max_runs).map(
        lambda runs: [sorted({r["k"]: r for r in rows}.values(), key=lambda r: r["k"]) for rows in runs]
    )


def as_rows(runs):
    """Maps as pyarrow's to_pylist gives them: lists of (key, value) pairs."""
    return [[{**r, "m": None if r["m"] is None else list(r["m"].items())} for r in rows] for rows in runs]


def expected(runs, name, options, with_sequence, sequence_order="ascending"):
    sequence = ["seq"] if with_sequence else []
    if name == "first-row" and with_sequence and runs:
        return "error"
    return oracle.expected_or_error(
        as_rows(runs), ["k"], sequence, "op", merge=name, sequence_order=sequence_order, **dict(options)
    )


def tables(runs, cuts):
    return [cut(table_of(rows, SCHEMA), cuts) for rows in as_rows(runs)]


@settings(max_examples=300)
@given(
    runs=histories(null_sequences=True),
    merge=st.sampled_from(MERGES),
    with_sequence=st.booleans(),
    sequence_order=st.sampled_from(["ascending", "descending"]),
    cuts=st.lists(st.integers(0, 25), max_size=2),
    batch_size=st.sampled_from([1, 3, 8192]),
)
def test_folds_equal_oracle(runs, merge, with_sequence, sequence_order, cuts, batch_size):
    name, option, oracle_options = merge
    want = expected(runs, name, oracle_options, with_sequence, sequence_order)
    for algorithm in ("loser-tree", "heap"):
        if want == "error":
            with pytest.raises(mc.InvalidInputError, match="takes no sequence"):
                mc.merge(tables(runs, cuts), key="k", sequence="seq", merge=option)
            continue
        stream = mc.merge(
            tables(runs, cuts),
            key="k",
            sequence="seq" if with_sequence else None,
            sequence_order=sequence_order,
            row_kind="op",
            merge=option,
            algorithm=algorithm,
            batch_size=batch_size,
        )
        if want is None:
            with pytest.raises(mc.InvalidInputError, match="cannot take a retract|overflows|cannot take this retract"):
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
    with pytest.raises(mc.InvalidInputError, match="aggregate function 'max' of column 'n'.*fields.n.ignore-retract"):
        mc.merge(runs, key="k", row_kind="op", merge=mc.Aggregate({"n": "max"}, default="last_value")).read_all()


@pytest.mark.parametrize("typ, big", [(pa.int64(), 2**62), (pa.int8(), 100), (pa.uint16(), 40000)])
def test_sum_overflow_is_an_error_naming_key_and_column(typ, big):
    run = pa.table({"k": pa.array([7], pa.int64()), "n": pa.array([big], typ)})
    with pytest.raises(mc.InvalidInputError, match=r"run 1, row 0, key \(7\): sum of column 'n' overflows"):
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
        (mc.Aggregate(default="sum"), "it is the default function; name a function for this column"),
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
