"""mc.Table (a Paimon table): random histories of writes, deletes and compactions against
a dict oracle, older snapshots, projections, the files' layout, expire, and bad input.
The real peers reading and writing these tables are in test_paimon_write.py."""

from __future__ import annotations

import merge_core as mc
import oracle
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from helpers import pypaimon_rust_rows
from hypothesis import given, settings
from hypothesis import strategies as st

SCHEMA = pa.schema([("k", pa.int64()), ("p", pa.string()), ("ts", pa.int64()), ("v", pa.int64())])
PARTITIONS = ["a", "b", ""]  # partition columns are in the primary key: never null

CONFIGS = {
    "deduplicate": dict(merge="deduplicate", sequence=None, deletes=True),
    "deduplicate-seq": dict(merge="deduplicate", sequence="ts", deletes=True),
    "partial-update": dict(merge="partial-update", sequence=None, deletes=False),
    "aggregate": dict(merge=mc.Aggregate({"v": "sum", "ts": "max"}), sequence=None, deletes=False),
}


def oracle_spec(config: dict) -> tuple[str, dict]:
    merge = config["merge"]
    if isinstance(merge, mc.Aggregate):
        return "aggregate", {"fields": {"v": {"function": "sum"}, "ts": {"function": "max"}}}
    return merge, {}


rows_st = st.lists(
    st.tuples(
        st.integers(0, 12),
        st.sampled_from(PARTITIONS),
        st.integers(0, 3),
        st.one_of(st.none(), st.integers(-50, 50)),
        st.booleans(),
    ),
    max_size=25,
)
ops_st = st.lists(
    st.one_of(
        st.tuples(st.just("write"), rows_st),
        st.tuples(st.just("compact"), st.booleans()),
    ),
    min_size=1,
    max_size=7,
)


class Model:
    """The expected table: every write is a run of the oracle, in commit order."""

    def __init__(self, config: dict):
        self.config = config
        self.writes: list[list[dict]] = []

    def add(self, rows: list[dict]) -> None:
        w = len(self.writes)
        # The table orders versions by sequence, then by the order of writing (Paimon's
        # _SEQUENCE_NUMBER): by write, then by position within the write.
        self.writes.append([{**r, "w": w, "pos": i} for i, r in enumerate(rows)])

    def compacted(self, table: mc.Table, buckets: set[tuple]) -> None:
        """A compaction merged ``buckets`` ((partition, bucket) pairs) into one run without
        deletes, as Paimon's does. With a sequence field that shows: a later write with
        an older sequence number brings back a key whose delete was dropped."""
        if not self.config["sequence"]:
            return  # without one, a later write is newer anyway
        rows = [r for run in self.writes for r in run]
        if not rows:
            return
        ids = table.bucket_ids(pa.RecordBatch.from_pylist(rows, schema=SCHEMA)).to_pylist()
        inside = {id(r) for r, b in zip(rows, ids, strict=True) if ((r["p"],), b) in buckets}
        name, options = oracle_spec(self.config)
        merged = oracle.merge(
            [[r for r in rows if id(r) in inside]],
            key=["p", "k"],
            sequence=["ts", "w", "pos"],
            row_kind="op",
            merge=name,
            key_order=nulls_last,
            **options,
        )
        outside = [[r for r in run if id(r) not in inside] for run in self.writes]
        self.writes = [[{**r, "op": "+I"} for r in merged], *outside]

    def expected(self) -> list[dict]:
        runs = self.writes
        name, options = oracle_spec(self.config)
        sequence = ["ts", "w", "pos"] if self.config["sequence"] else []
        merged = oracle.merge(
            runs, key=["p", "k"], sequence=sequence, row_kind="op", merge=name, key_order=nulls_last, **options
        )
        out = [{c: row[c] for c in SCHEMA.names} for row in merged]
        return sorted(out, key=sort_key)


def bucket_files(table: mc.Table) -> dict[tuple, set[str]]:
    out: dict[tuple, set[str]] = {}
    for f in table.files():
        out.setdefault((f["partition"], f["bucket"]), set()).add(f["path"])
    return out


def nulls_last(value):
    return (value is None, "" if value is None else value)


def sort_key(row: dict) -> tuple:
    return (row["p"] is None, row["p"] or "", row["k"])


def table_rows(stream) -> list[dict]:
    return sorted(stream.read_all().to_pylist(), key=sort_key)


