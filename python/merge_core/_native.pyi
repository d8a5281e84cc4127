"""Type stubs of the native module (rust/python/).

Every call takes its data and one dict of options, typed here (``TypedDict``), read in
one place of the binding (``rust/python/options.rs``), which refuses a key it does not know.
"""

from collections.abc import Callable
from typing import Any, TypedDict

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

class MergeOptions(TypedDict):
    key: list[str]
    sequence: list[str]
    descending: bool
    row_kind: str | None
    merge: dict[str, Any]  # merge_core.merge_functions.merge_spec
    algorithm: str
    batch_size: int
    threads: int

class SortOptions(TypedDict, total=False):  # merge_core.inputs.sort_options
    key: list[str]
    sequence: list[str]
    descending: bool
    system_sequence: str | None
    row_kind: str | None
    merge: dict[str, Any] | None
    memory_limit: int
    spill_dir: str | None
    spill_compression: str
    max_fan_in: int
    max_disk_size: int | None
    batch_size: int
    partial: bool

class ReadOptions(TypedDict):
    key: list[str]
    sequence: list[str]
    descending: bool
    merge: dict[str, Any]
    batch_size: int
    columns: list[str]
    threads: int
    stats: list[tuple[str, int]]  # the plan's figures, reported in the stream's stats
    read_ahead: int | None  # bytes of merged batches each merge may hold ready (None: a share of 128 MiB)

class PlannedFile:
    """A data file as the plan reads it (``deleted``: positions, little-endian u64s)."""

    def __init__(
        self,
        path: str,
        columns: list[str | None],
        deleted: bytes | None = None,
        fetch: Callable[[], bytes] | None = None,
    ) -> None: ...

def merge(runs: list[Any], options: MergeOptions) -> Stream: ...

class SortBuffer:
    def __init__(self, schema: pa.Schema, options: SortOptions) -> None: ...
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

def sort(source: object, options: SortOptions) -> Stream: ...
def retract_refusal(schema: pa.Schema, options: SortOptions, kind: int) -> str | None: ...
def bucket_ids(batch: pa.RecordBatch, key: list[str], buckets: int) -> pa.UInt32Array: ...
def paimon_bucket_ids(batch: pa.RecordBatch, columns: list[str], buckets: int) -> pa.Int32Array: ...
def paimon_row_hashes(batch: pa.RecordBatch, columns: list[str]) -> pa.Int32Array: ...
def read_paimon(schema: pa.Schema, sections: list[list[list[PlannedFile]]], options: ReadOptions) -> Stream: ...
def lookup_cache(max_bytes: int | None = None) -> dict[str, int]: ...
