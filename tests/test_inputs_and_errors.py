"""Input kinds, the C stream export, edge cases, and errors raised as Python exceptions."""

from __future__ import annotations

import merge_core as mc
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def t(keys, values=None):
    return pa.table({"k": pa.array(keys, pa.int64()), "v": pa.array(values or keys, pa.int64())})


def test_every_input_kind_gives_the_same_result():
    want = mc.merge([t([1, 3]), t([2, 3], [20, 30])], key="k").read_all()
    a, b = t([1, 3]), t([2, 3], [20, 30])
    variants = [
        [a, b],
        [a.to_batches()[0], b.to_batches()[0]],
        [a.to_reader(), b.to_reader()],
        [iter(a.to_batches()), (x for x in b.to_batches())],
        [a, mc.merge([b], key="k")],  # a Stream is itself a source
    ]
    for runs in variants:
        assert mc.merge(runs, key="k").read_all().equals(want)


def test_duckdb_result_as_a_run():
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    rel = con.sql("select range::BIGINT as k, range::BIGINT * 10 as v from range(5)")
    out = mc.merge([rel, t([2, 9], [0, 0])], key="k").read_all()
    assert out.column("v").to_pylist() == [0, 10, 0, 30, 40, 0]


def test_stream_exports_through_the_c_stream_interface():
    stream = mc.merge([t([1, 2]), t([2, 3])], key="k", batch_size=1)
    reader = pa.RecordBatchReader.from_stream(stream)
    assert reader.read_all().column("k").to_pylist() == [1, 2, 3]
    with pytest.raises(RuntimeError, match="already consumed"):
        pa.RecordBatchReader.from_stream(stream)


def test_duckdb_reads_a_stream():
    duckdb = pytest.importorskip("duckdb")
    stream = mc.merge([t([1, 2]), t([2, 3], [5, 6])], key="k")
    con = duckdb.connect()
    con.register("merged", pa.RecordBatchReader.from_stream(stream))
    assert con.sql("select sum(v) from merged").fetchall()[0][0] == 1 + 5 + 6


def test_zero_runs_and_empty_runs():
    assert mc.merge([], key="k").read_all().num_rows == 0
    empty = t([])
    assert mc.merge([empty, empty], key="k").read_all().num_rows == 0
    assert mc.merge([empty, t([1]), iter([])], key="k").read_all().column("k").to_pylist() == [1]


def test_stats_and_repr():
    stream = mc.merge([t([1, 2]), t([2, 3])], key="k")
    stream.read_all()
    assert stream.stats == {"runs": 2, "rows_in": 4, "rows_out": 3, "key_comparisons": stream.stats["key_comparisons"]}
    assert stream.stats["key_comparisons"] > 0
    assert "rows_out=3" in repr(stream)


@pytest.mark.parametrize(
    "runs, kwargs, message",
    [
        ([t([1, 2]), t([3, 1])], {}, "run 1, row 1: run is not sorted by key 'k'"),
        ([t([1, 1])], {}, "run 0, row 1: duplicate key 'k'"),
        ([pa.table({"k": pa.array([1, None], pa.int64())})], {}, "run 0, row 1: null in key column 'k'"),
        ([t([1])], {"key": "nope"}, "unknown key column 'nope'"),
        ([t([1]), pa.table({"k": pa.array(["x"])})], {}, "schema mismatch"),
        ([t([1]), pa.table({"q": pa.array([1])})], {}, "schema mismatch"),
        ([t([1])], {"merge": "bogus"}, "unknown merge function 'bogus'"),
        ([t([1])], {"algorithm": "quick"}, "unknown algorithm 'quick'"),
        ([t([1])], {"batch_size": 0}, "batch_size"),
        ([t([1])], {"sequence": "k"}, "both a key and a sequence"),
        ([pa.table({"k": [1], "op": ["+X"]})], {"row_kind": "op"}, r"run 0, row 0: unknown row kind '\+X'"),
        ([t([1])], {"sequence": "v", "sequence_order": "up"}, "sequence_order must be 'ascending' or 'descending'"),
    ],
)
def test_bad_input_raises_a_clear_value_error(runs, kwargs, message):
    kwargs = {"key": "k", **kwargs}
    with pytest.raises(mc.InvalidInputError, match=message) as info:
        mc.merge(runs, **kwargs).read_all()
    assert isinstance(info.value, ValueError) and isinstance(info.value, mc.MergeCoreError)


def test_not_a_run():
    with pytest.raises(mc.InvalidInputError, match="cannot read a run from int"):
        mc.merge([5], key="k")
    with pytest.raises(mc.InvalidInputError, match="wrap it in a list"):
        mc.merge(t([1]), key="k")


def test_an_error_inside_a_python_source_surfaces_as_itself():
    def batches():
        yield t([1, 2]).to_batches()[0]
        raise RuntimeError("source broke")

    with pytest.raises(RuntimeError, match="source broke"):
        mc.merge([batches(), t([3])], key="k", batch_size=1).read_all()


def test_iteration_stops_after_an_error():
    stream = mc.merge([t([2, 1])], key="k")
    with pytest.raises(mc.InvalidInputError):
        next(stream)
    with pytest.raises(StopIteration):
        next(stream)


def test_every_native_export_is_public():
    from merge_core import _native

    public = {name for name in dir(_native) if not name.startswith("_")}
    # used by mc.merge and the tables
    wrapped = {
        "merge",
        "lookup_cache",
        "bucket_ids",
        "read_paimon",
        "PlannedFile",
        "paimon_bucket_ids",
        "paimon_row_hashes",
        "retract_refusal",
    }
    assert public - wrapped <= set(mc.__all__)


