"""Paimon's own examples and unit-test vectors for its merge engines (the partial-update
and aggregation pages of its docs; PartialUpdateMergeFunctionTest and
AggregateMergeFunctionTest), configured with Paimon's table option keys through
``mc.merge_from_paimon_options``. Each step is a run of its own; after each step the
merge of all steps so far must give Paimon's row (or none, where Paimon's result is a
delete)."""

from __future__ import annotations

import merge_core as mc
import oracle
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

Step = tuple[str, tuple]


def merged_after_each_step(columns, options, steps, types=None):
    """The merged row after each step (``None`` where no row is output)."""
    setup = mc.merge_from_paimon_options(options)
    types = types or {}
    schema = pa.schema([(c, types.get(c, pa.int64())) for c in columns] + [("op", pa.string())])
    runs = [pa.table([[v] for v in values] + [[kind]], schema=schema) for kind, values in steps]
    out = []
    for n in range(1, len(runs) + 1):
        rows = mc.merge(runs[:n], key=columns[0], row_kind="op", **setup.merge_kwargs()).read_all().to_pylist()
        assert len(rows) <= 1
        out.append(tuple(rows[0][c] for c in columns) if rows else None)
    return out


def test_partial_update_non_null_fields():
    steps = [("+I", (1, 23.0, 10, None)), ("+I", (1, None, None, "This is a book")), ("+I", (1, 25.2, None, None))]
    types = {"price": pa.float64(), "title": pa.string()}
    got = merged_after_each_step(["k", "price", "n", "title"], {"merge-engine": "partial-update"}, steps, types)
    assert got[-1] == (1, 25.2, 10, "This is a book")


def test_sequence_group():
    options = {"merge-engine": "partial-update", "fields.g_1.sequence-group": "a,b", "fields.g_2.sequence-group": "c,d"}
    steps = [("+I", (1, 1, 1, 1, 1, 1, 1)), ("+I", (1, 2, 2, 2, 2, 2, None)), ("+I", (1, 3, 3, 1, 3, 3, 3))]
    got = merged_after_each_step(["k", "a", "b", "g_1", "c", "d", "g_2"], options, steps)
    assert got[1:] == [(1, 2, 2, 2, 1, 1, 1), (1, 2, 2, 2, 3, 3, 3)]


def test_sequence_group_ordered_by_two_fields():
    options = {
        "merge-engine": "partial-update",
        "fields.g_1.sequence-group": "a,b",
        "fields.g_2,g_3.sequence-group": "c,d",
    }
    steps = [("+I", (1, 1, 1, 1, 1, 1, 1, 1)), ("+I", (1, 2, 2, 2, 2, 2, 1, None)), ("+I", (1, 3, 3, 1, 3, 3, 3, 1))]
    got = merged_after_each_step(["k", "a", "b", "g_1", "c", "d", "g_2", "g_3"], options, steps)
    assert got[1:] == [(1, 2, 2, 2, 1, 1, 1, 1), (1, 2, 2, 2, 3, 3, 3, 1)]


AGG_IN_GROUPS = [("+I", (1, 1, 1, None, None)), ("+I", (1, None, None, 1, 1))]
AGG_IN_GROUPS += [("+I", (1, 2, 2, None, None)), ("+I", (1, None, None, 2, 2))]


def test_aggregation_in_partial_update():
    options = {
        "merge-engine": "partial-update",
        "fields.a.sequence-group": "b",
        "fields.b.aggregate-function": "first_value",
        "fields.c.sequence-group": "d",
        "fields.d.aggregate-function": "sum",
    }
    got = merged_after_each_step(["k", "a", "b", "c", "d"], options, AGG_IN_GROUPS)
    assert got == [(1, 1, 1, None, None), (1, 1, 1, 1, 1), (1, 2, 1, 1, 1), (1, 2, 1, 2, 3)]


def test_aggregation_in_partial_update_with_a_default_function():
    options = {
        "merge-engine": "partial-update",
        "fields.a.sequence-group": "b",
        "fields.c.sequence-group": "d",
        "fields.default-aggregate-function": "last_non_null_value",
        "fields.d.aggregate-function": "sum",
    }
    assert merged_after_each_step(["k", "a", "b", "c", "d"], options, AGG_IN_GROUPS)[-1] == (1, 2, 2, 2, 3)


