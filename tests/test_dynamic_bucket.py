"""Writes to dynamic-bucket tables (``bucket = -1``): merge-core and pypaimon take turns on
tables pypaimon created; every key keeps one bucket whichever writer wrote it, the HASH
index files match pypaimon's for the same rows, and merge-core, pypaimon and
pypaimon-rust read the rows of a plain-Python model after every step."""

from __future__ import annotations

import json
import os
import signal
import struct
import subprocess
import sys
from pathlib import Path

import fastavro
import merge_core as mc
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import pypaimon_commit, pypaimon_rust_rows
from hypothesis import given, settings
from hypothesis import strategies as st
from merge_core import _native
from test_expire import catalog, identifier

pypaimon = pytest.importorskip("pypaimon")
pytest.importorskip("pypaimon_rust")

SCHEMA = pa.schema([pa.field("k", pa.int64(), False), pa.field("p", pa.string(), False), ("v", pa.int64())])
Model = dict[tuple[str, int], int]


def create(root: Path, **options: str) -> Path:
    """A dynamic-bucket table partitioned by ``p``, keyed by (p, k), created by pypaimon."""
    cat = catalog(root)
    cat.create_database(root.parent.name[:-3], True)
    schema = pypaimon.Schema.from_pyarrow_schema(
        SCHEMA, partition_keys=["p"], primary_keys=["p", "k"], options={"bucket": "-1", **options}
    )
    cat.create_table(identifier(root), schema, False)
    return root


def rows(model: Model) -> list[tuple]:
    return sorted((k, p, v) for (p, k), v in model.items())


def data(model_rows: list[tuple]) -> pa.Table:
    return pa.table(
        {"k": [r[0] for r in model_rows], "p": [r[1] for r in model_rows], "v": [r[2] for r in model_rows]},
        schema=SCHEMA,
    )


def pypaimon_write(root: Path, model_rows: list[tuple]) -> None:
    table = catalog(root).get_table(identifier(root))
    pypaimon_commit(table, [{"k": k, "p": p, "v": v} for k, p, v in model_rows], SCHEMA)


def as_tuples(dicts: list[dict]) -> list[tuple]:
    return sorted((r["k"], r["p"], r["v"]) for r in dicts)


def check_reads(root: Path, model: Model) -> None:
    """merge-core, pypaimon and pypaimon-rust read the model's rows."""
    expected = rows(model)
    assert as_tuples(mc.Table.open(root).read().read_all().to_pylist()) == expected
    table = catalog(root).get_table(identifier(root))
    builder = table.new_read_builder()
    assert as_tuples(builder.new_read().to_arrow(builder.new_scan().plan().splits()).to_pylist()) == expected
    assert as_tuples(pypaimon_rust_rows(root)) == expected


def key_hash(k: int) -> int:
    return _native.paimon_row_hashes(pa.record_batch({"k": pa.array([k], pa.int64())}), ["k"])[0].as_py()


def hash_index(root: Path) -> dict[tuple[str, int], list[int]]:
    """The latest snapshot's HASH index: (partition, bucket) -> hashes, as stored."""
    snapshots = sorted(root.glob("snapshot/snapshot-*"), key=lambda p: int(p.name.split("-")[1]))
    name = json.loads(snapshots[-1].read_text()).get("indexManifest") if snapshots else None
    out: dict[tuple[str, int], list[int]] = {}
    if name is None:
        return out
    with open(root / "manifest" / name, "rb") as f:
        for entry in fastavro.reader(f):
            if entry["_INDEX_TYPE"] != "HASH":
                continue
            partition = entry["_PARTITION"][12:].split(b"\x00")[0].decode()  # one short string field
            (path,) = root.rglob(entry["_FILE_NAME"])  # index/, or the bucket's directory
            payload = path.read_bytes()
            assert len(payload) == 4 * entry["_ROW_COUNT"] == entry["_FILE_SIZE"]
            assert (partition, entry["_BUCKET"]) not in out, "one HASH file per bucket"
            out[(partition, entry["_BUCKET"])] = list(struct.unpack(f">{len(payload) // 4}i", payload))
    return out


