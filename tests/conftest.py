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


def pytest_collection_modifyitems(items):
    """The cluster tests run last. Run first, they overlapped the rest of the suite, whose
    timing-bound tests then ran beside three more JVMs: a Ctrl-C test took 3.5 s to stop
    against its 3 s bound. (The local session they stop is started again for any Spark
    test after them: ``spark``.)"""
    items.sort(key=lambda item: item.get_closest_marker("cluster") is not None)
