"""mc.Table: random histories of writes, deletes and compactions against a dict oracle,
older snapshots, expire, and bad input."""

from __future__ import annotations

import merge_core as mc
import oracle
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

SCHEMA = pa.schema([("k", pa.int64()), ("p", pa.string()), ("ts", pa.int64()), ("v", pa.int64())])
PARTITIONS = ["a", "b", None]

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

    def expected(self, upto: int | None = None) -> list[dict]:
        runs = self.writes[:upto]
        name, options = oracle_spec(self.config)
        sequence = ["ts", "w", "pos"] if self.config["sequence"] else []
        merged = oracle.merge(
            runs, key=["p", "k"], sequence=sequence, row_kind="op", merge=name, key_order=nulls_last, **options
        )
        out = [{c: row[c] for c in SCHEMA.names} for row in merged]
        return sorted(out, key=sort_key)


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
    writes_at: dict[int, int] = {0: 0}  # snapshot id -> number of writes it holds
    for op, arg in ops:
        if op == "write":
            rows = make_rows(arg, config)
            data = pa.Table.from_pylist(rows, schema=SCHEMA.append(pa.field("op", pa.string())))
            result = table.write(data, row_kind="op")
            model.add(rows)
            writes_at[result["snapshot"]] = len(model.writes)
        else:
            result = table.compact(full=arg)
            writes_at[result["snapshot"]] = len(model.writes)
        assert table_rows(table.read()) == model.expected()
    for snapshot, count in writes_at.items():
        if snapshot:
            assert table_rows(table.read(snapshot=snapshot)) == model.expected(count), snapshot
    # A projected read builds only the columns it returns (in the order asked).
    projected = table.read(columns=columns).read_all()
    assert projected.schema.names == columns
    assert projected_rows(projected.to_pylist(), columns) == projected_rows(model.expected(), columns)


def projected_rows(rows: list[dict], columns: list[str]) -> list[tuple]:
    return sorted((tuple(row[c] for c in columns) for row in rows), key=repr)


def test_full_compaction_leaves_one_run_per_bucket_without_deletes(tmp_path):
    table = mc.Table.create(tmp_path / "t", SCHEMA, key="k", partition_by="p", buckets=2)
    for i in range(4):
        keys = list(range(i, 40))
        parts = ["a" if k % 2 else "b" for k in keys]
        table.write(pa.table({"k": keys, "p": parts, "ts": [i] * len(keys), "v": [i] * len(keys)}, schema=SCHEMA))
    table.delete(pa.table({"k": [5, 6, 7], "p": ["a", "b", "a"]}))
    before = table_rows(table.read())
    partial = table.compact()
    assert partial["runs_merged"] > 0
    assert all(f.level == 1 for f in table.snapshot().files)
    assert any(f.retracts for f in table.snapshot().files), "a partial compaction keeps deletes"
    table.compact(full=True)
    files = table.snapshot().files
    assert len(files) == len({(f.partition, f.bucket) for f in files})
    assert all(f.level == 2 and f.retracts == 0 for f in files)
    assert table_rows(table.read()) == before
    assert table.compact(full=True)["runs_merged"] == 0, "nothing left to compact"


def test_read_projects_columns_and_filters_partitions(tmp_path):
    table = mc.Table.create(tmp_path / "t", SCHEMA, key="k", partition_by="p", buckets=3)
    data = pa.table({"k": range(30), "p": ["a", "b", None] * 10, "ts": [0] * 30, "v": range(30)}, schema=SCHEMA)
    table.write(data)
    stream = table.read(columns=["v", "k"], partitions={"p": ["b", "zzz"]})
    out = stream.read_all()
    assert out.schema.names == ["v", "k"]
    assert sorted(out.column("k").to_pylist()) == list(range(1, 30, 3))
    stats = stream.stats
    assert (stats["partitions_total"], stats["partitions_read"], stats["partitions_pruned"]) == (3, 1, 2)
    assert stats["files_read"] + stats["files_pruned"] == stats["files_total"]
    assert sorted(table.read(partitions={"p": None}).read_all().column("k").to_pylist()) == list(range(2, 30, 3))


