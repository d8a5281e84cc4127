"""merge-core: k-way merge of sorted Arrow runs with Paimon's merge functions.

>>> import pyarrow as pa, merge_core as mc
>>> old = pa.table({"k": [1, 2], "v": ["a", "b"]})
>>> new = pa.table({"k": [2, 3], "v": ["B", "c"]})
>>> mc.merge([old, new], key="k").read_all().to_pydict()
{'k': [1, 2, 3], 'v': ['a', 'B', 'c']}
"""

from __future__ import annotations

import importlib

from .errors import (
    CommitConflictError,
    CorruptTableError,
    InternalError,
    InvalidInputError,
    MergeCoreError,
    SpillError,
    TableExistsError,
    TableIOError,
    TableNotFoundError,
    UnsupportedFeatureError,
)

# The public names, imported on first use: ``import merge_core`` stays light, so the
# command line can take Ctrl-C (and answer --help) before pyarrow and the native module
# are loaded.
_LAZY = {
    "merge": "._merge",
    "Algorithm": "._merge",
    "sort": "._sort",
    "SortBuffer": "._sort",
    "Stream": "._stream",
    "Deduplicate": ".merge_functions",
    "FirstRow": ".merge_functions",
    "PartialUpdate": ".merge_functions",
    "Aggregate": ".merge_functions",
    "MergeSpec": ".merge_functions",
    "PaimonMerge": ".paimon",
    "merge_from_paimon_options": ".paimon",
    "paimon_options": ".paimon",
    "Table": ".paimon",
    "Catalog": ".paimon",
    "DynamicFilter": "._filter",
    "__version__": "._native",
}

TYPE_CHECKING = False  # typing's, without importing typing (a few ms before Ctrl-C is handled)
if TYPE_CHECKING:
    from ._filter import DynamicFilter
    from ._merge import Algorithm, merge
    from ._native import __version__
    from ._sort import SortBuffer, sort
    from ._stream import Stream
    from .merge_functions import Aggregate, Deduplicate, FirstRow, MergeSpec, PartialUpdate
    from .paimon import Catalog, PaimonMerge, Table, merge_from_paimon_options, paimon_options


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'merge_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "merge",
    "Algorithm",
    "MergeSpec",
    "sort",
    "SortBuffer",
    "Stream",
    "Deduplicate",
    "FirstRow",
    "PartialUpdate",
    "Aggregate",
    "PaimonMerge",
    "merge_from_paimon_options",
    "paimon_options",
    "MergeCoreError",
    "InvalidInputError",
    "SpillError",
    "InternalError",
    "CommitConflictError",
    "TableIOError",
    "TableNotFoundError",
    "TableExistsError",
    "CorruptTableError",
    "UnsupportedFeatureError",
    "Table",
    "Catalog",
    "DynamicFilter",
    "__version__",
]
