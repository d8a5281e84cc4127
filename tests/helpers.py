"""Helpers shared by the tests: building runs from rows and cutting them into batches;
reading a table the way the peers (pypaimon, pypaimon-rust) do."""

from __future__ import annotations

import socket
from pathlib import Path

import pyarrow as pa


def table_of(rows: list[dict], schema: pa.Schema) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=schema)


def cut(table: pa.Table, cuts: list[int]) -> list[pa.RecordBatch]:
    """The table as batches cut at the given positions (repeats give empty batches)."""
    bounds = sorted([0, table.num_rows, *(c % (table.num_rows + 1) for c in cuts)])
    return [
        table.slice(a, b - a).combine_chunks().to_batches()[0]
        if b > a
        else pa.RecordBatch.from_pylist([], schema=table.schema)
        for a, b in zip(bounds, bounds[1:], strict=False)
    ]


def rows_of(stream_or_table) -> list[dict]:
    table = stream_or_table if isinstance(stream_or_table, pa.Table) else stream_or_table.read_all()
    return table.to_pylist()


def pypaimon_commit(table, rows: list[dict], schema: pa.Schema) -> None:
    """One pypaimon commit of ``rows`` into ``table`` (a pypaimon table)."""
    builder = table.new_batch_write_builder()
    writer, committer = builder.new_write(), builder.new_commit()
    writer.write_arrow(pa.Table.from_pylist(rows, schema=schema))
    committer.commit(writer.prepare_commit())
    writer.close()
    committer.close()


def pypaimon_rust_rows(root: Path, snapshot: int | None = None, options: dict[str, str] | None = None) -> list[dict]:
    """The rows pypaimon-rust reads from the table at ``root`` (``<warehouse>/<db>.db/<t>``)."""
    from pypaimon_rust.datafusion import PaimonCatalog

    table = PaimonCatalog({"warehouse": str(root.parent.parent)}).get_table((root.parent.name[:-3], root.name))
    options = {**(options or {}), **({} if snapshot is None else {"scan.snapshot-id": str(snapshot)})}
    builder = table.new_read_builder(options)
    return [r for b in builder.new_read().read(builder.new_scan().plan().splits()) for r in b.to_pylist()]


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on (for a server a test starts)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pypaimon_table(root: Path):
    """pypaimon's view of the table at ``root`` (``<warehouse>/<db>.db/<t>``)."""
    import pypaimon

    catalog = pypaimon.CatalogFactory.create({"warehouse": str(root.parent.parent)})
    return catalog.get_table(f"{root.parent.name[:-3]}.{root.name}")


def referenced_files(root: Path) -> set[str]:
    """Every data and changelog file the kept snapshots and changelogs need, as pypaimon
    reads their manifests (an independent reader of the metadata): a snapshot's live
    data files and changelog files, a kept changelog's changelog files."""
    from pypaimon.changelog.changelog_manager import ChangelogManager
    from pypaimon.manifest.manifest_file_manager import ManifestFileManager
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    table = pypaimon_table(root)
    lists, manifests = ManifestListManager(table), ManifestFileManager(table)

    def names(metas, fold: bool) -> set[str]:
        live: set[str] = set()
        for meta in metas:
            for e in manifests.read(meta.file_name):
                (live.add if e.kind == 0 or not fold else live.discard)(e.file.file_name)
        return live

    out = set()
    for snap in _pypaimon_snapshots(table, root):
        out |= names(lists.read_all(snap), fold=True)
        out |= names(lists.read_changelog(snap), fold=False) if snap.changelog_manifest_list else set()
    for changelog in ChangelogManager(table.file_io, str(root)).changelogs():
        if changelog.changelog_manifest_list:
            out |= names(lists.read_changelog(changelog), fold=False)
        else:  # without a producer, a changelog's rows are its delta's added files
            out |= {
                n
                for m in lists.read_delta(changelog)
                for e in manifests.read(m.file_name)
                if e.kind == 0
                for n in [e.file.file_name]
            }
    return out


def referenced_index_files(root: Path) -> set[str]:
    """Every index file (deletion vectors, hash index) the kept snapshots' index
    manifests name, as pypaimon reads them."""
    from pypaimon.manifest.index_manifest_file import IndexManifestFile

    table = pypaimon_table(root)
    index_manifests = IndexManifestFile(table)
    out = set()
    for snap in _pypaimon_snapshots(table, root):
        if snap.index_manifest:
            out |= {e.index_file.file_name for e in index_manifests.read(snap.index_manifest) if e.kind == 0}
    return out


def _pypaimon_snapshots(table, root: Path) -> list:
    ids = sorted(int(p.name.split("-")[1]) for p in (root / "snapshot").glob("snapshot-*"))
    return [table.snapshot_manager().get_snapshot_by_id(i) for i in ids]
