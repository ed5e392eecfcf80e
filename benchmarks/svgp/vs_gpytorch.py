"""The engine's SVGP against GPyTorch's, trained side by side on the same problem (Hensman et al. 2013/2015).

Problem: sklearn's `load_digits` (bundled with scikit-learn, no download), N = 1797 images of 8×8 pixels,
inputs X = pixels / 16 (D = 64); the regression target is the digit label 0..9, standardised to mean 0 and
standard deviation 1. Model: zero mean, RBF kernel σ² exp(−‖x − x'‖² / 2ℓ²), M = 256 learnable inducing
points, whitened full-covariance q(u), Gaussian likelihood, float64, Adam on minibatches of 256.

Both implementations start from identical values (Z, ℓ, σ², noise, q_mu, q_sqrt), take the same number of
Adam steps with the same learning rate over the same minibatch index sequence, and are timed in interleaved
repetitions (engine / GPyTorch alternately, order flipped every repetition); every step is timed and the
ratio is of the median step times, which ignores bursts of load from other processes on a shared machine.
(With B = M GPyTorch takes its generic q(f) path; its fused `ComputePredictiveUpdates` is used only for B > M.)
What had to be matched, from GPyTorch's source:

- K_uu jitter: `VariationalStrategy` adds `settings.variational_cholesky_jitter` (1e-6 for float64) to K_uu
  before its Cholesky (and `psd_safe_cholesky` escalates from 1e-8 on failure); the engine gets
  `SVGP(jitter=...)` equal to it.
- Data covariance: GPyTorch also adds the same jitter to the diagonal of k(X, X), so its q(f) variances are
  larger by that jitter and its expected log-likelihood is lower by exactly N·jitter / (2σ²_noise). The engine
  adds no jitter there. `elbo_gpytorch` is GPyTorch's value plus that exact term, i.e. the same objective;
  `elbo_gpytorch_raw` and `elbo_rel_diff_raw` are its value as returned.
- Constraints: GPyTorch uses softplus + lower bound; `GaussianLikelihood` noise has `GreaterThan(1e-4)`,
  the engine's kernel values have a floor of 1e-6. So the engine's noise floor is set to 1e-4 and GPyTorch's
  lengthscale / outputscale get `GreaterThan(1e-6)`; with equal floors the raw values are equal too, so Adam
  sees the same parameterisation. GPyTorch stores bounds in the default dtype, so its modules are built with
  float64 as the default dtype (otherwise 1e-4 would become the float32 9.99999975e-05).
- Whitening: an `ApproximateGP`'s first call re-whitens q(u) (`updated_strategy` flag); the flag is set so
  the values we copy in are taken as the whitened ones.
- Scale: GPyTorch's `VariationalELBO` is the ELBO divided by N, the engine's loss is the −ELBO; the engine is
  trained on loss / N so Adam (which is scale-invariant only up to its eps) follows the same path, and GPyTorch's
  value is multiplied by N for comparison.

Run `python -m benchmarks.svgp.vs_gpytorch [--quick] [--device auto|cpu|cuda]`. The last line printed is one
JSON object (ratio = engine time / GPyTorch time per training step).
"""
from __future__ import annotations

import contextlib
import os
import statistics
import time
import warnings
from dataclasses import asdict, dataclass

import gpytorch
import torch
from sklearn.datasets import load_digits

from invlab.inducing import InducingPoints, initial_locations
from invlab.kernels import RBF, median_distance
from invlab.likelihoods import Gaussian
from invlab.models.svgp import SVGP
from invlab.settings import resolve_device

from ..common import arguments, emit, parse


@dataclass
class BenchmarkConfig:
    num_inducing: int = 256  # M
    batch_size: int = 256  # B
    steps: int = 400  # Adam steps per timed repetition
    repeats: int = 5  # timed repetitions of each implementation, interleaved
    warmup_steps: int = 5  # untimed steps of each before the first repetition
    lr: float = 0.01
    variance: float = 1.0  # initial signal variance σ²
    noise: float = 0.1  # initial noise variance σ²_noise
    seed: int = 0


