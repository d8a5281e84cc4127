"""Reading and writing a table's data files (one sorted run of one partition and bucket).

Everything here works a batch at a time with Arrow kernels; rows never pass through Python.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ._format import KIND, SEQ, DataFile, TableMeta, new_data_path

ROW_GROUP_ROWS = 128 * 1024
READ_BATCH_ROWS = 64 * 1024
RETRACT_CODES = pa.array([1, 3], pa.int8())  # -U, -D
# Runs are written once and read (merged) many times, so their encoding favours decode
# speed: plain values with lz4 decode about a quarter faster than dictionary pages for
# the contest data, at 13% more bytes; `_seq` counts up, which delta encoding stores in
# a few bits a row. Statistics only for `_seq` (nothing prunes on the others).
PARQUET_OPTIONS = {
    "compression": "lz4",
    "use_dictionary": False,
    "column_encoding": {SEQ: "DELTA_BINARY_PACKED"},
    "write_statistics": [SEQ],
}


class RunWriter:
    """Writes one run: sorted slices in, one Parquet file and its :class:`DataFile` out."""

    def __init__(self, root: Path, meta: TableMeta, partition: tuple[str | None, ...], bucket: int, level: int):
        self.root, self.partition, self.bucket, self.level = root, partition, bucket, level
        self.path = new_data_path(meta, partition, bucket)
        (root / self.path).parent.mkdir(parents=True, exist_ok=True)
        self.schema = meta.file_schema()
        self._writer = pq.ParquetWriter(root / self.path, self.schema, **PARQUET_OPTIONS)
        self._pending: list[pa.RecordBatch] = []
        self._pending_rows = 0
        self.rows = 0
        self.retracts = 0

    def write(self, batch: pa.RecordBatch) -> None:
        """Adds sorted rows of the table's columns. ``_kind`` defaults to +I; ``_seq``
        numbers the run's rows unless ``batch`` carries it (compaction keeps the rows' own)."""
        if KIND not in batch.schema.names:  # every row an add
            batch = batch.append_column(KIND, pa.array(np.zeros(batch.num_rows, np.int8)))
        if SEQ not in batch.schema.names:
            seq = pa.array(np.arange(self.rows, self.rows + batch.num_rows, dtype=np.int64))
            batch = batch.append_column(SEQ, seq)
        batch = pa.RecordBatch.from_arrays([batch.column(n) for n in self.schema.names], schema=self.schema)
        if batch.num_rows:
            self.retracts += pc.sum(pc.is_in(batch.column(KIND), RETRACT_CODES)).as_py()
        self.rows += batch.num_rows
        self._pending.append(batch)
        self._pending_rows += batch.num_rows
        if self._pending_rows >= ROW_GROUP_ROWS:
            self._flush()

    def _flush(self) -> None:
        if self._pending:
            table = pa.Table.from_batches(self._pending, self.schema)
            self._writer.write_table(table, row_group_size=max(table.num_rows, 1))
            self._pending, self._pending_rows = [], 0

    def close(self) -> DataFile:
        self._flush()
        self._writer.close()
        size = (self.root / self.path).stat().st_size
        return DataFile(
            self.path,
            self.partition,
            self.bucket,
            self.rows,
            self.retracts,
            self.level,
            bytes=size,
        )

    def abort(self) -> None:
        self._writer.close()
        (self.root / self.path).unlink(missing_ok=True)


def open_run(root: Path, file: DataFile, schema: pa.Schema) -> pa.RecordBatchReader:
    """A lazy reader of ``file``'s columns in ``schema``, with absolute ``_seq`` numbers.
    The file is opened only when the merge first pulls from it."""

    def batches() -> Iterator[pa.RecordBatch]:
        parquet = pq.ParquetFile(root / file.path)
        for batch in parquet.iter_batches(batch_size=READ_BATCH_ROWS, columns=schema.names, use_threads=True):
            if file.sequence_base:
                i = batch.schema.get_field_index(SEQ)
                batch = batch.set_column(i, schema.field(i), pc.add(batch.column(i), file.sequence_base))
            yield batch

    return pa.RecordBatchReader.from_batches(schema, batches())
