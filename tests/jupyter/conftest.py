"""Fixtures for the JupyterLab tests (helpers in labkit.py): one private `jupyter lab` for the whole run
(each test opens its notebook in a workspace of its own and shuts its kernel down).

The modules that drive JupyterLab are marked `jupyter` and `browser` (`-m "not jupyter"` leaves them out) and
are skipped where Chromium or JupyterLab is not installed; test_notebook_support.py runs without either.
"""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from labkit import HAVE_CHROMIUM, HAVE_JUPYTERLAB, jupyter_lab  # noqa: E402
from tests.helpers.chromium import close_shared_browser, per_module  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line("markers", "jupyter: drives a real JupyterLab in Chromium (slow)")
    config.addinivalue_line("markers", "browser: drives a real Chromium")


def pytest_collection_modifyitems(config, items):
    missing = None if HAVE_CHROMIUM else "Chromium is not installed (CI installs Debian's chromium via .ci/run)"
    if not HAVE_JUPYTERLAB:
        missing = "JupyterLab is not installed (`make setup` installs it)"
    if missing:
        for item in items:
            if item.get_closest_marker("jupyter") is not None:
                item.add_marker(pytest.mark.skip(reason=missing))


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    """(base URL, directories) of a JupyterLab serving an empty temporary root."""
    with jupyter_lab(tmp_path_factory.mktemp("jupyterlab")) as served:
        yield served


@pytest.fixture
def screenshot_path(tmp_path):
    """Where a test writes a screenshot: INVLAB_SCREENSHOTS (to look at them) or the test's temporary folder."""
    folder = os.environ.get("INVLAB_SCREENSHOTS")
    folder = folder if folder else str(tmp_path)
    os.makedirs(folder, exist_ok=True)
    return lambda name: os.path.join(folder, name)


@pytest.fixture(scope="module", autouse=True)
def _chromium_per_module_where_needed():
    """The process's tests share one Chromium (tests/helpers/chromium.py), stopped when the session ends; with a
    playwright whose loop cannot be kept to its calls, when each module ends."""
    yield
    if per_module():
        close_shared_browser()
