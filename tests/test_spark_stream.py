"""Streams through the ``merge_core`` source: ``readStream`` (snapshot ids as offsets,
Paimon's scan modes, a restart from a checkpoint neither losing nor doubling a change)
and ``writeStream`` (each micro-batch committed once under Paimon's commit identifiers,
a replayed batch skipped, a failed batch leaving nothing).

The offsets and the commits are driven by hand where no Spark is needed (the source's
driver and task steps are plain Python); two queries on the local Spark session check
the whole path, each against merge-core's own read and pypaimon's."""

from __future__ import annotations

import pickle
import shutil
from collections import Counter
from pathlib import Path

import fsspec.implementations.local
import merge_core as mc
import pyarrow as pa
import pyarrow.fs as pafs
import pytest
from helpers import pypaimon_commit

pytest.importorskip("pyspark.sql.datasource")
import merge_core.spark as mcs  # noqa: E402
from merge_core.spark._source import Source, _Where  # noqa: E402
from merge_core.spark._stream import StreamReader  # noqa: E402
from test_expire import catalog, identifier  # noqa: E402 (pypaimon's catalog of the table)

SCHEMA = pa.schema([pa.field("k", pa.int64(), False), ("v", pa.int64())])
SUM = mc.Aggregate({"v": "sum"})


def changelog_table(root: Path) -> mc.Table:
    """Snapshots 1 (inserts), 2 (an update as -U/+U and a delete), 3 (a compaction: no
    change to read)."""
    table = mc.Table.create(root, SCHEMA, key="k", buckets=2, options={"changelog-producer": "input"})
    table.write(pa.table({"k": [1, 2, 3, 4], "v": [10, 20, 30, 40]}, SCHEMA))
    table.write(pa.table({"k": [1, 1, 2], "v": [10, 11, 20], "op": ["-U", "+U", "-D"]}), row_kind="op")
    table.compact(full=True)
    return table


def pypaimon_rows(root: Path, snapshot: int | None = None) -> list[tuple]:
    table = catalog(root).get_table(identifier(root))
    if snapshot is not None:
        table = table.copy({"scan.snapshot-id": str(snapshot)})
    builder = table.new_read_builder()
    return sorted((r["k"], r["v"]) for r in builder.new_read().to_arrow(builder.new_scan().plan().splits()).to_pylist())


def pypaimon_insert(root: Path, rows: list[tuple]) -> None:
    table = catalog(root).get_table(identifier(root))
    pypaimon_commit(table, [{"k": k, "v": v} for k, v in rows], SCHEMA)


def rows(table: pa.Table) -> list[tuple]:
    return sorted(tuple(r.values()) for r in table.to_pylist())


def changes(table: mc.Table, start: int, end: int) -> list[tuple]:
    return rows(table.changes(start, end).read_all())


def fold(changed: list[tuple]) -> list[tuple]:
    """What a changelog (rowkind, k, v) leaves, in any order: each retraction cancels the
    row it retracts."""
    count = Counter()
    for kind, *row in changed:
        count[tuple(row)] += -1 if kind in ("-U", "-D") else 1
    assert all(n in (0, 1) for n in count.values()), count
    return sorted(row for row, n in count.items() if n == 1)


class Driven:
    """The source's stream reader driven as Spark drives it: offsets from the driver,
    each partition read as a task reads it."""

    def __init__(self, table: mc.Table, **options: str):
        source = Source({"path": str(table.path), **options})
        self.reader = source.streamReader(source.schema())
        self.offset = self.reader.initialOffset()

    def next_batch(self) -> list[tuple]:
        end = self.reader.latestOffset(self.offset, None)
        parts = self.reader.partitions(self.offset, end) if end != self.offset else []
        self.offset = end
        return rows(pa.Table.from_batches([b for p in parts for b in self.reader.read(p)], self.reader.arrow))


