"""Where a Paimon table keeps a partition's and a bucket's files: ``k1=v1/k2=v2/bucket-N``,
each value written as Java's ``toString`` of its internal form (a date as its epoch day,
by Paimon's default ``partition.legacy-name``) and escaped as Paimon escapes path names.
The directory is rebuilt from the manifest's partition row, never parsed back."""

from __future__ import annotations

import datetime
import decimal
import math
from collections.abc import Sequence
from typing import Any

from ..errors import UnsupportedFeatureError
from ._schema import TableSchema

DEFAULT_PARTITION_NAME = "__DEFAULT_PARTITION__"
_ESCAPED = set("\"#%'*/:=?\\\x7f{}[]^")


def escape(text: str) -> str:
    return "".join(f"%{ord(c):02X}" if ord(c) < 0x20 or c in _ESCAPED else c for c in text)


def java_string(value: Any) -> str:
    """``toString`` of a partition value's internal form in Java."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime.datetime):
        text = value.strftime("%Y-%m-%dT%H:%M")
        if value.second or value.microsecond:
            text += f":{value.second:02d}"
        if value.microsecond:
            text += f".{value.microsecond:06d}".rstrip("0").ljust(4, "0")
        return text
    if isinstance(value, datetime.date):
        return str((value - datetime.date(1970, 1, 1)).days)
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, float):
        return _java_double(value)
    if isinstance(value, bytes):
        raise UnsupportedFeatureError("binary partition columns are not supported by merge-core")
    return str(value)


def _java_double(x: float) -> str:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0 or 1e-3 <= abs(x) < 1e7:
        text = repr(x)
        return text if "." in text or "e" in text else text + ".0"
    mantissa, exponent = f"{x:.17e}".split("e")
    mantissa = repr(float(mantissa))
    return f"{mantissa}E{int(exponent)}"


def partition_dir(schema: TableSchema, values: Sequence[Any]) -> str:
    """The relative directory of a partition (empty for an unpartitioned table)."""
    default = schema.options.get("partition.default-name", DEFAULT_PARTITION_NAME)
    if schema.options.get("partition.legacy-name", "true").lower() != "true":
        raise UnsupportedFeatureError("'partition.legacy-name' = false is not supported by merge-core")
    parts = []
    for name, value in zip(schema.partition_keys, values, strict=True):
        text = None if value is None else java_string(value)
        if text is None or not text.strip():
            text = default
        parts.append(f"{escape(name)}={escape(text)}")
    return "/".join(parts)


def bucket_dir(schema: TableSchema, values: Sequence[Any], bucket: int) -> str:
    prefix = schema.options.get("data-file.path-directory")
    partition = partition_dir(schema, values)
    return "/".join(p for p in (prefix, partition, f"bucket-{bucket}") if p)
