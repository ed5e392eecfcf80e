"""The convolutional GP hosted in GPyTorch (`invlab.gpytorch`) against the lab's own, side by side on rectangles.

Data: `rectangles` (outlines of random rectangles, tall vs wide; van der Wilk, Rasmussen & Hensman 2017, sec. 3.1),
--num-train training and --num-test test images of --image-size pixels. The lab's arm is the product's
`conv-invariant` family with its own defaults (3×3 patches, inducing patches drawn from the training patches, the
patch kernel's lengthscale from their median distance, whitened full q(u), Bernoulli probit likelihood), M = 16
inducing patches, Adam on minibatches of 100, trained by `Trainer.step`. The GPyTorch arm is a user's own
`ApproximateGP`: `ConvKernel(ScaleKernel(RBFKernel()))` with `InterDomainVariationalStrategy` and GPyTorch's
`CholeskyVariationalDistribution`, `BernoulliLikelihood` and `VariationalELBO`, started from the lab model's initial
values (Z, lengthscale, variance), and trained by GPyTorch's usual loop with the same optimiser, learning rate, batch
size and number of steps. Neither arm evaluates during training; both are evaluated on the test images at the end.

Timing: the arms alternate in blocks of steps and every step is timed; steps/s are from the median step times,
which ignores bursts of load from other processes. `ratio` = GPyTorch-hosted steps/s ÷ lab steps/s.

    python -m benchmarks.gpytorch.conv [--steps 400] [--num-train 400] [--image-size 16] [--quick | --smoke]
"""
from __future__ import annotations

import statistics
import time

import gpytorch
import torch
from gpytorch.distributions import MultivariateNormal
from gpytorch.kernels import RBFKernel, ScaleKernel
from gpytorch.variational import CholeskyVariationalDistribution

from invlab.gpytorch import ConvKernel, InducingPatches, InterDomainVariationalStrategy
from invlab.train import RunConfig, Trainer

from ..common import arguments, emit, log, parse


class ConvApproximateGP(gpytorch.models.ApproximateGP):
    """A user's ApproximateGP: zero mean, `ConvKernel` on flattened images, inducing patches Z [M, E]."""

    def __init__(self, image_shape, Z: torch.Tensor, lengthscale: float, variance: float, patch_size: int = 3):
        q = CholeskyVariationalDistribution(Z.shape[0])
        super().__init__(InterDomainVariationalStrategy(self, InducingPatches(Z), q))
        base = ScaleKernel(RBFKernel())
        base.base_kernel.lengthscale, base.outputscale = lengthscale, variance
        self.mean_module = gpytorch.means.ZeroMean()
        self.covar_module = ConvKernel(base, image_shape=image_shape, patch_shape=patch_size)

    def forward(self, x):
        """The prior of f at flattened images x [N, C·H·W]."""
        return MultivariateNormal(self.mean_module(x), self.covar_module(x))


def lab_trainer(num_train: int, num_test: int, image_size: int, steps: int, *, num_inducing: int = 16,
                batch_size: int = 100, learning_rate: float = 0.01, seed: int = 0) -> Trainer:
    """The lab's conv-invariant family on rectangles with its own defaults (M, batch size, rate and steps set)."""
    return Trainer(RunConfig(model="conv-invariant", data={"dataset": "rectangles", "seed": seed, "source_options": {
        "num_train": num_train, "num_test": num_test, "image_size": image_size}},
        model_config={"num_inducing": num_inducing},
        train={"steps": steps, "batch_size": batch_size, "learning_rate": learning_rate, "eval_every": 0,
               "seed": seed}))


