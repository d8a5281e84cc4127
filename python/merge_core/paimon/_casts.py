"""Column type changes: which ones Paimon allows, and which of those merge-core reads exactly.

Paimon decides by type root alone (``DataTypeCasts``): a change is *implicit* (a
widening, always allowed) or *explicit* (a SQL ``CAST``, allowed unless the table sets
``disable-explicit-type-casting``); its readers then cast each older file's values as
they read them. merge-core casts them with arrow's kernels in Rust, which give Java's
values only for some changes: :func:`reads_exactly` names those. A change Paimon allows
outside them is refused by name, when merge-core alters the table and when it reads a
table another writer altered so, rather than read with values Paimon would not give.
"""

from __future__ import annotations

import re
from typing import Any

CHARS = frozenset({"CHAR", "VARCHAR"})
BINARIES = frozenset({"BINARY", "VARBINARY"})
INTEGERS = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT")
NUMERIC = frozenset({*INTEGERS, "FLOAT", "DOUBLE", "DECIMAL"})
TIMESTAMPS = frozenset({"TIMESTAMP", "TIMESTAMP_LTZ"})
DATETIME = frozenset({"DATE", "TIME", *TIMESTAMPS})
PREDEFINED = frozenset({*CHARS, *BINARIES, *NUMERIC, *DATETIME, "BOOLEAN"})
CONSTRUCTED = frozenset({"ARRAY", "MAP", "MULTISET", "ROW"})
_FROM_NUMBERS = frozenset({*NUMERIC, *CHARS, "BOOLEAN", *TIMESTAMPS})

# Target root -> (implicit sources, explicit sources), as DataTypeCasts builds them.
# Every root is also an implicit source of itself.
RULES: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "CHAR": (frozenset({"CHAR"}), PREDEFINED | CONSTRUCTED),
    "VARCHAR": (CHARS, PREDEFINED | CONSTRUCTED),
    "BOOLEAN": (frozenset({"BOOLEAN"}), CHARS | frozenset(INTEGERS)),
    "BINARY": (frozenset({"BINARY"}), CHARS | {"VARBINARY"}),
    "VARBINARY": (BINARIES, CHARS | {"BINARY"}),
    "DECIMAL": (NUMERIC, CHARS | {"BOOLEAN"} | TIMESTAMPS),
    "TINYINT": (frozenset(INTEGERS[:1]), _FROM_NUMBERS),
    "SMALLINT": (frozenset(INTEGERS[:2]), _FROM_NUMBERS),
    "INTEGER": (frozenset(INTEGERS[:3]), _FROM_NUMBERS),
    "BIGINT": (frozenset(INTEGERS), _FROM_NUMBERS),
    "FLOAT": (frozenset({*INTEGERS, "FLOAT", "DECIMAL"}), _FROM_NUMBERS),
    "DOUBLE": (NUMERIC, CHARS | {"BOOLEAN"} | TIMESTAMPS),
    "DATE": (frozenset({"DATE", "TIMESTAMP"}), TIMESTAMPS | CHARS),
    "TIME": (frozenset({"TIME", "TIMESTAMP"}), frozenset({"TIME"}) | TIMESTAMPS | CHARS),
    "TIMESTAMP": (TIMESTAMPS, DATETIME | CHARS | NUMERIC),
    "TIMESTAMP_LTZ": (TIMESTAMPS, DATETIME | CHARS | NUMERIC),
}

MAX_LENGTH = 2147483647  # STRING is VARCHAR of this length, BYTES VARBINARY
INTEGER_DIGITS = {"TINYINT": 3, "SMALLINT": 5, "INTEGER": 10, "BIGINT": 19}
_ALIASES = {"INT": "INTEGER", "STRING": "VARCHAR", "BYTES": "VARBINARY", "DEC": "DECIMAL", "NUMERIC": "DECIMAL"}
_TYPE = re.compile(r"^([A-Z_]+(?: [A-Z_]+)*?)\s*(?:\((\d+)(?:,\s*(\d+))?\))?(\s+WITH LOCAL TIME ZONE)?$")


def strip_null(spec: Any) -> Any:
    """A type spec (Paimon's JSON form) without its outer ``NOT NULL``."""
    if isinstance(spec, dict):
        return {**spec, "type": spec["type"].removesuffix(" NOT NULL")}
    return str(spec).strip().removesuffix("NOT NULL").strip()


def nullable(spec: Any) -> bool:
    text = spec["type"] if isinstance(spec, dict) else str(spec)
    return not text.strip().endswith("NOT NULL")


