"""Dynamic partition pruning (FLIP-248): a fact table partitioned by date, read through
the distinct dates of a filtered date dimension."""

from __future__ import annotations

import datetime as dt

import merge_core as mc
import pyarrow as pa
import pyarrow.compute as pc
import pytest

DAYS = [dt.date(1999, 12, 30) + dt.timedelta(days=i) for i in range(6)]  # 1999-12-30 .. 2000-01-04


@pytest.fixture(scope="module")
def fact(tmp_path_factory):
    schema = pa.schema([("id", pa.int64()), ("sold", pa.date32()), ("amount", pa.int64())])
    table = mc.Table.create(tmp_path_factory.mktemp("dpp") / "sales", schema, key="id", partition_by="sold", buckets=2)
    n = 600
    table.write(pa.table({"id": range(n), "sold": [DAYS[i % 6] for i in range(n)], "amount": range(n)}, schema=schema))
    return table


def date_dim(years: list[int]) -> pa.Table:
    days = [DAYS[0] + dt.timedelta(days=i) for i in range(-3, 9)]
    dim = pa.table({"d_date": days, "d_year": [d.year for d in days]})
    return dim.filter(pc.is_in(dim.column("d_year"), pa.array(years)))


def ids_sold_on(table: pa.Table, days: set) -> list[int]:
    return sorted(r["id"] for r in table.to_pylist() if r["sold"] in days)


def test_only_matching_partitions_are_read(fact):
    dim = date_dim([2000])
    stream = fact.read(dynamic_filter=mc.DynamicFilter(dim, "d_date", partition_column="sold"))
    out = stream.read_all()
    wanted = {d for d in DAYS if d.year == 2000}
    assert ids_sold_on(out, wanted) == sorted(out.column("id").to_pylist()), "nothing from other partitions"
    assert ids_sold_on(fact.read().read_all(), wanted) == sorted(out.column("id").to_pylist()), "all of them"
    stats = stream.stats
    assert (stats["partitions_total"], stats["partitions_read"], stats["partitions_pruned"]) == (6, 4, 2)
    assert stats["files_read"] == 8 and stats["files_pruned"] == 4 and stats["dynamic_filters_applied"] == 1


def test_above_the_threshold_nothing_is_pruned(fact):
    f = mc.DynamicFilter(date_dim([2000]), "d_date", partition_column="sold", threshold=8)
    assert not f.applies and "threshold" in f.reason
    stream = fact.read(dynamic_filter=f)
    assert stream.read_all().num_rows == 600
    assert stream.stats["files_pruned"] == 0 and stream.stats["dynamic_filters_applied"] == 0


def test_an_empty_build_side_reads_nothing(fact):
    stream = fact.read(dynamic_filter=mc.DynamicFilter(date_dim([1850]), "d_date", partition_column="sold"))
    assert stream.read_all().num_rows == 0
    assert stream.stats["files_read"] == 0 and stream.stats["partitions_read"] == 0


def test_values_are_coerced_to_the_partition_type(fact):
    as_text = pa.table({"d": ["2000-01-02", "1999-12-31", "2000-01-02"]})
    stream = fact.read(dynamic_filter=mc.DynamicFilter(as_text, "d", partition_column="sold"))
    out = stream.read_all()
    assert set(out.column("sold").to_pylist()) == {dt.date(2000, 1, 2), dt.date(1999, 12, 31)}
    assert stream.stats["partitions_read"] == 2


def test_values_that_cannot_be_coerced_prune_nothing(fact):
    junk = pa.table({"d": ["not a date", "2000-01-02"]})
    stream = fact.read(dynamic_filter=mc.DynamicFilter(junk, "d", partition_column="sold"))
    assert stream.read_all().num_rows == 600
    assert stream.stats["dynamic_filters_applied"] == 0


def test_null_never_matches(tmp_path):
    schema = pa.schema([("id", pa.int64()), ("region", pa.string())])
    table = mc.Table.create(tmp_path / "t", schema, key="id", partition_by="region", buckets=1)
    table.write(pa.table({"id": [1, 2, 3], "region": ["eu", "", "us"]}, schema=schema))
    build = pa.table({"r": pa.array([None, "eu"], pa.string())})
    stream = table.read(dynamic_filter=mc.DynamicFilter(build, "r", partition_column="region"))
    assert stream.read_all().column("id").to_pylist() == [1]
    only_nulls = mc.DynamicFilter(pa.table({"r": pa.array([None], pa.string())}), "r", partition_column="region")
    assert table.read(dynamic_filter=only_nulls).read_all().num_rows == 0


def test_filters_combine_with_static_partitions(fact):
    f = mc.DynamicFilter(date_dim([2000]), "d_date", partition_column="sold")
    stream = fact.read(partitions={"sold": [DAYS[2], DAYS[0]]}, dynamic_filter=[f])
    assert set(stream.read_all().column("sold").to_pylist()) == {DAYS[2]}


def test_bad_filters_are_refused(fact):
    with pytest.raises(mc.InvalidInputError, match="no column"):
        mc.DynamicFilter(date_dim([2000]), "nope", partition_column="sold")
    with pytest.raises(mc.InvalidInputError, match="not a partition column"):
        fact.read(dynamic_filter=mc.DynamicFilter(date_dim([2000]), "d_date", partition_column="amount"))
    with pytest.raises(mc.InvalidInputError, match="threshold"):
        mc.DynamicFilter(date_dim([2000]), "d_date", partition_column="sold", threshold="lots")
