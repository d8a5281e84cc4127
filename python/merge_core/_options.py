"""Merge-function option objects. Each turns into a plain dict spec that the native
module reads in one place (``rust/python/options.rs``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
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


@dataclass(frozen=True)
class FirstRow:
    """The oldest add of a key wins. A retract is an error unless ``ignore_delete``."""

    ignore_delete: bool = False

    def _spec(self) -> dict[str, Any]:
        return {"function": "first-row", **asdict(self)}


@dataclass(frozen=True)
class PartialUpdate:
    """Every non-key column takes its newest non-null value among the adds.

    A retract is an error unless ``ignore_delete`` (retracts skipped) or
    ``remove_record_on_delete`` (``-D`` clears the row so far, ``-U`` is skipped).
    """

    ignore_delete: bool = False
    remove_record_on_delete: bool = False

    def _spec(self) -> dict[str, Any]:
        return {"function": "partial-update", **asdict(self)}


AggregateFieldSpec = str | Mapping[str, Any]


@dataclass(frozen=True)
class Aggregate:
    """A Paimon aggregate function per non-key column.

    ``fields`` maps a column to a function name (``"sum"``) or to options
    (``{"function": "listagg", "delimiter": ";", "ignore_retract": True}``); the other
    columns use ``default``. Functions: sum, product, min, max, last_value,
    last_non_null_value, first_value, first_non_null_value, listagg, bool_and, bool_or.
    ``remove_record_on_delete=True`` makes a ``-D`` clear the row so far.
    """

    fields: Mapping[str, AggregateFieldSpec] = field(default_factory=dict)
    default: str = "last_non_null_value"
    remove_record_on_delete: bool = False

    def _spec(self) -> dict[str, Any]:
        fields = {name: {"function": f} if isinstance(f, str) else dict(f) for name, f in dict(self.fields).items()}
        return {
            "function": "aggregate",
            "fields": fields,
            "default": self.default,
            "remove_record_on_delete": self.remove_record_on_delete,
        }


MergeSpec = str | Deduplicate | FirstRow | PartialUpdate | Aggregate


def merge_spec(merge: MergeSpec) -> dict[str, Any]:
    """The dict spec of a merge option (a name, an option object, or a spec already made)."""
    if isinstance(merge, Mapping) and "function" in merge:
        return dict(merge)
    if isinstance(merge, str):
        return {"function": merge.replace("_", "-")}
    spec = getattr(merge, "_spec", None)
    if spec is None:
        raise InvalidInputError(
            f"merge must be a function name or an option object like mc.Deduplicate(), got {merge!r}"
        )
    return spec()