class Hosted:
    """The GPyTorch arm: the model built from the lab trainer's initial values, its likelihood, ELBO and Adam."""

    def __init__(self, trainer: Trainer, seed: int = 0):
        model, (_, H, W) = trainer.model, trainer.X.shape[1:]
        self.X, self.y = trainer.X.flatten(1), trainer.y.to(trainer.X.dtype)
        self.X_test, self.y_test = trainer.X_test.flatten(1), trainer.y_test
        with torch.no_grad():
            self.model = ConvApproximateGP((H, W), model.inducing.Z.detach().clone(),
                                           float(model.kernel.base.lengthscale()),
                                           float(model.kernel.base.variance())).to(self.X.dtype)
        self.likelihood = gpytorch.likelihoods.BernoulliLikelihood().to(self.X.dtype)
        self.mll = gpytorch.mlls.VariationalELBO(self.likelihood, self.model, num_data=self.X.shape[0])
        tc = trainer.config.train
        self.optimiser = torch.optim.Adam([*self.model.parameters(), *self.likelihood.parameters()],
                                          lr=tc["learning_rate"])
        self.batch_size = tc["batch_size"]
        self.generator = torch.Generator().manual_seed(seed)
        self.model.train(), self.likelihood.train()

    def step(self) -> float:
        """One Adam step on a random minibatch: GPyTorch's loop. Returns the −ELBO/N of the batch."""
        idx = torch.randint(self.X.shape[0], (self.batch_size,), generator=self.generator)
        self.optimiser.zero_grad()
        loss = -self.mll(self.model(self.X[idx]), self.y[idx])
        loss.backward()
        self.optimiser.step()
        return float(loss.detach())

    @torch.no_grad()
    def test_error(self) -> float:
        """The fraction of test images whose predicted class probability is on the wrong side of ½."""
        self.model.eval(), self.likelihood.eval()
        p = torch.cat([self.likelihood(self.model(self.X_test[i:i + 500])).mean
                       for i in range(0, self.X_test.shape[0], 500)])
        self.model.train(), self.likelihood.train()
        return float(((p > 0.5).long() != self.y_test.long()).double().mean())


def side_by_side(trainer: Trainer, hosted: Hosted, steps: int, block: int = 20) -> dict:
    """Train both arms `steps` steps, alternating blocks of `block` steps; per-step times and final test errors."""
    times: dict[str, list[float]] = {"lab": [], "gpytorch": []}
    done, flip = 0, False
    while done < steps:
        n = min(block, steps - done)
        for arm in (("gpytorch", "lab") if flip else ("lab", "gpytorch")):
            for _ in range(n):
                start = time.perf_counter()
                trainer.step() if arm == "lab" else hosted.step()
                times[arm].append(time.perf_counter() - start)
        done, flip = done + n, not flip
    lab_error = float(trainer.report.evaluate()["test_error"])
    hosted_error = hosted.test_error()
    lab_rate, hosted_rate = 1.0 / statistics.median(times["lab"]), 1.0 / statistics.median(times["gpytorch"])
    return {"steps": steps, "steps_per_s_lab": lab_rate, "steps_per_s_gpytorch": hosted_rate,
            "ratio": hosted_rate / lab_rate, "test_error_lab": lab_error, "test_error_gpytorch": hosted_error,
            "test_error_diff_pp": 100.0 * (hosted_error - lab_error)}


def main(argv=None) -> dict:
    parser = arguments(__doc__, quick="200 training images of 12×12 and 150 steps")
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--num-train", type=int, default=400)
    parser.add_argument("--num-test", type=int, default=500)
    parser.add_argument("--image-size", type=int, default=16)
    args = parse(parser, argv)
    if args.quick:
        args.steps, args.num_train, args.num_test, args.image_size = 150, 200, 300, 12
    if args.smoke:
        args.steps, args.num_train, args.num_test, args.image_size = 4, 40, 20, 10
    trainer = lab_trainer(args.num_train, args.num_test, args.image_size, args.steps)
    hosted = Hosted(trainer)
    log(f"rectangles {args.num_train}/{args.num_test} of {args.image_size}², {args.steps} steps each")
    result = side_by_side(trainer, hosted, args.steps)
    log(f"lab {result['steps_per_s_lab']:.1f} steps/s, error {100 * result['test_error_lab']:.1f} %; GPyTorch-hosted "
        f"{result['steps_per_s_gpytorch']:.1f} steps/s, error {100 * result['test_error_gpytorch']:.1f} %; "
        f"ratio {result['ratio']:.2f}")
    return emit({"benchmark": "gpytorch.conv", **result})


if __name__ == "__main__":
    main()