DTYPE = torch.float64


# -- data and initial values --------------------------------------------------------------------------------------
def digits(device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """X [N, 64] in [0, 1], y [N] the standardised digit label."""
    X, y = load_digits(return_X_y=True)
    X = torch.as_tensor(X, dtype=DTYPE) / 16.0
    y = torch.as_tensor(y, dtype=DTYPE)
    y = (y - y.mean()) / y.std()
    return X.to(device), y.to(device)


@dataclass
class InitialValues:
    Z: torch.Tensor  # [M, D]
    lengthscale: float
    variance: float
    noise: float
    q_mu: torch.Tensor  # [M, 1]
    q_sqrt: torch.Tensor  # [1, M, M] lower-triangular


def initial_values(X: torch.Tensor, config: BenchmarkConfig) -> InitialValues:
    generator = torch.Generator().manual_seed(config.seed)
    Xc = X.cpu()
    M = config.num_inducing
    return InitialValues(Z=initial_locations(Xc, M, generator).to(X.device), lengthscale=median_distance(Xc),
                         variance=config.variance, noise=config.noise,
                         q_mu=torch.zeros(M, 1, dtype=DTYPE, device=X.device),
                         q_sqrt=torch.eye(M, dtype=DTYPE, device=X.device)[None])


def batch_indices(N: int, config: BenchmarkConfig, steps: int, device: torch.device) -> list[torch.Tensor]:
    """Shuffled epochs cut into full minibatches (the ragged tail is dropped so every batch has B points)."""
    generator = torch.Generator().manual_seed(config.seed + 1)
    out: list[torch.Tensor] = []
    while len(out) < steps:
        perm = torch.randperm(N, generator=generator)
        B = config.batch_size
        out += [perm[i:i + B].to(device) for i in range(0, N - B + 1, B)]
    return out[:steps]


# -- the two models ---------------------------------------------------------------------------------------------------
def gpytorch_jitter() -> float:
    return float(gpytorch.settings.variational_cholesky_jitter.value(dtype=DTYPE))


@contextlib.contextmanager
def default_dtype(dtype: torch.dtype):
    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(old)


class GPyTorchSVGP(gpytorch.models.ApproximateGP):
    def __init__(self, Z: torch.Tensor, jitter: float):
        q = gpytorch.variational.CholeskyVariationalDistribution(Z.shape[0])
        strategy = gpytorch.variational.VariationalStrategy(self, Z, q, learn_inducing_locations=True,
                                                            jitter_val=jitter)
        super().__init__(strategy)
        self.mean_module = gpytorch.means.ZeroMean()
        floor = gpytorch.constraints.GreaterThan
        self.covar_module = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel(lengthscale_constraint=floor(1e-6)),
                                                         outputscale_constraint=floor(1e-6))

    def forward(self, X):
        return gpytorch.distributions.MultivariateNormal(self.mean_module(X), self.covar_module(X))


@dataclass
class GPyTorchModel:
    gp: GPyTorchSVGP
    likelihood: gpytorch.likelihoods.GaussianLikelihood
    mll: gpytorch.mlls.VariationalELBO

    def parameters(self) -> list[torch.nn.Parameter]:
        return list(self.gp.parameters()) + list(self.likelihood.parameters())


def build_gpytorch(init: InitialValues, num_data: int, device: torch.device) -> GPyTorchModel:
    with default_dtype(DTYPE):  # GPyTorch keeps constraint bounds in the default dtype
        gp = GPyTorchSVGP(init.Z.detach().cpu().clone(), gpytorch_jitter())
        likelihood = gpytorch.likelihoods.GaussianLikelihood()
    gp, likelihood = gp.to(device=device, dtype=DTYPE), likelihood.to(device=device, dtype=DTYPE)
    gp.variational_strategy.updated_strategy.fill_(True)  # our q(u) values are already whitened
    gp.variational_strategy.variational_params_initialized.fill_(1)
    model = GPyTorchModel(gp, likelihood, gpytorch.mlls.VariationalELBO(likelihood, gp, num_data=num_data))
    with torch.no_grad():
        gp.covar_module.base_kernel.lengthscale = torch.tensor(init.lengthscale, dtype=DTYPE, device=device)
        gp.covar_module.outputscale = torch.tensor(init.variance, dtype=DTYPE, device=device)
        likelihood.noise = torch.tensor(init.noise, dtype=DTYPE, device=device)
        q = gp.variational_strategy._variational_distribution
        q.variational_mean.copy_(init.q_mu[:, 0])
        q.chol_variational_covar.copy_(init.q_sqrt[0])
    return model


