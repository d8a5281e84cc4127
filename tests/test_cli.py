"""The merge-core command line, run as a user would: the real entry point in a subprocess."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

CLI = shutil.which("merge-core", path=os.path.dirname(sys.executable)) or "merge-core"

COMMANDS = [
    ["merge"],
    ["sort"],
    ["gen"],
    ["upsert"],
    ["demo"],
    ["bench"],
    ["table"],
    *(
        ["table", action]
        for action in (
            "create",
            "alter",
            "write",
            "read",
            "compact",
            "info",
            "expire",
            "tag",
            "rollback",
            "drop-partition",
            "truncate",
        )
    ),
]


def run(*args: str, timeout: int = 600, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=timeout, **kwargs)


def test_help_lists_commands_with_examples():
    result = run("--help")
    assert result.returncode == 0
    for command in ("merge", "sort", "gen", "upsert", "demo", "examples:"):
        assert command in result.stdout


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_has_its_own_help(command):
    """Each command's --help ends with its own examples: every one runs that command, and
    none is the global list's."""
    result = run(*command, "--help")
    assert result.returncode == 0, result.stderr
    examples = result.stdout.split("examples:\n", 1)[1].splitlines()
    runs = [line.strip() for line in examples if line.strip().startswith("merge-core ")]
    assert runs, result.stdout
    assert all(line.startswith("merge-core " + " ".join(command)) for line in runs), runs


def test_every_argument_has_help_and_shows_its_default():
    """Every argument of every command has help, and every default worth showing (not
    None, False or empty) is in it."""
    import argparse

    from merge_core.cli.app import build_parser

    def parsers(parser):
        yield parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    yield from parsers(sub)

    skipped = (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)
    checked = 0
    for parser in parsers(build_parser()):
        formatter = parser._get_formatter()
        for action in parser._actions:
            if isinstance(action, skipped):
                continue
            name = f"{parser.prog} {'/'.join(action.option_strings) or action.dest}"
            assert action.help, f"{name} has no help"
            text = formatter._expand_help(action)
            if action.default not in (None, []) and not isinstance(action.default, bool):
                assert f"default: {action.default}" in text, f"{name}: its default is not shown ({text})"
            checked += 1
    assert checked > 50


def test_merge_and_sort_parquet_files(tmp_path):
    pq.write_table(pa.table({"id": [1, 3], "v": ["a", "c"]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"id": [2, 3], "v": ["b", "C"]}), tmp_path / "b.parquet")
    result = run(
        "merge", str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet"), "-k", "id", "-o", str(tmp_path / "m.parquet")
    )
    assert result.returncode == 0, result.stderr
    assert "3 rows out" in result.stdout
    assert result.stderr == ""  # no progress when stderr is not a terminal
    assert pq.read_table(tmp_path / "m.parquet").to_pydict() == {"id": [1, 2, 3], "v": ["a", "b", "C"]}

    n = 300_000
    ids = np.random.default_rng(0).permutation(n)
    pq.write_table(pa.table({"id": ids}), tmp_path / "u.parquet")
    result = run("sort", str(tmp_path / "u.parquet"), "-k", "id", "--memory", "1MiB", "-o", str(tmp_path / "s.parquet"))
    assert result.returncode == 0, result.stderr
    assert re.search(r"spilled [2-9]\d* runs", result.stdout), result.stdout
    assert pq.read_table(tmp_path / "s.parquet").column("id").to_pylist() == list(range(n))


