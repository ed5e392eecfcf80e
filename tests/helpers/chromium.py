"""One headless Chromium per test process, and a fresh browser context (cookies, storage, viewport) per test.

Launching Chromium takes a second or two of a busy 2-core machine; the browser and JupyterLab tests open about sixty
pages a run. Every test of a process shares one browser, started on first use and stopped when the session ends
(`close_shared_browser`, from `pytest_sessionfinish` in tests/conftest.py). Each test gets a context of its own, so
no cookie, login or storage passes from one test to the next.

Playwright's synchronous API runs its event loop in a greenlet of the test's thread and leaves that loop marked as
the thread's running loop between calls, so a later test in the same process could not run asyncio (`asyncio.run`,
a Tornado or Panel server started in the test). `_loop_marked_only_inside_calls` keeps the mark to the time a call
waits on the browser: it is set as the call hands over to the loop and put back as it returns. Where the installed
playwright does not have the function this wraps, the browser is stopped at the end of each module instead
(`per_module()` says which).
"""
import asyncio
import contextlib

from invlab.dashboard.serving.process import CHROMIUM_ARGS, chromium_path

_shared: dict = {}


def _loop_marked_only_inside_calls() -> bool:
    """Wrap playwright's wait for a synchronous call so that its loop is the thread's running loop only while the call
    waits (and, nested in an event handler, as it was before); True where this playwright has that wait."""
    try:
        from playwright._impl import _sync_base
    except ImportError:
        return False
    original = getattr(_sync_base, "wait_for_future", None)
    if original is None:
        return False
    if getattr(original, "invlab_wrapped", False):
        return True

    def wait_for_future(loop, dispatcher, future):
        before = asyncio._get_running_loop()
        asyncio._set_running_loop(loop)  # the loop resumes where it expects to be running
        try:
            return original(loop, dispatcher, future)
        finally:
            asyncio._set_running_loop(before)

    wait_for_future.invlab_wrapped = True
    _sync_base.wait_for_future = wait_for_future
    return True


def per_module() -> bool:
    """True where the shared browser must be stopped at the end of each test module (see the module's doc)."""
    return not _loop_marked_only_inside_calls()


def shared_browser():
    """The shared Chromium (a playwright `Browser`), launched on first use and again after it was closed."""
    browser = _shared.get("browser")
    if browser is not None and browser.is_connected():
        return browser
    if "playwright" not in _shared:
        from playwright.sync_api import sync_playwright

        wrapped = _loop_marked_only_inside_calls()
        _shared["playwright"] = sync_playwright().start()
        _shared["loop"] = asyncio._get_running_loop()
        if wrapped:
            asyncio._set_running_loop(None)  # marked again by each call, while it waits
    _shared["browser"] = _shared["playwright"].chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
    return _shared["browser"]


def pause_training(page) -> bool:
    """Press the dashboard page's ❚❚ Pause if its status line says the run is training, as a person does before
    closing the tab; True if it did. The served app's training thread then stops at once, instead of training until
    the server ends the closed page's session (`UNUSED_SESSION_LIFETIME_MS` later, so that a reload keeps its run):
    on a 2-core machine shared by the suite's other processes those seconds add up over the browser tests. An
    Explorer shown in JupyterLab has the same status line and is paused the same way; a page without one (a plain
    page, a closed page) is left as it is."""
    state = page.locator(".invlab-status [data-field=state]")
    if page.is_closed() or state.count() == 0 or state.first.inner_text(timeout=2000).strip() != "running":
        return False
    page.get_by_role("button", name="❚❚ Pause").first.click(timeout=2000)
    return True


@contextlib.contextmanager
def browser_context(**options):
    """A new context of the shared browser (`options` as playwright's `Browser.new_context`), closed afterwards with
    every page it opened (a dashboard page still training is paused first: `pause_training`)."""
    context = shared_browser().new_context(**options)
    try:
        yield context
    finally:
        with contextlib.suppress(Exception):  # the browser may have gone with a failed test; the next use relaunches
            for page in context.pages:
                with contextlib.suppress(Exception):
                    pause_training(page)
            context.close()


def close_shared_browser() -> None:
    """Stop the shared browser and its playwright driver, if this process started them."""
    browser, playwright, loop = _shared.pop("browser", None), _shared.pop("playwright", None), _shared.pop("loop", None)
    with contextlib.suppress(Exception):
        if browser is not None:
            browser.close()
    before = asyncio._get_running_loop()
    with contextlib.suppress(Exception):
        if playwright is not None:
            if loop is not None:
                asyncio._set_running_loop(loop)  # stopping hands over to the loop, which expects to be running
            playwright.stop()
    asyncio._set_running_loop(None if before is loop else before)
