"""Apache Paimon primary-key tables, read and written natively: ``PaimonTable`` (opened
by ``mc.Table.open`` on a Paimon table directory, or made by ``PaimonTable.create``).

Planning happens here, in Python, from the table's own files (``_schema``, ``_meta``,
``_binary``, ``_dv``, ``_paths``, ``_plan``); the data files are decoded and merged in
Rust (``_native.read_paimon``). Writes (``_write``) sort and fold in Rust's sort buffer and
write Parquet with pyarrow; commits (``_commit``) and ``_expire`` handle the metadata.
"""

from ._commit import CommitMessage
from ._plan import FileRead, Plan, Section, Split
from ._table import PaimonTable
from ._write import TableWrite

__all__ = ["PaimonTable", "Plan", "Split", "Section", "FileRead", "TableWrite", "CommitMessage"]
