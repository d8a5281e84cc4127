"""mc.sort and mc.SortBuffer: order equal to a reference sort, folding equal to mc.merge,
spilling and multi-pass merges, memory and disk limits, and no files left behind."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import merge_core as mc
import oracle
import pyarrow as pa
import pytest
from helpers import table_of
from hypothesis import given
from hypothesis import strategies as st

SMALL = 16 * 1024  # bytes: a few hundred rows of the test tables, so sorts spill


def sorted_reference(table: pa.Table, key: list[str], order=None) -> list[dict]:
    """Rows stably sorted by key (the contract's order), in plain Python."""
    order = order or (lambda v: v)
    rows = table.to_pylist()
    return sorted(rows, key=lambda r: tuple(order(r[k]) for k in key))


KEYS = {
    "int64": (st.integers(-(2**63), 2**63 - 1), pa.int64(), None),
    "uint8": (st.integers(0, 255), pa.uint8(), None),
    "float64": (st.floats(), pa.float64(), oracle.java_order),
    "utf8": (st.text(max_size=8), pa.string(), None),
    "large_binary": (st.binary(max_size=8), pa.large_binary(), None),
    "fixed_size_binary": (st.binary(min_size=2, max_size=2), pa.binary(2), None),
}


@pytest.mark.parametrize("name", sorted(KEYS))
@given(data=st.data())
def test_sort_equals_reference_with_and_without_spilling(name, data):
    values_strategy, arrow_type, order = KEYS[name]
    values = data.draw(st.lists(values_strategy, max_size=600))
    table = pa.table({"k": pa.array(values, arrow_type), "i": pa.array(range(len(values)), pa.int64())})
    want = sorted_reference(table, ["k"], order)
    fan_in = data.draw(st.sampled_from([2, 3, 128]))
    for limit in ("64MiB", SMALL):
        stream = mc.sort(table, key="k", memory_limit=limit, max_fan_in=fan_in, batch_size=97)
        got = stream.read_all().to_pylist()
        # Same rows in key order, equal keys in arrival order (compare by the unique id).
        assert [r["i"] for r in got] == [r["i"] for r in want]
        assert stream.stats["rows_out"] == len(values)


@given(rows=st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(-3, 3), st.integers(0, 9)), max_size=500))
def test_composite_key_sort(rows):
    table = pa.table(
        {
            "s": [r[0] for r in rows],
            "n": pa.array([r[1] for r in rows], pa.int16()),
            "d": pa.array([r[2] for r in rows], pa.int32()).cast(pa.date32()),
            "i": pa.array(range(len(rows)), pa.int64()),
        }
    )
    want = [r["i"] for r in sorted_reference(table, ["s", "n", "d"])]
    for limit, fan_in in (("64MiB", 128), (SMALL, 2)):
        got = mc.sort(table, key=["s", "n", "d"], memory_limit=limit, max_fan_in=fan_in).read_all()
        assert got.column("i").to_pylist() == want


def test_sort_matches_pyarrow_on_larger_data():
    import numpy as np

    rng = np.random.default_rng(7)
    n = 300_000
    table = pa.table({"k": rng.integers(0, 50_000, n), "s": pa.array(rng.integers(0, 10**6, n).astype(str))})
    stream = mc.sort(table, key=["k", "s"], memory_limit="1MiB", max_fan_in=4)
    got = stream.read_all()
    assert got.equals(table.sort_by([("k", "ascending"), ("s", "ascending")]))
    stats = stream.stats
    assert stats["spilled_runs"] > 4 and stats["merge_passes"] >= 1
    assert stats["peak_memory_bytes"] <= 1 << 20


