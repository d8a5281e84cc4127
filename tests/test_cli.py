"""The merge-core command line, run as a user would: the real entry point in a subprocess."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

CLI = shutil.which("merge-core", path=os.path.dirname(sys.executable)) or "merge-core"


def run(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=timeout)


def test_help_lists_commands_with_examples():
    result = run("--help")
    assert result.returncode == 0
    for command in ("merge", "sort", "gen", "upsert", "demo", "examples:"):
        assert command in result.stdout


def test_merge_and_sort_parquet_files(tmp_path):
    pq.write_table(pa.table({"id": [1, 3], "v": ["a", "c"]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"id": [2, 3], "v": ["b", "C"]}), tmp_path / "b.parquet")
    result = run(
        "merge", str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet"), "-k", "id", "-o", str(tmp_path / "m.parquet")
    )
    assert result.returncode == 0, result.stderr
    assert "3 rows out" in result.stdout
    assert pq.read_table(tmp_path / "m.parquet").to_pydict() == {"id": [1, 2, 3], "v": ["a", "b", "C"]}

    pq.write_table(pa.table({"id": list(range(5000, 0, -1))}), tmp_path / "u.parquet")
    result = run(
        "sort", str(tmp_path / "u.parquet"), "-k", "id", "--memory", "16KiB", "-o", str(tmp_path / "s.parquet")
    )
    assert result.returncode == 0, result.stderr
    assert "spilled" in result.stdout
    assert pq.read_table(tmp_path / "s.parquet").column("id").to_pylist() == list(range(1, 5001))


@pytest.mark.parametrize(
    "args, message",
    [
        (["merge", "missing.parquet", "-k", "id", "-o", "x.parquet"], "no such file: missing.parquet"),
        (["sort", "{good}", "-k", "nope", "-o", "x.parquet"], "unknown key column 'nope'"),
        (["merge", "{good}", "{other}", "-k", "id", "-o", "x.parquet"], "schema mismatch"),
        (["sort", "{good}", "-k", "id", "--memory", "lots", "-o", "x.parquet"], "memory_limit must be a byte count"),
    ],
)
def test_user_errors_give_one_clear_message(tmp_path, args, message):
    pq.write_table(pa.table({"id": [1]}), tmp_path / "good.parquet")
    pq.write_table(pa.table({"id": ["x"]}), tmp_path / "other.parquet")
    args = [a.format(good=tmp_path / "good.parquet", other=tmp_path / "other.parquet") for a in args]
    result = subprocess.run([CLI, *args], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_gen_and_upsert_on_spark(tmp_path):
    pytest.importorskip("pyspark")
    result = run("gen", str(tmp_path / "data"), "--rows", "2000", "--increments", "3", "--seed", "1")
    assert result.returncode == 0, result.stderr
    files = sorted(str(p) for p in (tmp_path / "data").glob("*.parquet"))
    assert len(files) == 4
    result = run(
        "upsert", *files, "-o", str(tmp_path / "out"), "--key", "uuid", "--preset", "contest", "--master", "local[2]"
    )
    assert result.returncode == 0, result.stderr
    out = pq.read_table(tmp_path / "out")
    keys = set().union(*(set(pq.read_table(f).column("uuid").to_pylist()) for f in files))
    assert out.num_rows == len(keys) == len(set(out.column("uuid").to_pylist()))


def test_table_commands_end_to_end(tmp_path):
    """gen -> table create/write (one commit per file) -> read equals the contest upsert in
    DuckDB; compact, info, expire; user errors exit 2 with one line."""
    from test_contest_semantics import duckdb_upsert

    data, lake = tmp_path / "data", str(tmp_path / "lake")
    assert run("gen", str(data), "--rows", "3000", "--increments", "3", "--seed", "4").returncode == 0
    files = [str(data / f"{i}.parquet") for i in range(4)]
    result = run("table", "create", lake, "--like", files[0], "-k", "uuid", "--buckets", "4", "--preset", "contest")
    assert result.returncode == 0, result.stderr
    result = run("table", "write", lake, *files, "--null-string", "name")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("snapshot ") == 4
    out = str(tmp_path / "out.parquet")
    assert run("table", "read", lake, "-o", out).returncode == 0
    expected = duckdb_upsert([pq.read_table(f) for f in files])
    assert pq.read_table(out).sort_by("uuid").to_pylist() == expected

    assert "16 files -> 4" in run("table", "compact", lake, "--full").stdout
    info = run("table", "info", lake)
    assert '"max_runs_per_bucket": 1' in info.stdout, info.stdout
    assert "removed 4 snapshots, 16 data files and" in run("table", "expire", lake).stdout
    assert run("table", "read", lake, "-o", out).returncode == 0
    assert pq.read_table(out).sort_by("uuid").to_pylist() == expected

    for args, message in [
        (("table", "read", str(tmp_path / "none"), "-o", out), "no Paimon table"),
        (("table", "create", lake, "--like", files[0], "-k", "uuid"), "already exists"),
        (("table", "read", lake, "-o", out, "--columns", "nope"), "no columns"),
        (("table", "read", lake, "-o", out, "--partition", "x"), "COL=VALUE"),
        (("table", "write", lake, str(tmp_path / "missing.parquet")), "no such file"),
    ]:
        result = run(*args)
        assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr, result.stderr


def test_outputs_are_written_whole_or_not_at_all(tmp_path):
    """A failed merge leaves an existing output as it was and no temporary file; an output
    that is also an input is refused before anything is read."""
    good = tmp_path / "good.parquet"
    pq.write_table(pa.table({"id": [1, 2]}), good)
    unsorted = tmp_path / "unsorted.parquet"
    pq.write_table(pa.table({"id": [3, 1]}), unsorted)
    out = tmp_path / "out.parquet"
    pq.write_table(pa.table({"id": [42]}), out)
    failed = run("merge", str(good), str(unsorted), "-k", "id", "-o", str(out))
    assert failed.returncode != 0 and "not sorted" in failed.stderr
    assert pq.read_table(out).column("id").to_pylist() == [42]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.parquet", "out.parquet", "unsorted.parquet"]
    same = run("sort", str(good), "-k", "id", "-o", str(good))
    assert same.returncode == 2 and "also an input" in same.stderr
    assert pq.read_table(good).column("id").to_pylist() == [1, 2]
