"""A Paimon table's schema versions (``schema/schema-N``, JSON) as Arrow schemas.

Every field has an id that never changes; a data file written under an older schema is
read through its schema's names for those ids, so renamed, added and dropped columns work.
"""

from __future__ import annotations

import functools
import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from ..errors import CorruptTableError, InvalidInputError, UnsupportedFeatureError
from ..fs import Location

FIELD_ID = b"PARQUET:field_id"
SUPPORTED_SCHEMA_VERSIONS = (3,)

_ATOMIC = {
    "BOOLEAN": pa.bool_(),
    "TINYINT": pa.int8(),
    "SMALLINT": pa.int16(),
    "INT": pa.int32(),
    "INTEGER": pa.int32(),
    "BIGINT": pa.int64(),
    "FLOAT": pa.float32(),
    "DOUBLE": pa.float64(),
    "DATE": pa.date32(),
    "STRING": pa.string(),
    "BYTES": pa.binary(),
}
_PARAMETRIZED = re.compile(r"^([A-Z_ ]+?)\s*(?:\((\d+)(?:,\s*(\d+))?\))?(\s+WITH LOCAL TIME ZONE)?$")

THIN_MODE = "data-file.thin-mode"


def _timestamp(precision: int, local: bool) -> pa.DataType:
    unit = "ms" if precision <= 3 else "us" if precision <= 6 else "ns"
    return pa.timestamp(unit, tz="UTC" if local else None)


def arrow_type(spec: Any) -> tuple[pa.DataType, bool]:
    """A Paimon type (its JSON form) as an Arrow type, and whether it is nullable."""
    if isinstance(spec, dict):
        kind = spec["type"]
        nullable = not kind.endswith("NOT NULL")
        kind = kind.removesuffix(" NOT NULL")
        if kind == "ARRAY":
            element, element_nullable = arrow_type(spec["element"])
            return pa.list_(pa.field("element", element, element_nullable)), nullable
        if kind == "MAP":
            key, _ = arrow_type(spec["key"])
            value, value_nullable = arrow_type(spec["value"])
            return pa.map_(key, pa.field("value", value, value_nullable)), nullable
        if kind == "ROW":
            return pa.struct([_field(f).arrow() for f in spec["fields"]]), nullable
        raise UnsupportedFeatureError(f"Paimon type {kind} is not supported by merge-core")
    text = str(spec).strip()
    nullable = not text.endswith("NOT NULL")
    text = text.removesuffix("NOT NULL").strip()
    if text in _ATOMIC:
        return _ATOMIC[text], nullable
    match = _PARAMETRIZED.match(text)
    if not match:
        raise UnsupportedFeatureError(f"Paimon type {text!r} is not supported by merge-core")
    name, first, second, local = match.group(1).strip(), match.group(2), match.group(3), bool(match.group(4))
    if name in ("CHAR", "VARCHAR"):
        return pa.string(), nullable
    if name in ("BINARY", "VARBINARY"):
        return pa.binary(), nullable
    if name in ("DECIMAL", "DEC", "NUMERIC"):
        precision = int(first) if first else 10
        return pa.decimal128(precision, int(second) if second else 0), nullable
    if name == "TIME":
        return pa.time32("ms"), nullable
    if name == "TIMESTAMP":
        return _timestamp(int(first) if first is not None else 6, local), nullable
    if name == "TIMESTAMP_LTZ":
        return _timestamp(int(first) if first is not None else 6, True), nullable
    raise UnsupportedFeatureError(f"Paimon type {text!r} is not supported by merge-core")


@dataclass(frozen=True)
class Field:
    id: int
    name: str
    type: pa.DataType
    nullable: bool
    paimon_type: Any = field(default=None, compare=False)  # the type as the schema file spells it

    def arrow(self) -> pa.Field:
        return self._arrow

    @functools.cached_property
    def _arrow(self) -> pa.Field:  # made once: reads and plans ask for it again and again
        return pa.field(self.name, self.type, self.nullable, metadata={FIELD_ID: str(self.id).encode()})


def _field(spec: dict[str, Any]) -> Field:
    data_type, nullable = arrow_type(spec["type"])
    return Field(int(spec["id"]), spec["name"], data_type, nullable, spec["type"])


