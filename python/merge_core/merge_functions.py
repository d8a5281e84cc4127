"""Merge-function option objects. Each turns into a plain dict spec that the native
module reads in one place (``rust/python/options.rs``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from .errors import InvalidInputError


@dataclass(frozen=True)
class Deduplicate:
    """The newest version of a key wins; if it is a retract the key is dropped.

    ``ignore_delete`` drops retracts first. ``drop_deletes=False`` keeps retracts: each
    key's newest row is output with its own kind (``-U`` and ``+U`` included), as
    Paimon's compaction below the top level writes it (every merge function takes it).
    """

    ignore_delete: bool = False
    drop_deletes: bool = True

    def _spec(self) -> dict[str, Any]:
        return {"function": "deduplicate", **asdict(self)}


@dataclass(frozen=True)
class FirstRow:
    """The oldest version of a key wins. A retract among several versions of a key is an
    error unless ``ignore_delete`` (retracts dropped); sequence columns are refused.
    ``drop_deletes=False``: the winner keeps its kind, a key's lone retract is kept."""

    ignore_delete: bool = False
    drop_deletes: bool = True

    def _spec(self) -> dict[str, Any]:
        return {"function": "first-row", **asdict(self)}


AggregateFieldSpec = str | Mapping[str, Any]


@dataclass(frozen=True)
class PartialUpdate:
    """Every non-key column takes its newest non-null value (Paimon's partial-update).

    ``sequence_groups`` maps ordering columns (one name, or a tuple of names compared one
    after the other) to the columns they protect: a version updates a group's columns,
    nulls included, only if its ordering values are at least the row's so far, and a
    version whose ordering values are all null leaves the group alone. ``fields`` gives
    columns of a group an aggregate function (ordered by the group's sequence; an older
    version is still folded in), ``default`` the function of the others.

    Retracts (``-U``, ``-D``) among several versions of a key are an error unless
    ``ignore_delete`` (they are dropped), ``remove_record_on_delete`` (a ``-D`` removes
    the row, ``-U`` is skipped) or ``sequence_groups`` (a retract clears its groups'
    columns; ``remove_record_on_sequence_group`` names ordering columns whose group, on a
    newer ``-D``, removes the whole row).

    ``drop_deletes=False`` keeps retracts as Paimon's compaction below the top level does:
    a key's lone version with its own kind, a removed row (or a key met by no add) as a
    ``-D`` row of the values Paimon gives it, any other fold as ``+I``.

    >>> import pyarrow as pa, merge_core as mc
    >>> schema = pa.schema([(c, pa.int64()) for c in ["k", "a", "b", "g_1", "c", "d", "g_2"]])
    >>> v = [pa.table([[x] for x in row], schema=schema)
    ...      for row in [(1, 1, 1, 1, 1, 1, 1), (1, 2, 2, 2, 2, 2, None), (1, 3, 3, 1, 3, 3, 3)]]
    >>> groups = mc.PartialUpdate(sequence_groups={"g_1": ["a", "b"], "g_2": ["c", "d"]})
    >>> mc.merge(v, key="k", merge=groups).read_all().to_pylist()
    [{'k': 1, 'a': 2, 'b': 2, 'g_1': 2, 'c': 3, 'd': 3, 'g_2': 3}]
    >>> schema = pa.schema([(c, pa.int64()) for c in ["k", "a", "b", "c", "d"]])
    >>> v = [pa.table([[x] for x in row], schema=schema)
    ...      for row in [(1, 1, 1, None, None), (1, None, None, 1, 1), (1, 2, 2, None, None), (1, None, None, 2, 2)]]
    >>> aggregated = mc.PartialUpdate(sequence_groups={"a": ["b"], "c": ["d"]}, fields={"b": "first_value", "d": "sum"})
    >>> mc.merge(v, key="k", merge=aggregated).read_all().to_pylist()
    [{'k': 1, 'a': 2, 'b': 1, 'c': 2, 'd': 3}]
    """

    ignore_delete: bool = False
    remove_record_on_delete: bool = False
    sequence_groups: Mapping[str | tuple[str, ...], Sequence[str]] = field(default_factory=dict)
    fields: Mapping[str, AggregateFieldSpec] = field(default_factory=dict)
    default: AggregateFieldSpec | None = None
    remove_record_on_sequence_group: Sequence[str] = ()
    drop_deletes: bool = True

    def _spec(self) -> dict[str, Any]:
        groups = []
        for ordering, protected in dict(self.sequence_groups).items():
            ordering = [ordering] if isinstance(ordering, str) else list(ordering)
            if isinstance(protected, str):
                raise InvalidInputError(f"sequence group {ordering}: give the protected columns as a list")
            groups.append((ordering, list(protected)))
        if isinstance(self.remove_record_on_sequence_group, str):
            raise InvalidInputError("remove_record_on_sequence_group must be a list of column names")
        return {
            "function": "partial-update",
            "ignore_delete": self.ignore_delete,
            "remove_record_on_delete": self.remove_record_on_delete,
            "sequence_groups": groups,
            "fields": _field_specs(self.fields),
            "default": None if self.default is None else _field_spec(self.default),
            "remove_record_on_sequence_group": list(self.remove_record_on_sequence_group),
            "drop_deletes": self.drop_deletes,
        }


@dataclass(frozen=True)
class Aggregate:
    """A Paimon aggregate function per non-key column.

    ``fields`` maps a column to a function name (``"sum"``) or to options
    (``{"function": "listagg", "delimiter": ";", "distinct": True, "ignore_retract": True}``);
    the other columns use ``default``. Functions: sum, product, min, max, last_value,
    last_non_null_value, first_value, first_non_null_value, listagg, bool_and, bool_or,
    collect (lists; ``distinct``) and merge_map (maps). ``remove_record_on_delete=True``
    makes a ``-D`` remove the row so far; ``ignore_delete`` drops retracts first.
    ``drop_deletes=False`` keeps retracts as Paimon's compaction below the top level does:
    a key's lone version with its own kind, a row a ``-D`` removed as that ``-D``.

    >>> import pyarrow as pa, merge_core as mc
    >>> a = pa.table({"k": [1], "price": [23.0], "sales": [15]})
    >>> b = pa.table({"k": [1], "price": [30.2], "sales": [20]})
    >>> mc.merge([a, b], key="k", merge=mc.Aggregate({"price": "max", "sales": "sum"})).read_all().to_pylist()
    [{'k': 1, 'price': 30.2, 'sales': 35}]
    """

    fields: Mapping[str, AggregateFieldSpec] = field(default_factory=dict)
    default: str = "last_non_null_value"
    remove_record_on_delete: bool = False
    ignore_delete: bool = False
    drop_deletes: bool = True

    def _spec(self) -> dict[str, Any]:
        return {
            "function": "aggregate",
            "fields": _field_specs(self.fields),
            "default": self.default,
            "remove_record_on_delete": self.remove_record_on_delete,
            "ignore_delete": self.ignore_delete,
            "drop_deletes": self.drop_deletes,
        }


def _field_spec(spec: AggregateFieldSpec) -> dict[str, Any]:
    return {"function": spec} if isinstance(spec, str) else dict(spec)


def _field_specs(fields: Mapping[str, AggregateFieldSpec]) -> dict[str, dict[str, Any]]:
    return {name: _field_spec(f) for name, f in dict(fields).items()}


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
