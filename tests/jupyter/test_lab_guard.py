"""The JupyterLab tests' guard (`labkit.lab_page`) refuses and records every request that would leave the machine,
and lets the page's requests to this machine through without a detour through the test's process."""
import pytest

from labkit import NOT_THIS_MACHINE, is_loopback, lab_page

pytestmark = pytest.mark.browser

OUTSIDE = ["https://cdn.jsdelivr.net/npm/x.js", "http://127.0.0.1.example.com/a", "http://localhost.example.com:80/",
           "http://10.0.0.1/", "wss://example.org/ws"]
INSIDE = ["http://127.0.0.1:8888/lab", "http://localhost:1/x?y=1", "http://localhost", "http://[::1]:80/a",
          "ws://127.0.0.1:3/api/kernels", "data:text/plain,x", "blob:http://127.0.0.1:1/u", "about:blank"]


def test_the_pattern_hands_over_exactly_the_requests_to_other_machines():
    assert all(NOT_THIS_MACHINE.search(url) for url in OUTSIDE)
    assert not any(NOT_THIS_MACHINE.search(url) for url in INSIDE)
    assert all(not is_loopback(url) for url in OUTSIDE)  # the handler's own check agrees


def test_a_request_to_another_host_is_refused_and_recorded_and_one_to_this_machine_is_not():
    with lab_page() as (page, outside, errors):
        page.set_content('<img src="https://cdn.jsdelivr.net/npm/invlab-guard-check.png">'
                         '<img src="http://127.0.0.1:9/invlab-guard-check.png">')
        page.wait_for_function("() => [...document.images].every((i) => i.complete)", timeout=30_000)
    assert outside == ["https://cdn.jsdelivr.net/npm/invlab-guard-check.png"]
