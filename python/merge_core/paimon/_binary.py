"""Paimon's BinaryRow: the bytes of a row of fixed 8-byte slots that manifests use for
partition values, min/max keys and statistics. (A key's bucket is the hash of the same
bytes, computed in Rust: ``rust/bucket/binary_row.rs``.)

Layout: a header of ``((arity + 63 + 8) // 64) * 8`` bytes (byte 0 the row kind, then one
null bit per field from bit 8 on, least significant first), one 8-byte little-endian
slot per field, then a variable part in 8-byte-aligned chunks. Inside a manifest a row
is prefixed by its arity as a big-endian int32.
"""

from __future__ import annotations

import datetime
import decimal
import struct
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from ..errors import CorruptTableError, UnsupportedFeatureError

EPOCH = datetime.datetime(1970, 1, 1)
_EXACT = decimal.Context(prec=80)  # wide enough for any DECIMAL(38, s): no rounding


def header_size(arity: int) -> int:
    return ((arity + 63 + 8) // 64) * 8


def decode(data: bytes, types: Sequence[pa.DataType], raw: bool = False) -> tuple[Any, ...]:
    """A manifest's serialized row (arity prefix included) as Python values of ``types``;
    ``raw``: dates, times and timestamps as Java holds them (a day number, milliseconds
    of the day, epoch milliseconds and nanoseconds within the millisecond), exactly."""
    if len(data) < 4:
        raise CorruptTableError(f"a serialized BinaryRow needs at least 4 bytes, got {len(data)}")
    (arity,) = struct.unpack_from(">i", data, 0)
    if arity != len(types):
        raise CorruptTableError(f"a BinaryRow of {arity} fields where {len(types)} were expected")
    row = memoryview(data)[4:]
    base = header_size(arity)
    if len(row) < base + 8 * arity:
        raise CorruptTableError(f"a BinaryRow of {arity} fields is cut short ({len(row)} bytes)")
    return tuple(
        None if row[(i + 8) >> 3] & (1 << ((i + 8) & 7)) else _field(row, base + 8 * i, t, raw)
        for i, t in enumerate(types)
    )


def _field(row: memoryview, at: int, t: pa.DataType, raw: bool) -> Any:
    slot = bytes(row[at : at + 8])
    if pa.types.is_boolean(t):
        return slot[0] != 0
    if pa.types.is_int8(t):
        return struct.unpack_from("<b", slot)[0]
    if pa.types.is_int16(t):
        return struct.unpack_from("<h", slot)[0]
    if pa.types.is_int32(t) or pa.types.is_date32(t) or pa.types.is_time32(t):
        value = struct.unpack_from("<i", slot)[0]
        if raw or not pa.types.is_date32(t):
            return value
        return datetime.date(1970, 1, 1) + datetime.timedelta(days=value)
    if pa.types.is_int64(t):
        return struct.unpack_from("<q", slot)[0]
    if pa.types.is_float32(t):
        return struct.unpack_from("<f", slot)[0]
    if pa.types.is_float64(t):
        return struct.unpack_from("<d", slot)[0]
    if pa.types.is_string(t) or pa.types.is_binary(t):
        data = _var_bytes(row, slot)
        if not pa.types.is_string(t):
            return data
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise CorruptTableError(f"a BinaryRow's string field is not UTF-8: {data!r}") from None
    if pa.types.is_decimal(t):
        if t.precision <= 18:
            unscaled = struct.unpack_from("<q", slot)[0]
        else:
            (word,) = struct.unpack_from("<Q", slot)
            offset, size = word >> 32, word & 0xFFFFFFFF
            unscaled = int.from_bytes(row[offset : offset + size], "big", signed=True)
        return decimal.Decimal(unscaled).scaleb(-t.scale, _EXACT)
    if pa.types.is_timestamp(t):
        if _precision(t) <= 3:
            millis, nanos = struct.unpack_from("<q", slot)[0], 0
        else:
            (word,) = struct.unpack_from("<Q", slot)
            offset, nanos = word >> 32, word & 0xFFFFFFFF
            if offset + 8 > len(row) or nanos >= 1_000_000:
                raise CorruptTableError("a BinaryRow's timestamp field is out of its bounds")
            millis = struct.unpack_from("<q", row, offset)[0]
        if raw:
            return millis, nanos
        return EPOCH + datetime.timedelta(milliseconds=millis, microseconds=nanos // 1000)
    raise UnsupportedFeatureError(f"cannot decode a BinaryRow field of type {t}")


def _precision(t: pa.TimestampType) -> int:
    return {"s": 0, "ms": 3, "us": 6, "ns": 9}[t.unit]


def _var_bytes(row: memoryview, slot: bytes) -> bytes:
    (word,) = struct.unpack("<Q", slot)
    if word >> 63:  # inline: up to 7 bytes in the slot, the length in the top byte
        return slot[: (word >> 56) & 0x7F]
    offset, size = word >> 32, word & 0xFFFFFFFF
    if offset + size > len(row):
        raise CorruptTableError("a BinaryRow's variable-length field points past its end")
    return bytes(row[offset : offset + size])


def encode(values: Sequence[Any], types: Sequence[pa.DataType]) -> bytes:
    """``values`` (Python values of ``types``; timestamps also as integers of their unit)
    as a manifest's serialized BinaryRow, arity prefix included, byte for byte as Java
    writes it (unused bytes zero, since rows are compared and hashed as bytes)."""
    arity = len(types)
    base = header_size(arity)
    row = bytearray(base + 8 * arity)
    for i, (value, t) in enumerate(zip(values, types, strict=True)):
        at = base + 8 * i
        if value is None:
            row[(i + 8) >> 3] |= 1 << ((i + 8) & 7)
            if _wide(t):  # Java still reserves the value's variable part
                size = 16 if pa.types.is_decimal(t) else 8
                struct.pack_into("<Q", row, at, len(row) << 32)
                row += bytes(size)
            continue
        _put(row, at, value, t)
    return struct.pack(">i", arity) + bytes(row)


def _wide(t: pa.DataType) -> bool:
    """A decimal or timestamp too precise for its 8-byte slot."""
    return (pa.types.is_decimal(t) and t.precision > 18) or (pa.types.is_timestamp(t) and _precision(t) > 3)


def _put(row: bytearray, at: int, value: Any, t: pa.DataType) -> None:
    if pa.types.is_boolean(t):
        row[at] = 1 if value else 0
    elif pa.types.is_int8(t):
        struct.pack_into("<b", row, at, value)
    elif pa.types.is_int16(t):
        struct.pack_into("<h", row, at, value)
    elif pa.types.is_date32(t):
        days = value if isinstance(value, int) else (value - datetime.date(1970, 1, 1)).days
        struct.pack_into("<i", row, at, days)
    elif pa.types.is_time32(t):
        if isinstance(value, datetime.time):
            value = ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000
        struct.pack_into("<i", row, at, value)
    elif pa.types.is_int32(t):
        struct.pack_into("<i", row, at, value)
    elif pa.types.is_int64(t):
        struct.pack_into("<q", row, at, value)
    elif pa.types.is_float32(t):
        struct.pack_into("<f", row, at, value)
    elif pa.types.is_float64(t):
        struct.pack_into("<d", row, at, value)
    elif pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t):
        _put_bytes(row, at, value.encode("utf-8") if isinstance(value, str) else bytes(value))
    elif pa.types.is_decimal(t):
        unscaled = int(decimal.Decimal(value).scaleb(t.scale, _EXACT))
        if t.precision <= 18:
            struct.pack_into("<q", row, at, unscaled)
        else:
            data = unscaled.to_bytes((unscaled + (unscaled < 0)).bit_length() // 8 + 1, "big", signed=True)
            struct.pack_into("<Q", row, at, (len(row) << 32) | len(data))
            row += data + bytes(16 - len(data))
    elif pa.types.is_timestamp(t):
        millis, nanos = _millis_and_nanos(value, t)
        if _precision(t) <= 3:
            struct.pack_into("<q", row, at, millis)
        else:
            struct.pack_into("<Q", row, at, (len(row) << 32) | nanos)
            row += struct.pack("<q", millis)
    else:
        raise UnsupportedFeatureError(f"cannot encode a BinaryRow field of type {t}")


def _put_bytes(row: bytearray, at: int, data: bytes) -> None:
    if len(data) <= 7:
        row[at : at + len(data)] = data
        row[at + 7] = 0x80 | len(data)
    else:
        struct.pack_into("<Q", row, at, (len(row) << 32) | len(data))
        row += data + bytes(-len(data) % 8)


def _millis_and_nanos(value: Any, t: pa.TimestampType) -> tuple[int, int]:
    """Epoch milliseconds and the nanoseconds within the millisecond (floored)."""
    if isinstance(value, datetime.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        micros = (value - EPOCH) // datetime.timedelta(microseconds=1)
        return micros // 1000, micros % 1000 * 1000
    per_milli = {"s": None, "ms": 1, "us": 1000, "ns": 1_000_000}[t.unit]
    if per_milli is None:
        return int(value) * 1000, 0
    millis, rest = divmod(int(value), per_milli)
    return millis, rest * (1_000_000 // per_milli)
