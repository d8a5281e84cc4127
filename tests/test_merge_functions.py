"""Both engines against the plain-Python oracle over random version histories."""

from __future__ import annotations

import merge_core as mc
import oracle
import pyarrow as pa
import pytest
from helpers import cut, rows_of, table_of
from hypothesis import given
from hypothesis import strategies as st

ALGORITHMS = ["loser-tree", "heap"]


def histories(max_runs=8, key_range=25, duplicates=False, int_kinds=False):
    kind = st.sampled_from([0, 1, 2, 3]) if int_kinds else st.sampled_from(oracle.KINDS)
    row = st.fixed_dictionaries({"k": st.integers(0, key_range), "seq": st.integers(0, 3), "op": kind})
    return st.lists(st.lists(row, max_size=30), max_size=max_runs).map(lambda runs: _number(runs, duplicates))


def _number(runs, duplicates):
    out, v = [], 0
    for rows in runs:
        rows = sorted(rows, key=lambda r: r["k"])
        if not duplicates:
            rows = list({r["k"]: r for r in rows}.values())
        for r in rows:
            r["v"] = v
            v += 1
        out.append(rows)
    return out


def schema(int_kinds=False):
    return pa.schema(
        [("k", pa.int64()), ("v", pa.int64()), ("seq", pa.int32()), ("op", pa.int8() if int_kinds else pa.string())]
    )


MERGES = [
    ("none", {"merge": "none"}),
    ("deduplicate", {}),
    (mc.Deduplicate(ignore_delete=True), {"ignore_delete": True}),
    (mc.Deduplicate(drop_deletes=False), {"drop_deletes": False}),
    (mc.Deduplicate(ignore_delete=True, drop_deletes=False), {"ignore_delete": True, "drop_deletes": False}),
]


@given(
    runs=histories(),
    cuts=st.lists(st.integers(0, 40), max_size=3),
    with_sequence=st.booleans(),
    int_kinds=st.booleans(),
    batch_size=st.sampled_from([1, 7, 64, 8192]),
)
def test_engines_equal_oracle(runs, cuts, with_sequence, int_kinds, batch_size):
    if int_kinds:
        for rows in runs:
            for r in rows:
                r["op"] = oracle.KINDS.index(r["op"])
    s = schema(int_kinds)
    sequence = "seq" if with_sequence else None
    for merge, oracle_args in MERGES:
        want = oracle.merge(runs, ["k"], ["seq"] if with_sequence else [], "op", **oracle_args)
        for algorithm in ALGORITHMS:
            inputs = [cut(table_of(rows, s), cuts) for rows in runs]
            stream = mc.merge(
                inputs,
                key="k",
                sequence=sequence,
                row_kind="op",
                merge=merge,
                algorithm=algorithm,
                batch_size=batch_size,
            )
            batches = list(stream)
            assert all(b.num_rows == batch_size for b in batches[:-1])
            got = pa.Table.from_batches(batches, schema=stream.schema).to_pylist() if batches else []
            assert got == want, (merge, algorithm)
            assert stream.stats["rows_out"] == len(want)
            assert stream.stats["rows_in"] == sum(map(len, runs))


@given(runs=histories(max_runs=5, key_range=6, duplicates=True), with_sequence=st.booleans())
def test_none_keeps_duplicates_inside_runs_in_version_order(runs, with_sequence):
    want = oracle.merge(runs, ["k"], ["seq"] if with_sequence else [], "op", merge="none")
    for algorithm in ALGORITHMS:
        inputs = [table_of(rows, schema()) for rows in runs]
        got = rows_of(
            mc.merge(
                inputs,
                key="k",
                sequence="seq" if with_sequence else None,
                row_kind="op",
                merge="none",
                algorithm=algorithm,
                batch_size=3,
            )
        )
        assert got == want


def test_hundreds_of_runs_and_all_keys_equal():
    runs = [[{"k": 5, "v": i, "seq": (i * 37) % 11, "op": "+I"}] for i in range(300)]
    for with_sequence in (False, True):
        want = oracle.merge(runs, ["k"], ["seq"] if with_sequence else [], "op")
        for algorithm in ALGORITHMS:
            got = rows_of(
                mc.merge(
                    [table_of(r, schema()) for r in runs],
                    key="k",
                    sequence="seq" if with_sequence else None,
                    row_kind="op",
                    algorithm=algorithm,
                )
            )
            assert got == want and len(got) == 1


def test_one_long_run_beside_many_short_ones():
    long_run = [{"k": k, "v": k, "seq": 0, "op": "+I"} for k in range(0, 20000, 2)]
    short = [[{"k": k, "v": 100000 + k, "seq": 0, "op": "+I"}] for k in range(1, 600, 3)]
    runs = [long_run, *short]
    want = oracle.merge(runs, ["k"])
    for algorithm in ALGORITHMS:
        got = rows_of(mc.merge([table_of(r, schema()) for r in runs], key="k", algorithm=algorithm))
        assert got == want


def test_sequence_ties_fall_back_to_run_order():
    """Equal sequence values: the later write is newer (Paimon orders them by
    _SEQUENCE_NUMBER, the order of writing), retract or not."""
    a = [{"k": 1, "v": 0, "seq": 5, "op": "+I"}]
    b = [{"k": 1, "v": 1, "seq": 5, "op": "-D"}]  # newer run, same sequence
    got = rows_of(mc.merge([table_of(a, schema()), table_of(b, schema())], key="k", sequence="seq", row_kind="op"))
    assert got == []
    got = rows_of(mc.merge([table_of(b, schema()), table_of(a, schema())], key="k", sequence="seq", row_kind="op"))
    assert got == [{"k": 1, "v": 0, "seq": 5, "op": "+I"}]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_loser_tree_and_heap_count_comparisons(algorithm):
    k = 32
    runs = [pa.table({"k": pa.array(range(r, 32 * 500, k), pa.int64())}) for r in range(k)]
    stream = mc.merge(runs, key="k", algorithm=algorithm)
    stream.read_all()
    per_row = stream.stats["key_comparisons"] / stream.stats["rows_out"]
    if algorithm == "loser-tree":
        assert per_row <= 5 + 1  # ceil(log2 32) + 1
    else:
        assert per_row > 5  # the heap's sift-down pays two comparisons a level


def test_aggregate_folds_a_sequence_column_as_last_value():
    """A sequence column is aggregated with last_value, as Paimon's: a newest retract
    makes it null (a table's own sequence numbers are a system sequence instead, which
    always takes the newest version's value)."""
    schema = pa.schema([("k", pa.int64()), ("n", pa.int64()), ("seq", pa.int64()), ("op", pa.string())])
    runs = [
        pa.table({"k": [1, 2], "n": [5, 1], "seq": [1, 1], "op": ["+I", "+I"]}, schema=schema),
        pa.table({"k": [1, 2], "n": [7, 1], "seq": [2, 2], "op": ["+I", "+I"]}, schema=schema),
        pa.table({"k": [1], "n": [5], "seq": [3], "op": ["-U"]}, schema=schema),
    ]
    for algorithm in ("loser-tree", "heap"):
        out = mc.merge(
            runs, key="k", sequence="seq", row_kind="op", merge=mc.Aggregate({"n": "sum"}), algorithm=algorithm
        )
        assert out.read_all().to_pydict() == {"k": [1, 2], "n": [7, 2], "seq": [None, 2], "op": ["+I", "+I"]}