def make_rows(raw, config) -> list[dict]:
    return [
        {"k": k, "p": p, "ts": ts, "v": v, "op": "-D" if delete and config["deletes"] else "+I"}
        for k, p, ts, v, delete in raw
    ]


@pytest.mark.parametrize("name", sorted(CONFIGS))
@settings(max_examples=60)
@given(
    ops=ops_st,
    buckets=st.sampled_from([1, 3]),
    columns=st.lists(st.sampled_from(SCHEMA.names), min_size=1, max_size=4, unique=True),
)
def test_random_histories_match_the_oracle(tmp_path_factory, name, ops, buckets, columns):
    config = CONFIGS[name]
    path = tmp_path_factory.mktemp("t") / "table"
    table = mc.Table.create(
        path, SCHEMA, key="k", partition_by="p", buckets=buckets, merge=config["merge"], sequence=config["sequence"]
    )
    model = Model(config)
    expected_at: dict[int, list[dict]] = {}  # snapshot id -> its rows
    for op, arg in ops:
        if op == "write":
            rows = make_rows(arg, config)
            if not config["deletes"]:  # without row kinds, a write folds its versions of a key
                rows = list({(r["p"], r["k"]): r for r in rows}.values())
            data = pa.Table.from_pylist(rows, schema=SCHEMA.append(pa.field("op", pa.string())))
            result = table.write(data, row_kind="op") if config["deletes"] else table.write(data.drop(["op"]))
            if result["snapshot"] is None:
                assert not rows, "only an empty write commits nothing"
                continue
            model.add(rows)
        else:
            before = bucket_files(table)
            result = table.compact(full=arg)
            after = bucket_files(table)
            model.compacted(table, {b for b in before.keys() | after.keys() if before.get(b) != after.get(b)})
        if result["snapshot"] is not None:
            expected_at[result["snapshot"]] = model.expected()
        assert table_rows(table.read()) == model.expected()
    for snapshot, expected in expected_at.items():
        assert table_rows(table.read(snapshot=snapshot)) == expected, snapshot
    # A projected read builds only the columns it returns (in the order asked).
    projected = table.read(columns=columns).read_all()
    assert projected.schema.names == columns
    assert projected_rows(projected.to_pylist(), columns) == projected_rows(model.expected(), columns)


def projected_rows(rows: list[dict], columns: list[str]) -> list[tuple]:
    return sorted((tuple(row[c] for c in columns) for row in rows), key=repr)


def test_compactions_leave_one_top_level_file_per_bucket_without_deletes(tmp_path):
    # write-only: the writes leave their runs to compact(), whose partial pick this checks
    table = mc.Table.create(
        tmp_path / "t", SCHEMA, key="k", partition_by="p", buckets=2, options={"write-only": "true"}
    )
    for i in range(3):
        keys = list(range(i, 40))
        parts = ["a" if k % 2 else "b" for k in keys]
        table.write(pa.table({"k": keys, "p": parts, "ts": [i] * len(keys), "v": [i] * len(keys)}, schema=SCHEMA))
    table.delete(pa.table({"k": [5, 6, 7], "p": ["a", "b", "a"]}))
    before = table_rows(table.read())
    assert table.compact()["files_merged"] == 0, "no bucket has 5 sorted runs yet"
    assert any(f["delete_rows"] for f in table.files())
    table.write(pa.table({"k": [9], "p": ["a"], "ts": [9], "v": [9]}, schema=SCHEMA))
    before = [r if (r["k"], r["p"]) != (9, "a") else {**r, "ts": 9, "v": 9} for r in before]
    partial = table.compact()
    assert partial["files_merged"] == 5 and partial["files_written"] == 1, "only the bucket with 5 runs"
    files_before = len(table.files())
    full = table.compact(full=True)
    files = table.files()
    assert full["files_merged"] == files_before - 1, "all but the bucket compacted already"
    assert len(files) == len({(f["partition"], f["bucket"]) for f in files}) == 4
    assert all(f["level"] == 5 and f["delete_rows"] == 0 for f in files), "top level, deletes dropped"
    assert table_rows(table.read()) == before
    assert table.compact(full=True)["files_merged"] == 0, "nothing left to compact"
    assert table.info()["max_runs_per_bucket"] == 1


