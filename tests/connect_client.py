"""A Spark Connect client for test_spark_cluster, run as docs/spark.md shows: it ships the
packed environment as an artifact of its session, then upserts the contest files given
on the command line through ``mcs.upsert`` on the server at the given ``sc://`` URL and
writes the result to a Parquet file. Run in a process of its own, because a Connect
session switches the whole process to Connect mode.

Usage: connect_client.py URL ENV_ARCHIVE OUT VERSION..."""

import json
import sys

import merge_core.spark as mcs
import pyarrow.parquet as pq
from merge_core import contest
from pyspark.sql import SparkSession
from pyspark.sql.utils import is_remote


def main(url: str, archive: str, out: str, *files: str) -> None:
    spark = SparkSession.builder.remote(url).getOrCreate()
    try:
        spark.addArtifacts(f"{archive}#env", archive=True)
        spark.conf.set("spark.sql.execution.pyspark.python", "env/bin/python")
        versions = [spark.read.parquet(path) for path in files]
        pq.write_table(mcs.upsert(versions, key="uuid", num_partitions=4, **contest.CONTEST).toArrow(), out)

        def where_merge_core_is(batches):  # run by the executors' Python workers
            import merge_core
            import pyarrow

            for _ in batches:
                pass
            yield pyarrow.record_batch({"module": [merge_core.__file__]})

        found = spark.range(2, numPartitions=2).mapInArrow(where_merge_core_is, "module string").collect()
        print(json.dumps({"connect": is_remote(), "modules": sorted({row.module for row in found})}))
    finally:
        spark.stop()


if __name__ == "__main__":  # pytest imports this file when it collects doctests
    main(*sys.argv[1:])
