"""Data shaped like the CCF BDCI 2022 data-lake contest: a base file and
increments that update existing keys and add new ones, with nulls and the string 'null'.

Everything is generated with vectorised numpy/pyarrow kernels: no Python loop per row.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..inputs import null_strings_as_null as null_strings_as_null  # the contest's rule for 'null'
from ..merge_functions import Aggregate

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

SCHEMA = pa.schema(
    [
        ("uuid", pa.string()),
        ("ip", pa.string()),
        ("hostname", pa.string()),
        ("requests", pa.int64()),
        ("name", pa.string()),
        ("city", pa.string()),
        ("job", pa.string()),
        ("phonenum", pa.string()),
    ]
)

#: The contest's merge function: requests summed, every other column takes
#: its newest non-null value.
CONTEST_MERGE = Aggregate(fields={"requests": "sum"}, default="last_non_null_value")

#: The whole upsert, as the keywords of ``mc.spark.upsert`` and ``upsert_files``: the merge
#: function, and in versions after the first the string 'null' in name means null.
CONTEST: dict[str, Any] = {"merge": CONTEST_MERGE, "null_strings": ["name"]}

_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


def uuids(rng: np.random.Generator, n: int) -> pa.Array:
    """``n`` random 32-character hex keys."""
    raw = rng.integers(0, 256, size=(n, 16), dtype=np.uint8)
    chars = np.empty((n, 32), dtype=np.uint8)
    chars[:, 0::2] = _HEX[raw >> 4]
    chars[:, 1::2] = _HEX[raw & 15]
    offsets = np.arange(0, 32 * (n + 1), 32, dtype=np.int32)
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(chars.ravel()))


def _pick(rng: np.random.Generator, pool: list[str], n: int, null_share: float) -> pa.Array:
    values = pa.array(pool).take(pa.array(rng.integers(0, len(pool), n)))
    return pc.if_else(pa.array(rng.random(n) < null_share), pa.scalar(None, pa.string()), values)


def version(rng: np.random.Generator, keys: pa.Array, null_share: float = 0.1) -> pa.Table:
    """One version's rows for ``keys``."""
    n = len(keys)
    requests = pa.array(rng.integers(0, 1000, n), mask=rng.random(n) < null_share)
    names = [f"user{i}" for i in range(2000)] + ["null"] * 200
    return pa.table(
        [
            keys,
            _pick(rng, [f"10.{i // 250}.{i % 250}.{(i * 7) % 250}" for i in range(4000)], n, null_share),
            _pick(rng, [f"host-{i:04d}" for i in range(500)], n, null_share),
            requests,
            _pick(rng, names, n, null_share),
            _pick(rng, [f"city{i}" for i in range(300)], n, null_share),
            _pick(rng, [f"job{i}" for i in range(100)], n, null_share),
            _pick(rng, [f"1{i:010d}" for i in range(0, 10**10, 10**6)], n, null_share),
        ],
        schema=SCHEMA,
    )


def total_rows(paths: list[str]) -> int:
    """Rows in the Parquet files ``paths``, read from their footers."""
    return sum(pq.ParquetFile(p).metadata.num_rows for p in paths)


def generate(out_dir: str, rows: int, increments: int = 10, seed: int = 0, update_share: float = 0.7) -> list[str]:
    """Writes ``0.parquet`` (``rows`` rows) and ``increments`` files of ``rows // 5`` rows,
    each updating existing keys (``update_share``) and adding new ones. Returns the paths."""
    rng = np.random.default_rng(seed)
    os.makedirs(out_dir, exist_ok=True)
    keys = uuids(rng, rows)
    paths = [os.path.join(out_dir, "0.parquet")]
    pq.write_table(version(rng, keys), paths[0])
    for i in range(1, increments + 1):
        size = max(1, rows // 5)
        updates = int(size * update_share)
        updated = keys.take(pa.array(rng.choice(len(keys), size=min(updates, len(keys)), replace=False)))
        new = uuids(rng, size - len(updated))
        keys = pa.concat_arrays([keys, new])
        paths.append(os.path.join(out_dir, f"{i}.parquet"))
        pq.write_table(version(rng, pa.concat_arrays([updated, new])), paths[-1])
    return paths


def spark_sql_upsert(versions: Sequence[DataFrame], key: str = "uuid") -> DataFrame:
    """The contest upsert (see :data:`CONTEST`) in plain Spark SQL, union + groupBy with
    max_by and sum: the plan a Spark user would write, to compare merge-core's Spark
    pipelines with."""
    from pyspark.sql import functions as F

    from ..spark import VERSION_COLUMN, tagged_union

    columns = list(versions[0].columns)
    union = tagged_union(versions, columns, CONTEST["null_strings"])
    version = F.col(VERSION_COLUMN)
    aggregates = [
        F.sum(c).alias(c) if c == "requests" else F.max_by(c, F.when(F.col(c).isNotNull(), version)).alias(c)
        for c in columns
        if c != key
    ]
    return union.groupBy(key).agg(*aggregates).select(*columns)
