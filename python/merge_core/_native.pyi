"""Type stubs of the native module (rust/python/)."""

from typing import Any

import pyarrow as pa

__version__: str

class Stream:
    """A lazy stream of merged record batches."""

    @property
    def schema(self) -> pa.Schema: ...
    @property
    def stats(self) -> dict[str, int]: ...
    def __iter__(self) -> Stream: ...
    def __next__(self) -> pa.RecordBatch: ...
    def read_all(self) -> pa.Table: ...
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...

def merge(
    runs: list[Any],
    key: list[str],
    sequence: list[str],
    descending: bool,
    row_kind: str | None,
    merge: dict[str, Any],
    algorithm: str,
    batch_size: int,
) -> Stream: ...

class SortBuffer:
    def __init__(self, schema: pa.Schema, options: dict[str, Any]) -> None: ...
    def write(self, source: object) -> None: ...
    def finish(self) -> Stream: ...
    def close(self) -> None: ...
    @property
    def memory_bytes(self) -> int: ...
    @property
    def peak_memory_bytes(self) -> int: ...
    @property
    def spilled_runs(self) -> int: ...
    @property
    def spilled_bytes(self) -> int: ...
    @property
    def rows_written(self) -> int: ...
    @property
    def spill_path(self) -> str | None: ...

def sort(source: object, options: dict[str, Any]) -> Stream: ...
def bucket_ids(batch: pa.RecordBatch, key: list[str], buckets: int) -> pa.UInt32Array: ...
def paimon_bucket_ids(batch: pa.RecordBatch, columns: list[str], buckets: int) -> pa.Int32Array: ...
def merge_groups(
    schema: pa.Schema,
    groups: list[list[Any]],
    key: list[str],
    sequence: list[str],
    descending: bool,
    system_sequence: str | None,
    row_kind: str | None,
    merge: dict[str, Any],
    batch_size: int,
    columns: list[str] | None,
    partial: bool,
    stats: list[tuple[str, int]],
    threads: int,
) -> Stream: ...
def read_paimon(
    schema: pa.Schema,
    sections: list[list[list[tuple[str, list[str | None], bytes | None]]]],
    key: list[str],
    sequence: list[str],
    descending: bool,
    merge: dict[str, Any],
    batch_size: int,
    columns: list[str],
    threads: int,
    stats: list[tuple[str, int]],
) -> Stream: ...
