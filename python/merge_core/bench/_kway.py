"""K-way merge of sorted Parquet runs: merge-core's LoserTree and heap, DataFusion's
SortPreservingMerge over files with a declared order, Polars' merge_sorted."""

from __future__ import annotations

import os
from functools import reduce

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

import merge_core as mc

from ._measure import Peer, Section, same_rows, time_peers

BATCH = 65536


def write_runs(folder: str, runs: int, rows_per_run: int, seed: int = 11) -> list[str]:
    """`runs` Parquet files sorted by a distinct int64 key `k` (so every correct merge has
    one order), with an int64 and a string payload; keys interleave across runs."""
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(seed)
    keys = rng.permutation(runs * rows_per_run).astype(np.int64) * 7
    paths = []
    for i in range(runs):
        k = pa.array(np.sort(keys[i * rows_per_run : (i + 1) * rows_per_run]))
        table = pa.table({"k": k, "v": pc.multiply(k, 3), "s": pc.cast(k, pa.string())})
        paths.append(os.path.join(folder, f"run-{i:04d}.parquet"))
        pq.write_table(table, paths[-1], row_group_size=BATCH)
    return paths


def merge_core(paths: list[str], algorithm: str) -> pa.Table:
    # Paths: decoded in Rust, cut into key ranges merged in parallel.
    return mc.merge(paths, key="k", merge="none", algorithm=algorithm, batch_size=BATCH).read_all()


def merge_core_readers(paths: list[str]) -> pa.Table:
    # pyarrow.dataset readers decode ahead on pyarrow's threads while the merge runs.
    readers = [ds.dataset(p, format="parquet").scanner(batch_size=BATCH).to_reader() for p in paths]
    return mc.merge(readers, key="k", merge="none", batch_size=BATCH).read_all()


def decode_only(paths: list[str]) -> pa.Table:
    # The floor: the files decoded on every core (pyarrow), not merged.
    return ds.dataset(paths, format="parquet").to_table()


def datafusion(paths: list[str]) -> pa.Table:
    from datafusion import SessionConfig, SessionContext, col

    # One partition per file, so the plan is SortPreservingMergeExec over the files.
    config = SessionConfig().with_target_partitions(len(paths)).with_repartition_file_scans(False)
    ctx = SessionContext(config)
    ctx.register_parquet("runs", os.path.dirname(paths[0]), file_sort_order=[[col("k").sort()]])
    return ctx.sql("select k, v, s from runs order by k").to_arrow_table()


def polars(paths: list[str]) -> pa.Table:
    import polars as pl

    frames = [pl.scan_parquet(p) for p in paths]
    while len(frames) > 1:  # a balanced tree of two-way merges
        pairs = [frames[i : i + 2] for i in range(0, len(frames), 2)]
        frames = [reduce(lambda a, b: a.merge_sorted(b, key="k"), pair) for pair in pairs]
    return frames[0].collect().to_arrow()


def run(folder: str, runs: int, rows_per_run: int, repeat: int) -> Section:
    paths = write_runs(folder, runs, rows_per_run)
    peers = [
        Peer("merge-core (LoserTree)", lambda: merge_core(paths, "loser-tree")),
        Peer("merge-core (heap)", lambda: merge_core(paths, "heap")),
        Peer("merge-core, pyarrow readers", lambda: merge_core_readers(paths)),
        Peer("DataFusion SortPreservingMerge", lambda: datafusion(paths), "datafusion"),
        Peer("Polars merge_sorted", lambda: polars(paths), "polars"),
        Peer("decode only (pyarrow, no merge)", lambda: decode_only(paths), compared=False),
    ]
    total = runs * rows_per_run
    return Section(
        "kway",
        "K-way merge of sorted Parquet runs",
        [
            f"{runs} Parquet runs x {rows_per_run:,} rows = {total:,} rows, each sorted by a distinct int64 key,"
            " with an int64 and a string column; every tool reads the files and returns the merged table.",
            "merge-core is given the files' paths: decoded in Rust and cut into key ranges by the files' row-group"
            " statistics (the runs have no page index), the ranges merged in parallel on every core, outputs in"
            " key order; a row group a cut falls in is decoded once, for the ranges on both sides. `pyarrow"
            " readers`: one merge fed by `pyarrow.dataset` readers. The floor decodes the files with pyarrow on"
            " every core and does not merge.",
            "DataFusion: the files registered with `file_sort_order` and one partition per file, so its plan is"
            " SortPreservingMergeExec over the file scans. Polars: a balanced tree of two-way `merge_sorted`.",
        ],
        time_peers(peers, repeat, total, same_rows),
    )
