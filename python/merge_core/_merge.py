"""``merge_core.merge``: a k-way merge of sorted runs, folding each key's versions."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from . import _native
from ._native import Stream
from .errors import InvalidInputError, MergeCoreError
from .inputs import as_stream_sources, check_threads, column_names, is_descending
from .merge_functions import MergeSpec, merge_spec

Algorithm = Literal["loser-tree", "heap", "paimon-loser-tree"]


def merge(
    runs: Iterable[Any],
    key: str | Iterable[str],
    sequence: str | Iterable[str] | None = None,
    row_kind: str | None = None,
    merge: MergeSpec = "deduplicate",
    algorithm: Algorithm = "loser-tree",
    batch_size: int = 8192,
    sequence_order: Literal["ascending", "descending"] = "ascending",
    threads: int | None = None,
    filesystem: Any = None,
) -> Stream:
    """Merge sorted runs key by key, folding the versions of each key.

    Args:
        runs: the runs, oldest first. Each is a pyarrow Table, RecordBatch or
            RecordBatchReader, an iterable of RecordBatches, any object with
            ``__arrow_c_stream__`` (polars, DuckDB, DataFusion), or the path of a
            Parquet file (``str`` or ``os.PathLike``): a local one is decoded in Rust
            ahead of the merge; an ``s3://`` URI (or a path on ``filesystem``) is read
            through pyarrow. Each must be sorted ascending by ``key``, with each key at
            most once unless ``merge="none"``.
        key: the key column, or several (compared column by column).
        sequence: column(s) ordering the versions of a key (Paimon's ``sequence.field``): a
            higher value is newer, a null older than any value, equal values fall back to
            run order; without it a later run is newer.
        row_kind: a column of row kinds (``+I``, ``-U``, ``+U``, ``-D`` or codes 0..3).
        merge: how the versions of a key fold: ``"deduplicate"``, ``"first-row"``,
            ``"partial-update"``, ``"aggregate"`` (or the option objects
            ``mc.Deduplicate``, ``mc.FirstRow``, ``mc.PartialUpdate``, ``mc.Aggregate``),
            or ``"none"`` to keep every row.
        algorithm: ``"loser-tree"`` (a plain loser tree, the default), ``"heap"``
            (the baseline) or ``"paimon-loser-tree"`` (Paimon's, with its per-run states);
            the output is the same.
        batch_size: rows per output batch (the last may be shorter).
        sequence_order: ``"descending"`` makes a *lower* sequence value newer (Paimon's
            ``sequence.field.sort-order``).
        threads: threads merging Parquet files given as paths (default: one per core):
            in key ranges cut by the files' page statistics, else decoding ahead of one
            merging thread.
        filesystem: a ``pyarrow.fs.FileSystem`` the paths are on (default: local paths,
            ``file://`` and ``s3://`` URIs, S3 configured by the ``AWS_*`` variables).

    Returns:
        A lazy :class:`Stream` of record batches; the merge runs as it is consumed.

    >>> import pyarrow as pa, merge_core as mc
    >>> a = pa.table({"k": [1, 2], "v": [10, 20], "op": ["+I", "+I"]})
    >>> b = pa.table({"k": [2], "v": [0], "op": ["-D"]})
    >>> mc.merge([a, b], key="k", row_kind="op").read_all().to_pydict()
    {'k': [1], 'v': [10], 'op': ['+I']}
    """
    if not isinstance(batch_size, int) or batch_size < 1:
        raise InvalidInputError(f"batch_size must be a positive integer, got {batch_size!r}")
    keys = column_names(key, "key")
    sequences = column_names(sequence, "sequence")
    spec = merge_spec(merge)
    descending = is_descending(sequence_order)
    try:
        sources = as_stream_sources(runs, filesystem)
        threads = check_threads(threads)
        options = {
            "key": keys,
            "sequence": sequences,
            "descending": descending,
            "row_kind": row_kind,
            "merge": spec,
            "algorithm": algorithm,
            "batch_size": batch_size,
            "threads": threads,
        }
        return _native.merge(sources, options)
    except ValueError as e:
        if isinstance(e, MergeCoreError):
            raise
        raise InvalidInputError(str(e)) from e
