"""Merge-on-read primary-key tables: ``mc.Table`` and ``mc.DynamicFilter``.

The on-disk format is described in ``_format.py`` and docs/table-format.md; writes go
through ``_write.py``, file access through ``_files.py``, partition pruning through
``_prune.py``; the merging itself happens in Rust (``_native.merge_groups``).
"""

from ._format import DataFile, Snapshot
from ._prune import DynamicFilter
from ._table import Table

__all__ = ["Table", "DynamicFilter", "Snapshot", "DataFile"]
