"""Tables on an object store: an S3-compatible server (moto's, started on 127.0.0.1 by the
fixture) holds a table that reads, writes, compacts and expires as the same table on a
local disk does; commits claim snapshots with conditional PUTs, so racing writers behave
as on a local disk; a filesystem that cannot create a file only if absent is refused."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

import boto3
import merge_core as mc
import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from helpers import free_port
from merge_core import fs
from merge_core.paimon import _commit

SCHEMA = pa.schema([("k", pa.int64()), ("p", pa.string()), ("v", pa.int64())])
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


@pytest.fixture(scope="module")
def endpoint():
    """moto's S3 server on a free port of 127.0.0.1, stopped when the module's tests end."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{url}/moto-api/", timeout=1).close()
                break
            except (urllib.error.URLError, OSError):
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"moto's server did not start on {url}") from None
                time.sleep(0.1)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture
def bucket(endpoint, monkeypatch):
    """A new bucket, reached through the standard AWS_* variables."""
    for name, value in {**CREDENTIALS, "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL": endpoint}.items():
        monkeypatch.setenv(name, value)
    name = f"lake-{uuid.uuid4().hex[:12]}"
    boto3.client("s3").create_bucket(Bucket=name)
    return name


def objects(bucket: str) -> list[str]:
    pages = boto3.client("s3").get_paginator("list_objects_v2").paginate(Bucket=bucket)
    return sorted(o["Key"] for page in pages for o in page.get("Contents", []))


def batch(seed: int, n: int = 200, first_key: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "k": rng.integers(first_key, first_key + 120, n),
            "p": rng.choice(["a", "b", "c"], n),
            "v": rng.integers(-1000, 1000, n),
        },
        schema=SCHEMA,
    )


def rows(table: mc.Table, **kwargs) -> list[dict]:
    return table.read(**kwargs).read_all().sort_by([("p", "ascending"), ("k", "ascending")]).to_pylist()


def create(path, **kwargs) -> mc.Table:
    return mc.Table.create(path, SCHEMA, key="k", partition_by="p", buckets=2, **kwargs)


def test_a_table_on_s3_holds_what_the_same_table_on_disk_holds(bucket, tmp_path):
    uri = f"s3://{bucket}/wh/db.db/t"
    remote, local = create(uri), create(tmp_path / "t")
    for seed in range(3):
        for table in (remote, local):
            assert table.write(batch(seed))["snapshot"] == seed + 1
    delete = pa.table({"k": batch(0)["k"][:20], "p": batch(0)["p"][:20]})
    assert remote.delete(delete) == local.delete(delete)
    assert rows(remote) == rows(local) != []
    assert rows(remote, snapshot=2) == rows(local, snapshot=2)
    assert rows(remote, columns=["p", "k"], partitions={"p": "b"}) == rows(
        local, columns=["p", "k"], partitions={"p": "b"}
    )
    assert remote.path == uri and remote.info()["path"] == uri

    assert remote.compact(full=True) == local.compact(full=True)
    assert rows(remote) == rows(local)
    expired, expected = remote.expire(keep_snapshots=1), local.expire(keep_snapshots=1)
    del expired["bytes_removed"], expected["bytes_removed"]  # manifests hold random names: sizes vary
    assert expired == expected
    described = {k: v for k, v in remote.info().items() if k not in ("path", "bytes")}
    assert described == {k: v for k, v in local.info().items() if k not in ("path", "bytes")}

    reopened = mc.Table.open(uri)
    assert rows(reopened) == rows(local)
    on_disk = [str(p.relative_to(tmp_path / "t")) for p in (tmp_path / "t").rglob("*") if p.is_file()]
    assert unnamed(objects(bucket)) == unnamed(f"wh/db.db/t/{name}" for name in on_disk), "no stray object"


