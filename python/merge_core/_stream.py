"""``mc.Stream``: the one type every read and merge returns.

Most streams are the native module's (a merge, a sort, a merged table read). A few reads
shape their batches in Python after the native stream (a filtered read, an append table's
read, a change read: ``paimon._batches.BatchStream``). Both are a ``Stream``:
``isinstance(x, mc.Stream)`` holds for each, and each offers ``schema``, ``stats``,
iteration over record batches, ``read_all()`` and the Arrow C stream interface."""

from __future__ import annotations

import abc

import pyarrow as pa

from . import _native


class Stream(abc.ABC):
    """A lazy stream of record batches, read once: iterate it, call ``read_all()``, or
    hand it to anything that reads the Arrow C stream. ``stats`` counts what was read."""

    schema: pa.Schema

    @property
    @abc.abstractmethod
    def stats(self) -> dict[str, int]:
        """What the stream read and merged (``rows_in``, ``rows_out``, ``files_read``...)."""


Stream.register(_native.Stream)