def test_aggregation_with_a_group_ordered_by_two_fields():
    options = {
        "merge-engine": "partial-update",
        "fields.a.aggregate-function": "sum",
        "fields.g_1,g_3.sequence-group": "a",
        "fields.g_2.sequence-group": "c",
    }
    steps = [("+I", (1, 1, 1, 1, "1", 1, 1)), ("+I", (1, 2, 2, 2, "2", None, 2)), ("+I", (1, 3, 3, 2, "3", 3, 1))]
    got = merged_after_each_step(["k", "a", "b", "g_1", "c", "g_2", "g_3"], options, steps, {"c": pa.string()})
    assert got[1:] == [(1, 3, 2, 2, "1", 1, 2), (1, 6, 3, 2, "3", 3, 2)]


GROUPS = {"merge-engine": "partial-update", "fields.f3.sequence-group": "f1,f2", "fields.f6.sequence-group": "f4,f5"}
F = [f"f{i}" for i in range(7)]
GROUP_STEPS = [
    ("+I", (1, 1, 1, 1, 1, 1, 1)),
    ("+I", (1, 2, 2, 2, 2, 2, None)),
    ("+I", (1, 3, 3, 1, 3, 3, 3)),
    ("-D", (1, 1, 1, 3, 1, 1, None)),
    ("-D", (1, 1, 1, 3, 1, 1, 4)),
    ("+I", (1, 4, 4, 4, 5, 5, 5)),
    ("-D", (1, 1, 1, 6, 1, 1, 6)),
]


def test_sequence_group_retracts():
    got = merged_after_each_step(F, GROUPS, GROUP_STEPS)
    assert got[1:] == [
        (1, 2, 2, 2, 1, 1, 1),
        (1, 2, 2, 2, 3, 3, 3),
        (1, None, None, 3, 3, 3, 3),
        (1, None, None, 3, None, None, 4),
        (1, 4, 4, 4, 5, 5, 5),
        (1, None, None, 6, None, None, 6),
    ]


def test_sequence_group_removes_the_row():
    options = {**GROUPS, "partial-update.remove-record-on-sequence-group": "f6"}
    got = merged_after_each_step(F, options, GROUP_STEPS)
    # Steps 5 and 7 delete the whole row: Paimon's result is a delete, which a read drops.
    assert got[1:5] == [(1, 2, 2, 2, 1, 1, 1), (1, 2, 2, 2, 3, 3, 3), (1, None, None, 3, 3, 3, 3), None]
    assert got[5:] == [(1, 4, 4, 4, 5, 5, 5), None]


def test_sequence_groups_ordered_by_two_fields_with_retracts():
    options = {
        "merge-engine": "partial-update",
        "fields.f3,f4.sequence-group": "f1,f2",
        "fields.f7,f8.sequence-group": "f5,f6",
    }
    f = [f"f{i}" for i in range(9)]
    steps = [
        ("+I", (1, 1, 1, 1, 1, 1, 1, 1, 3)),
        ("+I", (1, 2, 2, 2, 2, 2, 1, 1, None)),
        ("+I", (1, 1, 3, 1, 3, 3, 3, 3, 2)),
        ("-D", (1, 1, 1, 3, 3, 1, 1, None, None)),
        ("-D", (1, 1, 1, 3, 1, 1, 1, 4, 4)),
        ("+I", (1, 4, 4, 4, 4, 5, 5, 5, 5)),
        ("-D", (1, 1, 1, 6, 1, 1, 1, 6, 1)),
    ]
    assert merged_after_each_step(f, options, steps)[1:] == [
        (1, 2, 2, 2, 2, 1, 1, 1, 3),
        (1, 2, 2, 2, 2, 3, 3, 3, 2),
        (1, None, None, 3, 3, 3, 3, 3, 2),
        (1, None, None, 3, 3, None, None, 4, 4),
        (1, 4, 4, 4, 4, 5, 5, 5, 5),
        (1, None, None, 6, 1, None, None, 6, 1),
    ]


def test_sequence_group_with_a_default_function():
    options = {**GROUPS, "fields.default-aggregate-function": "last_non_null_value"}
    steps = [*GROUP_STEPS[:3], ("+I", (1, 4, None, 4, 5, None, 5))]
    assert merged_after_each_step(F, options, steps)[-1] == (1, 4, 2, 4, 5, 3, 5)


