"""A sweep of four tiny runs on a LocalCluster of two worker processes: every run stored exactly once, with a
whole-data ELBO that a Trainer rebuilt here from the stored checkpoint reproduces, and a comparison whose means and
standard deviations are those of the stored runs."""
import json
import statistics

import pytest

from invlab.cli import main
from invlab.sweeps import comparison, run_sweep
from invlab.train import RunConfig, RunStore, Trainer
from invlab.train.states import RunStatus, SweepEventKind

from .conftest import tiny_spec

pytestmark = pytest.mark.cluster


def test_a_local_sweep_stores_every_run_once_with_its_whole_data_elbo(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("INVLAB_DATA", str(tmp_path))
    store = RunStore(tmp_path / "runs.sqlite")
    spec = tiny_spec(steps=20)
    planned = {run.key: run for run in spec.runs()}
    seen = []
    sweep_id = run_sweep(spec, store=store, n_workers=2,
                         progress=lambda p: seen.append((p.done, p.failed, p.event)))

    runs = store.sweeps.runs(sweep_id)
    assert sorted(r.sweep_key for r in runs) == sorted(planned)  # every planned run, each once
    assert store.sweeps.get(sweep_id).status == "finished"
    for r in runs:
        assert r.status == "finished" and r.step == 20
        assert RunConfig.from_json(r.config).to_json() == planned[r.sweep_key].config.to_json()
        step, path = store.checkpoints.latest(r.id)
        assert step == 20
        rebuilt = Trainer.from_checkpoint(path)  # in this process, from what the client stored
        assert r.full_elbo == pytest.approx(rebuilt.report.full_elbo()["elbo"], rel=1e-9, abs=1e-9)
        steps, values = store.metrics.read(r.id)["elbo"]
        assert steps[-1] == 20 and len(steps) == 4  # logged every 5 steps on the worker, stored by the client
        assert comparison(store, sweep_id).history(r.id) == (steps, values)
    assert len({store.sweeps.info(r.id)["worker"] for r in runs}) == 2  # both workers trained

    kinds = [event.kind for _, _, event in seen if event is not None]
    stored = [event.status for _, _, event in seen if event is not None and event.kind == SweepEventKind.STORED]
    assert stored == [RunStatus.FINISHED] * 4
    assert SweepEventKind.STEP in kinds and kinds.index(SweepEventKind.STEP) < len(kinds) - 1
    assert seen[-1][:2] == (4, 0)

    # the store keeps a sweep's run once, whatever arrives again (a retried task's result)
    again = runs[0]
    run_id, stored = store.sweeps.store_run(sweep_id, again.sweep_key, config_json=again.config, model="svgp",
                                           dataset="symmetric-2d", status="finished", step=20, figures={},
                                           history={}, info={})
    assert (run_id, stored) == (again.id, False) and len(store.sweeps.runs(sweep_id)) == 4
    # resuming a finished sweep runs nothing (and starts no cluster)
    assert run_sweep(None, store=store, sweep_id=sweep_id) == sweep_id
    assert len(store.sweeps.runs(sweep_id)) == 4

    cmp = comparison(store, sweep_id)
    assert cmp.axes == ["model.num_inducing"] and cmp.comparable
    for group in cmp.groups:
        elbos = [r.full_elbo for r in runs if json.loads(r.sweep_key.split()[0].split("=")[1]) ==
                 group["model.num_inducing"]]
        assert group["n"] == 2
        assert group["elbo_mean"] == pytest.approx(statistics.mean(elbos))
        assert group["elbo_sd"] == pytest.approx(statistics.stdev(elbos))

    store.close()
    assert main(["compare", str(sweep_id)]) == 0
    table = capsys.readouterr().out.splitlines()
    rows = [line for line in table if line.startswith(("4 ", "8 "))]
    best = max(cmp.groups, key=lambda g: g["elbo_mean"])
    assert len(rows) == 2 and rows[0].startswith(str(best["model.num_inducing"]))  # sorted by ELBO, best first
    assert main(["compare", str(sweep_id), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["groups"][0]["elbo_mean"] == pytest.approx(best["elbo_mean"])
    assert main(["sweeps", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out.splitlines()[0])
    assert (listed["id"], listed["finished"], listed["total"], listed["status"]) == (sweep_id, 4, 4, "finished")


def test_the_gpu_workers_each_see_only_their_own_device():
    """The cluster a CUDA machine gets (one worker per GPU), started here on the CPU: each worker process has its
    own CUDA_VISIBLE_DEVICES, so torch in it sees one GPU, a different one for each."""
    import os

    from distributed import Client, Scheduler, SpecCluster

    from invlab.sweeps.clusters import gpu_worker_specs

    scheduler = {"cls": Scheduler, "options": {"dashboard_address": ":0", "dashboard": False}}
    with SpecCluster(workers=gpu_worker_specs(2), scheduler=scheduler, silence_logs=40) as cluster, \
            Client(cluster, set_as_default=False) as client:
        seen = client.run(lambda: os.environ.get("CUDA_VISIBLE_DEVICES"))
    assert sorted(seen.values()) == ["0", "1"]


def test_the_labs_own_cluster_idles_without_dasks_profiler_and_checks_its_loop_five_times_a_second():
    """A cluster the lab starts (a sweep's, a Compare page's shared one) waits for work without Dask's statistical
    profiler sampling every worker every 10 ms (no worker runs it), and the scheduler and workers
    check their event loops every 200 ms instead of 20. With a Dask dashboard asked for, the profiler stays on."""
    from distributed import Client

    from invlab.sweeps.clusters import cluster_config, local_cluster

    with local_cluster(n_workers=2) as cluster, Client(cluster, set_as_default=False) as client:
        assert client.submit(sum, [1, 2], pure=False).result() == 3
        profilers = client.run(lambda dask_worker: sorted(k for k in dask_worker.periodic_callbacks if "profile" in k))
        assert len(profilers) == 2 and set(map(tuple, profilers.values())) == {()}, profilers
        ticks = client.run(lambda dask_worker: dask_worker.periodic_callbacks["tick"].callback_time)
        assert set(ticks.values()) == {200}, ticks
        assert client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.periodic_callbacks["tick"].callback_time) \
            == 200
    assert "distributed.worker.profile.enabled" not in cluster_config(dashboard=True)
    assert cluster_config(dashboard=True)["distributed.admin.tick.interval"] == "200ms"