def test_files_are_sorted_runs_with_sequence_and_row_kind(tmp_path):
    table = mc.Table.create(tmp_path / "t", SCHEMA, key="k", buckets=2)
    table.write(pa.table({"k": [5, 1, 3, 1], "p": ["x"] * 4, "ts": [0] * 4, "v": [1, 2, 3, 4]}, schema=SCHEMA))
    table.delete(pa.table({"k": [3]}))
    for f in table.snapshot().files:
        data = pq.read_table(tmp_path / "t" / f.path)
        assert data.schema.names == [*SCHEMA.names, "_seq", "_kind"]
        keys = data.column("k").to_pylist()
        assert keys == sorted(set(keys)), "one row per key, ascending"
        assert data.column("_seq").to_pylist() == list(range(data.num_rows))
        assert f.max_sequence == f.sequence_base + data.num_rows - 1
        # The documented encoding: plain values, no dictionary pages, `_seq` delta-encoded.
        meta = pq.ParquetFile(tmp_path / "t" / f.path).metadata.row_group(0)
        columns = {meta.column(i).path_in_schema: meta.column(i) for i in range(meta.num_columns)}
        assert not any(c.has_dictionary_page for c in columns.values())
        assert "DELTA_BINARY_PACKED" in columns["_seq"].encodings
        assert {c.compression for c in columns.values()} == {"LZ4"}
    assert table_rows(table.read()) == [{"k": 1, "p": "x", "ts": 0, "v": 4}, {"k": 5, "p": "x", "ts": 0, "v": 1}]


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
    assert result["rows"] == n and result["files"] == 8
    assert list((tmp_path / "spill").iterdir()) == [], "spill files removed"
    out = table.read().read_all()
    assert out.num_rows == n and sorted(out.column("k").to_pylist()) == list(range(n))


def test_expire_keeps_what_snapshots_use(tmp_path):
    table = mc.Table.create(tmp_path / "t", SCHEMA, key="k", buckets=2)
    for i in range(3):
        table.write(pa.table({"k": [1, 2, 3], "p": ["x"] * 3, "ts": [i] * 3, "v": [i] * 3}, schema=SCHEMA))
    table.compact(full=True)
    orphan = tmp_path / "t" / "data" / "bucket-0" / "orphan.parquet"
    pq.write_table(pa.table({"x": [1]}), orphan)
    before = table_rows(table.read())
    result = table.expire(keep_snapshots=1)
    assert result["snapshots_removed"] == 3
    assert orphan.exists(), "a fresh unreferenced file may belong to a write in progress"
    live = {f.path for f in table.snapshot().files}
    on_disk = {p.relative_to(tmp_path / "t").as_posix() for p in (tmp_path / "t" / "data").rglob("*.parquet")}
    assert on_disk == live | {orphan.relative_to(tmp_path / "t").as_posix()}
    assert table_rows(table.read()) == before
    with pytest.raises(mc.TableNotFoundError, match="expired"):
        table.read(snapshot=1)
    table.expire(orphan_age=0)
    assert not orphan.exists()


def test_table_remembers_its_definition(tmp_path):
    merge = mc.Aggregate({"v": "sum"}, default="last_value")
    mc.Table.create(tmp_path / "t", SCHEMA, key=["k"], partition_by=["p"], buckets=5, merge=merge, sequence="ts")
    table = mc.Table.open(tmp_path / "t")
    assert (table.key, table.partition_by, table.buckets, table.sequence) == (["k"], ["p"], 5, ["ts"])
    assert table.merge["function"] == "aggregate" and table.merge["fields"] == {"v": {"function": "sum"}}
    assert table.schema.field("k").nullable is False and table.schema.field("v").nullable
    info = table.info()
    assert info["snapshot"] == 0 and info["files"] == 0
    assert table.read().read_all().num_rows == 0


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
    assert sorted({f.partition for f in table.snapshot().files}) == [("2024-01-01",), ("2024-01-02",), ("2024-01-03",)]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(key="nope"), "does not have"),
        (dict(key="k", partition_by="v2"), "does not have"),
        (dict(key="k", buckets=0), "buckets"),
        (dict(key="k", merge=mc.Aggregate({"p": "sum"})), "merge function"),
        (dict(key="k", sequence="p"), "sequence column"),
    ],
)
def test_bad_definitions_are_refused(tmp_path, kwargs, message):
    with pytest.raises(mc.InvalidInputError, match=message):
        mc.Table.create(tmp_path / "t", SCHEMA, **kwargs)
    assert not (tmp_path / "t" / "_meta" / "table.json").exists()


