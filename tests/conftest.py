"""Shared fixtures, and the device and precision the engine tests run in.

Device and dtype
----------------
The engine and model tests (tests/kernels, covariances, inducing, likelihoods, models, transforms, train) build
their tensors and models through the fixtures below, so the same tests run on another device or precision:

    pytest tests/kernels tests/models ...                      # CPU, float64 (the default)
    pytest --dtype float32 tests/kernels tests/models ...      # CPU, float32: the arithmetic of a GPU run
    pytest --device cuda tests/kernels tests/models ...        # CUDA, float32 (the default there)
    pytest --device cuda --dtype float64 tests/...             # CUDA, float64

`--device cuda` on a machine without CUDA stops with a usage error instead of passing vacuously.

Fixtures: `device` (torch.device) and `dtype` (torch.dtype); `place(x)` moves a tensor or module there (floating
tensors and parameters take `dtype`, integer tensors keep theirs); `train_device` is the pair as RunConfig's
`train.device` / `train.dtype` strings and `cli_device` as `invlab train` flags; `tol` is the tolerance for `dtype`
and `assert_close(a, b, tol, scale=1.0)` compares with it. Random draws stay on the CPU in float64
(`torch.Generator()` with a seed) and are placed afterwards, so every device and precision sees the same numbers up
to rounding; references (closed forms, scipy, Monte Carlo) are computed in float64 on the CPU.

Tolerances are set per dtype, not loosened for every test: `tol` holds the dtype's default (`TOLERANCES`), and
`tol.f64(rtol=..., atol=...)` is the tolerance a test was written with in float64 (the same arguments and defaults
as `torch.allclose`): exactly that in float64, and never tighter than the float32 default in float32. A test whose
float32 result needs more says so at the call with `f32=k` (k × the float32 default) and a comment with the reason.
A test that only makes sense in float64 (gradcheck, identities checked to 1e-12, ill-conditioned solves) is marked
`@pytest.mark.float64_only(reason)` and is skipped, with that reason, in lower precision.
"""
import math
import os
import sys
from dataclasses import dataclass, replace

import pytest
import torch

# The suite's processes keep their compiled modules (`__pycache__`, ignored by git), whatever the environment says
# (PYTHONDONTWRITEBYTECODE): each of its hundred-odd Python processes (test workers, servers, the CLI, Dask workers,
# kernels) would otherwise compile every module of the lab it imports again, and each test worker rewrite the
# asserts of every test module it collects.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# One intra-op thread per process: tests run beside a served dashboard and a browser, and torch's
# OpenMP threads slow down by orders of magnitude when they compete for cores.
torch.set_num_threads(1)
# The same for every page the tests train, in this process and in the servers they start: one torch thread and the
# 25 steps/s a class server allows, so a suite of many pages, servers and a browser shares a 2-core machine. A page's
# own defaults (every core, no cap) are measured by benchmarks/dashboard (page_speed, overhead), not here.
os.environ.setdefault("INVLAB_TORCH_THREADS", "1")
os.environ.setdefault("INVLAB_MAX_STEPS_PER_S", "25")
# The browser and JupyterLab tests drive Debian's `chromium-headless-shell` where it is installed (.ci/run installs
# it): the same Chromium engine built for headless use only, as Playwright drives headless pages, without the
# browser's own interface (a renderer for its top chrome in every context), which took about a third of
# Chromium's CPU in a 2-core test run. The benchmarks' smoke runs keep Debian's full `chromium`, a person's browser
# (tests/test_benchmark_smoke.py). INVLAB_CHROMIUM set by hand wins.
HEADLESS_SHELL = "/usr/bin/chromium-headless-shell"
if not os.environ.get("INVLAB_CHROMIUM") and os.path.exists(HEADLESS_SHELL):
    os.environ["INVLAB_CHROMIUM"] = HEADLESS_SHELL

DTYPES = {"float64": torch.float64, "float32": torch.float32}


def pytest_addoption(parser):
    group = parser.getgroup("invlab", "Invariance Lab engine tests")
    group.addoption("--device", default="cpu", choices=("cpu", "cuda"),
                    help="device the engine and model tests run on (default: cpu)")
    group.addoption("--dtype", default=None, choices=tuple(DTYPES),
                    help="floating-point type of the engine and model tests (default: float64 on cpu, float32 on cuda)")


