"""The bad-input tests' private data directory."""
import os

import pytest


@pytest.fixture
def world(tmp_path, monkeypatch):
    """A private data directory; `serve` must never start a server from here."""
    monkeypatch.setenv("INVLAB_DATA", str(tmp_path / "data"))

    def no_server(*args, **kwargs):
        raise AssertionError("a bad `invlab serve` line reached the server start")

    monkeypatch.setattr(os, "execve", no_server)
    monkeypatch.setattr("subprocess.call", no_server)
    return tmp_path
