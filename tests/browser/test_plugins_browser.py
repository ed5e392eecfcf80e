"""A plugin's kernel on the page, in a real Chromium: the README's plugin package (kernel `rq` with its own
`alpha`, orbit `negate`) and a plugin that raises on import, both installed into a temporary folder on the served
page's PYTHONPATH. The broken one is named in a note; `rq` is among the Kernel choices with an Alpha field beside;
picking it and pressing Start fills the ELBO curve with the rq model's run."""
import json
import re
import sqlite3

import pytest

from pagekit import browser_page, column_length, page_texts, poll, serve_dashboard
from tests.helpers.plugins import env_with, install, package, readme_package


@pytest.fixture(scope="module")
def plugin_page(tmp_path_factory):
    root = tmp_path_factory.mktemp("plugin-page")
    site = install(readme_package(root / "src"), root / "site")
    install(package(root / "broken", "broken-plugin", "broken", "raise RuntimeError('not today')\n"), site)
    env = {"PYTHONPATH": env_with(site)["PYTHONPATH"]}
    with serve_dashboard(root / "served", extra_env=env) as url:
        yield url, root / "served" / "data"


def field(page, label: str):
    return page.locator(".bk-input-group", has_text=re.compile(r"^\s*" + re.escape(label))).first


def test_pick_the_plugins_kernel_start_and_the_curves_fill(plugin_page):
    url, data = plugin_page
    with browser_page() as (page, errors):
        page.goto(url + "?model.num_inducing=30")
        poll(lambda: any("(module broken, package broken-plugin) failed to load and was skipped: RuntimeError: not "
                         "today" in text for text in page_texts(page)))
        page.locator(".bk-tab", has_text="Model").first.click(timeout=90_000)
        kernel = field(page, "Kernel").locator("select")
        kernel.wait_for(timeout=30_000)  # the tab is drawn when it is first opened
        assert "rq" in kernel.locator("option").all_inner_texts()
        kernel.select_option("rq")
        poll(lambda: field(page, "Alpha").count() == 1, timeout=30)  # the kernel's own constructor argument, a field
        page.get_by_role("button", name="▶ Start").click(timeout=90_000)
        poll(lambda: column_length(page, "elbo") >= 5)
        assert not errors, errors

    with sqlite3.connect(data / "runs.sqlite") as db:
        configs = [json.loads(c) for (c,) in db.execute("SELECT config FROM runs")]
    assert configs and configs[-1]["model_config"]["kernel"] == "rq"