VERSIONS = st.lists(
    st.lists(
        st.fixed_dictionaries(
            {
                "k": st.integers(0, 30),
                "seq": st.integers(0, 3),
                "op": st.sampled_from(oracle.KINDS),
                "n": st.none() | st.integers(-5, 5),
                "s": st.none() | st.sampled_from(["x", "y", "z"]),
            }
        ),
        max_size=40,
    ),
    min_size=1,
    max_size=6,
)
SCHEMA = pa.schema([("k", pa.int64()), ("seq", pa.int64()), ("op", pa.string()), ("n", pa.int64()), ("s", pa.string())])
FOLDS = [
    "deduplicate",
    mc.Deduplicate(drop_deletes=False),
    mc.Deduplicate(ignore_delete=True),
    mc.FirstRow(ignore_delete=True),
    mc.PartialUpdate(ignore_delete=True),
    mc.PartialUpdate(remove_record_on_delete=True),
    mc.Aggregate({"n": "sum", "s": "last_value"}),
    mc.Aggregate({"n": {"function": "max", "ignore_retract": True}}, remove_record_on_delete=True),
    "none",
]


@given(
    versions=VERSIONS,
    merge=st.sampled_from(FOLDS),
    with_sequence=st.booleans(),
    with_kinds=st.booleans(),
    fan_in=st.sampled_from([2, 3, 128]),
)
def test_folding_sort_equals_merge_of_the_same_versions(versions, merge, with_sequence, with_kinds, fan_in):
    """Arrival order is the version order: sorting the versions written one after the other
    folds exactly like merging them as runs."""
    runs = [table_of(sorted({r["k"]: r for r in rows}.values(), key=lambda r: r["k"]), SCHEMA) for rows in versions]
    kwargs = {"sequence": "seq" if with_sequence else None, "row_kind": "op" if with_kinds else None, "merge": merge}
    try:
        want = mc.merge(runs, key="k", **kwargs).read_all()
    except mc.InvalidInputError:
        want = None
    for limit in ("64MiB", 600):
        try:
            buffer = mc.SortBuffer(SCHEMA, key="k", memory_limit=limit, max_fan_in=fan_in, batch_size=5, **kwargs)
            for run in runs:
                for batch in run.to_batches(max_chunksize=7):
                    buffer.write(batch)
            got = buffer.finish().read_all()
        except mc.InvalidInputError:
            assert want is None
            continue
        assert want is not None
        assert got.to_pylist() == want.to_pylist(), (merge, limit)


def test_stats_and_live_figures_of_a_sort_buffer():
    schema = pa.schema([("k", pa.int64()), ("pad", pa.string())])
    buffer = mc.SortBuffer(schema, key="k", memory_limit="256KiB", max_fan_in=3)
    for i in range(40):
        buffer.write(
            pa.table({"k": pa.array(range(i, 40_000, 40), pa.int64()), "pad": ["x" * 20] * 1000}, schema=schema)
        )
    assert buffer.rows_written == 40_000
    assert buffer.spilled_runs >= 3 and buffer.spilled_bytes > 0
    assert 0 < buffer.peak_memory_bytes <= 256 * 1024
    path = buffer.spill_path
    assert path is not None and os.path.isdir(path)
    assert oct(os.stat(path).st_mode & 0o777) == "0o700"
    stream = buffer.finish()
    assert stream.read_all().column("k").to_pylist() == list(range(40_000))
    assert stream.stats["merge_passes"] >= 1
    assert not os.path.exists(path)


def spill_dirs(parent) -> list[str]:
    return [d for d in os.listdir(parent) if d.startswith("merge-core-spill-")]


def many_batches(rows=20_000, per_batch=1000, width=30):
    for start in range(0, rows, per_batch):
        ks = [(start + i) * 7919 % rows for i in range(per_batch)]
        yield pa.record_batch({"k": pa.array(ks, pa.int64()), "pad": ["y" * width] * per_batch})