def test_merge_aggregates_per_column(tmp_path):
    pq.write_table(
        pa.table({"id": [1, 2], "requests": [5, 1], "seen": [10, 20], "name": ["a", "b"]}), tmp_path / "a.parquet"
    )
    newer = pa.table({"id": [1], "requests": [7], "seen": [3], "name": pa.array([None], pa.string())})
    pq.write_table(newer, tmp_path / "b.parquet")
    out = str(tmp_path / "m.parquet")
    args = ["merge", str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet"), "-k", "id", "-o", out]
    result = run(*args, "--agg", "requests=sum", "--agg", "seen=max")
    assert result.returncode == 0, result.stderr
    assert pq.read_table(out).to_pydict() == {"id": [1, 2], "requests": [12, 1], "seen": [10, 20], "name": ["a", "b"]}
    result = run(*args, "--agg", "requests=sum", "--agg-default", "last_value")
    assert result.returncode == 0, result.stderr
    assert pq.read_table(out).to_pydict()["name"] == [None, "b"]


@pytest.fixture
def files(tmp_path):
    """Small inputs for the error cases: a sorted run, a run of another type, an unsorted
    run, a plain file where a directory belongs, a table."""
    pq.write_table(pa.table({"id": [1, 2]}), tmp_path / "good.parquet")
    pq.write_table(pa.table({"id": ["x"]}), tmp_path / "other.parquet")
    pq.write_table(pa.table({"id": [1, 5, 3]}), tmp_path / "unsorted.parquet")
    pq.write_table(pa.table({"id": [1, None]}), tmp_path / "nullkey.parquet")
    (tmp_path / "plain").write_text("not a directory")
    assert (
        run("table", "create", str(tmp_path / "lake"), "--like", str(tmp_path / "good.parquet"), "-k", "id").returncode
        == 0
    )
    return tmp_path


ERRORS = [
    # (arguments, the one line expected on stderr, exit status)
    (["merge", "missing.parquet", "-k", "id", "-o", "x.parquet"], "error: no such file: missing.parquet", 2),
    (["sort", "good.parquet", "-k", "nope", "-o", "x.parquet"], "error: --key nope: no such column in good.parquet", 2),
    (
        ["merge", "good.parquet", "other.parquet", "-k", "id", "-o", "x.parquet"],
        "schema mismatch: column 'id' is STRING in other.parquet but BIGINT in good.parquet",
        2,
    ),
    (
        ["merge", "good.parquet", "unsorted.parquet", "-k", "id", "-o", "x.parquet"],
        "error: unsorted.parquet, row 3: the file is not sorted by key 'id'",
        2,
    ),
    (["sort", "nullkey.parquet", "-k", "id", "-o", "x.parquet"], "nullkey.parquet: key column id has 1 null", 2),
    (["upsert", "good.parquet", "nullkey.parquet", "-o", "out", "-k", "id"], "nullkey.parquet: key column id has", 2),
    (["table", "write", "lake", "nullkey.parquet"], "error: nullkey.parquet: key column id has 1 null", 2),
    (["sort", "good.parquet", "-k", "id", "--memory", "lots", "-o", "x.parquet"], "error: --memory takes a size", 2),
    (["sort", "good.parquet", "-k", "id", "--memory", "1KiB", "-o", "x.parquet"], "--memory 1KiB is too small", 2),
    (["sort", "good.parquet", "-k", "id", "--spill-dir", "nodir", "-o", "x.parquet"], "--spill-dir nodir: no such", 2),
    (["sort", "good.parquet", "-k", "id", "--spill-dir", "plain", "-o", "x.parquet"], "--spill-dir plain is a file", 2),
    (["sort", "good.parquet", "-k", "id", "-o", "nodir/x.parquet"], "-o nodir/x.parquet: the directory nodir does", 2),
    (["sort", "good.parquet", "-k", "id", "-o", "plain/x.parquet"], "is a file, not a directory", 2),
    (["sort", "good.parquet", "-k", "id", "-o", "good.parquet"], "the output good.parquet is also an input", 2),
    (["sort", "good.parquet", "-o", "x.parquet"], "merge-core sort: error: the following arguments are required", 2),
    (["merge", "good.parquet", "-k", "id", "--agg", "zz=sum", "-o", "x.parquet"], "--agg zz: no such column", 2),
    (["merge", "good.parquet", "-k", "id", "--agg", "sum", "-o", "x.parquet"], "--agg takes COL=FUNC", 2),
    (["merge", "good.parquet", "-k", "id", "--agg", "id=sum", "--merge", "first-row", "-o", "x.parquet"], "--agg", 2),
    (["gen", "data", "--rows", "-5"], "error: --rows must be at least 1, got -5", 2),
    (["upsert", "good.parquet", "-o", "out", "--key", "uuid"], "error: --key uuid: no such column in good.parquet", 2),
    (["upsert", "good.parquet", "-o", "out", "-k", "id", "--memory", "1KiB"], "--memory 1KiB is too small", 2),
    (["upsert", "good.parquet", "-o", "plain", "-k", "id"], "-o plain is a file", 2),
    (["table", "info", "plain"], "error: TABLE plain is a file, not a table's directory", 2),
    (["table", "read", "plain", "-o", "x.parquet"], "error: TABLE plain is a file", 2),
    (["table", "write", "plain", "good.parquet"], "error: TABLE plain is a file", 2),
    (["table", "create", "plain", "--like", "good.parquet", "-k", "id"], "error: TABLE plain", 2),
    (["table", "create", "plain/t", "--like", "good.parquet", "-k", "id"], "is a file", 2),
    (["table", "info", "nope"], "no table at nope (create one with: merge-core table create nope --like", 2),
    (["table", "create", "t", "--like", "good.parquet", "-k", "id", "--partition-by", "day"], "--partition-by day:", 2),
    (
        ["table", "create", "t", "--like", "good.parquet", "-k", "id", "--buckets", "0"],
        "--buckets must be at least 1",
        2,
    ),
    (["table", "create", "lake", "--like", "good.parquet", "-k", "id"], "already exists", 2),
    (["table", "write", "lake", "good.parquet", "--memory", "64"], "--memory 64 is too small", 2),
    (
        ["table", "read", "lake", "-o", "x.parquet", "--snapshot", "9"],
        "--snapshot 9: the table has no such snapshot",
        2,
    ),
    (["table", "read", "lake", "-o", "x.parquet", "--columns", "nope"], "--columns nope: no such column", 2),
    (["table", "read", "lake", "-o", "x.parquet", "--partition", "x"], "--partition takes COL=VALUE", 2),
    (["table", "expire", "lake", "--keep", "0"], "--keep must be at least 1", 2),
]


@pytest.mark.parametrize(
    "args, message, status", ERRORS, ids=[" ".join(e[0][:3]) + f" {i}" for i, e in enumerate(ERRORS)]
)
def test_failures_are_one_line_with_their_exit_status(files, args, message, status):
    """Each mistake of a new user: one line on stderr in the command line's words (no
    Python argument names, no traceback), exit status 2; nothing started first (no Spark
    log) and nothing written."""
    before = sorted(p.name for p in files.iterdir())
    logs = files / "logs"
    env = {**os.environ, "MERGE_CORE_LOG_DIR": str(logs)}
    result = subprocess.run([CLI, *args], capture_output=True, text=True, cwd=files, timeout=120, env=env)
    assert result.returncode == status, result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("merge-core"), result.stderr
    assert message in result.stderr
    for python_speak in ("memory_limit", "partition_by", "Table.create", "Traceback", "run 0", "run 1"):
        assert python_speak not in result.stderr
    assert result.stdout == ""
    assert not logs.exists() or not list(logs.iterdir())  # Spark never started
    assert sorted(p.name for p in files.iterdir() if p.name != "logs") == before


def test_a_failure_of_merge_core_is_exit_status_1(files):
    """A damaged table (a data file gone) is not the user's mistake: one line, status 1."""
    table = str(files / "lake")
    assert run("table", "write", table, str(files / "good.parquet")).returncode == 0
    data = [p for p in (files / "lake").rglob("*.parquet")]
    assert data
    data[0].unlink()
    result = run("table", "read", table, "-o", str(files / "x.parquet"))
    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith("merge-core: failed: ") and result.stderr.count("\n") == 1, result.stderr
    assert data[0].name in result.stderr


def test_library_messages_in_the_command_lines_words():
    from merge_core.cli.common import cli_message, parse_memory

    assert cli_message("memory_limit must be a byte count") == "--memory must be a byte count"
    assert "merge-core table create" in cli_message("no table (create it with Table.create)")
    message = "run 1, row 0: run is not sorted by key 'k': this row's key is smaller"
    assert cli_message(message, ["a.parquet", "b.parquet"]).startswith("b.parquet, row 1: the file is not sorted")
    assert parse_memory("64MB") == 64_000_000
    assert parse_memory("64MiB") == 64 * 2**20
    assert parse_memory("1048576") == 2**20


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_draws_on_a_terminal_only():
    from merge_core.cli.common import Progress

    quiet = io.StringIO()
    with Progress(quiet) as progress:
        progress.phase("sorting", 10)
        progress.advance(10)
        progress.show()
    assert quiet.getvalue() == ""

    screen = Terminal()
    with Progress(screen) as progress:
        progress.phase("sorting: reading", 2_000_000)
        progress.advance(1_000_000)
        progress.show()
    drawn = screen.getvalue()
    assert "sorting: reading: 1,000,000 of 2,000,000 rows (50%)" in drawn
    assert drawn.endswith("\r\x1b[K")  # cleared at the end: only the summary stays


def test_sort_shows_both_phases_on_a_terminal(tmp_path):
    """Through a pseudo-terminal: the progress line covers reading and writing, then
    gives way to the summary on stdout."""
    n = 600_000
    pq.write_table(pa.table({"id": np.random.default_rng(1).permutation(n)}), tmp_path / "u.parquet")
    leader, follower = pty.openpty()
    args = [CLI, "sort", str(tmp_path / "u.parquet"), "-k", "id", "--memory", "1MiB", "-o", str(tmp_path / "s.parquet")]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=follower, text=True)
    os.close(follower)
    drawn = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        drawn += chunk
    stdout = process.communicate(timeout=120)[0]
    assert process.returncode == 0
    os.close(leader)
    text = drawn.decode()
    assert "sorting: reading: " in text or "sorting: writing: " in text, text
    assert text.endswith("\r\x1b[K")
    assert f"sort: {n:,} rows in, {n:,} rows out" in stdout


