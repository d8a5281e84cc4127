"""Writing a Paimon primary-key table: the contest versions as 11 commits into an
8-bucket table by merge-core, pypaimon (its Python writer and `write.native.enabled`) and
pypaimon-rust, each table read back by merge-core and checked against merge-core's;
merge-core's full compaction beside a full read and rewrite; merge-core's write into a
deletion-vector table (which no peer writes), its read beside the decode floor and the
peers' reads of it. Also the dynamic partition
pruning example of Paimon's FLIP-248."""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import os
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import merge_core as mc
from merge_core import contest

from . import _small_commits
from ._inputs import Inputs
from ._measure import MiB, Run, Section, failure, measure, missing, progress, same_rows, timed
from ._upsert import BATCH, decode_only, planned_files

BUCKETS = 8
DATABASE, TABLE = "bench", "contest"
NATIVE_WRITE = "write.native.enabled"
DV_WRITER = "merge-core mc.Table, deletion vectors"
DELETION_VECTORS = {"deletion-vectors.enabled": "true"}
PAIMON_OPTIONS = {
    "bucket": str(BUCKETS),
    "file.format": "parquet",
    "merge-engine": "aggregation",
    "fields.requests.aggregate-function": "sum",
    "fields.default-aggregate-function": "last_non_null_value",
}


def load_versions(paths: list[str]) -> list[pa.Table]:
    """The versions as the commits write them: 'null' in `name` after the base is a null."""
    return list(each_version(paths))


def each_version(paths: list[str]) -> Iterator[pa.Table]:
    """The versions of :func:`load_versions` read one at a time, for a writer that holds
    only the one it commits."""
    for i, p in enumerate(paths):
        yield contest.null_strings_as_null(pq.read_table(p), ["name"]) if i else pq.read_table(p)


def table_path(warehouse: str) -> str:
    return os.path.join(warehouse, f"{DATABASE}.db", TABLE)


# -- the writers: each creates a table and commits every version, one commit each ---------


def merge_core_write(root: str, versions: list[pa.Table], options: dict[str, str] | None = None) -> str:
    table = mc.Table.create(
        root, contest.SCHEMA, key="uuid", buckets=BUCKETS, merge=contest.CONTEST_MERGE, options=options
    )
    for data in versions:
        table.write(data)
    return root


def pypaimon_create(warehouse: str, options: dict[str, str] | None = None):
    """An empty table with the contest's rules in a local filesystem catalog."""
    from pypaimon import CatalogFactory, Schema

    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database(DATABASE, False)
    schema = pa.schema([f.with_nullable(f.name != "uuid") for f in contest.SCHEMA])
    definition = Schema.from_pyarrow_schema(
        schema, primary_keys=["uuid"], options={**PAIMON_OPTIONS, **(options or {})}
    )
    catalog.create_table(f"{DATABASE}.{TABLE}", definition, False)
    return catalog.get_table(f"{DATABASE}.{TABLE}")


def pypaimon_commits(table, versions: Iterable[pa.Table], native: bool = False) -> None:
    """One batch write and commit per version; with `native`, fails unless pypaimon's
    Rust writer did the writing (pypaimon falls back to Python silently)."""
    schema = pa.schema([f.with_nullable(f.name != "uuid") for f in contest.SCHEMA])
    for data in versions:
        builder = table.new_batch_write_builder()
        writer, commit = builder.new_write(), builder.new_commit()
        writer.write_arrow(data.cast(schema))
        if native and (type(writer).__name__ != "NativeTableWrite" or writer.__dict__.get("_python_writer")):
            raise RuntimeError(
                f"pypaimon wrote with its Python writer ({type(writer).__name__}) despite {NATIVE_WRITE}"
            )
        commit.commit(writer.prepare_commit())
        writer.close()
        commit.close()