def test_read_projects_columns_and_filters_partitions(tmp_path):
    table = mc.Table.create(tmp_path / "t", SCHEMA, key="k", partition_by="p", buckets=3)
    data = pa.table({"k": range(30), "p": ["a", "b", "c"] * 10, "ts": [0] * 30, "v": range(30)}, schema=SCHEMA)
    table.write(data)
    stream = table.read(columns=["v", "k"], partitions={"p": ["b", "zzz"]})
    out = stream.read_all()
    assert out.schema.names == ["v", "k"]
    assert sorted(out.column("k").to_pylist()) == list(range(1, 30, 3))
    stats = stream.stats
    assert (stats["partitions_total"], stats["partitions_read"], stats["partitions_pruned"]) == (3, 1, 2)
    assert stats["files_read"] + stats["files_pruned"] == stats["files_total"]
    assert sorted(table.read(partitions={"p": "c"}).read_all().column("k").to_pylist()) == list(range(2, 30, 3))


@pytest.mark.parametrize("thin", [True, False])
def test_files_are_paimon_data_files_continuing_each_buckets_sequence(tmp_path, thin):
    options = {} if thin else {"data-file.thin-mode": "false"}  # merge-core creates thin tables
    root = tmp_path / "wh" / "db.db" / "t"  # a warehouse's layout, for pypaimon-rust
    table = mc.Table.create(root, SCHEMA, key="k", buckets=1, options=options)
    table.write(pa.table({"k": [5, 1, 3, 1], "p": ["x"] * 4, "ts": [0] * 4, "v": [1, 2, 3, 4]}, schema=SCHEMA))
    table.delete(pa.table({"k": [3]}))
    first, second = sorted(table.files(), key=lambda f: f["min_sequence"])
    assert (first["rows"], second["rows"], second["delete_rows"]) == (3, 1, 1)
    assert second["min_sequence"] == first["max_sequence"] + 1, "a bucket's sequence continues"
    for f in (first, second):
        data = pq.read_table(root / f["path"])
        key_copy = [] if thin else ["_KEY_k"]
        assert data.schema.names == [*key_copy, "_SEQUENCE_NUMBER", "_VALUE_KIND", *SCHEMA.names]
        keys = data.column("k").to_pylist()
        assert keys == sorted(set(keys)), "one row per key, ascending"
        assert thin or data.column("_KEY_k").to_pylist() == keys
        assert data.column("_SEQUENCE_NUMBER").to_pylist() == list(range(f["min_sequence"], f["max_sequence"] + 1))
        assert data.schema.field("k").metadata[b"PARQUET:field_id"] == b"0", "Paimon's field ids"
    assert pq.read_table(root / second["path"]).column("_VALUE_KIND").to_pylist() == [3], "-D"
    want = [{"k": 1, "p": "x", "ts": 0, "v": 4}, {"k": 5, "p": "x", "ts": 0, "v": 1}]
    assert table_rows(table.read()) == want
    assert sorted(pypaimon_rust_rows(root), key=lambda r: r["k"]) == want


