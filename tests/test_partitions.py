"""Table.partitions(): Paimon's partition entries of a snapshot (stored rows, files,
bytes), against the data files on disk."""

from __future__ import annotations

import os

import merge_core as mc
import pyarrow as pa
import pyarrow.parquet as pq


def test_partitions_count_what_the_data_directories_hold(tmp_path):
    """Table.partitions() (Paimon's partition entries: stored rows, files, bytes) against
    the data files on disk, once expire has left only the live ones: each partition's
    Parquet files, their rows and sizes, counted by pyarrow."""
    schema = pa.schema([pa.field("k", pa.int64(), False), pa.field("day", pa.string(), False), ("v", pa.int64())])
    root = tmp_path / "db.db" / "p"
    table = mc.Table.create(root, schema, key=["k", "day"], partition_by="day", buckets=2)
    for i in range(3):
        days = ["d1"] * 5 + ["d2"] * 3 + (["d3"] * 2 if i == 2 else [])
        data = pa.table({"k": list(range(len(days))), "day": days, "v": [i] * len(days)}, schema=schema)
        table.write(data)
    table.compact(full=True)
    table.write(pa.table({"k": [0], "day": ["d2"], "v": [9]}, schema=schema))
    table.expire(keep_snapshots=1, orphan_age=0)
    on_disk: dict[str, dict[str, int]] = {}
    for folder in sorted(p for p in root.iterdir() if p.name.startswith("day=")):
        files = [f for f in folder.rglob("*.parquet")]
        on_disk[folder.name.removeprefix("day=")] = {
            "rows": sum(pq.read_metadata(f).num_rows for f in files),
            "files": len(files),
            "bytes": sum(os.path.getsize(f) for f in files),
        }
    got = {p["partition"]["day"]: {k: p[k] for k in ("rows", "files", "bytes")} for p in table.partitions()}
    assert got == on_disk
    assert set(got) == {"d1", "d2", "d3"} and got["d2"]["files"] > 1  # d2: compacted, then one more write
    assert table.partitions(snapshot=table.snapshots()[-1]) == table.partitions()