def build_engine(init: InitialValues, num_data: int, device: torch.device, noise_floor: float) -> SVGP:
    kernel = RBF(init.Z.shape[1], init.lengthscale, init.variance)
    likelihood = Gaussian(init.noise, floor=noise_floor)
    model = SVGP(kernel, InducingPoints(init.Z.detach().cpu()), likelihood, num_data, jitter=gpytorch_jitter())
    model = model.to(device=device, dtype=DTYPE)
    model.q.set(init.q_mu, init.q_sqrt)
    return model


@torch.no_grad()
def copy_engine_into_gpytorch(engine: SVGP, target: GPyTorchModel) -> None:
    """Raw values are copied as they are: both sides use softplus(raw) + the same floor."""
    gp = target.gp
    gp.variational_strategy.inducing_points.copy_(engine.inducing.Z)
    gp.covar_module.base_kernel.raw_lengthscale.copy_(engine.kernel.lengthscale.raw.reshape(1, 1))
    gp.covar_module.raw_outputscale.copy_(engine.kernel.variance.raw.reshape(()))
    target.likelihood.raw_noise.copy_(engine.likelihood.variance.raw.reshape(1))
    q = gp.variational_strategy._variational_distribution
    q.variational_mean.copy_(engine.q.q_mu[:, 0])
    q.chol_variational_covar.copy_(engine.q.sqrt()[0])


@torch.no_grad()
def constrained_differences(engine: SVGP, other: GPyTorchModel) -> dict[str, float]:
    """Largest |engine − GPyTorch| of each constrained value (0 when the parameterisations agree exactly)."""
    gp = other.gp
    q = gp.variational_strategy._variational_distribution
    pairs = {
        "Z": (engine.inducing.Z, gp.variational_strategy.inducing_points),
        "lengthscale": (engine.kernel.lengthscale(), gp.covar_module.base_kernel.lengthscale),
        "variance": (engine.kernel.variance(), gp.covar_module.outputscale),
        "noise": (engine.likelihood.variance(), other.likelihood.noise),
        "q_mu": (engine.q.q_mu[:, 0], q.variational_mean),
        "q_sqrt": (engine.q.sqrt()[0], q.chol_variational_covar.tril()),
    }
    return {k: float((a.reshape(-1) - b.reshape(-1)).abs().max()) for k, (a, b) in pairs.items()}


# -- objectives -------------------------------------------------------------------------------------------------------
@torch.no_grad()
def engine_elbo(model: SVGP, X: torch.Tensor, y: torch.Tensor) -> float:
    return float(model.elbo_terms(X, y)["elbo"])


@torch.no_grad()
def gpytorch_elbo(model: GPyTorchModel, X: torch.Tensor, y: torch.Tensor) -> float:
    """GPyTorch's VariationalELBO × N (it reports the ELBO per data point)."""
    model.gp.train(), model.likelihood.train()
    return float(model.mll(model.gp(X), y)) * X.shape[0]


@torch.no_grad()
def data_jitter_offset(model: GPyTorchModel, N: int) -> float:
    """How much lower GPyTorch's ELBO is because it adds the jitter to k(x, x): N · jitter / (2σ²_noise)."""
    return 0.5 * N * model.gp.variational_strategy.jitter_val / float(model.likelihood.noise)