def test_first_value_takes_an_older_group_value():
    options = {
        "merge-engine": "partial-update",
        "fields.f1.sequence-group": "f2,f3",
        "fields.f2.aggregate-function": "first_value",
        "fields.f3.aggregate-function": "last_value",
    }
    steps = [("+I", (1, 1, 1, 1)), ("+I", (1, 2, 2, 2)), ("+I", (1, 0, 3, 3))]
    assert merged_after_each_step(["f0", "f1", "f2", "f3"], options, steps)[1:] == [(1, 2, 1, 2), (1, 2, 3, 2)]


def test_partial_update_with_aggregation_and_retracts():
    options = {
        "merge-engine": "partial-update",
        "fields.f1.sequence-group": "f2,f3,f4",
        "fields.f7.sequence-group": "f6",
        "fields.f0.aggregate-function": "listagg",  # a key column: ignored, as Paimon's
        "fields.f2.aggregate-function": "sum",
        "fields.f4.aggregate-function": "last_value",
        "fields.f6.aggregate-function": "last_non_null_value",
        "fields.f4.ignore-retract": "true",
        "fields.f6.ignore-retract": "true",
    }
    f = [f"f{i}" for i in range(8)]
    steps = [
        ("+I", (1, 1, 1, 1, 1, 1, 1, 1)),
        ("+I", (1, 2, 1, 2, 2, 2, 2, 0)),
        ("+I", (1, 1, 1, 1, 1, 1, 2, 0)),
        ("+I", (1, 1, -1, 1, 1, 2, 2, 0)),
        ("+I", (1, 3, None, None, None, None, None, 2)),
        ("+I", (1, 3, 1, 1, 1, 1, 1, 3)),
        ("-U", (1, 3, 2, 1, 1, 1, 1, 3)),
        ("-D", (1, 3, 2, 1, 1, 1, 1, 3)),
        ("-D", (1, 2, 2, 1, 1, 1, 1, 3)),
    ]
    with pytest.raises(mc.InvalidInputError, match="key column 'f0'"):
        merged_after_each_step(f, options, steps)
    del options["fields.f0.aggregate-function"]  # merge-core refuses what Paimon ignores
    got = merged_after_each_step(f, options, steps)
    assert got[1:3] == [(1, 2, 2, 2, 2, 2, 1, 1), (1, 2, 3, 2, 2, 1, 1, 1)]
    assert got[4:] == [
        (1, 3, 2, None, None, 2, 1, 2),
        (1, 3, 3, 1, 1, 1, 1, 3),
        (1, 3, 1, None, 1, 1, 1, 3),
        (1, 3, -1, None, 1, 1, 1, 3),
        (1, 3, -3, None, 1, 1, 1, 3),
    ]


def test_aggregation_engine():
    options = {
        "merge-engine": "aggregation",
        "fields.price.aggregate-function": "max",
        "fields.sales.aggregate-function": "sum",
    }
    steps = [("+I", (1, 23.0, 15)), ("+I", (1, 30.2, 20))]
    got = merged_after_each_step(["k", "price", "sales"], options, steps, {"price": pa.float64()})
    assert got[-1] == (1, 30.2, 35)


def test_aggregation_default_function():
    options = {
        "merge-engine": "aggregation",
        "fields.default-aggregate-function": "first_non_null_value",
        "fields.b.aggregate-function": "sum",
    }
    steps = [("+I", r) for r in [(1, None, 1, 1, 1), (1, 2, None, 2, 2), (1, 3, 3, None, 3), (1, 4, 4, 4, None)]]
    steps.append(("+I", (1, 5, 5, 5, 5)))
    assert merged_after_each_step(["k", "a", "b", "c", "d"], options, steps)[-1] == (1, 2, 13, 1, 1)


def test_listagg_delimiters():
    options = {
        "merge-engine": "aggregation",
        "fields.a.aggregate-function": "listagg",
        "fields.b.aggregate-function": "listagg",
        "fields.b.list-agg-delimiter": "-",
        "fields.d.aggregate-function": "listagg",
        "fields.d.list-agg-delimiter": "/",
    }
    steps = [("+I", (1, str(i), str(i), i, str(i))) for i in range(1, 6)]
    types = {"a": pa.string(), "b": pa.string(), "d": pa.string()}
    assert merged_after_each_step(["k", "a", "b", "c", "d"], options, steps, types)[-1] == (
        1,
        "1,2,3,4,5",
        "1-2-3-4-5",
        5,
        "1/2/3/4/5",
    )