def test_writes_spill_within_their_memory_limit(tmp_path):
    table = mc.Table.create(tmp_path / "t", SCHEMA, key="k", partition_by="p", buckets=4)
    n = 400_000
    data = pa.table(
        {
            "k": pa.array(range(n)[::-1]),
            "p": pa.array(["a", "b"] * (n // 2)),
            "ts": pa.array([0] * n),
            "v": pa.array(range(n)),
        },
        schema=SCHEMA,
    )
    (tmp_path / "spill").mkdir()
    result = table.write(data, memory_limit="4MiB", spill_dir=tmp_path / "spill")
    assert result["rows"] == n and result["files"] == 8, "one file per (partition, bucket)"
    assert list((tmp_path / "spill").iterdir()) == [], "spill files removed"
    out = table.read().read_all()
    assert out.num_rows == n and sorted(out.column("k").to_pylist()) == list(range(n))


def test_expire_keeps_what_snapshots_use(tmp_path):
    table = mc.Table.create(tmp_path / "t", SCHEMA, key="k", buckets=2)
    for i in range(3):
        table.write(pa.table({"k": [1, 2, 3], "p": ["x"] * 3, "ts": [i] * 3, "v": [i] * 3}, schema=SCHEMA))
    table.compact(full=True)
    orphan = tmp_path / "t" / "bucket-0" / "data-orphan.parquet"
    pq.write_table(pa.table({"x": [1]}), orphan)
    before = table_rows(table.read())
    result = table.expire(keep_snapshots=1)
    assert result["snapshots_removed"] == 3
    assert orphan.exists(), "a fresh unreferenced file may belong to a write in progress"
    live = {f["path"] for f in table.files()}
    on_disk = {p.relative_to(tmp_path / "t").as_posix() for p in (tmp_path / "t").rglob("data-*.parquet")}
    assert on_disk == live | {orphan.relative_to(tmp_path / "t").as_posix()}
    assert table_rows(table.read()) == before
    with pytest.raises(mc.TableNotFoundError, match="no snapshot 1"):
        table.read(snapshot=1)
    table.expire(orphan_age=0)
    assert not orphan.exists()


def test_table_remembers_its_definition(tmp_path):
    merge = mc.Aggregate({"v": "sum"}, default="last_value")
    mc.Table.create(tmp_path / "t", SCHEMA, key=["k"], partition_by=["p"], buckets=5, merge=merge, sequence="ts")
    table = mc.Table.open(tmp_path / "t")
    assert (table.key, table.partition_by, table.buckets, table.sequence) == (["p", "k"], ["p"], 5, ["ts"])
    info = table.info()
    assert info["merge"]["function"] == "aggregate" and info["merge"]["fields"] == {"v": {"function": "sum"}}
    assert table.schema.field("k").nullable is False and table.schema.field("v").nullable
    assert info["snapshot"] is None and info["files"] == 0
    assert table.read().read_all().num_rows == 0
    assert table.compact(full=True)["files_merged"] == 0


def test_composite_keys_and_date_partitions(tmp_path):
    schema = pa.schema([("a", pa.string()), ("b", pa.int32()), ("day", pa.date32()), ("v", pa.float64())])
    table = mc.Table.create(tmp_path / "t", schema, key=["a", "b"], partition_by="day", buckets=4)
    import datetime as dt

    days = [dt.date(2024, 1, 1) + dt.timedelta(days=i % 3) for i in range(60)]
    rows = [{"a": f"x{i % 7}", "b": i % 5, "day": days[i], "v": float(i)} for i in range(60)]
    table.write(pa.Table.from_pylist(rows[:40], schema=schema))
    table.write(pa.Table.from_pylist(rows[40:], schema=schema))
    expected = {}
    for r in rows:
        expected[(r["day"], r["a"], r["b"])] = r
    got = {(r["day"], r["a"], r["b"]): r for r in table.read().read_all().to_pylist()}
    assert got == expected
    assert sorted({f["partition"] for f in table.files()}) == [(d,) for d in sorted(set(days))]
    # Paimon's legacy partition names (its default) write a date as its day number.
    epoch = dt.date(1970, 1, 1)
    assert all(f["path"].startswith(f"day={(f['partition'][0] - epoch).days}/bucket-") for f in table.files())


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(key="nope"), "does not have"),
        (dict(key="k", partition_by="v2"), "does not have"),
        (dict(key="k", buckets=0), "buckets"),
        (dict(key="k", buckets=-3), r"buckets must be an integer from 1 to 65536, -1 \(dynamic\) or -2"),
        (dict(key="k", merge=mc.Aggregate({"p": "sum"})), "merge function"),
        (dict(key="k", sequence="nope"), "does not have"),
    ],
)
def test_bad_definitions_are_refused(tmp_path, kwargs, message):
    with pytest.raises(mc.InvalidInputError, match=message):
        mc.Table.create(tmp_path / "t", SCHEMA, **kwargs)
    assert not (tmp_path / "t").exists()


def test_bad_tables_and_data_are_refused(tmp_path):
    with pytest.raises(mc.TableNotFoundError):
        mc.Table.open(tmp_path / "none")
    table = mc.Table.create(tmp_path / "t", SCHEMA, key="k", partition_by="p")
    with pytest.raises(mc.TableExistsError):
        mc.Table.create(tmp_path / "t", SCHEMA, key="k")
    with pytest.raises(mc.InvalidInputError, match="reserved"):
        mc.Table.create(tmp_path / "u", SCHEMA.append(pa.field("_SEQUENCE_NUMBER", pa.int64())), key="k")
    with pytest.raises(mc.InvalidInputError, match="lacks the table's columns"):
        table.write(pa.table({"k": [1]}))
    with pytest.raises(mc.InvalidInputError, match="has type string, the table's is int64"):
        table.write(pa.table({"k": ["x"], "p": ["a"], "ts": [1], "v": [1]}))
    with pytest.raises(mc.InvalidInputError, match="null"):
        table.write(pa.table({"k": [None, 1], "p": ["a", "a"], "ts": [1, 1], "v": [1, 1]}, schema=SCHEMA))
    with pytest.raises(mc.InvalidInputError, match="row kinds"):
        table.write(pa.table({"k": [1], "p": ["a"], "ts": [1], "v": [1], "op": ["+X"]}), row_kind="op")
    with pytest.raises(mc.InvalidInputError, match="no columns"):
        table.read(columns=["zzz"])
    with pytest.raises(mc.InvalidInputError, match="not a partition column"):
        table.read(partitions={"k": 1})
    with pytest.raises(mc.TableNotFoundError, match="snapshot 9"):
        table.read(snapshot=9)
    assert table.snapshots() == [], "failed writes commit nothing"
    assert sorted(p.relative_to(tmp_path / "t").as_posix() for p in (tmp_path / "t").rglob("*")) == [
        "schema",
        "schema/schema-0",
    ], "and leave no files"


