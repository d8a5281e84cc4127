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
    """The cluster tests run first. Under pytest-xdist (test.sh: two workers, a test file
    each at a time) their file is then the first handed out, so the other worker runs
    the rest of the suite meanwhile instead of idling while the cluster file ends the run
    alone. Their driver takes the process's one SparkContext and stops it when the file
    ends; a later test's ``spark`` fixture then starts the local session afresh."""
    items.sort(key=lambda item: item.get_closest_marker("cluster") is None)
