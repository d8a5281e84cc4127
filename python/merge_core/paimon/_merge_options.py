"""Paimon's table options that decide how versions merge, to merge-core's option objects
and back. The one place either direction is written (docs/semantics.md has the table).

Options outside merging (``bucket``, ``file.format``, ...) are not this module's business
and pass unread; an option *about* merging whose effect merge-core does not produce is an
error naming it (Paimon's options table, ``paimon/_core_options.py``, says which), never a
silently different result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidInputError
from ..merge_functions import Aggregate, Deduplicate, FirstRow, MergeSpec, PartialUpdate, merge_spec
from ._core_options import READ, refuse

ENGINES = ("deduplicate", "partial-update", "aggregation", "first-row")
FIELD_OPTIONS = ("aggregate-function", "ignore-retract", "list-agg-delimiter", "distinct", "sequence-group")
IGNORE_DELETE_KEYS = (
    "ignore-delete",
    "first-row.ignore-delete",
    "deduplicate.ignore-delete",
    "partial-update.ignore-delete",
)
# Options about merging (or read by Paimon's merge functions) by prefix; others pass unread.
MERGE_PREFIXES = (
    "merge-engine",
    "fields.",
    "sequence.",
    "partial-update.",
    "aggregation.",
    "first-row.",
    "deduplicate.",
)


@dataclass(frozen=True)
class PaimonMerge:
    """How a Paimon table's versions merge: the merge function and the sequence columns.

    >>> import merge_core as mc
    >>> setup = mc.merge_from_paimon_options({"merge-engine": "aggregation", "fields.n.aggregate-function": "sum",
    ...                                        "sequence.field": "ts"})
    >>> setup.merge.fields, setup.sequence
    ({'n': {'function': 'sum'}}, ('ts',))
    >>> sorted(mc.paimon_options(setup.merge, setup.sequence).items())
    [('fields.n.aggregate-function', 'sum'), ('merge-engine', 'aggregation'), ('sequence.field', 'ts')]
    """

    merge: MergeSpec
    sequence: tuple[str, ...] = ()
    sequence_order: str = "ascending"

    def merge_kwargs(self) -> dict[str, Any]:
        """The arguments of ``mc.merge`` and ``mc.sort`` this setup stands for."""
        return {"merge": self.merge, "sequence": list(self.sequence), "sequence_order": self.sequence_order}


def merge_from_paimon_options(options: Mapping[str, str], key_values: Sequence[str] = ()) -> PaimonMerge:
    """The merge a Paimon table with these table options performs on read.

    ``key_values`` names the primary-key columns the merge folds as values: a table's
    partition columns of its key, which the merge's key leaves out (within a partition
    they are constant). Aggregation folds them with Paimon's ``primary-key`` function,
    whatever the options say, so that a retract keeps them as Paimon's does.

    Reads ``merge-engine``, ``ignore-delete`` (and its older names), ``sequence.field``,
    ``sequence.field.sort-order``, ``fields.<f>.aggregate-function``,
    ``fields.default-aggregate-function``, ``fields.<f>.ignore-retract``,
    ``fields.<f>.list-agg-delimiter``, ``fields.<f>.distinct``, ``fields.<g>.sequence-group``,
    ``partial-update.remove-record-on-delete``, ``partial-update.remove-record-on-sequence-group``
    and ``aggregation.remove-record-on-delete``.
    """
    options = {str(k): str(v) for k, v in dict(options).items()}
    engine = options.get("merge-engine", "deduplicate").strip().lower()
    if engine not in ENGINES:
        raise InvalidInputError(
            f"option 'merge-engine': unknown merge engine {engine!r} (Paimon's: {', '.join(ENGINES)})"
        )
    _refuse_unsupported(options)
    ignore_delete = next((_bool(options, k) for k in IGNORE_DELETE_KEYS if k in options), False)
    sequence = tuple(s.strip() for s in options.get("sequence.field", "").split(",") if s.strip())
    order = options.get("sequence.field.sort-order", "ascending").strip().lower()
    if order not in ("ascending", "descending"):
        raise InvalidInputError(f"option 'sequence.field.sort-order' must be ascending or descending, got {order!r}")
    per_field = _per_field(options)
    default = options.get("fields.default-aggregate-function")
    merge: MergeSpec
    if engine == "deduplicate":
        merge = Deduplicate(ignore_delete=ignore_delete)
    elif engine == "first-row":
        merge = FirstRow(ignore_delete=ignore_delete)
    elif engine == "aggregation":
        merge = Aggregate(
            fields={
                **_functions(per_field, default or "last_non_null_value"),
                **{name: {"function": "primary-key"} for name in key_values},
            },
            default=default or "last_non_null_value",
            remove_record_on_delete=_bool(options, "aggregation.remove-record-on-delete"),
            ignore_delete=ignore_delete,
        )
    else:
        groups = {
            (tuple(name.split(",")) if "," in name else name): opts["sequence-group"].split(",")
            for name, opts in per_field.items()
            if "sequence-group" in opts
        }
        removing = options.get("partial-update.remove-record-on-sequence-group")
        merge = PartialUpdate(
            ignore_delete=ignore_delete,
            remove_record_on_delete=_bool(options, "partial-update.remove-record-on-delete"),
            sequence_groups=groups,
            fields=_functions(per_field, default),
            default=default,
            remove_record_on_sequence_group=tuple(removing.split(",")) if removing else (),
        )
    return PaimonMerge(merge, sequence, order)


def paimon_options(
    merge: MergeSpec, sequence: str | tuple[str, ...] | list[str] = (), sequence_order: str = "ascending"
) -> dict[str, str]:
    """The Paimon table options that make Paimon merge as ``merge`` does (the inverse of
    :func:`merge_from_paimon_options`)."""
    spec = merge_spec(merge)
    out: dict[str, str] = {}
    function = spec["function"]
    if function == "none":
        raise InvalidInputError("merge='none' has no Paimon merge engine (a primary-key table always merges)")
    if not spec.get("drop_deletes", True):
        raise InvalidInputError("drop_deletes=False has no Paimon table option (Paimon's compaction sets it)")
    out["merge-engine"] = {"aggregate": "aggregation"}.get(function, function)
    if spec.get("ignore_delete"):
        out["ignore-delete"] = "true"
    for name, f in spec.get("fields", {}).items():
        f = {"function": f} if isinstance(f, str) else f
        if f["function"] == "primary-key":
            continue  # Paimon gives it to the key's columns itself, by no option
        out[f"fields.{name}.aggregate-function"] = f["function"]
        _field_options(out, name, f)
    default = spec.get("default")
    if function == "aggregate" and default not in (None, "last_non_null_value"):
        out["fields.default-aggregate-function"] = default
    if function == "partial-update" and default is not None:
        default = {"function": default} if isinstance(default, str) else default
        if set(default) - {"function"}:
            raise InvalidInputError("a partial-update default function with options has no Paimon table option")
        out["fields.default-aggregate-function"] = default["function"]
    if spec.get("remove_record_on_delete"):
        out[f"{'aggregation' if function == 'aggregate' else 'partial-update'}.remove-record-on-delete"] = "true"
    for ordering, protected in spec.get("sequence_groups", []):
        out[f"fields.{','.join(ordering)}.sequence-group"] = ",".join(protected)
    if spec.get("remove_record_on_sequence_group"):
        out["partial-update.remove-record-on-sequence-group"] = ",".join(spec["remove_record_on_sequence_group"])
    sequence = [sequence] if isinstance(sequence, str) else list(sequence)
    if sequence:
        out["sequence.field"] = ",".join(sequence)
    if sequence_order != "ascending":
        out["sequence.field.sort-order"] = sequence_order
    return out


def _field_options(out: dict[str, str], name: str, f: Mapping[str, Any]) -> None:
    if f.get("ignore_retract"):
        out[f"fields.{name}.ignore-retract"] = "true"
    if f.get("delimiter", ",") != ",":
        out[f"fields.{name}.list-agg-delimiter"] = f["delimiter"]
    if f.get("distinct"):
        out[f"fields.{name}.distinct"] = "true"


def _refuse_unsupported(options: dict[str, str]) -> None:
    """Refuses, by name, an option about merging that changes what a read returns in a way
    merge-core does not (Paimon's options table decides); any other passes, as in Paimon."""
    refuse(options, READ, [key for key in options if key.startswith(MERGE_PREFIXES)])


def _per_field(options: dict[str, str]) -> dict[str, dict[str, str]]:
    """``fields.<name>.<option>`` grouped by name (a name may hold commas: sequence groups),
    for the options merging reads."""
    out: dict[str, dict[str, str]] = {}
    for key, value in options.items():
        if key.startswith("fields.") and key != "fields.default-aggregate-function":
            name, option = key[len("fields.") :].rsplit(".", 1)
            if option in FIELD_OPTIONS:
                out.setdefault(name, {})[option] = value
    return out


def _functions(per_field: dict[str, dict[str, str]], default: str | None) -> dict[str, Any]:
    """The aggregate field specs: each named function, and each field whose options
    change the default's (ignore-retract, delimiter, distinct)."""
    out = {}
    for name, opts in per_field.items():
        function = opts.get("aggregate-function", default)
        if function is None or "sequence-group" in opts:
            continue
        if "aggregate-function" in opts or set(opts) & {"ignore-retract", "list-agg-delimiter", "distinct"}:
            out[name] = _with_options(function, opts)
    return out


def _with_options(function: str, opts: Mapping[str, str]) -> dict[str, Any]:
    spec: dict[str, Any] = {"function": function}
    if "ignore-retract" in opts:
        spec["ignore_retract"] = _parse_bool(opts["ignore-retract"], "ignore-retract")
    if "list-agg-delimiter" in opts:
        spec["delimiter"] = opts["list-agg-delimiter"]
    if "distinct" in opts:
        spec["distinct"] = _parse_bool(opts["distinct"], "distinct")
    return spec


def _bool(options: Mapping[str, str], key: str) -> bool:
    return _parse_bool(options.get(key, "false"), key)


def _parse_bool(value: str, key: str) -> bool:
    """As ``paimon._options.bool_option`` (which this module cannot import at its start)."""
    value = value.strip()
    if value.lower() not in ("true", "false"):
        raise InvalidInputError(f"option '{key}' must be true or false, got {value!r}")
    return value.lower() == "true"
