"""A read's row filter: a ``pyarrow.compute.Expression`` taken apart into the predicates
Paimon's scan understands (comparisons with a value, ``is_in``, ``is_null``,
``is_valid``, ``&``, ``|``, ``~``), so that a plan can skip what statistics exclude.

A predicate is asked one question: *may* a file (a partition) whose columns lie within
their statistics hold a row for which the filter is true? ``False`` is a proof (the
file is skipped); ``True`` claims nothing. The rows are always filtered exactly, after
the merge, by the expression itself (:class:`FilteredStream`), so a skip only ever saves
work; it never changes the answer.

How the expression is read: pyarrow pickles an expression as an Arrow IPC file whose
schema metadata lists its nodes in prefix order (``call``, ``field_ref``, ``literal``
with the column holding its value, ``options``, ``end``); that listing is read through
the schema's C data interface, which keeps repeated keys in order.
"""

from __future__ import annotations

import ctypes
import functools
import struct
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from ..errors import InvalidInputError
from ._batches import BatchStream

# A column's statistics: (min, max, null count, row count); min/max None: unknown (or no
# value that is not null), null count None: unknown.
Stats = tuple[Any, Any, "int | None", int]
StatsOf = Callable[[str], "Stats | None"]  # None: nothing known of the column

_FLIPPED = {"less": "greater", "less_equal": "greater_equal", "greater": "less", "greater_equal": "less_equal"}
_NEGATED = {
    "equal": "not_equal",
    "not_equal": "equal",
    "less": "greater_equal",
    "greater_equal": "less",
    "greater": "less_equal",
    "less_equal": "greater",
}
COMPARISONS = tuple(_NEGATED)


@dataclass(frozen=True)
class Node:
    """One node of a predicate: ``op`` is a comparison (``column op value``), ``in``
    (``values``), ``not_in``, ``is_null``, ``is_valid``, ``and``, ``or``, ``not`` (over
    ``children``) or ``const`` (``value``: True or False)."""

    op: str
    column: str | None = None
    value: Any = None
    values: tuple[Any, ...] = ()
    children: tuple[Node, ...] = ()

    def columns(self) -> set[str]:
        own = {self.column} if self.column is not None else set()
        return own.union(*(c.columns() for c in self.children))


class Predicate:
    """A filter on a table's rows: ``expression`` (for the exact filter) and its parsed
    form (for skipping). Picklable, so a split carries it to a worker."""

    def __init__(self, expression: pc.Expression, node: Node):
        self.expression = expression
        self.node = node

    @property
    def columns(self) -> set[str]:
        return self.node.columns()

    def conjuncts(self, columns: Sequence[str]) -> Node | None:
        """The AND of the top-level conjuncts that read only ``columns`` (None: none do),
        as Paimon picks a key filter or a partition filter out of a filter."""
        parts = self.node.children if self.node.op == "and" else (self.node,)
        kept = tuple(p for p in parts if p.columns() <= set(columns))
        if not kept:
            return None
        return kept[0] if len(kept) == 1 else Node("and", children=kept)

    def __reduce__(self) -> tuple[Any, ...]:
        return (parse, (self.expression,))

    def __repr__(self) -> str:
        return f"Predicate({self.expression})"


def parse(expression: Any, columns: Sequence[str] | None = None) -> Predicate:
    """``expression`` as a :class:`Predicate`; refuses (InvalidInputError) what is not a
    filter merge-core reads, naming it, and columns not among ``columns``."""
    if isinstance(expression, Predicate):
        expression = expression.expression
    if not isinstance(expression, pc.Expression):
        raise InvalidInputError(
            f"filter must be a pyarrow.compute.Expression (e.g. pc.field('k') == 5), got {type(expression).__name__}"
        )
    try:
        buffer = expression.__reduce__()[1][0]
    except pa.ArrowNotImplementedError as e:  # a field referenced by position
        raise InvalidInputError(f"filter {expression}: refer to columns by name ({e})") from None
    table = ipc.open_file(buffer).read_all()
    node = _normal(_predicate(_Reader(_metadata_pairs(table.schema), table).node(), "filter"))
    if columns is not None:
        unknown = sorted(node.columns() - set(columns))
        if unknown:
            raise InvalidInputError(f"filter {expression} names columns {unknown} the table does not have ({columns})")
    return Predicate(expression, node)


