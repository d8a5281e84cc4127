"""Reading a Paimon table's option values as Paimon parses them: integers, booleans,
durations (``1 h``, ``30min``, ``500``: milliseconds), memory sizes (``128 mb``),
floating-point numbers, enumerations and maps (``0:avro,3:parquet``). A value Paimon
would not parse is an :class:`InvalidInputError` naming the option."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ..errors import InvalidInputError

_NANOS = {
    **dict.fromkeys(("d", "day", "days"), 86_400 * 10**9),
    **dict.fromkeys(("h", "hour", "hours"), 3_600 * 10**9),
    **dict.fromkeys(("min", "m", "minute", "minutes"), 60 * 10**9),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), 10**9),
    **dict.fromkeys(("ms", "milli", "millis", "millisecond", "milliseconds"), 10**6),
    **dict.fromkeys(("µs", "micro", "micros", "microsecond", "microseconds"), 10**3),
    **dict.fromkeys(("ns", "nano", "nanos", "nanosecond", "nanoseconds"), 1),
}
_BYTES = {
    **dict.fromkeys(("", "b", "bytes"), 1),
    **dict.fromkeys(("k", "kb", "kibibytes"), 1 << 10),
    **dict.fromkeys(("m", "mb", "mebibytes"), 1 << 20),
    **dict.fromkeys(("g", "gb", "gibibytes"), 1 << 30),
    **dict.fromkeys(("t", "tb", "tebibytes"), 1 << 40),
}
INT_MAX = (1 << 31) - 1
LONG_MAX = (1 << 63) - 1
_INTEGER = re.compile(r"[+-]?[0-9]+")  # Java's parseInt: no underscores, no spaces inside
# Java's parseDouble: a decimal number with an optional exponent and type suffix, NaN, Infinity.
_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[fFdD]?)")


def _split(key: str, text: str) -> tuple[int, str]:
    """A leading decimal number and the unit after it, as Paimon's parsers split them."""
    trimmed = text.strip()
    digits = len(trimmed) - len(trimmed.lstrip("0123456789"))
    if digits == 0:
        raise InvalidInputError(f"option '{key}': {text!r} does not start with a number")
    return int(trimmed[:digits]), trimmed[digits:].strip().lower()


def duration_ms(options: Mapping[str, str], key: str, default: str) -> int:
    """A duration option in milliseconds (a bare number is milliseconds, as in Paimon)."""
    text = options.get(key, default)
    number, unit = _split(key, text)
    if unit == "":
        return number
    if unit not in _NANOS:
        raise InvalidInputError(f"option '{key}': unknown time unit {unit!r} in {text!r} (e.g. '1 h', '30 min')")
    return number * _NANOS[unit] // 10**6


def memory_bytes(options: Mapping[str, str], key: str, default: str) -> int:
    """A memory size option in bytes (``64 mb`` is 64 MiB, as in Paimon)."""
    text = options.get(key, default)
    number, unit = _split(key, text)
    if unit not in _BYTES:
        raise InvalidInputError(f"option '{key}': unknown size unit {unit!r} in {text!r} (e.g. '128 mb')")
    return number * _BYTES[unit]


def int_option(options: Mapping[str, str], key: str, default: int, minimum: int | None = None) -> int:
    """An integer option (a Java int), at least ``minimum``."""
    return _integer(options, key, default, minimum, INT_MAX, "a 32-bit")


def long_option(options: Mapping[str, str], key: str, default: int, minimum: int | None = None) -> int:
    """An integer option Paimon reads as a Java long, at least ``minimum``."""
    return _integer(options, key, default, minimum, LONG_MAX, "a 64-bit")


def _integer(options: Mapping[str, str], key: str, default: int, minimum: int | None, top: int, width: str) -> int:
    text = options.get(key)
    if text is None:
        return default
    if not _INTEGER.fullmatch(text.strip()):
        raise InvalidInputError(f"option '{key}' must be an integer, got {text!r}")
    value = int(text.strip())
    if not -top - 1 <= value <= top:
        raise InvalidInputError(f"option '{key}' must fit {width} integer, got {text!r}")
    if minimum is not None and value < minimum:
        raise InvalidInputError(f"option '{key}' must be at least {minimum}, got {text!r}")
    return value


def double_option(options: Mapping[str, str], key: str, default: float) -> float:
    """A floating-point option (a Java double or float)."""
    text = options.get(key)
    if text is None:
        return default
    if not _DOUBLE.fullmatch(text.strip()):
        raise InvalidInputError(f"option '{key}' must be a number, got {text!r}")
    return float(text.strip().rstrip("fFdD").replace("Infinity", "inf"))


def bool_option(options: Mapping[str, str], key: str, default: bool = False) -> bool:
    text = options.get(key)
    if text is None:
        return default
    if text.strip().lower() not in ("true", "false"):
        raise InvalidInputError(f"option '{key}' must be true or false, got {text!r}")
    return text.strip().lower() == "true"


def enum_option(options: Mapping[str, str], key: str, default: str, values: Sequence[str]) -> str:
    """One of ``values`` (lower case), matched ignoring case as Paimon matches enum names."""
    text = options.get(key)
    if text is None:
        return default
    value = text.strip().lower()
    if value not in values:
        raise InvalidInputError(f"option '{key}' must be one of {', '.join(values)}; got {text!r}")
    return value


def map_option(options: Mapping[str, str], key: str) -> dict[str, str]:
    """A map option, ``key:value`` items separated by commas (``0:avro,3:parquet``)."""
    text = options.get(key)
    if text is None or not text.strip():
        return {}
    out = {}
    for item in text.split(","):
        name, colon, value = item.partition(":")
        if not colon or ":" in value:
            raise InvalidInputError(f"option '{key}': {item!r} is not a key:value pair (in {text!r})")
        out[name.strip()] = value.strip()
    return out


def list_option(options: Mapping[str, str], key: str) -> list[str]:
    """A comma-separated list of names (empty when unset or blank)."""
    return [name.strip() for name in options.get(key, "").split(",") if name.strip()]
