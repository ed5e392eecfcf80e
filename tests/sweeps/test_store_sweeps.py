"""The run store's sweeps: a store written before sweeps existed gains them without losing a run, a sweep's run is
stored once whatever arrives twice, a failed attempt is replaced by a later one, and the local cluster gives each GPU
its own worker."""
import sqlite3

from invlab.sweeps.clusters import gpu_worker_specs
from invlab.sweeps.execute import dask_key
from invlab.train import RunStore

OLD_SCHEMA = """
CREATE TABLE runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT, created REAL NOT NULL, updated REAL NOT NULL,
    model TEXT NOT NULL, dataset TEXT NOT NULL, config TEXT NOT NULL, status TEXT NOT NULL,
    step INTEGER NOT NULL DEFAULT 0, elbo REAL, test_error REAL, test_rmse REAL, test_nlpd REAL, message TEXT
);
CREATE TABLE metrics (run_id INTEGER NOT NULL, step INTEGER NOT NULL, name TEXT NOT NULL, value REAL);
CREATE TABLE checkpoints (run_id INTEGER NOT NULL, step INTEGER NOT NULL, path TEXT NOT NULL, created REAL NOT NULL);
INSERT INTO runs (created, updated, model, dataset, config, status, step, elbo)
    VALUES (1.0, 2.0, 'svgp', 'digits', '{}', 'finished', 10, -5.0);
"""


def test_an_old_store_gains_the_sweep_columns_and_keeps_its_runs(tmp_path):
    path = tmp_path / "runs.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript(OLD_SCHEMA)
    with RunStore(path) as store:
        (old,) = store.runs.list()
        assert (old.model, old.step, old.elbo, old.sweep_id, old.sweep_key) == ("svgp", 10, -5.0, None, None)
        sweep_id = store.sweeps.create("s", "{}", total=2)
        assert [s.id for s in store.sweeps.list()] == [sweep_id] and store.sweeps.get(sweep_id).total == 2
    with RunStore(path) as store:  # opening again adds nothing twice
        assert len(store.runs.list()) == 1


def add(store, sweep_id, key, status="finished", elbo=-1.0, history=None):
    return store.sweeps.store_run(sweep_id, key, config_json="{}", model="svgp", dataset="digits", status=status,
                                 step=3, figures={"full_elbo": elbo, "test_error": 0.5}, info={"seed": 0},
                                 history=history or {"elbo": ([1, 2, 3], [-3.0, -2.0, -1.0])})


def test_a_sweep_run_is_stored_once_and_a_failed_attempt_is_replaced(tmp_path):
    with RunStore(tmp_path / "runs.sqlite") as store:
        sweep_id = store.sweeps.create("s", "{}", total=2)
        other = store.sweeps.create("t", "{}", total=1)
        first, stored = add(store, sweep_id, "a")
        assert stored
        assert add(store, sweep_id, "a", elbo=99.0) == (first, False)  # a second result for the same run is dropped
        assert store.runs.get(first).full_elbo == -1.0 and store.metrics.read(first)["elbo"][1] == [-3.0, -2.0, -1.0]
        assert add(store, other, "a")[1]  # the same key in another sweep is another run
        failed, _ = add(store, sweep_id, "b", status="failed", elbo=None, history={"elbo": ([1], [-9.0])})
        retried, stored = add(store, sweep_id, "b", elbo=-0.5)
        assert (retried, stored) == (failed, True)  # the failed attempt's row now holds the finished run
        assert store.runs.get(failed).status == "finished" and store.metrics.read(failed)["elbo"][0] == [1, 2, 3]
        assert sorted(r.sweep_key for r in store.sweeps.runs(sweep_id)) == ["a", "b"]
        assert store.sweeps.info(first) == {"seed": 0}


def test_each_gpu_gets_a_worker_that_sees_only_that_gpu():
    specs = gpu_worker_specs(3)
    devices = [spec["options"]["env"]["CUDA_VISIBLE_DEVICES"] for spec in specs.values()]
    assert devices == ["0", "1", "2"] and all(spec["options"]["nthreads"] == 1 for spec in specs.values())
    assert dask_key(1, "seed=0") == dask_key(1, "seed=0") != dask_key(2, "seed=0") != dask_key(1, "seed=1")