def test_gen_and_upsert_on_spark(tmp_path):
    pytest.importorskip("pyspark")
    result = run("gen", str(tmp_path / "one"), "--rows", "100", "--increments", "0")
    assert result.stdout.startswith("wrote 1 file, 100 rows,"), result.stdout
    result = run("gen", str(tmp_path / "data"), "--rows", "2000", "--increments", "3", "--seed", "1")
    assert result.returncode == 0, result.stderr
    files = sorted(str(p) for p in (tmp_path / "data").glob("*.parquet"))
    assert len(files) == 4
    env = {**os.environ, "MERGE_CORE_LOG_DIR": str(tmp_path / "logs")}
    result = run(
        "upsert", *files, "-o", str(tmp_path / "out"), "--key", "uuid", "--preset", "contest", "--master", "local[2]",
        env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # Spark's own output went to its log
    assert list((tmp_path / "logs").glob("spark-*.log"))
    assert re.match(
        r"upsert: 4 versions, 3,200 rows -> [\d,]+ rows in [\d.]+s \(\d+ buckets?, one Spark task", result.stdout
    )
    out = pq.read_table(tmp_path / "out")
    keys = set().union(*(set(pq.read_table(f).column("uuid").to_pylist()) for f in files))
    assert out.num_rows == len(keys) == len(set(out.column("uuid").to_pylist()))


def test_spark_functions_fail_fast_when_workers_cannot_import_merge_core(tmp_path):
    """The README's old example: a plain SparkSession whose workers run a Python without
    merge-core. The first merge-core call stops on the driver with one line."""
    pytest.importorskip("pyspark")
    other = getattr(sys, "_base_executable", None)
    if not other or subprocess.run([other, "-c", "import merge_core"], capture_output=True).returncode == 0:
        pytest.skip("no Python without merge-core at hand")
    script = textwrap.dedent(
        f"""
        import merge_core.spark as mcs
        from merge_core import contest
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
        paths = contest.generate({str(tmp_path / "data")!r}, rows=100, increments=1)
        try:
            mcs.upsert_files(spark, paths, {str(tmp_path / "out")!r}, key="uuid", **contest.CONTEST)
        except mcs.SparkWorkerError as e:
            print("RAISED", e)
        """
    )
    env = {**os.environ, "PYSPARK_PYTHON": other, "SPARK_LOCAL_IP": "127.0.0.1"}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    lines = result.stdout.splitlines()
    # The probe is a mapInArrow job: a Python without pyarrow fails before it imports merge_core.
    assert len(lines) == 1 and lines[0].startswith("RAISED Spark's Python workers"), result
    assert re.search(r"No module named '(merge_core|pyarrow)'", lines[0]) and "PYSPARK_PYTHON" in lines[0]
    assert not (tmp_path / "out").exists()


def test_table_commands_end_to_end(tmp_path):
    """gen -> table create/write (one commit per file) -> read equals the contest upsert in
    DuckDB; compact, info (for people and --json), expire."""
    from test_contest_semantics import duckdb_upsert

    data, lake = tmp_path / "data", str(tmp_path / "lake")
    assert run("gen", str(data), "--rows", "3000", "--increments", "3", "--seed", "4").returncode == 0
    files = [str(data / f"{i}.parquet") for i in range(4)]
    result = run("table", "create", lake, "--like", files[0], "-k", "uuid", "--buckets", "4", "--preset", "contest")
    assert result.returncode == 0, result.stderr
    result = run("table", "write", lake, *files, "--null-string", "name")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("snapshot ") == 4
    assert "-> 4 files in" in result.stdout
    out = str(tmp_path / "out.parquet")
    assert run("table", "read", lake, "-o", out).returncode == 0
    expected = duckdb_upsert([pq.read_table(f) for f in files])
    assert pq.read_table(out).sort_by("uuid").to_pylist() == expected

    info = run("table", "info", lake)
    assert info.returncode == 0, info.stderr
    stored = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    assert f"data:      {stored:,} stored rows in 16 files, " in info.stdout, info.stdout
    assert re.search(r"16 files, [\d.]+ (KiB|MiB), 1 partition\n", info.stdout), info.stdout
    assert "merge:     aggregate (requests sum; others last_non_null_value)" in info.stdout
    assert "runs:      at most 4 per bucket" in info.stdout

    compacted = run("table", "compact", lake, "--full")
    assert "full compaction: 16 files -> 4 in" in compacted.stdout, compacted
    assert json.loads(run("table", "info", lake, "--json").stdout)["max_runs_per_bucket"] == 1
    assert "removed 4 snapshots, 16 data files and" in run("table", "expire", lake, "--keep", "1").stdout
    assert run("table", "read", lake, "-o", out).returncode == 0
    assert pq.read_table(out).sort_by("uuid").to_pylist() == expected


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
    assert failed.returncode == 2 and "not sorted" in failed.stderr
    assert pq.read_table(out).column("id").to_pylist() == [42]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.parquet", "out.parquet", "unsorted.parquet"]
    same = run("sort", str(good), "-k", "id", "-o", str(good))
    assert same.returncode == 2 and "also an input" in same.stderr
    assert pq.read_table(good).column("id").to_pylist() == [1, 2]


def test_the_command_line_starts_without_importing_pandas():
    """pandas takes a quarter of a second to import; `merge-core --help` must not pay it
    (an Arrow array built at import time, in any module, imports it)."""
    code = "import sys, merge_core.cli.app; print('pandas' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_an_aggregation_table_without_functions_takes_paimons_default(tmp_path):
    """`--merge aggregate` alone: every column's function is Paimon's default,
    last_non_null_value; a column's function set with --option is honoured. (It failed with
    "unknown aggregate function 'None'".) Checked against a plain-Python fold."""
    versions = [
        {"id": [1, 2], "n": [1, 10], "s": ["a", "b"]},
        {"id": [1, 2], "n": [2, None], "s": [None, "B"]},
    ]
    files = []
    for i, version in enumerate(versions):
        files.append(str(tmp_path / f"{i}.parquet"))
        pq.write_table(pa.table(version), files[-1])
    for options, summed in [([], False), (["--option", "fields.n.aggregate-function=sum"], True)]:
        lake = str(tmp_path / f"lake-{summed}")
        created = run("table", "create", lake, "--like", files[0], "-k", "id", "--merge", "aggregate", *options)
        assert created.returncode == 0, created.stderr
        for f in files:
            assert run("table", "write", lake, f).returncode == 0
        want = {}
        for version in versions:
            for key, n, s in zip(version["id"], version["n"], version["s"], strict=True):
                old_n, old_s = want.get(key, (None, None))
                if summed:
                    new_n = n if old_n is None else old_n if n is None else old_n + n
                else:
                    new_n = old_n if n is None else n
                want[key] = (new_n, old_s if s is None else s)
        out = str(tmp_path / f"out-{summed}.parquet")
        assert run("table", "read", lake, "-o", out).returncode == 0
        got = pq.read_table(out).sort_by("id").to_pylist()
        assert got == [{"id": k, "n": n, "s": s} for k, (n, s) in sorted(want.items())]


def test_one_spelling_of_aggregation_for_merge_upsert_and_table_create(tmp_path):
    """`--agg COL=FUNC` and `--agg-default FUNC` mean the same on every command that folds:
    merge, upsert (which had --sum/--newest-non-null) and table create (which had none), and
    each gives the rows of a plain-Python fold."""
    versions = [
        {"id": [1, 2, 3], "n": [1, 10, 5], "s": ["a", "b", "c"]},
        {"id": [1, 3], "n": [2, None], "s": [None, "C"]},
    ]
    files = []
    for i, version in enumerate(versions):
        files.append(str(tmp_path / f"{i}.parquet"))
        pq.write_table(pa.table(version), files[-1])
    want: dict[int, tuple] = {}
    for version in versions:  # n summed (a null adds nothing), s the newest value, null or not
        for key, n, s in zip(version["id"], version["n"], version["s"], strict=True):
            old_n = want.get(key, (None, None))[0]
            want[key] = (n if old_n is None else old_n if n is None else old_n + n, s)
    expected = [{"id": k, "n": n, "s": s} for k, (n, s) in sorted(want.items())]
    spelling = ["--agg", "n=sum", "--agg-default", "last_value"]

    merged = str(tmp_path / "merged.parquet")
    assert run("merge", *files, "-k", "id", *spelling, "-o", merged).returncode == 0
    lake = str(tmp_path / "lake")
    created = run("table", "create", lake, "--like", files[0], "-k", "id", *spelling)
    assert created.returncode == 0, created.stderr
    for f in files:
        assert run("table", "write", lake, f).returncode == 0
    read = str(tmp_path / "read.parquet")
    assert run("table", "read", lake, "-o", read).returncode == 0
    upserted = str(tmp_path / "upserted")
    result = run("upsert", *files, "-o", upserted, "-k", "id", *spelling, "--master", "local[1]")
    assert result.returncode == 0, result.stderr
    for out in (merged, read, upserted):
        assert pq.read_table(out).sort_by("id").to_pylist() == expected, out
    gone = run("upsert", *files, "-o", str(tmp_path / "o2"), "-k", "id", "--sum", "n")
    assert gone.returncode == 2 and "--sum" in gone.stderr


def test_a_row_kind_column_is_not_table_data(tmp_path):
    """`table create --like F --row-kind op` leaves op out of the table (Paimon keeps a
    row's kind as _VALUE_KIND), and `table write --row-kind op` takes the kinds from it:
    reads return the table's columns only, with the updates and deletes applied."""
    changes = [
        {"id": [1, 2, 3], "v": ["a", "b", "c"], "op": ["+I", "+I", "+I"]},
        {"id": [1, 2], "v": ["A", "b"], "op": ["+U", "-D"]},
    ]
    files = []
    for i, change in enumerate(changes):
        files.append(str(tmp_path / f"{i}.parquet"))
        pq.write_table(pa.table(change), files[-1])
    lake = str(tmp_path / "lake")
    created = run("table", "create", lake, "--like", files[0], "-k", "id", "--row-kind", "op")
    assert created.returncode == 0, created.stderr
    for f in files:
        written = run("table", "write", lake, f, "--row-kind", "op")
        assert written.returncode == 0, written.stderr
    want: dict[int, str] = {}
    for change in changes:
        for key, v, op in zip(change["id"], change["v"], change["op"], strict=True):
            if op == "-D":
                want.pop(key, None)
            else:
                want[key] = v
    out = str(tmp_path / "out.parquet")
    assert run("table", "read", lake, "-o", out).returncode == 0
    assert pq.read_table(out).sort_by("id").to_pylist() == [{"id": k, "v": v} for k, v in sorted(want.items())]
    wrong = run("table", "create", str(tmp_path / "l2"), "--like", files[0], "-k", "id", "--row-kind", "kind")
    assert wrong.returncode == 2 and "--row-kind kind: no such column" in wrong.stderr


def test_what_merge_core_does_not_do_has_an_exit_status_of_its_own(tmp_path):
    """2 is a mistake in the command or its inputs; a table feature merge-core does not
    write (Java commit callbacks here) is neither that nor a failure: 3, naming the option."""
    pq.write_table(pa.table({"id": [1], "v": ["a"]}), tmp_path / "a.parquet")
    lake, data = str(tmp_path / "lake"), str(tmp_path / "a.parquet")
    options = ["--option", "commit.callbacks=com.example.Callback"]
    created = run("table", "create", lake, "--like", data, "-k", "id", *options)
    assert created.returncode == 0, created.stderr
    written = run("table", "write", lake, data)
    assert written.returncode == 3, written
    assert written.stderr.startswith("merge-core: unsupported: ") and "commit.callbacks" in written.stderr
    mistake = run("table", "write", lake, str(tmp_path / "missing.parquet"))
    assert mistake.returncode == 2, mistake


def test_messages_speak_the_command_lines_words(tmp_path):
    """A flag is named once ('--buckets', not '----buckets'), a table by its path (not
    'TABLE'), and a column of row kinds given as data gets a hint, not a Python list."""
    pq.write_table(pa.table({"id": [1], "v": ["a"]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"id": [1], "v": ["a"], "op": ["+I"]}), tmp_path / "kinds.parquet")
    lake = str(tmp_path / "lake")
    zero = run("table", "create", lake, "--like", str(tmp_path / "a.parquet"), "-k", "id", "--buckets", "0")
    assert zero.returncode == 2 and "error: --buckets must be at least 1" in zero.stderr, zero.stderr
    assert run("table", "create", lake, "--like", str(tmp_path / "a.parquet"), "-k", "id").returncode == 0
    kinds = run("table", "write", lake, str(tmp_path / "kinds.parquet"))
    assert kinds.returncode == 2, kinds.stderr
    assert "has columns the table does not: op (a column of row kinds? pass it as --row-kind)" in kinds.stderr
    assert "[" not in kinds.stderr
    partition = run("table", "read", lake, "-o", str(tmp_path / "o.parquet"), "--partition", "day=1")
    assert partition.returncode == 2 and f"no such column in the partitions of {lake}" in partition.stderr


def test_merge_errors_name_files_and_sql_types(tmp_path):
    """A schema mismatch between runs names the files, not 'run 1', and the types as SQL
    names a Paimon or Spark user writes (BIGINT, STRING), not Arrow's (Int64, Utf8)."""
    pq.write_table(pa.table({"id": [1], "v": ["a"]}), tmp_path / "s.parquet")
    pq.write_table(pa.table({"id": [1], "v": [1]}), tmp_path / "n.parquet")
    pq.write_table(pa.table({"id": [1], "w": [1]}), tmp_path / "w.parquet")
    out = str(tmp_path / "o.parquet")
    typed = run("merge", str(tmp_path / "s.parquet"), str(tmp_path / "n.parquet"), "-k", "id", "-o", out)
    assert typed.returncode == 2 and "is BIGINT in " in typed.stderr and "but STRING in " in typed.stderr, typed.stderr
    named = run("merge", str(tmp_path / "s.parquet"), str(tmp_path / "w.parquet"), "-k", "id", "-o", out)
    assert named.returncode == 2, named.stderr
    assert f"{tmp_path / 'w.parquet'} has columns [id, w] but {tmp_path / 's.parquet'} has" in named.stderr
    assert "run " not in named.stderr


def test_table_alter_changes_the_schema_as_paimons_readers_see_it(tmp_path):
    """alter adds, widens, renames and drops columns and sets options, one schema each;
    a later write and pypaimon-rust's read both follow the new schema; flags that do not
    go with the change, a bad type and a change Paimon refuses exit 2 with one line."""
    import merge_core as mc
    from helpers import pypaimon_rust_rows

    lake = tmp_path / "db.db" / "t"
    first, second = str(tmp_path / "1.parquet"), str(tmp_path / "2.parquet")
    pq.write_table(pa.table({"k": pa.array([1, 2], pa.int64()), "v": pa.array([10, 20], pa.int32())}), first)
    assert run("table", "create", str(lake), "--like", first, "-k", "k", "--buckets", "1").returncode == 0
    assert run("table", "write", str(lake), first).returncode == 0

    steps = [
        (["--add-column", "price", "DECIMAL(10, 2)", "--after", "k"], "added column price DECIMAL(10, 2)", 1),
        (["--alter-column", "v", "--type", "BIGINT", "--comment", "visits"], "altered column v", 2),
        (["--rename-column", "price", "cost"], "renamed column price to cost", 3),
        (["--add-column", "gone", "STRING"], "added column gone STRING", 4),
        (["--drop-column", "gone"], "dropped column gone", 5),
        (["--set", "snapshot.num-retained.max=50", "--set", "file.format=parquet"], "set snapshot.num-retained", 6),
        (["--reset", "file.format"], "reset file.format", 7),
    ]
    for flags, said, schema_id in steps:
        result = run("table", "alter", str(lake), *flags)
        assert result.returncode == 0, result.stderr
        assert said in result.stdout and result.stdout.rstrip().endswith(f"now has schema {schema_id}"), result.stdout

    import decimal

    pq.write_table(
        pa.table(
            {
                "k": pa.array([2, 3], pa.int64()),
                "cost": pa.array([decimal.Decimal("1.50"), None], pa.decimal128(10, 2)),
                "v": pa.array([2**40, 30], pa.int64()),
            }
        ),
        second,
    )
    assert run("table", "write", str(lake), second).returncode == 0
    expected = [
        {"k": 1, "cost": None, "v": 10},
        {"k": 2, "cost": decimal.Decimal("1.50"), "v": 2**40},
        {"k": 3, "cost": None, "v": 30},
    ]
    out = str(tmp_path / "out.parquet")
    assert run("table", "read", str(lake), "-o", out).returncode == 0
    assert pq.read_table(out).sort_by("k").to_pylist() == expected
    assert sorted(pypaimon_rust_rows(lake), key=lambda r: r["k"]) == expected
    table = mc.Table.open(str(lake))
    assert table.options["snapshot.num-retained.max"] == "50" and "file.format" not in table.options

    refused = [
        (["--drop-column", "k"], "cannot drop column 'k'"),
        (["--drop-column", "v", "--after", "k"], "--after does not go with this change"),
        (["--alter-column", "v"], "--alter-column NAME needs --type"),
        (["--add-column", "x", "NOTATYPE"], "type 'NOTATYPE' is not a Paimon type"),
        (["--set", "merge-engine"], "--set takes KEY=VALUE"),
        (["--set", "merge-engine=first-row"], "'merge-engine' cannot change once the table has snapshots"),
    ]
    for flags, message in refused:
        result = run("table", "alter", str(lake), *flags)
        assert result.returncode == 2, (flags, result)
        assert len(result.stderr.splitlines()) == 1 and message in result.stderr, (flags, result.stderr)
    assert len(list((lake / "schema").iterdir())) == 8  # no refused change wrote a schema
