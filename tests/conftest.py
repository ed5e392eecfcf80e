import os

import pytest
import torch

# One intra-op thread per process: tests run beside a served dashboard and a browser, and torch's
# OpenMP threads slow down by orders of magnitude when they compete for cores.
torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _isolated_data_dir(tmp_path, monkeypatch):
    """Every test gets its own data directory: the user's cache is never read or written."""
    monkeypatch.setenv("INVLAB_DATA", str(tmp_path / "invlab-data"))
    yield


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


# -- device/dtype fixtures ---------------------------------------------------------------------------------------------
# `--device {cpu,cuda}` and `--dtype {float64,float32}` choose where and in which precision the engine tests run;
# tolerances follow the dtype instead of being loosened for every test.
from dataclasses import dataclass  # noqa: E402


def pytest_addoption(parser):
    parser.addoption("--device", default="cpu", choices=("cpu", "cuda"), help="device the engine tests run on")
    parser.addoption("--dtype", default=None, choices=("float64", "float32"),
                     help="floating-point type (default: float64 on cpu, float32 on cuda)")


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float


TOLERANCES = {torch.float64: Tolerance(rtol=1e-10, atol=1e-10), torch.float32: Tolerance(rtol=1e-4, atol=1e-5)}


@pytest.fixture(scope="session")
def device(request):
    name = request.config.getoption("--device")
    if name == "cuda" and not torch.cuda.is_available():
        pytest.skip("--device cuda asked for, but no CUDA device is available")
    return torch.device(name)


@pytest.fixture(scope="session")
def dtype(request, device):
    name = request.config.getoption("--dtype") or ("float32" if device.type == "cuda" else "float64")
    return getattr(torch, name)


@pytest.fixture(scope="session")
def tol(dtype):
    return TOLERANCES[dtype]


def _assert_close(a, b, tol, scale=1.0):
    """|a − b| ≤ atol·scale + rtol·|b| elementwise; `scale` is the size of the quantities compared."""
    a, b = torch.as_tensor(a), torch.as_tensor(b)
    a, b = a.detach().to("cpu", torch.float64), b.detach().to("cpu", torch.float64)
    assert a.shape == b.shape, f"shapes differ: {tuple(a.shape)} vs {tuple(b.shape)}"
    err = (a - b).abs()
    bound = tol.atol * scale + tol.rtol * b.abs()
    if not bool((err <= bound).all()):
        worst = int((err - bound).argmax())
        raise AssertionError(f"not close: largest excess at flat index {worst}: {float(a.flatten()[worst])!r} vs "
                             f"{float(b.flatten()[worst])!r} (|diff| {float(err.flatten()[worst]):.3g}, "
                             f"allowed {float(bound.flatten()[worst]):.3g})")


@pytest.fixture(scope="session")
def assert_close():
    return _assert_close
