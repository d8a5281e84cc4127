"""What planning learns of one snapshot, kept for the next read of the same snapshot.

A point lookup plans a read of one key: most of that plan depends on the snapshot only
(its live files, their decoded key and value statistics, each bucket's sections and the
files' read descriptions, the deletion vectors), not on the key. A :class:`Table` keeps
one memo, for the snapshot it planned last; a read of any other snapshot (a new commit,
by merge-core or by another writer, or a read that travels) starts a new memo, so
nothing is served from another snapshot's files.

A snapshot is identified by its id, its manifest lists and its index manifest: Paimon
names them by random UUIDs and never reuses a name, so a snapshot id taken again after a
rollback (or a table deleted and created again at the same path) has other lists and
another memo.

>>> memo = SnapshotMemo((1, "base", "delta", None), [])
>>> memo.once(("answer",), lambda: 42), memo.once(("answer",), lambda: 0)
(42, 42)
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from ._meta import DataFile, Snapshot

T = TypeVar("T")


SnapshotKey = tuple[int, str, str, str | None]


def snapshot_key(snap: Snapshot) -> SnapshotKey:
    """What tells one snapshot from another, even one taken again by the same id."""
    return (snap.id, snap.base_manifest_list, snap.delta_manifest_list, snap.index_manifest)


class SnapshotMemo:
    """One snapshot's live ``files`` (as its manifests list them) and the values planning
    derived from them, each computed once by :meth:`once` (``key`` None: a memo of one
    plan only, kept by no table)."""

    def __init__(self, key: SnapshotKey | None, files: list[DataFile]):
        self.key = key
        self.files = files
        self._values: dict[Hashable, Any] = {}

    def once(self, key: Hashable, make: Callable[[], T]) -> T:
        """``make()`` the first time ``key`` is asked for, the same value after. ``key``
        must name everything the value depends on beyond the snapshot (a schema id, the
        columns read)."""
        try:
            return self._values[key]
        except KeyError:
            value = self._values[key] = make()
            return value
