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
