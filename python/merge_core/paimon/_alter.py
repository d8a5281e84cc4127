"""Schema changes, as Paimon's ``SchemaManager.commitChanges`` makes them.

A change reads the latest ``schema/schema-N`` as it is stored (every key of it kept,
comments and default values included), applies its steps in order, checks the result
with Paimon's schema rules and merge-core's own (the caller's ``check``), and creates
``schema/schema-(N+1)`` only if absent: a concurrent change that claimed that number
first makes this one start again from the new latest schema, never overwrite it.

As in Paimon, a column keeps its field id through renames and type changes; an added
column takes the next id above ``highestFieldId`` (nested fields of a new row take the
ones after it, depth first), so a column dropped and added again is a new column, and
files of older schemas are read by id. A change names top-level columns. What Paimon
refuses is refused in its terms (``InvalidInputError``), and a type change Paimon allows
but merge-core would not read exactly (see ``_casts``) is an ``UnsupportedFeatureError``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ..errors import CommitConflictError, CorruptTableError, InvalidInputError, UnsupportedFeatureError
from ..fs import Location
from . import _casts
from ._meta import latest_snapshot_id
from ._schema import TableSchema, paimon_type, schema_ids

MAX_ATTEMPTS = 100

# Options that cannot change once a table has a snapshot (CoreOptions' @Immutable).
IMMUTABLE_OPTIONS = frozenset(
    {
        "type",
        "bucket-key",
        "bucket-function.type",
        "data-file.path-directory",
        "merge-engine",
        "sequence.snapshot-ordering",
        "aggregation.remove-record-on-delete",
        "partial-update.remove-record-on-delete",
        "partial-update.remove-record-on-sequence-group",
        "rowkind.field",
        "primary-key",
        "primary-key.nullable",
        "partition",
        "dynamic-bucket.initial-buckets",
        "force-lookup",
        "row-tracking.enabled",
        "data-evolution.enabled",
        "index-file-in-data-file-dir",
        "blob-field",
        "blob-descriptor-field",
        "blob-view-field",
        "pk-clustering-override",
    }
)
# Per-column options whose key names the column: a rename moves them to the new name.
RENAMED_FIELD_OPTIONS = (
    "aggregate-function",
    "ignore-retract",
    "distinct",
    "list-agg-delimiter",
    "map.storage-layout",
    "map.shared-shredding.max-columns",
    "map.shared-shredding.column-placement-policy",
)
COMMENT_DIRECTIVES = ("__BLOB_FIELD", "__BLOB_DESCRIPTOR_FIELD", "__BLOB_VIEW_FIELD", "__VECTOR_FIELD")


# -- the changes -------------------------------------------------------------------------


@dataclass(frozen=True)
class AddColumn:
    name: str
    type: Any  # a pyarrow type or a Paimon type string
    after: str | None = None
    comment: str | None = None


@dataclass(frozen=True)
class RenameColumn:
    name: str
    new_name: str


@dataclass(frozen=True)
class DropColumn:
    name: str


@dataclass(frozen=True)
class UpdateColumnType:
    """The column's new type; its nullability stays (Paimon's ``keepNullability``)."""

    name: str
    type: Any


@dataclass(frozen=True)
class UpdateColumnNullability:
    name: str
    nullable: bool


@dataclass(frozen=True)
class UpdateColumnComment:
    name: str
    comment: str | None


@dataclass(frozen=True)
class SetOption:
    key: str
    value: str


@dataclass(frozen=True)
class RemoveOption:
    key: str


def commit_changes(root: Location, changes: Sequence[Any], check: Callable[[TableSchema], None]) -> TableSchema:
    """Applies ``changes`` to the table's latest schema as one new schema; returns it."""
    for _ in range(MAX_ATTEMPTS):
        ids = schema_ids(root)
        if not ids:
            raise CorruptTableError(f"the table at {root} has no schema/schema-N file")
        path = root / "schema" / f"schema-{ids[-1]}"
        document = _stored(path)
        new = _Evolution(document, lambda: latest_snapshot_id(root) is not None).apply(changes)
        text = json.dumps(new, indent=2)
        schema = TableSchema.parse(text, "the changed schema")
        check(schema)
        if (root / "schema" / f"schema-{new['id']}").create_new(text):
            return schema
    raise CommitConflictError(f"schema changes of {root} kept losing to others' ({MAX_ATTEMPTS} attempts)")


def _stored(path: Location) -> dict[str, Any]:
    """The schema file at ``path`` as its JSON document, once it parses as a schema."""
    try:
        text = path.read_text()
    except FileNotFoundError as e:
        raise CorruptTableError(f"{path} vanished while it was the latest schema") from e
    except UnicodeDecodeError as e:
        raise CorruptTableError(f"{path} is not a schema's JSON (not UTF-8 text: {e})") from e
    TableSchema.parse(text, str(path))  # a CorruptTableError naming the file if it is not one
    return json.loads(text)