# -- training ---------------------------------------------------------------------------------------------------------
def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed_steps(step, batches, device: torch.device) -> list[float]:
    """Seconds of each `step(idx)`; per-step times let a median ignore bursts of load from other processes."""
    times = []
    synchronize(device)
    for idx in batches:
        start = time.perf_counter()
        step(idx)
        synchronize(device)
        times.append(time.perf_counter() - start)
    return times


def train_engine(model: SVGP, X, y, batches, lr: float) -> list[float]:
    """Adam on −ELBO / N (the scale GPyTorch optimises); returns the seconds of each step."""
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    N = model.num_data

    def step(idx):
        optimizer.zero_grad(set_to_none=True)
        loss = model.loss((X[idx], y[idx])).loss / N
        loss.backward()
        optimizer.step()

    return timed_steps(step, batches, X.device)


def train_gpytorch(model: GPyTorchModel, X, y, batches, lr: float) -> list[float]:
    model.gp.train(), model.likelihood.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)

    def step(idx):
        optimizer.zero_grad(set_to_none=True)
        loss = -model.mll(model.gp(X[idx]), y[idx])
        loss.backward()
        optimizer.step()

    return timed_steps(step, batches, X.device)


def relative(a: float, b: float) -> float:
    return abs(a - b) / abs(b)


def run(config: BenchmarkConfig, device: torch.device) -> dict:
    X, y = digits(device)
    N = X.shape[0]
    init = initial_values(X, config)
    batches = batch_indices(N, config, config.steps, device)
    noise_floor = float(build_gpytorch(init, N, device).likelihood.noise_covar.raw_noise_constraint.lower_bound)
    print(f"digits: N={N}, D={X.shape[1]}, M={config.num_inducing}, B={config.batch_size}, float64, device={device}, "
          f"torch threads={torch.get_num_threads()}, jitter={gpytorch_jitter():g}, noise floor={noise_floor:g}")

    # Same parameters, before training.
    engine, other = build_engine(init, N, device, noise_floor), build_gpytorch(init, N, device)
    diffs = constrained_differences(engine, other)
    e0, g0 = engine_elbo(engine, X, y), gpytorch_elbo(other, X, y)
    off0 = data_jitter_offset(other, N)
    print(f"initial values, max |engine − GPyTorch|: {diffs}")
    print(f"ELBO at the initial values: engine {e0:.10f}  GPyTorch {g0:.10f}  (GPyTorch's data jitter accounts for "
          f"{-off0:.3e}; without it the rel. diff is {relative(e0, g0 + off0):.2e})")

    # Warm-up, then interleaved timed repetitions from the same start.
    warm = batch_indices(N, config, config.warmup_steps, device)
    train_engine(build_engine(init, N, device, noise_floor), X, y, warm, config.lr)
    train_gpytorch(build_gpytorch(init, N, device), X, y, warm, config.lr)
    steps: dict[str, list[float]] = {"engine": [], "gpytorch": []}  # every timed step of every repetition
    means: dict[str, list[float]] = {"engine": [], "gpytorch": []}  # mean step time of each repetition
    for rep in range(config.repeats):
        order = ("engine", "gpytorch") if rep % 2 == 0 else ("gpytorch", "engine")
        for name in order:
            if name == "engine":
                engine = build_engine(init, N, device, noise_floor)
                t = train_engine(engine, X, y, batches, config.lr)
            else:
                other = build_gpytorch(init, N, device)
                t = train_gpytorch(other, X, y, batches, config.lr)
            steps[name] += t
            means[name].append(statistics.fmean(t))
        print(f"repetition {rep + 1}/{config.repeats}: mean engine {means['engine'][-1] * 1e3:.2f} ms/step, "
              f"GPyTorch {means['gpytorch'][-1] * 1e3:.2f} ms/step")
    engine_s, gpytorch_s = statistics.median(steps["engine"]), statistics.median(steps["gpytorch"])

    # Each trained model's own ELBO, how far the two trajectories drifted apart, and the ELBOs at one set of values.
    trained_engine, trained_gpytorch = engine_elbo(engine, X, y), gpytorch_elbo(other, X, y)
    drift = constrained_differences(engine, other)
    copy = build_gpytorch(init, N, device)
    copy_engine_into_gpytorch(engine, copy)
    same = constrained_differences(engine, copy)
    e1, g1 = trained_engine, gpytorch_elbo(copy, X, y)
    off1 = data_jitter_offset(copy, N)
    print(f"after {config.steps} steps: engine ELBO {trained_engine:.6f}, GPyTorch ELBO {trained_gpytorch:.6f}; "
          f"max |Δ| between the trained values: {drift}")
    print(f"ELBO at the engine's trained values (copied into GPyTorch, max |Δ| {max(same.values()):.1e}): "
          f"engine {e1:.10f}  GPyTorch {g1:.10f}  rel. diff {relative(e1, g1):.2e}; "
          f"GPyTorch's data jitter accounts for "
          f"{-off1:.3e}, without it {relative(e1, g1 + off1):.2e}")
    print(f"median step: engine {engine_s * 1e3:.2f} ms, GPyTorch {gpytorch_s * 1e3:.2f} ms (over {config.repeats} × "
          f"{config.steps} steps each); ratio {engine_s / gpytorch_s:.3f} (target ≤ 0.6)")

    return {
        "ratio": engine_s / gpytorch_s,
        "ratio_of_best_repetition_means": min(means["engine"]) / min(means["gpytorch"]),
        "ratio_of_median_repetition_means": statistics.median(means["engine"]) / statistics.median(means["gpytorch"]),
        "engine_s_per_step": engine_s,
        "gpytorch_s_per_step": gpytorch_s,
        "elbo_engine": e1,
        "elbo_gpytorch": g1 + off1,  # the same objective: GPyTorch's own value plus its exact data-jitter term
        "elbo_rel_diff": relative(e1, g1 + off1),
        "elbo_gpytorch_raw": g1,
        "elbo_rel_diff_raw": relative(e1, g1),
        "gpytorch_data_jitter_offset": off1,
        "elbo_init_engine": e0,
        "elbo_init_gpytorch": g0,
        "elbo_init_rel_diff_without_data_jitter": relative(e0, g0 + off0),
        "elbo_after_training_engine": trained_engine,
        "elbo_after_training_gpytorch": trained_gpytorch,
        "trained_values_max_abs_diff": drift,
        "engine_jitter_used": engine.last_jitter,
        "steps": config.steps,
        "repeats": config.repeats,
        "M": config.num_inducing,
        "N": N,
        "batch": config.batch_size,
        "lr": config.lr,
        "device": str(device),
        "torch_threads": torch.get_num_threads(),
        "config": asdict(config),
    }