def test_columns_in_any_order_are_accepted(tmp_path):
    table = mc.Table.create(tmp_path / "t", SCHEMA, key="k")
    table.write(pa.table({"v": [7], "ts": [1], "p": ["q"], "k": pa.array([3], pa.int32())}))
    assert table.read().read_all().to_pylist() == [{"k": 3, "p": "q", "ts": 1, "v": 7}]


def test_bucket_of_a_key_is_stable():
    """merge-core's own bucket function (upsert_files splits input files with it, in
    separate tasks, whatever each file's key type): pinned values catch a change of hash."""
    from merge_core import _native

    def ids(values, type_):
        return _native.bucket_ids(pa.record_batch({"k": pa.array(values, type_)}), ["k"], 1 << 30).to_pylist()

    ints = [755028848, 537461742, 1032542211, 623802282, 656493254, 51757370]
    assert ids([0, 1, 2, 3, 1 << 40, -1], pa.int64()) == ints
    assert ids([0, 1, 2, 3], pa.int16()) == ints[:4], "a key keeps its bucket when its type widens"
    assert ids(["", "a", "merge-core-key"], pa.string()) == [755186068, 28227209, 836696848]
    assert ids(["", "a", "merge-core-key"], pa.large_string()) == [755186068, 28227209, 836696848]


def test_full_compaction_drops_deletes_as_paimon_does(tmp_path):
    """With sequence columns, a write after a full compaction may carry an older sequence
    number than a dropped delete: the key comes back, as in Paimon (whose full
    compaction drops deletes too); docs/table-format.md says so."""
    table = mc.Table.create(tmp_path / "t", SCHEMA, key="k", sequence="ts", buckets=1)
    op_schema = SCHEMA.append(pa.field("op", pa.string()))
    table.write(
        pa.table({"k": [0, 0], "p": ["a"] * 2, "ts": [0, 1], "v": [1, None], "op": ["+I", "-D"]}, schema=op_schema),
        row_kind="op",
    )
    table.write(pa.table({"k": [0], "p": ["a"], "ts": [0], "v": [2]}, schema=SCHEMA))
    assert table.read().read_all().num_rows == 0, "before compaction the newer delete wins"
    table.compact(full=True)
    assert table.read().read_all().num_rows == 0
    table.write(pa.table({"k": [0], "p": ["a"], "ts": [0], "v": [3]}, schema=SCHEMA))
    assert table.read().read_all().column("v").to_pylist() == [3]


def test_full_compaction_after_a_delete_in_an_aggregate_table(tmp_path):
    schema = pa.schema([("id", pa.int64()), ("n", pa.int64())])
    table = mc.Table.create(tmp_path / "t", schema, key="id", buckets=1, merge=mc.Aggregate({"n": "sum"}))
    table.write(pa.table({"id": [1, 2], "n": [1, 2]}))
    table.write(pa.table({"id": [1], "n": [10]}))
    table.delete(pa.table({"id": [2]}))  # without remove_record_on_delete, a -D of null retracts nothing
    before = table.read().read_all().sort_by("id")
    table.compact(full=True)
    assert table.read().read_all().sort_by("id").equals(before)
    assert before.to_pydict() == {"id": [1, 2], "n": [11, 2]}


