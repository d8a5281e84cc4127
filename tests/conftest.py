import os
import sys

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, os.path.dirname(__file__))

settings.register_profile("default", max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(scope="session")
def spark():
    """One local Spark session (2 cores) for every Spark test."""
    import merge_core.spark as mcs

    session = mcs.local_session("local[2]", "merge-core-tests", **{"spark.sql.shuffle.partitions": "2"})
    yield session
    session.stop()


def pytest_collection_modifyitems(items):
    """The cluster tests run last: their driver stops the local session of the other Spark
    tests (a process has one SparkContext), which nothing starts again. Under pytest-xdist
    (test.sh runs two workers, a test file each at a time) the cluster tests' file is
    then the last handed out, so no test of that worker's local session follows it. (Run
    first, they overlapped the rest of the suite, whose timing-bound tests then ran
    beside three more JVMs: a Ctrl-C test took 3.5 s to stop against its 3 s bound.)"""
    items.sort(key=lambda item: item.get_closest_marker("cluster") is not None)