def test_no_files_left_after_success_error_drop(tmp_path):
    # Success.
    mc.sort(many_batches(), key="k", memory_limit="128KiB", spill_dir=tmp_path).read_all()
    assert spill_dirs(tmp_path) == []
    # A stream dropped half read.
    stream = mc.sort(many_batches(), key="k", memory_limit="128KiB", spill_dir=tmp_path, batch_size=10)
    next(iter(stream))
    assert len(spill_dirs(tmp_path)) == 1
    del stream
    gc.collect()
    assert spill_dirs(tmp_path) == []
    # A buffer dropped before finishing.
    schema = pa.schema([("k", pa.int64()), ("pad", pa.string())])
    buffer = mc.SortBuffer(schema, key="k", memory_limit="128KiB", spill_dir=tmp_path)
    for batch in many_batches():
        buffer.write(batch)
    assert len(spill_dirs(tmp_path)) == 1
    del buffer
    gc.collect()
    assert spill_dirs(tmp_path) == []


def test_disk_cap_raises_and_leaves_nothing(tmp_path):
    schema = pa.schema([("k", pa.int64()), ("pad", pa.string())])
    buffer = mc.SortBuffer(
        schema, key="k", memory_limit="128KiB", spill_dir=tmp_path, max_disk_size="200KiB", spill_compression="none"
    )
    with pytest.raises(mc.SpillError, match="max_disk_size") as info:
        for batch in many_batches(rows=50_000):
            buffer.write(batch)
    assert isinstance(info.value, OSError)
    # Nothing on disk even though the buffer object is still alive.
    assert spill_dirs(tmp_path) == []
    with pytest.raises(mc.InvalidInputError, match="failed earlier"):
        buffer.write(next(many_batches()))
    del buffer
    assert spill_dirs(tmp_path) == []


def test_unwritable_spill_dir(tmp_path):
    missing = tmp_path / "nope" / "deeper"
    with pytest.raises(mc.SpillError, match="cannot create spill directory"):
        mc.sort(many_batches(), key="k", memory_limit="128KiB", spill_dir=missing).read_all()


def test_a_single_oversized_row_names_the_limit():
    table = pa.table({"k": [1, 2], "blob": ["x" * 100, "y" * 5000]})
    with pytest.raises(mc.InvalidInputError, match="input row 1: a single row .* raise memory_limit"):
        mc.sort(table, key="k", memory_limit=3000).read_all()


def test_a_batch_larger_than_the_budget_is_sliced():
    table = pa.table({"k": pa.array(range(100_000, 0, -1), pa.int64())})
    stream = mc.sort(table, key="k", memory_limit="64KiB")
    assert stream.read_all().column("k").to_pylist() == list(range(1, 100_001))
    assert stream.stats["spilled_runs"] > 10


@pytest.mark.parametrize("compression", ["lz4", "zstd", "none"])
def test_compressions(compression):
    stream = mc.sort(many_batches(), key="k", memory_limit="128KiB", spill_compression=compression)
    assert stream.read_all().column("k").to_pylist() == sorted(
        b for x in many_batches() for b in x.column(0).to_pylist()
    )


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"memory_limit": "lots"}, "memory_limit must be a byte count"),
        ({"memory_limit": 0}, "memory_limit must be positive"),
        ({"max_fan_in": 1}, "max_fan_in"),
        ({"spill_compression": "gzip"}, "unknown spill_compression 'gzip'"),
        ({"key": "missing"}, "unknown key column 'missing'"),
    ],
)
def test_bad_options(bad, message):
    with pytest.raises(mc.InvalidInputError, match=message):
        mc.sort(pa.table({"k": [1]}), **{"key": "k", **bad}).read_all()


def test_null_key_and_schema_mismatch_are_input_errors():
    with pytest.raises(mc.InvalidInputError, match="input row 1: null in key column 'k'"):
        mc.sort(pa.table({"k": pa.array([1, None], pa.int64())}), key="k").read_all()
    buffer = mc.SortBuffer(pa.schema([("k", pa.int64())]), key="k")
    with pytest.raises(mc.InvalidInputError, match="differs"):
        buffer.write(pa.table({"k": ["a"]}))


def run_python(code: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300, **kwargs
    )