def main(argv: list[str] | None = None) -> dict:
    parser = arguments(__doc__, quick="few steps and repeats (under a minute on two CPU cores)", threads=None)
    parser.add_argument("--device", default="auto", help="auto (CUDA when available), cpu, cuda, cuda:1, ...")
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=None)
    args = parse(parser, argv)

    config = (BenchmarkConfig(steps=3, repeats=1, warmup_steps=1) if args.smoke else
              BenchmarkConfig(steps=60, repeats=3, warmup_steps=3) if args.quick else BenchmarkConfig())
    if args.steps is not None:
        config.steps = args.steps
    if args.repeats is not None:
        config.repeats = args.repeats
    device = resolve_device(args.device)
    load_before = os.getloadavg()[0]  # other processes skew CPU timings: `emit` warns when the load passes the cores
    with warnings.catch_warnings(record=True) as caught:  # both libraries warn when they raise the K_uu jitter
        warnings.simplefilter("always")
        result = run(config, device)
    escalations = [str(w.message) for w in caught if "jitter" in str(w.message)]
    for w in caught:
        if "jitter" not in str(w.message):
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    result["jitter_escalation_warnings"] = len(escalations)
    result["quick"] = args.quick
    if escalations:
        print(f"{len(escalations)} jitter escalations, e.g. {escalations[0]!r}")
    return emit(result, load_before=load_before)


if __name__ == "__main__":
    main()
