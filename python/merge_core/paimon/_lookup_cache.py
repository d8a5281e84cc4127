"""The process's cache for point lookups (``rust/read/lookup_cache.rs``): of each data
file a filtered read narrowed to a key range met, its footer and a 64-bit digest of
every row's first key column, so that the next lookup into the same bucket finds the
rows that may hold its key without decoding any key column; and of such a file, the
dictionary pages a hit reads beside its rows' pages. Bounded by a byte budget,
least recently used first out; a file replaced at its path is never served from the
entry of its predecessor.

>>> from merge_core.paimon import lookup_cache_stats, set_lookup_cache_size
>>> set_lookup_cache_size(64 << 20)
>>> lookup_cache_stats()["budget"]
67108864
>>> set_lookup_cache_size(128 << 20)  # the default again
"""

from __future__ import annotations

from .. import _native
from ..errors import InvalidInputError

DEFAULT_SIZE = 128 << 20  # as rust/read/lookup_cache.rs's DEFAULT_BUDGET


def set_lookup_cache_size(max_bytes: int) -> None:
    """Lets the cache hold at most ``max_bytes`` (0 turns it off); entries past it go now."""
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
        raise InvalidInputError(f"the lookup cache's size must be a whole number of bytes >= 0, not {max_bytes!r}")
    _native.lookup_cache(max_bytes)


def lookup_cache_stats() -> dict[str, int]:
    """The cache's figures: ``budget`` and ``bytes`` held, ``entries``, and since the
    process started, ``hits``, ``misses`` and ``evictions``."""
    return dict(_native.lookup_cache())