def _device_and_dtype(config) -> tuple[torch.device, torch.dtype]:
    device = torch.device(config.getoption("--device"))
    name = config.getoption("--dtype") or ("float32" if device.type == "cuda" else "float64")
    return device, DTYPES[name]


def pytest_configure(config):
    config.addinivalue_line("markers", "float64_only(reason): the test checks something only float64 can resolve; "
                                       "skipped, with the reason, under --dtype float32")
    config.addinivalue_line("markers", "browser: drives a real Chromium (tests/browser, tests/jupyter, the benchmarks' "
                                       "smoke runs); -m 'not browser' leaves them out")
    config.addinivalue_line("markers", "slow: ten seconds or more without a browser; -m 'not browser and not slow' "
                                       "is the fast tier")
    config.addinivalue_line("markers", "package: builds the sdist and the wheel and installs the wheel in a fresh venv "
                                       "(about a minute; -m 'not package' leaves it out)")
    if config.getoption("--device") == "cuda" and not torch.cuda.is_available():
        raise pytest.UsageError("--device cuda was asked for, but torch.cuda.is_available() is False on this machine "
                                f"(torch {torch.__version__}, built with CUDA {torch.version.cuda}); "
                                "run without --device, or with --dtype float32 for the float32 arithmetic on the CPU.")


def pytest_report_header(config):
    device, dtype = _device_and_dtype(config)
    return f"engine tests on device={device}, dtype={str(dtype).removeprefix('torch.')}"


# `make test` runs two processes (pytest-xdist, `--dist loadfile --no-loadscope-reorder`): each takes whole test files
# in collection order as it finishes the last (xdist would otherwise hand out the files with the most tests first).
# The long files (a real browser, JupyterLab, the benchmarks' smoke runs, the notebooks) go first, longest first, so
# the short engine tests fill in at the end instead of one process finishing a lesson walk alone.
LONG_FIRST = ("tests/browser/test_lesson_walk_browser.py", "tests/jupyter/", "tests/test_benchmark_smoke.py",
              "tests/browser/", "notebooks/", "tests/dashboard/serving/test_server_lifecycle.py")


def pytest_sessionfinish(session, exitstatus):
    chromium = sys.modules.get("tests.helpers.chromium")  # the browser tests' shared Chromium, if one was started
    if chromium is not None:
        chromium.close_shared_browser()


def _long_first_rank(item) -> int:
    path = os.path.relpath(str(item.fspath), os.path.dirname(os.path.dirname(__file__))).replace(os.sep, "/")
    return next((rank for rank, prefix in enumerate(LONG_FIRST) if path.startswith(prefix)), len(LONG_FIRST))


# Tests of ten seconds or more without a browser (a docs build, a wheel, a Dask cluster, the CLI in a subprocess, a
# README section run as written): marked `slow`, so `-m "not browser and not slow"` is a fast tier of a few minutes.
SLOW = ("tests/test_docs.py", "tests/test_package.py", "tests/test_benchmarks.py",
        "tests/sweeps/test_cluster.py", "tests/sweeps/test_readme_discover.py", "tests/sweeps/test_discover.py",
        "tests/sweeps/test_local_sweep.py", "tests/data/test_readme_own_data.py", "tests/train/test_own_data_runs.py",
        "tests/dashboard/serving/test_server_lifecycle.py", "tests/dashboard/session/test_watch_follow.py",
        "tests/cli/test_cli.py::test_stopping_invlab_serve",
        "tests/test_plugins.py::test_the_readme_watch_snippet", "tests/test_plugins.py::test_a_two_value_sweep",
        "tests/bad_inputs/test_plugin_faults.py::test_a_plugin_that_fails_half_way",
        "tests/dashboard/session/test_scheduling.py::test_a_nicer_training_thread",
        "tests/dashboard/session/test_scheduling.py::test_a_page_trains_on_its_fair_share",
        "tests/dashboard/session/test_server_commands.py::test_page_commands_never_wait",
        "tests/train/test_lease.py::test_two_cli_resumes",
        "tests/train/test_readme_python.py::test_the_trainer_snippet", "tests/gpytorch/test_training.py",
        "tests/gpytorch/test_readme_gpytorch.py", "tests/gpytorch/test_kernels.py::test_an_exact_gp_with_the_conv")


