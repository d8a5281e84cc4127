import os
import sys

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, os.path.dirname(__file__))

settings.register_profile("default", max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


class LocalSpark:
    """The worker's one local Spark session (2 cores), started again when it was stopped:
    a process has one SparkContext, and the cluster tests' driver stops the local one to
    run (test_spark_cluster.py), so a Spark test file that a pytest-xdist worker runs after
    them would otherwise get a dead session ("jsc is null")."""

    session = None

    @classmethod
    def live(cls):
        if cls.session is None or cls.session.sparkContext._jsc is None:
            import merge_core.spark as mcs

            cls.session = mcs.local_session("local[2]", "merge-core-tests", **{"spark.sql.shuffle.partitions": "2"})
        return cls.session

    @classmethod
    def stop(cls):
        if cls.session is not None and cls.session.sparkContext._jsc is not None:
            cls.session.stop()


@pytest.fixture(scope="session")
def _local_spark():
    yield LocalSpark
    LocalSpark.stop()


@pytest.fixture(scope="module")
def spark(_local_spark):
    """A live local Spark session, the same for every test file unless one stopped it."""
    return _local_spark.live()


# Test files by when they should start. Under pytest-xdist with --dist loadfile (test.sh,
# two workers) a file goes whole to the next free worker, in collection order when xdist
# is told not to reorder (--no-loadscope-reorder; its default hands out the files with
# the most tests first, which left the few long ones, the cluster tests and the bench,
# to the end, one worker idle meanwhile): the longest files go first (times on a fresh
# clone, 2 cores). The one test with a time bound (Ctrl-C stops a merge within 3 s)
# goes last, away from the cluster tests' JVMs: beside them it once took 3.5 s.
FIRST = [
    "test_spark_cluster.py",  # about 5 min: a standalone cluster, a wheel, a Connect server
    "test_bench.py",  # about 3 min: every suite of merge-core bench at its tiny scale
    "test_docs.py",  # about 1.5 min: the demo on Spark, the guides' examples
]
LAST = ["test_interrupts.py"]


def pytest_collection_modifyitems(items):
    """Orders the tests by ``FIRST`` and ``LAST``, the rest as collected."""

    def rank(item) -> int:
        name = item.path.name
        if name in FIRST:
            return FIRST.index(name)
        return len(FIRST) + 1 if name in LAST else len(FIRST)

    items.sort(key=rank)