def placement(root: Path) -> dict[tuple[str, int], set[int]]:
    """The buckets each key's stored versions are in, by (partition, key)."""
    out: dict[tuple[str, int], set[int]] = {}
    for f in mc.Table.open(root).files():
        for k in pq.ParquetFile(root / f["path"]).read(columns=["k"]).column("k").to_pylist():
            out.setdefault((f["partition"][0], k), set()).add(f["bucket"])
    return out


def check_placement(root: Path, target: int | None = None, max_buckets: int | None = None) -> dict:
    """Each key lives in one bucket, which the HASH index names for its hash; returns
    the key -> bucket map. With ``target``, no bucket holds more keys unless every bucket
    allowed (``max_buckets``) is taken."""
    where = placement(root)
    index = hash_index(root)
    by_hash = {(p, h): b for (p, b), hashes in index.items() for h in hashes}
    assert sum(map(len, index.values())) == len(by_hash), "a hash in two buckets of a partition"
    for (p, k), buckets in where.items():
        assert len(buckets) == 1, f"key {k} of {p} is in buckets {buckets}"
        assert by_hash[(p, key_hash(k))] == next(iter(buckets))
    if max_buckets is not None:
        for p in {p for p, _ in index}:
            assert {b for q, b in index if q == p} <= set(range(max_buckets))
    elif target is not None:
        assert all(len(h) <= target for h in index.values())
    return {key: next(iter(b)) for key, b in where.items()}


def test_writers_take_turns_and_keys_keep_their_buckets(tmp_path):
    root = create(tmp_path / "db.db" / "t", **{"dynamic-bucket.target-row-num": "3"})
    model: Model = {}

    def apply(batch: list[tuple]) -> None:
        model.update({(p, k): v for k, p, v in batch})

    first = [(k, "a" if k % 3 else "b", k) for k in range(10)]
    pypaimon_write(root, first)
    apply(first)
    check_reads(root, model)
    before = check_placement(root, target=3)

    table = mc.Table.open(root)
    second = [(k, "a" if k % 3 else "b", 100 + k) for k in range(5, 15)]  # 5 updates, 5 new keys
    table.write(data(second))
    apply(second)
    check_reads(root, model)
    after = check_placement(root, target=3)
    assert {key: after[key] for key in before} == before  # updates land in their keys' buckets
    assert len({b for (p, _), b in after.items() if p == "a"}) > 2  # several buckets filled

    third = [(k, "a" if k % 3 else "b", 200 + k) for k in range(12, 20)]
    pypaimon_write(root, third)
    apply(third)
    check_reads(root, model)
    final = check_placement(root, target=3)
    assert {key: final[key] for key in after} == after

    table.delete(pa.table({"k": [1, 19], "p": ["a", "a"]}))
    del model[("a", 1)], model[("a", 19)]
    check_reads(root, model)
    assert check_placement(root, target=3) == final  # a delete's row goes to its key's bucket


def test_hash_index_files_are_pypaimons(tmp_path):
    """The same commits by merge-core and by pypaimon give the same HASH files (the same
    hashes in each bucket, ascending, 4 bytes each) and the same data placement, however
    merge-core's write is cut into batches."""
    options = {"dynamic-bucket.target-row-num": "4"}
    ours, theirs = create(tmp_path / "db.db" / "ours", **options), create(tmp_path / "db.db" / "theirs", **options)
    commits = [
        [(k, ["a", "b", "c"][k % 3], k) for k in range(0, 30, 2)],
        [(k, ["a", "b", "c"][k % 3], -k) for k in range(1, 40, 3)],
        [(k, "a", 7) for k in [5, 50, 51, 52, 53, 54, 55, 56, 0]],
    ]
    table = mc.Table.open(ours)
    for commit in commits:
        with table.new_write() as write:  # in batches of 4 rows: new keys are placed in the order met
            for batch in data(commit).to_batches(max_chunksize=4):
                write.write(batch)
            table.commit(write.prepare_commit())
        pypaimon_write(theirs, commit)
        assert hash_index(ours) == hash_index(theirs)
        assert all(h == sorted(h) for h in hash_index(ours).values())
        assert check_placement(ours, target=4) == check_placement(theirs, target=4)
    assert as_tuples(table.read().read_all().to_pylist()) == as_tuples(
        mc.Table.open(theirs).read().read_all().to_pylist()
    )