def test_killed_process_leaves_a_directory_the_next_sort_sweeps(tmp_path):
    code = f"""
        import os, signal, pyarrow as pa, merge_core as mc
        schema = pa.schema([("k", pa.int64()), ("pad", pa.string())])
        buf = mc.SortBuffer(schema, key="k", memory_limit="64KiB", spill_dir={str(tmp_path)!r})
        for i in range(200):
            buf.write(pa.table({{"k": list(range(i, 20000, 200)), "pad": ["z" * 20] * 100}}, schema=schema))
        os.kill(os.getpid(), signal.SIGKILL)
    """
    run_python(code)
    assert len(spill_dirs(tmp_path)) == 1  # no destructor ran
    mc.sort(many_batches(), key="k", memory_limit="128KiB", spill_dir=tmp_path).read_all()
    assert spill_dirs(tmp_path) == []


def test_keyboard_interrupt_cleans_up(tmp_path):
    # The source is a table, read in C++: the interrupt reaches merge-core's own check
    # between batches. (From a Python generator, pyarrow's reader may swallow it.)
    code = f"""
        import os, signal, threading, numpy as np, pyarrow as pa, merge_core as mc
        n = 4_000_000
        table = pa.table({{"k": np.random.default_rng(1).integers(0, 10**9, n), "p": np.arange(n)}})
        threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
        try:
            for _ in range(100):
                mc.sort(table.to_reader(max_chunksize=4096), key="k", memory_limit="1MiB",
                        spill_dir={str(tmp_path)!r}).read_all()
            print("never interrupted")
        except KeyboardInterrupt:
            print("interrupted")
        print("left", os.listdir({str(tmp_path)!r}))
    """
    result = run_python(code)
    assert "interrupted" in result.stdout and "never" not in result.stdout, result.stdout + result.stderr
    assert "left []" in result.stdout, result.stdout + result.stderr


@pytest.mark.parametrize(
    "merge, want",
    [
        ("deduplicate", [0, 1, 2, 4]),  # the later -D deletes key 3 written (and spilled) earlier
        (mc.Deduplicate(drop_deletes=False), [0, 1, 2, 3, 4]),
        (mc.Aggregate({"n": "sum"}), [0, 1, 2, 3, 4]),  # a lone -U only subtracts
    ],
)
def test_retracts_reach_rows_spilled_earlier(merge, want):
    schema = pa.schema([("k", pa.int64()), ("n", pa.int64()), ("op", pa.string())])
    buf = mc.SortBuffer(schema, key="k", row_kind="op", merge=merge, memory_limit=300)
    buf.write(pa.table({"k": list(range(5)), "n": [10] * 5, "op": ["+I"] * 5}, schema=schema))
    retract = "-U" if isinstance(merge, mc.Aggregate) else "-D"
    buf.write(pa.table({"k": [3], "n": [4], "op": [retract]}, schema=schema))
    assert buf.spilled_runs >= 1
    out = buf.finish().read_all()
    assert out.column("k").to_pylist() == want
    if isinstance(merge, mc.Aggregate):
        assert out.column("n").to_pylist() == [10, 10, 10, 6, 10]


