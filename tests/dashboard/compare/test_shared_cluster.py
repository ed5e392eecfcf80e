"""Under a server every page's runs go to one shared Dask cluster: two pages that press ▶ Discover at once both
finish, on the same scheduler, and no page starts a cluster of its own; a notebook's page (no server limits) keeps
its own."""
import time

import pytest

from invlab.dashboard.compare import ComparePage
from invlab.dashboard.compare.cluster import close_shared, shared_scheduler
from invlab.dashboard.serving.limits import ServerLimits
from invlab.dashboard.state.settings import RunSettings
from invlab.sweeps.discover_report import discover_report
from invlab.train import RunConfig, RunStore

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
        page.discover.form.candidates.value = ["rot90"]
        page.discover.form.seeds.value, page.discover.form.steps.value = 1, 10
        pages.append(page)
    assert all(page.context.shared_cluster for page in pages)
    for page in pages:  # both at once, as a class does
        page.discover.start()
        assert page.discover.running(), page.discover.form.error_text
    deadline = time.time() + 180
    while any(page.discover.running() for page in pages) and time.time() < deadline:
        for page in pages:
            page.discover.tick()
        time.sleep(0.2)
    address = shared_scheduler()
    for page in pages:
        page.discover.tick()
        assert page.discover.state == "finished", page.discover.message
        assert page.discover.follower.runner.scheduler == address  # the one cluster, not one per page
        report = discover_report(page.store, page.discover.sweep_id)
        assert [c.candidate for c in report.ranking if c.finished] and report.stored == 2
        page.store.close()


def test_a_notebook_page_keeps_a_cluster_of_its_own(tmp_path):
    with RunStore(tmp_path / "runs.sqlite") as store:
        page = ComparePage(RunSettings(TINY), store=store)
        assert not page.context.shared_cluster
        page.context.scheduler = "tcp://127.0.0.1:8786"
        assert ComparePage(store=store, limits=ServerLimits()).context.shared_cluster  # a server page...
        from invlab.dashboard.compare.runner import DiscoverRunner

        runner = DiscoverRunner(None, store, 1, scheduler="tcp://10.0.0.1:8786", shared=True)
        assert not runner.shared  # ...given an address uses that one


def test_the_shared_cluster_closes_once_no_page_has_used_it_for_a_while(monkeypatch, shared):
    """Idle Dask workers still take a share of a core each (heartbeats, memory checks): a server whose pages ran a
    sweep an hour ago must not keep them. The cluster stays open while work uses it, however long, and closes
    `IDLE_SECONDS` after the last use; the next page's work starts a new one."""
    import invlab.dashboard.compare.cluster as cluster_module

    monkeypatch.setattr(cluster_module, "IDLE_SECONDS", 1.0)
    with cluster_module.using_shared() as address:
        cluster = cluster_module._cluster
        pids = [w.process.pid for w in cluster.workers.values()]
        time.sleep(2.5)  # longer than the idle time, but in use
        assert cluster_module._cluster is cluster and cluster.scheduler_address == address
    deadline = time.time() + 60
    while time.time() < deadline and (cluster.status.name != "closed" or any(_alive(pid) for pid in pids)):
        time.sleep(0.1)
    assert cluster_module._cluster is None and cluster.status.name == "closed"
    assert pids and not any(_alive(pid) for pid in pids), pids  # its worker processes are gone
    with cluster_module.using_shared() as again:
        assert again != address  # a new cluster for the next page's work


def _alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie, ended but not yet reaped, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
