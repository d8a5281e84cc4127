"""Point lookups in a real Paimon table: the contest versions written by pypaimon as 11
commits into an 8-bucket table, and a batch of keys each read on its own with a filter
`uuid = key` by merge-core, pypaimon-rust, pypaimon with `read.native.enabled` and
pypaimon in Python. merge-core reads one bucket (the key's hash) and of each of its
files only the pages whose statistics may hold the key; the figures say how many of the
stored rows its merges took in."""

from __future__ import annotations

import os
import random

import pyarrow as pa
import pyarrow.compute as pc

import merge_core as mc

from ._inputs import Inputs
from ._measure import Peer, Section, missing, progress, same_rows, time_peers
from ._table import BUCKETS, pypaimon_contest
from ._upsert import planned_files

LOOKUPS = 20  # keys per timed run: one lookup is too short to time alone


def merge_core_lookups(table: mc.Table, keys: list[str], stats: dict[str, int]) -> pa.Table:
    """The keys' rows; ``stats`` gets this run's rows merged and files read."""
    stats.update(rows_in=0, files_read=0)
    parts = []
    for key in keys:
        stream = table.read(filter=pc.field("uuid") == key)
        parts.append(stream.read_all())
        stats["rows_in"] += stream.stats["rows_in"]
        stats["files_read"] += stream.stats["files_read"]
    return pa.concat_tables(parts)


def pypaimon_rust_lookups(warehouse: str, keys: list[str]) -> pa.Table:
    from pypaimon_rust.datafusion import PaimonCatalog

    table = PaimonCatalog({"warehouse": warehouse}).get_table(("bench", "contest"))
    batches = []
    for key in keys:
        builder = table.new_read_builder().with_filter({"method": "equal", "field": "uuid", "literals": [key]})
        batches += builder.new_read().read(builder.new_scan().plan().splits())
    return pa.Table.from_batches(batches)


def pypaimon_lookups(table, keys: list[str], options: dict[str, str] | None = None) -> pa.Table:
    table = table.copy(options) if options else table
    parts = []
    for key in keys:
        builder = table.new_read_builder()
        builder = builder.with_filter(builder.new_predicate_builder().equal("uuid", key))
        parts.append(builder.new_read().to_arrow(builder.new_scan().plan().splits()))
    return pa.concat_tables(parts)


def run(folder: str, inputs: Inputs, repeat: int) -> Section:
    why = missing("pypaimon")
    if why:
        return Section("lookup", "Point lookups in a Paimon table", [why], [])
    paths = inputs.contest_versions()
    theirs, warehouse, _ = pypaimon_contest(inputs)
    ours = mc.Table.open(os.path.join(warehouse, "bench.db", "contest"))
    planned = planned_files(ours)
    stored, files = sum(f.rows for f in planned), len(planned)
    uuids = ours.read(columns=["uuid"]).read_all()["uuid"].to_pylist()
    keys = random.Random(7).sample(uuids, LOOKUPS)
    progress(f"  {LOOKUPS} keys of {len(uuids):,}, {stored:,} stored rows in {files} files")
    counted = {"rows_in": 0, "files_read": 0}
    peers = [
        Peer("merge-core Table.read(filter=)", lambda: merge_core_lookups(ours, keys, counted)),
        Peer("pypaimon-rust with_filter", lambda: pypaimon_rust_lookups(warehouse, keys), "pypaimon_rust"),
        Peer(
            "pypaimon read.native.enabled with_filter",
            lambda: pypaimon_lookups(theirs, keys, {"read.native.enabled": "true"}),
        ),
        Peer("pypaimon (Python) with_filter", lambda: pypaimon_lookups(theirs, keys), repeat=1),
    ]
    runs = time_peers(peers, repeat, LOOKUPS, lambda a, b: same_rows(a, b, order_by="uuid"))
    merged, files_read = counted["rows_in"] / LOOKUPS, counted["files_read"] / LOOKUPS
    return Section(
        "lookup",
        "Point lookups in a Paimon table: merge-core, pypaimon, pypaimon-rust",
        [
            f"The contest versions ({stored:,} rows in {files} files) written by pypaimon as {len(paths)} commits into"
            f" an {BUCKETS}-bucket Paimon table; {LOOKUPS} keys drawn at random, each read on its own with a filter"
            " `uuid = key` (the rows column counts lookups). Ratios are to merge-core's.",
            f"merge-core merged {merged:,.0f} stored rows per lookup ({merged / stored:.4%} of the table), reading"
            f" {files_read:.1f} files of one bucket: the key's hash"
            " picks the bucket, and each file's page index the pages that may hold the key.",
        ],
        runs,
    )
