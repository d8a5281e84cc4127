"""`merge-core bench`: the real command at its smallest scale, and the rules of its report
(peers missing or failing are reported, never faked; wrong results are flagged)."""

from __future__ import annotations

import os
import re
import subprocess

import pyarrow as pa
from merge_core.bench import _measure, _report, _scaling, _small_commits, _value_filter
from merge_core.bench._measure import Peer, Run, Section
from test_cli import CLI

SECTIONS = {
    "kway": "K-way merge of sorted Parquet runs",
    "upsert": "Contest upsert read",
    "sort": "External sort",
    "table": "Writing a Paimon table",
    "lookup": "Point lookups in a Paimon table",
    "append": "Reading an append-only Paimon table",
    "spark": "Contest upsert as a Spark job",
}


def table_rows(report: str, title: str) -> list[list[str]]:
    """The data rows of the table under the section `title`."""
    lines = report.split(f"## {title}", 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| tool"))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[start + 2 : end]]


def test_bench_command_writes_a_checked_report(tmp_path):
    out, scratch = tmp_path / "report", tmp_path / "scratch"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch)}
    done = subprocess.run(
        [CLI, "bench", "--scale", "tiny", "--out", str(out)], capture_output=True, text=True, env=env, timeout=900
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = (out / "README.md").read_text()
    assert "Machine:" in report and "Versions:" in report and "scale `tiny`" in report
    for name, title in SECTIONS.items():
        assert f"## {title}" in report
        rows = table_rows(report, title)
        assert rows, name
        timed = [r for r in rows if re.fullmatch(r"[\d.]+", r[1])]
        assert timed, f"{name}: nothing timed"
        for cells in timed:
            assert cells[5] == "yes" or cells[5].startswith("n/a"), f"{name}: {cells}"
        for cells in rows:  # untimed rows say why (the table suite: also what a peer cannot do)
            assert cells in timed or cells[1].startswith(("skipped:", "failed:", "not supported:")), cells
        assert (out / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
    sort_rows = {r[0]: r for r in table_rows(report, SECTIONS["sort"])}
    assert sort_rows["int64: merge-core"][3] == "1.00x"
    assert re.fullmatch(r"[\d.]+", sort_rows["int64: merge-core (batches from Python)"][1]), "the sort from Python"
    assert "| with the dynamic filter | 365 of 1095 |" in report  # the DPP example reads one year of three
    assert "opened 2 of 20 files (18 skipped by value statistics" in report  # the lookup section's value filter
    writes = {r[0]: r for r in table_rows(report, SECTIONS["table"])}
    assert set(writes) == {
        "merge-core mc.Table",
        "merge-core mc.Table, deletion vectors",
        "pypaimon (Python writer)",
        "pypaimon write.native.enabled",
        "pypaimon-rust",
    }
    mine = writes["merge-core mc.Table"]
    assert mine[3] == "1.00x" and mine[5] == "yes", mine  # its table reads alike after the compaction
    assert all(re.fullmatch(r"[\d.]+", cell) for cell in mine[6:11]), mine  # CPU, files, MiB, compaction, rewrite
    for tool, cells in writes.items():  # 11 commits x 8 buckets; merge-core's writes compact as Paimon's writer's
        if re.fullmatch(r"[\d.]+", cells[1]):
            assert int(cells[7]) < 88 if tool.startswith("merge-core") else cells[7] == "88", cells
            assert re.fullmatch(r"[\d.]+", cells[8]), cells
    dv = re.search(r"deletion vectors: .*\(([\d.]+)x the CPU .* Read by the peers: (.*)\.", report)
    assert dv and dv.group(2) == "pypaimon same rows: True; pypaimon-rust same rows: True", report
    upsert = {r[0]: r for r in table_rows(report, SECTIONS["upsert"])}
    floor = upsert["Table.read's Parquet decoding alone (floor, no merge)"]
    assert re.fullmatch(r"[\d.]+", floor[1]) and floor[5] == "n/a", floor
    assert upsert["merge-core Table.read (8 buckets, 11 commits)"][3] == "1.00x"
    assert all(re.fullmatch(r"[\d.]+", r[6]) for r in upsert.values() if r[1][0].isdigit() and "Spark" not in r[0])
    for label in ("sorted by key", "unsorted"):  # each input byte read once, at 8 and 64 buckets
        found = re.search(rf"- inputs {label}: 8 buckets ([\d.]+) .*, 64 buckets ([\d.]+) ", report)
        assert found and all(float(ratio) <= 1.1 for ratio in found.groups()), label
    floor = re.search(
        r"Spark SQL ([\d.]+) s .*`upsert` ([\d.]+) s .*alone, nothing done after it, ([\d.]+) s"
        r".*back unchanged, ([\d.]+) s",
        report,
    )
    assert floor and all(float(seconds) > 0 for seconds in floor.groups()), report  # the shuffle path's floor
    source = re.search(r"`merge_core` data source, .* ([\d.]+)x \(same rows: (\w+)\)\. .* ([\d.]+)x\.", report)
    assert source and source.group(2) == "True", report  # its read merges as Spark SQL's upsert does
    spark = {r[0]: r for r in table_rows(report, SECTIONS["spark"])}
    assert all(re.fullmatch(r"[\d.]+", r[6]) for r in spark.values()), spark  # CPU seconds of the process tree
    assert os.listdir(scratch) == [], "the bench left temporary files"


def test_the_value_filter_line_counts_the_files_its_statistics_exclude(tmp_path):
    """The lookup section's value-filter line: of ten months' files (two buckets each), a
    filter on the day opens one month's; every reader's rows equal merge-core's."""
    lines = _value_filter.lines(str(tmp_path), 2000, 1)
    ours = next(line for line in lines if line.startswith("- merge-core"))
    assert "opened 2 of 20 files (18 skipped by value statistics" in ours, lines
    peers = [line for line in lines if line.startswith("- ")]
    assert len(peers) == 4 and all("same rows" in line or "skipped:" in line for line in peers), lines


def test_the_small_commits_line_compares_the_pick_with_the_whole_bucket(tmp_path):
    """The table section's compaction line: the universal pick merges the 50 small commits
    only (not the base at the top level), so it writes a fraction of the whole bucket's
    rewrite, which merges all 51 files."""
    lines = _small_commits.lines(str(tmp_path), 50_000, 1)
    rows = {cells[0]: cells for line in lines if line.startswith("| ") for cells in [line.strip("| ").split(" | ")]}
    pick, whole = rows["`compact()`: universal pick"], rows["`compact(full=True)`: the whole bucket"]
    assert (pick[1], whole[1]) == ("50", "51"), lines
    assert float(pick[2]) < float(whole[2]) / 2, lines  # MiB written
    ratio = re.search(r"Bytes rewritten: the pick ([\d.]+)x", lines[-1])
    assert ratio and float(ratio.group(1)) < 0.5, lines


def test_missing_or_failing_peers_are_reported_not_faked():
    good = pa.table({"k": [1, 2]})

    def broken():
        raise RuntimeError("out of cheese")

    runs = _measure.time_peers(
        [
            Peer("floor", lambda: 7, compared=False),  # not the result: neither checked nor the reference
            Peer("merge-core", lambda: good),
            Peer("absent", lambda: good, module="no_such_module_for_merge_core_tests"),
            Peer("broken", broken),
            Peer("wrong", lambda: pa.table({"k": [1, 3]})),
        ],
        repeat=1,
        rows=2,
        same=_measure.same_rows,
    )
    by_tool = {run.tool: run for run in runs}
    assert by_tool["merge-core"].same is True and by_tool["merge-core"].seconds is not None
    assert by_tool["floor"].same is None and by_tool["floor"].seconds is not None
    assert by_tool["absent"].seconds is None and "not installed" in by_tool["absent"].note
    assert by_tool["broken"].seconds is None and by_tool["broken"].note == "failed: RuntimeError: out of cheese"
    assert by_tool["wrong"].same is False

    section = Section("t", "T", [], runs)
    text = "\n".join(_report.section_text(section, chart=None))
    assert "| absent | skipped: no_such_module_for_merge_core_tests is not installed |" in text
    assert "**NO**" in text


def test_ratios_refer_to_merge_core_of_the_same_group():
    section = Section(
        "s",
        "S",
        [],
        [
            Run("a: read only", 1.0, 10**7),
            Run("a: merge-core", 2.0, 10**7),
            Run("a: other", 3.0, 10**7),
            Run("b: merge-core", 4.0, 10**7),
            Run("b: other", 2.0, 10**7),
        ],
    )
    rows = {cells[0]: cells for cells in table_rows("\n".join(_report.section_text(section, None)), "S")}
    assert rows["a: read only"][3] == "0.50x"
    assert rows["a: other"][3] == "1.50x"
    assert rows["b: other"][3] == "0.50x"
    assert rows["a: merge-core"][2] == "5.00"  # million rows per second


def test_cpu_seconds_are_shown_where_measured():
    def work() -> int:
        return sum(range(3_000_000))

    seconds, _, cpu, result = _measure.measure(work, repeat=2)
    assert result == sum(range(3_000_000))
    assert 0 < cpu <= seconds * (os.cpu_count() or 1) + 0.05

    measured = Section("m", "M", [], [Run("merge-core", 1.0, 10, cpu_seconds=1.5), Run("jvm", 2.0, 10)])
    text = "\n".join(_report.section_text(measured, None))
    assert "| CPU seconds |" in text
    rows = {cells[0]: cells for cells in table_rows(text, "M")}
    assert rows["merge-core"][6] == "1.50" and rows["jvm"][6] == "n/a"
    unmeasured = Section("u", "U", [], [Run("merge-core", 1.0, 10)])
    assert "CPU seconds" not in "\n".join(_report.section_text(unmeasured, None))


#: A parent that ignores SIGCHLD, as PySpark's daemon does, and a child of it that uses
#: half a CPU second, prints its pid, and exits once the file named by argv[1] exists.
_DAEMON = """
import os, signal, sys, time
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
if os.fork() == 0:
    end = time.process_time() + 0.5
    while time.process_time() < end:
        pass
    print(os.getpid(), flush=True)
    while not os.path.exists(sys.argv[1]):
        time.sleep(0.01)
    os._exit(0)
sys.stdin.read()
"""


def test_cpu_of_the_process_tree_does_not_drop_when_a_worker_exits(tmp_path):
    import subprocess
    import sys
    import time

    stop = tmp_path / "stop"
    daemon = subprocess.Popen(
        [sys.executable, "-c", _DAEMON, str(stop)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        worker = int(daemon.stdout.readline())
        before = _measure.tree_cpu()
        assert before[worker] >= 0.4  # the worker's CPU is seen while it lives
        stop.touch()
        for _ in range(500):  # the kernel reaps it at once: its parent ignores SIGCHLD
            if not os.path.exists(f"/proc/{worker}"):
                break
            time.sleep(0.01)
        sum(range(2_000_000))  # some CPU of our own between the readings
        after = _measure.tree_cpu()
    finally:
        daemon.stdin.close()
        daemon.wait(timeout=10)
        daemon.stdout.close()
    assert worker not in after
    assert 0 < _measure.cpu_between(before, after) < 5  # a plain sum of the tree fell by the worker's 0.5 s


def test_the_bench_installs_only_the_peers_of_its_extra_that_are_missing():
    """The demo's set-up leaves the bench's peers out; the bench installs those missing."""
    from merge_core.cli.bench import missing_requirements

    requirements = [
        "pyarrow>=15",
        'duckdb>=1.0; extra == "bench"',
        "polars>=1.0 ; extra == 'bench'",
        'pytest>=8; extra == "test"',
        'pandas<3,>=2.2; extra == "bench" or extra == "spark"',
    ]
    present = {"polars"}
    got = missing_requirements(requirements, lambda name: name in present, "bench")
    assert got == ["duckdb>=1.0", "pandas<3,>=2.2"]
    assert missing_requirements(requirements, lambda name: True, "bench") == []


SCALING_STEPS = _scaling.STEPS  # step -> its name in the report


def scaling_rows(report: str) -> list[list[str]]:
    lines = report.split("## Scaling", 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| step"))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[start + 2 : end]]


def test_the_scaling_suite_replaces_only_its_section_of_the_report(tmp_path):
    """`--only scaling` times merge-core's steps at two sizes, each step in its own process,
    and writes its section and chart into the report, leaving the other sections as they
    were and replacing its own earlier section."""
    out, scratch = tmp_path / "report", tmp_path / "scratch"
    out.mkdir()
    scratch.mkdir()
    old = f"{_report.SCALING_BEGIN}\n## Scaling: an earlier run\n{_report.SCALING_END}"
    (out / "README.md").write_text(f"# merge-core benchmarks\n\n## K-way merge\n\nkept as it was\n\n{old}\n")
    env = {**os.environ, "TMPDIR": str(scratch)}
    command = [CLI, "bench", "--scale", "tiny", "--only", "scaling", "--out", str(out), "--no-install"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "scaling: 60,000 rows" in done.stderr  # progress, size by size
    report = (out / "README.md").read_text()
    assert report.startswith("# merge-core benchmarks\n\n## K-way merge\n\nkept as it was\n")
    assert "an earlier run" not in report and report.count(_report.SCALING_BEGIN) == 1
    assert "## Scaling: merge-core's steps from 0.03M to 0.06M rows" in report
    rows = scaling_rows(report)
    assert [(r[0], r[1]) for r in rows] == [(t, n) for t in SCALING_STEPS.values() for n in ("30,000", "60,000")]
    for cells in rows:
        if cells[0] == SCALING_STEPS["upsert_files"] and cells[2].startswith("skipped:"):
            continue  # without pyspark
        assert re.fullmatch(r"[\d.]+", cells[2]), cells  # seconds
        assert cells[10] == "yes", cells  # the rows it gave
        assert cells[5] == "1.00x" if cells[1] == "30,000" else re.fullmatch(r"[\d.]+x", cells[5]), cells
    merged = {(r[0], r[1]): r for r in rows}
    for step in ("read", "compact"):  # measured beside the bound of docs/memory.md
        for n in ("30,000", "60,000"):
            cells = merged[(SCALING_STEPS[step], n)]
            assert int(cells[7]) <= int(cells[8]), cells
    assert re.search(r"CPU seconds over the decode floor's: 0\.03M [\d.]+x, 0\.06M [\d.]+x\.", report), report
    assert "(R + 1) x 4 x B x row" in report and ": R = 11, row = " in report
    assert (out / "scaling.png").read_bytes()[:4] == b"\x89PNG"
    assert os.listdir(scratch) == [], "the scaling suite left temporary files"


def test_a_run_of_the_other_suites_keeps_the_scaling_section(tmp_path):
    block = f"{_report.SCALING_BEGIN}\n## Scaling: from its own run\n{_report.SCALING_END}"
    (tmp_path / "README.md").write_text(f"# an older report\n\n## Gone\n\n{block}\n")
    section = Section("s", "S", ["about"], [Run("merge-core", 1.0, 10)])
    with open(_report.write([section], str(tmp_path), "tiny", "merge-core bench --only s")) as f:
        text = f.read()
    assert "## S" in text and "## Gone" not in text
    assert text.count(block) == 1
    assert _report.with_scaling_block("# r\n", block) == f"# r\n\n{block}\n"  # added where there was none
    newer = block.replace("from its own run", "a newer run")
    assert _report.with_scaling_block(text, newer) == text.replace(block, newer)  # replaced where there was one


def test_the_huge_scale_refuses_the_suites_with_peers(tmp_path):
    command = [CLI, "bench", "--scale", "huge", "--only", "kway", "--no-install", "--out", str(tmp_path)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "runs only the scaling suite" in done.stderr, done.stderr
    assert os.listdir(tmp_path) == []