def with_null(spec: Any, allowed: bool) -> Any:
    """``spec`` nullable or ``NOT NULL`` (its outer level only)."""
    bare = strip_null(spec)
    if allowed:
        return bare
    if isinstance(bare, dict):
        return {**bare, "type": bare["type"] + " NOT NULL"}
    return bare + " NOT NULL"


def atomic(spec: Any) -> tuple[str, int | None, int | None] | None:
    """An atomic type spec as its root and parameters (length, precision and scale),
    with Java's defaults filled in; ``None`` for a nested type or one not understood."""
    if isinstance(spec, dict):
        return None
    match = _TYPE.match(strip_null(spec))
    if not match:
        return None
    name, first, second, local = match.group(1), match.group(2), match.group(3), match.group(4)
    if name in ("STRING", "BYTES"):
        return _ALIASES[name], MAX_LENGTH, None
    name = _ALIASES.get(name, name)
    if local or name == "TIMESTAMP_LTZ":
        return "TIMESTAMP_LTZ", int(first) if first else 6, None
    defaults = {"CHAR": 1, "VARCHAR": 1, "BINARY": 1, "VARBINARY": 1, "DECIMAL": 10, "TIME": 0, "TIMESTAMP": 6}
    if name not in RULES:
        return None
    a = int(first) if first else defaults.get(name)
    b = int(second) if second else (0 if name == "DECIMAL" else None)
    return name, a, b


def root(spec: Any) -> str | None:
    if isinstance(spec, dict):
        return strip_null(spec)["type"]
    found = atomic(spec)
    return found[0] if found else None


def canonical(text: str) -> str:
    """A Paimon type string as Java writes it back (``INTEGER`` -> ``INT``,
    ``DECIMAL(10,2)`` -> ``DECIMAL(10, 2)``, ``VARCHAR(2147483647)`` -> ``STRING``)."""
    found = atomic(text)
    if found is None:
        return text.strip()
    name, a, b = found
    suffix = "" if nullable(text) else " NOT NULL"
    if name == "VARCHAR" and a == MAX_LENGTH:
        return "STRING" + suffix
    if name == "VARBINARY" and a == MAX_LENGTH:
        return "BYTES" + suffix
    if name == "INTEGER":
        return "INT" + suffix
    if name == "DECIMAL":
        return f"DECIMAL({a}, {b}){suffix}"
    if name == "TIMESTAMP_LTZ":
        return f"TIMESTAMP({a}) WITH LOCAL TIME ZONE{suffix}"
    return (f"{name}({a})" if a is not None else name) + suffix


def paimon_allows(source: Any, target: Any, explicit: bool) -> bool:
    """Whether Paimon changes a column of type ``source`` to ``target`` (by their roots;
    ``explicit``: casts beyond widenings are allowed)."""
    source_root, target_root = root(source), root(target)
    if source_root is None or target_root is None:
        return False
    if source_root == target_root:
        return True
    implicit, explicit_sources = RULES.get(target_root, (frozenset(), frozenset()))
    return source_root in implicit or (explicit and source_root in explicit_sources)


def reads_exactly(source: Any, target: Any) -> bool:
    """Whether merge-core's read of a file written with a column of type ``source``, as
    ``target``, gives every value Paimon's readers give (arrow's cast in Rust): the same
    type, a wider integer or float, an integer or decimal into a decimal or float that
    holds every value, a longer VARCHAR or VARBINARY, a finer timestamp, or an integer
    into a string (the same digits as Java's ``toString``)."""
    if strip_null(source) == strip_null(target):
        return True
    old, new = atomic(source), atomic(target)
    if old is None or new is None:
        return False
    (a, a1, a2), (b, b1, b2) = old, new
    if a == b == "DECIMAL":
        return b2 >= a2 and b1 - b2 >= a1 - a2
    if a == b and a in ("VARCHAR", "VARBINARY", "TIMESTAMP", "TIMESTAMP_LTZ"):
        return b1 >= a1
    if a == b:
        return a1 == b1 and a2 == b2
    if a in INTEGERS:
        if b in INTEGERS:
            return INTEGERS.index(a) < INTEGERS.index(b)
        if b in ("FLOAT", "DOUBLE"):
            return True
        if b == "DECIMAL":
            return b1 - b2 >= INTEGER_DIGITS[a]
        return b == "VARCHAR" and b1 == MAX_LENGTH
    return a == "FLOAT" and b == "DOUBLE"
