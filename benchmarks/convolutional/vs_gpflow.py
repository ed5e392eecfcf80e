"""The engine's weighted convolutional SVGP against GPflow 2's, one training step at a time (van der Wilk, Rasmussen &
Hensman 2017).

Problem: 28×28 grey images — MNIST from the data directory when `invlab fetch mnist` has been run, else the
synthetic `rectangles` (the step time does not depend on the pixels) — N = 2,000 training images, regression
on the standardised label. Model: weighted convolutional kernel with an RBF patch kernel, 5×5 patches
(P = 576), M = 256 inducing patches (distinct training patches), whitened full-covariance q(u), Gaussian
likelihood, float64, CPU; one step = −ELBO on a minibatch of 64, its gradient, one Adam update.
GPflow side: `gpflow.kernels.Convolutional`, `gpflow.inducing_variables.InducingPatches`, `gpflow.models.SVGP`,
the step compiled with `tf.function`.

Matched values. GPflow's convolutional kernel divides by the number of patches (K = Σ w_p w_q k / P², K_uf =
Σ w_p k / P); the engine's weighted kernel has the fixed scale s = 1/P, so the learnable weights are the same
numbers in both and start at 1. K_uu jitter
1e-6 in both (GPflow's default), the same Gaussian noise floor (1e-6), the same Z, ℓ, σ², noise, q_mu and
q_sqrt. Both ELBOs are computed at these values on the same minibatch and must agree to 1e-6 relative.

Timing: the two are stepped alternately in repetitions (order flipped each time) after a warm-up that
includes GPflow's tracing; every step is timed and the ratio is of the median step times (engine / GPflow),
which ignores bursts of load from other processes on a shared machine. Both use the same number of CPU
threads (--threads, default 2) for `ratio`; with more than one thread the engine is also timed on a single
thread (`ratio_engine_1_thread`), since on a loaded machine torch's intra-op threads can lose more to waiting
at each operation's barrier than they gain. With a GPU, the engine's step time on it is reported too (GPflow stays on
the CPU: `tensorflow-cpu`).

    python -m benchmarks.convolutional.vs_gpflow [--quick] [--threads 2]

GPflow and TensorFlow are optional (`pip install -e .[peers]`); without them the script says so and exits
with status 2. The last line printed is one JSON object.
"""
from __future__ import annotations

import os
import statistics
import sys
import time
import warnings
from dataclasses import asdict, dataclass

import numpy as np
import torch

from invlab.inducing import InducingPatches, initial_patches
from invlab.kernels import RBF, median_distance
from invlab.kernels.convolutional import WeightedConvolutional
from invlab.likelihoods import Gaussian
from invlab.models.convolutional import ConvolutionalGP
from invlab.settings import keep_freed_cpu_memory

from ..common import arguments, emit, log

DTYPE = torch.float64
JITTER = 1e-6  # GPflow's default_jitter(), added to K_uu in both
NOISE_FLOOR = 1e-6  # GPflow's Gaussian variance lower bound


@dataclass
class BenchmarkConfig:
    num_train: int = 2000  # N
    image_size: int = 28
    patch_size: int = 5  # P = (28 − 5 + 1)² = 576
    num_inducing: int = 256  # M
    batch_size: int = 64  # B
    steps: int = 20  # timed steps of each implementation per repetition
    repeats: int = 5  # interleaved repetitions
    warmup_steps: int = 3
    lr: float = 0.01
    variance: float = 1.0
    noise: float = 0.1
    threads: int = 2
    seed: int = 0


# -- data and values -------------------------------------------------------------------------------------------------
def images(config: BenchmarkConfig) -> tuple[np.ndarray, np.ndarray, str]:
    """X [N, 1, 28, 28] in [0, 1], y [N] standardised labels, and the data set's name."""
    from invlab.data import load
    from invlab.errors import InvlabError

    try:
        ds = load("mnist", subset=config.num_train, seed=config.seed)
        name = "mnist"
    except InvlabError:
        ds = load("rectangles", num_train=config.num_train, num_test=10, seed=config.seed)
        name = "rectangles"
    X, y = ds.X_train[:config.num_train], ds.y_train[:config.num_train].astype(np.float64)
    return X, (y - y.mean()) / y.std(), name


