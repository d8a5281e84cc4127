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
    row_kind: str | None,
    merge: dict[str, Any],
    algorithm: str,
    batch_size: int,
) -> Stream: ...

class SortBuffer:
    def __init__(
        self,
        schema: pa.Schema,
        key: list[str],
        sequence: list[str],
        row_kind: str | None,
        merge: dict[str, Any] | None,
        memory_limit: int,
        spill_dir: str | None,
        spill_compression: str,
        max_fan_in: int,
        max_disk_size: int | None,
        batch_size: int,
    ) -> None: ...
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

def sort(
    source: object,
    key: list[str],
    sequence: list[str],
    row_kind: str | None,
    merge: dict[str, Any] | None,
    memory_limit: int,
    spill_dir: str | None,
    spill_compression: str,
    max_fan_in: int,
    max_disk_size: int | None,
    batch_size: int,
) -> Stream: ...