def _changing_type_run(second):
    yield pa.record_batch({"k": pa.array([1, 2], pa.int64())})
    yield pa.record_batch({"k": second})


@pytest.mark.parametrize("second", [pa.array([3.0, 4.0]), pa.array([3, 4], pa.int32()), pa.array(["3", "4"])])
def test_an_iterable_run_whose_batches_change_type_is_refused(second):
    """Every batch of an iterable crosses with its own schema and is checked (it was
    reinterpreted as the first batch's type: garbage, or a read past the buffer)."""
    with pytest.raises(mc.InvalidInputError, match="run 0, batch 1"):
        mc.merge([_changing_type_run(second)], key="k").read_all()
    with pytest.raises(mc.InvalidInputError, match="batch 1"):
        mc.sort(_changing_type_run(second), key="k").read_all()
    buffer = mc.SortBuffer(pa.schema([("k", pa.int64())]), key="k")
    with pytest.raises(mc.InvalidInputError, match="differs"):
        buffer.write(_changing_type_run(second))
    buffer.close()


def test_an_iterable_yielding_something_else_is_refused():
    def run():
        yield pa.record_batch({"k": pa.array([1], pa.int64())})
        yield {"k": [2]}

    with pytest.raises(mc.InvalidInputError, match="batch 1 of an iterable run is a dict"):
        mc.merge([run()], key="k").read_all()


class _Mine(Exception):
    pass


def test_an_exception_of_the_callers_iterable_comes_back_as_itself():
    def run():
        yield pa.record_batch({"k": pa.array([1], pa.int64())})
        raise _Mine("source went away")

    with pytest.raises(_Mine, match="source went away"):
        mc.merge([run()], key="k").read_all()
    with pytest.raises(_Mine, match="source went away"):
        mc.sort(run(), key="k").read_all()
    with pytest.raises(KeyboardInterrupt):

        def interrupted():
            yield pa.record_batch({"k": pa.array([1], pa.int64())})
            raise KeyboardInterrupt

        list(mc.merge([interrupted()], key="k"))


@pytest.mark.parametrize("limit", [1.5, "1.5", "0.5B", True])
def test_a_byte_count_must_be_whole(limit):
    with pytest.raises(mc.InvalidInputError, match="byte count"):
        mc.sort(t([1]), key="k", memory_limit=limit)


def test_output_over_2_gib_of_strings_is_split_into_batches():
    """25 keys of 100 MB strings (2.5 GB) at the default batch size: a string column holds
    at most 2 GiB (32-bit offsets), so the output comes in more than one batch."""
    big = "x" * 100_000_000
    run = pa.table({"k": pa.array(range(25), pa.int64()), "s": pa.array([big] * 25)})
    stream = mc.merge([run], key="k")
    sizes = [batch.num_rows for batch in stream]
    assert sum(sizes) == 25 and len(sizes) >= 2
    del run, stream


def write_runs(folder, runs, row_group_size=None):
    import pyarrow.parquet as pq

    paths = []
    for i, run in enumerate(runs):
        paths.append(folder / f"run-{i}.parquet")
        pq.write_table(run, paths[-1], row_group_size=row_group_size)
    return paths


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    keys=st.lists(st.lists(st.integers(0, 60), max_size=80).map(sorted), min_size=1, max_size=12),
    merge=st.sampled_from(["none", "deduplicate"]),
    threads=st.sampled_from([1, 2, 3, 8]),
    batch_size=st.sampled_from([1, 7, 8192]),
)
def test_parquet_files_given_by_path_merge_as_their_tables(tmp_path_factory, keys, merge, threads, batch_size):
    """Runs given as paths are decoded in Rust, ahead of the merge on worker threads: the
    same rows, in the same order, as the runs given as tables (empty files included)."""
    if merge == "deduplicate":
        keys = [sorted(set(k)) for k in keys]
    schema = pa.schema([("k", pa.int64()), ("v", pa.string())])
    runs = [pa.table({"k": k, "v": [f"{i}:{x}" for x in k]}, schema) for i, k in enumerate(keys)]
    folder = tmp_path_factory.mktemp("runs")
    paths = write_runs(folder, runs, row_group_size=5)
    want = mc.merge(runs, key="k", merge=merge, batch_size=batch_size).read_all()
    for given_runs in ([str(p) for p in paths], paths, [paths[0], *runs[1:]]):
        got = mc.merge(given_runs, key="k", merge=merge, batch_size=batch_size, threads=threads).read_all()
        assert got.equals(want)


def test_hundreds_of_files_by_path(tmp_path):
    runs = [t(list(range(i, 3000, 300))) for i in range(300)]
    paths = write_runs(tmp_path, runs)
    got = mc.merge(paths, key="k", threads=2).read_all()
    assert got.column("k").to_pylist() == list(range(3000))


def test_bad_paths_are_clear_errors(tmp_path):
    with pytest.raises(mc.InvalidInputError, match="no such file"):
        mc.merge([tmp_path / "missing.parquet"], key="k")
    with pytest.raises(mc.InvalidInputError, match="single path"):
        mc.merge(str(tmp_path / "a.parquet"), key="k")
    (tmp_path / "junk.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(mc.InvalidInputError, match="junk.parquet"):
        mc.merge([tmp_path / "junk.parquet"], key="k").read_all()
    [path] = write_runs(tmp_path, [t([3, 1])])
    with pytest.raises(mc.InvalidInputError, match="not sorted"):
        mc.merge([path], key="k").read_all()
    data = path.read_bytes()
    path.write_bytes(data[:4] + bytes(len(data) - 12) + data[-8:])  # pages zeroed, footer kept
    with pytest.raises(mc.MergeCoreError):
        mc.merge([path], key="k").read_all()
