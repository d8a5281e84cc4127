"""Merge-function option objects. Each turns into a plain dict spec that the native
module reads in one place (``rust/python/options.rs``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .errors import InvalidInputError


@dataclass(frozen=True)
class Deduplicate:
    """The newest version of a key wins; if it is a retract the key is dropped.

    ``ignore_delete`` discards retracts first; ``drop_deletes=False`` keeps a deleted
    key as one ``-D`` row.
    """

    ignore_delete: bool = False
    drop_deletes: bool = True

    def _spec(self) -> dict[str, Any]:
        return {"function": "deduplicate", **asdict(self)}


MergeSpec = str | Deduplicate


def merge_spec(merge: MergeSpec) -> dict[str, Any]:
    """The dict spec of a merge option (a name or an option object)."""
    if isinstance(merge, str):
        return {"function": merge.replace("_", "-")}
    spec = getattr(merge, "_spec", None)
    if spec is None:
        raise InvalidInputError(
            f"merge must be a function name or an option object like mc.Deduplicate(), got {merge!r}"
        )
    return spec()