def pypaimon_write(warehouse: str, versions: list[pa.Table], options: dict[str, str] | None = None) -> str:
    pypaimon_commits(pypaimon_create(warehouse, options), versions, native=bool(options and NATIVE_WRITE in options))
    return table_path(warehouse)


def pypaimon_contest(inputs: Inputs) -> tuple[Any, str, float]:
    """The contest versions as 11 commits by pypaimon into a Paimon primary-key table with
    the contest's rules (aggregation merge engine: sum, default last_non_null_value),
    written once a bench run: the pypaimon table, its warehouse, the write's seconds."""

    def write() -> tuple[Any, str, float]:
        warehouse = os.path.join(inputs.folder, "pypaimon")

        def commits():
            table = pypaimon_create(warehouse)
            pypaimon_commits(table, each_version(inputs.contest_versions()))
            return table

        table, seconds = timed("pypaimon write", commits)
        return table, warehouse, seconds

    return inputs.once("pypaimon table", write)


def pypaimon_rust_write(warehouse: str, versions: list[pa.Table]) -> str:
    """pypaimon-rust's batch write and commit. Its catalog cannot create a table, so the
    same definition is created by merge-core first."""
    from pypaimon_rust.datafusion import PaimonCatalog

    mc.Table.create(table_path(warehouse), contest.SCHEMA, key="uuid", buckets=BUCKETS, merge=contest.CONTEST_MERGE)
    table = PaimonCatalog({"warehouse": warehouse}).get_table((DATABASE, TABLE))
    for data in versions:
        builder = table.new_batch_write_builder()
        writer, commit = builder.new_write(), builder.new_commit()
        for batch in data.to_batches():
            writer.write_arrow(batch)
        commit.commit(writer.prepare_commit())
        writer.close()
        commit.close()
    return table_path(warehouse)


# -- the peers' reads ---------------------------------------------------------------------


def pypaimon_open(warehouse: str):
    """The contest table of a local filesystem catalog, opened by pypaimon."""
    from pypaimon import CatalogFactory

    return CatalogFactory.create({"warehouse": warehouse}).get_table(f"{DATABASE}.{TABLE}")


def pypaimon_read(table, options: dict[str, str] | None = None) -> pa.Table:
    table = table.copy(options) if options else table
    builder = table.new_read_builder()
    return builder.new_read().to_arrow(builder.new_scan().plan().splits())


def pypaimon_rust_read(warehouse: str) -> pa.Table:
    from pypaimon_rust.datafusion import PaimonCatalog

    table = PaimonCatalog({"warehouse": warehouse}).get_table((DATABASE, TABLE))
    builder = table.new_read_builder()
    return pa.Table.from_batches(builder.new_read().read(builder.new_scan().plan().splits()))


# -- what the installed peers can do ----------------------------------------------------


