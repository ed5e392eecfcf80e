import os

import pytest
import torch

torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))


@pytest.fixture(autouse=True)
def _isolated_data_dir(tmp_path, monkeypatch):
    """Every test gets its own data directory: the user's cache is never read or written."""
    monkeypatch.setenv("INVLAB_DATA", str(tmp_path / "invlab-data"))
    yield


@pytest.fixture
def rng():
    return torch.Generator().manual_seed(1234)