def test_scan_modes_start_and_follow_as_paimon_streams(tmp_path):
    root = tmp_path / "db.db" / "t"
    table = changelog_table(root)
    full = Driven(table, **{"read.changelog": "true"})
    latest = Driven(table, **{"read.changelog": "true", "scan.mode": "latest"})
    from_2 = Driven(table, **{"scan.snapshot-id": "2", "read.changelog": "true"})
    upserts = Driven(table, **{"scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
    from_1_full = Driven(
        table, **{"scan.mode": "from-snapshot-full", "scan.snapshot-id": "1", "read.changelog": "true"}
    )

    assert full.next_batch() == [("+I", k, v) for k, v in pypaimon_rows(root, 3)]  # the contents of snapshot 3
    assert latest.next_batch() == []  # where the changes start
    assert from_2.next_batch() == changes(table, 1, 3) == [("+U", 1, 11), ("-D", 2, 20), ("-U", 1, 10)]
    assert upserts.next_batch() == [(1, 10), (1, 11), (2, 20), (3, 30), (4, 40)]  # no -U, no -D, no row kind
    first = from_1_full.next_batch()
    assert first == sorted([("+I", k, v) for k, v in pypaimon_rows(root, 1)] + changes(table, 1, 3))

    pypaimon_insert(root, [(5, 50), (6, 60)])  # snapshot 4, pypaimon's
    table.write(pa.table({"k": [3, 3, 4], "v": [30, 31, 40], "op": ["-U", "+U", "-D"]}), row_kind="op")
    for stream in (full, latest, from_2, from_1_full):
        assert stream.next_batch() == changes(table, 3, 5)
        assert stream.next_batch() == []
    assert upserts.next_batch() == [(3, 31), (5, 50), (6, 60)]

    # What a stream gave, folded, is what merge-core and pypaimon read now.
    assert fold(first + changes(table, 3, 5)) == rows(table.read().read_all()) == pypaimon_rows(root)


class CountingFiles(fsspec.implementations.local.LocalFileSystem):
    """The local disk, counting each file opened (in ``opened``, by path)."""

    def __init__(self, opened: Counter):
        super().__init__(skip_instance_cache=True)
        self.opened = opened

    def _open(self, path, *args, **kwargs):
        self.opened[path] += 1
        return super()._open(path, *args, **kwargs)


def test_a_stream_task_opens_only_the_change_files_the_driver_planned(tmp_path):
    root = tmp_path / "db.db" / "t"
    table = changelog_table(root)
    pypaimon_insert(root, [(5, 50)])  # snapshot 4
    opened: Counter = Counter()
    on_disk = pafs.PyFileSystem(pafs.FSSpecHandler(CountingFiles(opened)))
    source = Source(
        {"path": str(root), "scan.mode": "from-snapshot", "scan.snapshot-id": "1", "read.changelog": "true"}
    )
    reader = StreamReader(_Where(str(root), on_disk, "main"), source.options, source.schema())
    start = reader.initialOffset()
    parts = reader.partitions(start, reader.latestOffset(start))
    planned = {
        r.path for p in parts for s in p.value.splits for section in s.sections for run in section.runs for r in run
    }
    assert [p.value.splits[0].snapshot for p in parts] == [1, 2, 4]  # 3, a compaction, changed no row
    assert len(planned) == 4 and not planned & set(opened), "the driver opened a change file"

    opened.clear()
    shipped = [pickle.loads(pickle.dumps(p)) for p in parts]  # as Spark hands them to tasks
    assert all(len(pickle.dumps(p)) < 1000 * len(p.value.splits) for p in parts)
    got = rows(pa.Table.from_batches([b for p in shipped for b in reader.read(p)], reader.arrow))
    assert got == changes(table, 0, 4)
    # Each task opens the table (its schema file), then the change files it was handed, once.
    assert {path for path in opened if "/schema/" not in path} == planned, "a task planned again"
    assert all(opened[path] == 1 for path in planned)


def test_scan_options_are_checked(tmp_path):
    table = changelog_table(tmp_path / "db.db" / "t")
    for options, error in [
        ({"scan.mode": "from-timestamp"}, mc.UnsupportedFeatureError),
        ({"scan.mode": "from-snapshot"}, mc.InvalidInputError),
        ({"scan.mode": "latest", "scan.snapshot-id": "2"}, mc.InvalidInputError),
        ({"scan.snapshot-id": "0"}, mc.InvalidInputError),
        ({"read.changelog": "yes"}, mc.InvalidInputError),
        ({"scan.mode": "from-snapshot-full", "scan.snapshot-id": "9"}, mc.TableNotFoundError),
    ]:
        with pytest.raises(error):
            Driven(table, **options)
    with pytest.raises(mc.InvalidInputError, match="unknown option"):
        Driven(table, snapshot="1")  # time travel is for batch reads


def spark_schema():
    from pyspark.sql.types import LongType, StructField, StructType

    return StructType([StructField("k", LongType(), False), StructField("v", LongType(), True)])


def stream_writer(table: mc.Table, **options: str):
    return Source({"path": str(table.path), **options}).streamWriter(spark_schema(), False)


def task(writer, data: dict) -> object:
    return writer.write(iter(pa.table(data, SCHEMA).to_batches()))


def data_files(root: Path) -> set[Path]:
    return {p for p in root.glob("bucket-*/*") if p.is_file()}


def test_a_replayed_batch_is_committed_once_and_a_failed_one_leaves_nothing(tmp_path):
    root = tmp_path / "db.db" / "t"
    table = mc.Table.create(root, SCHEMA, key="k", buckets=2, merge=SUM)
    checkpoint = str(tmp_path / "checkpoint")
    writer = stream_writer(table, checkpointLocation=checkpoint)
    writer.commit([task(writer, {"k": [1, 2], "v": [1, 2]}), None], 0)
    writer.commit([task(writer, {"k": [1], "v": [10]})], 1)
    assert [table.snapshot(s).commit_identifier for s in table.snapshots()] == [0, 1]
    files = data_files(root)

    # The query restarts from the same checkpoint and Spark runs batch 1 again.
    again = stream_writer(table, checkpointLocation=checkpoint)
    again.commit([task(again, {"k": [1], "v": [10]})], 1)
    assert table.snapshots() == [1, 2], "batch 1 committed twice"
    assert data_files(root) == files, "the replayed batch's files stay behind"
    again.commit([task(again, {"k": [2], "v": [5]})], 2)
    assert rows(table.read().read_all()) == pypaimon_rows(root) == [(1, 11), (2, 7)]
    files = data_files(root)

    # Batch 3 fails in one task: Spark aborts it with the other tasks' messages.
    again.abort([task(again, {"k": [1, 3], "v": [100, 300]}), None], 3)
    assert table.snapshots() == [1, 2, 3] and data_files(root) == files
    assert rows(table.read().read_all()) == [(1, 11), (2, 7)]

    # Another query (another checkpoint) is another commit user: its batch 0 is its own.
    other = stream_writer(table, checkpointLocation=str(tmp_path / "other"))
    other.commit([task(other, {"k": [4], "v": [4]})], 0)
    assert rows(table.read().read_all()) == pypaimon_rows(root) == [(1, 11), (2, 7), (4, 4)]
    with pytest.raises(mc.UnsupportedFeatureError, match="complete"):
        Source({"path": str(root)}).streamWriter(spark_schema(), True)


# On Spark: a query stopped, the table changed (by merge-core and by pypaimon), the query
# restarted from its checkpoint.


@pytest.fixture(scope="module")
def source(spark):
    mcs.register(spark)
    return spark


def run_read(spark, table: mc.Table, checkpoint: Path, out: Path) -> None:
    reader = spark.readStream.format("merge_core").option("read.changelog", "true")
    query = reader.load(str(table.path)).writeStream.format("parquet").option("checkpointLocation", str(checkpoint))
    query.trigger(availableNow=True).start(str(out)).awaitTermination()


def test_a_stream_read_restarts_from_its_checkpoint(source, tmp_path):
    stream_read_restarts(source, tmp_path)


def stream_read_restarts(spark, tmp_path: Path) -> None:
    """Three runs of one query (its checkpoint kept) while merge-core and pypaimon commit
    between them: what the query wrote is the table's changes, each once, and folds into
    what merge-core and pypaimon read (test_spark_cluster runs it on the cluster)."""
    root = tmp_path / "db.db" / "t"
    table = changelog_table(root)
    checkpoint, out = tmp_path / "checkpoint", tmp_path / "out"
    run_read(spark, table, checkpoint, out)
    pypaimon_insert(root, [(5, 50)])
    table.write(pa.table({"k": [3, 3, 4], "v": [30, 31, 40], "op": ["-U", "+U", "-D"]}), row_kind="op")
    run_read(spark, table, checkpoint, out)
    table.write(pa.table({"k": [6], "v": [60]}, SCHEMA))
    run_read(spark, table, checkpoint, out)
    got = rows(spark.read.parquet(str(out)).toArrow())
    assert got == sorted([("+I", k, v) for k, v in pypaimon_rows(root, 3)] + changes(table, 3, 6))
    assert fold(got) == rows(table.read().read_all()) == pypaimon_rows(root)


def test_a_stream_write_commits_each_batch_once(source, tmp_path):
    root = tmp_path / "db.db" / "t"
    table = mc.Table.create(root, SCHEMA, key="k", buckets=2, merge=SUM)
    incoming, checkpoint = tmp_path / "in", tmp_path / "checkpoint"
    incoming.mkdir()

    def arrive(name: str, data: dict) -> None:
        import pyarrow.parquet as pq

        pq.write_table(pa.table(data, pa.schema([("k", pa.int64()), ("v", pa.int64())])), incoming / f"{name}.parquet")

    def run() -> None:
        df = source.readStream.schema("k bigint, v bigint").parquet(str(incoming))
        query = df.writeStream.format("merge_core").option("checkpointLocation", str(checkpoint))
        query.trigger(availableNow=True).start(str(root)).awaitTermination()

    arrive("a", {"k": [1, 2], "v": [1, 2]})
    run()
    arrive("b", {"k": [1, 3], "v": [10, 3]})
    run()
    assert [table.snapshot(s).commit_identifier for s in table.snapshots()] == [0, 1]
    files = data_files(root)
    # As if the query died after its commit of batch 1 but before Spark logged it done.
    for name in ("1", ".1.crc"):  # the entry and its checksum (else Spark cannot write the entry again)
        (checkpoint / "commits" / name).unlink()
    run()
    assert table.snapshots() == [1, 2] and data_files(root) == files
    assert rows(table.read().read_all()) == pypaimon_rows(root) == [(1, 11), (2, 2), (3, 3)]

    arrive("c", {"k": [4, None], "v": [4, 4]})  # a null key: the batch fails
    with pytest.raises(Exception, match="null"):
        run()
    assert table.snapshots() == [1, 2] and data_files(root) == files
    shutil.rmtree(checkpoint)
