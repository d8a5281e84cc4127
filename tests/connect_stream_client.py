"""A Spark Connect client for test_spark_cluster's stream test: it names the Python its
session's tasks run (PYTHON), registers the ``merge_core`` source and runs one
``readStream`` of the table at TABLE (changes with their row kinds, ``availableNow``) into
Parquet at OUT, checkpointed at CHECKPOINT. Run in a process of its own (a Connect
session switches the whole process to Connect mode), once per run of the query.

The tasks of a streaming query over Connect (Spark 4.3) do not find the session's
artifacts: with the packed environment shipped as test_upsert_through_spark_connect
ships it, they fail with ``Cannot run program "env/bin/python"``. PYTHON is therefore a
path every executor has.

Usage: connect_stream_client.py URL PYTHON TABLE CHECKPOINT OUT"""

import json
import sys

import merge_core.spark as mcs
from pyspark.sql import SparkSession
from pyspark.sql.utils import is_remote


def main(url: str, python: str, table: str, checkpoint: str, out: str) -> None:
    spark = SparkSession.builder.remote(url).getOrCreate()
    try:
        spark.conf.set("spark.sql.execution.pyspark.python", python)
        mcs.register(spark)
        reader = spark.readStream.format("merge_core").option("read.changelog", "true").load(table)
        query = reader.writeStream.format("parquet").option("checkpointLocation", checkpoint)
        query.trigger(availableNow=True).start(out).awaitTermination()
        print(json.dumps({"connect": is_remote()}))
    finally:
        spark.stop()


if __name__ == "__main__":  # pytest imports this file when it collects doctests
    main(*sys.argv[1:])
