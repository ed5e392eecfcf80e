"""Fixtures of the dashboard tests: one Dask LocalCluster of 2 worker processes for the session, which the Compare
page's tests put in the page's "Dask scheduler" field (starting it takes a few seconds; the modules share it)."""
import pytest


@pytest.fixture(scope="session")
def scheduler():
    """The address of a LocalCluster of 2 single-threaded worker processes, shared by the session's tests."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=40) as cluster:
        yield cluster.scheduler_address
