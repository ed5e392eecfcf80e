"""A sweep trained without Dask, for tests that need a stored sweep cheaply: each planned run trained in this process
by the task a Dask worker runs (`train_run`) and stored as the sweep's client stores it (`store_result`); and a small
regression table of the user's own (a CSV whose target column is a price)."""
from pathlib import Path

import numpy as np

from invlab.sweeps import SweepSpec
from invlab.sweeps.execute import store_result
from invlab.sweeps.task import train_run
from invlab.train.states import SweepStatus


def run_sweep_serially(spec: SweepSpec, store) -> int:
    """Create the sweep in `store` and store each of its runs as a Dask client would; the sweep's id."""
    planned = spec.runs()
    sweep_id = store.sweeps.create(spec.name, spec.to_json(), len(planned))
    for run in planned:
        store_result(store, sweep_id, run, train_run(run.config.to_json(), run.key, None))
    store.sweeps.update(sweep_id, status=SweepStatus.FINISHED)
    return sweep_id


def house_prices(path: Path, n: int = 40) -> Path:
    """Write a house-price table to `path`: inputs `rooms` and `age`, target `price_keur` (in the hundreds)."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, size=(n, 2))
    price = 300 + 40 * np.sin(X[:, 0]) + 15 * X[:, 1] + 5 * rng.normal(size=n)
    np.savetxt(path, np.column_stack([X, price]), delimiter=",", header="rooms,age,price_keur", comments="")
    return path
