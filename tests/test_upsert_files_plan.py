"""upsert_files's plan (each input byte read once), its two stages run here in one
process: every row group is read by one task, every version of a key reaches one
destination, and the result does not depend on the number of destinations."""

from __future__ import annotations

import dataclasses
import os

import merge_core as mc
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from merge_core.fs import resolve
from merge_core.spark import _upsert_files

VERSION = "__merge_core_version"


def write_versions(folder, versions: list[pa.Table], row_group_size: int = 1000) -> list[str]:
    paths = [os.path.join(folder, f"{i}.parquet") for i in range(len(versions))]
    for path, table in zip(paths, versions, strict=True):
        pq.write_table(table, path, row_group_size=row_group_size)
    return paths


def sorted_versions(seed: int = 3, sizes=(20_000, 4000, 0, 4000)) -> list[pa.Table]:
    """Versions sorted by key ``k`` (and ``s``, the same key as a string); one is empty."""
    rng = np.random.default_rng(seed)
    tables = []
    for version, size in enumerate(sizes):
        k = np.sort(rng.choice(50_000, size, replace=False)).astype(np.int64)
        s = pa.array([f"key-{x:06d}" for x in k], pa.string())
        tables.append(pa.table({"k": k, "s": s, "n": np.full(size, version, np.int64)}))
    return tables


def run_stages(paths: list[str], key, destinations: int, folder, merge="deduplicate") -> tuple[pa.Table, dict]:
    """What upsert_files's Spark jobs do, in turn: the first stage's tasks, then each
    destination's fold. Returns the rows and the counts."""
    schema = pq.read_schema(paths[0])
    tagged = schema.append(pa.field(VERSION, pa.int32(), False))
    keys = [key] if isinstance(key, str) else key
    plan = _upsert_files.plan([resolve(p) for p in paths], schema.names, keys, tagged, [], destinations)
    exchange = resolve(os.path.join(folder, "exchange"))
    counts = {"bytes_read": 0, "exchanged_bytes": 0, "input_bytes": plan.input_bytes, "ranges": plan.cuts is not None}
    for task in range(len(plan.exchanged)):
        for name, value in _upsert_files.exchange(plan, task, exchange).items():
            counts[name] += value
    parts = []
    for destination in range(destinations):
        reader = _upsert_files.Reader(plan)
        with mc.SortBuffer(tagged, key=keys, sequence=VERSION, merge=merge) as buffer:
            for batch in _upsert_files.destination_rows(plan, destination, exchange, reader):
                buffer.write(batch)
            parts.append(buffer.finish().read_all().drop_columns([VERSION]))
        counts["bytes_read"] += reader.bytes_read
    keys_of = [set(p.column(keys[0]).to_pylist()) for p in parts]
    assert sum(map(len, keys_of)) == len(set().union(*keys_of)), "a key reached two destinations"
    return pa.concat_tables(parts).sort_by(keys[0]), counts


def newest(versions: list[pa.Table]) -> pa.Table:
    """The oracle: for each key, its row in the last version that has it."""
    rows = {}
    for table in versions:
        rows.update({row["k"]: row for row in table.to_pylist()})
    return pa.Table.from_pylist([rows[k] for k in sorted(rows)], versions[0].schema)


@pytest.mark.parametrize("key", ["k", "s"])
def test_sorted_inputs_are_split_by_key_range_and_read_once(tmp_path, key):
    versions = sorted_versions()
    paths = write_versions(tmp_path, versions)
    want = newest(versions)
    for destinations in (1, 8, 64):
        got, counts = run_stages(paths, key, destinations, tmp_path / f"{key}-{destinations}")
        assert got.sort_by("k").equals(want), destinations
        assert counts["ranges"] and counts["bytes_read"] == counts["input_bytes"], counts
        if destinations == 8:  # most row groups lie inside one range: their task reads them
            assert counts["exchanged_bytes"] < counts["input_bytes"] / 2, counts


def test_unsorted_inputs_are_bucketed_once(tmp_path):
    rng = np.random.default_rng(4)
    versions = [t.take(rng.permutation(t.num_rows)) for t in sorted_versions()]
    paths = write_versions(tmp_path, versions)
    for destinations in (1, 8, 64):
        got, counts = run_stages(paths, "k", destinations, tmp_path / str(destinations))
        assert got.equals(newest(versions))
        assert not counts["ranges"] and counts["bytes_read"] == counts["input_bytes"], counts
        assert (counts["exchanged_bytes"] == 0) == (destinations == 1)  # one bucket reads its inputs itself


def test_keys_without_usable_statistics_are_bucketed(tmp_path):
    versions = sorted_versions(sizes=(3000, 500))
    want = newest(versions)
    no_stats = tmp_path / "no-stats"
    no_stats.mkdir()
    paths = [str(no_stats / f"{i}.parquet") for i in range(2)]
    for path, table in zip(paths, versions, strict=True):
        pq.write_table(table, path, row_group_size=500, write_statistics=False)
    got, counts = run_stages(paths, "k", 8, tmp_path / "a")
    assert not counts["ranges"] and got.equals(want)
    got, counts = run_stages(write_versions(tmp_path, versions), ["k", "s"], 8, tmp_path / "b")
    assert not counts["ranges"] and got.equals(want)  # a composite key


def test_equal_keys_and_empty_ranges(tmp_path):
    """All rows of one key, in row groups whose minimums are all that key: one range
    holds them and the other destinations get nothing (and write empty parts)."""
    versions = [pa.table({"k": np.full(3000, 7, np.int64), "n": np.ones(3000, np.int64)}) for _ in range(2)]
    paths = write_versions(tmp_path, versions)
    got, counts = run_stages(paths, "k", 8, tmp_path / "out", merge=mc.Aggregate({"n": "sum"}))
    assert got.to_pylist() == [{"k": 7, "n": 6000}]
    assert counts["ranges"] and counts["exchanged_bytes"] == 0 and counts["bytes_read"] == counts["input_bytes"]


def test_one_file(tmp_path):
    versions = sorted_versions(sizes=(5000,))
    got, counts = run_stages(write_versions(tmp_path, versions), "k", 8, tmp_path / "out")
    assert got.equals(versions[0]) and counts["bytes_read"] == counts["input_bytes"]


def test_statistics_are_checked_not_trusted(tmp_path):
    paths = write_versions(tmp_path, [pa.table({"k": np.arange(1000, dtype=np.int64)})], row_group_size=500)
    schema = pq.read_schema(paths[0]).append(pa.field(VERSION, pa.int32(), False))
    plan = _upsert_files.plan([resolve(p) for p in paths], ["k"], ["k"], schema, [], 2)
    assert plan.cuts == [500]
    lying = dataclasses.replace(plan, cuts=[250])  # as if the first row group's statistics said [0, 249]
    with pytest.raises(mc.InvalidInputError, match="row group 0 holds keys from 0 to 499"):
        list(_upsert_files.destination_rows(lying, 0, resolve(tmp_path / "none"), _upsert_files.Reader(lying)))
