"""Under a server every page's runs go to one shared Dask cluster: two pages that press ▶ Discover at once both
finish, on the same scheduler, and no page starts a cluster of its own; a notebook's page (no server limits) keeps
its own."""
import time

import pytest

from dashboard.compare import ComparePage
from dashboard.compare.cluster import close_shared, shared_scheduler
from dashboard.limits import ServerLimits
from dashboard.settings import RunSettings
from engine.sweeps.discover_report import discover_report
from engine.train import RunConfig, RunStore

TINY = RunConfig(model="invariant", data={"dataset": "digits", "rotate": 90.0, "subset": 60, "test_subset": 30})


@pytest.fixture
def shared():
    yield
    close_shared()


def test_two_pages_of_a_server_share_one_cluster(tmp_path, shared):
    pages = []
    for i in range(2):
        store = RunStore(tmp_path / f"runs{i}.sqlite")
        page = ComparePage(RunSettings(TINY), store=store, limits=ServerLimits(), data_choices=lambda: ["digits"])
        page.discover.refresh()
        page.discover.candidates.value = ["rot90"]
        page.discover.seeds.value, page.discover.steps.value = 1, 10
        pages.append(page)
    assert all(page.shared_cluster for page in pages)
    for page in pages:  # both at once, as a class does
        page.discover.start()
        assert page.discover.running(), page.discover.error_text
    deadline = time.time() + 180
    while any(page.discover.running() for page in pages) and time.time() < deadline:
        for page in pages:
            page.discover.tick()
        time.sleep(0.2)
    address = shared_scheduler()
    for page in pages:
        page.discover.tick()
        assert page.discover.state == "finished", page.discover.message
        assert page.discover.runner.scheduler == address  # the one cluster, not one per page
        report = discover_report(page.store, page.discover.sweep_id)
        assert [c.candidate for c in report.ranking if c.finished] and report.stored == 2
        page.store.close()


def test_a_notebook_page_keeps_a_cluster_of_its_own(tmp_path):
    with RunStore(tmp_path / "runs.sqlite") as store:
        page = ComparePage(RunSettings(TINY), store=store)
        assert not page.shared_cluster
        page.scheduler = "tcp://127.0.0.1:8786"
        assert ComparePage(store=store, limits=ServerLimits()).shared_cluster  # a server page...
        from dashboard.compare.runner import DiscoverRunner

        runner = DiscoverRunner(None, store, 1, scheduler="tcp://10.0.0.1:8786", shared=True)
        assert not runner.shared  # ...given an address uses that one