@dataclass
class Values:
    Z: np.ndarray  # [M, 25]
    lengthscale: float
    q_mu: np.ndarray  # [M, 1]
    q_sqrt: np.ndarray  # [1, M, M]


def initial_values(X: np.ndarray, config: BenchmarkConfig, kernel: WeightedConvolutional) -> Values:
    g = torch.Generator().manual_seed(config.seed)
    Xt = torch.as_tensor(X)
    Z = initial_patches(Xt, config.num_inducing, kernel.patches, g)
    ell = median_distance(torch.unique(kernel.patches(Xt[:200]).reshape(-1, kernel.patch_dim), dim=0))
    M = config.num_inducing
    q_mu = 0.1 * torch.randn(M, 1, generator=g, dtype=DTYPE)  # not zero, so the ELBO check exercises the mean too
    q_sqrt = (0.7 * torch.eye(M, dtype=DTYPE) + 0.01 * torch.tril(torch.randn(M, M, generator=g, dtype=DTYPE)))[None]
    return Values(Z.numpy(), ell, q_mu.numpy(), q_sqrt.numpy())


def engine_kernel(config: BenchmarkConfig, lengthscale: float = 1.0) -> WeightedConvolutional:
    s = config.image_size
    kernel = WeightedConvolutional(RBF(None, lengthscale, config.variance), (1, s, s), config.patch_size)
    kernel.weight = 1.0 / kernel.num_patches  # GPflow's normalisation; the learnable weights start at 1 in both
    return kernel


def build_engine(values: Values, config: BenchmarkConfig, device: torch.device) -> ConvolutionalGP:
    kernel = engine_kernel(config, values.lengthscale)
    inducing = InducingPatches(torch.as_tensor(values.Z), kernel.patch_shape)
    model = ConvolutionalGP(kernel, inducing, Gaussian(config.noise, floor=NOISE_FLOOR), config.num_train,
                            jitter=JITTER).to(device=device, dtype=DTYPE)
    model.q.set(torch.as_tensor(values.q_mu, device=device), torch.as_tensor(values.q_sqrt, device=device))
    return model


def build_gpflow(values: Values, config: BenchmarkConfig):
    import gpflow

    s, p = config.image_size, config.patch_size
    base = gpflow.kernels.SquaredExponential(variance=config.variance, lengthscales=values.lengthscale)
    kernel = gpflow.kernels.Convolutional(base, [s, s], [p, p])  # weights start at ones (= the engine's 1/P)
    inducing = gpflow.inducing_variables.InducingPatches(values.Z.copy())
    return gpflow.models.SVGP(kernel, gpflow.likelihoods.Gaussian(variance=config.noise,
                                                                  variance_lower_bound=NOISE_FLOOR),
                              inducing, num_data=config.num_train, whiten=True, q_mu=values.q_mu.copy(),
                              q_sqrt=values.q_sqrt.copy())


# -- steps -----------------------------------------------------------------------------------------------------------
def batches(N: int, config: BenchmarkConfig, count: int) -> list[np.ndarray]:
    rng = np.random.default_rng(config.seed + 1)
    out: list[np.ndarray] = []
    while len(out) < count:
        perm = rng.permutation(N)
        out += [perm[i:i + config.batch_size] for i in range(0, N - config.batch_size + 1, config.batch_size)]
    return out[:count]


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def engine_stepper(model: ConvolutionalGP, X: torch.Tensor, y: torch.Tensor, lr: float):
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)

    def step(idx):
        idx = torch.as_tensor(idx, device=X.device)
        optimizer.zero_grad(set_to_none=True)
        loss = model.loss((X[idx], y[idx])).loss  # −ELBO
        loss.backward()
        optimizer.step()
        synchronize(X.device)

    return step


