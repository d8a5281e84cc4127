"""Apache Paimon primary-key tables, read and written natively: ``mc.Table``.

Planning happens here, in Python, from the table's own files (``_schema``, ``_meta``,
``_binary``, ``_dv``, ``_paths``, ``_plan``; keys compared in Paimon's order by
``_key_order``); the data files are decoded and merged in Rust (``_native.read_paimon``).
Writes (``_write``) sort and fold in Rust's sort buffer and write Parquet with pyarrow;
commits (``_commit``; overwrites, dropped partitions and truncates in ``_overwrite``),
``_expire`` and ``_rollback`` handle the metadata; ``_postpone`` the
rows a postponed-bucket table keeps outside its buckets until a compaction; ``_travel``
picks the snapshot a read takes and ``_branch`` points a table at one of its branches.
``_validation`` holds the rules Paimon checks a schema against, at create and at open.
"""

from ._catalog import Catalog
from ._changes import ROW_KIND
from ._commit import CommitMessage, summary
from ._compact import CompactTask
from ._lookup_cache import lookup_cache_stats, set_lookup_cache_size
from ._merge_options import PaimonMerge, merge_from_paimon_options, paimon_options
from ._plan import FileRead, Plan, Section, Split
from ._table import COMPACT_BATCH_ROWS, READ_BATCH_ROWS, Table
from ._write import ENCODE_MEMORY, TableWrite

__all__ = [
    "Table",
    "Catalog",
    "Plan",
    "Split",
    "Section",
    "FileRead",
    "TableWrite",
    "CommitMessage",
    "CompactTask",
    "ROW_KIND",
    "summary",
    "PaimonMerge",
    "merge_from_paimon_options",
    "paimon_options",
    "set_lookup_cache_size",
    "lookup_cache_stats",
    # The sizes the memory bounds of docs/memory.md are written in.
    "READ_BATCH_ROWS",
    "COMPACT_BATCH_ROWS",
    "ENCODE_MEMORY",
]