def test_max_buckets_reached_new_keys_join_existing_buckets(tmp_path):
    options = {"dynamic-bucket.target-row-num": "2", "dynamic-bucket.max-buckets": "3"}
    root = create(tmp_path / "db.db" / "t", **options)
    table = mc.Table.open(root)
    model: Model = {}
    batch = [(k, "a", k) for k in range(20)]
    table.write(data(batch))
    model.update({(p, k): v for k, p, v in batch})
    check_reads(root, model)
    where = check_placement(root, max_buckets=3)
    assert set(where.values()) == {0, 1, 2}
    # Two keys a bucket in arrival order, then (Paimon: at random) the bucket their hash picks.
    assert where == {("a", k): k // 2 if k < 6 else key_hash(k) % 3 for k in range(20)}
    again = create(
        tmp_path / "db.db" / "again", **{"dynamic-bucket.target-row-num": "2", "dynamic-bucket.max-buckets": "3"}
    )
    mc.Table.open(again).write(data(batch))
    assert check_placement(again, max_buckets=3) == where
    # pypaimon updates them in place and adds keys to the same three buckets.
    more = [(k, "a", -k) for k in range(15, 30)]
    pypaimon_write(root, more)
    model.update({(p, k): v for k, p, v in more})
    check_reads(root, model)
    after = check_placement(root, max_buckets=3)
    assert {key: after[key] for key in where} == where


def test_compaction_keeps_keys_in_their_buckets(tmp_path):
    root = create(tmp_path / "db.db" / "t", **{"dynamic-bucket.target-row-num": "3"})
    table = mc.Table.open(root)
    model: Model = {}
    for i in range(3):
        batch = [(k, "a" if k % 2 else "b", 10 * i + k) for k in range(i, 9 + i)]
        table.write(data(batch))
        model.update({(p, k): v for k, p, v in batch})
    before = check_placement(root, target=3)
    index = hash_index(root)
    assert table.compact(full=True)["files_merged"] > 0
    assert all(f["level"] > 0 for f in table.files())
    check_reads(root, model)
    assert check_placement(root, target=3) == before
    assert hash_index(root) == index  # a compaction leaves the index as it was
    batch = [(k, "a" if k % 2 else "b", 999) for k in range(0, 14)]
    pypaimon_write(root, batch)
    model.update({(p, k): v for k, p, v in batch})
    check_reads(root, model)
    after = check_placement(root, target=3)
    assert {key: after[key] for key in before} == before


def test_racing_writes_that_place_keys_in_one_partition_conflict(tmp_path):
    root = create(tmp_path / "db.db" / "t", **{"dynamic-bucket.target-row-num": "3"})
    table = mc.Table.open(root)
    table.write(data([(1, "a", 1), (2, "b", 2)]))
    first, second, other = table.new_write(), table.new_write(), table.new_write()
    first.write(data([(10, "a", 10), (11, "a", 11)]))
    second.write(data([(20, "a", 20), (21, "a", 21)]))  # new keys of the same partition, placed from the same index
    other.write(data([(30, "b", 30), (2, "b", -2)]))  # another partition
    firsts, seconds, others = first.prepare_commit(), second.prepare_commit(), other.prepare_commit()
    table.commit(firsts)
    refused = [root / "index" / m.hash_index.entry["_FILE_NAME"] for m in seconds if m.hash_index]
    assert refused and all(path.exists() for path in refused)
    with pytest.raises(mc.CommitConflictError, match="another writer placed keys"):
        table.commit(seconds)
    assert not any(path.exists() for path in refused)  # the refused write's files are removed
    table.commit(others)
    model = {("a", 1): 1, ("b", 2): -2, ("a", 10): 10, ("a", 11): 11, ("b", 30): 30}
    check_reads(root, model)
    check_placement(root, target=3)
    table.write(data([(20, "a", 20), (21, "a", 21)]))  # written again, it commits
    model.update({("a", 20): 20, ("a", 21): 21})
    check_reads(root, model)
    check_placement(root, target=3)


def test_hash_files_kept_in_the_bucket_directories(tmp_path):
    """With ``index-file-in-data-file-dir``, HASH files live beside the bucket's data
    files, where pypaimon writes and reads them too."""
    root = create(
        tmp_path / "db.db" / "t", **{"dynamic-bucket.target-row-num": "2", "index-file-in-data-file-dir": "true"}
    )
    model: Model = {("a", k): k for k in range(5)}
    pypaimon_write(root, rows_of_model(model))
    mc.Table.open(root).write(data([(k, "a", -k) for k in range(3, 9)]))
    model.update({("a", k): -k for k in range(3, 9)})
    pypaimon_write(root, [(k, "a", 10 * k) for k in range(7, 12)])
    model.update({("a", k): 10 * k for k in range(7, 12)})
    check_reads(root, model)
    check_placement(root, target=2)
    assert not (root / "index").exists()
    for (_, bucket), _ in hash_index(root).items():
        assert list((root / "p=a" / f"bucket-{bucket}").glob("index-*"))


def test_keys_whose_rows_fold_away_keep_the_bucket_they_were_given(tmp_path):
    """With ignore-delete, deletes of new keys leave no row, but their keys were placed
    (Paimon's writers index every row they are given): the commit holds only HASH files,
    and the keys keep those buckets when pypaimon writes them."""
    root = create(tmp_path / "db.db" / "t", **{"ignore-delete": "true", "dynamic-bucket.target-row-num": "2"})
    table = mc.Table.open(root)
    table.write(data([(1, "a", 1)]))
    assert table.delete(pa.table({"k": [5, 6, 7], "p": ["a", "a", "a"]})) == {"snapshot": 2, "rows": 0, "files": 0}
    index = hash_index(root)
    assert sorted(h for hashes in index.values() for h in hashes) == sorted(map(key_hash, [1, 5, 6, 7]))
    check_reads(root, {("a", 1): 1})
    pypaimon_write(root, [(k, "a", k) for k in (5, 6, 7)])
    check_reads(root, {("a", k): k for k in (1, 5, 6, 7)})
    where = check_placement(root, target=2)
    assert {k: b for (_, k), b in where.items()} == {
        k: b for (_, b), hashes in index.items() for k in (1, 5, 6, 7) if key_hash(k) in hashes
    }


def test_a_cross_partition_table_is_refused_by_name(tmp_path):
    root = tmp_path / "db.db" / "t"
    cat = catalog(root)
    cat.create_database("db", True)
    schema = pypaimon.Schema.from_pyarrow_schema(
        SCHEMA, partition_keys=["p"], primary_keys=["k"], options={"bucket": "-1"}
    )
    cat.create_table(identifier(root), schema, False)
    with pytest.raises(mc.UnsupportedFeatureError, match="cross-partition updates"):
        mc.Table.open(root).write(data([(1, "a", 1)]))
    assert not list(root.rglob("data-*")) and not list(root.rglob("index-*"))


KILL_BEFORE_CLAIM = """
import os, signal, sys
import pyarrow as pa
import merge_core as mc
from merge_core.paimon import _commit
_commit.Committer._claim = lambda self, *a: os.kill(os.getpid(), signal.SIGKILL)
schema = pa.schema([pa.field("k", pa.int64(), False), pa.field("p", pa.string(), False), ("v", pa.int64())])
keys = list(range(int(sys.argv[2]), int(sys.argv[3])))
mc.Table.open(sys.argv[1]).write(pa.table({"k": keys, "p": ["a"] * len(keys), "v": keys}, schema=schema))
"""


def test_a_write_killed_before_its_snapshot_loses_nothing(tmp_path):
    """Killed once its data files, HASH files, manifests and index manifest are written,
    before the snapshot: readers see the table as it was, the next writers (merge-core and
    pypaimon) place keys from the committed index, and expire clears what was left."""
    root = create(tmp_path / "db.db" / "t", **{"dynamic-bucket.target-row-num": "3"})
    table = mc.Table.open(root)
    model: Model = {("a", k): k for k in range(5)}
    table.write(data(rows_of_model(model)))
    before_index = hash_index(root)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    run = subprocess.run([sys.executable, "-c", KILL_BEFORE_CLAIM, str(root), "3", "12"], env=env)
    assert run.returncode == -signal.SIGKILL
    assert len(list((root / "index").iterdir())) > len(before_index)  # the killed write's files are there
    check_reads(root, model)
    assert hash_index(root) == before_index
    batch = [(k, "a", 100 + k) for k in range(3, 12)]
    table.write(data(batch))
    model.update({(p, k): v for k, p, v in batch})
    pypaimon_write(root, [(k, "a", -k) for k in range(10, 16)])
    model.update({("a", k): -k for k in range(10, 16)})
    check_reads(root, model)
    check_placement(root, target=3)
    table.expire(keep_snapshots=1, orphan_age=0)
    index = hash_index(root)
    assert len(list((root / "index").iterdir())) == len(index)  # the orphans went, the live HASH files stayed
    check_reads(root, model)


def rows_of_model(model: Model) -> list[tuple]:
    return [(k, p, v) for (p, k), v in model.items()]


STEP = st.one_of(
    st.tuples(st.just("mc"), st.lists(st.tuples(st.integers(0, 30), st.sampled_from("ab"), st.integers(0, 9)))),
    st.tuples(st.just("pypaimon"), st.lists(st.tuples(st.integers(0, 30), st.sampled_from("ab"), st.integers(0, 9)))),
    st.tuples(st.just("delete"), st.lists(st.tuples(st.integers(0, 30), st.sampled_from("ab")), max_size=5)),
    st.tuples(st.just("compact"), st.none()),
)


@settings(max_examples=25)
@given(
    steps=st.lists(STEP, min_size=1, max_size=5),
    target=st.integers(1, 6),
    max_buckets=st.sampled_from([None, 2, 4]),
)
def test_interleaved_writers_keep_one_bucket_per_key(tmp_path_factory, steps, target, max_buckets):
    options = {"dynamic-bucket.target-row-num": str(target)}
    if max_buckets:
        options["dynamic-bucket.max-buckets"] = str(max_buckets)
    root = create(tmp_path_factory.mktemp("w") / "db.db" / "t", **options)
    table = mc.Table.open(root)
    model: Model = {}
    seen: dict = {}
    for kind, arg in steps:
        if kind in ("mc", "pypaimon") and arg:
            last = {(p, k): (k, p, v) for k, p, v in arg}  # one version of a key per commit
            if kind == "mc":
                table.write(data(list(last.values())))
            else:
                pypaimon_write(root, list(last.values()))
            model.update({key: r[2] for key, r in last.items()})
        elif kind == "delete" and arg:
            table.delete(pa.table({"k": [k for k, _ in arg], "p": [p for _, p in arg]}))
            for k, p in arg:
                model.pop((p, k), None)
        elif kind == "compact":
            table.compact(full=True)
        where = check_placement(root, max_buckets=max_buckets) if max_buckets else check_placement(root, target)
        assert {key: where[key] for key in seen if key in where} == {k: b for k, b in seen.items() if k in where}
        seen.update(where)
        assert as_tuples(table.read().read_all().to_pylist()) == rows(model)
    check_reads(root, model)


def test_spark_write_refuses_dynamic_buckets_before_any_task(tmp_path):
    mcs = pytest.importorskip("merge_core.spark")
    root = create(tmp_path / "db.db" / "t")
    with pytest.raises(mc.UnsupportedFeatureError, match="its tasks would each place new keys"):
        mcs.write(None, root)  # refused on the driver, before the DataFrame is looked at


def test_data_in_a_bucket_the_index_does_not_cover_is_refused(tmp_path):
    """A partition whose data files are in a bucket without a HASH file: its keys' bucket
    is unknown, so no write places keys there (another partition still takes writes)."""
    root = create(tmp_path / "db.db" / "t", **{"dynamic-bucket.target-row-num": "2"})
    table = mc.Table.open(root)
    table.write(data([(k, "a", k) for k in range(5)] + [(1, "b", 1)]))
    snapshot = root / "snapshot" / "snapshot-1"
    document = json.loads(snapshot.read_text())
    with open(root / "manifest" / document["indexManifest"], "rb") as f:
        reader = fastavro.reader(f)
        schema, entries = reader.writer_schema, list(reader)
    kept = [e for e in entries if e["_BUCKET"] != 1]  # partition a's second bucket (b has one bucket)
    assert len(kept) == len(entries) - 1
    with open(root / "manifest" / "index-manifest-damaged", "wb") as f:
        fastavro.writer(f, schema, kept)
    snapshot.write_text(json.dumps({**document, "indexManifest": "index-manifest-damaged"}))
    with pytest.raises(mc.CorruptTableError, match=r"buckets \[1\] of a partition that its HASH index does not cover"):
        table.write(data([(9, "a", 9)]))
    table.write(data([(9, "b", 9)]))
    check_reads(root, {**{("a", k): k for k in range(5)}, ("b", 1): 1, ("b", 9): 9})


def test_open_buckets_are_tried_in_java_hash_map_order():
    """Paimon tries a partition's not-full buckets in the order of a Java HashMap of their
    numbers: by slot (number modulo the capacity: 16, doubled while over three quarters
    full), then in the order put. Worked out by hand from HashMap's rules."""
    from merge_core.paimon._dynamic_bucket import _java_hash_map_order

    assert _java_hash_map_order([20, 3, 36, 4]) == [3, 20, 36, 4]  # slots 4, 3, 4, 4 of 16
    assert _java_hash_map_order(list(range(12, -1, -1))) == list(range(13))  # 13 buckets: capacity 32
    assert _java_hash_map_order([40, 24, *range(8)]) == [*range(8), 40, 24]  # one slot: the order put


def test_merge_core_creates_dynamic_bucket_tables_too(tmp_path):
    root = tmp_path / "db.db" / "t"
    table = mc.Table.create(root, SCHEMA, key="k", partition_by="p", options={"bucket": "-1"})
    table.write(data([(1, "a", 1), (2, "a", 2)]))
    # `buckets=-1` makes the same table as the option.
    assert mc.Table.create(tmp_path / "by-argument", SCHEMA, key="k", partition_by="p", buckets=-1).options == (
        table.options
    )
    odd = mc.Table.create(
        tmp_path / "odd", SCHEMA, key="k", options={"bucket": "-1", "dynamic-bucket.max-buckets": "0"}
    )
    with pytest.raises(mc.InvalidInputError, match="'dynamic-bucket.max-buckets' must be -1 .* got 0"):
        odd.write(data([(1, "a", 1)]))  # refused before anything is written, as Paimon's writers fail
    assert not list((tmp_path / "odd").rglob("*.parquet"))
    pypaimon_write(root, [(2, "a", 20), (3, "a", 3)])
    check_reads(root, {("a", 1): 1, ("a", 2): 20, ("a", 3): 3})
    check_placement(root)
