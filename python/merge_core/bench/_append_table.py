"""Reading an append-only Paimon table (no primary key): the contest versions appended by
merge-core as 11 commits into a table with unaware buckets (`bucket = -1`), read whole by
merge-core, pypaimon (Python and `read.native.enabled`) and pypaimon-rust, beside the
decode floor: the same data files decoded by pyarrow on all cores. Nothing merges, so a
reader's time over the floor is all its overhead."""

from __future__ import annotations

import os

import pyarrow as pa

import merge_core as mc
from merge_core import contest

from ._inputs import Inputs
from ._measure import Peer, Section, missing, progress, same_rows, time_peers, timed
from ._table import load_versions, pypaimon_open, pypaimon_read, pypaimon_rust_read, table_path
from ._upsert import BATCH, decode_only, planned_files

ORDER = [(name, "ascending") for name in contest.SCHEMA.names]  # rows repeat keys: order by all


def merge_core_append(root: str, versions: list[pa.Table]) -> mc.Table:
    table = mc.Table.create(root, contest.SCHEMA, key=None)
    for data in versions:
        table.write(data)
    return table


def run(folder: str, inputs: Inputs, repeat: int) -> Section:
    why = missing("pypaimon")
    if why:
        return Section("append", "Reading an append-only Paimon table", [why], [])

    paths = inputs.contest_versions()
    warehouse = os.path.join(folder, "paimon")
    ours, write_seconds = timed(
        "merge-core append write", lambda: merge_core_append(table_path(warehouse), load_versions(paths))
    )
    theirs = pypaimon_open(warehouse)
    planned = planned_files(ours)
    stored, files = sum(f.rows for f in planned), len(planned)
    progress(f"  {stored:,} rows in {files} files")
    peers = [
        Peer("merge-core Table.read", lambda: ours.read(batch_size=BATCH).read_all()),
        Peer("decode floor (files decoded by pyarrow)", lambda: decode_only(ours, stored), compared=False),
        Peer("pypaimon-rust", lambda: pypaimon_rust_read(warehouse), "pypaimon_rust"),
        Peer("pypaimon read.native.enabled", lambda: pypaimon_read(theirs, {"read.native.enabled": "true"})),
        Peer("pypaimon (Python)", lambda: pypaimon_read(theirs), repeat=1),
    ]
    runs = time_peers(peers, repeat, stored, lambda a, b: same_rows(a, b, order_by=ORDER))
    return Section(
        "append",
        "Reading an append-only Paimon table: merge-core, pypaimon, pypaimon-rust",
        [
            f"The contest versions ({stored:,} rows, {files} files) appended by merge-core as {len(paths)} commits"
            f" (written in {write_seconds:.1f} s) into a Paimon table without a primary key (`bucket = -1`),"
            " then read whole by each reader; nothing merges. Ratios are to merge-core's read.",
            "The floor decodes the same data files with pyarrow on all cores: a reader's time above it is its"
            " own overhead (planning, the stream, copies). pypaimon in pure Python is timed once.",
        ],
        runs,
    )