def unnamed(paths) -> list[str]:
    """``paths`` with the random part of file names blotted out."""
    return sorted(re.sub(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", "*", p) for p in paths)


def test_an_explicit_filesystem_needs_no_environment(bucket, endpoint, monkeypatch, tmp_path):
    for name in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name)
    s3 = pafs.S3FileSystem(endpoint_override=endpoint, access_key="testing", secret_key="testing", region="us-east-1")
    table = create(f"{bucket}/wh/db.db/t", filesystem=s3)  # a path on the filesystem
    table.write(batch(7))
    same = mc.Table.open(f"s3://{bucket}/wh/db.db/t", filesystem=s3)  # or its URI
    same.write(batch(8))
    local = create(tmp_path / "t")
    local.write(batch(7))
    local.write(batch(8))
    assert rows(table) == rows(local)
    with pytest.raises(mc.InvalidInputError, match="URI"):
        mc.Table.open(f"gs://{bucket}/wh/db.db/t", filesystem=s3)


def test_a_file_uri_or_a_local_filesystem_is_a_local_table(tmp_path):
    table = create((tmp_path / "a table").as_uri(), filesystem=pafs.LocalFileSystem())
    table.write(batch(1))
    assert table.path == tmp_path / "a table"
    assert rows(mc.Table.open(str(tmp_path / "a table"))) == rows(table)


def racing(monkeypatch, other: mc.Table, messages) -> list:
    """Makes the next commit lose a race: ``other`` commits ``messages`` just before
    that commit's first claim of a snapshot. Returns what happens: the other's snapshot,
    then each (snapshot, won) claim of the commit."""
    claim, events, losers = _commit.Committer._claim, [], []

    def claim_after_the_other(self, snapshot_id, text):
        if not losers:
            losers.append(self)
            events.append(other.commit(messages))
        won = claim(self, snapshot_id, text)
        if self is losers[0]:
            events.append((snapshot_id, won))
        return won

    monkeypatch.setattr(_commit.Committer, "_claim", claim_after_the_other)
    return events


def data_files(bucket: str) -> set[str]:
    return {k.rpartition("/")[2] for k in objects(bucket) if "/data-" in k}


def test_racing_appends_both_land_and_a_losing_compaction_is_refused(bucket, monkeypatch):
    uri = f"s3://{bucket}/wh/db.db/t"
    first = create(uri)
    first.write(batch(1))
    second = mc.Table.open(uri)
    # Racing writes number their rows alike (each from the snapshot it started on), so
    # only writes of different keys have one outcome.
    with second.new_write() as w:
        w.write(batch(2, first_key=1000))
        theirs = w.prepare_commit()
    with monkeypatch.context() as patch:
        events = racing(patch, second, theirs)
        assert first.write(batch(3))["snapshot"] == 3
    assert events == [2, (2, False), (3, True)], "the append lost snapshot 2 to the other, then took 3"
    expected = create(f"s3://{bucket}/wh/db.db/oracle")
    for data in (batch(1), batch(2, first_key=1000), batch(3)):
        expected.write(data)
    assert rows(first) == rows(expected)

    # Two compactions of the same files: the one that loses the race finds its files gone.
    theirs = [second.compact_bucket(task) for task in second.plan_compaction(full=True)]
    before = data_files(bucket)
    with monkeypatch.context() as patch, pytest.raises(mc.CommitConflictError, match="compact again"):
        events = racing(patch, second, theirs)
        first.compact(full=True)
    assert events == [4, (4, False)]
    assert data_files(bucket) == before, "the losing compaction's files are removed"
    assert not [k for k in objects(bucket) if k.rpartition("/")[2].startswith(".")], "no temporary object"
    assert rows(first) == rows(expected)


def test_a_failed_write_leaves_no_object(bucket, monkeypatch):
    table = create(f"s3://{bucket}/wh/db.db/t")
    table.write(batch(1))
    before = objects(bucket)

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patch, pytest.raises(mc.TableIOError, match="manifest"):
        patch.setattr(_commit.fastavro, "writer", full)
        table.write(batch(2))
    assert objects(bucket) == before
    assert table.write(batch(2))["snapshot"] == 2


def test_a_store_ignoring_conditional_writes_is_refused(bucket, monkeypatch):
    def unconditional(self, path, data):
        client = self._s3()
        bucket_name, _, key = path.partition("/")
        client.put_object(Bucket=bucket_name, Key=key, Body=data)  # as a server that drops If-None-Match
        return True

    with monkeypatch.context() as patch:
        patch.setattr(fs.S3Store, "_put_if_absent", unconditional)
        with pytest.raises(mc.UnsupportedFeatureError, match=r"ignores conditional writes.*put-if-absent"):
            create(f"s3://{bucket}/wh/db.db/t")
    assert objects(bucket) == [], "the probe is removed"
    create(f"s3://{bucket}/wh/db.db/t")


def test_a_filesystem_without_put_if_absent_reads_but_never_commits(tmp_path):
    # A filesystem merge-core knows no atomic create-if-absent for (a local folder seen
    # through pyarrow's SubTreeFileSystem stands for any such one).
    other = pafs.SubTreeFileSystem(str(tmp_path / "elsewhere"), pafs.LocalFileSystem())
    (tmp_path / "elsewhere").mkdir()
    root = "wh/db.db/t"
    with pytest.raises(mc.UnsupportedFeatureError, match=r"no atomic create-if-absent \(put-if-absent\)"):
        create(root, filesystem=other)

    local = create(tmp_path / "t")
    local.write(batch(1))
    local.write(batch(2))
    pafs.copy_files(str(tmp_path / "t"), root, destination_filesystem=other)
    table = mc.Table.open(root, filesystem=other)
    assert rows(table) == rows(local)
    listing = sorted(i.path for i in other.get_file_info(pafs.FileSelector(root, recursive=True)))
    with pytest.raises(mc.UnsupportedFeatureError, match="put-if-absent"):
        table.write(batch(3))
    after = sorted(i.path for i in other.get_file_info(pafs.FileSelector(root, recursive=True)))
    assert after == listing, "nothing of the write is left"
    assert rows(table) == rows(local)


def test_the_cli_creates_writes_and_describes_a_table_on_s3(bucket, tmp_path):
    cli = shutil.which("merge-core", path=os.path.dirname(sys.executable)) or "merge-core"
    pq.write_table(batch(1), tmp_path / "in.parquet")
    uri = f"s3://{bucket}/wh/db.db/t"

    def run(*args):
        result = subprocess.run([cli, *args], capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
        return result.stdout

    run("table", "create", uri, "--like", str(tmp_path / "in.parquet"), "-k", "k", "--partition-by", "p")
    run("table", "write", uri, str(tmp_path / "in.parquet"))
    run("table", "read", uri, "-o", str(tmp_path / "out.parquet"))
    local = create(tmp_path / "t")
    local.write(batch(1))
    out = pq.read_table(tmp_path / "out.parquet").select(SCHEMA.names)
    assert out.sort_by([("p", "ascending"), ("k", "ascending")]).to_pylist() == rows(local)
    assert f'"path": "{uri}"' in run("table", "info", uri, "--json")


def test_pypaimon_reads_a_table_on_s3(bucket, endpoint, tmp_path):
    pypaimon = pytest.importorskip("pypaimon")
    table = create(f"s3://{bucket}/wh/db.db/t")
    table.write(batch(1))
    table.write(batch(2))
    catalog = pypaimon.CatalogFactory.create(
        {
            "warehouse": f"s3://{bucket}/wh",
            "fs.s3.endpoint": endpoint,
            "fs.s3.accessKeyId": CREDENTIALS["AWS_ACCESS_KEY_ID"],
            "fs.s3.accessKeySecret": CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            "fs.s3.region": "us-east-1",
        }
    )
    theirs = catalog.get_table("db.t")
    builder = theirs.new_read_builder()
    read = builder.new_read().to_arrow(builder.new_scan().plan().splits()).select(SCHEMA.names)
    assert read.sort_by([("p", "ascending"), ("k", "ascending")]).to_pylist() == rows(table)


def test_a_missing_data_object_is_named(bucket):
    table = create(f"s3://{bucket}/wh/db.db/t")
    table.write(batch(1))
    gone = next(k for k in objects(bucket) if "/data-" in k)
    boto3.client("s3").delete_object(Bucket=bucket, Key=gone)
    with pytest.raises(mc.CorruptTableError, match=f"s3://{bucket}/{gone} is missing"):
        table.read().read_all()


def test_upsert_files_reads_and_writes_s3_as_local_files(spark, bucket, endpoint, tmp_path):
    """`upsert_files` with s3:// inputs and output, on Spark: the executors reach the store
    through the explicit filesystem (pickled to them), read each input byte once, and
    leave only the parts; the rows equal those of the same upsert on local files."""
    import merge_core.spark as mcs
    from merge_core import contest

    local = contest.generate(str(tmp_path / "in"), rows=2000, increments=4, seed=3)
    s3 = pafs.S3FileSystem(endpoint_override=endpoint, access_key="testing", secret_key="testing", region="us-east-1")
    inputs = []
    for path in local:
        inputs.append(f"s3://{bucket}/in/{os.path.basename(path)}")
        pafs.copy_files(path, inputs[-1][len("s3://") :], destination_filesystem=s3)
    before = objects(bucket)
    counts = mcs.upsert_files(spark, inputs, f"s3://{bucket}/out", "uuid", buckets=3, filesystem=s3, **contest.CONTEST)
    want = mcs.upsert_files(spark, local, str(tmp_path / "out"), "uuid", buckets=3, **contest.CONTEST)
    assert objects(bucket) == sorted(
        [*before, "out/part-00000.parquet", "out/part-00001.parquet", "out/part-00002.parquet"]
    )
    got = pq.read_table(f"{bucket}/out", filesystem=s3).sort_by("uuid")
    assert got.to_pylist() == pq.read_table(tmp_path / "out").sort_by("uuid").to_pylist()
    assert counts == want and counts["bytes_read"] == counts["input_bytes"] > 0


def test_upsert_files_names_bad_paths_and_leaves_nothing(spark, bucket, endpoint, tmp_path):
    import merge_core.spark as mcs
    from merge_core import contest

    s3 = pafs.S3FileSystem(endpoint_override=endpoint, access_key="testing", secret_key="testing", region="us-east-1")
    local = contest.generate(str(tmp_path / "in"), rows=100, increments=1, seed=3)
    with pytest.raises(mc.InvalidInputError, match=f"no such file: s3://{bucket}/in/missing.parquet"):
        mcs.upsert_files(spark, [f"s3://{bucket}/in/missing.parquet"], f"s3://{bucket}/out", "uuid", filesystem=s3)
    with pytest.raises(mc.UnsupportedFeatureError, match="gs://"):
        mcs.upsert_files(spark, [f"gs://{bucket}/in/a.parquet"], str(tmp_path / "out"), "uuid")
    pafs.copy_files(local[0], f"{bucket}/out/other.parquet", destination_filesystem=s3)
    with pytest.raises(mc.InvalidInputError, match="is not an empty folder"):
        mcs.upsert_files(spark, [f"s3://{bucket}/out/other.parquet"], f"s3://{bucket}/out", "uuid", filesystem=s3)
    assert objects(bucket) == ["out/other.parquet"]
    assert not os.path.exists("gs:") and not (tmp_path / "out").exists()


def test_a_failed_upsert_files_leaves_no_object(spark, bucket, endpoint):
    import merge_core.spark as mcs

    s3 = pafs.S3FileSystem(endpoint_override=endpoint, access_key="testing", secret_key="testing", region="us-east-1")
    inputs = [f"s3://{bucket}/in/{i}.parquet" for i in range(2)]
    for path in inputs:  # key 1's sum overflows int64 in a task of the second stage
        pq.write_table(pa.table({"k": [1, 2], "n": [2**62, 1]}), path[len("s3://") :], filesystem=s3)
    with pytest.raises(Exception, match="overflow"):
        mcs.upsert_files(spark, inputs, f"s3://{bucket}/out", "k", merge=mc.Aggregate({"n": "sum"}), filesystem=s3)
    assert objects(bucket) == ["in/0.parquet", "in/1.parquet"]


def test_merge_reads_s3_runs_as_it_reads_local_files(bucket, endpoint, tmp_path):
    s3 = pafs.S3FileSystem(endpoint_override=endpoint, access_key="testing", secret_key="testing", region="us-east-1")
    runs = [batch(seed, first_key=0).group_by("k").aggregate([("v", "max")]).sort_by("k") for seed in (1, 2, 3)]
    local = []
    for i, run in enumerate(runs):
        local.append(str(tmp_path / f"{i}.parquet"))
        pq.write_table(run, local[-1], row_group_size=17)  # several row groups per run
        pq.write_table(run, f"{bucket}/runs/{i}.parquet", filesystem=s3, row_group_size=17)
    want = mc.merge(local, key="k", batch_size=50).read_all()
    assert want.num_rows > 0
    uris = [f"s3://{bucket}/runs/{i}.parquet" for i in range(3)]
    assert mc.merge(uris, key="k", batch_size=50).read_all().equals(want)  # the AWS_* variables
    paths = [f"{bucket}/runs/{i}.parquet" for i in range(3)]
    assert mc.merge(paths, key="k", batch_size=50, filesystem=s3).read_all().equals(want)
    with pytest.raises(mc.InvalidInputError, match=f"no such file: s3://{bucket}/runs/9.parquet"):
        mc.merge([*uris, f"s3://{bucket}/runs/9.parquet"], key="k")
    with pytest.raises(mc.UnsupportedFeatureError, match="gs://"):
        mc.merge([f"gs://{bucket}/runs/0.parquet"], key="k")


def test_spark_writes_and_reads_an_s3_table_through_its_filesystem(spark, bucket, endpoint, monkeypatch, tmp_path):
    """The executors open the table with the driver's filesystem (they do not see the
    test's AWS_* variables: local Spark's workers were started before they were set)."""
    import merge_core.spark as mcs

    s3 = pafs.S3FileSystem(endpoint_override=endpoint, access_key="testing", secret_key="testing", region="us-east-1")
    table = create(f"s3://{bucket}/wh/db.db/t", filesystem=s3)
    local = create(tmp_path / "t")
    for seed in (4, 5):
        data = batch(seed)
        mcs.write(spark.createDataFrame(data.to_pandas()), table)
        local.write(data)
    got = mcs.read(spark, table).toPandas()
    assert sorted(got.to_dict("records"), key=lambda r: (r["p"], r["k"])) == rows(local)
    assert rows(table) == rows(local)