def test_bad_tables_and_data_are_refused(tmp_path):
    with pytest.raises(mc.TableNotFoundError):
        mc.Table.open(tmp_path / "none")
    table = mc.Table.create(tmp_path / "t", SCHEMA, key="k", partition_by="p")
    with pytest.raises(mc.TableExistsError):
        mc.Table.create(tmp_path / "t", SCHEMA, key="k")
    with pytest.raises(mc.InvalidInputError, match="reserved"):
        mc.Table.create(tmp_path / "u", SCHEMA.append(pa.field("_seq", pa.int64())), key="k")
    with pytest.raises(mc.InvalidInputError, match="partition column"):
        mc.Table.create(tmp_path / "w", pa.schema([("k", pa.int64()), ("f", pa.float64())]), key="k", partition_by="f")
    with pytest.raises(mc.InvalidInputError, match="missing columns"):
        table.write(pa.table({"k": [1]}))
    with pytest.raises(mc.InvalidInputError, match="does not fit"):
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
    assert not list((tmp_path / "t").rglob("*.parquet")), "and leave no files"


def test_columns_in_any_order_are_accepted(tmp_path):
    table = mc.Table.create(tmp_path / "t", SCHEMA, key="k")
    table.write(pa.table({"v": [7], "ts": [1], "p": ["q"], "k": pa.array([3], pa.int32())}))
    assert table.read().read_all().to_pylist() == [{"k": 3, "p": "q", "ts": 1, "v": 7}]


def test_bucket_of_a_key_is_stable():
    """Bucket ids are part of the on-disk format: pinned values catch a change of hash."""
    from merge_core import _native

    def ids(values, type_):
        return _native.bucket_ids(pa.record_batch({"k": pa.array(values, type_)}), ["k"], 1 << 30).to_pylist()

    ints = [755028848, 537461742, 1032542211, 623802282, 656493254, 51757370]
    assert ids([0, 1, 2, 3, 1 << 40, -1], pa.int64()) == ints
    assert ids([0, 1, 2, 3], pa.int16()) == ints[:4], "a key keeps its bucket when its type widens"
    assert ids(["", "a", "merge-core-key"], pa.string()) == [755186068, 28227209, 836696848]
    assert ids(["", "a", "merge-core-key"], pa.large_string()) == [755186068, 28227209, 836696848]


def test_full_compaction_keeps_deletes_a_late_lower_sequence_could_undo(tmp_path):
    """Found by the random histories: with sequence columns, a write after a full
    compaction may carry an older sequence number; the kept -D must still win."""
    table = mc.Table.create(tmp_path / "t", SCHEMA, key="k", sequence="ts", buckets=1)
    op_schema = SCHEMA.append(pa.field("op", pa.string()))
    table.write(
        pa.table({"k": [0, 0], "p": ["a"] * 2, "ts": [0, 1], "v": [1, None], "op": ["+I", "-D"]}, schema=op_schema),
        row_kind="op",
    )
    table.compact(full=True)
    table.write(pa.table({"k": [0], "p": ["a"], "ts": [0], "v": [2]}, schema=SCHEMA))
    assert table.read().read_all().num_rows == 0


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


def test_parallel_reads_keep_bucket_order_and_stop_when_dropped(tmp_path):
    table = mc.Table.create(tmp_path / "t", SCHEMA, key="k", partition_by="p", buckets=4)
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