def pytest_collection_modifyitems(config, items):
    items.sort(key=_long_first_rank)  # stable: a file's tests keep their order and stay together
    for item in items:
        if item.nodeid.startswith(SLOW):
            item.add_marker(pytest.mark.slow)
    _, dtype = _device_and_dtype(config)
    if dtype == torch.float64:
        return
    for item in items:
        marker = item.get_closest_marker("float64_only")
        if marker is not None:
            reason = marker.kwargs.get("reason") or (marker.args[0] if marker.args else "")
            item.add_marker(pytest.mark.skip(reason=f"float64 only: {reason}" if reason else "float64 only"))


@dataclass(frozen=True)
class Tolerance:
    """|a − b| ≤ atol + rtol·|b|, elementwise (torch.allclose's rule), for tensors of `dtype`."""

    rtol: float
    atol: float
    dtype: torch.dtype = torch.float64

    def f64(self, rtol: float = 1e-5, atol: float = 1e-8, *, f32: float = 1.0) -> "Tolerance":
        """The tolerance a test states for float64 (torch.allclose's arguments and defaults): exactly that in
        float64; in lower precision the larger of it and `f32` × that dtype's default tolerance."""
        if self.dtype == torch.float64:
            return replace(self, rtol=rtol, atol=atol)
        return replace(self, rtol=max(rtol, f32 * self.rtol), atol=max(atol, f32 * self.atol))

    def __mul__(self, factor: float) -> "Tolerance":
        """A looser (factor > 1) tolerance; say at the call why the test needs it."""
        return replace(self, rtol=self.rtol * factor, atol=self.atol * factor)

    __rmul__ = __mul__


# The defaults: a few hundred ulps of the values compared, for results of short, well-conditioned computations
# (a kernel matrix, a patch sum, a projection). float64: ~4.5e5 ulps of 1; float32: ~840 ulps of 1.
TOLERANCES = {torch.float64: Tolerance(rtol=1e-10, atol=1e-10, dtype=torch.float64),
              torch.float32: Tolerance(rtol=1e-4, atol=1e-5, dtype=torch.float32)}


def _as_tensor(x):
    if isinstance(x, torch.Tensor):
        return x.detach().to("cpu", torch.float64)
    return torch.as_tensor(x, dtype=torch.float64)


def _assert_close(a, b, tol: Tolerance, scale: float = 1.0, msg: str | None = None):
    """Assert |a − b| ≤ tol.atol·scale + tol.rtol·|b| elementwise; `scale` is the size of the quantities compared
    (it scales the absolute part). Tensors on any device and dtype, numpy arrays and numbers; compared in float64
    on the CPU. Shapes must agree (a single number compares with every element)."""
    a, b = _as_tensor(a), _as_tensor(b)
    if a.numel() != 1 and b.numel() != 1:
        assert a.shape == b.shape, f"shapes differ: {tuple(a.shape)} vs {tuple(b.shape)}"
    a, b = torch.broadcast_tensors(a, b)
    err = (a - b).abs()
    bound = tol.atol * scale + tol.rtol * b.abs()
    ok = (err <= bound) | (a == b)  # a == b: equal infinities
    if not bool(ok.all()):
        bad = (~ok).flatten().nonzero()[:, 0]
        worst = int(bad[(err.flatten()[bad] - bound.flatten()[bad]).nan_to_num(math.inf).argmax()])
        where = tuple(int(i) for i in torch.unravel_index(torch.tensor(worst), a.shape)) if a.dim() else ()
        raise AssertionError(
            (f"{msg}: " if msg else "") + f"not close in {bad.numel()} of {a.numel()} elements; worst at {where}: "
            f"{float(a.flatten()[worst])!r} vs {float(b.flatten()[worst])!r} (|diff| {float(err.flatten()[worst]):.3g}"
            f", allowed {float(bound.flatten()[worst]):.3g} = atol {tol.atol:.3g}·{scale:g} + rtol {tol.rtol:.3g}·|b|,"
            f" {str(tol.dtype).removeprefix('torch.')})")


