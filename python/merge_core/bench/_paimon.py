"""Reading a real Paimon table: the contest versions written by pypaimon as 11 commits
into an 8-bucket table (aggregation: requests summed, others newest non-null), read
merged by merge-core, pypaimon, pypaimon with `read.native.enabled` and pypaimon-rust,
beside the decode floor (the table's data files decoded on all cores, nothing merged)."""

from __future__ import annotations

import os

import merge_core as mc

from ._inputs import Inputs
from ._measure import Peer, Section, missing, progress, same_rows, time_peers, timed
from ._table import BUCKETS, pypaimon_contest, pypaimon_read, pypaimon_rust_read
from ._upsert import BATCH, decode_only, planned_files, write_table


def run(folder: str, inputs: Inputs, repeat: int) -> Section:
    why = missing("pypaimon")
    if why:
        return Section("paimon", "Reading a Paimon table", [why], [])
    paths = inputs.contest_versions()
    theirs, warehouse, write_seconds = pypaimon_contest(inputs)
    ours = mc.Table.open(os.path.join(warehouse, "bench.db", "contest"))
    planned = planned_files(ours)
    stored = sum(f.rows for f in planned)
    progress(f"  {stored:,} stored rows in {len(planned)} files")
    # The same commits into one bucket (merge-core's writer: its files have a page index),
    # read on one thread and on all cores: a bucket cut into key ranges merged in parallel.
    one_bucket, _ = timed("merge-core one-bucket write", lambda: write_table(os.path.join(folder, "one"), paths, 1))
    peers = [
        Peer("merge-core Table.read", lambda: ours.read(batch_size=BATCH).read_all()),
        Peer("merge-core, 1 bucket, threads=1", lambda: one_bucket.read(batch_size=BATCH, threads=1).read_all()),
        Peer("merge-core, 1 bucket, all cores", lambda: one_bucket.read(batch_size=BATCH).read_all()),
        Peer("decode floor (files decoded, no merge)", lambda: decode_only(ours, stored), compared=False),
        Peer("pypaimon-rust", lambda: pypaimon_rust_read(warehouse), "pypaimon_rust"),
        Peer("pypaimon read.native.enabled", lambda: pypaimon_read(theirs, {"read.native.enabled": "true"})),
        # The pure-Python reader takes minutes at the full scale: timed once.
        Peer("pypaimon (Python)", lambda: pypaimon_read(theirs), repeat=1),
    ]
    runs = time_peers(peers, repeat, stored, lambda a, b: same_rows(a, b, order_by="uuid"))
    return Section(
        "paimon",
        "Reading a Paimon table: merge-core, pypaimon, pypaimon-rust",
        [
            f"The contest versions ({stored:,} rows) written by pypaimon as {len(paths)} commits into an"
            f" {BUCKETS}-bucket Paimon table (merge engine `aggregation`: requests `sum`, default"
            f" `last_non_null_value`; Parquet, zstd), written in {write_seconds:.1f} s, then read merged by each"
            " reader. Ratios are to merge-core's read.",
            "The floor decodes the same data files with pyarrow on all cores and merges nothing. pypaimon in pure"
            " Python is timed once.",
            "The 1-bucket lines read the same commits written by merge-core into a one-bucket table, on one"
            " thread and on all cores (the bucket cut into key ranges merged in parallel).",
        ],
        runs,
    )
