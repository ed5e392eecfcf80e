"""One headless Chromium per test module, and a fresh browser context (cookies, storage, viewport) per test.

Launching Chromium takes a second or two of a busy 2-core machine; the browser and JupyterLab tests open about sixty
pages a run. The tests of a module share one browser, started on first use and stopped when the module ends
(`close_shared_browser`, from the autouse fixtures of tests/browser and tests/jupyter): playwright's synchronous API
keeps an event loop marked running in its thread, so a later test of the same process could not run asyncio. Each
test gets a context of its own, so no cookie, login or storage passes from one test to the next.
"""
import contextlib

from invlab.dashboard.serving.process import CHROMIUM_ARGS, chromium_path

_shared: dict = {}


def shared_browser():
    """The shared Chromium (a playwright `Browser`), launched on first use and again after it was closed."""
    browser = _shared.get("browser")
    if browser is not None and browser.is_connected():
        return browser
    if "playwright" not in _shared:
        from playwright.sync_api import sync_playwright

        _shared["playwright"] = sync_playwright().start()
    _shared["browser"] = _shared["playwright"].chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
    return _shared["browser"]


@contextlib.contextmanager
def browser_context(**options):
    """A new context of the shared browser (`options` as playwright's `Browser.new_context`), closed afterwards with
    every page it opened."""
    context = shared_browser().new_context(**options)
    try:
        yield context
    finally:
        with contextlib.suppress(Exception):  # the browser may have gone with a failed test; the next use relaunches
            context.close()


def close_shared_browser() -> None:
    """Stop the shared browser and its playwright driver, if this process started them."""
    browser, playwright = _shared.pop("browser", None), _shared.pop("playwright", None)
    with contextlib.suppress(Exception):
        if browser is not None:
            browser.close()
    with contextlib.suppress(Exception):
        if playwright is not None:
            playwright.stop()
