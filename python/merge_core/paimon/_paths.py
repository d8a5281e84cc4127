"""Where a Paimon table keeps its data files, computed in one place for whoever writes,
reads or removes them: ``[data-file.path-directory/]k1=v1/k2=v2/bucket-N/<file name>`` (``bucket-postpone`` for
the rows a postponed-bucket table has not yet put in a bucket).

A partition's directory is derived from its serialized row (a manifest's ``_PARTITION``
bytes), never parsed back from a directory name, as Paimon's ``FileStorePathFactory``
does: each value becomes the text Java gives it, then is escaped as Paimon escapes path
names (``%XX`` for ``/``, ``=``, ``:``, ``%``, control characters, ...). A null value, or
text that is empty or only whitespace (Java's ``Character.isWhitespace``), names the
``partition.default-name`` directory (``__DEFAULT_PARTITION__``).

The text of a value, by ``partition.legacy-name``:

=======================  ========================================  ===============================
type                     ``true`` (Paimon's default): ``toString``  ``false``: a cast to STRING
=======================  ========================================  ===============================
BOOLEAN                  ``true`` / ``false``                       the same
TINYINT ... BIGINT       decimal digits                             the same
FLOAT, DOUBLE            Java's ``Float``/``Double.toString``       the same
DECIMAL                  plain digits with the scale (``-1.50``)    the same
CHAR, VARCHAR, STRING    the string                                 the same
DATE                     the day number since 1970 (``19723``)      ``2024-01-01``
TIME                     milliseconds of the day (``3600000``)      ``01:00:00`` (+ fraction)
TIMESTAMP                ``2024-01-01T00:00`` (``LocalDateTime``)   ``2024-01-01 00:00:00``
TIMESTAMP_LTZ            as TIMESTAMP, in UTC                       refused: Java uses its zone
BINARY, VARBINARY        refused: Java names the array object       the bytes as UTF-8
=======================  ========================================  ===============================

``Float``/``Double.toString`` are Java's since JDK 19: the shortest decimal that reads
back as the value (two digits when one would do, the nearer one when two qualify).

Nothing named here leads outside the table: the partition part is ``name=value``
components whose separators are escaped, ``data-file.path-directory`` is refused unless
it is a plain relative path, and a file name a manifest holds is refused unless it is a
plain name (:func:`file_name`), as is an external path outside the places the table's
options name (:func:`external_file`).
"""

from __future__ import annotations

import decimal
import math
import os
import re
import struct
import unicodedata
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import CorruptTableError, InvalidInputError, UnsupportedFeatureError
from ..fs import Location
from . import _binary
from ._schema import Field, TableSchema, load_schema, schema_ids

DEFAULT_PARTITION_NAME = "__DEFAULT_PARTITION__"
PATH_DIRECTORY = "data-file.path-directory"
DEFAULT_NAME = "partition.default-name"
LEGACY_NAME = "partition.legacy-name"
EXTERNAL_PATHS = ("data-file.external-paths", "global-index.external-path")
_ESCAPED = set("\"#%'*/:=?\\\x7f{}[]^")
_JAVA_SPACES = set("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f")
_NOT_JAVA_SPACES = set("\u00a0\u2007\u202f")  # non-breaking: Unicode spaces Java does not count
_MILLIS_PER_DAY = 86_400_000
POSTPONE_BUCKET = -2  # where a postponed-bucket table's writers put rows before compaction


def escape(text: str) -> str:
    """``text`` as one component of a Paimon path name (``PartitionPathUtils``)."""
    return "".join(f"%{ord(c):02X}" if ord(c) < 0x20 or c in _ESCAPED else c for c in text)


def _blank(text: str) -> bool:
    """Whether Java's ``StringUtils.isNullOrWhitespaceOnly`` holds for ``text``."""
    return all(
        c in _JAVA_SPACES or (unicodedata.category(c) in ("Zs", "Zl", "Zp") and c not in _NOT_JAVA_SPACES) for c in text
    )


# -- the text of each type ----------------------------------------------------------