def version_of(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def pypaimon_lacks_native_write() -> str | None:
    """Why pypaimon cannot be asked to write natively, or None when it has the option."""
    from pypaimon.common.options.config_option import ConfigOption
    from pypaimon.common.options.core_options import CoreOptions

    keys = {v.key() for v in vars(CoreOptions).values() if isinstance(v, ConfigOption)}
    if NATIVE_WRITE in keys:
        return None
    return f"not supported: pypaimon {version_of('pypaimon')} has no table option `{NATIVE_WRITE}`"


def pypaimon_rust_lacks_write() -> str | None:
    """Why pypaimon-rust cannot write a table, or None when its API has a batch write and commit."""
    from pypaimon_rust import datafusion

    table = getattr(datafusion, "Table", None)
    builder = getattr(datafusion, "BatchWriteBuilder", None)
    can = table is not None and hasattr(table, "new_batch_write_builder")
    can = can and builder is not None and hasattr(builder, "new_write") and hasattr(builder, "new_commit")
    if can:
        return None
    return f"not supported: pypaimon-rust {version_of('pypaimon-rust')} has no table write/commit in its Python API"


# -- the benchmark ----------------------------------------------------------------------


@dataclass
class Writer:
    tool: str
    write: Callable[[str], str]  # a new folder -> the table's path
    module: str | None = None
    repeat: int | None = None
    unsupported: Callable[[], str | None] | None = None


def contents(path: str) -> pa.Table:
    return mc.Table.open(path).read(batch_size=BATCH).read_all()


def on_disk(path: str) -> tuple[int, int, bool]:
    """The table's data files: how many, their bytes on disk, and whether they store the
    `_KEY_` copies of the key columns (Paimon's older layout; newer writers may omit them)."""
    files = mc.Table.open(path).files()
    size = sum(os.path.getsize(os.path.join(path, f["path"])) for f in files)
    keys = bool(files) and any(
        n.startswith("_KEY_") for n in pq.read_schema(os.path.join(path, files[0]["path"])).names
    )
    return len(files), size, keys


def time_writer(writer: Writer, folder: str, repeat: int) -> tuple[float, int, float, str]:
    """Best time of the repeats (each a new table; the one before is removed untimed),
    highest peak, the best run's CPU seconds and the last table's path."""
    best, peak, best_cpu, path = float("inf"), 0, 0.0, ""
    for attempt in range(writer.repeat or repeat):
        shutil.rmtree(folder, ignore_errors=True)
        root = os.path.join(folder, f"{attempt}")
        seconds, high, cpu, path = measure(lambda root=root: writer.write(root), 1)
        if seconds < best:
            best, best_cpu = seconds, cpu
        peak = max(peak, high)
    return best, peak, best_cpu, path


def read_and_rewrite(path: str, out: str) -> None:
    """The reference for a full compaction: the table read merged, written as one Parquet file."""
    pq.write_table(contents(path), out, compression="zstd")


def compare(folder: str, inputs: Inputs, repeat: int) -> tuple[list[Run], int, list[str]]:
    paths = inputs.contest_versions()
    total = contest.total_rows(paths)
    versions = load_versions(paths)
    writers = [
        Writer("merge-core mc.Table", lambda root: merge_core_write(root, versions)),
        # In a catalog's layout, for the peers to read it.
        Writer(DV_WRITER, lambda root: merge_core_write(table_path(root), versions, DELETION_VECTORS)),
        # The pure-Python writer takes minutes at the full scale: timed once.
        Writer("pypaimon (Python writer)", lambda root: pypaimon_write(root, versions), "pypaimon", repeat=1),
        Writer(
            f"pypaimon {NATIVE_WRITE}",
            lambda root: pypaimon_write(root, versions, {NATIVE_WRITE: "true"}),
            "pypaimon",
            unsupported=pypaimon_lacks_native_write,
        ),
        Writer(
            "pypaimon-rust",
            lambda root: pypaimon_rust_write(root, versions),
            "pypaimon_rust",
            unsupported=pypaimon_rust_lacks_write,
        ),
    ]
    runs: list[Run] = []
    no_key_copy: list[str] = []
    reference: pa.Table | None = None
    mine: str | None = None
    written: dict[str, str] = {}
    for i, writer in enumerate(writers):
        why = missing(writer.module) or (writer.unsupported() if writer.unsupported else None)
        if why:
            runs.append(Run(writer.tool, note=why))
            progress(f"  {writer.tool}: {why}")
            continue
        try:
            seconds, peak, cpu, path = time_writer(writer, os.path.join(folder, f"w{i}"), repeat)
            result = contents(path)
        except Exception as error:  # a writer's failure is a finding of the benchmark
            runs.append(Run(writer.tool, note=failure(error)))
            progress(f"  {writer.tool}: {runs[-1].note}")
            continue
        written[writer.tool] = path
        files, size, keys = on_disk(path)
        if not keys:
            no_key_copy.append(writer.tool)
        same = None if reference is None else same_rows(reference, result, order_by="uuid")
        if reference is None:
            reference, mine = result, (path if i == 0 else None)
        extra = {"data files": str(files), "data MiB": f"{size / MiB:.1f}", "compaction (s)": "n/a"}
        runs.append(Run(writer.tool, seconds, total, peak, same, cpu, extra=extra))
        checked = "reference" if same is None else f"same result: {same}"
        progress(f"  {writer.tool}: {seconds:.2f} s, peak +{peak // MiB} MiB, {files} files, {checked}")
        del result
    notes = [f"Data files without the `_KEY_uuid` copy of the key: {', '.join(no_key_copy)}."] if no_key_copy else []
    if mine is not None:
        notes += compact(runs[0], mine, reference, os.path.join(folder, "rewrite.parquet"), repeat)
    if DV_WRITER in written and reference is not None:
        notes += deletion_vector_reads(written[DV_WRITER], reference, repeat)
    return runs, total, notes


def deletion_vector_reads(path: str, reference: pa.Table, repeat: int) -> list[str]:
    """merge-core's read of its deletion-vector table beside the decode floor (no merge is
    needed: each key's live row is in one file), and whether the peers read the same rows."""
    table = mc.Table.open(path)
    stored = sum(f.rows for f in planned_files(table))
    seconds, _, cpu, _ = measure(lambda: table.read(batch_size=BATCH).read_all(), repeat)
    floor, _, floor_cpu, _ = measure(lambda: decode_only(table, stored), repeat)
    progress(f"  deletion-vector table read: {seconds:.2f} s, {cpu:.2f} CPU s; decode floor {floor:.2f} s")
    warehouse = os.path.dirname(os.path.dirname(path))
    peers = []
    for tool, module, read in [
        ("pypaimon", "pypaimon", lambda: pypaimon_read(pypaimon_open(warehouse))),
        ("pypaimon-rust", "pypaimon_rust", lambda: pypaimon_rust_read(warehouse)),
    ]:
        why = missing(module)
        try:
            same = why or f"same rows: {same_rows(reference, read(), order_by='uuid')}"
        except Exception as error:  # a peer's failure is a finding of the benchmark
            same = failure(error)
        peers.append(f"{tool} {same}")
    return [
        f"{DV_WRITER}: `deletion-vectors.enabled`; each commit's level-0 files are compacted by lookup as it"
        f" commits. Its read takes {seconds:.2f} s, {cpu:.2f} CPU s ({cpu / max(floor_cpu, 1e-9):.2f}x the CPU"
        f" of decoding its {stored:,} stored rows alone: {floor:.2f} s, {floor_cpu:.2f} CPU s). Read by the"
        f" peers: {'; '.join(peers)}."
    ]


def compact(run: Run, path: str, before: pa.Table, rewrite: str, repeat: int) -> list[str]:
    """merge-core's full compaction of its table (timed once: it changes the table) next to
    a full read and rewrite; the compacted table must read as before."""
    seconds, _, _, _ = measure(lambda: read_and_rewrite(path, rewrite), repeat)
    run.extra["read + rewrite (s)"] = f"{seconds:.2f}"
    progress(f"  read + rewrite: {seconds:.2f} s")
    table = mc.Table.open(path)
    try:
        seconds, peak, cpu, done = measure(lambda: table.compact(full=True), 1)
    except Exception as error:
        run.extra["compaction (s)"] = failure(error)
        return []
    run.extra["compaction (s)"] = f"{seconds:.2f}"
    run.same = same_rows(before, contents(path), order_by="uuid")
    size = on_disk(path)[1]
    progress(f"  compaction: {seconds:.2f} s, same rows after it: {run.same}")
    return [
        f"merge-core's compaction merged {done['files_merged']} files into {done['files_written']}"
        f" ({size / MiB:.1f} MiB) in {seconds:.2f} s, {cpu:.2f} CPU s, peak +{peak // MiB} MiB."
    ]


def dpp_example(folder: str, rows: int) -> list[str]:
    """A fact table partitioned by date read through a date dimension filtered by year."""
    days = [dt.date(1998, 1, 1) + dt.timedelta(days=i) for i in range(3 * 365)]
    schema = pa.schema([("id", pa.int64()), ("returned", pa.date32()), ("amount", pa.int64())])
    table = mc.Table.create(os.path.join(folder, "sales"), schema, key="id", partition_by="returned", buckets=2)
    ids = np.arange(rows, dtype=np.int64)
    table.write(pa.table({"id": ids, "returned": pa.array(days).take(ids % len(days)), "amount": ids}))
    date_dim = pa.table({"d_date": days, "d_year": [d.year for d in days]})
    year_2000 = date_dim.filter(pc.equal(date_dim.column("d_year"), 2000))
    lines = [
        f"A fact table of {rows:,} rows partitioned by day over 3 years (2 buckets), read through a date"
        " dimension filtered to the year 2000 (`mc.DynamicFilter(date_dim, 'd_date', 'returned')`):",
        "",
        "| read | partitions read | files read | rows | seconds |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, dynamic in [
        ("without the filter", None),
        ("with the dynamic filter", mc.DynamicFilter(year_2000, "d_date", "returned")),
    ]:
        start = time.perf_counter()
        stream = table.read(dynamic_filter=dynamic)
        out = stream.read_all()
        seconds = time.perf_counter() - start
        s = stream.stats
        lines.append(
            f"| {name} | {s['partitions_read']} of {s['partitions_total']} | {s['files_read']} of {s['files_total']}"
            f" | {out.num_rows:,} | {seconds:.2f} |"
        )
    return lines


def run(folder: str, inputs: Inputs, repeat: int) -> Section:
    runs, total, notes = compare(folder, inputs, repeat)
    return Section(
        "table",
        "Writing a Paimon table: merge-core, pypaimon, pypaimon-rust",
        [
            f"The contest versions ({inputs.base_rows:,} base rows + 10 increments = {total:,} rows, loaded into memory"
            f" first) written as 11 commits into a new {BUCKETS}-bucket Paimon primary-key table, merge engine"
            " `aggregation` (requests `sum`, others `last_non_null_value`). Seconds: table creation + the 11"
            f" commits, best of {repeat} (pypaimon's Python writer: once); rows/s count input rows. merge-core's"
            " writes compact as Paimon's Java writer does (a bucket's sorted runs past"
            " `num-sorted-run.compaction-trigger` are merged in the same commit); pypaimon's and pypaimon-rust's"
            " never compact, so they write less.",
            f"pypaimon {version_of('pypaimon')} through a local filesystem catalog, once as is and once with"
            f" `{NATIVE_WRITE}=true` (its Rust writer; the commit stays pypaimon's); pypaimon-rust"
            f" {version_of('pypaimon-rust')} through its own batch write and commit, into a table created by"
            " merge-core (its `PaimonCatalog` has no `create_table`).",
            "Data MiB: the table's data files on disk after the writes. Every table is read by merge-core and"
            " checked row by row against merge-core's; merge-core's own `same result` is its table after the"
            " compaction against before.",
            "Compaction: merge-core's full compaction of its table, timed once; the compacted table must read the"
            " same rows. pypaimon and pypaimon-rust cannot compact from Python; the reference beside it is a full"
            " merged read of the table by merge-core plus a rewrite of the result as one zstd Parquet file (pyarrow).",
            *notes,
            "Measured in one run on a noisy shared machine: compare the ratios, not the absolute times.",
        ],
        runs,
        extra_columns=["data files", "data MiB", "compaction (s)", "read + rewrite (s)"],
        after=[
            "### Dynamic partition pruning",
            "",
            *dpp_example(folder, max(inputs.base_rows // 2, 10_000)),
            "",
            "### Compaction after small commits",
            "",
            *_small_commits.lines(folder, inputs.base_rows, repeat),
        ],
    )
