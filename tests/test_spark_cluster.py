"""merge_core.spark on a real cluster: a standalone master and two one-core workers, each a
JVM of its own on 127.0.0.1, whose executors run the Python environment that docs/spark.md
packs and Spark ships as an archive (never the driver's venv); and a Spark Connect server
on that cluster serving a client in another process. Results are checked against the
same oracles as local mode's tests: DuckDB SQL and tables written without Spark.

Run alone with ``pytest -m cluster``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import merge_core as mc
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyspark")
import merge_core.spark as mcs  # noqa: E402
import spark_cluster  # noqa: E402
import test_spark_stream as streams  # noqa: E402
from merge_core import contest  # noqa: E402
from test_contest_semantics import duckdb_upsert  # noqa: E402
from test_spark_table import SCHEMA, rows, sales  # noqa: E402

pytestmark = pytest.mark.cluster

EXECUTOR_PYTHON = "./env/bin/python"
KV = pa.schema([("k", pa.int64()), ("v", pa.int64())])


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cluster")


@pytest.fixture(scope="module")
def archive(folder) -> Path:
    return spark_cluster.pack_environment(folder / "pack")


@pytest.fixture(scope="module")
def master(folder) -> str:
    with spark_cluster.standalone_cluster(folder / "cluster", workers=2) as url:
        yield url


@pytest.fixture(scope="module")
def cluster_spark(master, archive):
    """The driver in this process, its executors on the two workers. The local session of
    the other Spark tests is stopped first (one SparkContext per process): conftest runs
    these tests last."""
    from pyspark import SparkContext

    if SparkContext._active_spark_context is not None:
        SparkContext._active_spark_context.stop()
    saved = os.environ.get("PYSPARK_PYTHON")
    os.environ["PYSPARK_PYTHON"] = EXECUTOR_PYTHON
    settings = {
        "spark.archives": f"{archive}#env",
        "spark.sql.shuffle.partitions": "2",
        "spark.executor.memory": "1g",
    }
    session = mcs.local_session(master, "merge-core-cluster-tests", **settings)
    try:
        _wait_for_executors(session, 2)
        yield session
    finally:
        session.stop()
        if saved is None:
            os.environ.pop("PYSPARK_PYTHON", None)
        else:
            os.environ["PYSPARK_PYTHON"] = saved


def _wait_for_executors(session, count: int, timeout: float = 120) -> None:
    status = session.sparkContext._jsc.sc().getExecutorMemoryStatus()
    deadline = time.monotonic() + timeout
    while status.size() < count + 1:  # the driver counts as one
        assert time.monotonic() < deadline, f"{status.size() - 1} of {count} executors registered"
        time.sleep(0.5)
        status = session.sparkContext._jsc.sc().getExecutorMemoryStatus()


@pytest.fixture(scope="module")
def contest_files(folder):
    return contest.generate(str(folder / "contest"), rows=4000, increments=3, seed=11)


def test_python_workers_run_from_the_shipped_archive(cluster_spark, folder):
    def where_python_runs(_):  # defined here, so it is shipped by value
        import json
        import os
        import sys

        import merge_core

        yield json.dumps([sys.executable, merge_core.__file__, os.getcwd()])

    found = cluster_spark.sparkContext.parallelize(range(8), 8).mapPartitions(where_python_runs).collect()
    driver_venv = Path(sys.prefix).resolve()
    executors = set()
    for executable, module, cwd in map(json.loads, found):
        env = Path(cwd) / "env"
        assert Path(executable).resolve().is_relative_to(env.resolve()) or Path(executable).parent.parent == env
        assert Path(module).resolve().is_relative_to(env.resolve()), module
        assert not Path(module).resolve().is_relative_to(driver_venv)
        assert Path(cwd).is_relative_to(folder / "cluster"), cwd
        executors.add(Path(cwd).relative_to(folder / "cluster").parts[0])
    assert executors == {"worker-0", "worker-1"}, "both workers ran tasks"


def test_upsert_on_the_cluster_equals_duckdb(cluster_spark, contest_files):
    versions = [cluster_spark.read.parquet(p) for p in contest_files]
    got = mcs.upsert(versions, key="uuid", num_partitions=4, **contest.CONTEST).toArrow()
    assert got.sort_by("uuid").to_pylist() == duckdb_upsert([pq.read_table(p) for p in contest_files])


def test_upsert_files_on_the_cluster_equals_duckdb(cluster_spark, contest_files, tmp_path):
    out = tmp_path / "out"
    counts = mcs.upsert_files(cluster_spark, contest_files, str(out), key="uuid", buckets=4, **contest.CONTEST)
    want = duckdb_upsert([pq.read_table(p) for p in contest_files])
    assert pq.read_table(out).sort_by("uuid").to_pylist() == want
    assert counts["rows_out"] == len(want)


def test_sort_within_partitions_on_the_cluster(cluster_spark):
    keys = [i * 7919 % 5000 for i in range(5000)]
    df = cluster_spark.createDataFrame([(k, i) for i, k in enumerate(keys)], "k long, i long").repartition(4)
    partitions = mcs.sort_within_partitions(df, "k", memory_limit="64KiB").rdd.glom().collect()
    assert [[r.k for r in p] for p in partitions] == [sorted(r.k for r in p) for p in partitions]
    assert sorted(r.k for p in partitions for r in p) == sorted(keys)


def test_table_write_compact_read_on_the_cluster_equal_local(cluster_spark, tmp_path):
    options = {"key": "id", "partition_by": "sold", "buckets": 3, "merge": "partial-update"}
    local = mc.Table.create(tmp_path / "local", SCHEMA, **options)
    remote = mc.Table.create(tmp_path / "cluster", SCHEMA, **options)
    for version, (n, offset) in enumerate([(400, 0), (300, 200), (50, 380)]):
        data = sales(n, offset, version)
        local.write(data)
        assert mcs.write(cluster_spark.createDataFrame(data.to_pandas()), remote)["snapshot"] == version + 1
    assert mcs.compact(cluster_spark, remote, full=True)["files_written"] > 0
    expected = rows(local.read().read_all())
    assert rows(remote.read().read_all()) == expected
    assert rows(mcs.read(cluster_spark, remote).toArrow().cast(SCHEMA)) == expected


@pytest.fixture(scope="module")
def cluster_source(cluster_spark):
    """The session with the source registered. A Python source runs in Python on the
    driver too (its schema, partitions, offsets and commits), in the Python it was
    registered with: the driver's own, while the executors' tasks run the shipped one
    (``spark.sql.execution.pyspark.python``, which the driver's planning ignores)."""
    context = cluster_spark.sparkContext
    cluster_spark.conf.set("spark.sql.execution.pyspark.python", EXECUTOR_PYTHON)
    context.pythonExec = sys.executable
    try:
        mcs.register(cluster_spark)
    finally:
        context.pythonExec = EXECUTOR_PYTHON
    return cluster_spark


def test_a_stream_read_on_the_cluster_restarts_from_its_checkpoint(cluster_source, tmp_path):
    streams.stream_read_restarts(cluster_source, tmp_path)


def exit_once(marker: str):
    """A ``mapInArrow`` function that passes its batches on, but whose first run anywhere
    (the one that creates ``marker``) kills its Python worker after handing on its first
    batch: its task fails mid-batch and Spark runs it again."""

    def passing(batches):  # shipped by value to the executors
        import os

        for batch in batches:
            yield batch
            try:
                os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                continue
            os._exit(1)

    return passing


def test_a_stream_write_on_the_cluster_survives_a_killed_task(cluster_source, tmp_path):
    """Each micro-batch is two files, two tasks; in each run of the query one task's
    Python worker dies after handing its first rows to the writer. The sums (a row
    written twice would double its key's) and the snapshots (one per batch) say that no
    batch was lost or committed twice; merge-core and pypaimon read the same."""
    spark = cluster_source
    root = tmp_path / "db.db" / "t"
    table = mc.Table.create(root, streams.SCHEMA, key="k", buckets=2, merge=streams.SUM)
    incoming, checkpoint = tmp_path / "in", tmp_path / "checkpoint"
    incoming.mkdir()
    want: dict[int, int] = {}

    def arrive(name: str, keys: range) -> None:
        data = pa.table({"k": list(keys), "v": [k % 7 + 1 for k in keys]}, KV)
        pq.write_table(data, incoming / f"{name}.parquet")
        for k, v in zip(data["k"].to_pylist(), data["v"].to_pylist(), strict=True):
            want[k] = want.get(k, 0) + v

    def run(marker: Path) -> None:
        df = spark.readStream.schema("k bigint, v bigint").option("maxFilesPerTrigger", 2).parquet(str(incoming))
        killing = df.mapInArrow(exit_once(str(marker)), df.schema)
        query = killing.writeStream.format("merge_core").option("checkpointLocation", str(checkpoint))
        query.trigger(availableNow=True).start(str(root)).awaitTermination()
        assert marker.exists(), "no task was killed"

    for name, keys in [("a", range(0, 40)), ("b", range(20, 60)), ("c", range(50, 90)), ("d", range(0, 10))]:
        arrive(name, keys)
    run(tmp_path / "killed-1")  # batches 0 (a, b) and 1 (c, d)
    arrive("e", range(30, 70))
    arrive("f", range(85, 95))
    run(tmp_path / "killed-2")  # batch 2 (e, f), after a restart
    assert [table.snapshot(s).commit_identifier for s in table.snapshots()] == [0, 1, 2]
    expected = sorted(want.items())
    assert streams.rows(table.read().read_all()) == streams.pypaimon_rows(root) == expected


def test_upsert_through_spark_connect(master, archive, folder, contest_files, tmp_path):
    """A Connect client in another process (a Connect session changes the process's
    environment for good) ships the archive with its session and runs ``mcs.upsert``.
    The driver of the tests above goes first: it holds the workers' cores."""
    from pyspark import SparkContext

    if SparkContext._active_spark_context is not None:
        SparkContext._active_spark_context.stop()
    settings = {"spark.sql.shuffle.partitions": "2", "spark.executor.memory": "1g"}
    with spark_cluster.connect_server(folder / "connect", master, settings) as url:
        out = tmp_path / "connect.parquet"
        client = Path(__file__).parent / "connect_client.py"
        done = subprocess.run(
            [sys.executable, str(client), url, str(archive), str(out), *contest_files],
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    said = json.loads(done.stdout.splitlines()[-1])
    assert said["connect"] is True and said["modules"]
    for module in said["modules"]:  # unpacked from the session's artifact, not the driver's venv
        assert "/env/" in module and not Path(module).resolve().is_relative_to(Path(sys.prefix).resolve()), module
    assert pq.read_table(out).sort_by("uuid").to_pylist() == duckdb_upsert([pq.read_table(p) for p in contest_files])


def test_a_stream_read_through_spark_connect(master, folder, tmp_path):
    """The stream read restarted from its checkpoint, each run a Connect client of its own
    (as test_upsert_through_spark_connect's) while merge-core and pypaimon commit between
    the runs. The server runs the source's driver side in its own ``PYSPARK_PYTHON``; the
    tasks run this Python (connect_stream_client.py says why not the shipped archive)."""
    from pyspark import SparkContext

    if SparkContext._active_spark_context is not None:
        SparkContext._active_spark_context.stop()
    root = tmp_path / "db.db" / "t"
    table = streams.changelog_table(root)
    checkpoint, out = tmp_path / "checkpoint", tmp_path / "out"
    client = Path(__file__).parent / "connect_stream_client.py"
    settings = {"spark.sql.shuffle.partitions": "2", "spark.executor.memory": "1g"}
    with spark_cluster.connect_server(folder / "connect-stream", master, settings, python=sys.executable) as url:

        def run() -> None:
            command = [sys.executable, str(client), url, sys.executable, str(root), str(checkpoint), str(out)]
            done = subprocess.run(command, capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, done.stderr[-3000:]
            assert json.loads(done.stdout.splitlines()[-1])["connect"] is True

        run()
        streams.pypaimon_insert(root, [(5, 50)])
        table.write(pa.table({"k": [3, 3, 4], "v": [30, 31, 40], "op": ["-U", "+U", "-D"]}), row_kind="op")
        run()
    got = streams.rows(pq.read_table(out))
    first = [("+I", k, v) for k, v in streams.pypaimon_rows(root, 3)]
    assert got == sorted(first + streams.changes(table, 3, 5))
    assert streams.fold(got) == streams.rows(table.read().read_all()) == streams.pypaimon_rows(root)
