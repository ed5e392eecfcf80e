"""Shared pieces of the sweep tests: a tiny sweep, and a real Dask cluster (a `dask scheduler` and two `dask worker`
processes on 127.0.0.1) started by the tests themselves."""
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from invlab.sweeps import SweepSpec
from invlab.train import RunConfig

ROOT = Path(__file__).resolve().parents[2]


def pytest_configure(config):
    config.addinivalue_line("markers", "cluster: starts Dask scheduler / worker processes (tens of seconds)")


def tiny_spec(steps: int = 20, seeds=(0, 1), num_train: int = 30, name: str = "tiny") -> SweepSpec:
    """Regression on symmetric-2d: svgp with two inducing-point counts × seeds; each run well under a second."""
    data = {"dataset": "symmetric-2d", "seed": 0, "source_options": {"num_train": num_train, "num_test": 50}}
    train = {"steps": steps, "batch_size": 0, "learning_rate": 0.03, "eval_every": 0, "log_every": 5}
    return SweepSpec(name=name, base=RunConfig("svgp", data, {"num_inducing": 5}, train),
                     vary={"model.num_inducing": [4, 8]}, seeds=list(seeds))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def env() -> dict:
    """The environment of the test cluster's processes: this checkout importable, and the lab's own clusters' quiet
    upkeep (`invlab.sweeps.clusters.cluster_config`: no Dask profiler) as Dask's environment variables."""
    from invlab.sweeps.clusters import cluster_config

    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    quiet = {"DASK_" + key.upper().replace(".", "__").replace("-", "_"): str(value)
             for key, value in cluster_config().items()}
    return dict(os.environ, PYTHONPATH=path, **quiet)


class Cluster:
    """`dask scheduler` + `dask worker --no-nanny` processes (a killed worker stays dead) on 127.0.0.1."""

    def __init__(self, workers: int, tmp: Path):
        self.port = free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.tmp = tmp
        self.procs: list[subprocess.Popen] = []
        self.scheduler = self._start([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                      "--port", str(self.port), "--no-dashboard"], "scheduler")
        self.workers = [self._start([sys.executable, "-m", "distributed.cli.dask_worker", self.address,
                                     "--nthreads", "1", "--no-nanny", "--no-dashboard", "--host", "127.0.0.1",
                                     "--name", f"w{i}", "--local-directory", str(tmp / f"w{i}")], f"worker{i}")
                        for i in range(workers)]
        self.wait_for_workers(workers)

    def _start(self, cmd, name):
        log = open(self.tmp / f"{name}.log", "w")
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env(), cwd=ROOT)
        self.procs.append(proc)
        return proc

    def client(self):
        from distributed import Client

        return Client(self.address, timeout="30s", set_as_default=False)

    def wait_for_workers(self, n: int, timeout: float = 120.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with self.client() as c:
                    c.wait_for_workers(n, timeout=max(1.0, deadline - time.monotonic()))
                    return
            except (OSError, TimeoutError):
                time.sleep(0.5)
        logs = "\n".join(p.read_text()[-2000:] for p in self.tmp.glob("*.log"))
        raise RuntimeError(f"the test cluster did not start:\n{logs}")

    def close(self):
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = Cluster(2, tmp_path_factory.mktemp("dask"))
    yield c
    c.close()
