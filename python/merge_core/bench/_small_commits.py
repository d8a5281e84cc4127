"""Universal compaction of a bucket after 50 small commits (issue 39's speed goal): a
one-bucket table whose base sits at the top level, then 50 write-only commits (as a
streaming job with a separate compaction job writes) each updating 0.2% of its keys.
`compact()` (Paimon's universal pick) merges what the pick takes; beside it the
whole-bucket rewrite (`compact(full=True)`, what every compaction did before universal
compaction) and the reference for the pick: a merged read of the 50 commits alone plus a
rewrite of it as one zstd Parquet file (pyarrow). Each compaction runs on a fresh copy of
the same table, best CPU of the repeats."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import merge_core as mc

from ._measure import MiB, measure, progress

COMMITS = 50
SHARE = 500  # each commit updates one key in SHARE
SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("note", pa.string()), ("amount", pa.int64())])


def rows(ids: np.ndarray, commit: int) -> pa.Table:
    keys = pa.array(ids, pa.int64())
    notes = pc.binary_join_element_wise(f"note-{commit}-", pc.cast(keys, pa.string()), "")
    return pa.table([keys, notes, pa.array(ids * 3 + commit, pa.int64())], SCHEMA)


def history(root: str, base: int, with_base: bool = True) -> mc.Table:
    """The table: `base` keys compacted to the top level (unless `with_base` is false),
    then COMMITS write-only commits of `base // SHARE` random keys each."""
    table = mc.Table.create(root, SCHEMA, key="id", buckets=1, options={"write-only": "true"})
    if with_base:
        table.write(rows(np.arange(base, dtype=np.int64), 0))
        table.compact(full=True)
    generator = np.random.default_rng(39)
    for commit in range(1, COMMITS + 1):
        table.write(rows(np.sort(generator.choice(base, max(base // SHARE, 1), replace=False)), commit))
    return table


def compaction(source: str, copy: str, full: bool, repeat: int) -> tuple[float, int, int, dict]:
    """CPU seconds (best of `repeat`, each on a fresh copy of `source`), peak memory,
    bytes written by the compaction, and its summary."""
    best_cpu, peak, written, done = float("inf"), 0, 0, {}
    for _ in range(repeat):
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(source, copy)
        table = mc.Table.open(copy)
        before = {f["path"] for f in table.files()}
        _, high, cpu, done = measure(lambda table=table: table.compact(full=full), 1)
        best_cpu, peak = min(best_cpu, cpu), max(peak, high)
        written = sum(f["bytes"] for f in table.files() if f["path"] not in before)
    return best_cpu, peak, written, done


def read_and_rewrite(root: str, out: str) -> None:
    pq.write_table(mc.Table.open(root).read().read_all(), out, compression="zstd")


def lines(folder: str, base: int, repeat: int) -> list[str]:
    """The report's lines: bytes rewritten and CPU of the pick against the whole-bucket
    rewrite and against a read plus a rewrite of what the pick takes."""
    source = os.path.join(folder, "small-commits")
    table = history(source, base)
    stored = sum(f["bytes"] for f in table.files())
    commits_only = history(os.path.join(folder, "commits-only"), base, with_base=False)
    picked_bytes = sum(f["bytes"] for f in commits_only.files())
    progress(f"  small commits: {COMMITS} commits on {base:,} base rows, {stored / MiB:.1f} MiB")
    copy = os.path.join(folder, "compacted")
    universal = compaction(source, copy, False, repeat)
    whole = compaction(source, copy, True, repeat)
    shutil.rmtree(copy, ignore_errors=True)
    rewrite = os.path.join(folder, "rewrite.parquet")
    _, _, reference_cpu, _ = measure(lambda: read_and_rewrite(commits_only.path, rewrite), repeat)
    progress(f"  universal {universal[0]:.2f} CPU s, whole bucket {whole[0]:.2f}, read + rewrite {reference_cpu:.2f}")
    return [
        f"**Universal compaction after {COMMITS} small commits.** One bucket: {base:,} rows compacted to the top"
        f" level, then {COMMITS} write-only commits of {max(base // SHARE, 1):,} random keys each"
        f" ({stored / MiB:.1f} MiB in {len(table.files())} files, the commits {picked_bytes / MiB:.2f} MiB of it)."
        f" CPU seconds, best of {repeat}, each on a fresh copy:",
        "",
        "| compaction | files merged | MiB written | CPU seconds | peak memory (MiB) |",
        "|---|---:|---:|---:|---:|",
        *(
            f"| {name} | {done['files_merged']} | {written / MiB:.2f} | {cpu:.2f} | {peak // MiB} |"
            for name, (cpu, peak, written, done) in [
                ("`compact()`: universal pick", universal),
                ("`compact(full=True)`: the whole bucket", whole),
            ]
        ),
        f"| reference: read of the {COMMITS} commits merged + rewrite | {COMMITS} | | {reference_cpu:.2f} | |",
        "",
        f"Bytes rewritten: the pick {universal[2] / max(whole[2], 1):.2f}x the whole bucket's (goal: at most 0.5x);"
        f" CPU: the pick {universal[0] / max(reference_cpu, 1e-9):.2f}x the read + rewrite of what it takes"
        " (goal: at most 1.2x).",
    ]