def test_a_lone_retract_passes_through_and_a_read_drops_it():
    """The reducer passes a single version through untouched: no function sees it, so
    no function can refuse it (a lone -U under max failed the merge: "cannot take a retract")."""
    t = pa.table({"k": [1, 2], "a": [5, 6], "op": ["-U", "+I"]})
    for merge in [mc.Aggregate({"a": "max"}), mc.Aggregate({"a": "product"}), "first-row", "partial-update"]:
        assert mc.merge([t], key="k", row_kind="op", merge=merge).read_all().to_pydict() == {
            "k": [2],
            "a": [6],
            "op": ["+I"],
        }
    # Kept as Paimon's compaction below the top level keeps it: its own kind, -U too.
    for merge in [mc.Deduplicate(drop_deletes=False), mc.Aggregate({"a": "max"}, drop_deletes=False)]:
        kept = mc.merge([t], key="k", row_kind="op", merge=merge).read_all()
        assert kept.to_pydict() == {"k": [1, 2], "a": [5, 6], "op": ["-U", "+I"]}


def test_only_retracts_fold_to_an_insert_under_aggregation():
    """Paimon's aggregation always outputs an insert: sum of two retracts is negative."""
    t = [pa.table({"k": [1], "a": [5], "op": ["-U"]}), pa.table({"k": [1], "a": [2], "op": ["-D"]})]
    assert mc.merge(t, key="k", row_kind="op", merge=mc.Aggregate({"a": "sum"})).read_all()["a"].to_pylist() == [-7]
    assert (
        mc.merge(t, key="k", row_kind="op", merge=mc.PartialUpdate(remove_record_on_delete=True)).read_all().num_rows
        == 0
    )


@pytest.mark.parametrize(
    "options, message",
    [
        ({"merge-engine": "partial-update", "fields.a.aggregate-function": "sum"}, "in no sequence group"),
        ({"merge-engine": "partial-update", "fields.k.sequence-group": "a"}, "key column 'k'"),
        ({"merge-engine": "partial-update", "fields.g.sequence-group": "k,a"}, "key column 'k'"),
        (
            {
                "merge-engine": "aggregation",
                "aggregation.remove-record-on-delete": "true",
                "fields.a.ignore-retract": "true",
            },
            "conflict",
        ),
        (
            {
                "merge-engine": "partial-update",
                "ignore-delete": "true",
                "partial-update.remove-record-on-delete": "true",
            },
            "conflict",
        ),
        (
            {
                "merge-engine": "partial-update",
                "fields.g.sequence-group": "a",
                "partial-update.remove-record-on-delete": "true",
            },
            "conflict",
        ),
        (
            {
                "merge-engine": "partial-update",
                "fields.g.sequence-group": "a",
                "partial-update.remove-record-on-sequence-group": "a",
            },
            "orders no sequence group",
        ),
        ({"merge-engine": "aggregation", "fields.a.aggregate-function": "count"}, "unknown aggregate function 'count'"),
        ({"merge-engine": "first-row", "sequence.field": "g"}, "takes no sequence"),
    ],
)
def test_paimon_configuration_errors(options, message):
    schema = pa.schema([("k", pa.int64()), ("a", pa.int64()), ("g", pa.int64())])
    run = pa.table({"k": [1], "a": [1], "g": [1]}, schema=schema)
    with pytest.raises(mc.InvalidInputError, match=message):
        mc.merge([run], key="k", **mc.merge_from_paimon_options(options).merge_kwargs())


@pytest.mark.parametrize(
    "options, message",
    [
        ({"merge-engine": "lookup"}, "unknown merge engine 'lookup'"),
        ({"ignore-delete": "yes"}, "option 'ignore-delete' must be true or false"),
        ({"sequence.field.sort-order": "up"}, "must be ascending or descending"),
    ],
)
def test_unknown_paimon_options_are_named(options, message):
    with pytest.raises(mc.InvalidInputError, match=message):
        mc.merge_from_paimon_options(options)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"fields.a.nested-key": "x"}, "option 'fields.a.nested-key' = 'x'"),
        ({"sequence.snapshot-ordering": "true"}, "option 'sequence.snapshot-ordering' = 'true'"),
        ({"merge-engine": "aggregation", "fields.a.aggregate-function": "theta_sketch"}, "= 'theta_sketch'"),
    ],
)
def test_paimon_merge_options_merge_core_does_not_do_are_refused_by_name(options, message):
    with pytest.raises(mc.UnsupportedFeatureError, match=message):
        mc.merge_from_paimon_options(options)