@pytest.mark.parametrize("damage", ["flip", "truncate", "cut_in_half"])
@pytest.mark.parametrize("compression", ["lz4", "none"])
def test_a_damaged_spill_file_never_yields_a_wrong_row(tmp_path, damage, compression):
    """Every spill file damaged mid-sort (a flipped bit in each region, a truncation, a cut
    between batches): the stream fails with a SpillError naming the file, and every row it
    gave before is the right one."""
    import random

    n = 60_000
    schema = pa.schema([("k", pa.int64()), ("v", pa.string())])
    data = pa.table({"k": pa.array(range(n, 0, -1), pa.int64()), "v": [f"value-{i}" for i in range(n)]}, schema)
    want = data.sort_by("k")
    rng = random.Random(damage + compression)
    for trial in range(6):
        buffer = mc.SortBuffer(
            schema, key="k", memory_limit="256KiB", spill_dir=tmp_path, spill_compression=compression, batch_size=1000
        )
        buffer.write(data)
        # The files of finished spills (a spill may still be writing the newest one).
        files = sorted(Path(buffer.spill_path).glob("*.arrow"))[: buffer.spilled_runs]
        assert len(files) >= 2
        for f in files:
            raw = bytearray(f.read_bytes())
            if damage == "flip":
                at = rng.randrange(len(raw) * trial // 6, len(raw) * (trial + 1) // 6)
                raw[at] ^= 1 << rng.randrange(8)
            elif damage == "truncate":
                raw = raw[: rng.randrange(1, len(raw))]
            else:
                raw = raw[: len(raw) // 2]
            f.write_bytes(bytes(raw))
        got = []
        with pytest.raises(mc.SpillError, match="spill file .*arrow"):
            for batch in buffer.finish():
                got.extend(batch.column("k").to_pylist())
        # What came out is the start of the right answer, never a damaged row.
        assert got == want.column("k").to_pylist()[: len(got)]
    assert not list(tmp_path.iterdir()), "no spill directory is left behind"


def test_a_sweep_spares_a_spill_directory_in_use_by_another_process(tmp_path):
    """Liveness is the directory's lock, not a PID (a PID of another namespace may look
    dead, or be reused): a directory whose lock is held survives every sweep."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import time, pyarrow as pa, merge_core as mc
                buffer = mc.SortBuffer(pa.schema([("k", pa.int64())]), key="k", memory_limit="64KiB",
                                       spill_dir={str(tmp_path)!r})
                buffer.write(pa.table({{"k": list(range(100_000, 0, -1))}}))
                print(buffer.spill_path, flush=True)
                time.sleep(60)
                """
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        held = Path(holder.stdout.readline().strip())
        assert held.is_dir()
        (held / "lock").touch()  # its pid would not tell: only the lock does
        mc.sort(pa.table({"k": [2, 1]}), key="k", spill_dir=tmp_path).read_all()  # a sort starting sweeps
        assert held.is_dir(), "a directory in use was swept"
    finally:
        holder.kill()
        holder.communicate()
    mc.sort(pa.table({"k": [2, 1]}), key="k", spill_dir=tmp_path).read_all()
    assert not held.exists(), "the dead process's directory is swept by the next sort"


def test_sort_of_a_parquet_path_equals_the_sort_of_its_table(tmp_path):
    """A local Parquet file given by its path (str or Path) is decoded in Rust; spilling
    or not, the output equals the sort of the same rows given as a table, and the merge
    function folds it the same way."""
    import pyarrow.parquet as pq

    n = 50_000
    keys = [(i * 7919) % 9973 for i in range(n)]  # repeated keys, in no order
    table = pa.table({"k": pa.array(keys, pa.int64()), "v": [f"v{i}" for i in range(n)], "i": list(range(n))})
    path = tmp_path / "input.parquet"
    pq.write_table(table, path, row_group_size=7000)
    for source in (str(path), path):
        for limit in ("256KiB", "64MiB"):
            for merge in (None, "deduplicate"):
                options = dict(key="k", memory_limit=limit, spill_dir=tmp_path, merge=merge, batch_size=4096)
                got = mc.sort(source, **options).read_all()
                want = mc.sort(table, **options).read_all()
                assert got.equals(want), (source, limit, merge)
    assert got.column("k").to_pylist() == sorted(set(keys))
    assert [p.name for p in tmp_path.iterdir()] == ["input.parquet"], "no spill directory is left behind"


def test_sort_of_a_bad_path_names_it(tmp_path):
    (tmp_path / "not.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(mc.InvalidInputError, match="no such file: .*missing.parquet"):
        mc.sort(str(tmp_path / "missing.parquet"), key="k")
    with pytest.raises(mc.InvalidInputError, match="not.parquet: not a readable Parquet file"):
        mc.sort(tmp_path / "not.parquet", key="k")
