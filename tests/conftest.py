import os

import pytest
import torch

# One intra-op thread per process: tests run beside a served dashboard and a browser, and torch's
# OpenMP threads slow down by orders of magnitude when they compete for cores.
torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _isolated_data_dir(tmp_path, monkeypatch):
    """Every test gets its own data directory: the user's cache is never read or written."""
    monkeypatch.setenv("INVLAB_DATA", str(tmp_path / "invlab-data"))
    yield


@pytest.fixture
def rng():
    return torch.Generator().manual_seed(1234)


def _wait_until(predicate, explorer=None, timeout=180.0):
    """Tick a dashboard Explorer (drain its training session into the views) until `predicate()` holds."""
    import time

    deadline = time.time() + timeout
    while time.time() < deadline:
        if explorer is not None:
            explorer.tick()
            if explorer.notice.startswith("Could not update the page"):
                raise AssertionError(explorer.notice)  # the tick swallowed an error: fail now, not at the timeout
        if predicate():
            return True
        time.sleep(0.05)
    raise AssertionError("condition not reached in time")


@pytest.fixture
def wait_until():
    return _wait_until
