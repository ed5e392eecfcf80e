"""Fixtures for the real-browser tests (helpers in pagekit.py, importable from every test module here).

One `invlab serve` per test process (each page is its own session, so tests stay independent: a test finds its own
runs by their ids, never by the store's order) keeps the suite fast; a test that needs a server of its own (other
options, a fresh store, its process to inspect) uses `pagekit.serve_dashboard` directly.
"""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from pagekit import HAVE_CHROMIUM, serve_dashboard  # noqa: E402
from tests.helpers.chromium import close_shared_browser, per_module  # noqa: E402


def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason="Chromium is not installed (CI installs Debian's chromium via .ci/run)")
    for item in items:
        if "tests/browser/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.browser)
            if not HAVE_CHROMIUM:
                item.add_marker(skip)


@pytest.fixture(scope="session")
def served_home(tmp_path_factory):
    """(the shared server's page URL, its folder): its run store is under FOLDER/data, where a test's own loop can
    write a run for the page to open. The server also reads FOLDER/allowed (`--allow-data-dir`), empty as it
    starts, where a test lays out the folders it tries the page's reading rules on (test_allowed_folders_browser.py)
    instead of starting a server of its own."""
    folder = tmp_path_factory.mktemp("served")
    (folder / "allowed").mkdir()
    with serve_dashboard(folder, args=["--allow-data-dir", str(folder / "allowed")]) as url:
        yield url, folder


@pytest.fixture(scope="session")
def served_app(served_home):
    return served_home[0]


@pytest.fixture(scope="module", autouse=True)
def _chromium_per_module_where_needed():
    """The process's tests share one Chromium (tests/helpers/chromium.py), stopped when the session ends; with a
    playwright whose loop cannot be kept to its calls, when each module ends."""
    yield
    if per_module():
        close_shared_browser()