# -- applying them -------------------------------------------------------------------------


class _Evolution:
    """One schema being changed: the stored document's parts, edited in place."""

    def __init__(self, document: dict[str, Any], has_snapshots: Callable[[], bool]):
        self.document = document
        self.fields: list[dict[str, Any]] = [dict(f) for f in document["fields"]]
        self.highest = int(document.get("highestFieldId", max((f["id"] for f in self.fields), default=-1)))
        self.old_options: dict[str, str] = dict(document.get("options", {}))
        self.options = dict(self.old_options)
        self.partition_keys: list[str] = list(document.get("partitionKeys", []))
        self.primary_keys: list[str] = list(document.get("primaryKeys", []))
        self.renames: dict[str, str] = {}
        self._has_snapshots = has_snapshots
        self._snapshots: bool | None = None

    def has_snapshots(self) -> bool:
        if self._snapshots is None:
            self._snapshots = self._has_snapshots()
        return self._snapshots

    def flag(self, option: str, default: bool) -> bool:
        return self.old_options.get(option, str(default)).strip().lower() == "true"

    def apply(self, changes: Sequence[Any]) -> dict[str, Any]:
        for change in changes:
            step = _STEPS.get(type(change))
            if step is None:
                raise InvalidInputError(f"{change!r} is not a schema change")
            step(self, change)
        options = _renamed_options(self.options, self.renames)
        out = {
            "version": self.document.get("version", 3),
            "id": int(self.document["id"]) + 1,
            "fields": self.fields,
            "highestFieldId": self.highest,
            "partitionKeys": self.partition_keys,
            "primaryKeys": [self.renames.get(k, k) for k in self.primary_keys],
            "options": options,
        }
        if self.document.get("comment") is not None:
            out["comment"] = self.document["comment"]
        out["timeMillis"] = int(time.time() * 1000)
        return out

    def index(self, name: str) -> int:
        for i, f in enumerate(self.fields):
            if f["name"] == name:
                return i
        raise InvalidInputError(f"no column {name!r} in the table (it has {[f['name'] for f in self.fields]})")

    def absent(self, name: Any) -> None:
        if not isinstance(name, str) or not name:
            raise InvalidInputError(f"a column name must be a non-empty string, got {name!r}")
        if any(f["name"] == name for f in self.fields):
            raise InvalidInputError(f"the table already has a column {name!r}")

    def not_partition(self, name: str, doing: str) -> None:
        if name in self.partition_keys:
            raise InvalidInputError(f"cannot {doing} partition column {name!r} (Paimon refuses it)")

    def not_key(self, name: str, doing: str) -> None:
        if name in self.primary_keys:
            raise InvalidInputError(f"cannot {doing} primary key column {name!r} (Paimon refuses it)")

    # -- one function per kind of change ---------------------------------------------------

    def add_column(self, change: AddColumn) -> None:
        self.absent(change.name)
        _no_directive(change.comment, change.name)
        column_id = self.highest + 1
        nested = iter(range(column_id + 1, 1 << 31))
        spec = _spec(change.type, nested, f"column {change.name!r}")
        if not _casts.nullable(spec):
            raise InvalidInputError(f"an added column cannot be NOT NULL ({change.name!r} is {spec}), as in Paimon")
        self.highest = max(column_id, next(nested) - 1)
        field: dict[str, Any] = {"id": column_id, "name": change.name, "type": spec}
        if change.comment is not None:
            field["description"] = change.comment
        if change.after is not None:
            at = self.index(change.after) + 1
        elif self.flag("add-column-before-partition", False) and self.partition_keys:
            at = next((i for i, f in enumerate(self.fields) if f["name"] in self.partition_keys), len(self.fields))
        else:
            at = len(self.fields)
        self.fields.insert(at, field)

    def rename_column(self, change: RenameColumn) -> None:
        self.not_partition(change.name, "rename")
        i = self.index(change.name)
        self.absent(change.new_name)
        self.fields[i] = {**self.fields[i], "name": change.new_name}
        self.renames[change.name] = change.new_name

    def drop_column(self, change: DropColumn) -> None:
        if change.name in self.partition_keys or change.name in self.primary_keys:
            raise InvalidInputError(
                f"cannot drop column {change.name!r}: it is a partition or primary key column (Paimon refuses it)"
            )
        del self.fields[self.index(change.name)]
        if not self.fields:
            raise InvalidInputError("cannot drop every column of a table")

    def update_column_type(self, change: UpdateColumnType) -> None:
        self.not_partition(change.name, "change the type of")
        self.not_key(change.name, "change the type of")
        i = self.index(change.name)
        source = self.fields[i]["type"]
        target = _spec(change.type, iter(range(self.highest + 1, 1 << 31)), f"column {change.name!r}")
        target = _casts.with_null(target, _casts.nullable(source))
        explicit = not self.flag("disable-explicit-type-casting", False)
        if not _casts.paimon_allows(source, target, explicit):
            raise InvalidInputError(
                f"column {change.name!r} of type {_shown(source)} cannot change to {_shown(target)}: "
                "Paimon refuses the cast" + ("" if explicit else " ('disable-explicit-type-casting' is true)")
            )
        if not _casts.reads_exactly(source, target):
            raise UnsupportedFeatureError(
                f"changing column {change.name!r} from {_shown(source)} to {_shown(target)}: merge-core would not "
                "read the older files' values as Paimon casts them (it reads widenings: docs/table-format.md)"
            )
        self.fields[i] = {**self.fields[i], "type": target}

    def update_column_nullability(self, change: UpdateColumnNullability) -> None:
        if not isinstance(change.nullable, bool):
            raise InvalidInputError(f"nullable must be True or False, got {change.nullable!r}")
        if change.nullable:
            self.not_key(change.name, "make nullable the")
        i = self.index(change.name)
        source = self.fields[i]["type"]
        if (
            _casts.nullable(source)
            and not change.nullable
            and self.flag("alter-column-null-to-not-null.disabled", True)
        ):
            raise InvalidInputError(
                f"cannot make column {change.name!r} NOT NULL: the table's option "
                "'alter-column-null-to-not-null.disabled' is true (Paimon's default)"
            )
        self.fields[i] = {**self.fields[i], "type": _casts.with_null(source, change.nullable)}

    def update_column_comment(self, change: UpdateColumnComment) -> None:
        i = self.index(change.name)
        if change.comment is not None and (not isinstance(change.comment, str) or _directive(change.comment)):
            raise InvalidInputError(f"column {change.name!r}: {change.comment!r} is not a comment Paimon takes")
        old = self.fields[i]
        field = {"id": old["id"], "name": old["name"], "type": old["type"]}  # Java's order of keys
        if change.comment is not None:
            field["description"] = change.comment
        field.update({k: v for k, v in old.items() if k not in field and k != "description"})
        self.fields[i] = field

    def set_option(self, change: SetOption) -> None:
        key, value = _option_key(change.key), change.value
        if not isinstance(value, str):
            raise InvalidInputError(f"option {key!r}: a value must be a string, got {value!r}")
        old = self.old_options.get(key)
        if old == value or self.normalized_unchanged(key, old, value):
            return
        if key == "type":
            raise InvalidInputError("option 'type' cannot change (Paimon refuses it)")
        if self.has_snapshots():
            _check_change(self.old_options, key, old, value)
        self.options[key] = value

    def remove_option(self, change: RemoveOption) -> None:
        key = _option_key(change.key)
        if key == "type":
            raise InvalidInputError("option 'type' cannot change (Paimon refuses it)")
        if self.has_snapshots():
            _check_reset(self.old_options, key)
        self.options.pop(key, None)

    def normalized_unchanged(self, key: str, old: str | None, new: str) -> bool:
        """Paimon's ``isUnchangedNormalizedKey``: a key list already held by the schema."""
        if key == "type":
            return new.lower() == (old or "table").lower()
        if old is not None:
            return False
        listed = [s.strip() for s in new.split(",") if s.strip()]
        return (key == "primary-key" and listed == self.primary_keys) or (
            key == "partition" and listed == self.partition_keys
        )


