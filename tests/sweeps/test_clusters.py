"""How the lab's own clusters start their worker processes (`invlab.sweeps.clusters`): on Linux forked from one fork
server per process that has imported torch and the lab once, so a process's second cluster has its workers at once;
each cluster's workers see this process's INVLAB_* variables as they are when it starts; elsewhere Dask spawns them."""
import os
import sys

import pytest

from invlab.sweeps import clusters
from invlab.sweeps.clusters import local_cluster, worker_start

pytestmark = pytest.mark.cluster


def _what_a_worker_starts_with():
    """Run on each worker before any task of the lab: its parent, its environment, what it has imported."""
    return {"parent": os.getppid(), "data": os.environ.get("INVLAB_DATA"),
            "imported": "invlab.train" in sys.modules and "torch" in sys.modules}


@pytest.mark.skipif(not clusters.forks_workers(), reason="workers are forked from a fork server on Linux only")
def test_two_clusters_in_a_row_fork_their_workers_from_one_server_with_the_environment_of_now(tmp_path, monkeypatch):
    from distributed import Client

    seen = []
    for name in ("first", "second"):
        monkeypatch.setenv("INVLAB_DATA", str(tmp_path / name))
        with local_cluster(n_workers=2) as cluster, Client(cluster, set_as_default=False) as client:
            seen.append(list(client.run(_what_a_worker_starts_with).values()))
    (first, second) = seen
    parents = {w["parent"] for w in first + second}
    assert len(parents) == 1 and os.getpid() not in parents, parents  # one fork server, not this process
    assert all(w["imported"] for w in first + second)  # torch and the trainer were imported before any task
    assert {w["data"] for w in first} == {str(tmp_path / "first")}
    assert {w["data"] for w in second} == {str(tmp_path / "second")}


def test_workers_are_spawned_where_there_is_no_fork_server(monkeypatch):
    monkeypatch.setattr(clusters.platform, "system", lambda: "Darwin")
    assert not clusters.forks_workers() and worker_start() == ({}, {})
    monkeypatch.setattr(clusters.platform, "system", lambda: "Linux")
    settings, options = worker_start()
    assert settings == {"distributed.worker.multiprocessing-method": "forkserver"}
    assert options["env"]["INVLAB_DATA"] == os.environ["INVLAB_DATA"]
    assert all(key.startswith("INVLAB_") for key in options["env"])