def java_floating(x: float, single: bool) -> str:
    """Java's ``Float.toString`` (``single``) or ``Double.toString`` of ``x``."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    digits, exponent = _shortest_decimal(abs(x), single)
    return ("-" if x < 0 else "") + _scientific_or_plain(digits, exponent)


def _shortest_decimal(v: float, single: bool) -> tuple[str, int]:
    """The decimal Java picks for ``v`` > 0 as significant digits and the power of ten of
    the first: of the decimals that round to ``v``, those with the fewest digits (at
    least two), the nearest to ``v`` (on a tie, the even one)."""
    # Python's repr (numpy's str for a float32) is that decimal when it has two digits or
    # more: the shortest that reads back, the nearest of those.
    shortest = decimal.Decimal(repr(v) if not single else str(np.float32(v))).normalize()
    digits = "".join(map(str, shortest.as_tuple().digits))
    if len(digits) >= 2:
        return digits, shortest.adjusted()
    # One digit would do: Java takes the nearest of the two-digit decimals that round to v.
    low, high, closed = _rounding_interval(v, single)
    exact = Fraction(v)
    power = decimal.Decimal(v).adjusted() - 1  # of the second digit
    step = Fraction(10) ** power
    centre = round(exact / step)
    inside = [
        c for c in (centre - 1, centre, centre + 1) if low < c * step < high or (closed and c * step in (low, high))
    ]
    best = min(inside, key=lambda c: (abs(c * step - exact), c % 2))
    return str(best).rstrip("0"), power + len(str(best)) - 1


def _rounding_interval(v: float, single: bool) -> tuple[Fraction, Fraction, bool]:
    """The reals that round to ``v`` (a positive float or float32): the bounds, halfway
    to its neighbours, and whether they belong (round-half-even: if ``v`` is even)."""
    pack, unpack = ("<f", "<i") if single else ("<d", "<q")
    bits = struct.unpack(unpack, struct.pack(pack, v))[0]
    below = struct.unpack(pack, struct.pack(unpack, bits - 1))[0]
    above = struct.unpack(pack, struct.pack(unpack, bits + 1))[0]
    exact = Fraction(v)
    upper = exact + (exact - Fraction(below)) if math.isinf(above) else Fraction(above)
    return (Fraction(below) + exact) / 2, (exact + upper) / 2, bits % 2 == 0


def _scientific_or_plain(digits: str, power: int) -> str:
    """A decimal (significant ``digits``, the first at 10^``power``) as Java writes it:
    plain from 10^-3 up to 10^7, else ``d.dddE<n>``, always a digit after the point."""
    if not -3 <= power < 7:
        return f"{digits[0]}.{digits[1:] or '0'}E{power}"
    if power < 0:
        return "0." + "0" * (-power - 1) + digits
    whole = digits[: power + 1].ljust(power + 1, "0")
    return f"{whole}.{digits[power + 1 :] or '0'}"


def _civil(days: int) -> tuple[int, int, int]:
    """Year, month and day of a day number since 1970-01-01 (proleptic Gregorian)."""
    z = days + 719_468
    era = z // 146_097
    day_of_era = z - era * 146_097
    year_of_era = (day_of_era - day_of_era // 1460 + day_of_era // 36_524 - day_of_era // 146_096) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    shifted_month = (5 * day_of_year + 2) // 153  # months from March
    day = day_of_year - (153 * shifted_month + 2) // 5 + 1
    month = shifted_month + 3 if shifted_month < 10 else shifted_month - 9
    return year_of_era + era * 400 + (month <= 2), month, day


def _split_timestamp(millis: int, nanos: int) -> tuple[int, int, int]:
    """A timestamp (epoch milliseconds and nanoseconds within the millisecond) as its day
    number, the millisecond of that day and the nanosecond of that second."""
    days, of_day = divmod(millis, _MILLIS_PER_DAY)
    return days, of_day, of_day % 1000 * 1_000_000 + nanos


def local_date_time(millis: int, nanos: int) -> str:
    """Java's ``LocalDateTime.toString`` (what Paimon's ``Timestamp.toString`` gives)."""
    days, of_day, nano = _split_timestamp(millis, nanos)
    year, month, day = _civil(days)
    if abs(year) < 1000:
        text = f"{'-' if year < 0 else ''}{abs(year):04d}"
    else:
        text = f"{'+' if year > 9999 else ''}{year}"
    seconds = of_day // 1000
    text += f"-{month:02d}-{day:02d}T{seconds // 3600:02d}:{seconds // 60 % 60:02d}"
    if seconds % 60 or nano:
        text += f":{seconds % 60:02d}"
    if nano % 1_000_000 == 0 and nano:
        text += f".{nano // 1_000_000:03d}"
    elif nano % 1000 == 0 and nano:
        text += f".{nano // 1000:06d}"
    elif nano:
        text += f".{nano:09d}"
    return text


def _date(days: int, column: str) -> str:
    """``yyyy-MM-dd``, as Paimon's ``DateTimeUtils`` formats a date cast to a string (which
    writes four digits of the year, so only years 0 to 9999 have a faithful name)."""
    year, month, day = _civil(days)
    if not 0 <= year <= 9999:
        raise UnsupportedFeatureError(
            f"partition column {column!r}: year {year} has no exact directory name with '{LEGACY_NAME}' = false"
        )
    return f"{year:04d}-{month:02d}-{day:02d}"


def _timestamp(millis: int, nanos: int, precision: int, column: str) -> str:
    """``yyyy-MM-dd HH:mm:ss[.fraction]`` as Paimon casts a timestamp to a string: the nine
    digits of the second's fraction, trailing zeros cut down to ``precision`` digits."""
    days, of_day, nano = _split_timestamp(millis, nanos)
    seconds = of_day // 1000
    fraction = f"{nano:09d}"
    while len(fraction) > precision and fraction.endswith("0"):
        fraction = fraction[:-1]
    text = f"{_date(days, column)} {seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
    return f"{text}.{fraction}" if fraction else text


