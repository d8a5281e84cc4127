"""A data file's statistics in its manifest record (``_KEY_STATS``, ``_VALUE_STATS``)
against a plain-Python oracle over the rows the file holds: the least and greatest value
of each column in Paimon's order and its null count. Files of several row groups and
batches, every type merge-core keeps bounds of, NaN, non-ASCII strings and a string past
Parquet's 4 KiB statistics limit (a row group's least or greatest value past it leaves
the column without bounds, as in Paimon's writer, which takes them from the footer too)."""

from __future__ import annotations

import datetime
import math
from unittest import mock

import merge_core as mc
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from merge_core.paimon import _binary, _write
from merge_core.paimon._key_order import value_key
from merge_core.paimon._meta import Snapshot, live_entries

SCHEMA = pa.schema(
    [
        pa.field("k1", pa.string(), False),
        pa.field("k2", pa.int32(), False),
        ("i8", pa.int8()),
        ("i16", pa.int16()),
        ("i64", pa.int64()),
        ("b", pa.bool_()),
        ("s", pa.string()),
        ("bin", pa.binary()),
        ("dec", pa.decimal128(10, 2)),
        ("d", pa.date32()),
        ("t", pa.time32("ms")),
        ("f", pa.float64()),
        ("ts", pa.timestamp("s")),
    ]
)
LONG = "z" * 5000  # past Parquet's statistics limit: the file keeps no min and max of its column


def _maybe(values):
    return st.one_of(st.none(), values)


row = st.fixed_dictionaries(
    {
        "k1": st.sampled_from(["a", "é", "b", "\U0001f600", "ab", LONG]),
        "k2": st.integers(-(2**31), 2**31 - 1),
        "i8": _maybe(st.integers(-128, 127)),
        "i16": _maybe(st.integers(-(2**15), 2**15 - 1)),
        "i64": _maybe(st.integers(-(2**63), 2**63 - 1)),
        "b": _maybe(st.booleans()),
        "s": _maybe(st.text(max_size=6)),
        "bin": _maybe(st.binary(max_size=4)),
        "dec": _maybe(st.decimals(min_value=-(10**7), max_value=10**7, places=2, allow_nan=False)),
        "d": _maybe(st.dates(datetime.date(1900, 1, 1), datetime.date(2100, 1, 1))),
        "t": _maybe(st.times().map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000))),
        "f": _maybe(st.floats(allow_nan=True, width=64)),
        "ts": _maybe(st.datetimes(datetime.datetime(1900, 1, 1), datetime.datetime(2200, 1, 1))),
    }
)


def _oracle(values: list, groups: list[int], nan_unbounded: bool) -> tuple:
    """(min, max) of a column's non-null values in Paimon's order; none for a float column
    holding a NaN (``nan_unbounded``), or when a row group's (``groups``: their row
    counts) least or greatest string passes 4 KiB (Parquet keeps no min and max then)."""
    present = [v for v in values if v is not None]
    if not present:
        return None, None
    if nan_unbounded and any(isinstance(v, float) and math.isnan(v) for v in present):
        return None, None
    start = 0
    for rows in groups:
        group = [v for v in values[start : start + rows] if v is not None]
        start += rows
        ends = [min(group, key=value_key), max(group, key=value_key)] if group else []
        if any(isinstance(v, str) and len(v.encode()) > 4096 for v in ends):
            return None, None
    return min(present, key=value_key), max(present, key=value_key)


def _stored(rows: pa.Table, name: str) -> list:
    column = rows.column(name)
    if pa.types.is_timestamp(column.type):  # as merge-core encodes them: integers of the table's unit
        column = column.cast(SCHEMA.field(name.removeprefix("_KEY_")).type).cast(pa.int64())
    return column.to_pylist()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(row, min_size=1, max_size=40, unique_by=lambda r: (r["k1"], r["k2"])), group=st.integers(1, 7))
def test_each_files_statistics_are_those_of_its_rows(tmp_path_factory, rows, group):
    path = tmp_path_factory.mktemp("stats") / "t"
    table = mc.Table.create(path, SCHEMA, key=["k1", "k2"], buckets=1, options={"metadata.stats-mode": "full"})
    data = pa.Table.from_pylist(rows, schema=SCHEMA)
    with mock.patch.object(_write, "ROW_GROUP_ROWS", group):  # many row groups
        table.write(data)
    root = mc.fs.resolve(path)
    (entry,) = live_entries(root, Snapshot.load(root, 1))
    record = entry["_FILE"]
    file = pq.ParquetFile(str(path / "bucket-0" / record["_FILE_NAME"]))
    stored = file.read()
    groups = [file.metadata.row_group(g).num_rows for g in range(file.num_row_groups)]
    assert len(groups) == math.ceil(len(rows) / group)

    types = [f.type for f in SCHEMA]
    lows = _binary.decode(record["_VALUE_STATS"]["_MIN_VALUES"], types)
    highs = _binary.decode(record["_VALUE_STATS"]["_MAX_VALUES"], types)
    for i, f in enumerate(SCHEMA):
        values = _stored(stored, f.name)
        expected = _oracle(values, groups, nan_unbounded=True)
        got = (lows[i], highs[i])
        if f.name in ("ts", "t"):  # compared as the integers of the unit, as Java holds them
            expected = tuple(None if v is None else _integer(v) for v in expected)
            got = tuple(None if v is None else _integer(v) for v in got)
        assert [value_key(v) for v in got] == [value_key(v) for v in expected], f.name
        assert record["_VALUE_STATS"]["_NULL_COUNTS"][i] == sum(v is None for v in values), f.name

    key_types = [pa.string(), pa.int32()]
    key_lows = _binary.decode(record["_KEY_STATS"]["_MIN_VALUES"], key_types)
    key_highs = _binary.decode(record["_KEY_STATS"]["_MAX_VALUES"], key_types)
    for i, name in enumerate(["k1", "k2"]):
        column = "_KEY_" + name if "_KEY_" + name in stored.column_names else name  # thin mode: the value's
        expected = _oracle(_stored(stored, column), groups, nan_unbounded=False)
        assert (key_lows[i], key_highs[i]) == expected, name
    first, last = stored.slice(0, 1).to_pylist()[0], stored.slice(len(stored) - 1).to_pylist()[0]
    assert _binary.decode(record["_MIN_KEY"], key_types) == (first["k1"], first["k2"])
    assert _binary.decode(record["_MAX_KEY"], key_types) == (last["k1"], last["k2"])


def _integer(value) -> int:
    """A timestamp(s) as seconds, a time(ms) as milliseconds."""
    if isinstance(value, datetime.time):
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000
    if isinstance(value, datetime.datetime):
        return int((value - datetime.datetime(1970, 1, 1)).total_seconds())
    return value