class _ArrowSchema(ctypes.Structure):
    """The C data interface's ArrowSchema (only ``metadata`` is read)."""

    _fields_ = [
        ("format", ctypes.c_char_p),
        ("name", ctypes.c_char_p),
        ("metadata", ctypes.c_void_p),
        ("flags", ctypes.c_int64),
        ("n_children", ctypes.c_int64),
        ("children", ctypes.c_void_p),
        ("dictionary", ctypes.c_void_p),
        ("release", ctypes.c_void_p),
        ("private_data", ctypes.c_void_p),
    ]


def _metadata_pairs(schema: pa.Schema) -> list[tuple[str, str]]:
    """The schema's metadata as (key, value) pairs in order, repeats kept (a dict loses
    them): read from its C export, ``int32`` count then length-prefixed keys and values."""
    capsule = schema.__arrow_c_schema__()  # alive (and its struct valid) while read
    pointer = ctypes.pythonapi.PyCapsule_GetPointer
    pointer.restype, pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    at = _ArrowSchema.from_address(pointer(capsule, b"arrow_schema")).metadata
    if not at:
        return []

    def take(size: int) -> bytes:
        nonlocal at
        data = ctypes.string_at(at, size)
        at += size
        return data

    (count,) = struct.unpack("<i", take(4))
    pairs = []
    for _ in range(count):
        key = take(struct.unpack("<i", take(4))[0]).decode()
        value = take(struct.unpack("<i", take(4))[0]).decode()
        pairs.append((key, value))
    return pairs


class _Reader:
    """Reads the prefix-order listing of an expression's nodes into :class:`Node`s."""

    def __init__(self, pairs: list[tuple[str, str]], table: pa.Table):
        self.pairs, self.at, self.table = pairs, 0, table

    def next(self) -> tuple[str, str]:
        if self.at >= len(self.pairs):
            raise InvalidInputError("filter: the expression could not be read")
        pair = self.pairs[self.at]
        self.at += 1
        return pair

    def node(self) -> Any:
        """A Node, a ``("field", name)`` or a ``("literal", scalar)``."""
        kind, value = self.next()
        if kind == "field_ref":
            return ("field", value)
        if kind == "nested_field_ref":
            raise InvalidInputError("filter: nested fields (pc.field('a', 'b')) are not supported")
        if kind == "literal":
            return ("literal", self.table.column(int(value))[0])
        if kind != "call":
            raise InvalidInputError(f"filter: unexpected {kind} in the expression")
        args, options = [], None
        while True:
            kind, text = self.pairs[self.at] if self.at < len(self.pairs) else ("", "")
            if kind == "end":
                self.at += 1
                break
            if kind == "options":
                self.at += 1
                options = self.table.column(int(text))[0].as_py()
                continue
            args.append(self.node())
        return _call(value, args, options)