def test_paimon_options_about_statistics_or_writes_leave_the_merge_as_it_is():
    """Per-column statistics, unknown per-column options and a write's -U filter do not
    change what a read merges (they were refused once)."""
    options = {"fields.a.stats-mode": "full", "fields.a.my-own": "x", "ignore-update-before": "true"}
    assert mc.merge_from_paimon_options({"merge-engine": "aggregation", **options}).merge == mc.Aggregate()


def test_options_outside_merging_pass_and_aliases_of_ignore_delete_apply_to_every_engine():
    setup = mc.merge_from_paimon_options(
        {"bucket": "4", "file.format": "parquet", "partial-update.ignore-delete": "true"}
    )
    assert setup.merge == mc.Deduplicate(ignore_delete=True)
    setup = mc.merge_from_paimon_options({"merge-engine": "aggregation", "first-row.ignore-delete": "TRUE"})
    assert setup.merge.ignore_delete


FUNCTIONS = ["sum", "max", "last_value", "listagg", "first_non_null_value", "collect"]
field_spec = st.fixed_dictionaries(
    {"function": st.sampled_from(FUNCTIONS)},
    optional={"ignore_retract": st.booleans(), "delimiter": st.sampled_from([",", ";"]), "distinct": st.booleans()},
)
names = st.sampled_from(["a", "b", "c", "d"])
merges = st.one_of(
    st.builds(mc.Deduplicate, ignore_delete=st.booleans()),
    st.builds(mc.FirstRow, ignore_delete=st.booleans()),
    st.builds(
        mc.Aggregate,
        fields=st.dictionaries(names, field_spec, max_size=3),
        default=st.sampled_from(["last_non_null_value", "sum", "max"]),
        remove_record_on_delete=st.booleans(),
        ignore_delete=st.booleans(),
    ),
    st.builds(
        mc.PartialUpdate,
        ignore_delete=st.booleans(),
        sequence_groups=st.dictionaries(st.sampled_from(["g", ("g", "h")]), st.lists(names, min_size=1, max_size=2)),
        fields=st.dictionaries(names, field_spec, max_size=2),
        default=st.none() | st.sampled_from(["last_non_null_value", "first_value"]),
    ),
)


@given(
    merge=merges,
    sequence=st.lists(st.sampled_from(["s", "t"]), unique=True),
    order=st.sampled_from(["ascending", "descending"]),
)
def test_paimon_options_round_trip(merge, sequence, order):
    """paimon_options and merge_from_paimon_options are inverse: the same spec comes back."""
    options = mc.paimon_options(merge, sequence, order)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in options.items())
    back = mc.merge_from_paimon_options(options)
    assert normalized(back.merge) == normalized(merge)
    assert back.sequence == tuple(sequence) and back.sequence_order == order


def normalized(merge):
    from merge_core.merge_functions import merge_spec

    spec = merge_spec(merge)
    spec["fields"] = {n: {"function": f} if isinstance(f, str) else f for n, f in spec.get("fields", {}).items()}
    spec["fields"] = {n: {k: v for k, v in f.items() if (k, v) not in DEFAULTS} for n, f in spec["fields"].items()}
    spec["sequence_groups"] = [(list(o), list(p)) for o, p in spec.get("sequence_groups", [])]
    return spec


DEFAULTS = {("ignore_retract", False), ("delimiter", ","), ("distinct", False)}


def test_oracle_agrees_on_the_documented_examples():
    """The plain-Python oracle gives Paimon's documented answers too (it is the reference
    of the random tests, so it must be right where Paimon says what is right)."""
    rows = [dict(zip(["k", "a", "b", "c", "d", "op"], (*values, kind), strict=True)) for kind, values in AGG_IN_GROUPS]
    out = oracle.merge(
        [[r] for r in rows],
        ["k"],
        row_kind="op",
        merge="partial-update",
        sequence_groups={"a": ["b"], "c": ["d"]},
        fields={"b": "first_value", "d": "sum"},
    )
    assert [(r["k"], r["a"], r["b"], r["c"], r["d"]) for r in out] == [(1, 2, 1, 2, 3)]