_STEPS: dict[type, Callable[[_Evolution, Any], None]] = {
    AddColumn: _Evolution.add_column,
    RenameColumn: _Evolution.rename_column,
    DropColumn: _Evolution.drop_column,
    UpdateColumnType: _Evolution.update_column_type,
    UpdateColumnNullability: _Evolution.update_column_nullability,
    UpdateColumnComment: _Evolution.update_column_comment,
    SetOption: _Evolution.set_option,
    RemoveOption: _Evolution.remove_option,
}


# -- options ---------------------------------------------------------------------------------


def _option_key(key: Any) -> str:
    if not isinstance(key, str) or not key:
        raise InvalidInputError(f"an option's key must be a non-empty string, got {key!r}")
    return key


def _bool(text: str | None, default: bool) -> bool:
    return default if text is None else text.strip().lower() == "true"


def _bucket(option: str | None) -> int:
    try:
        return -1 if option is None else int(option.strip())
    except ValueError:
        raise InvalidInputError(f"option 'bucket' must be an integer, not {option!r}") from None


def _check_change(options: dict[str, str], key: str, old: str | None, new: str) -> None:
    """Paimon's ``checkAlterTableOption``: what may not change once a table has snapshots."""
    if key in IMMUTABLE_OPTIONS:
        raise InvalidInputError(f"option {key!r} cannot change once the table has snapshots (Paimon refuses it)")
    if key == "bucket":
        if _bucket(old) == -1:
            raise InvalidInputError("option 'bucket' cannot change from -1 (dynamic buckets), as in Paimon")
        if _bucket(new) == -1:
            raise InvalidInputError("option 'bucket' cannot change to -1 (dynamic buckets), as in Paimon")
    if key == "deletion-vectors.enabled" and not _bool(options.get("deletion-vectors.modifiable"), False):
        if _bool(old, False) != _bool(new, False):
            raise InvalidInputError(
                "option 'deletion-vectors.enabled' cannot change without a full compaction (rows could repeat); "
                "Paimon allows it with 'deletion-vectors.modifiable' = true"
            )
    for option in ("ignore-delete", "ignore-update-before"):
        if key == option and _bool(old, False) and not _bool(new, False):
            raise InvalidInputError(f"option {option!r} cannot change from true to false, as in Paimon")
    if key == "clustering.columns" and "pk-clustering-override" in options:
        raise InvalidInputError("option 'clustering.columns' cannot change with 'pk-clustering-override' set")