def _call(function: str, args: list[Any], options: dict[str, Any] | None) -> Node:
    name = function.removesuffix("_kleene")
    if name in ("and", "or"):
        return Node(name, children=tuple(_predicate(a, function) for a in args))
    if name == "invert":
        return Node("not", children=(_predicate(args[0], function),))
    if name in COMPARISONS:
        left, right = args
        if left[0] == "literal" and right[0] == "field":
            left, right, name = right, left, _FLIPPED.get(name, name)
        if left[0] != "field" or right[0] != "literal":
            raise InvalidInputError(f"filter: {function} must compare a column with a value")
        return Node(name, column=left[1], value=right[1])
    if name in ("is_null", "is_valid"):
        column = _field(args[0], function)
        if name == "is_null" and options and options.get("nan_is_null"):
            raise InvalidInputError("filter: is_null(nan_is_null=True) is not supported")
        return Node(name, column=column)
    if name == "is_in":
        column = _field(args[0], function)
        behaviour = (options or {}).get("null_matching_behavior", 0)
        if behaviour not in (0, 1):  # MATCH, SKIP: a null value never matches a listed value
            raise InvalidInputError("filter: is_in with null_matching_behavior EMIT_NULL or INCONCLUSIVE")
        values = [v for v in (options or {}).get("value_set") or [] if not (behaviour == 1 and v is None)]
        return Node("in", column=column, values=tuple(values))
    raise InvalidInputError(
        f"filter: {function} is not supported (a filter takes ==, !=, <, <=, >, >=, isin, is_null, "
        "is_valid, &, |, ~ over columns and values)"
    )


def _field(arg: Any, function: str) -> str:
    if arg[0] != "field":
        raise InvalidInputError(f"filter: {function} must apply to a column")
    return arg[1]


def _predicate(arg: Any, function: str) -> Node:
    if isinstance(arg, Node):
        return arg
    if arg[0] == "literal" and pa.types.is_boolean(arg[1].type) and arg[1].is_valid:
        return Node("const", value=arg[1].as_py())
    raise InvalidInputError(f"filter: {function} takes conditions, not a bare column or value")


def _normal(node: Node, negate: bool = False) -> Node:
    """``node`` (negated) with every ``not`` pushed down to the leaves. Under a filter a
    row is kept only where the expression is true, so ``~(a < 5)`` keeps what ``a >= 5``
    does (a null ``a`` makes both null); ``~is_in`` keeps nulls too, as pyarrow's does,
    and becomes ``not_in``, which never skips."""
    if node.op == "not":
        return _normal(node.children[0], not negate)
    if node.op in ("and", "or"):
        op = node.op if not negate else {"and": "or", "or": "and"}[node.op]
        return Node(op, children=tuple(_normal(c, negate) for c in node.children))
    if not negate:
        return node
    if node.op in _NEGATED:
        return Node(_NEGATED[node.op], column=node.column, value=node.value)
    if node.op == "const":
        return Node("const", value=not node.value)
    flipped = {"is_null": "is_valid", "is_valid": "is_null", "in": "not_in", "not_in": "in"}
    return Node(flipped[node.op], column=node.column, values=node.values)


# -- may a file hold a row the filter keeps? ---------------------------------------------


def may_match(node: Node, stats_of: StatsOf, types: Mapping[str, pa.DataType]) -> bool:
    """False only if no row whose columns lie within ``stats_of`` can satisfy ``node``."""
    if node.op == "and":
        return all(may_match(c, stats_of, types) for c in node.children)
    if node.op == "or":
        return any(may_match(c, stats_of, types) for c in node.children)
    if node.op == "const":
        return bool(node.value)
    if node.op == "not_in":
        return True
    stats = stats_of(node.column)
    if stats is None:
        return True
    low, high, nulls, rows = stats
    if node.op == "is_null":
        return nulls is None or nulls > 0
    if node.op == "is_valid":
        return nulls is None or nulls < rows
    if nulls is not None and nulls >= rows:
        return node.op == "in" and None in node.values  # every value null
    if node.op == "in":
        if None in node.values and (nulls is None or nulls > 0):
            return True
        return any(_within(v, low, high, types[node.column]) for v in node.values if v is not None)
    value = node.value.as_py() if isinstance(node.value, pa.Scalar) and node.value.is_valid else None
    if value is None and isinstance(node.value, pa.Scalar):
        return False  # a comparison with null is never true
    bound = _comparable(node.value, types[node.column])
    if bound is _UNKNOWN or low is None or high is None:
        return True
    try:
        return _compare(node.op, low, high, bound)
    except TypeError:  # values of types that do not compare: nothing is proven
        return True