@pytest.mark.parametrize("buckets, partition_by", [(4, "p"), (1, None)])
def test_parallel_reads_keep_bucket_order_and_stop_when_dropped(tmp_path, buckets, partition_by):
    """Several buckets merge on threads; a lone bucket's runs decode ahead on the spare ones."""
    table = mc.Table.create(tmp_path / "t", SCHEMA, key="k", partition_by=partition_by, buckets=buckets)
    for i in range(3):
        keys = list(range(i * 500, 3000, 2 + i))
        parts = [PARTITIONS[k % 2] for k in keys]
        table.write(pa.table({"k": keys, "p": parts, "ts": [i] * len(keys), "v": keys}, schema=SCHEMA))
    # Small batches: buckets merged ahead of their turn keep many batches ready.
    reads = {threads: table.read(batch_size=64, threads=threads).read_all() for threads in (1, 2, 3, 8)}
    assert reads[1].num_rows == len({*range(0, 3000, 2), *range(500, 3000, 3), *range(1000, 3000, 4)})
    for threads, read in reads.items():
        assert read.equals(reads[1]), f"threads={threads} changed the output or its order"
    stream = table.read(batch_size=16, threads=8)
    assert next(iter(stream)).num_rows == 16
    del stream  # the workers still merging must stop; the table stays readable
    assert table.read(threads=8).read_all().sort_by("k").equals(reads[1].sort_by("k"))


def test_file_uris_are_local_tables_and_unknown_schemes_are_refused(tmp_path, monkeypatch):
    uri = (tmp_path / "a table").as_uri()  # file:///.../a%20table
    table = mc.Table.create(uri, SCHEMA, key="k")
    table.write(pa.table({"k": [1], "p": ["a"], "ts": [0], "v": [5]}, schema=SCHEMA))
    assert table.path == tmp_path / "a table"
    assert mc.Table.open(uri).read().read_all().column("v").to_pylist() == [5]
    monkeypatch.chdir(tmp_path)
    for path in ("oss://b/t", "hdfs://nn/t"):  # s3:// is tested in test_object_store.py
        with pytest.raises(mc.UnsupportedFeatureError, match="not supported yet"):
            mc.Table.create(path, SCHEMA, key="k")
        with pytest.raises(mc.UnsupportedFeatureError, match="not supported yet"):
            mc.Table.open(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a table"], "no local folder named after a scheme"


def test_every_read_and_merge_returns_an_mc_stream(tmp_path):
    """Native streams and the reads Python shapes after them are one type, with one
    protocol: stats, iteration, read_all and the Arrow C stream."""
    keyed = mc.Table.create(tmp_path / "t", SCHEMA, key="k", partition_by="p", buckets=2)
    plain = mc.Table.create(tmp_path / "a", SCHEMA, key=None)
    data = pa.table({"k": [1, 2], "p": ["x", "y"], "ts": [1, 1], "v": [1, 2]}).cast(SCHEMA)
    keyed.write(data)
    plain.write(data)
    streams = {
        "merge": mc.merge([data], key="k"),
        "sort": mc.sort(data, key="k"),
        "read": keyed.read(),
        "filtered read": keyed.read(filter=pc.field("v") > 1),
        "append read": plain.read(),
        "changes": keyed.changes(0),
    }
    for name, stream in streams.items():
        assert isinstance(stream, mc.Stream), name
        assert isinstance(stream.stats, dict), name
        got = pa.RecordBatchReader.from_stream(stream).read_all()
        assert got.num_rows == (1 if name == "filtered read" else 2), name


def test_a_commit_carries_its_writers_user_and_identifier(tmp_path):
    """Paimon's streaming writers mark each snapshot with their user and a number; the
    newest number of a user is what a restarted writer has already committed."""
    root = tmp_path / "wh" / "db.db" / "t"
    table = mc.Table.create(root, SCHEMA, key="k")

    def prepared(k: int):
        with table.new_write() as write:
            write.write(pa.table({"k": [k], "p": ["a"], "ts": [0], "v": [k]}, schema=SCHEMA))
            return write.prepare_commit()

    assert table.last_commit_identifier("q") is None
    table.commit(prepared(1), commit_user="q", commit_identifier=7)
    table.write(pa.table({"k": [2], "p": ["a"], "ts": [0], "v": [2]}, schema=SCHEMA))  # another user, after
    assert table.last_commit_identifier("q") == 7 and table.last_commit_identifier("r") is None
    assert (table.snapshot(1).commit_user, table.snapshot(2).commit_identifier) == ("q", (1 << 63) - 1)
    assert sorted(r["k"] for r in pypaimon_rust_rows(root)) == [1, 2]
    for bad in (-1, True, "7"):
        with pytest.raises(mc.InvalidInputError, match="commit_identifier"):
            table.commit(prepared(3), commit_identifier=bad)
    with pytest.raises(mc.UnsupportedFeatureError, match="commit_user"):
        table.commit([], overwrite=True, commit_user="q")
    assert table.snapshots() == [1, 2]
