"""Shared fixtures for the data tests: an empty data directory per test, and generated MNIST-format files.

The helpers are handed out as fixtures (not imported from a module), so the tests work under any pytest
import mode.
"""
from __future__ import annotations

import numpy as np
import pytest

from invlab.data import write_idx


@pytest.fixture(autouse=True)
def isolated_data_dir(tmp_path, monkeypatch):
    """Every test gets its own INVLAB_DATA, so the user's cache is never read or written."""
    path = tmp_path / "invlab-data"
    monkeypatch.setenv("INVLAB_DATA", str(path))
    # local test servers must be reached directly even when a proxy is configured
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    return path


def make_fake_mnist(n_train: int, n_test: int, seed: int = 0, side: int = 28):
    """Random uint8 'digits' with balanced labels 0..9: (x_train, y_train, x_test, y_test)."""
    generator = np.random.default_rng(seed)
    x_train = generator.integers(0, 256, size=(n_train, side, side), dtype=np.uint8)
    x_test = generator.integers(0, 256, size=(n_test, side, side), dtype=np.uint8)
    y_train = (np.arange(n_train) % 10).astype(np.uint8)
    y_test = (np.arange(n_test) % 10).astype(np.uint8)
    return x_train, y_train, x_test, y_test


def write_mnist_files(directory, arrays, gz=True, dotted=False, with_test=True):
    """Write arrays as the four MNIST files into directory (optionally without the test pair)."""
    directory.mkdir(parents=True, exist_ok=True)
    sep = "." if dotted else "-"
    ext = ".gz" if gz else ""
    x_train, y_train, x_test, y_test = arrays
    write_idx(directory / f"train-images{sep}idx3-ubyte{ext}", x_train)
    write_idx(directory / f"train-labels{sep}idx1-ubyte{ext}", y_train)
    if with_test:
        write_idx(directory / f"t10k-images{sep}idx3-ubyte{ext}", x_test)
        write_idx(directory / f"t10k-labels{sep}idx1-ubyte{ext}", y_test)
    return directory


@pytest.fixture
def fake_mnist():
    """make_fake_mnist(n_train, n_test, seed=0) -> (x_train, y_train, x_test, y_test), uint8 images."""
    return make_fake_mnist


@pytest.fixture
def write_mnist_dir():
    """write_mnist_dir(directory, arrays, gz=True, dotted=False, with_test=True) -> directory."""
    return write_mnist_files