def _check_reset(options: dict[str, str], key: str) -> None:
    """Paimon's ``checkResetTableOption``."""
    if key in IMMUTABLE_OPTIONS:
        raise InvalidInputError(f"option {key!r} cannot change once the table has snapshots (Paimon refuses it)")
    if key == "bucket":
        raise InvalidInputError("option 'bucket' cannot be removed, as in Paimon")
    if key == "deletion-vectors.enabled":
        _check_change(options, key, options.get(key), "false")
    if key == "clustering.columns" and "pk-clustering-override" in options:
        raise InvalidInputError("option 'clustering.columns' cannot change with 'pk-clustering-override' set")


def _renamed_options(options: dict[str, str], renames: dict[str, str]) -> dict[str, str]:
    """Paimon's ``applyRenameColumnsToOptions``: options naming a renamed column follow it."""
    if not renames:
        return options

    def renamed(names: str) -> str:
        return ",".join(renames.get(n, n) for n in names.split(","))

    out = dict(options)
    for key in ("bucket-key", "sequence.field"):
        if options.get(key, "").strip():
            out[key] = renamed(options[key])
    for old, new in renames.items():
        for suffix in RENAMED_FIELD_OPTIONS:
            if f"fields.{old}.{suffix}" in out:
                out[f"fields.{new}.{suffix}"] = out.pop(f"fields.{old}.{suffix}")
    for key in options:
        for suffix in ("sequence-group", "nested-key"):
            if key.startswith("fields.") and key.endswith("." + suffix):
                columns = key[len("fields.") : -len(suffix) - 1]
                value = out.pop(key)
                out[f"fields.{renamed(columns)}.{suffix}"] = renamed(value)
    return out


# -- types -------------------------------------------------------------------------------------


# Paimon's composite types, which a type string does not spell here (a pyarrow type does).
_COMPOSITE_TYPES = ("ARRAY", "MAP", "MULTISET", "ROW", "VARIANT", "BLOB", "VECTOR")


def _spec(data_type: Any, nested_ids: Any, what: str) -> Any:
    """A pyarrow type or a Paimon type string as Paimon's JSON form (nullable unless the
    string says NOT NULL; nested row fields numbered from ``nested_ids``)."""
    if isinstance(data_type, pa.DataType):
        return paimon_type(data_type, True, nested_ids)
    if isinstance(data_type, str) and data_type.strip():
        text = data_type.strip().upper()
        if _casts.atomic(text) is None and text.startswith(_COMPOSITE_TYPES):
            raise UnsupportedFeatureError(
                f"{what}: type {data_type!r}: merge-core takes Paimon type strings of atomic types only "
                "(give a pyarrow type for arrays, maps and rows)"
            )
        if _casts.atomic(text) is None:
            raise InvalidInputError(
                f"{what}: type {data_type!r} is not a Paimon type (INT, STRING, DECIMAL(10, 2) ...)"
            )
        return _casts.canonical(text)
    raise InvalidInputError(f"{what}: a type must be a pyarrow type or a Paimon type string, got {data_type!r}")


def _shown(spec: Any) -> str:
    return spec if isinstance(spec, str) else json.dumps(spec)


def _directive(comment: str) -> bool:
    return comment.strip().startswith(COMMENT_DIRECTIVES)


def _no_directive(comment: Any, name: str) -> None:
    if comment is not None and not isinstance(comment, str):
        raise InvalidInputError(f"column {name!r}: a comment must be a string, got {comment!r}")
    if comment is not None and _directive(comment):
        raise UnsupportedFeatureError(
            f"column {name!r}: comment {comment!r} asks for a BLOB or VECTOR column, which merge-core does not read"
        )