def _time(millis: int, precision: int) -> str:
    """``HH:mm:ss[.fraction]`` as Paimon casts a TIME to a string: fraction digits up to
    ``precision``, stopping early once only zeros are left."""
    if millis < 0:  # Java adds days until it is not
        millis %= _MILLIS_PER_DAY
    hours, rest = divmod(millis, 3_600_000)
    text = f"{hours // 10 % 10}{hours % 10}:{rest // 60_000:02d}:{rest // 1000 % 60:02d}"
    if precision <= 0:
        return text
    fraction, left = "", rest % 1000
    for _ in range(precision):
        fraction += str(left // 100)
        left = left % 100 * 10
        if left == 0:
            break
    return f"{text}.{fraction}"


def plain_decimal(value: decimal.Decimal) -> str:
    """Java's ``BigDecimal.toPlainString`` (the scale kept: ``1.50``, ``0.005``)."""
    return format(value, "f")


def _declared_precision(f: Field, default: int) -> int:
    """The precision of a TIME or TIMESTAMP column as its schema declares it."""
    found = re.search(r"\((\d+)\)", str(f.paimon_type or ""))
    if found:
        return int(found.group(1))
    if f.paimon_type is not None:
        return default
    return {"s": 0, "ms": 3, "us": 6, "ns": 9}.get(getattr(f.type, "unit", "ms"), default)


def _formatter(f: Field, legacy: bool) -> Callable[[Any], str]:
    """How a value of partition column ``f`` (decoded from the row, dates and times as
    numbers) becomes its directory text, or UnsupportedFeatureError for its type."""
    t, name = f.type, f.name
    if pa.types.is_boolean(t):
        return lambda v: "true" if v else "false"
    if pa.types.is_integer(t):
        return str
    if pa.types.is_float32(t) or pa.types.is_float64(t):
        single = pa.types.is_float32(t)
        return lambda v: java_floating(v, single)
    if pa.types.is_decimal(t):
        return plain_decimal
    if pa.types.is_string(t):
        return lambda v: v
    if pa.types.is_date32(t):
        return str if legacy else lambda v: _date(v, name)
    if pa.types.is_time32(t):
        precision = _declared_precision(f, 0)
        return str if legacy else lambda v: _time(v, precision)
    if pa.types.is_timestamp(t):
        if legacy:
            return lambda v: local_date_time(*v)
        if t.tz is not None:
            raise UnsupportedFeatureError(
                f"partition column {name!r}: a TIMESTAMP WITH LOCAL TIME ZONE partition with '{LEGACY_NAME}' = false "
                "is named in the time zone of the Java process that writes it, not by its value"
            )
        precision = _declared_precision(f, 6)
        return lambda v: _timestamp(*v, precision, name)
    if pa.types.is_binary(t):
        if legacy:
            raise UnsupportedFeatureError(
                f"partition column {name!r}: a BINARY partition with '{LEGACY_NAME}' = true (the default) is named "
                "by Java's identity of the byte array ('[B@...'), not by its value; "
                f"merge-core supports binary partitions with '{LEGACY_NAME}' = false"
            )
        return lambda v: _utf8(v, name)
    raise UnsupportedFeatureError(f"partition column {name!r} has type {t}, which merge-core cannot partition by")


def _utf8(value: bytes, column: str) -> str:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise UnsupportedFeatureError(
            f"partition column {column!r}: bytes {value!r} are not UTF-8, so Java's and merge-core's directory "
            "names for them could differ"
        ) from None


# -- options --------------------------------------------------------------------------


def data_directory(options: dict[str, str]) -> str | None:
    """``data-file.path-directory``: a relative path below the table's root, or refused."""
    value = options.get(PATH_DIRECTORY)
    if value is None:
        return None
    parts = value.split("/")
    if any(p in ("", ".", "..") for p in parts) or "\\" in value or ":" in value or _has_control(value):
        raise InvalidInputError(
            f"option '{PATH_DIRECTORY}' = {value!r} must be a relative path of plain names inside the table "
            "(no '..', '.', empty or absolute parts, no ':' or '\\')"
        )
    return value


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_NOT_IN_A_NAME = re.compile(r"[\x00-\x1f\x7f/\\]")


def _has_control(text: str) -> bool:
    return _CONTROL.search(text) is not None


def _legacy_names(options: dict[str, str]) -> bool:
    value = options.get(LEGACY_NAME, "true")
    if value.strip().lower() not in ("true", "false"):
        raise InvalidInputError(f"option '{LEGACY_NAME}' must be true or false, got {value!r}")
    return value.strip().lower() == "true"


def _default_name(options: dict[str, str]) -> str:
    value = options.get(DEFAULT_NAME, DEFAULT_PARTITION_NAME)
    if value == "":
        raise InvalidInputError(f"option '{DEFAULT_NAME}' must not be empty (it names a directory)")
    return value


# -- the layout of one schema ---------------------------------------------------------


class Layout:
    """How the data files of a table under ``schema`` are laid out. Made once per schema;
    its options and partition column types are checked on construction (refused by
    name if merge-core would compute a directory Paimon does not, or one outside the
    table)."""

    def __init__(self, schema: TableSchema):
        options = schema.options
        self.directory = data_directory(options)
        self.default = _default_name(options)
        self.legacy = _legacy_names(options)
        columns = [schema.field(k) for k in schema.partition_keys]
        self.types = [f.type for f in columns]
        self.names = [escape(f.name) for f in columns]
        self.formatters = [_formatter(f, self.legacy) for f in columns]
        self._cache: dict[bytes, str] = {}

    def partition_dir(self, partition: bytes) -> str:
        """The relative directory of a partition's serialized row (empty if unpartitioned)."""
        found = self._cache.get(partition)
        if found is None:
            values = _binary.decode(partition, self.types, raw=True)
            parts = []
            for name, value, text_of in zip(self.names, values, self.formatters, strict=True):
                text = None if value is None else text_of(value)
                parts.append(f"{name}={escape(self.default if text is None or _blank(text) else text)}")
            found = self._cache[partition] = "/".join(parts)
        return found

    def bucket_dir(self, partition: bytes, bucket: int) -> str:
        """The bucket's directory, relative to the table's root (``bucket-postpone`` for a
        postponed-bucket table's bucket -2, as Paimon names it)."""
        name = "bucket-postpone" if bucket == POSTPONE_BUCKET else f"bucket-{bucket}"
        return "/".join(p for p in (self.directory, self.partition_dir(partition), name) if p)


def bucket_dir(schema: TableSchema, partition: bytes | Sequence[Any], bucket: int) -> str:
    """The bucket's directory under ``schema``, relative to the table's root; the partition
    as its serialized row, or as values (serialized first)."""
    if not isinstance(partition, bytes):
        partition = _binary.encode(partition, [schema.field(k).type for k in schema.partition_keys])
    return Layout(schema).bucket_dir(partition, bucket)


# -- names a manifest holds -------------------------------------------------------------


def file_name(name: Any, where: Any, error: type[Exception] = CorruptTableError) -> str:
    """``name``, a file name the metadata file ``where`` holds, if it is one plain name:
    a path (a separator, ``..``) would make a read or a delete reach another directory."""
    if not isinstance(name, str) or name in ("", ".", "..") or _NOT_IN_A_NAME.search(name):
        raise error(f"{where} names a file {name!r}, which is not a plain file name")
    return name


def external_file(path: Any, places: Sequence[str], root: str, where: Any) -> str:
    """``path``, an external path the metadata file ``where`` holds, as a local path, if it
    lies below the table's ``root`` or one of the ``places`` the table's options name
    (``data-file.external-paths``, ``global-index.external-path``)."""
    local = _local(path, where) if isinstance(path, str) else None
    allowed = [root, *(p for p in (_local(place, None) for place in places) if p)]
    if local is None or not any(local.startswith(place.rstrip("/") + "/") for place in allowed):
        named = ", ".join(repr(p) for p in places) or "none"
        raise CorruptTableError(
            f"{where} names the external file {path!r}, outside the table and the external paths its options name "
            f"({named})"
        )
    return local


def external_places(root: Location) -> list[str]:
    """The external paths that any schema of the table at ``root`` names in its options
    (a file keeps the place it was written to when the options change)."""
    places = set()
    for schema_id in schema_ids(root):
        options = load_schema(root, schema_id).options
        places |= {p.strip() for key in EXTERNAL_PATHS for p in options.get(key, "").split(",") if p.strip()}
    return sorted(places)


class ManifestPaths:
    """Checks the names and external paths that the manifests of the table at ``root``
    give their files, before anything reads or removes them (the table's external paths
    are looked up once, at the first external path met)."""

    def __init__(self, root: Location):
        self.root = root
        self._places: list[str] | None = None

    def data_file(self, f: dict[str, Any], where: Any) -> None:
        """A manifest entry's ``_FILE`` record."""
        file_name(f.get("_FILE_NAME"), where)
        for extra in f.get("_EXTRA_FILES") or ():
            file_name(extra, where)
        self.external(f.get("_EXTERNAL_PATH"), where)

    def index_file(self, entry: dict[str, Any], where: Any) -> None:
        """An index manifest entry."""
        file_name(entry.get("_FILE_NAME"), where)
        self.external(entry.get("_EXTERNAL_PATH"), where)

    def external(self, path: Any, where: Any) -> str | None:
        """An external path as a local path, checked (``None`` if there is none)."""
        if not path:
            return None
        if self._places is None:
            self._places = external_places(self.root)
        return external_file(path, self._places, self.root.path, where)


def _local(path: str, where: Any) -> str | None:
    """A path as Paimon's ``Path`` writes it (``file:/a``, ``file:///a`` or ``/a``; the
    rest taken literally, not percent-decoded) as a normalized local path. Another
    scheme is not supported (``None`` for an option's place, which then allows nothing)."""
    colon, slash = path.find(":"), path.find("/")
    if colon > 0 and (slash == -1 or colon < slash):
        if path[:colon].lower() != "file":
            if where is None:
                return None
            raise UnsupportedFeatureError(f"{where}: external path {path!r} on '{path[:colon]}' is not supported yet")
        path = path[colon + 1 :]
    if path.startswith("//") and len(path) > 2:
        authority, _, rest = path[2:].partition("/")
        if authority not in ("", "localhost"):
            return None
        path = "/" + rest
    return os.path.normpath(path) if path.startswith("/") else None
