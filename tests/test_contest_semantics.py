"""The CCF BDCI 2022 upsert expressed with mc.Aggregate, against DuckDB SQL.

Rules: requests are summed; ip, hostname, city, job, phonenum take the newest non-null
value; so does name, where in versions after the first the string 'null' counts as null.
"""

from __future__ import annotations

import itertools
import random

import merge_core as mc
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from merge_core import contest

duckdb = pytest.importorskip("duckdb")

COLUMNS = ["uuid", "ip", "hostname", "requests", "name", "city", "job", "phonenum"]
SCHEMA = pa.schema([(c, pa.int64() if c == "requests" else pa.string()) for c in COLUMNS])
CONTEST = mc.Aggregate(fields={"requests": "sum"}, default="last_non_null_value")


def version(rng: random.Random, v: int, pool: list[str], rows: int) -> pa.Table:
    keys = sorted(rng.sample(pool, rows))

    def maybe(value):
        return None if rng.random() < 0.2 else value

    return pa.table(
        {
            "uuid": keys,
            "ip": [maybe(f"10.0.{rng.randrange(9)}.{rng.randrange(9)}") for _ in keys],
            "hostname": [maybe(f"host{rng.randrange(5)}") for _ in keys],
            "requests": [maybe(rng.randrange(1000)) for _ in keys],
            "name": [maybe(rng.choice(["ann", "bob", "null", "cy"])) for _ in keys],
            "city": [maybe(rng.choice(["x", "y"])) for _ in keys],
            "job": [maybe(rng.choice(["dev", "ops"])) for _ in keys],
            "phonenum": [maybe(str(rng.randrange(10**6))) for _ in keys],
        },
        schema=SCHEMA,
    )


def null_string_is_null(table: pa.Table) -> pa.Table:
    """Later versions: the string 'null' in name means no value (one vectorised kernel)."""
    name = table.column("name")
    cleaned = pc.if_else(pc.equal(name, "null"), pa.scalar(None, pa.string()), name)
    return table.set_column(table.schema.get_field_index("name"), "name", cleaned)


def duckdb_upsert(versions: list[pa.Table]) -> list[dict]:
    con = duckdb.connect()
    tagged = pa.concat_tables(
        [t.append_column("v", pa.array([i] * t.num_rows, pa.int32())) for i, t in enumerate(versions)]
    )
    con.register("versions", tagged)
    newest = {
        c: f"arg_max({c}, v) filter (where {c} is not null)" for c in ["ip", "hostname", "city", "job", "phonenum"]
    }
    sql = f"""
        select uuid, {newest["ip"]} as ip, {newest["hostname"]} as hostname,
               sum(requests)::BIGINT as requests,
               arg_max(name, v) filter (where name is not null and not (v > 0 and name = 'null')) as name,
               {newest["city"]} as city, {newest["job"]} as job, {newest["phonenum"]} as phonenum
        from versions group by uuid order by uuid
    """
    return con.sql(sql).to_arrow_table().to_pylist()


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("algorithm", ["loser-tree", "heap"])
def test_contest_upsert_equals_duckdb(seed, algorithm):
    rng = random.Random(seed)
    pool = [f"{rng.getrandbits(64):016x}" for _ in range(400)]
    versions = [version(rng, 0, pool, 300)] + [version(rng, v, pool, rng.randrange(0, 120)) for v in range(1, 11)]
    runs = [versions[0]] + [null_string_is_null(t) for t in versions[1:]]
    got = mc.merge(runs, key="uuid", merge=CONTEST, algorithm=algorithm).read_all()
    assert got.column_names == COLUMNS
    assert got.to_pylist() == duckdb_upsert(versions)


def test_sequence_may_be_dates_or_several_columns():
    # Versions arrive out of order; (day, tick) says which is newest.
    import datetime

    def run(day, tick, value):
        return pa.table(
            {
                "k": [1],
                "day": pa.array([datetime.date(2024, 1, day)]),
                "tick": pa.array([tick], pa.uint8()),
                "v": [value],
            }
        )

    runs = [run(3, 0, "newest"), run(1, 9, "oldest"), run(3, 1, "newest of all"), run(2, 5, "middle")]
    for algorithm in ("loser-tree", "heap"):
        out = mc.merge(runs, key="k", sequence=["day", "tick"], algorithm=algorithm).read_all()
        assert out.column("v").to_pylist() == ["newest of all"]
        out = mc.merge(runs, key="k", sequence="day", merge="deduplicate", algorithm=algorithm).read_all()
        assert out.column("v").to_pylist() == ["newest of all"]
        out = mc.merge(runs, key="k", sequence="day", sequence_order="descending", algorithm=algorithm).read_all()
        assert out.column("v").to_pylist() == ["oldest"]
        with pytest.raises(mc.InvalidInputError, match="first-row' takes no sequence"):
            mc.merge(runs, key="k", sequence="day", merge="first-row", algorithm=algorithm)
        out = mc.merge(runs, key="k", sequence=["day", "tick"], merge="none", algorithm=algorithm).read_all()
        assert out.column("v").to_pylist() == ["oldest", "middle", "newest", "newest of all"]


def test_null_string_rule_on_chunked_columns(tmp_path):
    """pyarrow 19's if_else breaks the offsets of sliced string arrays (the chunks of a
    column read from Parquet); the rule must give valid arrays (checked in full)."""
    import pyarrow.parquet as pq

    rng = random.Random(3)
    values = [rng.choice(["null", None, "ann", "bo" * rng.randint(1, 40)]) for _ in range(300_000)]
    cuts = [0, 70_000, 201_000, 299_999, 300_000]
    name = pa.chunked_array([pa.array(values[a:b], pa.string()) for a, b in itertools.pairwise(cuts)])
    pq.write_table(pa.table({"k": pa.array(range(len(values))), "name": name}), tmp_path / "v.parquet")
    table = pq.read_table(tmp_path / "v.parquet")
    got = contest.null_strings_as_null(table, ["name"])
    got.validate(full=True)
    assert got.column("name").to_pylist() == [None if v == "null" else v for v in values]
    in_memory = pa.table({"k": pa.array(range(len(values))), "name": name})
    for batch in in_memory.to_batches():
        contest.null_strings_as_null(batch, ["name"]).validate(full=True)