@pytest.fixture(scope="session")
def device(request) -> torch.device:
    return _device_and_dtype(request.config)[0]


@pytest.fixture(scope="session")
def dtype(request) -> torch.dtype:
    return _device_and_dtype(request.config)[1]


@pytest.fixture(scope="session")
def tol(dtype) -> Tolerance:
    return TOLERANCES[dtype]


@pytest.fixture(scope="session")
def assert_close():
    return _assert_close


@pytest.fixture(scope="session")
def place(device, dtype):
    """place(x): a tensor or module on the test device; floating tensors and parameters in the test dtype."""

    def place(x):
        if isinstance(x, torch.nn.Module):
            return x.to(device=device, dtype=dtype)
        if x.is_floating_point():
            return x.to(device=device, dtype=dtype)
        return x.to(device=device)

    return place


@pytest.fixture(scope="session")
def train_device(device, dtype) -> dict:
    """RunConfig's `train` entries that put a Trainer on the test device and dtype."""
    return {"device": device.type, "dtype": str(dtype).removeprefix("torch.")}


@pytest.fixture(scope="session")
def cli_device(train_device) -> list[str]:
    """The same as `invlab train` flags."""
    return ["--device", train_device["device"], "--dtype", train_device["dtype"]]


# Dask's nanny writes these into the environment of the process that starts a LocalCluster (for the workers it
# spawns) and never takes them back; later tests' subprocesses would inherit one thread and Dask's allocator setting.
_NANNY_VARIABLES = ("MALLOC_TRIM_THRESHOLD_", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                    "PYTHONHASHSEED")
_PRISTINE = {name: os.environ.get(name) for name in _NANNY_VARIABLES}


def _restore_nanny_variables() -> None:
    for name, value in _PRISTINE.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(autouse=True)
def _isolated_data_dir(tmp_path, monkeypatch):
    """Every test gets its own data directory: the user's cache is never read or written."""
    monkeypatch.setenv("INVLAB_DATA", str(tmp_path / "invlab-data"))
    _restore_nanny_variables()
    yield
    _restore_nanny_variables()


@pytest.fixture(scope="session")
def scheduler():
    """The address of one Dask LocalCluster of 2 single-threaded worker processes, shared by every test of the
    session (test process) that needs Dask workers: the Compare page's tests put it in the page's "Dask scheduler"
    field, the allocator test runs a task on it. Started on first use (a few seconds), closed with the session."""
    import dask
    from distributed import LocalCluster

    from invlab.sweeps.clusters import cluster_config, worker_start

    # the lab's own clusters' quiet upkeep (no Dask profiler): the cluster waits idle for most of the session; its
    # workers start as the lab's do (forked from this process's fork server, on Linux)
    settings, options = worker_start()
    with dask.config.set({**cluster_config(), **settings}), \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40,
                         **options) as cluster:
        yield cluster.scheduler_address


@pytest.fixture(scope="session")
def class_server(tmp_path_factory):
    """One class server with logins per test process, shared by the raw-HTTP tests of logins and of the routes a
    request without a login reaches (tests/helpers/class_server.py): a `Served` (host, port, process, folder, users
    file). Its users file is put back by any test that changes it."""
    from tests.helpers.class_server import serve_with_probe

    with serve_with_probe(tmp_path_factory.mktemp("class-server"), logins=True) as served:
        yield served


@pytest.fixture
def rng():
    return torch.Generator().manual_seed(1234)


def _wait_until(predicate, explorer=None, timeout=180.0):
    """Tick a dashboard Explorer (drain its training session into the views) until `predicate()` holds."""
    import time

    deadline = time.time() + timeout
    while time.time() < deadline:
        if explorer is not None:
            explorer.tick()
            if explorer.notice.startswith("Could not update the page"):
                raise AssertionError(explorer.notice)  # the tick swallowed an error: fail now, not at the timeout
        if predicate():
            return True
        time.sleep(0.05)
    raise AssertionError("condition not reached in time")


@pytest.fixture
def wait_until():
    return _wait_until
