"""Apache Paimon primary-key tables, read natively: ``PaimonTable`` (opened by
``mc.Table.open`` on a Paimon table directory).

Planning happens here, in Python, from the table's own files (``_schema``, ``_meta``,
``_binary``, ``_dv``, ``_paths``, ``_plan``); the data files are decoded and merged in
Rust (``_native.read_paimon``).
"""

from ._plan import FileRead, Plan, Section, Split
from ._table import PaimonTable

__all__ = ["PaimonTable", "Plan", "Split", "Section", "FileRead"]
