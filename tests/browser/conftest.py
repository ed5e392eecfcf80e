"""Fixtures for the real-browser tests (helpers in pagekit.py, importable from every test module here).

One `panel serve` per test module (each page is its own session, so tests stay independent) keeps the
suite fast; a test that needs a server of its own uses `pagekit.serve_dashboard` directly.
"""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from pagekit import HAVE_CHROMIUM, serve_dashboard  # noqa: E402


def pytest_collection_modifyitems(config, items):
    if HAVE_CHROMIUM:
        return
    skip = pytest.mark.skip(reason="Chromium is not installed (CI installs Debian's chromium via .ci/run)")
    for item in items:
        if "tests/browser/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(skip)


@pytest.fixture(scope="module")
def served_app(tmp_path_factory):
    with serve_dashboard(tmp_path_factory.mktemp("served")) as url:
        yield url