def _compare(op: str, low: Any, high: Any, bound: Any) -> bool:
    if op == "equal":
        return low <= bound <= high
    if op == "not_equal":
        return not (low == high == bound)
    if op == "less":
        return low < bound
    if op == "less_equal":
        return low <= bound
    if op == "greater":
        return high > bound
    return high >= bound  # greater_equal


_UNKNOWN = object()


def _within(value: Any, low: Any, high: Any, t: pa.DataType) -> bool:
    bound = _comparable(pa.scalar(value), t)
    if bound is _UNKNOWN or low is None or high is None:
        return True
    try:
        return low <= bound <= high
    except TypeError:
        return True


def _comparable(value: Any, t: pa.DataType) -> Any:
    """A filter's value as a Python value comparable with statistics of a column of
    type ``t`` (as :func:`stats_value` gives them), or ``_UNKNOWN`` where that is not
    exact (a value the column's type cannot hold exactly, a NaN)."""
    try:
        return _comparable_once(value, t)  # a plan tests the same value against file after file
    except TypeError:  # a value that cannot be hashed
        return _converted(value, t)


@functools.lru_cache(maxsize=1024)
def _comparable_once(value: Any, t: pa.DataType) -> Any:
    return _converted(value, t)


def _converted(value: Any, t: pa.DataType) -> Any:
    scalar = value if isinstance(value, pa.Scalar) else pa.scalar(value)
    try:
        cast = scalar.cast(t, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return _UNKNOWN
    if not _exact(scalar, cast):
        return _UNKNOWN
    if pa.types.is_timestamp(t):
        out = cast.cast(pa.int64()).as_py()
    elif pa.types.is_date32(t) or pa.types.is_time32(t):
        out = cast.cast(pa.int32()).as_py()  # as a BinaryRow holds them, decoded raw
    else:
        out = cast.as_py()
    if isinstance(out, float) and out != out:
        return _UNKNOWN
    return out


def _exact(scalar: pa.Scalar, cast: pa.Scalar) -> bool:
    """Whether casting ``scalar`` kept its value (a float 5.5 into an int column did not)."""
    try:
        return cast.cast(scalar.type, safe=True).equals(scalar)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return False


def stats_value(value: Any, t: pa.DataType) -> Any:
    """A statistics value (decoded raw from a BinaryRow) comparable with :func:`_comparable`
    of a filter value: timestamps as integers of the column's unit."""
    if value is None or not pa.types.is_timestamp(t):
        return value
    millis, nanos = value
    return {"s": millis // 1000, "ms": millis, "us": millis * 1000 + nanos // 1000, "ns": millis * 1_000_000 + nanos}[
        t.unit
    ]


# -- the exact filter -------------------------------------------------------------------


class FilteredStream(BatchStream):
    """A read's merged batches with the filter applied to each (vectorised), then cut to
    the columns asked for; ``stats`` are the read's with ``rows_filtered_out`` added."""

    def __init__(self, stream: Any, predicate: Predicate, columns: Sequence[str]):
        self._stream = stream
        self._expression = predicate.expression
        self._columns = list(columns)
        merged = stream.schema  # a native stream's schema is converted on each call
        self.schema = pa.schema([merged.field(c) for c in self._columns])
        self._dropped = 0
        self._batches = self._filtered()

    @property
    def stats(self) -> dict[str, int]:
        return {**self._stream.stats, "rows_filtered_out": self._dropped}

    def _filtered(self) -> Iterator[pa.RecordBatch]:
        for batch in self._stream:
            table = pa.Table.from_batches([batch])
            try:
                kept = table.filter(self._expression)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
                raise InvalidInputError(f"filter {self._expression}: {e}") from None
            self._dropped += batch.num_rows - kept.num_rows
            for out in kept.select(self._columns).to_batches():
                if out.num_rows:
                    yield out