def gpflow_stepper(model, X: np.ndarray, y: np.ndarray, lr: float):
    import tensorflow as tf
    try:
        import tf_keras as keras
    except ImportError:  # pragma: no cover - older TensorFlow ships Keras 2 as tf.keras
        keras = tf.keras
    optimizer = keras.optimizers.Adam(learning_rate=lr)
    Xf = tf.constant(X.reshape(X.shape[0], -1))
    Yf = tf.constant(y.reshape(-1, 1))
    variables = model.trainable_variables

    @tf.function
    def train_step(idx):
        with tf.GradientTape() as tape:
            loss = model.training_loss((tf.gather(Xf, idx), tf.gather(Yf, idx)))  # −ELBO
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss

    def step(idx):
        train_step(tf.constant(idx)).numpy()  # .numpy() waits for the step to finish

    return step


def timed(step, idxs) -> list[float]:
    out = []
    for idx in idxs:
        t0 = time.perf_counter()
        step(idx)
        out.append(time.perf_counter() - t0)
    return out


def relative(a: float, b: float) -> float:
    return abs(a - b) / abs(b)


def run(config: BenchmarkConfig) -> dict:
    import gpflow
    import tensorflow as tf

    torch.set_num_threads(config.threads)
    tf.config.threading.set_intra_op_parallelism_threads(config.threads)
    tf.config.threading.set_inter_op_parallelism_threads(config.threads)
    gpflow.config.set_default_float(np.float64)
    gpflow.config.set_default_jitter(JITTER)

    Xn, yn, data_name = images(config)
    cpu = torch.device("cpu")
    X, y = torch.as_tensor(Xn, dtype=DTYPE), torch.as_tensor(yn, dtype=DTYPE)
    values = initial_values(Xn, config, engine_kernel(config))
    P = engine_kernel(config).num_patches
    print(f"{data_name}: N={config.num_train}, 28×28, {config.patch_size}×{config.patch_size} patches (P={P}), "
          f"M={config.num_inducing}, B={config.batch_size}, float64, {config.threads} threads each; "
          f"lengthscale {values.lengthscale:.4g}", file=sys.stderr)

    # The same parameters in both: the ELBO on one minibatch.
    idx0 = batches(config.num_train, config, 1)[0]
    engine, other = build_engine(values, config, cpu), build_gpflow(values, config)
    with torch.no_grad():
        e0 = float(engine.elbo_terms(X[idx0], y[idx0])["elbo"])
    g0 = float(other.elbo((Xn[idx0].reshape(len(idx0), -1), yn[idx0].reshape(-1, 1))))
    print(f"ELBO at the same values on one minibatch: engine {e0:.10f}  GPflow {g0:.10f}  rel. diff "
          f"{relative(e0, g0):.2e}", file=sys.stderr)

    # Warm-up (GPflow traces its tf.function here), then interleaved timed repetitions. With more than one thread
    # the engine is also timed on one thread: on a loaded machine torch's intra-op threads (one barrier per
    # operation) can lose more to waiting than they gain.
    warm = batches(config.num_train, config, config.warmup_steps)
    timed(engine_stepper(build_engine(values, config, cpu), X, y, config.lr), warm)
    timed(gpflow_stepper(build_gpflow(values, config), Xn, yn, config.lr), warm)
    idxs = batches(config.num_train, config, config.steps)
    names = ["engine", "gpflow"] + (["engine_1_thread"] if config.threads > 1 else [])
    steps: dict[str, list[float]] = {name: [] for name in names}
    for rep in range(config.repeats):
        for name in (names if rep % 2 == 0 else names[::-1]):
            torch.set_num_threads(1 if name == "engine_1_thread" else config.threads)
            if name.startswith("engine"):
                engine = build_engine(values, config, cpu)
                stepper = engine_stepper(engine, X, y, config.lr)
                stepper(warm[0])  # Adam's state allocation outside the clock
            else:
                other = build_gpflow(values, config)
                stepper = gpflow_stepper(other, Xn, yn, config.lr)
                stepper(warm[0])  # traces the new model's step outside the clock
            steps[name] += timed(stepper, idxs)
        torch.set_num_threads(config.threads)
        print(f"repetition {rep + 1}/{config.repeats}: median ms/step so far " + ", ".join(
            f"{n} {statistics.median(t) * 1e3:.1f}" for n, t in steps.items()), file=sys.stderr)
    engine_s, gpflow_s = statistics.median(steps["engine"]), statistics.median(steps["gpflow"])
    with torch.no_grad():
        e1 = float(engine.elbo_terms(X[idx0], y[idx0])["elbo"])
    g1 = float(other.elbo((Xn[idx0].reshape(len(idx0), -1), yn[idx0].reshape(-1, 1))))

    result = {
        "ratio": engine_s / gpflow_s,
        "engine_s_per_step": engine_s,
        "gpflow_s_per_step": gpflow_s,
        "engine_s_per_step_min": min(steps["engine"]),
        "gpflow_s_per_step_min": min(steps["gpflow"]),
        "ratio_of_min_steps": min(steps["engine"]) / min(steps["gpflow"]),
        "elbo_engine": e0,
        "elbo_gpflow": g0,
        "elbo_rel_diff": relative(e0, g0),
        "elbo_after_training_engine": e1,
        "elbo_after_training_gpflow": g1,
        "target_ratio": 0.5,
        "threads": config.threads,
        "data": data_name,
        "P": P,
        "device": "cpu",
        "gpflow": gpflow.__version__,
        "tensorflow": tf.__version__,
        "torch": torch.__version__,
        "config": asdict(config),
    }
    if "engine_1_thread" in steps:
        one = statistics.median(steps["engine_1_thread"])
        result.update(engine_1_thread_s_per_step=one, ratio_engine_1_thread=one / gpflow_s)
    if torch.cuda.is_available():  # the engine on the GPU (same values; GPflow here is CPU-only)
        gpu = torch.device("cuda")
        model = build_engine(values, config, gpu)
        stepper = engine_stepper(model, X.to(gpu), y.to(gpu), config.lr)
        timed(stepper, warm)
        t = timed(stepper, idxs * max(1, config.repeats))
        result["engine_cuda_s_per_step"] = statistics.median(t)
        result["cuda_device"] = torch.cuda.get_device_name(gpu)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = arguments(__doc__, quick="fewer steps and repetitions (about a minute)", threads=2)
    parser.add_argument("--steps", type=int, default=None, help="timed steps per repetition")
    parser.add_argument("--repeats", type=int, default=None, help="interleaved repetitions")
    args = parser.parse_args(argv)
    try:
        import gpflow  # noqa: F401
        import tensorflow  # noqa: F401
    except ImportError as err:
        print(f"benchmarks.convolutional.vs_gpflow needs GPflow and TensorFlow ({err}); install the peers extra: "
              "pip install -e '.[peers]'  (gpflow, tensorflow-cpu, tensorflow-probability, tf-keras)", file=sys.stderr)
        return 2
    args.quick = args.quick or args.smoke
    config = (BenchmarkConfig(steps=2, repeats=1, warmup_steps=1) if args.smoke else
              BenchmarkConfig(steps=8, repeats=3, warmup_steps=2) if args.quick else BenchmarkConfig())
    config.threads = args.threads
    if args.steps:
        config.steps = args.steps
    if args.repeats:
        config.repeats = args.repeats
    # as in training (the Trainer sets it): freed buffers are reused, for both libraries, as one process
    kept = keep_freed_cpu_memory()
    load_before = os.getloadavg()[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TensorFlow's and GPflow's deprecation chatter
        result = run(config)
    result.update(quick=args.quick, keep_freed_cpu_memory=kept)
    log(f"median step: engine {result['engine_s_per_step'] * 1e3:.1f} ms, "
        f"GPflow {result['gpflow_s_per_step'] * 1e3:.1f} ms ({config.threads} threads each); "
        f"ratio {result['ratio']:.3f} (target ≤ 0.5)"
        + (f"; engine on 1 thread {result['engine_1_thread_s_per_step'] * 1e3:.1f} ms, ratio "
           f"{result['ratio_engine_1_thread']:.3f}" if "ratio_engine_1_thread" in result else "")
        + f"; ELBO rel. diff {result['elbo_rel_diff']:.1e}")
    emit(result, load_before=load_before)
    return 0 if result["elbo_rel_diff"] < 1e-6 else 1


if __name__ == "__main__":
    sys.exit(main())
