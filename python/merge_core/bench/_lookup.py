"""Point lookups in a real Paimon table: the contest versions written by pypaimon as 11
commits into an 8-bucket table, and a batch of keys each read on its own with a filter
`uuid = key` by merge-core, pypaimon-rust, pypaimon with `read.native.enabled` and
pypaimon in Python. merge-core reads one bucket (the key's hash) and of each of its
files only the pages whose statistics may hold the key; the figures say how many of the
stored rows its merges took in, and what share of the table's bytes a lookup read.

merge-core keeps a per-process lookup cache (``merge_core.paimon.set_lookup_cache_size``):
each data file's footer and key digests, so that a warm lookup reads no key column of a
file that cannot hold its key, and of a file with digests its dictionary pages, so that a
hit reads only the pages of its rows. A file's digests are built on its second lookup (reading
its whole key column); its first reads the key pages it needs. It is timed three ways:
warm (the cache filled by two untimed passes over the same keys), cold (the cache emptied
before every lookup: each lookup reads its files' footers and candidate key pages), and
with the cache turned off (each lookup decodes its files' candidate key pages, footers
read again). After them, a filter on a value column whose statistics exclude 90% of the
files (``_value_filter``)."""

from __future__ import annotations

import os
import random
from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc

import merge_core as mc
from merge_core.paimon import set_lookup_cache_size

from . import _value_filter
from ._inputs import Inputs
from ._measure import Peer, Section, missing, progress, same_rows, time_peers
from ._table import BUCKETS, pypaimon_contest
from ._upsert import planned_files

LOOKUPS = 20  # keys per timed run: one lookup is too short to time alone
CACHE_SIZE = 128 << 20  # the lookup cache's default size
SHARE = "bytes read per lookup (of the table's)"


def merge_core_lookups(table: mc.Table, keys: list[str], stats: dict[str, list[int]], cold: bool = False) -> pa.Table:
    """The keys' rows; ``stats`` gets this run's rows merged, files read and bytes read,
    lookup by lookup. ``cold``: the lookup cache is emptied before each lookup."""
    stats.update(rows_in=[], files_read=[], bytes_read=[])
    parts = []
    for key in keys:
        if cold:
            set_lookup_cache_size(0)
            set_lookup_cache_size(CACHE_SIZE)
        stream = table.read(filter=pc.field("uuid") == key)
        parts.append(stream.read_all())
        for name in stats:
            stats[name].append(stream.stats[name])
    return pa.concat_tables(parts)


def with_cache_size(size: int, run: Callable[[], pa.Table]) -> Callable[[], pa.Table]:
    """``run`` with the lookup cache's size set to ``size`` for its time."""

    def sized() -> pa.Table:
        set_lookup_cache_size(size)
        try:
            return run()
        finally:
            set_lookup_cache_size(CACHE_SIZE)

    return sized


def read_share(stats: dict[str, list[int]], table_bytes: int) -> str:
    """The bytes a lookup read, as a share of the table's: mean and most."""
    shares = [b / table_bytes for b in stats["bytes_read"]] or [0.0]
    return f"{sum(shares) / len(shares):.2%} (most {max(shares):.2%})"


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
    uuids = ours.read(columns=["uuid"]).read_all()["uuid"]  # kept in Arrow: 6M Python strings take ~0.5 GB
    keys = uuids.take(random.Random(7).sample(range(len(uuids)), LOOKUPS)).to_pylist()
    progress(f"  {LOOKUPS} keys of {len(uuids):,}, {stored:,} stored rows in {files} files")
    del uuids
    table_bytes = sum(os.path.getsize(f.path) for f in planned)
    warm, cold, uncached = ({} for _ in range(3))

    def warm_lookups() -> pa.Table:
        return merge_core_lookups(ours, keys, warm)

    set_lookup_cache_size(CACHE_SIZE)
    for _ in range(2):  # fills the cache, untimed: a file's digests are built on its second lookup
        warm_lookups()
    peers = [
        Peer("merge-core Table.read(filter=), warm cache", warm_lookups),
        Peer("merge-core, cold cache (emptied before each lookup)", lambda: merge_core_lookups(ours, keys, cold, True)),
        Peer("merge-core, cache off", with_cache_size(0, lambda: merge_core_lookups(ours, keys, uncached))),
        Peer("pypaimon-rust with_filter", lambda: pypaimon_rust_lookups(warehouse, keys), "pypaimon_rust"),
        Peer(
            "pypaimon read.native.enabled with_filter",
            lambda: pypaimon_lookups(theirs, keys, {"read.native.enabled": "true"}),
        ),
        Peer("pypaimon (Python) with_filter", lambda: pypaimon_lookups(theirs, keys), repeat=1),
    ]
    runs = time_peers(peers, repeat, LOOKUPS, lambda a, b: same_rows(a, b, order_by="uuid"))
    for run, stats in zip(runs[:3], (warm, cold, uncached), strict=True):  # merge-core's three
        if stats.get("bytes_read"):
            run.extra[SHARE] = read_share(stats, table_bytes)
    merged, files_read = sum(warm["rows_in"]) / LOOKUPS, sum(warm["files_read"]) / LOOKUPS
    return Section(
        "lookup",
        "Point lookups in a Paimon table: merge-core, pypaimon, pypaimon-rust",
        [
            f"The contest versions ({stored:,} rows in {files} files, {table_bytes / 2**20:,.1f} MiB) written by"
            f" pypaimon as {len(paths)} commits into an {BUCKETS}-bucket Paimon table; {LOOKUPS} keys drawn at random,"
            " each read on its own with a filter `uuid = key` (the rows column counts lookups). Ratios are to"
            " merge-core's with a warm lookup cache.",
            f"merge-core merged {merged:,.0f} stored rows per lookup ({merged / stored:.4%} of the table), reading"
            f" {files_read:.1f} files of one bucket: the key's hash picks the bucket, each file's page index the"
            " pages that may hold the key, and (cache on) its key digests whether the file holds it at all.",
            f"The lookup cache ({CACHE_SIZE >> 20} MiB) keeps each file's footer and an 8-byte digest of each row's"
            " key, built on a file's second lookup from its whole key column, and then the file's dictionary pages."
            " Cold, a lookup reads its files' footers and the key pages that may hold the key; warm, it reads no"
            " key column of a file that cannot hold the key, and of a file holding it only its rows' pages.",
        ],
        runs,
        extra_columns=[SHARE],
        after=_value_filter.lines(folder, inputs.base_rows, repeat),
    )
