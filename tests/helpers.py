"""Helpers shared by the tests: building runs from rows and cutting them into batches."""

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