@dataclass(frozen=True)
class TableSchema:
    """One schema version: fields, keys and the table's options."""

    id: int
    fields: tuple[Field, ...]
    partition_keys: tuple[str, ...]
    primary_keys: tuple[str, ...]
    options: dict[str, str] = field(hash=False)

    @classmethod
    def parse(cls, text: str, where: str) -> TableSchema:
        try:
            data = json.loads(text)
        except ValueError as e:
            raise CorruptTableError(f"{where} is not a schema's JSON ({e})") from e
        if not isinstance(data, dict):
            raise CorruptTableError(f"{where} is not a schema's JSON (not an object)")
        version = data.get("version", 1)
        if version not in SUPPORTED_SCHEMA_VERSIONS:
            raise UnsupportedFeatureError(f"{where}: Paimon schema format version {version} is not supported")
        try:
            return cls(
                int(data["id"]),
                tuple(_field(f) for f in data["fields"]),
                tuple(data.get("partitionKeys", [])),
                tuple(data.get("primaryKeys", [])),
                {str(k): str(v) for k, v in data.get("options", {}).items()},
            )
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise CorruptTableError(f"{where} lacks a field of a schema, or holds one of another kind ({e!r})") from e

    @functools.cached_property
    def arrow(self) -> pa.Schema:
        """The schema as Arrow's (built once: a schema version never changes)."""
        return pa.schema([f.arrow() for f in self.fields])

    @functools.cached_property
    def fields_by_id(self) -> dict[int, Field]:
        return {f.id: f for f in self.fields}

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise InvalidInputError(f"no column {name!r} in schema {self.id}")

    @functools.cached_property
    def trimmed_keys(self) -> tuple[str, ...]:
        """The primary key without the partition columns: the key inside a bucket."""
        return tuple(k for k in self.primary_keys if k not in self.partition_keys)

    @property
    def thin_mode(self) -> bool:
        """Whether data files leave out the ``_KEY_`` copies of the key columns (Paimon's
        ``data-file.thin-mode``; readers take the key from the table's columns either way)."""
        return self.options.get(THIN_MODE, "false").lower() == "true"

    @property
    def bucket_keys(self) -> tuple[str, ...]:
        option = self.options.get("bucket-key")
        return tuple(k.strip() for k in option.split(",")) if option else self.trimmed_keys


def load_schema(root: Location, schema_id: int) -> TableSchema:
    path = root / "schema" / f"schema-{schema_id}"
    try:
        text = path.read_text()
    except FileNotFoundError as e:
        raise CorruptTableError(f"the table's schema {schema_id} is missing ({path})") from e
    except UnicodeDecodeError as e:
        raise CorruptTableError(f"{path} is not a schema's JSON (not UTF-8 text: {e})") from e
    return TableSchema.parse(text, str(path))


def schema_ids(root: Location) -> list[int]:
    return sorted(int(n[7:]) for n in (root / "schema").names("schema-") if n[7:].isdigit())


def paimon_type(t: pa.DataType, nullable: bool, ids: Any) -> Any:
    """An Arrow type as Paimon's JSON form of it (``ids`` numbers nested row fields)."""
    suffix = "" if nullable else " NOT NULL"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        element = paimon_type(t.value_type, t.value_field.nullable, ids)
        return {"type": "ARRAY" + suffix, "element": element}
    if pa.types.is_map(t):
        key = paimon_type(t.key_type, False, ids)
        return {"type": "MAP" + suffix, "key": key, "value": paimon_type(t.item_type, t.item_field.nullable, ids)}
    if pa.types.is_struct(t):
        fields = [{"id": next(ids), "name": f.name, "type": paimon_type(f.type, f.nullable, ids)} for f in t]
        return {"type": "ROW" + suffix, "fields": fields}
    return _atomic_name(t) + suffix


def _atomic_name(t: pa.DataType) -> str:
    for name, arrow in _ATOMIC.items():
        if t == arrow and name != "INTEGER":
            return name
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "STRING"
    if pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return "BYTES"
    if pa.types.is_decimal128(t):
        return f"DECIMAL({t.precision}, {t.scale})"
    if pa.types.is_timestamp(t):
        precision = {"s": 0, "ms": 3, "us": 6, "ns": 9}[t.unit]
        return f"TIMESTAMP({precision})" + (" WITH LOCAL TIME ZONE" if t.tz else "")
    if pa.types.is_time32(t) and t.unit == "ms":
        return "TIME(3)"
    raise InvalidInputError(f"type {t} has no Paimon equivalent merge-core writes")


def schema_json(schema: pa.Schema, primary_keys: list[str], partition_keys: list[str], options: dict[str, str]) -> str:
    """Schema 0 of a new table, in the JSON Paimon writes. Key columns are NOT NULL."""
    top = len(schema)
    nested = iter(range(top, 1 << 30))
    fields = [
        {"id": i, "name": f.name, "type": paimon_type(f.type, f.nullable and f.name not in primary_keys, nested)}
        for i, f in enumerate(schema)
    ]
    highest = next(nested) - 1
    document = {
        "version": 3,
        "id": 0,
        "fields": fields,
        "highestFieldId": highest,
        "partitionKeys": partition_keys,
        "primaryKeys": primary_keys,
        "options": options,
        "timeMillis": int(time.time() * 1000),
    }
    return json.dumps(document, indent=2)
